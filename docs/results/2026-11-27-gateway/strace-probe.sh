#!/bin/bash
# strace -c of both tunlessd during 3 s of one 8-stream gateway run (tunless-udp-packet): system
# calls and errors (EAGAIN: an empty read). strace slows the run (1.391 Gbit/s): counts, not rates.
# Under the lab lock: flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/strace-probe.sh
cd "$(dirname "$0")/../../.."
TUNLESS_BUILD=build-rel bench/throughput.sh -m gateway -t 16 -P 8 -i tunless-udp-packet -o /tmp/strace-probe.json > docs/results/2026-11-27-gateway/strace-probe-run.log 2>&1 &
bp=$!
. docs/results/2026-11-27-gateway/wait-transfer.sh
wait_transfer "$bp"
sleep 3
for g in gwa gwb; do
  p=$(ip netns pids "${NS%-client}-$g" | head -1)
  timeout -s INT 3 strace -c -f -p $p -o docs/results/2026-11-27-gateway/strace-$g.txt >/dev/null 2>&1 &
done
wait
