#!/usr/bin/env bash
# Try: two workers per gateway instead of one (tunless's `workers`), against wggo-ts in the same
# runs, the NIC lab, udp WAN and packet LAN. For k in 1..ROUNDS, for each cell (1 and 8 streams
# client -> server): one run with -w 1 and one with -w 2, each beside wggo-ts
# (try-w<1|2>-<cell>-<k>.json). Under the lab lock:
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/try-workers.sh
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
ROUNDS=${ROUNDS:-3}
T0=$SECONDS
log() { printf '[try %4ds %s] %s\n' $((SECONDS - T0)) "$(date -u +%H:%M:%S)" "$*" | tee -a "$HERE/try-workers.log" >&2; }
log "lab lock taken; build $BUILD, tree $(git -C "$ROOT" describe --always --dirty); load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $(seq "$ROUNDS"); do
	for p in 1 8; do
		for w in 1 2; do
			TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 10 -n 1 -P "$p" -w "$w" \
				-i wggo-ts,tunless-udp-packet -o "$HERE/try-w$w-P$p-$k.json" >"$HERE/try-w$w-P$p-$k.log" 2>&1
			log "round $k P$p w$w rc $?"
		done
	done
done
log "done: $((SECONDS - T0)) s"
