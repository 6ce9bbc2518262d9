#!/usr/bin/env bash
# One tunnel carried by several workers (`workers: 2`, then `workers: 3`). On a veth the daemon
# opens one queue pair: worker 0 owns it, every worker seals and opens packets (the crypto
# stage), and the owner finishes them in arrival order. Fresh labs (lab.sh):
#
#   host pair   ${P}-a tunlessd (configs/host-a.yaml + workers: W) <── veth ──> ${P}-b wg0
#   gateways    client ── gwa [tunless W, WAN shaper R] ── WAN ── gwb [tunless W] ── server
#
# Per W:
#   interop   wireguard-go and boringtun-cli: handshake, ping v4/v6, iperf3 TCP both ways (at
#             most 200 Mbit/s: this test is about order and accounting, not speed).
#   order     a sequence-numbered UDP stream (seqflow.py) a -> b (tunless encrypts) and b -> a
#             (tunless decrypts): the receiver sees every datagram, none out of order. A TCP
#             stream each way, captured at every boundary of tunless (tcp_no_reorder,
#             tcporder.py): tunless's WAN sends are in counter order per session (judged);
#             each segment that reached the receiver after a later one is printed with the
#             place it first came late (the sender, the veth into tunless's packet port, the
#             WAN, the peer), and so are the sender's reordering and retransmission counters.
#   conserve  tunless dropped nothing, and /tunless/conservation balances exactly once quiet
#             (packets in crypto jobs count as queued until their owner finishes them).
#   rekey     short timers (rekey every 4 s, tunless initiates) under two 12 s streams, one each
#             way: >= 2 new handshakes, every datagram delivered in order, no drop.
#   shaper    gateways with W workers, gwa's WAN shaped to R = 50 Mbit/s, a UDP stream at 2R:
#             the wire rate the server receives (datagrams x 1330 B on the wire) is R +- 5 %
#             (not R/W: the bucket is the port's, shared by its queues), the AQM is the only
#             place that dropped, conservation exact on both gateways.
# Needs root, tunlessd, wireguard-go and boringtun-cli (scripts/setup.sh), wg, iperf3, nstat,
# ethtool, tcpdump, python3. Output: "ok ..."/"not ok ...", then "N passed, N failed".
# WORKERS_LIST="2" runs one worker count only; WORKERS_ONLY="host rekey shaper" picks parts.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=tw$$
A=$HL_NAME_A
GWA=${P}ga
GWB=${P}gb
T0=$SECONDS
SEQFLOW="$HERE/seqflow.py"
TEL=$TUNLESS_ROOT/scripts/tl-telemetry
RATE=50000000
WORKERS_LIST=${WORKERS_LIST:-2 3}

hl_need_bins "$HL_TUNLESSD" "$WG_GO" "$BORINGTUN"
# boringtun-cli runs one thread here: with several, a TCP flow that a retransmission timeout
# rehashes onto another TUN queue is served by another thread, and boringtun itself can
# reorder it; this test is about tunless's order.
export WG_THREADS=1
hl_need_cmds wg iperf3 nstat ethtool python3 tcpdump

ge() { [ "$1" -ge "$2" ] 2>/dev/null; }
new_host_lab() { hl_host_lab "$P"; }
end_lab() {
	hl_end_lab KILL
	rm -rf "/var/run/dpdk/tunless-$GWA" "/var/run/dpdk/tunless-$GWB"
}

# start_a <W> [timers-flow]: tunlessd on a with W workers.
start_a() {
	hl_config "$LAB_DIR/a.yaml" host-a "" "" "${2:-}"
	printf 'workers: %s\n' "$1" >>"$LAB_DIR/a.yaml"
	hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log"
}

