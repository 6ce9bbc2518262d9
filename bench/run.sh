#!/usr/bin/env bash
# One command that compares tunless with kernel-TUN VPNs and draws it (bench/README.md).
#
# Usage: bench/run.sh [--smoke | --quick | --full] [-o DIR] [-i impl,...] [-s scenario,...]
#   --smoke  every implementation x scenario once, tiny (about 4 min)   (the CI smoke test)
#   --quick  the matrices at a few points, short runs (about 30 min)     (default)
#   --full   every point, longer runs, the no-drop study's cells 60 s x 3 (about 3.3-3.7 h: bench/README.md)
#   -o DIR   output directory (default bench/out-<profile>-<date>)
#   -i       implementations: tunless,wireguard-go,wggo-ts,boringtun,openvpn,kernel-wg (default: all)
#            (wggo-ts: Tailscale's fork of wireguard-go)
#   -s       scenarios: throughput,gateway,latency,overload,nodrop (default: all)
#   --append keep DIR's records from an earlier run (e.g. other implementations) and report all
# Env: TUNLESS_BUILD (meson build dir: tunlessd, tl-delayline), TL_LAB_LOCK (a lock file held
# for each implementation's lab, e.g. /tmp/tunless-lab.lock, so other lab users can run in
# between), BENCH_RATE (bottleneck Mbit/s), BENCH_ND_RATE (the no-drop cells' bottleneck, default
# the study's 50 Mbit/s), BENCH_VIDEO (heavy: the study's 11.5 Mbit/s of 40-packet frames; light:
# 5.8 Mbit/s of 20-packet frames), BENCH_ND_RTTS, BENCH_ND_EP, BENCH_T_ND, BENCH_ND_RUNS,
# BENCH_ND_Q_WGGO, BENCH_OV_X, BENCH_T_OV (override the profile's no-drop and overload cells),
# BENCH_GW_LAB (the gateway scenario's veths: nic, the default, as a gateway's NICs are; gro; off:
# as the other scenarios' lab; bench/impl.sh impl_gateway_lab).
#
# Writes DIR/results.json (schema: bench/README.md), DIR/*.png, DIR/report.md, DIR/report.html,
# DIR/raw/ (per-cell raw files). Each implementation runs in fresh namespaces
# (tests/integration/lab.sh, the gateway topology; bench/impl.sh); every namespace is removed
# at the end of its lab and on Ctrl-C/TERM.
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

PROFILE=quick
APPEND=
OUTDIR=
IMPLS=tunless,wireguard-go,wggo-ts,boringtun,openvpn,kernel-wg
SCENS=throughput,gateway,latency,overload,nodrop
COMMAND="bench/run.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--smoke | --quick | --full) PROFILE=${1#--} ;;
	-o) OUTDIR=${2:?-o DIR}; shift ;;
	-i) IMPLS=${2:?-i impl,...}; shift ;;
	-s) SCENS=${2:?-s scenario,...}; shift ;;
	--append) APPEND=1 ;;
	*) sed -n '2,23p' "$0"; exit 2 ;;
	esac
	shift
done

# ---- profiles ----------------------------------------------------------------------------------
# T_*: seconds per measurement. TCP_TESTS: streams:direction (f = gwa->gwb or client->server,
# r = reverse); TCP_TESTS and UDP_SIZES are those of the throughput and gateway scenarios.
# UDP_PROBES: rate steps to find the highest rate with < 1 % loss. ND_Q_*: TUN queues of the
# no-drop matrix (wireguard-go / the other TUN VPNs). TXQ, THR_TXQ: wireguard-go's txqueuelen
# variants in latency/overload and in throughput.
# UDP payloads: 1392 B is the largest that fits the 1420-byte tunnel MTU (1400 would fragment).
case $PROFILE in
smoke)
	RATE=${BENCH_RATE:-50} T_TCP=2 T_UDP=1 UDP_PROBES=1 TCP_TESTS="1:f" UDP_SIZES="1392"
	T_LAT=3 T_OV=2 OV_X="2" T_ND=3 ND_RTTS="60" ND_Q_WGGO="25 500" ND_Q_OTHER="25" TXQ="500"
	THR_TXQ="500" ND_EP="cubic:1 bbr:0" ND_RUNS=1
	;;
