#!/usr/bin/env bash
# Try: the AQM's DRR quantum 65536 bytes instead of 1514, as the default of a second build
# (BUILD_B, default /work/wt/q64/build-rel: this tree with qparams.c's quantum changed), paired
# in the same runs with the first build and wggo-ts: the NIC lab, udp WAN with the packet and
# af_xdp LANs, 1 and 8 streams client -> server, RUNS runs (try-quantum-P<n>.json). Under the
# lab lock:  flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/try-quantum.sh
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
B=${BUILD_B:-/work/wt/q64/build-rel}
RUNS=${RUNS:-3}
for p in ${STREAMS:-8 1}; do
	TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 10 -n "$RUNS" -P "$p" -b "$B" \
		-i wggo-ts,tunless-udp-packet,tunless-udp-packet-b,tunless-udp,tunless-udp-b \
		-o "$HERE/try-quantum-P$p.json" >"$HERE/try-quantum-P$p.log" 2>&1
	echo "P$p rc $? $(date -u +%T)"
done
