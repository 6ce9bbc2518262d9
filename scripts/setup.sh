#!/usr/bin/env bash
# tunless machine setup: Debian packages, interop peers (wireguard-go, boringtun-cli), bpffs.
#
# Idempotent and quick on a second run:
#   * apt is skipped entirely when every package is already installed (dpkg-query);
#   * each peer build is skipped when the cached binary reports the pinned version.
# Peers are cached under ${TUNLESS_CACHE:-/var/cache/tunless}/bin; scripts/env.sh puts that on PATH.
# Tailscale's fork of wireguard-go is cached there as wireguard-go-ts (its own command is also
# called wireguard-go).
#
# Debian 12 (bookworm) and Debian 13 (trixie): the package list is the same but for what the
# release names differently (APT_PACKAGES_<codename> below); another release is refused.
#
# Usage: scripts/setup.sh [--no-apt] [--no-peers]
#        scripts/setup.sh --list-packages [bookworm|trixie]   (prints the list, installs nothing)
set -euo pipefail

# ---- pins (change here, nowhere else) ------------------------------------------------------
# wireguard-go release 0.0.20250522 == this module pseudo-version.
WG_GO_MODULE=golang.zx2c4.com/wireguard
WG_GO_PIN=v0.0.0-20250521234502-f333402bd9cb
WG_GO_RELEASE=0.0.20250522
# Tailscale's fork of wireguard-go (a baseline of its own in bench/, id wggo-ts). Its binary says
# v0.0.20230223 for every build, so the cache is checked against the module version the binary
# records (go version -m).
WG_GO_TS_MODULE=github.com/tailscale/wireguard-go
WG_GO_TS_PIN=v0.0.0-20260928213032-417aef361226
BORINGTUN_PIN=0.7.1

APT_PACKAGES=(
	build-essential meson ninja-build pkg-config clang llvm
	libdpdk-dev dpdk libxdp-dev libbpf-dev bpftool xdp-tools
	libsodium-dev libssl-dev libcyaml-dev libyaml-dev libmnl-dev libcmocka-dev libsystemd-dev debhelper
	pandoc lintian man-db systemd
	libelf-dev zlib1g-dev libpcap-dev libnuma-dev libclang-rt-dev
	iproute2 iputils-ping iperf3 wireguard-tools tcpdump
	python3 python3-scapy python3-yaml jq ethtool procps
	openvpn openssl python3-matplotlib
	python3-cryptography python3-nacl git ca-certificates
)
# What a release adds (libclang-rt-dev is clang's runtime, libFuzzer among it, on both: the
# default clang's, 14 on bookworm, 19 on trixie).
APT_PACKAGES_bookworm=()
APT_PACKAGES_trixie=(
	systemd-dev # systemd.pc (the unit's install path) moved out of systemd in trixie
)

CACHE=${TUNLESS_CACHE:-/var/cache/tunless}
BIN=$CACHE/bin
DO_APT=1
DO_PEERS=1
LIST=
RELEASE=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
while [ $# -gt 0 ]; do
	case $1 in
	--no-apt) DO_APT=0 ;;
	--no-peers) DO_PEERS=0 ;;
	--list-packages) LIST=1; [ $# -lt 2 ] || { RELEASE=$2; shift; } ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "setup.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
case $RELEASE in
bookworm) APT_PACKAGES+=("${APT_PACKAGES_bookworm[@]}") ;;
trixie) APT_PACKAGES+=("${APT_PACKAGES_trixie[@]}") ;;
*) echo "setup.sh: Debian release '${RELEASE:-unknown}' is not supported (bookworm, trixie)" >&2; exit 2 ;;
esac
if [ -n "$LIST" ]; then printf '%s\n' "${APT_PACKAGES[@]}"; exit 0; fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

APT_UPDATED=0
apt_update_once() {
	[ "$APT_UPDATED" -eq 1 ] && return 0
	log "apt-get update"
	$SUDO apt-get update -qq
	APT_UPDATED=1
}

apt_install() {
	apt_update_once
	log "apt-get install $*"
	$SUDO apt-get install -y -qq --no-install-recommends "$@"
}

# Packages not in state "install ok installed".
missing_packages() {
	local p st
	for p in "$@"; do
		st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		[ "$st" = "install ok installed" ] || printf '%s\n' "$p"
	done
}

setup_apt() {
	local missing
	missing=$(missing_packages "${APT_PACKAGES[@]}")
	if [ -z "$missing" ]; then
		log "Debian packages: all ${#APT_PACKAGES[@]} installed, apt skipped"
		return 0
	fi
	# shellcheck disable=SC2086
	apt_install $missing
}