quick)
	RATE=${BENCH_RATE:-100} T_TCP=3 T_UDP=2 UDP_PROBES=2 TCP_TESTS="1:f 1:r 8:f 8:r"
	UDP_SIZES="64 512 1392" T_LAT=6 T_OV=3 OV_X="0.5 1 2 3" T_ND=10 ND_RTTS="0 60 120"
	ND_Q_WGGO="25 500" ND_Q_OTHER="25" TXQ="500 25" THR_TXQ="500" ND_EP="cubic:1 bbr:0" ND_RUNS=1
	;;
full)
	RATE=${BENCH_RATE:-100} T_TCP=10 T_UDP=4 UDP_PROBES=4 TCP_TESTS="1:f 1:r 8:f 8:r"
	UDP_SIZES="64 512 1392" T_LAT=20 T_OV=8 OV_X="0.5 0.75 1 1.25 1.5 2 2.5 3" T_ND=60
	ND_RTTS="0 60 120" ND_Q_WGGO="25 500" ND_Q_OTHER="25 500" TXQ="500 25" THR_TXQ="500 25"
	ND_EP="cubic:1 cubic:0 bbr:1 bbr:0" ND_RUNS=3
	;;
esac
# The no-drop cells (the NODROP study's condition): R = ND_RATE, one bulk TCP flow and a video;
# the endpoints' (client, server) congestion control and ECN per cell, cc:tcp_ecn in ND_EP
# (tunless and wireguard-go run every pair, the other TUN VPNs the first); ND_RUNS runs of each
# cell (the report gives medians). New namespaces inherit the host's net.ipv4 defaults (here
# bbr and tcp_ecn=2): each cell sets both on the client and the server and records what they had.
ND_RATE=${BENCH_ND_RATE:-50}
ND_RTTS=${BENCH_ND_RTTS:-$ND_RTTS} ND_EP=${BENCH_ND_EP:-$ND_EP} T_ND=${BENCH_T_ND:-$T_ND}
ND_RUNS=${BENCH_ND_RUNS:-$ND_RUNS} ND_Q_WGGO=${BENCH_ND_Q_WGGO:-$ND_Q_WGGO}
OV_X=${BENCH_OV_X:-$OV_X} T_OV=${BENCH_T_OV:-$T_OV}
VIDEO=${BENCH_VIDEO:-heavy}
case $VIDEO in
heavy) VIDEO_FPS=30 VIDEO_BURST=40 VIDEO_SIZE=1200 ;; # the study's: 11.5 Mbit/s in frames of 40 packets
light) VIDEO_FPS=30 VIDEO_BURST=20 VIDEO_SIZE=1200 ;; # 5.8 Mbit/s in frames of 20 packets
*) echo "BENCH_VIDEO: heavy or light" >&2; exit 2 ;;
esac
# the WAN bottleneck's burst: 1 ms at R (at least two full frames), as RATE is when it is put on
wan_burst() { local b=$((RATE * 1000000 / 8 / 1000)); [ "$b" -ge 3076 ] || b=3076; echo "$b"; }
BURST=$(wan_burst)

STAMP=$(date +%Y-%m-%d)
OUTDIR=${OUTDIR:-$ROOT/bench/out-$PROFILE-$STAMP}
TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
DELAYLINE=$TUNLESS_BUILD/bench/tl-delayline
# matplotlib comes from Debian (python3-matplotlib): prefer the system interpreter.
PY=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && PY=/usr/bin/python3
BENCH="$PY $ROOT/bench/bench.py"
STATS="$PY $ROOT/bench/overload_stats.py"
FLOW="$PY $ROOT/bench/udpflow.py"
mkdir -p "$OUTDIR/raw" || exit 1
OUTDIR=$(cd "$OUTDIR" && pwd)
WORK=$(mktemp -d /tmp/tl-benchrun.XXXXXX)
RECORDS=$OUTDIR/raw/records.jsonl
[ -n "$APPEND" ] || : >"$RECORDS"
RUN=0
STEP=0
T0=$SECONDS
trap 'rm -rf "$WORK"' EXIT
trap 'rm -rf "$WORK"; trap - INT; kill -INT $$' INT
trap 'rm -rf "$WORK"; trap - TERM; kill -TERM $$' TERM

