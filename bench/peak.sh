#!/usr/bin/env bash
# Idle cost and overload behaviour of tunless gateways with N workers (no shaper).
#
#   ${P}-client  10.1.0.2 ── gwa [tunless, N workers] ── WAN ── gwb [tunless, N workers] ── 10.2.0.2  ${P}-server
#
# 1. idle: both daemons up, the tunnel established, no traffic: CPU time of each tunlessd
#    process (all its threads) over -I seconds, in % of one core.
# 2. peak: UDP (iperf3 -u, 1200-byte payloads) client -> server at offered rates rising by
#    x1.5 from 50 Mbit/s for -t seconds each, until the server receives less than 90 % of what
#    was sent or the sender cannot send faster; the peak is the most the server received.
# 3. overload: 2x the peak offered for -t seconds; forwarded = what the server received, as a
#    share of the peak. Every packet sent and not received is located by tunless's counters
#    (drops by reason, missed frames of the AF_XDP rings) in the JSON.
# Not a test: one run, the machine is shared (both gateways, iperf3 and the kernel's veth work
# run on the same cores), so the numbers are this machine's; the ratio is the point.
#
# Usage: bench/peak.sh [-w workers=2] [-t seconds=4] [-I idle seconds=10] [-o out.json]
# Writes docs/results/peak-<date>.json (and .txt) unless -o is given.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/env.sh
. "$ROOT/scripts/env.sh"
# shellcheck source=../tests/integration/lab.sh
. "$ROOT/tests/integration/lab.sh"

WORKERS=2
DURATION=4
IDLE=10
OUT=
while getopts "w:t:I:o:h" o; do
	case $o in
	w) WORKERS=$OPTARG ;;
	t) DURATION=$OPTARG ;;
	I) IDLE=$OPTARG ;;
	o) OUT=$OPTARG ;;
	*) sed -n '2,18p' "$0"; exit 2 ;;
	esac
done
[[ $DURATION =~ ^[0-9]+$ && $IDLE =~ ^[0-9]+$ && ($WORKERS =~ ^[0-9]+$ || $WORKERS == auto) ]] &&
	[ "$DURATION" -ge 2 ] && [ "$IDLE" -ge 1 ] ||
	{ echo "peak.sh: -t (>= 2) and -I take positive integers, -w a number or auto" >&2; exit 2; }
STAMP=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/docs/results/peak-$STAMP.json}
TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
WORK=$(mktemp -d /tmp/tl-peak.XXXXXX)
STEPS=$WORK/steps.jsonl
trap 'rm -rf "$WORK"' EXIT

say() { printf '[peak] %s\n' "$*" >&2; }
for c in ip wg iperf3 ping python3 ethtool; do
	command -v "$c" >/dev/null || { say "missing '$c': run scripts/setup.sh"; exit 1; }
done
[ -x "$TUNLESSD" ] || { say "$TUNLESSD not built (meson setup build && ninja -C build)"; exit 1; }

lab_init "pk$$"
trap 'lab_cleanup; rm -rf "$WORK"' EXIT
lab_gateway
for x in client:eth0 server:eth0 gwa:wan-a gwb:wan-b gwa:lan-a gwb:lan-b; do
	lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx off >/dev/null
done
lab_wait_ping gwa 10.99.0.2 5 || { say "lab: WAN not up"; exit 1; }
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-pk$$a /var/run/dpdk/tunless-pk$$b"
for x in a b; do
	sed -e "s/^name: .*/name: pk$$$x/" -e '/^workers:/d' "$ROOT/configs/gateway-$x.yaml" >"$LAB_DIR/gateway-$x.yaml"
	echo "workers: $WORKERS" >>"$LAB_DIR/gateway-$x.yaml"
	lab_bg "gw$x" "$LAB_DIR/tunless-gw$x.log" "$TUNLESSD" -c "$LAB_DIR/gateway-$x.yaml"
done
for x in a b; do
	lab_wait_for 30 grep -q ': up:' "$LAB_DIR/tunless-gw$x.log" ||
		{ say "tunless gw$x did not come up: $(grep -v '^EAL' "$LAB_DIR/tunless-gw$x.log" | tail -n 3)"; exit 1; }
