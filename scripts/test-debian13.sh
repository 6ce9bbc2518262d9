#!/usr/bin/env bash
# tunless on Debian 13 (trixie: DPDK 24.11, libxdp 1.5, libbpf 1.5, GCC 14), from this Debian 12
# machine: makes a trixie root from Debian's packages with mmdebstrap (installed here if missing),
# with exactly the packages scripts/setup.sh names for trixie (scripts/setup.sh --list-packages
# trixie), cached as a tarball under ${TUNLESS_CACHE:-/var/cache/tunless} (keyed by that list, so
# a change of the list makes a new one), unpacks it into a temporary directory, copies the tree in
# (tracked and untracked files that git does not ignore, committed there as one commit so the
# package test builds what is here) and runs inside it, in a chroot (same kernel):
#   * scripts/test.sh, README's command, as on Debian 12: scripts/setup.sh (its apt finds every
#     package of the list installed; the interop peers wireguard-go, wireguard-go-ts and
#     boringtun-cli are this machine's builds, from $TUNLESS_CACHE/bin mounted read-only), the
#     build with warnings as errors, the unit suite, the package (dpkg-buildpackage, lintian),
#     the unit suite under ASan+UBSan, the fuzz harnesses (clang 19) and the network-namespace
#     lab tests (suite integration), the last under this machine's lab lock
#     (/tmp/tunless-lab.lock, mounted into the root), as other lab users take it;
#   * then the .deb is installed in the root with apt (its Depends resolved from trixie), and the
#     installed tunlessd prints its version and checks a packaged example configuration.
# Ends with one line "tests: N passed, N failed". Needs root (chroot, mounts).
#
# Usage: scripts/test-debian13.sh [--keep] [--ci]
#   --keep  leaves the root for a look; its path is printed
#   --ci    runs only the lab tests that differ on Debian 13 (DPDK 24.11's net_af_xdp with shared
#           UMEM, libxdp 1.5's programs: $CI_LAB_TESTS) instead of all of them, so that CI's
#           Debian 12 and Debian 13 runs fit its 90 minutes (the whole lab suite in the root takes
#           about 25 minutes more); everything else runs as without it
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
keep=0
lab_tests=
CI_LAB_TESTS="kernel gateway nodrop host_interop_xdp wan_addr_xdp wan_forward bad_input umem_shared"
for arg in "$@"; do
	case $arg in
	--keep) keep=1 ;;
	--ci) lab_tests=$CI_LAB_TESTS ;;
	-h | --help) sed -n '2,26p' "$0"; exit 0 ;;
	*) echo "test-debian13.sh: unknown argument '$arg'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "test-debian13.sh: needs root (chroot, mounts)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
log() { printf '[debian13] %s\n' "$*"; }
t0=$SECONDS

# The root holds what scripts/setup.sh installs on trixie, no more.
mapfile -t PACKAGES < <("$root/scripts/setup.sh" --list-packages trixie)
[ "${#PACKAGES[@]}" -gt 0 ] || { echo "test-debian13.sh: scripts/setup.sh --list-packages trixie named nothing" >&2; exit 1; }
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
	for m in $(awk -v r="$r" '$2 ~ "^"r"(/|$)" { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	if [ "$keep" = 1 ]; then log "root kept: $r"; else rm -rf --one-file-system "$r"; fi
}
trap cleanup EXIT
tar -x -C "$r" -f "$tarball"
# The root a mount point of its own: ip netns exec makes "/" a slave mount, which a plain directory is not.
mount --bind "$r" "$r"
mount -t proc proc "$r/proc"
mount -t sysfs sysfs "$r/sys"
mount --rbind /dev "$r/dev"
mount -t tmpfs tmpfs "$r/tmp"
# The interop peers built here (Go binaries; boringtun-cli needs glibc 2.34, trixie has 2.41),
# the kernel's modules (same kernel) and the lab lock shared with this machine's lab users.
mkdir -p "$r$CACHE/bin" "$r/lib/modules/$(uname -r)"
mount --bind -o ro "$CACHE/bin" "$r$CACHE/bin"
[ ! -d "/lib/modules/$(uname -r)" ] || mount --bind -o ro "/lib/modules/$(uname -r)" "$r/lib/modules/$(uname -r)"
# The Go toolchain, read-only, where bench/ looks for it (/usr/local/go): bench/tunvpn.sh reads the
# module version of wireguard-go-ts with 'go version -m' (the lab test bench_smoke checks it).
gobin=$(readlink -f "$(command -v go || echo /usr/local/go/bin/go)")
if [ -x "$gobin" ]; then
	mkdir -p "$r/usr/local/go"
	mount --bind -o ro "$(dirname "$(dirname "$gobin")")" "$r/usr/local/go"
fi
LAB_LOCK=/tmp/tunless-lab.lock
[ -e "$LAB_LOCK" ] || : >>"$LAB_LOCK"
: >"$r/run/tunless-lab.lock"
mount --bind "$LAB_LOCK" "$r/run/tunless-lab.lock"
mkdir -p "$r/src/tunless"
git -C "$root" ls-files -z --cached --others --exclude-standard |
	(cd "$root" && tar --null -T - -c --ignore-failed-read 2>/dev/null) | tar -x -C "$r/src/tunless"

cat >"$r/src/run.sh" <<'EOF'
set -u -o pipefail
cd /src/tunless
git init -q && git add -A && git -c user.name=test -c user.email=test@tunless.invalid commit -qm tree
passed=0 failed=0
step() {   # name, command...: one test
	local name=$1; shift
	echo "== $name"
	if "$@"; then passed=$((passed + 1)); else echo "FAIL: $name"; failed=$((failed + 1)); fi
}
echo "== $(. /etc/os-release; echo "$PRETTY_NAME"): gcc $(gcc -dumpfullversion), clang $(clang -dumpversion), DPDK $(pkg-config --modversion libdpdk), libxdp $(pkg-config --modversion libxdp), libbpf $(pkg-config --modversion libbpf)"
# README's command, as on Debian 12; its last line "tests: N passed, N failed" is added in.
log=$(mktemp)
TUNLESS_CACHE=$TUNLESS_CACHE TL_LAB_LOCK=/run/tunless-lab.lock TL_LAB_TESTS="$TL_LAB_TESTS" scripts/test.sh 2>&1 | tee "$log"
line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n1)
if [ -n "$line" ]; then
	passed=$(echo "$line" | awk '{ print $2 }'); failed=$(echo "$line" | awk '{ print $4 }')
else
	echo "FAIL: scripts/test.sh ended without its tests: line"; failed=1
fi
rm -f "$log"
[ -d build ] || { echo "$passed $failed" >/src/result; exit 1; }   # nothing more to test
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
echo "$passed $failed" >/src/result
EOF
log "running in the root (scripts/test.sh: setup, build, unit, deb, ASan+UBSan unit, fuzz, lab; the .deb installed)"
chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive TUNLESS_CACHE="$CACHE" TL_LAB_TESTS="$lab_tests" bash /src/run.sh || true
passed=0 failed=1
[ -f "$r/src/result" ] && read -r passed failed <"$r/src/result"
log "done in $((SECONDS - t0)) s"
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