drops_json() { "$TEL" "$1" /tunless/drops; }
# no_drops <name>: every drop reason 0.
no_drops() {
	drops_json "$1" | python3 -c '
import json, sys
d = {k: v for k, v in json.load(sys.stdin).items() if v}
print("drops:", d or "none")
sys.exit(1 if d else 0)'
}
# balance_zero <name>: both ports balance exactly, nothing in flight.
balance_zero() {
	"$TEL" "$1" /tunless/conservation | python3 -c '
import json, sys
b = json.load(sys.stdin)
print(json.dumps(b))
sys.exit(1 if any(v["balance"] != 0 for v in b.values()) else 0)'
}
workers_up() { # workers_up <name> <W>: the device reports W workers
	[ "$(hl_tel "$1" /tunless/device --get workers)" = "$2" ]
}
# crypto_view <name> <W> <min-packets>: one queue pair (a veth), worker 0 its owner, the others
# not; the workers sealed and opened at least <min-packets> together; nothing in flight, no
# job waiting (quiet). Prints each worker's share.
crypto_view() {
	python3 - "$(hl_tel "$1" /tunless/device)" "$(hl_tel "$1" /tunless/workers)" "$2" "$3" <<'EOF'
import json, sys
dev, ws, n, least = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
w = [ws["worker%d" % i] for i in range(n)]
print("queue pairs %d, crypto ring %d; crypto packets by worker: %s; backpressure (encap/decap) of the owner: %d/%d"
      % (dev["queue_pairs"], dev["crypto_ring"], [x["crypto_packets"] for x in w], w[0]["crypto_backpressure_encap"],
         w[0]["crypto_backpressure_decap"]))
ok = (len(ws) == n and dev["queue_pairs"] == 1 and dev["crypto_ring"] == 0 and w[0]["owner"] == 1
      and all(x["owner"] == 0 for x in w[1:]) and sum(x["crypto_packets"] for x in w) >= least
      and all(x[k] == 0 for x in w for k in ("inflight_encap", "inflight_decap", "job_fifo_encap", "job_fifo_decap")))
sys.exit(0 if ok else 1)
EOF
}

