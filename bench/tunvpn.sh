# shellcheck shell=bash
# The userspace WireGuard implementations over a TUN device that bench/throughput.sh and
# bench/run.sh (bench/impl.sh) compare tunless with: where each binary is, how it is started,
# and the version line every report names it by. Sourced after scripts/env.sh.
#
#   id             binary ($VAR, scripts/setup.sh caches each)    version line
#   wireguard-go   stock wireguard-go ($WG_GO)                     "wireguard-go v0.0.20250522"
#   (wggo)         the same (bench/throughput.sh's id)
#   wggo-ts        Tailscale's fork ($WG_GO_TS)                    "github.com/tailscale/wireguard-go v0.0.0-..."
#   boringtun      boringtun-cli ($BORINGTUN)                      "boringtun 0.7.1"
#
# The fork's command says v0.0.20230223 whatever it was built from, so its version line is the
# module and pseudo-version the binary records (`go version -m`).
#
#   tunvpn_bin <id>              the binary's path
#   tunvpn_version <id>          one line
#   tunvpn_available <id>        0 if the binary is there; else prints why not
#   tunvpn_argv <id> <log>       sets TUNVPN_ARGV: the command that brings up TUN device wg0 in
#                                the foreground (<log>: where boringtun writes its log)

tunvpn_bin() {
	case $1 in
	wireguard-go | wggo) echo "$WG_GO" ;;
	wggo-ts) echo "$WG_GO_TS" ;;
	boringtun) echo "$BORINGTUN" ;;
	*) return 1 ;;
	esac
}

# The module path and version a Go binary records ("mod <path> <version> <sum>").
go_module_version() {
	local go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
	"$go" version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $2 " " $3; found = 1; exit } END { exit !found }'
}

tunvpn_version() {
	local bin
	bin=$(tunvpn_bin "$1") || return 1
	case $1 in
	wireguard-go | wggo) echo "wireguard-go $("$bin" --version 2>/dev/null | awk 'NR == 1 { print $2 }')" ;;
	wggo-ts) go_module_version "$bin" ||
		echo "$("$bin" --version 2>/dev/null | head -n 1) (Tailscale's fork; module version unknown: no 'go' to read it)" ;;
	boringtun) "$bin" --version 2>/dev/null | head -n 1 ;;
	esac
}

tunvpn_available() {
	local bin
	bin=$(tunvpn_bin "$1") || { echo "not a TUN WireGuard implementation"; return 1; }
	[ -x "$bin" ] || { echo "$bin missing (scripts/setup.sh)"; return 1; }
}

tunvpn_argv() {
	local bin
	bin=$(tunvpn_bin "$1") || return 1
	case $1 in
	boringtun)
		# --disable-drop-privileges (WG_SUDO=1): stay root so it can keep using the TUN device.
		TUNVPN_ARGV=(env WG_SUDO=1 "$bin" --foreground --disable-drop-privileges --log "$2" wg0) ;;
	*) TUNVPN_ARGV=(env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$bin" wg0) ;;
	esac
}
