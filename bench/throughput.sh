#!/usr/bin/env bash
# Host-to-host TCP throughput: tunless vs the kernel-TUN baselines (wireguard-go, Tailscale's fork
# of it, boringtun).
#
#   ${P}-a  tunnel 10.77.0.1/24                        tunnel 10.77.0.2/24  ${P}-b
#           wg0 (TUN) / tunless host mode              wg0 (TUN) / tunless host mode
#           veth-a 10.99.0.1/24  <──────── veth ────────>  veth-b 10.99.0.2/24
#           iperf3 client  ──────── TCP a -> b ────────>  iperf3 server
#
# Each implementation runs in a fresh lab (tests/integration/lab.sh), both ends of the same
# implementation, one iperf3 TCP stream for -t seconds. -m gateway: gateway forwarding instead,
# client -> gwa -> gwb -> server through each gateway's LAN and WAN ports (bench/impl.sh, the
# lab of bench/run.sh's gateway scenario): the TUN VPNs route the LANs 10.1.0.0/24 and
# 10.2.0.0/24 into wg0; tunless runs gateway mode without a shaper (tunless, tunless-xdp: AF_XDP
# on both ports; tunless-udp: udp WAN, AF_XDP LAN; tunless-packet / tunless-udp-packet: the
# packet LAN port with an AF_XDP / udp WAN; BENCH_TUNLESS_GW_LAN=packet makes tunless and
# tunless-udp take the packet LAN too); the path's veths are set as a gateway's NICs
# are by default (bench/impl.sh impl_gateway_lab: GRO, and TX offload where no AF_XDP port
# receives what the veth sends; BENCH_GW_LAB=gro: GRO on the gateways' four veths only, the lab
# of the first 2026-11-26 comparison; BENCH_GW_LAB=off or BENCH_GW_GRO=0: neither, the lab
# before that; the report and each result name the veths' settings). No CPU
# pinning: both sides and iperf3 share the machine's cores, as a real host would. Benchmarks
# are not tests: one run, ratios.
#
# Usage: bench/throughput.sh [-m host|gateway] [-t seconds] [-P streams] [-R] [-w workers] [-n runs] [-o out.json] [-i impl,...]
#                             [-b build-dir]
#   impl: wggo, wggo-ts, boringtun, tunless, tunless-xdp, tunless-udp, tunless-packet,
#         tunless-udp-packet (default: wggo, wggo-ts, boringtun, tunless; tunless is skipped if not
#         built). wggo: stock wireguard-go; wggo-ts: Tailscale's fork (bench/tunvpn.sh). tunless: host
#         mode's default port kinds (on a veth: udp WAN, packet LAN); tunless-xdp: AF_XDP on both
#         veths; tunless-udp / tunless-packet / tunless-udp-packet: that WAN / LAN kind named in
#         the configuration, the other one left to the default
#   -w: tunless's workers on each end: a number (default 1) or auto (every CPU but one)
#   -n: runs (default 1); each run measures every implementation in turn, and the report gives
#       each one's medians, the ratios of the medians and the ratio within each run
#   -b: a second tunless build (e.g. the one before a change): an impl named with "-b" at the
#       end (tunless-b, tunless-xdp-b, ...) runs that build's tunlessd, in the same runs as the
#       others, and the report gives <impl>/<impl>-b too (an A/B of two builds, paired per run)
# Writes docs/results/throughput-<date>.json (and .txt with the table) unless -o is given.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/env.sh
. "$ROOT/scripts/env.sh"
# shellcheck source=../tests/integration/lab.sh
. "$ROOT/tests/integration/lab.sh"
# shellcheck source=tunvpn.sh
. "$ROOT/bench/tunvpn.sh"
# shellcheck source=impl.sh
. "$ROOT/bench/impl.sh"

DURATION=10
STREAMS=1
REVERSE=
IMPLS=wggo,wggo-ts,boringtun,tunless
WORKERS=1
RUNS=1
OUT=
MODE=host
BUILD_B=
while getopts "m:t:P:Rw:n:o:i:b:h" o; do
	case $o in
	m) MODE=$OPTARG ;;
	t) DURATION=$OPTARG ;;
	P) STREAMS=$OPTARG ;;
	R) REVERSE=-R ;;
	w) WORKERS=$OPTARG ;;
	n) RUNS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	i) IMPLS=$OPTARG ;;
	b) BUILD_B=$OPTARG ;;
	*) sed -n '2,37p' "$0"; exit 2 ;;
	esac
