#!/bin/bash
# What tl_afp_rx returned (frames per call of the packet LAN port's read) and the n each
# tl_aqm_dequeue_burst was asked for, by uprobes on the release tunlessd, perf record -a for 2 s
# of one 8-stream gateway run (udp WAN, packet LAN): probe-rx.txt. Under the lab lock:
#   flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/probe-rx.sh
cd "$(dirname "$0")/../../.."
BIN=build-rel/src/daemon/tunlessd
. docs/results/2026-11-27-gateway/wait-transfer.sh
perf probe -q -d 'probe_tunlessd:*' 2>/dev/null
perf probe -q -x $BIN --add 'tl_afp_rx%return $retval' || exit 1
perf probe -q -x $BIN --add 'tl_aqm_dequeue_burst n=%dx:u32' || exit 1
TUNLESS_BUILD=build-rel bench/throughput.sh -m gateway -t 14 -P 8 -i tunless-udp-packet -o /tmp/rxprobe.json > docs/results/2026-11-27-gateway/probe-rx-run.log 2>&1 &
bp=$!
wait_transfer $bp; sleep 3
gwa=$(ip netns pids "${NS%-client}-gwa" | paste -sd,)
perf record -q -a -e 'probe_tunlessd:*' -o /tmp/rxprobe.data -- sleep 2 >/dev/null 2>&1
wait $bp
perf probe -q -d 'probe_tunlessd:*'
echo "gwa=$gwa"
perf script -i /tmp/rxprobe.data -F pid,event,trace 2>/dev/null > /tmp/rxprobe.txt
