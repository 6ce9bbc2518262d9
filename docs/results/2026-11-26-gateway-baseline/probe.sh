#!/usr/bin/env bash
# One TUN VPN (wggo-ts or wireguard-go) in bench/throughput.sh -m gateway's lab (bench/impl.sh
# impl_lab_gateway + impl_up <id> tun), one iperf3 TCP run client -> server, and every counter
# on the path before and after: nstat per namespace, ip -s link, tc -s qdisc, the TUN's
# ethtool -k, per-thread CPU of the VPN. Run under the lab lock:
#   flock /tmp/tunless-lab.lock probe.sh <impl> <out dir> [seconds] [streams] [-R]
# PROBE_PRE: shell run after the VPN is up and before the run (an operator setting to try),
# PROBE_PCAP=1: tcpdump of 2 s of the client's eth0 headers during the run.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
. "$ROOT/scripts/env.sh"
. "$ROOT/tests/integration/lab.sh"
. "$ROOT/bench/tunvpn.sh"
. "$ROOT/bench/impl.sh"
IMPL=${1:?impl} OUTD=${2:?out dir} T=${3:-10} P=${4:-1} REV=${5:-}
mkdir -p "$OUTD"
RATE=100 RUN=1 WORK=$(mktemp -d) OUTDIR=$WORK TUNLESSD=/nonexistent
bench_say() { echo "[probe] $*" >&2; }
lab_init "pr$$"
impl_lab_gateway || exit 1
impl_up "$IMPL" tun || { echo "up failed"; exit 1; }
lab_wait_ping client 10.2.0.2 30 || { echo "no ping"; exit 1; }
if [ -n "${PROBE_PRE:-}" ]; then echo "PROBE_PRE: $PROBE_PRE" >"$OUTD/pre.txt"; eval "$PROBE_PRE" >>"$OUTD/pre.txt" 2>&1; fi
NSS="client gwa gwb server"
snap() { # <tag>
	local ns
	for ns in $NSS; do
		{ echo "== $ns"; lab_nsexec $ns nstat -az 2>/dev/null; } >"$OUTD/nstat-$1-$ns.txt"
		{ lab_nsexec $ns ip -s -s link; } >"$OUTD/link-$1-$ns.txt"
		{ lab_nsexec $ns tc -s qdisc; } >"$OUTD/qdisc-$1-$ns.txt"
	done
	for ns in gwa gwb; do lab_nsexec $ns cat /proc/net/softnet_stat >"$OUTD/softnet-$1-$ns.txt"; done
}
for ns in gwa gwb; do
	lab_nsexec $ns ethtool -k wg0 >"$OUTD/ethtool-k-$ns-wg0.txt" 2>&1
	lab_nsexec $ns ip -d link show wg0 >"$OUTD/iplink-$ns-wg0.txt" 2>&1
	lab_nsexec $ns sh -c 'ethtool -k lan-${0#gw}; ethtool -k wan-${0#gw}' $ns >"$OUTD/ethtool-k-$ns-veths.txt" 2>&1
	lab_nsexec $ns sysctl net.ipv4.conf.all.rp_filter net.ipv4.ip_forward net.core.default_qdisc net.ipv4.tcp_congestion_control >"$OUTD/sysctl-$ns.txt" 2>&1
done
lab_nsexec client ethtool -k eth0 >"$OUTD/ethtool-k-client-eth0.txt" 2>&1
lab_bg server "$OUTD/iperf3-server.log" iperf3 -s -1 -B 10.2.0.2
lab_wait_for 5 sh -c "ip netns exec $(lab_ns server) ss -Hltn 'sport = :5201' | grep -q ."
snap before
pids=$(for ns in gwa gwb; do ip netns pids "$(lab_ns $ns)"; done | tr '\n' ' ')
cpu0=$(for p in $pids; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | paste -sd+ | bc)
stat0=$(head -1 /proc/stat)
caps=()
if [ -n "${PROBE_PCAP:-}" ]; then
	(sleep 3; lab_nsexec client timeout 2 tcpdump -i eth0 -nn -s 96 -w "$OUTD/client-eth0.pcap" 2>/dev/null) &
	caps+=($!)
	(sleep 3; lab_nsexec server timeout 2 tcpdump -i eth0 -nn -s 96 -w "$OUTD/server-eth0.pcap" 2>/dev/null) &
	caps+=($!)
fi
lab_nsexec client iperf3 -c 10.2.0.2 -t "$T" -P "$P" $REV -J >"$OUTD/iperf3.json" 2>&1
stat1=$(head -1 /proc/stat)
cpu1=$(for p in $pids; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | paste -sd+ | bc)
snap after
[ ${#caps[@]} = 0 ] || wait "${caps[@]}"
for p in $pids; do echo "$p $(cat /proc/$p/comm 2>/dev/null)"; done >"$OUTD/pids.txt"
for ns in $NSS; do
	python3 - "$OUTD/nstat-before-$ns.txt" "$OUTD/nstat-after-$ns.txt" >"$OUTD/nstat-diff-$ns.txt" <<'PY'
import sys
def rd(f):
    d = {}
    for l in open(f):
        p = l.split()
        if len(p) >= 2 and p[1].isdigit(): d[p[0]] = int(p[1])
    return d
a, b = rd(sys.argv[1]), rd(sys.argv[2])
for k in b:
    if b[k] != a.get(k, 0): print("%-32s %d" % (k, b[k] - a.get(k, 0)))
PY
done
python3 - "$OUTD/iperf3.json" "$cpu0" "$cpu1" "$T" "$stat0" "$stat1" <<'PY' | tee "$OUTD/summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["end"]
print("Gbit/s %.3f  retransmits %s  vpn CPU %.0f%%" % (e["sum_received"]["bits_per_second"]/1e9, e["sum_sent"].get("retransmits"), (int(sys.argv[3])-int(sys.argv[2]))/float(sys.argv[4])))
s0 = [int(x) for x in sys.argv[5].split()[1:]]; s1 = [int(x) for x in sys.argv[6].split()[1:]]
d = [b - a for a, b in zip(s0, s1)]; tot = sum(d)
print("machine: user %.0f%% sys %.0f%% softirq %.0f%% idle %.0f%% (of 200%%)" % (200*d[0]/tot, 200*d[2]/tot, 200*d[6]/tot, 200*d[3]/tot))
print("interval Gbit/s:", " ".join("%.2f" % (i["sum"]["bits_per_second"]/1e9) for i in r["intervals"]))
print("sender mean RTT %s us (stream 1), max cwnd %s B" % (e["streams"][0]["sender"].get("mean_rtt"), e["streams"][0]["sender"].get("max_snd_cwnd")))
PY
rm -rf "$WORK"
