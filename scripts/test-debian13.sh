#!/usr/bin/env bash
# tunless on Debian 13 (trixie: DPDK 24.11, libxdp 1.5, libbpf 1.5, GCC 14), from this Debian 12
# machine: makes a trixie root from Debian's packages with mmdebstrap (installed here if missing),
# cached as a tarball under ${TUNLESS_CACHE:-/var/cache/tunless} (keyed by the package list, so a
# change of the list makes a new one), unpacks it into a temporary directory, copies the tree in
# (tracked and untracked files that git does not ignore, committed there as one commit so the
# package test builds what is here) and runs inside it, in a chroot:
#   * the build with warnings as errors (-Dwerror=true) and the unit suite,
#   * the Debian package: suite deb (dpkg-buildpackage, dpkg -c, lintian), then the .deb is
#     installed in the root with apt (its Depends resolved from trixie), the installed
#     tunlessd prints its version and checks a packaged example configuration,
#   * the unit suite again under ASan+UBSan.
# The network-namespace lab tests (suite integration) are not run here: see README ("Debian 13").
# Ends with one line "tests: N passed, N failed". Needs root (chroot, mounts).
#
# Usage: scripts/test-debian13.sh [--keep]     (--keep leaves the root for a look; its path is printed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
keep=0
for arg in "$@"; do
	case $arg in
	--keep) keep=1 ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "test-debian13.sh: unknown argument '$arg'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "test-debian13.sh: needs root (chroot, mounts)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
log() { printf '[debian13] %s\n' "$*"; }
t0=$SECONDS

# scripts/setup.sh's APT_PACKAGES as named on trixie, less what only the lab tests, the fuzz
# harnesses (libclang-rt-14-dev: trixie's clang is 19) and the benchmarks use, plus what the
# package build needs there (systemd-dev holds systemd.pc since trixie; git for the package test).
PACKAGES=(
	build-essential meson ninja-build pkg-config clang llvm
	libdpdk-dev dpdk libxdp-dev libbpf-dev bpftool xdp-tools
	libsodium-dev libssl-dev libcyaml-dev libyaml-dev libmnl-dev libcmocka-dev libsystemd-dev debhelper
	pandoc lintian man-db systemd systemd-dev
	libelf-dev zlib1g-dev libpcap-dev libnuma-dev
	iproute2 python3 python3-yaml jq procps openssl git ca-certificates
)
CACHE=${TUNLESS_CACHE:-/var/cache/tunless}
key=$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-12)
tarball=$CACHE/debian13-$key.tar

if ! command -v mmdebstrap >/dev/null; then
	log "apt-get install mmdebstrap"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi

# Debian's archive as apt on this machine is configured to reach it (deb822 or one-line sources).
mirror() {
	local f u
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		u=$(sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]*\/debian)\/?([[:space:]].*)?$/\1/p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]*\/debian)\/?[[:space:]].*/\2/p' "$f" | head -n1)
		[ -n "$u" ] && { echo "$u"; return 0; }
	done
	return 1
}

if [ ! -f "$tarball" ]; then
	m=$(mirror) || { echo "test-debian13.sh: no Debian mirror in /etc/apt/sources.list*" >&2; exit 1; }
	log "mmdebstrap trixie -> $tarball (${#PACKAGES[@]} packages; once, then cached)"
	mkdir -p "$CACHE"
	t1=$SECONDS
	mmdebstrap --quiet --variant=apt --format=tar --include="$(IFS=,; echo "${PACKAGES[*]}")" \
		trixie "$tarball.part" "deb $m trixie main" "deb $m trixie-updates main"
	mv "$tarball.part" "$tarball"
	log "root made in $((SECONDS - t1)) s"
	# Older roots (another package list) are of no use any more.
	find "$CACHE" -maxdepth 1 -name 'debian13-*.tar' ! -name "debian13-$key.tar" -delete
fi