done
case $MODE in host | gateway) ;; *) echo "bench/throughput.sh: -m: '$MODE' is not host or gateway" >&2; exit 2 ;; esac
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "bench/throughput.sh: -n: '$RUNS' is not a number of runs" >&2; exit 2; }
case $WORKERS in
auto | [1-9] | [1-9][0-9]) ;;
*) echo "bench/throughput.sh: -w: '$WORKERS' is not a number of workers or auto" >&2; exit 2 ;;
esac
STAMP=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/docs/results/throughput-$([ "$MODE" = host ] || echo "gateway-")$STAMP.json}
TUNLESSD_A=$TUNLESS_BUILD/src/daemon/tunlessd
TUNLESSD=$TUNLESSD_A
TUNLESSD_B=${BUILD_B:+$BUILD_B/src/daemon/tunlessd}
WORK=$(mktemp -d /tmp/tl-bench.XXXXXX)
RESULTS=$WORK/results.jsonl # one JSON object per implementation
RUN=0
trap 'rm -rf "$WORK"' EXIT

say() { printf '[bench] %s\n' "$*" >&2; }
bench_say() { say "$@"; } # bench/impl.sh's
OUTDIR=$WORK              # bench/impl.sh keeps tunless's configs as run in $OUTDIR/raw
# where iperf3 runs and which namespaces the VPN's CPU is read in
if [ "$MODE" = host ]; then CLI_NS=a SRV_NS=b DST=10.77.0.2 VPN_NS="a b"
else CLI_NS=client SRV_NS=server DST=10.2.0.2 VPN_NS="gwa gwb"; fi

need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || { say "missing '$c': run scripts/setup.sh"; exit 1; }
	done
}
need ip wg iperf3 python3

# A fresh lab for one implementation (lab_cleanup at the end of each run, trap on exit).
bench_lab() {
	RUN=$((RUN + 1))
	lab_init "bt$$$RUN"
	trap 'lab_cleanup; rm -rf "$WORK"' EXIT
	if [ "$MODE" = gateway ]; then
		impl_lab_gateway || { say "lab: WAN not up"; return 1; }
		# the veths as a gateway's NICs are (bench/impl.sh): run_gateway, which knows the WAN
		return 0
	fi
	lab_host_pair
	lab_wait_ping a 10.99.0.2 5 || { say "lab: veth not up"; return 1; }
}

# CPU seconds (user+system) used so far by every process in the VPN's two namespaces except
# iperf3 (i.e. the VPN implementation, whatever its process layout).
vpn_cpu_ticks() {
	local ns p t=0 comm stat
	for ns in $VPN_NS; do
		for p in $(ip netns pids "$(lab_ns "$ns")" 2>/dev/null); do
			comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
			case $comm in iperf3 | sh | sleep | ping) continue ;; esac
			stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
			stat=${stat##*) }
			# fields after "comm)": state=1 ... utime=12 stime=13 cutime=14 cstime=15
			t=$((t + $(awk '{ print $12 + $13 }' <<<"$stat")))
		done
	done
	echo "$t"
}