# seq_start <tag> <recv-ns> <recv-ip> <port>: a seqflow receiver in the background.
declare -A SEQ_PID=()
seq_start() {
	local tag=$1 ns=$2 ip=$3 port=$4
	rm -f "$LAB_DIR/seq-$tag.ready"
	lab_bg "$ns" "$LAB_DIR/seq-$tag.json" python3 "$SEQFLOW" recv --bind "$ip" --port "$port" --idle 3 \
		--max-seconds 60 --ready "$LAB_DIR/seq-$tag.ready"
	SEQ_PID[$tag]=$LAB_LAST_PID
	lab_wait_for 5 test -e "$LAB_DIR/seq-$tag.ready"
}
# seq_send <tag> <send-ns> <dst-ip> <port> <count> <pps>: the stream; output in seq-<tag>.sent.
seq_send() {
	lab_exec "$2" python3 "$SEQFLOW" send --dst "$3" --port "$4" --count "$5" --pps "$6" >"$LAB_DIR/seq-$1.sent"
}
# path_drops: the kernel's drop counters on the host lab's path, in namespaces a and b (UDP
# socket buffers; every link's dropped counts: the veths, the peer's TUN, tunless's host veth)
# and the machine's input backlogs (/proc/net/softnet_stat, for all namespaces): where a
# datagram lost outside tunless's own counters is counted. "place value" lines.
path_drops() {
	local ns
	for ns in a b; do
		lab_exec "$ns" nstat -az UdpRcvbufErrors UdpSndbufErrors UdpInErrors Udp6RcvbufErrors Udp6SndbufErrors \
			Udp6InErrors | awk -v ns="$ns" '$1 ~ /^Udp/ { print ns ":" $1, $2 }'
		lab_exec "$ns" ip -j -s link show | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    st = l.get("stats64", {})
    for d in ("rx", "tx"):
        print("%s:%s:%s_dropped %d" % (sys.argv[1], l["ifname"], d, st.get(d, {}).get("dropped", 0)))
' "$ns"
	done
	python3 -c 'import sys; print("backlogs:softnet_dropped", sum(int(l.split()[1], 16) for l in open("/proc/net/softnet_stat")))'
}
# seq_result <tag> <count> [<path_drops before>]: waits for the receiver (if a child of this
# shell); ok if all <count> arrived, once, in order. Given the path's drop counters from before
# the stream, a datagram may also be lost where the kernel counts it outside tunless (the
# peer's socket buffer or TUN, a veth, a backlog: the deltas are printed); a loss that no
# counter explains still fails, as does any reordering or duplicate. tunless's own drops are
# judged apart (no_drops).
seq_result() {
	local after=""
	wait "${SEQ_PID[$1]}" 2>/dev/null
	if [ -n "${3:-}" ]; then
		after=$LAB_DIR/seq-$1.drops1
		path_drops >"$after"
	fi
	python3 - "$LAB_DIR/seq-$1.json" "$2" "${3:-}" "$after" <<'EOF'
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except (ValueError, IndexError):
    print("no result from the receiver:", open(sys.argv[1]).read()[-300:]); sys.exit(1)
n = int(sys.argv[2])
print("received %(received)d (unique %(unique)d), reordered %(reordered)d, duplicates %(duplicates)d, lost %(lost)d" % r,
      "of", n)
lost = n - r["unique"]
counted = 0
if sys.argv[3]:
    def read(f):
        return {k: int(v) for k, v in (l.split() for l in open(f) if l.strip())}
    a, b = read(sys.argv[3]), read(sys.argv[4])
    d = {k: b[k] - a.get(k, 0) for k in b if b[k] != a.get(k, 0)}
    counted = sum(d.values())
    print("kernel drops on the path outside tunless during the stream:",
          ", ".join("%s +%d" % kv for kv in sorted(d.items())) or "none")
sys.exit(0 if r["reordered"] == 0 and r["duplicates"] == 0 and lost <= counted else 1)
EOF
}
# seq_check <tag> <send-ns> <recv-ns> <recv-ip> <count> <pps>: a stream, judged as seq_result
# judges it with the path's drop counters
seq_check() {
	local tag=$1
	seq_start "$tag" "$3" "$4" 5301 || { echo "receiver did not start"; return 1; }
	path_drops >"$LAB_DIR/seq-$tag.drops0"
	seq_send "$tag" "$2" "$4" 5301 "$5" "$6"
	seq_result "$tag" "$5" "$LAB_DIR/seq-$tag.drops0"
}

