#!/usr/bin/env bash
# Counters of tunless's ports during a gateway run (the NIC lab, udp WAN and packet LAN, one
# worker each end): one bench/throughput.sh -m gateway -t 16 -P STREAMS run, and 3 s after the
# client's iperf3 started, `tunlessctl show` of both gateways twice, 5 s apart
# (probe-P<STREAMS>-<name>-<1|2>.json), then the differences (probe-P<STREAMS>.txt). Under the
# lab lock:  flock /tmp/tunless-lab.lock docs/results/2026-11-27-gateway/probe-counters.sh 8
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$HERE}   # where the results go (default: beside this script)
BUILD=${TUNLESS_BUILD:-$ROOT/build-rel}
P=${1:-8}
TUNLESS_BUILD=$BUILD "$ROOT/bench/throughput.sh" -m gateway -t 16 -P "$P" -i tunless-udp-packet \
	-o "$OUT/probe-P$P-run.json" >"$OUT/probe-P$P-run.log" 2>&1 &
bp=$!
. "$HERE/wait-transfer.sh"
wait_transfer "$bp"
sleep 3
# the run's two instances: the newest tb*a / tb*b sockets (the lab's names; no other lab runs
# under the lock)
socks=$(ls -t /run/tunless/ | grep -E '^tb[0-9]+[ab]\.sock$' | head -n 2)
echo "instances: $socks (bench pid $bp)" >&2
for k in 1 2; do
	for s in $socks; do
		"$BUILD/src/cli/tunlessctl" -s "/run/tunless/$s" --json show >"$OUT/probe-P$P-${s%.sock}-$k.json" 2>&1
	done
	[ "$k" = 2 ] || sleep 5
done
wait "$bp"
python3 - "$OUT" "$P" <<'PY' | tee "$OUT/probe-P$P.txt"
import glob, json, sys
here, p = sys.argv[1], sys.argv[2]
for f1 in sorted(glob.glob("%s/probe-P%s-tb*-1.json" % (here, p))):
    a = json.load(open(f1))["result"]["ports"]; b = json.load(open(f1[:-6] + "2.json"))["result"]["ports"]
    name = f1.split("probe-P%s-" % p)[1][:-7]
    for i, (x, y) in enumerate(zip(a, b)):
        d = {k: y[k] - x[k] for k in ("rx_packets", "tx_packets", "gso_rx", "gso_tx") if k in y}
        role = "WAN" if i == 0 else "LAN"
        print("%s %s over 5 s: %s; packets per GSO message: rx %s, tx %s" % (name, role,
              ", ".join("%s %d" % kv for kv in d.items()),
              "%.1f" % (d["rx_packets"] / d["gso_rx"]) if d.get("gso_rx") else "-",
              "%.1f" % (d["tx_packets"] / d["gso_tx"]) if d.get("gso_tx") else "-"))
PY