r=$(mktemp -d /var/tmp/tunless-debian13.XXXXXX)
cleanup() {
	local m
	# Unmount what is under the root, deepest first.
	for m in $(awk -v r="$r" '$2 ~ "^"r"/" { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	if [ "$keep" = 1 ]; then log "root kept: $r"; else rm -rf --one-file-system "$r"; fi
}
trap cleanup EXIT
tar -x -C "$r" -f "$tarball"
mount -t proc proc "$r/proc"
mount -t sysfs sysfs "$r/sys"
mount --rbind /dev "$r/dev"
mount -t tmpfs tmpfs "$r/tmp"
mkdir -p "$r/src/tunless"
git -C "$root" ls-files -z --cached --others --exclude-standard |
	(cd "$root" && tar --null -T - -c --ignore-failed-read 2>/dev/null) | tar -x -C "$r/src/tunless"

cat >"$r/src/run.sh" <<'EOF'
set -u -o pipefail
cd /src/tunless
git init -q && git add -A && git -c user.name=test -c user.email=test@tunless.invalid commit -qm tree
passed=0 failed=0
count() {   # log of "meson test" or of a script ending "N passed, N failed"
	local n
	for w in Ok Fail Timeout Skipped; do
		n=$(sed -n "s/^$w: *\([0-9]*\).*/\1/p" "$1" | tail -n1)
		[ -n "$n" ] || n=0
		if [ "$w" = Ok ]; then passed=$((passed + n)); else failed=$((failed + n)); fi
	done
}
step() {   # name, command...: a meson test run counts its tests, any other step counts as one
	local name=$1 log rc; shift
	log=$(mktemp)
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	rc=$?
	if grep -q '^Ok:' "$log"; then
		count "$log"
		[ $rc = 0 ] || grep -q '^\(Fail\|Timeout\): *[1-9]' "$log" || failed=$((failed + 1))
	elif [ $rc = 0 ]; then
		passed=$((passed + 1))
	else
		echo "FAIL: $name"; failed=$((failed + 1))
	fi
	rm -f "$log"
}
echo "== $(. /etc/os-release; echo "$PRETTY_NAME"): gcc $(gcc -dumpfullversion), DPDK $(pkg-config --modversion libdpdk), libxdp $(pkg-config --modversion libxdp), libbpf $(pkg-config --modversion libbpf)"
build() { meson setup "$@" >/dev/null && ninja -C "$1"; }
step "build -Dwerror=true" build build -Dwerror=true
[ "$failed" = 0 ] || { echo "$passed $failed" >/src/result; exit 1; }   # nothing more to test
step "unit" meson test -C build --suite unit --print-errorlogs --num-processes 1
step "deb (dpkg-buildpackage, lintian)" meson test -C build --suite deb --print-errorlogs
deb_install() {
	local d
	d=$(mktemp -d)
	git archive --prefix=t/ HEAD | tar -x -C "$d"
	(cd "$d/t" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -b -us -uc >"$d/log" 2>&1) || { tail -20 "$d/log"; return 1; }
	echo "Depends: $(dpkg-deb -f "$d"/tunless_*.deb Depends)"
	apt-get install -y -qq "$d"/tunless_*.deb >/dev/null &&
		tunlessd --version &&
		tunlessd --check -c /usr/share/doc/tunless/examples/host-a.yaml
}
step "the .deb installs (apt, its Depends from trixie), tunlessd --version, tunlessd --check of a packaged example" deb_install
step "build-san (ASan+UBSan)" build build-san -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dintegration=false
step "unit (ASan+UBSan)" meson test -C build-san --suite unit --print-errorlogs --num-processes 1
echo "$passed $failed" >/src/result
EOF
log "running in the root (build, unit, deb, ASan+UBSan unit)"
chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive bash /src/run.sh || true
passed=0 failed=1
[ -f "$r/src/result" ] && read -r passed failed <"$r/src/result"
log "done in $((SECONDS - t0)) s"
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
