# shellcheck shell=bash
# Sourced by tests, benchmarks and the demo: where the interop peers and the build are.
#   WG_GO          wireguard-go binary (built by scripts/setup.sh)
#   WG_GO_TS       Tailscale's fork of wireguard-go (scripts/setup.sh caches it as wireguard-go-ts)
#   BORINGTUN      boringtun-cli binary
#   TUNLESS_BUILD  meson build directory (default <repo>/build)
#   TUNLESS_ROOT   repository root
TUNLESS_ROOT=${TUNLESS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
TUNLESS_CACHE=${TUNLESS_CACHE:-/var/cache/tunless}
TUNLESS_BUILD=${TUNLESS_BUILD:-$TUNLESS_ROOT/build}
WG_GO=${WG_GO:-$TUNLESS_CACHE/bin/wireguard-go}
WG_GO_TS=${WG_GO_TS:-$TUNLESS_CACHE/bin/wireguard-go-ts}
BORINGTUN=${BORINGTUN:-$TUNLESS_CACHE/bin/boringtun-cli}
case ":$PATH:" in
*":$TUNLESS_CACHE/bin:"*) ;;
*) PATH=$TUNLESS_CACHE/bin:$PATH ;;
esac
case ":$PATH:" in
*":/usr/sbin:"*) ;;
*) PATH=$PATH:/usr/sbin:/sbin ;;
esac
export TUNLESS_ROOT TUNLESS_CACHE TUNLESS_BUILD WG_GO WG_GO_TS BORINGTUN PATH