# Busy ticks of the whole machine (all cores): user nice system irq softirq steal.
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# run_iperf <impl> <version>: TCP a -> b over 10.77.0.2 (-m gateway: client -> server,
# 10.2.0.2), appends a JSON line to RESULTS.
run_iperf() {
	local impl=$1 version=$2 srv out=$WORK/$1.iperf.json c0 c1 b0 b1 w0 w1 hz veths=
	[ "$MODE" = host ] || veths=$(impl_gateway_features)
	hz=$(getconf CLK_TCK)
	lab_bg $SRV_NS "$LAB_DIR/iperf3-server.log" iperf3 -s -1 -B $DST
	srv=$LAB_LAST_PID
	lab_wait_for 5 sh -c "ip netns exec $(lab_ns $SRV_NS) ss -Hltn 'sport = :5201' | grep -q ." ||
		{ say "$impl: iperf3 server did not start"; return 1; }
	b0=$(busy_ticks)
	c0=$(vpn_cpu_ticks)
	w0=$EPOCHREALTIME
	say "$impl: iperf3 TCP ${DURATION}s, $STREAMS stream(s) ${REVERSE:+(reverse)}, client's TCP: $(ip netns exec "$(lab_ns $CLI_NS)" \
		sysctl -n net.ipv4.tcp_congestion_control) congestion control, tcp_ecn $(ip netns exec "$(lab_ns $CLI_NS)" \
		sysctl -n net.ipv4.tcp_ecn) (the namespace's defaults, not set by this bench)"
	timeout $((DURATION + 30)) ip netns exec "$(lab_ns $CLI_NS)" \
		iperf3 -c $DST -t "$DURATION" -P "$STREAMS" $REVERSE -J >"$out" 2>&1
	w1=$EPOCHREALTIME
	c1=$(vpn_cpu_ticks)
	b1=$(busy_ticks)
	wait "$srv" 2>/dev/null
	GW_VETHS=$veths python3 - "$impl" "$version" "$out" "$(((c1 - c0) * 100 / hz))" "$w0" "$w1" \
		"$(((b1 - b0) * 100 / hz))" "$RUN_NO" >>"$RESULTS" <<'EOF'
import json, os, sys
impl, version, path, cpu_cs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
dur = float(sys.argv[6]) - float(sys.argv[5])  # wall time of the measured window
busy = round(min(int(sys.argv[7]) / dur, 100.0 * os.cpu_count()), 1)
res = {"impl": impl, "version": version, "run": int(sys.argv[8])}
if os.environ.get("GW_VETHS"):  # -m gateway: the veths' offloads during the run (ethtool -k)
    res["veths"] = os.environ["GW_VETHS"].splitlines()
try:
    r = json.load(open(path))
except ValueError:
    res["error"] = "iperf3 gave no JSON: " + open(path).read()[-300:]
    print(json.dumps(res)); sys.exit(0)
if "error" in r:
    res["error"] = r["error"]
else:
    e = r["end"]
    res.update(
        gbit_s=round(e["sum_received"]["bits_per_second"] / 1e9, 3),
        sender_gbit_s=round(e["sum_sent"]["bits_per_second"] / 1e9, 3),
        retransmits=e["sum_sent"].get("retransmits"),
        bytes=e["sum_received"]["bytes"],
        seconds=round(e["sum_received"]["seconds"], 2),
        vpn_cpu_percent=round(cpu_cs / dur, 1),  # of 100 % per core; both ends together
        sender_cpu_percent=round(e["cpu_utilization_percent"]["host_total"], 1),
        receiver_cpu_percent=round(e["cpu_utilization_percent"]["remote_total"], 1),
        machine_busy_percent=busy,
    )
    # CPU used by anything but the VPN and iperf3 during the run (other jobs, kernel threads
    # such as ksoftirqd/kworkers). A large value flags a run skewed by other work.
    res["other_cpu_percent"] = round(max(0.0, busy - res["vpn_cpu_percent"]
                                         - res["sender_cpu_percent"] - res["receiver_cpu_percent"]), 1)
print(json.dumps(res))
EOF
}

record_error() { # record_error <impl> <version> <message>
	python3 -c 'import json,sys; print(json.dumps({"impl":sys.argv[1],"version":sys.argv[2],"run":int(sys.argv[4]),"error":sys.argv[3]}))' \
		"$1" "$2" "$3" "$RUN_NO" >>"$RESULTS"
	say "$1: $3"
}

# wg_tun_up <ns> <my-key-file> <peer-pub> <my-tunnel-ip> <peer-tunnel-ip> <peer-wan-ip>
wg_tun_up() {
	lab_exec "$1" wg set wg0 private-key "$2" listen-port 51820 \
		peer "$3" allowed-ips "$5/32" endpoint "$6:51820" &&
		lab_exec "$1" ip addr add "$4/24" dev wg0 &&
		lab_exec "$1" ip link set wg0 mtu 1420 up
}

# run_kernel_tun <impl> <version> <start-command...>: both ends of one TUN implementation.
run_kernel_tun() {
	local impl=$1 version=$2 ka kb pa pb ns
	shift 2
	bench_lab || { record_error "$impl" "$version" "lab setup failed"; return; }
	ka=$LAB_DIR/a.key kb=$LAB_DIR/b.key
	(umask 077 && wg genkey >"$ka" && wg genkey >"$kb")
	pa=$(wg pubkey <"$ka") pb=$(wg pubkey <"$kb")
	for ns in a b; do
		lab_bg "$ns" "$LAB_DIR/$impl-$ns.log" "$@"
		if ! lab_wait_for 10 lab_exec "$ns" wg show wg0; then
			record_error "$impl" "$version" "no wg0 in $ns: $(tail -n 3 "$LAB_DIR/$impl-$ns.log")"
			lab_cleanup
			return
		fi
	done
	wg_tun_up a "$ka" "$pb" 10.77.0.1 10.77.0.2 10.99.0.2 &&
		wg_tun_up b "$kb" "$pa" 10.77.0.2 10.77.0.1 10.99.0.1 ||
		{ record_error "$impl" "$version" "wg set failed"; lab_cleanup; return; }
	if lab_wait_ping a 10.77.0.2 15; then
		run_iperf "$impl" "$version"
	else
		record_error "$impl" "$version" "no handshake: tunnel ping failed"
	fi
	lab_cleanup
}