# tcp_stream <sender-ns> <client-ns> <server-ns> <server-ip> [-R]: a 3 s TCP stream at
# 200 Mbit/s through the host pair, captured (headers only, tcpdump -i any, one capture per
# namespace) at every boundary of tunless, and judged by tcporder.py. Linux gives each segment
# of a connection the next IPv4 ID (retransmissions included), so per connection the IDs only
# go up where the order holds; WireGuard data messages carry a 64-bit counter that tunless
# assigns as its owner takes the packets from the WAN queue, and it sends them in that order.
# Points, sender first (a = tunless, b = the peer):
#   a -> b (tunless seals)  <A> tx (the sender's order), <A>-dp rx (tunless's input: the taps
#                           of the packet port's receive, tunless's AF_PACKET socket among them),
#                           veth-a tx (tunless's WAN sends), veth-b rx, wg0 rx (the receiver)
#   b -> a (tunless opens)  wg0 tx (the sender's order), veth-b tx (the peer's sends), veth-a rx
#                           (tunless's input), <A>-dp tx (tunless's output), <A> rx (the receiver)
# Judged: tunless's WAN sends (veth-a tx; in b -> a they carry the ACKs) are in counter order per
# receiver index; a -> b, no packet is late at tunless's input that was in order at the sender's
# <A> tx (host mode sets RPS on <A>-dp so that the kernel's backlogs keep each flow's order:
# hostmode.c). Printed: each segment that came late at the receiver, placed at the first
# point where it was late and the point before it where it was in order, with the counters'
# order on the WAN between them; the sender's reordering and retransmission counters (nstat),
# which also move when a descheduled peer delays ACKs. During the stream veth-a segments
# tunless's UDP GSO sends itself (tx-udp-segmentation off: the same order, each message seen).
REORDER_KEYS="TcpExtTCPSACKReorder TcpExtTCPTSReorder TcpExtTCPRenoReorder TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPLossProbes TcpExtTCPSpuriousRTOs TcpExtTCPDSACKRecv"
TCPORDER="$HERE/tcporder.py"
tcp_counters() { # tcp_counters <ns>: absolute values of REORDER_KEYS, "name value" lines
	# shellcheck disable=SC2086
	lab_exec "$1" nstat -az $REORDER_KEYS | awk '$1 ~ /^Tcp/ { print $1, $2 }'
}
# rx_path <ns> <iface>: how the kernel hands a veth end the frames its peer sends (NAPI only
# with an XDP program or GRO on that end; otherwise the sending CPU's backlog).
rx_path() {
	local gro xdp rps
	gro=$(lab_nsexec "$1" ethtool -k "$2" 2>/dev/null | awk '/^generic-receive-offload:/ { print $2 }')
	xdp=$(lab_nsexec "$1" ip -d link show "$2" | grep -q 'prog/xdp' && echo yes || echo no)
	rps=$(lab_nsexec "$1" cat "/sys/class/net/$2/queues/rx-0/rps_cpus" 2>/dev/null)
	printf '%s: GRO %s, XDP program %s, RPS %s' "$2" "${gro:-?}" "$xdp" "${rps:-?}"
}
# tcp_no_reorder <sender-ns> <client-ns> <server-ns> <server-ip> [-R]: tcp_stream (hl_check_out
# marks each line of its report as a note)
tcp_no_reorder() { tcp_stream "$@"; }
capture_counts() { awk '/packets (captured|received by filter|dropped by kernel)/ { printf "%s%s", n++ ? "/" : "", $1 }' "$1"; }
tcp_stream() {
	local snd=$1 c=$2 s=$3 ip=$4 rev=${5:-} srv src x i c0 c1 rc
	local -A cap=() pid=()
	src=10.77.0.1
	[ "$snd" = b ] && src=10.77.0.2
	for x in a b; do
		cap[$x]=$LAB_DIR/tcp-$snd-$x-$RANDOM.pcap
		lab_nsexec "$x" ip -o link >"${cap[$x]}.links"
		lab_bg "$x" "${cap[$x]}.log" tcpdump -i any -y LINUX_SLL2 -n -U -B 65536 -s 96 -w "${cap[$x]}" \
			"tcp or udp port 51820"
		pid[$x]=$LAB_LAST_PID
	done
	for x in a b; do
		i=0
		while ! grep -q "listening on" "${cap[$x]}.log" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	done
	lab_nsexec a ethtool -K veth-a tx-udp-segmentation off >/dev/null
	c0=$(tcp_counters "$snd")
	lab_bg "$s" "$LAB_DIR/iperf-tcp-server.log" iperf3 -s -1 -B "$ip" -p 5202
	srv=$LAB_LAST_PID
	lab_wait_for 5 sh -c "ip netns exec $(lab_ns "$s") ss -Hltn 'sport = :5202' | grep -q ."
	timeout 20 ip netns exec "$(lab_ns "$c")" iperf3 -c "$ip" -p 5202 -t 3 -b 200M $rev >/dev/null 2>&1
	rc=$?
	[ $rc = 0 ] && wait "$srv" 2>/dev/null
	kill "$srv" 2>/dev/null
	c1=$(tcp_counters "$snd")
	lab_nsexec a ethtool -K veth-a tx-udp-segmentation on >/dev/null
	# tcpdump reads the kernel's ring a block at a time, and a block is handed over when full
	# or after its timeout (about a second): wait that long, or the last packets are lost.
	sleep 1.5
	# lab_bg's pid is the background subshell; tcpdump is its child (and a background job
	# ignores SIGINT): stop tcpdump itself, which then prints its counts.
	for x in a b; do pkill -TERM -P "${pid[$x]}" 2>/dev/null; done
	for x in a b; do wait "${pid[$x]}" 2>/dev/null; done
	if [ $rc != 0 ]; then
		echo "iperf3 failed"
		return 1
	fi
	echo "sender: $(python3 -c '
import sys
a, b = (dict((l.split()[0], int(l.split()[1])) for l in t.splitlines() if l.strip()) for t in sys.argv[1:3])
print(" ".join("%s +%d" % (k, b[k] - a.get(k, 0)) for k in sorted(b)))' "$c0" "$c1")"
	echo "captures (tcpdump: captured, received by the filter, dropped by the kernel; a packet missing" \
		"can hide a late one, never make one): a $(capture_counts "${cap[a]}.log"), b $(capture_counts "${cap[b]}.log")"
	echo "receive paths: $(rx_path a "$A-dp"); $(rx_path a "$A"); $(rx_path b veth-b)"
	local -a pts
	if [ "$snd" = a ]; then
		pts=("sender $A tx=a:$A:out:tcp" "tunless's input $A-dp rx=a:$A-dp:in:tcp"
			"tunless's WAN sends veth-a tx=a:veth-a:out:wg" "peer's WAN input veth-b rx=b:veth-b:in:wg"
			"receiver wg0 rx=b:wg0:in:tcp")
	else
		pts=("sender wg0 tx=b:wg0:out:tcp" "peer's WAN sends veth-b tx=b:veth-b:out:wg"
			"tunless's WAN input veth-a rx=a:veth-a:in:wg" "tunless's output $A-dp tx=a:$A-dp:out:tcp"
			"receiver $A rx=a:$A:in:tcp" "tunless's WAN sends veth-a tx=a:veth-a:out:wg")
	fi
	local -a args=(check --src "$src" --cap "a=${cap[a]},${cap[a]}.links" --cap "b=${cap[b]},${cap[b]}.links"
		--judge "tunless's WAN sends veth-a tx")
	[ "$snd" = a ] && args+=(--judge "tunless's input $A-dp rx")
	for x in "${pts[@]}"; do args+=(--point "$x"); done
	python3 "$TCPORDER" "${args[@]}"
}

