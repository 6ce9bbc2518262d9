#!/usr/bin/env bash
# Gateway mode end to end: two tunless gateways (configs/gateway-a.yaml, gateway-b.yaml) on
# AF_XDP ports with the tunless XDP programs, LAN hosts behind each, road warriors
# (wireguard-go, then boringtun-cli with configs/roadwarrior.conf) roaming in over the WAN.
#
#   ${P}-client        ${P}-gwa  (tunless)              ${P}-wan          ${P}-gwb  (tunless)       ${P}-server
#   eth0 10.1.0.2 ── lan-a 10.1.0.1    wan-a 10.99.0.1 ─┐            ┌─ wan-b 10.99.0.2   lan-b 10.2.0.1 ── eth0 10.2.0.2
#        fd01::2          fd01::1            fd99::1    br-wan (tcpdump)      fd99::2          fd02::1          fd02::2
#                                                         │
#                                   ${P}-rw  wan-rw 10.99.0.3 ── wg0 10.3.0.2/32 (wireguard-go | boringtun-cli)
#                                            route 10.1.0.0/24 dev wg0
#
# Scenarios (each assertion prints ok/not ok; summary "N passed, N failed"; exit 1 on failure):
#   a  site to site: ping v4/v6 both ways, iperf3 TCP both directions and UDP, peer telemetry
#      (session, bytes), and no cleartext LAN address ever seen on the WAN bridge; the veths
#      keep tx checksum offload on, so the gateways complete partial checksums
#   b  road warrior: wireguard-go, then boringtun-cli, ping + iperf3 to the client behind gwa
#   c  MTU: inner 1478 B with DF gets "frag needed"/"packet too big" (mtu 1420) from gwa and
#      counts frag_needed; without DF it is fragmented and answered; 1420 B inner packets pass
#   d  a never-seen LAN host: the first packet is held while gwb resolves it, and answered
#   b also sends data messages that the WAN fragments: reassembled by gwa's kernel, they
#      reach the client through the slow path, no drop
# No timing assertions. Needs root. Env: TUNLESS_BUILD (meson build dir), WG_GO, BORINGTUN.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=../../scripts/env.sh
TUNLESS_ROOT=$ROOT . "$ROOT/scripts/env.sh"

TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); printf 'ok %d - %s\n' $((PASS + FAIL)) "$*"; }
nok() { FAIL=$((FAIL + 1)); printf 'not ok %d - %s\n' $((PASS + FAIL)) "$*"; }
check() { # check <description> cmd...
	local d=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$d"; else nok "$d"; fi
}
info() { printf '# %s\n' "$*"; }
# A missing prerequisite is a failure, never a skip (CI must not lose this test quietly).
missing() { printf 'not ok - %s\n' "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || missing "needs root"
[ -x "$TUNLESSD" ] || missing "no $TUNLESSD (build first)"
for t in iperf3 tcpdump python3 wg; do
	command -v "$t" >/dev/null || missing "$t not installed (scripts/setup.sh)"
done

# ---- telemetry -------------------------------------------------------------------------------
# tel <instance> <command> <dotted.key>: one value of /tunless/<command> (scripts/tl-telemetry
# when present, else a few lines of python on the DPDK telemetry socket).
tel() {
	local v= cmd=/tunless/$2
	if [ -x "$ROOT/scripts/tl-telemetry" ]; then
		if [ -n "$3" ]; then
			v=$("$ROOT/scripts/tl-telemetry" --get "$3" "$1" "$cmd" 2>/dev/null)
		else
			v=$("$ROOT/scripts/tl-telemetry" "$1" "$cmd" 2>/dev/null)
		fi
	fi
	[ -n "$v" ] || v=$(python3 - "$1" "$2" "$3" <<'EOF'
import json, socket, sys
name, cmd, key = sys.argv[1:4]
if not cmd.startswith("/"):
    cmd = "/tunless/" + cmd
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(f"/var/run/dpdk/tunless-{name}/dpdk_telemetry.v2")
s.recv(4096)
s.send(cmd.encode())
v = json.loads(s.recv(1 << 20))[cmd]
for k in key.split(".") if key else []:
    v = v[k]
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
EOF
)
	printf '%s\n' "$v"
}
tel_gt() { # tel_gt <instance> <command> <key> <min>: value > min
	local v
	v=$(tel "$1" "$2" "$3") || return 1
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt "$4" ]
}
tel_eq() {
	local v
	v=$(tel "$1" "$2" "$3") || return 1
	[ "$v" = "$4" ]
}
nonzero_drops() { # one line: reason=count for each non-zero drop
	tel "$1" drops "" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(f"{k}={v}" for k,v in d.items() if v) or "none")'
}

