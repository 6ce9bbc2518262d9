#!/usr/bin/env bash
# The benchmark's delay line (bench/delayline.c): it adds the delay it is asked for, within
# +-1 ms, and loses nothing.
#
#   ${P}-x eth0 10.98.0.1 ── veth ── dla [${P}-dl: tl-delayline -a dla -b dlb] dlb ── veth ── eth0 10.98.0.2 ${P}-y
#
# 1. RTT through the line at -d 0 and at -d 20000 (20 ms each way): the medians of 100 pings
#    differ by 40 ms +-1 ms (the delay is the behaviour under test, so this bound is the spec).
# 2. 20000 numbered UDP datagrams of 1200 B at ~50 Mbit/s in frames of 20 (bench/udpflow.py)
#    through the 20 ms line: every one arrives, and the line's own counters show no frame it
#    could not hold, send or read (queue_full, too_big, send_errors, socket_drops all 0).
# Usage: test_delayline.sh [path/to/tl-delayline]   (default: $TUNLESS_BUILD/bench/tl-delayline)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../../scripts/env.sh"
. "$HERE/lab.sh"
DL=${1:-$TUNLESS_BUILD/bench/tl-delayline}
FLOW=$TUNLESS_ROOT/bench/udpflow.py
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok $*"; }
nok() { FAIL=$((FAIL + 1)); echo "not ok $*"; }
[ -x "$DL" ] || { echo "not ok missing $DL (ninja -C build)"; exit 1; }

lab_init "dl$(($$ % 100000))"
lab_ns_add x
lab_ns_add dl
lab_ns_add y
lab_veth x eth0 dl dla
lab_veth dl dlb y eth0
lab_addr x eth0 10.98.0.1/24 fd98::1/64
lab_addr y eth0 10.98.0.2/24 fd98::2/64
for n in x y; do lab_nsexec "$n" ethtool -K eth0 tx off >/dev/null; done

DL_PID=
dl_start() { # <delay_us>
	lab_bg dl "$LAB_DIR/dl-$1.log" "$DL" -a dla -b dlb -d "$1" -s "$LAB_DIR/dl-$1.json"
	DL_PID=$LAB_LAST_PID
	lab_wait_for 5 test -s "$LAB_DIR/dl-$1.json"
}
dl_stop() { # TERM the delay line itself (lab_bg's pid is its wrapper), wait for its stats
	local p
	for p in $(ip netns pids "$(lab_ns dl)"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = tl-delayline ] && kill -TERM "$p"
	done
	wait "$DL_PID" 2>/dev/null
}
median_rtt() { # <file>
	python3 -c 'import re,sys; r=sorted(float(x) for x in re.findall(r"time=([\d.]+) ms", open(sys.argv[1]).read())); print(r[len(r)//2] if r else "nan")' "$1"
}

dl_start 0 || nok "delay line starts"
lab_wait_ping x 10.98.0.2 10 || nok "ping through the line at 0 ms"
lab_nsexec x ping -c 100 -i 0.01 -W 1 10.98.0.2 >"$LAB_DIR/ping0.txt" 2>&1
dl_stop
dl_start 20000 || nok "delay line starts at 20 ms"
lab_wait_ping x 10.98.0.2 10
lab_nsexec x ping -c 100 -i 0.01 -W 1 10.98.0.2 >"$LAB_DIR/ping20.txt" 2>&1
m0=$(median_rtt "$LAB_DIR/ping0.txt")
m20=$(median_rtt "$LAB_DIR/ping20.txt")
added=$(python3 -c "print(round($m20 - $m0, 3))" 2>/dev/null || echo nan)
if python3 -c "import sys; sys.exit(0 if abs($added - 40.0) <= 1.0 else 1)" 2>/dev/null; then
	ok "20 ms each way adds 40 ms +-1 to the median RTT (added $added ms; idle $m0 ms)"
else
	nok "20 ms each way adds 40 ms +-1 to the median RTT (added $added ms; medians $m0 / $m20 ms)"
fi

lab_bg y "$LAB_DIR/recv.log" python3 "$FLOW" recv 5999 --idle 2 --out "$LAB_DIR/recv.json" --ready "$LAB_DIR/ready"
rcv=$LAB_LAST_PID
lab_wait_for 5 test -e "$LAB_DIR/ready"
lab_nsexec x python3 "$FLOW" send 10.98.0.2 5999 --size 1200 --fps 250 --burst 20 --seconds 4 \
	--out "$LAB_DIR/sent.json"
wait "$rcv"
dl_stop
read -r sent received <<<"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sent"], json.load(open(sys.argv[2]))["received"])' "$LAB_DIR/sent.json" "$LAB_DIR/recv.json" 2>/dev/null)"
if [ "${sent:-0}" -eq 20000 ] && [ "${received:-0}" -eq "$sent" ]; then
	ok "20000 datagrams through the 20 ms line: all $received arrived"
else
	nok "20000 datagrams through the 20 ms line: sent ${sent:-?}, received ${received:-?}"
fi
lost=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(d[k][c] for k in ("a_to_b", "b_to_a") for c in ("queue_full", "too_big", "send_errors", "socket_drops", "held_at_exit")))' \
	"$LAB_DIR/dl-20000.json" 2>/dev/null || echo "?")
if [ "$lost" = 0 ]; then
	ok "the line counted no frame it could not hold, send or read ($(tr -d '\n' <"$LAB_DIR/dl-20000.json"))"
else
	nok "the line's loss counters are 0 (got $lost: $(cat "$LAB_DIR/dl-20000.json" 2>/dev/null))"
fi
lab_cleanup
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
