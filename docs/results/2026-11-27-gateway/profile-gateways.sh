#!/usr/bin/env bash
# perf record -g of each gateway's tunlessd alone (not the whole machine) for 5 s in the middle
# of one 8-stream gateway run (NIC lab, udp WAN, packet LAN): /tmp/gw-perf-gwa.data and
# /tmp/gw-perf-gwb.data, and the top symbols by DSO in profile<TAG>-gwa.txt / -gwb.txt.
# Under the lab lock:  flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/profile-gateways.sh
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$HERE}   # where the results go (default: beside this script)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
. "$HERE/wait-transfer.sh"
TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 14 -P 8 -i tunless-udp-packet \
	-o "$OUT/profile${TAG:-}-run.json" >"$OUT/profile${TAG:-}-run.log" 2>&1 &
bp=$!
wait_transfer "$bp" || exit 1
sleep 3
for g in gwa gwb; do
	perf record -q -g -F 999 -p "$(ip netns pids "${NS%-client}-$g" | paste -sd,)" -o "/tmp/gw-perf-$g.data" \
		-- sleep 5 >/dev/null 2>&1 &
done
wait %2 %3 2>/dev/null
wait "$bp"
for g in gwa gwb; do
	perf report -i "/tmp/gw-perf-$g.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep '%' |
		head -n 60 >"$OUT/profile${TAG:-}-$g.txt"
done