# ---- lab -------------------------------------------------------------------------------------
P=tg$$
lab_init "$P"
GWA=${P}a   # instance names: unique per run (EAL file prefix, telemetry socket)
GWB=${P}b
for x in a b; do
	sed "s/^name: gw$x\$/name: ${P}$x/" "$ROOT/configs/gateway-$x.yaml" >"$LAB_DIR/gateway-$x.yaml"
done
grep -v '^Address' "$ROOT/configs/roadwarrior.conf" >"$LAB_DIR/rw.conf"

# lab_bg's pid is the subshell that runs the command; signal the command itself.
bg_kill() { # bg_kill <pid> <signal>: signal the children of a lab_bg subshell, wait for it
	local c
	for c in $(pgrep -P "$1"); do kill "-$2" "$c" 2>/dev/null; done
	lab_wait_for 10 sh -c "! kill -0 $1 2>/dev/null"
}

dump_logs() {
	local f
	for f in "$LAB_DIR"/*.log; do
		[ -f "$f" ] || continue
		printf '# ---- %s (last 40 lines)\n' "${f##*/}"
		tail -n 40 "$f" | sed 's/^/#   /'
	done
}
finish() {
	local rc=0
	[ "$FAIL" -eq 0 ] || { dump_logs; rc=1; }
	printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	exit $rc
}

lab_gateway
lab_add_roadwarrior
# Checksum offload stays on (veth default): the LAN hosts' TCP/UDP reach the AF_XDP ports
# with partial checksums, which the gateways complete.

# Everything on the WAN bridge, from before the first packet to the end of scenario a.
lab_bg wan "$LAB_DIR/tcpdump.log" tcpdump -i br-wan -n -U -s 128 -w "$LAB_DIR/wan.pcap"
TCPDUMP_PID=$LAB_LAST_PID
lab_wait_for 5 test -s "$LAB_DIR/wan.pcap" || sleep 1

start_gw() { # start_gw <ns> <config> <instance>
	lab_bg "$1" "$LAB_DIR/$1.log" "$TUNLESSD" -c "$2" -v
	lab_wait_for 20 test -S "/var/run/dpdk/tunless-$3/dpdk_telemetry.v2" &&
		lab_wait_for 10 grep -q ': up:' "$LAB_DIR/$1.log"
}
check "gwa: tunlessd up (gateway-a.yaml, AF_XDP on lan-a/wan-a)" start_gw gwa "$LAB_DIR/gateway-a.yaml" "$GWA"
check "gwb: tunlessd up (gateway-b.yaml, AF_XDP on lan-b/wan-b)" start_gw gwb "$LAB_DIR/gateway-b.yaml" "$GWB"
if [ "$FAIL" -ne 0 ]; then finish; fi

ping_n() { # ping_n <ns> <ip> [count] [ping args...]: every echo answered
	local ns=$1 ip=$2 n=${3:-3}
	shift 3 2>/dev/null || shift $#
	lab_exec "$ns" ping -q -c "$n" -i 0.2 -W 2 "$@" "$ip" | grep -q " $n received"
}

# ---- a: site to site -------------------------------------------------------------------------
info "a: site to site through tunless gwa <-> gwb"
check "a: client -> server 10.2.0.2 answers (first handshake)" lab_wait_ping client 10.2.0.2 20
check "a: client -> server fd02::2 answers" lab_wait_ping client fd02::2 10
check "a: server -> client 10.1.0.2 answers" lab_wait_ping server 10.1.0.2 10
check "a: server -> client fd01::2 answers" lab_wait_ping server fd01::2 10
check "a: ping client -> 10.2.0.2, 5/5" ping_n client 10.2.0.2 5
check "a: ping client -> fd02::2, 5/5" ping_n client fd02::2 5
check "a: ping server -> 10.1.0.2, 5/5" ping_n server 10.1.0.2 5
check "a: ping server -> fd01::2, 5/5" ping_n server fd01::2 5