bench_say() { printf '[bench %4ds] %s\n' "$((SECONDS - T0))" "$*" >&2; }
step() { STEP=$((STEP + 1)); bench_say "step $STEP: $*"; }

for c in ip tc wg iperf3 ping ethtool flock; do
	command -v "$c" >/dev/null || { bench_say "missing '$c': run scripts/setup.sh"; exit 1; }
done

# record <impl> <mode> <scenario> <params-json> <status> [message]: a record without measurements
record() {
	$BENCH record --impl "$1" --mode "$2" --scenario "$3" --params "$4" --status "$5" \
		--message "${6:-}" >>"$RECORDS"
}

# ---- lab ---------------------------------------------------------------------------------------
LOCKED=0
bench_lab() {
	RUN=$((RUN + 1))
	IMPL_TUNLESS=()
	if [ -n "${TL_LAB_LOCK:-}" ]; then
		exec 9>"$TL_LAB_LOCK"
		flock 9 || { bench_say "could not take the lab lock $TL_LAB_LOCK"; exit 1; }
		LOCKED=1
	fi
	lab_init "bn$(($$ % 10000))$RUN"
	trap 'lab_cleanup; rm -rf "$WORK"' EXIT
	trap 'lab_cleanup; rm -rf "$WORK"; trap - INT; kill -INT $$' INT
	trap 'lab_cleanup; rm -rf "$WORK"; trap - TERM; kill -TERM $$' TERM
	impl_lab_gateway
}
bench_lab_done() {
	lab_cleanup
	trap 'rm -rf "$WORK"' EXIT
	trap 'rm -rf "$WORK"; trap - INT; kill -INT $$' INT
	trap 'rm -rf "$WORK"; trap - TERM; kill -TERM $$' TERM
	[ $LOCKED = 0 ] || { flock -u 9; LOCKED=0; }
}

