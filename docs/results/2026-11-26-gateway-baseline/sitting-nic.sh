#!/usr/bin/env bash
# The gateway comparison in the NIC lab (bench/impl.sh impl_gateway_lab, BENCH_GW_LAB=nic), one
# sitting under the lab lock:
#
#   flock /tmp/tunless-lab.lock docs/results/2026-11-26-gateway-baseline/sitting-nic.sh
#
# 1. the lab test bench_smoke (bench/run.sh --smoke and throughput.sh -m gateway still run);
# 2. bench/throughput.sh -m gateway -t 10 -n 3, wggo-ts, wireguard-go, tunless-xdp, tunless-udp,
#    1 and 8 streams, both directions: nic-gateway-{P1,P8,P1R,P8R}.{json,txt,log};
# 3. while at least PROFILE_NEED s of the sitting are left: one 8-stream run of tunless-xdp with
#    `perf record -a -g` for 8 s in its middle (/tmp/gw24-perf.data; the run's JSON is not part
#    of the comparison: perf costs CPU);
# 4. while at least 60 s are left: one more paired run of each cell in turn (nic-gateway-<cell>-x<k>.json).
# At most SITTING_LIMIT s (default 1140) pass before a step starts, and none starts after
# SITTING_END (UTC HH:MM) if given; bench_smoke runs last instead of first when less than 840 s
# are left at the start. Every step's start, end and
# exit status: nic-sitting.log. TUNLESS_BUILD: the tunless build (default <repo>/build-rel).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
LIMIT=${SITTING_LIMIT:-1140}
PROFILE_NEED=${PROFILE_NEED:-300}
IMPLS=wggo-ts,wggo,tunless-xdp,tunless-udp
# SITTING_END (UTC, HH:MM): no step starts after it either (the lab's shared window)
if [ -n "${SITTING_END:-}" ]; then
	e=$(($(date -u -d "$SITTING_END" +%s) - $(date -u +%s)))
	[ "$e" -ge "$LIMIT" ] || LIMIT=$e
fi
T0=$SECONDS
log() { printf '[sitting %4ds %s] %s\n' $((SECONDS - T0)) "$(date -u +%H:%M:%S)" "$*" | tee -a "$HERE/nic-sitting.log" >&2; }
left() { echo $((LIMIT - (SECONDS - T0))); }

log "lab lock taken; tunless build $BUILD, tree $(git -C "$ROOT" describe --always --dirty); load $(cut -d' ' -f1-3 /proc/loadavg)"
smoke() {
	log "bench_smoke"
	BENCH_SMOKE_KEEP=1 meson test -C "$BUILD" --no-rebuild --suite integration --print-errorlogs bench_smoke >"$HERE/nic-bench_smoke.log" 2>&1
	log "bench_smoke rc $?"
	SMOKED=1
}
# bench_smoke first when the sitting has room for it and the four cells (about 14 min); else last
SMOKED=
[ -n "${SKIP_SMOKE:-}" ] || [ "$(left)" -lt 840 ] || smoke

cell() { # <tag> <runs> <out-name> throughput.sh args...
	local tag=$1 n=$2 name=$3
	shift 3
	log "cell $tag: -n $n $*"
	TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 10 -n "$n" -i "$IMPLS" "$@" \
		-o "$HERE/$name.json" >"$HERE/$name.log" 2>&1
	log "cell $tag rc $?"
}
CELLS=("P1:-P 1" "P8:-P 8" "P1R:-P 1 -R" "P8R:-P 8 -R")
for c in "${CELLS[@]}"; do
	[ "$(left)" -gt 0 ] || { log "time is up before cell ${c%%:*}"; break; }
	# shellcheck disable=SC2086
	cell "${c%%:*}" 3 "nic-gateway-${c%%:*}" ${c#*:}
done

[ -n "${SKIP_SMOKE:-}$SMOKED" ] || [ "$(left)" -lt 220 ] || smoke
if [ "$(left)" -ge "$PROFILE_NEED" ]; then
	log "profile: tunless-xdp, 8 streams, perf record -a -g during 8 s"
	TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 14 -P 8 -i tunless-xdp \
		-o "$HERE/nic-profile-P8.json" >"$HERE/nic-profile-P8.log" 2>&1 &
	bp=$!
	pids=
	for _ in $(seq 600); do # the run's client iperf3 is running: the transfer has begun
		ns=$(ip netns list | awk -v re="^bt${bp}[0-9]+-client$" '$1 ~ re { print $1 }' | tail -n 1)
		if [ -n "$ns" ] && ip netns pids "$ns" | xargs -r -n1 sh -c 'cat /proc/$0/comm' 2>/dev/null | grep -qx iperf3; then
			pids=$(for g in gwa gwb; do ip netns pids "${ns%-client}-$g"; done | while read -r p; do
				[ "$(cat "/proc/$p/comm" 2>/dev/null)" = tunlessd ] && echo "$p"; done | paste -sd,)
			break
		fi
		sleep 0.1
	done
	sleep 2
	log "profile: tunlessd pids $pids"
	echo "$pids" >"$HERE/nic-profile-P8.pids"
	perf record -a -g -F 499 -o /tmp/gw24-perf.data -- sleep 8 >/dev/null 2>"$HERE/nic-profile-P8.perf.log"
	log "profile: perf rc $?"
	wait "$bp"
	log "profile: run rc $?"
fi

k=0
while [ "$(left)" -ge 60 ]; do
	k=$((k + 1))
	for c in "${CELLS[@]}"; do
		[ "$(left)" -ge 60 ] || break
		# shellcheck disable=SC2086
		cell "${c%%:*}" 1 "nic-gateway-${c%%:*}-x$k" ${c#*:}
	done
done
log "sitting done: $((SECONDS - T0)) s under the lock"