# ---- c: MTU (before any bulk traffic, so that no path MTU is cached yet) --------------------
info "c: tunnel MTU 1420"
lab_nsexec client ip route flush cache 2>/dev/null
lab_nsexec client ip -6 route flush cache 2>/dev/null
# first without DF (no path MTU cached yet, so the client does not fragment itself)
FR0=$(tel "$GWA" device fragmented)
check "c: ping -M dont -s 1450 10.2.0.2 (inner 1478 without DF, fragmented by gwa) passes" \
	ping_n client 10.2.0.2 3 -M dont -s 1450
check "c: gwa fragmented the packets without DF" tel_gt "$GWA" device fragmented "${FR0:-0}"
FN0=$(tel "$GWA" drops frag_needed)
out=$(lab_exec client ping -c 2 -i 0.3 -W 1 -M do -s 1450 10.2.0.2 2>&1)
info "ping -M do -s 1450 10.2.0.2: $(printf '%s' "$out" | grep -iE 'frag|mtu' | head -1)"
check "c: ping -M do -s 1450 10.2.0.2 (inner 1478) gets frag needed, mtu 1420" \
	grep -qiE 'frag(mentation)? needed.*1420|mtu ?[=:] ?1420' <<<"$out"
check "c: gwa counted frag_needed" tel_gt "$GWA" drops frag_needed "${FN0:-0}"
FN1=$(tel "$GWA" drops frag_needed)
out=$(lab_exec client ping -c 2 -i 0.3 -W 1 -M do -s 1450 fd02::2 2>&1)
info "ping -M do -s 1450 fd02::2: $(printf '%s' "$out" | grep -iE 'too big|mtu' | head -1)"
check "c: ping -M do -s 1450 fd02::2 gets packet too big, mtu 1420" \
	grep -qiE 'too big.*1420|mtu ?[=:] ?1420' <<<"$out"
check "c: gwa counted frag_needed (IPv6)" tel_gt "$GWA" drops frag_needed "${FN1:-0}"
check "c: ping -M do -s 1392 10.2.0.2 (inner 1420) passes" ping_n client 10.2.0.2 3 -M do -s 1392
check "c: ping -M do -s 1372 fd02::2 (inner 1420) passes" ping_n client fd02::2 3 -M do -s 1372

# ---- a: bulk traffic ------------------------------------------------------------------------
iperf_json() { # iperf_json <ns> <server-ip> <label> iperf3-args...
	local ns=$1 ip=$2 label=$3
	shift 3
	timeout 60 ip netns exec "$(lab_ns "$ns")" iperf3 -c "$ip" -J "$@" >"$LAB_DIR/iperf-$label.json" 2>&1
}
# bytes the receiver got (TCP) or packets it got (UDP), printed; non-zero exit if iperf failed
iperf_got() {
	python3 - "$LAB_DIR/iperf-$1.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
e = j.get("end", {})
if "error" in j:
    print("error:", j["error"]); sys.exit(1)
if "sum_received" in e:
    r = e["sum_received"]; print(f"{r['bytes']} bytes, {r['bits_per_second']/1e6:.0f} Mbit/s")
    sys.exit(0 if r["bytes"] > 0 else 1)
s = e["sum"]; got = s["packets"] - s["lost_packets"]
print(f"{got}/{s['packets']} datagrams ({s['lost_percent']:.1f}% lost), {s['bits_per_second']/1e6:.0f} Mbit/s")
sys.exit(0 if got > 0 else 1)
EOF
}
iperf_check() { # iperf_check <description> <ns> <server-ip> <label> iperf3-args...
	local d=$1 r
	shift
	iperf_json "$@"
	if r=$(iperf_got "$3"); then ok "$d: $r"; else nok "$d: $r"; fi
}
lab_bg server "$LAB_DIR/iperf3-server.log" iperf3 -s
lab_bg client "$LAB_DIR/iperf3-client.log" iperf3 -s
lab_wait_for 5 lab_nsexec server sh -c 'ss -ltn | grep -q ":5201 "'
lab_wait_for 5 lab_nsexec client sh -c 'ss -ltn | grep -q ":5201 "'
iperf_check "a: iperf3 TCP client -> server" client 10.2.0.2 tcp-up -t 3
iperf_check "a: iperf3 TCP server -> client (-R)" client 10.2.0.2 tcp-down -t 3 -R
iperf_check "a: iperf3 TCP client -> server over IPv6" client fd02::2 tcp6 -t 3
iperf_check "a: iperf3 UDP client -> server 100 Mbit/s" client 10.2.0.2 udp -t 3 -u -b 100M