done
lab_wait_ping client 10.2.0.2 20 || { say "no ping through the tunnel"; exit 1; }
PID_A=$(pgrep -f "tunlessd -c $LAB_DIR/gateway-a.yaml" | head -n 1)
PID_B=$(pgrep -f "tunlessd -c $LAB_DIR/gateway-b.yaml" | head -n 1)
PIDS="$PID_A $PID_B"

# CPU ticks (user + system) of a process and all its threads.
ticks() { awk '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

# ---- idle ----------------------------------------------------------------------------------------
sleep 2   # the handshake's and the ping's work is over
HZ=$(getconf CLK_TCK)
declare -A T0
for p in $PIDS; do T0[$p]=$(ticks "$p"); done
sleep "$IDLE"
IDLE_JSON=
for p in $PIDS; do
	t1=$(ticks "$p")
	IDLE_JSON+="$(python3 -c 'import sys; print("%.2f" % ((int(sys.argv[1]) - int(sys.argv[2])) * 100.0 / int(sys.argv[3]) / int(sys.argv[4])))' \
		"$t1" "${T0[$p]}" "$HZ" "$IDLE"),"
done
IDLE_JSON="[${IDLE_JSON%,}]"
say "idle: % of one core per daemon: $IDLE_JSON"

# ---- UDP at an offered rate ----------------------------------------------------------------------
# udp_run <label> <Mbit/s>: appends {label, offered, sent, received, ...} to STEPS, prints received Mbit/s.
udp_run() {
	local label=$1 rate=$2 out=$WORK/iperf-$1-$2.json srv
	lab_bg server "$WORK/iperf3-server.log" iperf3 -s -1 -p 5301
	srv=$!
	lab_wait_for 5 lab_exec server sh -c 'ss -lun | grep -q :5301' ||
		lab_wait_for 5 lab_exec server sh -c 'ss -ltn | grep -q :5301'
	local a0 b0 a1 b1 t0 t1
	a0=$(ticks "$PID_A") b0=$(ticks "$PID_B") t0=$(date +%s%N)
	lab_exec client iperf3 -c 10.2.0.2 -p 5301 -u -l 1200 -b "${rate}M" -t "$DURATION" -J >"$out" 2>/dev/null
	a1=$(ticks "$PID_A") b1=$(ticks "$PID_B") t1=$(date +%s%N)
	wait "$srv" 2>/dev/null
	python3 - "$label" "$rate" "$out" "$((a1 - a0))" "$((b1 - b0))" "$((t1 - t0))" "$HZ" >>"$STEPS" <<'EOF'
import json, sys
label, rate, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
wall = int(sys.argv[6]) / 1e9
cpu = [round(int(t) * 100.0 / int(sys.argv[7]) / wall, 1) for t in sys.argv[4:6]]
res = {"label": label, "offered_mbit_s": rate, "gateway_cpu_percent": {"gwa": cpu[0], "gwb": cpu[1]}}
try:
    e = json.load(open(path))["end"]
    sent = e.get("sum_sent", e["sum"])
    recv = e.get("sum_received", e["sum"])
    secs = recv.get("seconds") or 1.0
    lost = recv.get("lost_packets", 0)
    pkts = recv.get("packets", 0)
    res.update(sent_mbit_s=round(sent["bits_per_second"] / 1e6, 1),
               received_mbit_s=round((pkts - lost) * 1200 * 8 / secs / 1e6, 1),
               packets=pkts, lost=lost)
    # Forwarded per core-second of the encrypting gateway (gwa, whose LAN ring overflows):
    # it falls under overload only if the gateway spends its CPU on work it throws away.
    if cpu[0] > 0:
        res["mbit_s_per_gwa_core"] = round(res["received_mbit_s"] / (cpu[0] / 100.0), 1)
except (ValueError, KeyError, OSError) as ex:
    res["error"] = "iperf3: %s" % ex
print(json.dumps(res))
EOF
	python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(r.get("received_mbit_s", 0), r.get("sent_mbit_s", 0))' "$STEPS"
}

# ---- peak ----------------------------------------------------------------------------------------
PEAK=0
RATE=50
while :; do
	read -r got sent < <(udp_run step "$RATE")
	say "offered $RATE Mbit/s: sent $sent, received $got"
	PEAK=$(python3 -c 'import sys; print(max(float(sys.argv[1]), float(sys.argv[2])))' "$PEAK" "$got")
	python3 -c 'import sys; r, s, g = map(float, sys.argv[1:]); sys.exit(0 if g >= 0.9 * s and s >= 0.9 * r else 1)' \
		"$RATE" "$sent" "$got" || break
	RATE=$(python3 -c 'import sys; print(int(float(sys.argv[1]) * 1.5))' "$RATE")
	[ "$RATE" -le 100000 ] || break
done
say "peak: $PEAK Mbit/s received"

# ---- 2x peak -------------------------------------------------------------------------------------
OVER=$(python3 -c 'import sys; print(int(2 * float(sys.argv[1])))' "$PEAK")
read -r got sent < <(udp_run overload "$OVER")
say "offered 2x peak ($OVER Mbit/s): sent $sent, received $got"

# Drops by reason and the ports' counters (imissed: frames the kernel could not put in a full
# AF_XDP ring) of both gateways.
counters() { # <ns> <name>
	printf '{"drops": %s, "ports": %s}' \
		"$(lab_exec "$1" "$ROOT/scripts/tl-telemetry" "$2" /tunless/drops 2>/dev/null || echo null)" \
		"$(lab_exec "$1" "$ROOT/scripts/tl-telemetry" "$2" /tunless/ports 2>/dev/null || echo null)"
}
DROPS_A=$(counters gwa "pk$$a")
DROPS_B=$(counters gwb "pk$$b")
mkdir -p "$(dirname "$OUT")"
python3 - "$STEPS" "$OUT" "$WORKERS" "$PEAK" "$IDLE_JSON" "$IDLE" "$DURATION" "$DROPS_A" "$DROPS_B" <<'EOF' | tee "${OUT%.json}.txt"
import json, os, platform, sys, time
steps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
peak = float(sys.argv[4])
over = [s for s in steps if s["label"] == "overload"]
def drops(text):
    try:
        return json.loads(text)
    except ValueError:
        return None
doc = {
    "benchmark": "peak", "topology": "gateway pair, UDP client -> server, 1200-byte payloads, no shaper",
    "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "workers": sys.argv[3],
    "machine": {"kernel": platform.release(), "cores": os.cpu_count()},
    "idle_seconds": int(sys.argv[6]), "step_seconds": int(sys.argv[7]),
    "idle_cpu_percent_of_one_core": json.loads(sys.argv[5]),
    "peak_mbit_s": peak, "steps": steps,
    "overload": over[0] if over else None,
    "forwarded_share_of_peak": round(over[0].get("received_mbit_s", 0) / peak, 3) if over and peak else None,
    "efficiency_at_overload_vs_peak": None,
    "counters": {"gwa": drops(sys.argv[8]), "gwb": drops(sys.argv[9])},
}
best = max((x for x in steps if x["label"] == "step" and "received_mbit_s" in x), key=lambda x: x["received_mbit_s"], default=None)
if over and best and over[0].get("mbit_s_per_gwa_core") and best.get("mbit_s_per_gwa_core"):
    doc["efficiency_at_overload_vs_peak"] = round(over[0]["mbit_s_per_gwa_core"] / best["mbit_s_per_gwa_core"], 3)
json.dump(doc, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
print("tunless gateways, workers %s, %s, %d cores" % (doc["workers"], platform.release(), os.cpu_count()))
print("idle CPU, %% of one core per daemon (%ds): %s" % (doc["idle_seconds"], doc["idle_cpu_percent_of_one_core"]))
print("%-9s %9s %9s %9s %8s %8s %12s" % ("step", "offered", "sent", "received", "gwa CPU", "gwb CPU", "Mbit/s/core"))
for s in steps:
    c = s["gateway_cpu_percent"]
    print("%-9s %9.0f %9s %9s %7.0f%% %7.0f%% %12s" % (s["label"], s["offered_mbit_s"], s.get("sent_mbit_s", "-"),
          s.get("received_mbit_s", s.get("error")), c["gwa"], c["gwb"], s.get("mbit_s_per_gwa_core", "-")))
print("peak %.1f Mbit/s; at 2x peak offered the server received %s of the peak;" % (peak, doc["forwarded_share_of_peak"]))
print("forwarded per gwa core-second at 2x peak vs at the peak step: %s" % doc["efficiency_at_overload_vs_peak"])
EOF
