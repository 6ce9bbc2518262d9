#!/usr/bin/env bash
# The cells not re-run in the A/Bs, at the tree with both kept changes (TUNLESS_BUILD, default
# <repo>/build-rel), beside wggo-ts, medians of RUNS (default 5): gateway with the other port
# pairs (tunless-xdp: af_xdp both; tunless-udp: udp WAN, af_xdp LAN), 8 and 1 streams, and host
# to host with 1 stream both ways (after-<cell>.{json,txt,log}). Under the lab lock:
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/after.sh
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
RUNS=${RUNS:-5}
run() { # <name> <args...>
	local name=$1
	shift
	echo "[after $(date -u +%T)] $name" >&2
	TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -t 10 -n "$RUNS" "$@" -o "$HERE/after-$name.json" \
		>"$HERE/after-$name.log" 2>&1
	echo "[after $(date -u +%T)] $name rc $?" >&2
}
run gateway-P8 -m gateway -P 8 -i wggo-ts,tunless-xdp,tunless-udp
run gateway-P1 -m gateway -P 1 -i wggo-ts,tunless-xdp,tunless-udp
run host-P1 -m host -P 1 -i wggo-ts,tunless
run host-P1R -m host -P 1 -R -i wggo-ts,tunless