check "a: gwa completed partial checksums (client's veth offloads them)" tel_gt "$GWA" device csum_completed 0
check "a: gwb completed partial checksums (server's veth offloads them)" tel_gt "$GWB" device csum_completed 0
check "a: gwa peer gwb has a session" tel_eq "$GWA" peers peer0.session 1
check "a: gwb peer gwa has a session" tel_eq "$GWB" peers peer0.session 1
check "a: gwa -> gwb tx_bytes > 10 MB" tel_gt "$GWA" peers peer0.tx_bytes 10000000
check "a: gwa <- gwb rx_bytes > 10 MB" tel_gt "$GWA" peers peer0.rx_bytes 10000000
check "a: gwb -> gwa tx_bytes > 10 MB" tel_gt "$GWB" peers peer0.tx_bytes 10000000
check "a: gwb <- gwa rx_bytes > 10 MB" tel_gt "$GWB" peers peer0.rx_bytes 10000000
for r in auth_failed replay src_not_allowed malformed; do
	check "a: gwa and gwb: no $r drops" eval \
		'tel_eq "$GWA" drops '$r' 0 && tel_eq "$GWB" drops '$r' 0'
done
info "gwa drops: $(nonzero_drops "$GWA")"
info "gwb drops: $(nonzero_drops "$GWB")"

# The WAN must only ever see tunnel traffic: no LAN address in any IP header on br-wan.
sleep 0.5
bg_kill "$TCPDUMP_PID" INT
LEAK='net 10.1.0.0/24 or net 10.2.0.0/24 or net fd01::/64 or net fd02::/64'
n_udp=$(tcpdump -r "$LAB_DIR/wan.pcap" -n 'udp port 51820' 2>/dev/null | wc -l)
n_leak=$(tcpdump -r "$LAB_DIR/wan.pcap" -n "$LEAK" 2>/dev/null | wc -l)
info "WAN bridge: $n_udp packets on UDP 51820, $n_leak with a LAN address"
check "a: WAN bridge carried the tunnel (UDP 51820 packets seen)" test "$n_udp" -gt 1000
check "a: no cleartext on the WAN (no LAN address in any packet on br-wan)" test "$n_leak" -eq 0

# ---- d: never-seen LAN host ------------------------------------------------------------------
info "d: first packet to an unknown LAN host"
lab_nsexec server ip addr add 10.2.0.7/24 dev eth0
NN0=$(tel "$GWB" drops no_neighbour)
check "d: the first ping to 10.2.0.7 is answered (held on gwb while it resolves)" \
	lab_exec client ping -c 1 -W 3 -q 10.2.0.7
check "d: gwb counted no no_neighbour for it" tel_eq "$GWB" drops no_neighbour "${NN0:-0}"
check "d: ping 10.2.0.7, 5/5" ping_n client 10.2.0.7 5