# Kill the processes named <comm> in namespace <ns> (lab_bg's pid is only their wrapper).
ns_kill() {
	local p
	for p in $(ip netns pids "$(lab_ns "$1")" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && kill -"${3:-TERM}" "$p" 2>/dev/null
	done
	return 0
}

# CPU ticks used so far by the VPN on both gateways: every process there except the tools.
vpn_cpu_ticks() {
	local ns p t=0 stat
	for ns in gwa gwb; do
		for p in $(ip netns pids "$(lab_ns "$ns")" 2>/dev/null); do
			case $(cat "/proc/$p/comm" 2>/dev/null) in
			'' | iperf3 | sh | sleep | ping | timeout | python3 | tl-delayline) continue ;;
			esac
			stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
			stat=${stat##*) }
			t=$((t + $(awk '{ print $12 + $13 }' <<<"$stat")))
		done
	done
	echo "$t"
}

# iperf_run <dir> <client-ns> <server-ns> <server-ip> <seconds> iperf3-args...: one iperf3
# test; writes <dir>/iperf.json and <dir>/cpu.json (VPN CPU seconds, wall seconds).
iperf_run() {
	local d=$1 c=$2 s=$3 ip=$4 t=$5 srv c0 c1 w0 w1
	shift 5
	mkdir -p "$d"
	lab_bg "$s" "$d/iperf-server.log" timeout $((t + 30)) iperf3 -s -1 -B "$ip"
	srv=$LAB_LAST_PID
	lab_wait_for 5 sh -c "ip netns exec $(lab_ns "$s") ss -Hltn 'sport = :5201' | grep -q ." || {
		echo '{"error": "iperf3 server did not start"}' >"$d/iperf.json"
		return 1
	}
	c0=$(vpn_cpu_ticks) w0=$EPOCHREALTIME
	timeout $((t + 30)) ip netns exec "$(lab_ns "$c")" iperf3 -c "$ip" -t "$t" -J "$@" >"$d/iperf.json" 2>"$d/iperf.err"
	w1=$EPOCHREALTIME c1=$(vpn_cpu_ticks)
	printf '{"vpn_cpu_s": %s, "wall_s": %s, "start": %s, "end": %s}\n' "$(awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')" \
		"$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')" "$w0" "$w1" >"$d/cpu.json"
	ns_kill "$s" iperf3
	wait "$srv" 2>/dev/null
	return 0
}

# drained <dir>: wait (at most 15 s) until the server's eth0 has received nothing new for 0.5 s,
# so that what the queues on the path still held has arrived before the counters are read (a
# queue of 10240 packets at R takes ~1 s to drain at 100 Mbit/s, longer at a lower R). Writes
# <dir>/drain.json: when the last packet arrived (to 0.1 s; the bottleneck's share of R is
# its bytes over the time from the test's start to then).
drained() {
	local n m i last=null quiet=$EPOCHREALTIME # last null: nothing arrived once the watch began
	n=$(lab_exec server cat /sys/class/net/eth0/statistics/rx_packets)
	for ((i = 0; i < 150; i++)); do
		sleep 0.1
		m=$(lab_exec server cat /sys/class/net/eth0/statistics/rx_packets)
		if [ "$m" != "$n" ]; then
			n=$m last=$EPOCHREALTIME quiet=$EPOCHREALTIME
		elif awk -v a="$quiet" -v b="$EPOCHREALTIME" 'BEGIN { exit !(b - a >= 0.5) }'; then
			printf '{"last_rx": %s}\n' "$last" >"$1/drain.json"
			return 0
		fi
	done
	bench_say "the path did not drain within 15 s: counters read while packets still arrive"
}

snap() { # snap <out.json>: counters of every namespace and tunless instance
	local n
	local -a args=()
	for n in "${IMPL_TUNLESS[@]}"; do args+=(--tunless "$n"); done
	$STATS snap "$1" "$(lab_ns client)" "$(lab_ns gwa)" "$(lab_ns wan)" "$(lab_ns gwb)" \
		"$(lab_ns server)" "${args[@]}"
}

# ---- scenarios 1 and 1b: throughput, no shaper -------------------------------------------------
# throughput: host to host, gwa -> gwb over the tunnel; gateway: client -> server through both
# gateways, in at a LAN port and out at the WAN port of gwa, in at the WAN port and out at the
# LAN port of gwb (what a VPN gateway forwards).
sc_throughput() { # <scenario> <impl> <mode> <txq>
	local sc=$1 impl=$2 mode=$3 q=$4 t st dir d size i rate best probe cl=gwa sv=gwb ip=10.77.0.2
	[ "$sc" = throughput ] || cl=client sv=server ip=10.2.0.2
	for t in $TCP_TESTS; do
		st=${t%:*} dir=${t#*:}
		d=$OUTDIR/raw/$impl-$mode-q$q/$sc-tcp$st$dir
		step "$impl ($mode, txq $q): $sc TCP $st stream(s) $([ "$dir" = r ] && echo reverse || echo forward), ${T_TCP}s"
		iperf_run "$d" $cl $sv $ip "$T_TCP" -P "$st" $([ "$dir" = r ] && echo -R)
		$BENCH "$sc" "$d" --impl "$impl" --mode "$mode" --txq "$q" --test tcp --streams "$st" \
			--direction "$dir" >>"$RECORDS"
	done
	for size in $UDP_SIZES; do
		d=$OUTDIR/raw/$impl-$mode-q$q/$sc-udp$size
		step "$impl ($mode, txq $q): $sc UDP ${size} B, up to $UDP_PROBES rate step(s) of ${T_UDP}s"
		rate=0 best=
		for ((i = 1; i <= UDP_PROBES; i++)); do
			iperf_run "$d/probe$i" $cl $sv $ip "$T_UDP" -u -l "$size" -b "$rate" -w 4M
			# next offered rate: 90 % of what arrived; stop once the loss is < 1 %
			probe=$($BENCH udp-probe "$d/probe$i/iperf.json")
			[ "${probe%% *}" = ok ] && break
			rate=${probe#* }
			[ "$rate" -gt 0 ] 2>/dev/null || break
		done
		$BENCH "$sc" "$d" --impl "$impl" --mode "$mode" --txq "$q" --test udp --size "$size" >>"$RECORDS"
	done
}

# ---- scenario 3: latency under load (4 TCP flows client -> server through the bottleneck) -------
sc_latency() { # <impl> <mode> <txq>
	local impl=$1 mode=$2 q=$3 d pingp n
	d=$OUTDIR/raw/$impl-$mode-q$q/latency
	mkdir -p "$d"
	step "$impl ($mode, txq $q): latency under load, 4 TCP flows, ${T_LAT}s at R = $RATE Mbit/s"
	lab_exec client ping -i 0.05 -c 5 -W 1 -q 10.2.0.2 >/dev/null 2>&1 # warm-up
	lab_exec client ping -i 0.02 -c 50 -W 1 10.2.0.2 >"$d/ping-idle.txt" 2>&1
	n=$(((T_LAT - 1) * 20))
	(sleep 1 && lab_exec client ping -i 0.05 -c "$n" -W 2 10.2.0.2 >"$d/ping-load.txt" 2>&1) &
	pingp=$!
	iperf_run "$d" client server 10.2.0.2 "$T_LAT" -P 4
	wait "$pingp" 2>/dev/null
	$BENCH latency "$d" --impl "$impl" --mode "$mode" --txq "$q" --rate "$RATE" >>"$RECORDS"
}

# ---- scenario 4: overload, UDP offered at x times the bottleneck -----------------------------
sc_overload() { # <impl> <mode> <txq>
	local impl=$1 mode=$2 q=$3 d x mbit
	for x in $OV_X; do
		d=$OUTDIR/raw/$impl-$mode-q$q/overload-$x
		mkdir -p "$d"
		mbit=$(awk -v r="$RATE" -v x="$x" 'BEGIN { printf "%d", r * x }')
		step "$impl ($mode, txq $q): overload ${x}x = $mbit Mbit/s UDP for ${T_OV}s"
		snap "$d/before.json"
		iperf_run "$d" client server 10.2.0.2 "$T_OV" -u -l 1200 -b "${mbit}M" -w 4M
		drained "$d" # what is still queued arrives before the second snapshot
		snap "$d/after.json"
		$BENCH overload "$d" --impl "$impl" --mode "$mode" --txq "$q" --rate "$RATE" --x "$x" >>"$RECORDS"
	done
}

# ---- scenario 2: the no-drop matrix (TUN queue x RTT; TCP bulk + video through the bottleneck) --
delayline_start() { # <rtt_ms> <stats-file>
	lab_exec wan ip link set p-gwa nomaster
	lab_exec wan ip link set p-gwb nomaster
	lab_bg wan "$LAB_DIR/delayline.log" "$DELAYLINE" -a p-gwa -b p-gwb -d $(($1 * 500)) -s "$2"
	lab_wait_for 5 test -s "$2"
}
delayline_stop() {
	ns_kill wan tl-delayline
	lab_wait_for 5 grep -q held_at_exit "$1"
}

# endpoints <cc> <ecn> <out.json>: the client's and the server's TCP congestion control and ECN
# setting for this cell (the other namespaces keep the host's); writes what each had before and
# has now, and the host's (what new namespaces inherit). A namespace other than the host's may
# only make a CC of net.ipv4.tcp_allowed_congestion_control (a host-wide list) its default: when
# the kernel refuses, the namespace keeps its CC and iperf3 -C sets the sender's socket (the
# cell's iperf3 always runs with -C <cc>; its JSON names the sender's CC).
endpoints() {
	local cc=$1 ecn=$2 out=$3 ns was now host how
	host="\"host\": {\"cc\": \"$(sysctl -n net.ipv4.tcp_congestion_control)\", \"ecn\": $(sysctl -n net.ipv4.tcp_ecn)}"
	printf '{%s' "$host" >"$out"
	for ns in client server; do
		was=$(lab_exec $ns sysctl -n net.ipv4.tcp_congestion_control net.ipv4.tcp_ecn | tr '\n' ' ')
		lab_exec $ns sysctl -qw net.ipv4.tcp_ecn="$ecn" || return 1
		how=namespace
		lab_exec $ns sysctl -qw net.ipv4.tcp_congestion_control="$cc" 2>/dev/null || how="iperf3 -C (namespace default refused)"
		now=$(lab_exec $ns sysctl -n net.ipv4.tcp_congestion_control net.ipv4.tcp_ecn | tr '\n' ' ')
		# shellcheck disable=SC2086
		printf ', "%s": {"inherited": "%s", "namespace_cc": "%s", "ecn": %s, "cc": "%s", "cc_set_by": "%s"}' \
			$ns "${was% }" $now "$cc" "$how" >>"$out"
	done
	echo '}' >>"$out"
}

sc_nodrop_cell() { # <impl> <mode> <queue|none> <rtt_ms> <cc> <ecn> <run>
	local impl=$1 mode=$2 q=$3 rtt=$4 cc=$5 ecn=$6 run=$7 d rcv vs p
	d=$OUTDIR/raw/$impl-$mode/nodrop-q$q-rtt$rtt-$cc-ecn$ecn-$VIDEO-r$run
	p="{\"queue\": $([ "$q" = none ] && echo null || echo "$q"), \"rtt_ms\": $rtt, \"cc\": \"$cc\", \"ecn\": $ecn, \"video\": \"$VIDEO\", \"run\": $run}"
	mkdir -p "$d"
	step "$impl: no-drop cell queue $q, RTT +$rtt ms, $cc ECN $ecn, run $run: TCP bulk + $VIDEO video ${T_ND}s at R = $RATE Mbit/s"
	[ "$q" = none ] || impl_txqueuelen "$impl" "$q" || { record "$impl" "$mode" nodrop "$p" error "txqueuelen $q failed"; return; }
	endpoints "$cc" "$ecn" "$d/endpoints.json" || { record "$impl" "$mode" nodrop "$p" error "could not set $cc / tcp_ecn=$ecn on the endpoints"; return; }
	if [ -x "$DELAYLINE" ]; then
		delayline_start "$rtt" "$d/delayline.json" || bench_say "delay line did not start"
	else
		bench_say "no delay line ($DELAYLINE not built): the WAN bridge stays, RTT +0"
	fi
	lab_wait_ping client 10.2.0.2 10
	# The path MTU (the tunnel's 1420) is learnt before the counters are read, not by the
	# cell's first TCP segments (the route cache forgets it after 10 min).
	lab_exec client ping -c 2 -i 0.2 -M do -s 1472 -W 1 10.2.0.2 >/dev/null 2>&1
	lab_bg server "$d/video-recv.log" $FLOW recv 6000 --idle 3 --wait 20 --out "$d/video-recv.json" --ready "$d/ready"
	rcv=$LAB_LAST_PID
	lab_wait_for 5 test -e "$d/ready"
	snap "$d/before.json"
	(lab_exec client $FLOW send 10.2.0.2 6000 --size "$VIDEO_SIZE" --fps "$VIDEO_FPS" --burst "$VIDEO_BURST" \
		--seconds "$((T_ND - 1))" --out "$d/video-sent.json" >"$d/video-send.log" 2>&1) &
	vs=$!
	iperf_run "$d" client server 10.2.0.2 "$T_ND" -C "$cc"
	wait "$vs" 2>/dev/null
	wait "$rcv" 2>/dev/null
	drained "$d"
	snap "$d/after.json"
	[ -x "$DELAYLINE" ] && delayline_stop "$d/delayline.json"
	$BENCH nodrop "$d" --impl "$impl" --mode "$mode" --queue "$q" --rtt "$rtt" --rate "$RATE" \
		--cc "$cc" --ecn "$ecn" --video "$VIDEO" --run "$run" >>"$RECORDS"
}

sc_nodrop() { # <impl> <mode>
	local impl=$1 mode=$2 q rtt queues ep eps=$ND_EP run
	case $impl in tunless) queues=none ;; wireguard-go) queues=$ND_Q_WGGO ;; *) queues=$ND_Q_OTHER eps=${ND_EP%% *} ;; esac
	for ((run = 1; run <= ND_RUNS; run++)); do
		for ep in $eps; do
			for q in $queues; do
				for rtt in $ND_RTTS; do sc_nodrop_cell "$impl" "$mode" "$q" "$rtt" "${ep%:*}" "${ep#*:}" "$run"; done
			done
		done
	done
}