# ---- host mode: interop, order, conservation ----------------------------------------------------
host_run() {
	local W=$1 impl=$2 tag="W=$1 $2"
	new_host_lab
	if ! start_a "$W" || ! hl_peer_start b "$impl"; then
		hl_nok "$tag: tunlessd and $impl start"
		end_lab
		return
	fi
	hl_check "$tag: tunless runs $W workers" workers_up "$A" "$W"
	hl_check "$tag: ping v4 a -> b (handshake)" lab_wait_ping a 10.77.0.2 10
	hl_check "$tag: tunless has a session" hl_has_session "$A"
	hl_check "$tag: ping v6 a -> b" hl_ping a fd77::2
	hl_check "$tag: ping v4 b -> a" hl_ping b 10.77.0.1
	hl_check_out "$tag: TCP a -> b carried, in order into tunless's input, tunless's WAN sends in counter order (late segments placed, printed)" \
		tcp_no_reorder a a b 10.77.0.2
	hl_check_out "$tag: TCP b -> a carried, tunless's WAN sends in counter order (late segments placed, printed)" \
		tcp_no_reorder b a b 10.77.0.2 -R
	hl_check_out "$tag: 20000 numbered datagrams a -> b (tunless seals): in order, each delivered or counted lost by the kernel outside tunless" \
		seq_check "ab-$W-$impl" a b 10.77.0.2 20000 8000
	hl_check_out "$tag: 20000 numbered datagrams b -> a (tunless opens): in order, each delivered or counted lost by the kernel outside tunless" \
		seq_check "ba-$W-$impl" b a 10.77.0.1 20000 8000
	hl_check_out "$tag: tunless dropped nothing" no_drops "$A"
	hl_check_out "$tag: conservation exact once quiet (nothing left in crypto jobs)" \
		lab_wait_for 10 balance_zero "$A"
	hl_check_out "$tag: telemetry: one owner, $W workers sealed and opened >= 40000 packets, none in flight" \
		crypto_view "$A" "$W" 40000
	hl_tunless_stop "$A" TERM 5
	if [ "$HL_TL_RC" = 0 ]; then hl_ok "$tag: exits 0 on SIGTERM"; else hl_nok "$tag: exits 0 on SIGTERM ($HL_TL_RC)"; fi
	end_lab
}