# ---- b: road warriors ------------------------------------------------------------------------
RW_SOCK=$LAB_DIR/$(lab_ns rw)/wireguard/wg0.sock
rw_up() { # rw_up <label> cmd...: start a userspace WireGuard on wg0 in rw and configure it
	local label=$1
	shift
	lab_bg rw "$LAB_DIR/rw-$label.log" "$@"
	RW_PID=$LAB_LAST_PID
	lab_wait_for 10 test -S "$RW_SOCK" || return 1
	lab_wait_for 5 lab_nsexec rw ip link show wg0 || return 1
	lab_exec rw wg setconf wg0 "$LAB_DIR/rw.conf" || return 1
	lab_nsexec rw ip addr add 10.3.0.2/32 dev wg0 &&
		lab_nsexec rw ip link set wg0 mtu 1420 up &&   # as wg-quick does (boringtun: 1500)
		lab_nsexec rw ip route add 10.1.0.0/24 dev wg0
}
rw_down() {
	bg_kill "$RW_PID" TERM
	lab_wait_for 10 sh -c "! ip -n $(lab_ns rw) link show wg0"
	rm -f "$RW_SOCK"
}
# Data messages fragmented on the WAN: the road warrior's kernel splits outer datagrams
# above 1280 B, gwa's kernel reassembles them for the listen port's socket (slow path).
# The road warrior keeps gwa's MAC (permanent entry: it never ARPs again) while gwa's
# kernel has forgotten the road warrior's, as when a neighbour entry ages out.
frag_scenario() { # frag_scenario <label>
	local label=$1 sp0 d0 mac
	mac=$(ip -n "$(lab_ns gwa)" -j link show wan-a | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
	lab_nsexec rw ip route replace 10.99.0.1/32 dev wan-rw mtu lock 1280
	lab_nsexec rw ip neigh replace 10.99.0.1 lladdr "$mac" dev wan-rw nud permanent
	lab_nsexec gwa ip neigh del 10.99.0.3 dev wan-a 2>/dev/null
	sp0=$(tel "$GWA" device slowpath_rx)
	d0=$(nonzero_drops "$GWA")
	check "b/$label: ping -s 1300 rw -> 10.1.0.2 (outer datagrams fragmented), 5/5" ping_n rw 10.1.0.2 5 -s 1300
	check "b/$label: gwa took the reassembled datagrams through the slow path" \
		tel_gt "$GWA" device slowpath_rx $((${sp0:-0} + 4))
	check "b/$label: no drop on gwa meanwhile ($d0)" eval '[ "$(nonzero_drops "$GWA")" = "$d0" ]'
	lab_nsexec rw ip route del 10.99.0.1/32 dev wan-rw
	lab_nsexec rw ip neigh del 10.99.0.1 dev wan-rw
}
rw_scenario() { # rw_scenario <label> cmd...
	local label=$1 hs0
	shift
	info "b: road warrior with $label"
	hs0=$(tel "$GWA" peers peer1.handshakes)
	if ! rw_up "$label" "$@"; then
		nok "b/$label: starts and takes configs/roadwarrior.conf"
		return
	fi
	ok "b/$label: starts and takes configs/roadwarrior.conf"
	check "b/$label: rw -> client 10.1.0.2 answers (handshake with gwa)" lab_wait_ping rw 10.1.0.2 20
	check "b/$label: ping rw -> 10.1.0.2, 5/5" ping_n rw 10.1.0.2 5
	check "b/$label: ping client -> rw 10.3.0.2, 3/3" ping_n client 10.3.0.2 3
	iperf_check "b/$label: iperf3 TCP rw -> client" rw 10.1.0.2 "rw-$label" -t 3
	iperf_check "b/$label: iperf3 TCP client -> rw (-R)" rw 10.1.0.2 "rw-$label-R" -t 3 -R
	frag_scenario "$label"
	check "b/$label: gwa peer roadwarrior: new handshake" tel_gt "$GWA" peers peer1.handshakes "${hs0:-0}"
	check "b/$label: gwa peer roadwarrior has a session" tel_eq "$GWA" peers peer1.session 1
	check "b/$label: gwa learnt the roaming endpoint 10.99.0.3" \
		eval '[[ $(tel "$GWA" peers peer1.endpoint) == 10.99.0.3:* ]]'
	check "b/$label: wg show reports a handshake with gwa" \
		eval 'lab_exec rw wg show wg0 latest-handshakes | awk "{ exit !(\$2 > 0) }"'
	rw_down
}
if [ -x "$WG_GO" ]; then
	rw_scenario wireguard-go env WG_PROCESS_FOREGROUND=1 "$WG_GO" wg0
else
	nok "b: wireguard-go not found at $WG_GO (scripts/setup.sh)"
fi
if [ -x "$BORINGTUN" ]; then
	rw_scenario boringtun "$BORINGTUN" -f --disable-drop-privileges -t 2 -l "$LAB_DIR/boringtun.out" wg0
else
	nok "b: boringtun-cli not found at $BORINGTUN (scripts/setup.sh)"
fi
check "b: gwa rx_bytes from roadwarrior > 1 MB" tel_gt "$GWA" peers peer1.rx_bytes 1000000

info "gwa drops at the end: $(nonzero_drops "$GWA")"
info "gwb drops at the end: $(nonzero_drops "$GWB")"
gw_alive() { ip netns pids "$(lab_ns "$1")" | xargs -r ps -o comm= -p | grep -qx tunlessd; }
check "gwa tunlessd still running" gw_alive gwa
check "gwb tunlessd still running" gw_alive gwb
finish