# ---- toolchains ------------------------------------------------------------------------------
find_go() {
	GO=$(command -v go || true)
	[ -n "$GO" ] || { [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go; } || true
	if [ -z "$GO" ]; then
		log "Go not found: installing Debian golang-go"
		apt_install golang-go ca-certificates
		GO=$(command -v go) || die "golang-go installed but 'go' not on PATH"
	fi
	log "go: $GO ($("$GO" version))"
}

find_cargo() {
	CARGO=$(command -v cargo || true)
	[ -n "$CARGO" ] || { [ -x "$HOME/.cargo/bin/cargo" ] && CARGO=$HOME/.cargo/bin/cargo; } || true
	if [ -z "$CARGO" ]; then
		log "cargo not found: installing Debian cargo"
		apt_install cargo rustc ca-certificates
		CARGO=$(command -v cargo) || die "cargo installed but not on PATH"
	fi
	# rustup's proxy needs its own bin dir on PATH to find rustc.
	PATH=$(dirname "$CARGO"):$PATH
	log "cargo: $CARGO ($("$CARGO" --version))"
}

# ---- peers -----------------------------------------------------------------------------------
wg_go_ok() {
	[ -x "$BIN/wireguard-go" ] && "$BIN/wireguard-go" --version 2>/dev/null | grep -q "v$WG_GO_RELEASE"
}

setup_wireguard_go() {
	if wg_go_ok; then
		log "wireguard-go $WG_GO_RELEASE: cached"
		return 0
	fi
	find_go
	local t0=$SECONDS
	log "building wireguard-go $WG_GO_MODULE@$WG_GO_PIN"
	# GOTOOLCHAIN=auto lets an older Go fetch the toolchain the module asks for (from the proxy).
	GOBIN=$BIN GOFLAGS= GOTOOLCHAIN=${GOTOOLCHAIN:-auto} \
		"$GO" install "$WG_GO_MODULE@$WG_GO_PIN"
	ln -sf wireguard "$BIN/wireguard-go"
	wg_go_ok || die "wireguard-go built but '$BIN/wireguard-go --version' does not say v$WG_GO_RELEASE"
	log "wireguard-go built in $((SECONDS - t0)) s"
}

# The module and version a Go binary was built from, as recorded in it ("mod <path> <version>").
go_mod_ok() { # <binary> <module> <version>
	[ -x "$1" ] || return 1
	local go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
	if ! [ -x "$go" ] && ! command -v "$go" >/dev/null 2>&1; then
		# No Go here (a machine that has the peers from another's cache): the same line, as the
		# binary's build information holds it in plain text.
		grep -aqF "$(printf 'mod\t%s\t%s\t' "$2" "$3")" "$1"
		return
	fi
	"$go" version -m "$1" 2>/dev/null | awk -v m="$2" -v v="$3" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

wg_go_ts_ok() {
	go_mod_ok "$BIN/wireguard-go-ts" "$WG_GO_TS_MODULE" "$WG_GO_TS_PIN"
}

setup_wireguard_go_ts() {
	if wg_go_ts_ok; then
		log "wireguard-go-ts $WG_GO_TS_PIN: cached"
		return 0
	fi
	find_go
	local t0=$SECONDS tmp
	log "building wireguard-go-ts $WG_GO_TS_MODULE@$WG_GO_TS_PIN"
	# Built into a directory of its own: its command is also named wireguard-go and would
	# replace the stock one's link in $BIN.
	tmp=$(mktemp -d)
	GOBIN=$tmp GOFLAGS= GOTOOLCHAIN=${GOTOOLCHAIN:-auto} \
		"$GO" install "$WG_GO_TS_MODULE@$WG_GO_TS_PIN"
	install -m 0755 "$tmp/wireguard-go" "$BIN/wireguard-go-ts"
	rm -rf "$tmp"
	wg_go_ts_ok || die "wireguard-go-ts built but '$BIN/wireguard-go-ts' does not record $WG_GO_TS_MODULE $WG_GO_TS_PIN"
	log "wireguard-go-ts built in $((SECONDS - t0)) s"
}

boringtun_ok() {
	[ -x "$BIN/boringtun-cli" ] && "$BIN/boringtun-cli" --version 2>/dev/null | grep -qx "boringtun $BORINGTUN_PIN"
}

setup_boringtun() {
	if boringtun_ok; then
		log "boringtun-cli $BORINGTUN_PIN: cached"
		return 0
	fi
	find_cargo
	local t0=$SECONDS
	log "building boringtun-cli $BORINGTUN_PIN (cargo install --locked; about 1 min on 2 idle cores)"
	"$CARGO" install --locked --force --root "$CACHE" boringtun-cli --version "=$BORINGTUN_PIN"
	boringtun_ok || die "boringtun-cli built but does not report $BORINGTUN_PIN"
	log "boringtun-cli built in $((SECONDS - t0)) s"
}

# ---- kernel bits -----------------------------------------------------------------------------
setup_bpffs() {
	if [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ]; then
		log "bpffs: /sys/fs/bpf already mounted"
	elif $SUDO mount -t bpf bpf /sys/fs/bpf 2>/dev/null; then
		log "bpffs: mounted /sys/fs/bpf"
	else
		log "warning: could not mount bpffs on /sys/fs/bpf (XDP map pinning unavailable)"
	fi
}

main() {
	local t0=$SECONDS
	[ "$DO_APT" -eq 1 ] && setup_apt
	if [ "$DO_PEERS" -eq 1 ]; then
		mkdir -p "$BIN"
		setup_wireguard_go
		setup_wireguard_go_ts
		setup_boringtun
	fi
	setup_bpffs
	log "done in $((SECONDS - t0)) s"
	log "  peers:        $BIN/wireguard-go  $BIN/wireguard-go-ts  $BIN/boringtun-cli"
	log "  wg:           $(command -v wg || echo missing)   iperf3: $(command -v iperf3 || echo missing)"
	log "  environment:  source scripts/env.sh   (TUNLESS_CACHE=$CACHE)"
	log "  build:        meson setup build && ninja -C build && meson test -C build"
}

main
