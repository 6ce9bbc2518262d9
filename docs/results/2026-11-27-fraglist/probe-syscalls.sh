#!/usr/bin/env bash
# System calls of each gateway during 5 s of one 8-stream gateway run (NIC lab, udp WAN, packet
# LAN; IMPL, default tunless-udp-packet): recvmmsg, sendmmsg, sched_yield (all), and recvmmsg
# that returned no message (ret < 1), counted with perf stat on the syscall tracepoints:
# <OUT>/syscalls-<IMPL>-<gw>-{all,empty}.txt. Under the lab lock:
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-fraglist/probe-syscalls.sh
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$HERE}
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
IMPL=${IMPL:-tunless-udp-packet}
TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 14 -P "${P:-8}" -i "$IMPL" \
	-o "$OUT/syscalls-$IMPL-run.json" >"$OUT/syscalls-$IMPL-run.log" 2>&1 &
bp=$!
. "$ROOT/docs/results/2026-11-27-gateway/wait-transfer.sh"
wait_transfer "$bp" || exit 1
sleep 3
for g in gwa gwb; do
	pids=$(ip netns pids "${NS%-client}-$g" | paste -sd,)
	perf stat -x, -e syscalls:sys_exit_recvmmsg -e syscalls:sys_exit_sendmmsg -e syscalls:sys_enter_sched_yield \
		-p "$pids" -o "$OUT/syscalls-$IMPL-$g-all.txt" -- sleep 5 &
	perf stat -x, -e syscalls:sys_exit_recvmmsg --filter 'ret < 1' -p "$pids" -o "$OUT/syscalls-$IMPL-$g-empty.txt" -- sleep 5 &
done
wait %2 %3 %4 %5 2>/dev/null
wait "$bp"
for g in gwa gwb; do
	echo "== $g (5 s)"
	grep -hv '^#' "$OUT/syscalls-$IMPL-$g-all.txt" | grep . | awk -F, '{ printf "  %-34s %10d\n", $3, $1 }'
	grep -hv '^#' "$OUT/syscalls-$IMPL-$g-empty.txt" | grep . | awk -F, '{ printf "  %-34s %10d\n", "recvmmsg with no message", $1 }'
done | tee "$OUT/syscalls-$IMPL.txt"