# ---- rekey under load ---------------------------------------------------------------------------
rekey_run() {
	local W=$1 tag="W=$1 rekey" hs0 hs1
	new_host_lab
	if ! start_a "$W" "{rekey_after_time: 4, reject_after_time: 8, rekey_attempt_time: 6, rekey_timeout: 2, keepalive_timeout: 2}" ||
		! hl_peer_start b wggo; then
		hl_nok "$tag: tunlessd and wireguard-go start"
		end_lab
		return
	fi
	hl_check "$tag: ping a -> b (handshake)" lab_wait_ping a 10.77.0.2 10
	hs0=$(hl_peer_get "$A" handshakes)
	seq_start "rk-ab-$W" b 10.77.0.2 5301
	seq_start "rk-ba-$W" a 10.77.0.1 5302
	# 12 s each way at 2000 datagrams/s: three rekey periods.
	seq_send "rk-ab-$W" a 10.77.0.2 5301 24000 2000 &
	local s1=$!
	seq_send "rk-ba-$W" b 10.77.0.1 5302 24000 2000
	wait "$s1"
	# The receivers are children of this shell, not of check_out's subshell: wait here.
	wait "${SEQ_PID[rk-ab-$W]}" "${SEQ_PID[rk-ba-$W]}" 2>/dev/null
	hs1=$(hl_peer_get "$A" handshakes)
	hl_note "$tag: handshakes $hs0 -> $hs1 during the streams"
	hl_check "$tag: >= 2 handshakes during 12 s of traffic (rekey_after_time 4 s)" ge "$((${hs1:-0} - ${hs0:-0}))" 2
	hl_check_out "$tag: a -> b: all 24000, in order, across the rekeys" seq_result "rk-ab-$W" 24000
	hl_check_out "$tag: b -> a: all 24000, in order, across the rekeys" seq_result "rk-ba-$W" 24000
	hl_check_out "$tag: tunless dropped nothing (no authentic packet refused)" no_drops "$A"
	hl_check_out "$tag: conservation exact once quiet" lab_wait_for 10 balance_zero "$A"
	end_lab
}