# The kernel's TUN backpressure flag (IFF_BACKPRESSURE = 0x0080, Linux 7.3): TUNGETFEATURES on
# /dev/net/tun lists the flags this kernel accepts. Prints the reason and returns 1 when the cell
# cannot run here.
tun_bp_available() {
	local f
	f=$($PY -c 'import fcntl, os, struct
fd = os.open("/dev/net/tun", os.O_RDWR)
print("0x%04x" % struct.unpack("I", fcntl.ioctl(fd, 0x800454cf, b"\0" * 4))[0])' 2>&1) ||
		{ echo "could not probe /dev/net/tun (TUNGETFEATURES): ${f##*$'\n'}"; return 1; }
	if (((f & 0x0080) == 0)); then
		echo "kernel $(uname -r) has no IFF_BACKPRESSURE (Linux 7.3): TUNGETFEATURES on /dev/net/tun gave $f, bit 0x0080 clear"
		return 1
	fi
	echo "kernel $(uname -r) offers IFF_BACKPRESSURE (TUNGETFEATURES $f), but $(tunvpn_version wireguard-go) does not open its TUN device with it and no other TUN VPN here does"
	return 1
}

# ---- one implementation ------------------------------------------------------------------------
want() { [[ ,$SCENS, == *,$1,* ]]; }

run_lab() { # <impl> <mode> <scenarios...>: one fresh lab, the VPN up, the scenarios in order
	local impl=$1 mode=$2 s q why wan broken=
	shift 2
	step "$impl ($mode): fresh namespaces, tunnel up"
	if ! bench_lab; then
		for s; do record "$impl" "$mode" "$s" '{}' error "lab setup failed"; done
		bench_lab_done
		return
	fi
	if ! impl_up "$impl" "$mode"; then
		why="tunnel did not come up: $(tail -n 2 "$LAB_DIR"/*.log 2>/dev/null | grep -v '^EAL' | tail -n 2 | tr '\n' ' ')"
		for s; do record "$impl" "$mode" "$s" '{}' error "$why"; done
		bench_lab_done
		return
	fi
	for s; do
		[ -z "$broken" ] || { record "$impl" "$mode" "$s" '{}' error "$broken"; continue; }
		case $s in
		throughput | gateway) # before latency/overload/nodrop put the TUN VPNs' shaper on
			# The gateway scenario: the path's veths as a gateway's NICs are (bench/impl.sh
			# impl_gateway_lab: GRO, TX offload where no AF_XDP port receives; BENCH_GW_LAB),
			# for this scenario only: the lab's settings come back for the scenarios that share
			# the lab (the TUN VPNs' throughput, latency, overload run as before).
			if [ "$s" = gateway ]; then
				wan=tun
				case $mode in fwd-*-*) wan=${mode#fwd-} && wan=${wan%%-*} ;; esac
				impl_gateway_features >"$OUTDIR/raw/$impl-$mode-gateway-veths-before.txt"
				impl_gateway_lab "$wan" || { record "$impl" "$mode" "$s" '{}' error "ethtool -K on the veths failed"; continue; }
				impl_gateway_features >"$OUTDIR/raw/$impl-$mode-gateway-veths.txt"
			fi
			for q in $([ "$impl" = wireguard-go ] && echo "$THR_TXQ" || echo 500); do
				impl_txqueuelen "$impl" "$q"
				sc_throughput "$s" "$impl" "$mode" "$q"
			done
			if [ "$s" = gateway ]; then
				impl_gateway_lab_undo ||
					broken="the veths' offloads could not be set back after the gateway scenario (ethtool -K)"
				impl_gateway_features >"$OUTDIR/raw/$impl-$mode-gateway-veths-after.txt"
			fi
			;;
		latency | overload)
			[ "$impl" = tunless ] || tun_wan_shaper || { record "$impl" "$mode" "$s" '{}' error "tbf failed"; continue; }
			for q in $([ "$impl" = wireguard-go ] && echo "$TXQ" || echo 500); do
				impl_txqueuelen "$impl" "$q"
				"sc_$s" "$impl" "$mode" "$q"
			done
			;;
		nodrop)
			[ "$impl" = tunless ] || tun_wan_shaper || { record "$impl" "$mode" "$s" '{}' error "tbf failed"; continue; }
			sc_nodrop "$impl" "$mode"
			;;
		esac
	done
	bench_lab_done
}