# run_tunvpn <id>: wggo, wggo-ts or boringtun (bench/tunvpn.sh), named by its version line.
run_tunvpn() {
	local why
	why=$(tunvpn_available "$1") || { record_error "$1" "" "$why"; return; }
	[ "$MODE" = host ] || { run_gateway "$1" "$(tunvpn_version "$1")"; return; }
	tunvpn_argv "$1" /dev/stderr
	run_kernel_tun "$1" "$(tunvpn_version "$1")" "${TUNVPN_ARGV[@]}"
}

# ---- tunless hook ---------------------------------------------------------------------------
# Host mode on both ends: configs/host-a.yaml in ns a, configs/host-b.yaml in ns b (tunnel
# 10.77.0.1 <-> 10.77.0.2, WAN veth-a/veth-b, port 51820). The configs are copied with a
# unique instance name only, because the DPDK runtime dir /var/run/dpdk/tunless-<name> is
# global and tests may run tla/tlb at the same time.
run_tunless() {
	local impl=${1:-tunless} driver=${2:-} lan=${3:-} v ns cfg
	if [ ! -x "$TUNLESSD" ]; then
		say "tunless: skipped ($TUNLESSD not built: meson setup build && ninja -C build)"
		return
	fi
	v="tunless $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown) workers=$WORKERS"
	[ "$TUNLESSD" = "$TUNLESSD_A" ] || v="tunless $TUNLESSD workers=$WORKERS"
	[ -z "$driver" ] || v="$v wan=$driver"
	[ -z "$lan" ] || v="$v lan=$lan"
	if [ "$MODE" = gateway ]; then
		# the LAN kind an impl does not name: BENCH_TUNLESS_GW_LAN (af_xdp, or packet)
		local gl=${BENCH_TUNLESS_GW_LAN:-af_xdp}
		case $driver:$lan in
		:) run_gateway "$impl" "$v wan=af_xdp lan=$gl" af_xdp "$gl" ;;
		af_xdp:af_xdp) run_gateway "$impl" "$v" af_xdp af_xdp ;;
		udp:) run_gateway "$impl" "$v lan=$gl" udp "$gl" ;;
		:packet) run_gateway "$impl" "$v wan=af_xdp" af_xdp packet ;;
		udp:packet) run_gateway "$impl" "$v" udp packet ;;
		*) record_error "$impl" "$v" "not a port pair of gateway mode (-m gateway: tunless, tunless-xdp, tunless-udp, tunless-packet, tunless-udp-packet)" ;;
		esac
		return
	fi
	bench_lab || { record_error "$impl" "$v" "lab setup failed"; return; }
	for ns in a b; do
		cfg=$LAB_DIR/host-$ns.yaml
		sed -e "s/^name: .*/name: bt$$$ns/" -e '/^workers:/d' "$ROOT/configs/host-$ns.yaml" >"$cfg"
		echo "workers: $WORKERS" >>"$cfg"
		TL_WAN_DRIVER=$driver lab_wan_driver "$cfg"
		TL_LAN_DRIVER=$lan lab_lan_driver "$cfg"
		lab_bg "$ns" "$LAB_DIR/tunless-$ns.log" "$TUNLESSD" -c "$cfg"
	done
	if lab_wait_ping a 10.77.0.2 30; then
		run_iperf "$impl" "$v"
	else
		record_error "$impl" "$v" "tunnel ping failed: $(tail -n 3 "$LAB_DIR/tunless-a.log")"
	fi
	lab_cleanup
}

