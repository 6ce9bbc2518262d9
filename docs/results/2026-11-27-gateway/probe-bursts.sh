#!/usr/bin/env bash
# How many frames each port send call is handed (gateway, the NIC lab, udp WAN and packet LAN, one
# worker each end): uprobes on the release tunlessd's tl_udpport_tx (the WAN: one crypto job, or
# what is left of it, per call) and tl_afp_tx (the packet LAN: one flush of the LAN queue), their
# 4th argument (n, %cx), recorded with `perf record -a` for 3 s of one STREAMS-stream run
# (probe-bursts-P<STREAMS>.txt: a histogram per gateway and function). With `rx` as the second
# argument instead: what tl_afp_rx returned (frames per read of the packet LAN port) and the n
# tl_aqm_dequeue_burst was asked for (probe-rx-P<STREAMS>.txt). Under the lab lock:
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/probe-bursts.sh 8 [rx]
# TAG (e.g. -after) goes into the output names: probe-bursts<TAG>-P8.txt, probe-rx<TAG>-P8.txt.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
BIN=$BUILD/src/daemon/tunlessd
P=${1:-8}
SET=${2:-sends}
case $SET in
sends) PROBES=('tl_udpport_tx n=%cx:u16' 'tl_afp_tx n=%cx:u16') OUT=probe-bursts${TAG:-}-P$P ;;
rx) PROBES=('tl_afp_rx%return $retval' 'tl_aqm_dequeue_burst n=%dx:u32') OUT=probe-rx${TAG:-}-P$P ;;
*) echo "probe-bursts.sh: the probe set is sends or rx, not '$SET'" >&2; exit 2 ;;
esac
. "$HERE/wait-transfer.sh"
perf probe -q -d 'probe_tunlessd:*' 2>/dev/null
for pr in "${PROBES[@]}"; do
	perf probe -q -x "$BIN" --add "$pr" || exit 1
done
TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 14 -P "$P" -i tunless-udp-packet \
	-o "$HERE/$OUT-run.json" >"$HERE/$OUT-run.log" 2>&1 &
bp=$!
wait_transfer "$bp" || exit 1
sleep 3
gwa=$(ip netns pids "${NS%-client}-gwa" | paste -sd,)
perf record -q -a -e 'probe_tunlessd:*' -o /tmp/probe-bursts.data -- sleep 3 >/dev/null 2>&1
wait "$bp"
perf probe -q -d 'probe_tunlessd:*'
perf script -i /tmp/probe-bursts.data -F pid,event,trace 2>/dev/null | python3 -c '
import sys, collections
gwa = set(sys.argv[1].split(","))
h = collections.defaultdict(collections.Counter)
for line in sys.stdin:
    f = line.split()
    if len(f) < 3 or "=" not in f[-1]:
        continue
    who = "gwa" if f[0] in gwa else "gwb"
    h[(who, f[1].rstrip(":").split(":")[-1])][int(f[-1].split("=")[1], 0)] += 1
for (who, fn), c in sorted(h.items()):
    n = sum(c.values()); frames = sum(k * v for k, v in c.items())
    top = max(c, key=c.get)
    print("%s %s: %d calls, %d frames, %.1f frames per call; most often %d (%.0f %% of calls, %.0f %% of frames)" % (
        who, fn, n, frames, frames / n, top, 100 * c[top] / n, 100 * top * c[top] / max(frames, 1)))
    print("   frames: calls  " + "  ".join("%d:%d" % kv for kv in sorted(c.items())))
' "$gwa" | tee "$HERE/$OUT.txt"