run_impl() {
	local impl=$1 why s p lan=()
	if ! why=$(impl_available "$impl"); then
		bench_say "$impl: skipped: $why"
		IFS=, read -ra LS <<<"$SCENS"
		for s in "${LS[@]}"; do record "$impl" - "$s" '{}' skipped "$why"; done
		return
	fi
	for s in latency overload; do want $s && lan+=("$s"); done
	if [ "$impl" = tunless ]; then
		# host mode for the host-to-host throughput; gateway mode without the shaper for the
		# gateway scenario, once per pair of port kinds; gateway mode with the shaper for the
		# LAN scenarios
		want throughput && run_lab tunless host throughput
		if want gateway; then
			for p in $TL_FWD_PORTS; do run_lab tunless "fwd-${p%%:*}-${p#*:}" gateway; done
		fi
		[ ${#lan[@]} -eq 0 ] || run_lab tunless gateway "${lan[@]}"
		# the no-drop cells at the study's R, in a lab of their own (the shaper's rate)
		! want nodrop || RATE=$ND_RATE run_lab tunless gateway nodrop
	else
		want gateway && lan=(gateway "${lan[@]}")
		want throughput && lan=(throughput "${lan[@]}")
		[ ${#lan[@]} -eq 0 ] || run_lab "$impl" tun "${lan[@]}"
		! want nodrop || RATE=$ND_RATE run_lab "$impl" tun nodrop
	fi
}

bench_say "profile $PROFILE: R = $RATE Mbit/s; output $OUTDIR; implementations $IMPLS; scenarios $SCENS"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
IFS=, read -ra LIST <<<"$IMPLS"
VERSIONS=()
for impl in "${LIST[@]}"; do
	VERSIONS+=(--version "$impl=$(impl_version "$impl")")
	run_impl "$impl"
done
# The kernel-TUN cell with IFF_BACKPRESSURE: a no-drop cell where the kernel and a TUN VPN have it.
if want nodrop && [[ ,$IMPLS, == *,wireguard-go,* ]] && ! why=$(tun_bp_available); then
	bench_say "wireguard-go-bp (kernel TUN with IFF_BACKPRESSURE): skipped: $why"
	record wireguard-go-bp tun nodrop '{}' skipped "$why"
fi
step "report: results.json, plots, report.md, report.html"
$BENCH assemble "$RECORDS" "$OUTDIR" ${APPEND:+--append} --profile "$PROFILE" --command "$COMMAND" --rate "$RATE" \
	--load-start "$LOAD0" --burst "$BURST" --video "$VIDEO_FPS,$VIDEO_BURST,$VIDEO_SIZE" --nd-rate "$ND_RATE" \
	"${VERSIONS[@]}" --version "iperf3=$(iperf3 --version | head -n 1)" || exit 1
$PY "$ROOT/bench/report.py" "$OUTDIR" || exit 1
bench_say "done in $((SECONDS - T0)) s: $OUTDIR/report.md"
