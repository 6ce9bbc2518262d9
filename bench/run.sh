#!/usr/bin/env bash
# One command that compares tunless with kernel-TUN VPNs and draws it (bench/README.md).
#
# Usage: bench/run.sh [--smoke | --quick | --full] [-o DIR] [-i impl,...] [-s scenario,...]
#   --smoke  every implementation x scenario once, tiny (<= 3 min)      (the CI smoke test)
#   --quick  the matrices at a few points, short runs (<= 15 min)        (default)
#   --full   every point, longer runs (<= 60 min on 2 cores)
#   -o DIR   output directory (default bench/out-<profile>-<date>)
#   -i       implementations: tunless,wireguard-go,wggo-ts,boringtun,openvpn,kernel-wg (default: all)
#            (wggo-ts: Tailscale's fork of wireguard-go)
#   -s       scenarios: throughput,gateway,latency,overload,nodrop (default: all)
#   --append keep DIR's records from an earlier run (e.g. other implementations) and report all
# Env: TUNLESS_BUILD (meson build dir: tunlessd, tl-delayline), TL_LAB_LOCK (a lock file held
# for each implementation's lab, e.g. /tmp/tunless-lab.lock, so other lab users can run in
# between), BENCH_RATE (bottleneck Mbit/s).
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
	*) sed -n '2,21p' "$0"; exit 2 ;;
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
	T_LAT=3 T_OV=2 OV_X="2" T_ND=3 ND_RTTS="60" ND_Q_WGGO="25" ND_Q_OTHER="25" TXQ="500"
	THR_TXQ="500"
	;;
quick)
	RATE=${BENCH_RATE:-100} T_TCP=3 T_UDP=2 UDP_PROBES=2 TCP_TESTS="1:f 1:r 8:f 8:r"
	UDP_SIZES="64 512 1392" T_LAT=6 T_OV=3 OV_X="0.5 1 2 3" T_ND=5 ND_RTTS="0 60 120"
	ND_Q_WGGO="1 5 25 500" ND_Q_OTHER="25 500" TXQ="500 25" THR_TXQ="500"
	;;
full)
	RATE=${BENCH_RATE:-100} T_TCP=10 T_UDP=4 UDP_PROBES=4 TCP_TESTS="1:f 1:r 8:f 8:r"
	UDP_SIZES="64 512 1392" T_LAT=20 T_OV=8 OV_X="0.5 0.75 1 1.25 1.5 2 2.5 3" T_ND=20
	ND_RTTS="0 60 120" ND_Q_WGGO="1 5 25 500" ND_Q_OTHER="1 5 25 500" TXQ="500 25" THR_TXQ="500 25"
	;;
esac
VIDEO_FPS=30 VIDEO_BURST=20 VIDEO_SIZE=1200 # 5.8 Mbit/s in frames of 20 packets
BURST=$((RATE * 1000000 / 8 / 1000))        # the WAN bottleneck's burst: 1 ms at R
[ "$BURST" -ge 3076 ] || BURST=3076

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
	printf '{"vpn_cpu_s": %s, "wall_s": %s}\n' "$(awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')" \
		"$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')" >"$d/cpu.json"
	ns_kill "$s" iperf3
	wait "$srv" 2>/dev/null
	return 0
}

# drained: wait (at most 15 s) until the server's eth0 has received nothing new for 0.5 s, so
# that what the queues on the path still held has arrived before the counters are read (a
# queue of 10240 packets at R takes ~1 s to drain at 100 Mbit/s, longer at a lower R).
drained() {
	local n m i
	n=$(lab_exec server cat /sys/class/net/eth0/statistics/rx_packets)
	for ((i = 0; i < 30; i++)); do
		sleep 0.5
		m=$(lab_exec server cat /sys/class/net/eth0/statistics/rx_packets)
		[ "$m" = "$n" ] && return 0
		n=$m
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
		drained # what is still queued arrives before the second snapshot
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

sc_nodrop_cell() { # <impl> <mode> <queue|none> <rtt_ms>
	local impl=$1 mode=$2 q=$3 rtt=$4 d rcv vs
	d=$OUTDIR/raw/$impl-$mode/nodrop-q$q-rtt$rtt
	mkdir -p "$d"
	step "$impl: no-drop cell queue $q, RTT +$rtt ms: TCP bulk + video ${T_ND}s at R = $RATE Mbit/s"
	[ "$q" = none ] || impl_txqueuelen "$impl" "$q" || { record "$impl" "$mode" nodrop "{\"queue\": $q, \"rtt_ms\": $rtt}" error "txqueuelen $q failed"; return; }
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
	iperf_run "$d" client server 10.2.0.2 "$T_ND"
	wait "$vs" 2>/dev/null
	wait "$rcv" 2>/dev/null
	drained
	snap "$d/after.json"
	[ -x "$DELAYLINE" ] && delayline_stop "$d/delayline.json"
	$BENCH nodrop "$d" --impl "$impl" --mode "$mode" --queue "$q" --rtt "$rtt" --rate "$RATE" >>"$RECORDS"
}

sc_nodrop() { # <impl> <mode>
	local impl=$1 mode=$2 q rtt queues
	case $impl in tunless) queues=none ;; wireguard-go) queues=$ND_Q_WGGO ;; *) queues=$ND_Q_OTHER ;; esac
	for q in $queues; do
		for rtt in $ND_RTTS; do sc_nodrop_cell "$impl" "$mode" "$q" "$rtt"; done
	done
}

# ---- one implementation ------------------------------------------------------------------------
want() { [[ ,$SCENS, == *,$1,* ]]; }

run_lab() { # <impl> <mode> <scenarios...>: one fresh lab, the VPN up, the scenarios in order
	local impl=$1 mode=$2 s q why
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
		case $s in
		throughput | gateway) # before latency/overload/nodrop put the TUN VPNs' shaper on
			for q in $([ "$impl" = wireguard-go ] && echo "$THR_TXQ" || echo 500); do
				impl_txqueuelen "$impl" "$q"
				sc_throughput "$s" "$impl" "$mode" "$q"
			done
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
	for s in latency overload nodrop; do want $s && lan+=("$s"); done
	if [ "$impl" = tunless ]; then
		# host mode for the host-to-host throughput; gateway mode without the shaper for the
		# gateway scenario, once per pair of port kinds; gateway mode with the shaper for the
		# LAN scenarios
		want throughput && run_lab tunless host throughput
		if want gateway; then
			for p in $TL_FWD_PORTS; do run_lab tunless "fwd-${p%%:*}-${p#*:}" gateway; done
		fi
		[ ${#lan[@]} -eq 0 ] || run_lab tunless gateway "${lan[@]}"
	else
		want gateway && lan=(gateway "${lan[@]}")
		want throughput && lan=(throughput "${lan[@]}")
		[ ${#lan[@]} -eq 0 ] || run_lab "$impl" tun "${lan[@]}"
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
step "report: results.json, plots, report.md, report.html"
$BENCH assemble "$RECORDS" "$OUTDIR" ${APPEND:+--append} --profile "$PROFILE" --command "$COMMAND" --rate "$RATE" \
	--load-start "$LOAD0" --burst "$BURST" --video "$VIDEO_FPS,$VIDEO_BURST,$VIDEO_SIZE" \
	"${VERSIONS[@]}" --version "iperf3=$(iperf3 --version | head -n 1)" || exit 1
$PY "$ROOT/bench/report.py" "$OUTDIR" || exit 1
bench_say "done in $((SECONDS - T0)) s: $OUTDIR/report.md"