# ---- -m gateway -----------------------------------------------------------------------------
# run_gateway <impl> <version> [<wan> <lan>]: both gateways of one implementation up as
# bench/run.sh's gateway scenario brings them up (bench/impl.sh impl_up: the TUN VPNs in mode
# tun, tunless in mode fwd-<wan>-<lan> with -w's workers), then client -> server.
run_gateway() {
	local impl=$1 v=$2 id=$1 mode=tun wan=tun
	[ "$impl" != wggo ] || id=wireguard-go
	[ $# -lt 4 ] || id=tunless mode=fwd-$3-$4 wan=$3
	bench_lab || { record_error "$impl" "$v" "lab setup failed"; return; }
	if ! impl_gateway_lab "$wan"; then
		record_error "$impl" "$v" "lab: the veths' offloads could not be set (ethtool -K)"
	elif ! TL_WORKERS=$WORKERS impl_up "$id" "$mode"; then
		record_error "$impl" "$v" "gateways did not come up: $(tail -q -n 2 "$LAB_DIR"/*.log 2>/dev/null | grep -v '^EAL' | tail -n 2 | tr '\n' ' ')"
	elif ! lab_wait_ping client 10.2.0.2 30; then
		record_error "$impl" "$v" "client -> server ping failed"
	else
		run_iperf "$impl" "$v"
	fi
	lab_cleanup
}

# ---- report ---------------------------------------------------------------------------------
report() {
	local txt=${OUT%.json}.txt
	mkdir -p "$(dirname "$OUT")"
	GW_LAB=$(impl_gateway_lab_kind) python3 - "$RESULTS" "$OUT" "$DURATION" "$STREAMS" "${REVERSE:-}" "$WORKERS" "$RUNS" "$MODE" <<'EOF' | tee "$txt"
import json, os, platform, statistics, subprocess, sys, time
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs = int(sys.argv[7])
impls = list(dict.fromkeys(r["impl"] for r in rows))
def med(vals):
    vals = [v for v in vals if v is not None]
    return round(statistics.median(vals), 3) if vals else None
def cores_per_gbit(r):   # CPU of both VPN ends, in cores, per Gbit/s carried
    return r["vpn_cpu_percent"] / 100 / r["gbit_s"] if r.get("gbit_s") else None
ok = [r for r in rows if "gbit_s" in r]
summary = {i: {"gbit_s": med(r["gbit_s"] for r in ok if r["impl"] == i),
               "vpn_cpu_percent": med(r["vpn_cpu_percent"] for r in ok if r["impl"] == i),
               "vpn_cores_per_gbit_s": med(cores_per_gbit(r) for r in ok if r["impl"] == i),
               "runs_ok": sum(1 for r in ok if r["impl"] == i),
               "version": next((r["version"] for r in rows if r["impl"] == i and r["version"]), None)} for i in impls}
def ratio(a, b):
    x, y = summary.get(a, {}).get("gbit_s"), summary.get(b, {}).get("gbit_s")
    return round(x / y, 2) if x and y else None
def paired(a, b):        # the ratio within each run
    out = []
    for k in range(1, runs + 1):
        x = next((r["gbit_s"] for r in ok if r["impl"] == a and r["run"] == k), None)
        y = next((r["gbit_s"] for r in ok if r["impl"] == b and r["run"] == k), None)
        if x and y:
            out.append(round(x / y, 2))
    return out
pairs = [(i[:-2], i) for i in impls if i.endswith("-b")] + [(i, "wggo-ts") for i in impls if i.endswith("-b")]
pairs += [("tunless", "wggo-ts"), ("tunless", "wggo"), ("tunless", "boringtun"), ("wggo-ts", "wggo"),
         ("tunless-xdp", "wggo-ts"), ("tunless-xdp", "wggo"), ("tunless", "tunless-xdp")]
for v in ("tunless-udp", "tunless-packet", "tunless-udp-packet"):
    pairs += [(v, "wggo-ts"), (v, "wggo"), (v, "tunless")]
pairs += [("tunless-udp-packet", "tunless-udp")]   # -m gateway: the LAN kind, same udp WAN
name = lambda a, b: "%s/%s" % (a, "wireguard-go" if b == "wggo" else b)
ratios = {name(a, b): ratio(a, b) for a, b in pairs}
run_ratios = {name(a, b): paired(a, b) for a, b in pairs}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
doc = {
    "benchmark": "throughput", "mode": sys.argv[8],
    "topology": "host pair (veth), tunnel 10.77.0.1 -> 10.77.0.2" if sys.argv[8] == "host" else
                "gateway: client 10.1.0.2 -> lan-a [gwa] wan-a -> wan-b [gwb] lan-b -> server 10.2.0.2",
    "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "duration_s": float(sys.argv[3]),
    "streams": int(sys.argv[4]),
    "direction": ("b -> a" if sys.argv[5] else "a -> b") if sys.argv[8] == "host" else
                 ("server -> client" if sys.argv[5] else "client -> server"),
    "tunless_workers": sys.argv[6],
    "gateway_lab": os.environ.get("GW_LAB") if sys.argv[8] == "gateway" else None,
    "gateway_gro": os.environ.get("GW_LAB") != "off" if sys.argv[8] == "gateway" else None,
    "machine": {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count()},
    "iperf3": subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
    "runs": runs, "results": rows, "summary": summary,
    "ratios": {k: v for k, v in ratios.items() if v is not None},
    "ratios_per_run": {k: v for k, v in run_ratios.items() if v},
}
json.dump(doc, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
print("TCP throughput, %s, %s, %gs, %d stream(s), tunless workers %s, %d run(s), %s, %d cores" % (doc["topology"], doc["direction"], doc["duration_s"], doc["streams"], doc["tunless_workers"], runs, platform.release(), os.cpu_count()))
if doc["gateway_lab"] is not None:
    print("the path's veths: " + {
        "nic": "as a gateway's NICs (GRO on the gateways' ports and the LAN hosts' eth0; TX offload on where no AF_XDP port receives)",
        "gro": "GRO on the gateways' LAN and WAN veths, TX offload off on every veth (BENCH_GW_LAB=gro)",
        "off": "no GRO, TX offload off on every veth (BENCH_GW_LAB=off or BENCH_GW_GRO=0)"}.get(doc["gateway_lab"], doc["gateway_lab"]))
    for i in impls:   # what ethtool -k showed during each implementation's first run
        v = next((r["veths"] for r in rows if r["impl"] == i and r.get("veths")), None)
        if v:
            print("  %s: %s" % (i, "; ".join(v)))
vw = max([26] + [len(r["version"]) for r in rows])  # wggo-ts's version line is a module and pseudo-version
print("%-3s %-18s %-*s %9s %8s %8s %6s  %s" % ("run", "impl", vw, "version", "Gbit/s", "retrans", "vpn CPU", "other", ""))
for r in rows:
    if "error" in r:
        print("%-3s %-18s %-*s %9s %8s %8s %6s  %s" % (r["run"], r["impl"], vw, r["version"], "-", "-", "-", "-", "ERROR " + r["error"]))
    else:
        print("%-3s %-18s %-*s %9.3f %8s %7.0f%% %5.0f%%" % (r["run"], r["impl"], vw, r["version"], r["gbit_s"], r["retransmits"], r["vpn_cpu_percent"], r["other_cpu_percent"]))
if runs > 1:
    print("medians over %d runs:" % runs)
    print("    %-18s %9s %8s %14s  %s" % ("impl", "Gbit/s", "vpn CPU", "cores/(Gbit/s)", "version"))
    for i, s in summary.items():
        if s["gbit_s"] is not None:
            print("    %-18s %9.3f %7.0f%% %14.3f  %s" % (i, s["gbit_s"], s["vpn_cpu_percent"], s["vpn_cores_per_gbit_s"], s["version"]))
for k, v in ratios.items():
    if v is not None:
        print("%-32s %.2f%s" % (k, v, ("   per run: " + " ".join("%.2f" % x for x in run_ratios[k])) if runs > 1 else ""))
print("CPU in % of one core (200 % = both): 'vpn CPU' = both ends of the VPN, 'other' = everything but the VPN and iperf3")
print("JSON: " + sys.argv[2])
EOF
}

: >"$RESULTS"
IFS=, read -ra LIST <<<"$IMPLS"
for RUN_NO in $(seq 1 "$RUNS"); do
	[ "$RUNS" = 1 ] || say "run $RUN_NO of $RUNS"
	for impl in "${LIST[@]}"; do
		TUNLESSD=$TUNLESSD_A
		case $impl in
		tunless*-b)
			[ -n "$TUNLESSD_B" ] || { say "$impl: -b <build dir> not given"; exit 2; }
			TUNLESSD=$TUNLESSD_B ;;
		esac
		case ${impl%-b} in
		wggo | wireguard-go) run_tunvpn wggo ;;
		wggo-ts | boringtun) run_tunvpn "$impl" ;;
		tunless) run_tunless "$impl" ;;
		tunless-udp) run_tunless "$impl" udp ;;
		tunless-packet) run_tunless "$impl" "" packet ;;
		tunless-udp-packet) run_tunless "$impl" udp packet ;;
		tunless-xdp) run_tunless "$impl" af_xdp af_xdp ;;
		*) say "unknown implementation '$impl'"; exit 2 ;;
		esac
	done
done
trap - EXIT INT TERM
report
rm -rf "$WORK"
