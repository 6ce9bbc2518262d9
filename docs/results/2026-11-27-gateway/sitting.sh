#!/usr/bin/env bash
# Issue 24's comparison on a quiet machine, one sitting under the lab lock:
#
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/sitting.sh
#
# 1. gateway forwarding in the NIC lab (bench/throughput.sh -m gateway -t 10 -n RUNS): wggo-ts and
#    tunless with each port pair (tunless-udp-packet, tunless-udp, tunless-xdp), 1 and 8 streams,
#    both directions: gateway-{P1,P8,P1R,P8R}.{json,txt,log};
# 2. host to host (bench/throughput.sh -m host -t 10 -n RUNS): wggo-ts and tunless, the same four
#    cells: host-{P1,P8,P1R,P8R}.*;
# 3. profiles: one 8-stream gateway run of each of PROFILE_IMPLS with `perf record -a -g` for 8 s
#    in its middle (/tmp/gw27-perf-<impl>.data; those runs are not in the tables: perf costs CPU).
# Every step's start, end and exit status: sitting.log. TUNLESS_BUILD: the tunless build
# (default <repo>/build-rel). RUNS (default 5), STEPS (default "gateway host profile").
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$HERE}   # where the results go (default: beside this script)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
RUNS=${RUNS:-5}
STEPS=${STEPS:-gateway host profile}
GW_IMPLS=${GW_IMPLS:-wggo-ts,tunless-udp-packet,tunless-udp,tunless-xdp}
HOST_IMPLS=${HOST_IMPLS:-wggo-ts,tunless}
PROFILE_IMPLS=${PROFILE_IMPLS:-tunless-udp-packet wggo-ts}
T0=$SECONDS
. "$HERE/wait-transfer.sh"
log() { printf '[sitting %4ds %s] %s\n' $((SECONDS - T0)) "$(date -u +%H:%M:%S)" "$*" | tee -a "$OUT/sitting.log" >&2; }

log "lab lock taken; tunless build $BUILD, tree $(git -C "$ROOT" describe --always --dirty); load $(cut -d' ' -f1-3 /proc/loadavg)"
CELLS=("P1:-P 1" "P8:-P 8" "P1R:-P 1 -R" "P8R:-P 8 -R")
cells() { # <mode> <impls>
	local mode=$1 impls=$2 c
	for c in "${CELLS[@]}"; do
		log "$mode ${c%%:*}: -n $RUNS -i $impls ${c#*:}"
		# shellcheck disable=SC2086
		TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m "$mode" -t 10 -n "$RUNS" -i "$impls" ${c#*:} \
			-o "$OUT/$mode-${c%%:*}.json" >"$OUT/$mode-${c%%:*}.log" 2>&1
		log "$mode ${c%%:*} rc $?"
	done
}
profile() { # <impl>: perf record -a -g during 8 s of one 8-stream gateway run
	local impl=$1 bp pids=
	log "profile $impl: 8 streams, perf record -a -g during 8 s"
	TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 14 -P 8 -i "$impl" \
		-o "$OUT/profile-$impl.json" >"$OUT/profile-$impl.log" 2>&1 &
	bp=$!
	wait_transfer "$bp" && pids=$(for g in gwa gwb; do ip netns pids "${NS%-client}-$g"; done | paste -sd,)
	sleep 2
	log "profile $impl: gwa,gwb pids $pids"
	echo "$pids" >"$OUT/profile-$impl.pids"
	perf record -a -g -F 499 -o "/tmp/gw27-perf-$impl.data" -- sleep 8 >/dev/null 2>"$OUT/profile-$impl.perf.log"
	log "profile $impl: perf rc $?"
	wait "$bp"
	log "profile $impl: run rc $?"
}
for s in $STEPS; do
	case $s in
	gateway) cells gateway "$GW_IMPLS" ;;
	host) cells host "$HOST_IMPLS" ;;
	profile) for i in $PROFILE_IMPLS; do profile "$i"; done ;;
	*) log "unknown step $s" ;;
	esac
done
log "sitting done: $((SECONDS - T0)) s under the lock"