# ---- gateways: one shaper rate with W workers ----------------------------------------------------
shaper_run() {
	local W=$1 tag="W=$1 shaper" x d0 d1
	lab_init "$P"
	HL_LOGS=("$LAB_DIR/gwa.log" "$LAB_DIR/gwb.log")
	lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$GWA /var/run/dpdk/tunless-$GWB"
	sed -e "s/^name: gwa\$/name: $GWA/" -e '/^workers:/d' \
		-e "s/wan: {iface: wan-a}/wan: {iface: wan-a, shaper: {rate_bps: $RATE}}/" \
		"$TUNLESS_ROOT/configs/gateway-a.yaml" >"$LAB_DIR/gateway-a.yaml"
	sed -e "s/^name: gwb\$/name: $GWB/" -e '/^workers:/d' "$TUNLESS_ROOT/configs/gateway-b.yaml" >"$LAB_DIR/gateway-b.yaml"
	for x in a b; do printf 'workers: %s\n' "$W" >>"$LAB_DIR/gateway-$x.yaml"; done
	if ! grep -q "rate_bps: $RATE" "$LAB_DIR/gateway-a.yaml"; then
		hl_nok "$tag: shaper set in gateway-a.yaml"
		end_lab
		return
	fi
	lab_gateway
	for x in client:eth0 server:eth0 gwa:wan-a gwb:wan-b; do
		lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx off >/dev/null
	done
	lab_bg gwa "$LAB_DIR/gwa.log" "$HL_TUNLESSD" -c "$LAB_DIR/gateway-a.yaml"
	lab_bg gwb "$LAB_DIR/gwb.log" "$HL_TUNLESSD" -c "$LAB_DIR/gateway-b.yaml"
	if ! lab_wait_for 30 grep -q ': up:' "$LAB_DIR/gwa.log" || ! lab_wait_for 30 grep -q ': up:' "$LAB_DIR/gwb.log" ||
		! lab_wait_ping client 10.2.0.2 20; then
		hl_nok "$tag: gateways up, tunnel answers"
		end_lab
		return
	fi
	hl_check "$tag: gwa runs $W workers" workers_up "$GWA" "$W"
	drops_json "$GWA" >"$LAB_DIR/d0.json"
	# R on the wire is R / (1330 * 8) datagrams of 1200 B per second: 1200 + 8 UDP + 20 IP,
	# padded to 1232, + 32 WireGuard + 8 UDP + 20 IP + 14 Ethernet + 24 framing (FCS,
	# preamble, gap), as the shaper counts. Offer twice that for 5 s.
	local pps=$((RATE / (1330 * 8))) n
	n=$((2 * pps * 5))
	rm -f "$LAB_DIR/seq-shape.ready"
	lab_bg server "$LAB_DIR/seq-shape.json" python3 "$SEQFLOW" recv --bind 10.2.0.2 --port 5301 --idle 3 \
		--ready "$LAB_DIR/seq-shape.ready"
	SEQ_PID[shape]=$LAB_LAST_PID
	lab_wait_for 5 test -e "$LAB_DIR/seq-shape.ready"
	lab_exec client python3 "$SEQFLOW" send --dst 10.2.0.2 --port 5301 --count "$n" --pps "$((2 * pps))" >/dev/null
	wait "${SEQ_PID[shape]}" 2>/dev/null
	drops_json "$GWA" >"$LAB_DIR/d1.json"
	hl_check_out "$tag: the server receives R = $RATE bit/s on the wire +- 5 % (not R/$W, not ${W}R)" \
		python3 - "$LAB_DIR/seq-shape.json" "$RATE" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
rate = float(sys.argv[2])
wire = r.get("mid_pps", 0) * 1330 * 8
print("received %d datagrams, %.0f/s in the middle of the stream = %.2f Mbit/s on the wire (%.1f %% of R), reordered %d"
      % (r["unique"], r.get("mid_pps", 0), wire / 1e6, 100 * wire / rate, r["reordered"]))
sys.exit(0 if abs(wire - rate) <= 0.05 * rate and r["reordered"] == 0 else 1)
EOF
	hl_check_out "$tag: gwa dropped only in the AQM" python3 - "$LAB_DIR/d0.json" "$LAB_DIR/d1.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
d = {k: b[k] - a.get(k, 0) for k in b if b[k] != a.get(k, 0)}
print("drop deltas:", d)
d.pop("aqm_codel", 0)
d.pop("aqm_overlimit", 0)
sys.exit(1 if d else 0)
EOF
	hl_check_out "$tag: gwb dropped nothing" no_drops "$GWB"
	hl_check_out "$tag: gwa conservation exact once quiet" lab_wait_for 10 balance_zero "$GWA"
	hl_check_out "$tag: gwb conservation exact once quiet" lab_wait_for 10 balance_zero "$GWB"
	end_lab
}

hl_check_out "the TCP order checker fails a capture with two WAN counters swapped" python3 "$TCPORDER" selftest
trap 'end_lab' EXIT
want() { [ -z "${WORKERS_ONLY:-}" ] || [[ " $WORKERS_ONLY " == *" $1 "* ]]; }
for W in $WORKERS_LIST; do
	want host && [ "${WORKERS_PEERS:-wggo boringtun}" != boringtun ] && host_run "$W" wggo
	want host && [ "${WORKERS_PEERS:-wggo boringtun}" != wggo ] && host_run "$W" boringtun
	want rekey && rekey_run "$W"
	want shaper && shaper_run "$W"
done
trap - EXIT
hl_check "no ${P}-* namespace left" test -z "$(lab_leftovers "$P")"
hl_note "runtime $((SECONDS - T0)) s"
hl_finish
