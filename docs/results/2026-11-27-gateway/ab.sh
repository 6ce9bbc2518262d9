#!/usr/bin/env bash
# A paired A/B of two tunless builds beside wggo-ts (bench/throughput.sh -b), medians of RUNS:
# gateway (NIC lab, udp WAN, packet LAN) 8 streams, 1 stream, 8 streams reversed, and host to
# host 8 streams. TUNLESS_BUILD is A (default <repo>/build-rel), the first argument B (the build
# before the change), the second a tag for the output names (<tag>-<mode>-<cell>.{json,txt,log}).
# Under the lab lock:
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/ab.sh /path/to/before/build-rel readfull
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$HERE}   # where the results go (default: beside this script)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
B=${1:?the build before the change}
TAG=${2:?a tag for the output names}
RUNS=${RUNS:-5}
CELLS=${CELLS:-gateway:P8 gateway:P1 host:P8 gateway:P8R}
for c in $CELLS; do
	mode=${c%%:*} name=${c#*:}
	case $name in P1) opt=(-P 1) ;; P8) opt=(-P 8) ;; P1R) opt=(-P 1 -R) ;; P8R) opt=(-P 8 -R) ;; esac
	if [ "$mode" = gateway ]; then impls=wggo-ts,tunless-udp-packet,tunless-udp-packet-b; else impls=wggo-ts,tunless,tunless-b; fi
	echo "[ab $(date -u +%T)] $mode $name" >&2
	TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m "$mode" -t 10 -n "$RUNS" -i "$impls" "${opt[@]}" -b "$B" \
		-o "$OUT/$TAG-$mode-$name.json" >"$OUT/$TAG-$mode-$name.log" 2>&1
	echo "[ab $(date -u +%T)] $mode $name rc $?" >&2
done
