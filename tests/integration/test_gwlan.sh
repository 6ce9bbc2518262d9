#!/usr/bin/env bash
# A gateway's LAN port of the packet kind (ports.lan.driver: packet; src/ctrl/gwlan.c): gwa
# takes its LAN's packets through a tc program on lan-a and a veth pair it owns, with an
# AF_PACKET socket that reads GRO super-packets whole; gwb is an af_xdp LAN gateway. Both WANs
# are the udp kind. The veths as a NIC-backed gateway has them (bench/impl.sh's
# impl_gateway_lab nic): GRO on the gateways' ports and the LAN hosts' eth0, TX offload on.
#
#   ${P}-client          ${P}-gwa (tunless, packet LAN)       ${P}-gwb (tunless)      ${P}-server
#   eth0 10.1.0.2 ── lan-a 10.1.0.1 [tc] ─ gwa-lan/gwa-dp ── wan-a ─ br-wan ─ wan-b   lan-b ── eth0 10.2.0.2
#
# Checks: gwa up with its tc programs on lan-a; ping both ways (v4, v6); the gateway's own
# addresses answered by gwa's kernel after the client forgot its neighbour (ARP, ND passed by
# the tc program); iperf3 TCP both ways; the packet port split GSO packets on the way in and
# merged segments on the way out; with MTU-sized frames from the client (its eth0 without TX
# offload), lan-a's GRO super-packets crossed the pair whole; gwa's kernel forwarded nothing
# (no copy of a steered packet); no drop on either gateway, no redirect without a target,
# nothing dropped on the pair; after a SIGKILL a new gwa removes the left-over pair and tc
# program and works; on stop the tc program and the pair are gone. No timing assertions.
# Needs root.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../../scripts/env.sh
. "$ROOT/scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

[ "$(id -u)" -eq 0 ] || { echo "not ok needs root"; exit 1; }
hl_need_bins "$HL_TUNLESSD"
hl_need_cmds iperf3 ethtool tc python3

P=tw$$
lab_init "$P"
GWA=${P}a
GWB=${P}b
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$GWA /var/run/dpdk/tunless-$GWB"
lab_on_cleanup "hl_end_lab_daemons"
hl_end_lab_daemons() {
	local n
	for n in "${!HL_PID[@]}"; do [ -z "${HL_PID[$n]}" ] || hl_tunless_stop "$n" KILL 2; done
}
sed -e "s/^name: gwa\$/name: $GWA/" -e 's/^\( *wan: {iface: wan-a\)}/\1, driver: udp}/' \
	-e 's/^\( *lan: {iface: lan-a\)}/\1, driver: packet}/' "$ROOT/configs/gateway-a.yaml" >"$LAB_DIR/gwa.yaml"
sed -e "s/^name: gwb\$/name: $GWB/" -e 's/^\( *wan: {iface: wan-b\)}/\1, driver: udp}/' \
	"$ROOT/configs/gateway-b.yaml" >"$LAB_DIR/gwb.yaml"
grep -q 'lan: {iface: lan-a, driver: packet}' "$LAB_DIR/gwa.yaml" || { echo "not ok gwa.yaml: no packet LAN"; exit 1; }

lab_gateway
for x in gwa:lan-a gwa:wan-a gwb:lan-b gwb:wan-b client:eth0 server:eth0; do
	lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" gro on tx on >/dev/null
done
# The tunnel's MTU on the LAN hosts' routes through it: no frag_needed in the drop counts.
lab_nsexec client ip route add 10.2.0.0/24 via 10.1.0.1 mtu 1420
lab_nsexec client ip -6 route add fd02::/64 via fd01::1 mtu 1420
lab_nsexec server ip route add 10.1.0.0/24 via 10.2.0.1 mtu 1420
lab_nsexec server ip -6 route add fd01::/64 via fd02::1 mtu 1420

tc_prog_on() { # tc_prog_on <ns> <dev>: the tunless tc program on dev's ingress
	lab_nsexec "$1" tc filter show dev "$2" ingress | grep -q 'tl_lan_tc_'
}
tc_stat() { hl_tel "$GWA" /tunless/ports --get "lan.tc_$1"; }   # steered, passed, sent, no_target
nonzero_drops() {
	hl_tel "$1" /tunless/drops | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(f"{k}={v}" for k,v in d.items() if v) or "none")'
}
# fwd_count: packets gwa's kernel routed onward or found no route for, IPv4 and IPv6
# (ForwDatagrams, IpExt InNoRoutes, Ip6OutForwDatagrams, Ip6InNoRoutes): a steered packet that
# also reached its stack would be one or the other (gwa has no route to the other LAN)
fwd_count() {
	lab_nsexec gwa sh -c "awk '/^Ip: [0-9]/ { print \$7 }' /proc/net/snmp; awk '/^IpExt: [0-9]/ { print \$2 }' /proc/net/netstat
		awk '\$1 == \"Ip6OutForwDatagrams\" || \$1 == \"Ip6InNoRoutes\" { print \$2 }' /proc/net/snmp6" |
		awk '{ s += $1 } END { print s + 0 }'
}
pair_tx_dropped() { # TX drops of the pair's kernel end (a redirect the veth could not pass on)
	lab_nsexec gwa cat "/sys/class/net/$GWA-lan/statistics/tx_dropped" "/sys/class/net/$GWA-dp/statistics/tx_dropped" |
		awk '{ s += $1 } END { print s + 0 }'
}
ping_n() { lab_exec "$1" ping -q -c "${3:-3}" -i 0.2 -W 2 "$2" | grep -q " ${3:-3} received"; }

# ---- start ------------------------------------------------------------------------------------
hl_check "gwa: tunlessd up with driver: packet on lan-a" hl_tunless_start gwa "$LAB_DIR/gwa.yaml" "$LAB_DIR/gwa.log"
hl_check "gwb: tunlessd up (af_xdp LAN)" hl_tunless_start gwb "$LAB_DIR/gwb.yaml" "$LAB_DIR/gwb.log"
if [ "$HL_FAIL" -ne 0 ]; then hl_end_lab_daemons; hl_finish; exit 1; fi
hl_check "gwa: tc program on lan-a's ingress" tc_prog_on gwa lan-a
hl_check "gwa: tc program on $GWA-lan's ingress" tc_prog_on gwa "$GWA-lan"
hl_check "gwa: the port is lan-a for the stats" test "$(hl_tel "$GWA" /tunless/ports --get lan.iface)" = lan-a
FWD0=$(fwd_count)

# ---- ping, ARP, ND ----------------------------------------------------------------------------
hl_check "client -> server 10.2.0.2 answers (first handshake)" lab_wait_ping client 10.2.0.2 20
hl_check "ping client -> 10.2.0.2, 5/5" ping_n client 10.2.0.2 5
hl_check "ping client -> fd02::2, 5/5" ping_n client fd02::2 5
hl_check "ping server -> 10.1.0.2, 5/5" ping_n server 10.1.0.2 5
hl_check "ping server -> fd01::2, 5/5" ping_n server fd01::2 5
PASSED0=$(tc_stat passed)
lab_nsexec client ip neigh flush dev eth0
hl_check "client forgot gwa's lan-a (neighbours flushed)" \
	sh -c "! ip netns exec $(lab_ns client) ip neigh show dev eth0 | grep -q ."
hl_check "ping client -> gwa's own 10.1.0.1 (ARP answered by gwa's kernel)" ping_n client 10.1.0.1 3
hl_check "ping client -> gwa's own fd01::1 (ND answered by gwa's kernel)" ping_n client fd01::1 3
knows_lan_a() {
	local l
	l=$(lab_nsexec client ip neigh show 10.1.0.1 dev eth0)
	echo "$l"
	grep -qi "lladdr $(lab_nsexec gwa cat /sys/class/net/lan-a/address)" <<<"$l"
}
passed_grew() {
	local p
	p=$(tc_stat passed)
	echo "passed $PASSED0 -> $p"
	[ "${p:-0}" -gt "${PASSED0:-0}" ]
}
hl_check_out "client learnt lan-a's MAC by ARP" knows_lan_a
hl_check_out "gwa's tc program passed them to the kernel (passed grew)" passed_grew

# ---- TCP both ways ----------------------------------------------------------------------------
RX0=$(hl_tel "$GWA" /tunless/ports --get lan.gso_rx)
TX0=$(hl_tel "$GWA" /tunless/ports --get lan.gso_tx)
hl_check_out "iperf3 TCP client -> server 10.2.0.2" hl_iperf tcp client server 10.2.0.2
hl_check_out "iperf3 TCP server 10.2.0.2 -> client (-R)" hl_iperf tcp client server 10.2.0.2 -R
hl_check_out "iperf3 TCP client -> server fd02::2" hl_iperf tcp client server fd02::2
RX1=$(hl_tel "$GWA" /tunless/ports --get lan.gso_rx)
TX1=$(hl_tel "$GWA" /tunless/ports --get lan.gso_tx)
hl_note "gwa lan: gso_rx (GSO packets split) $RX0 -> $RX1, gso_tx (segments merged) $TX0 -> $TX1"
hl_check "gwa's packet port split GSO packets from the LAN (gso_rx grew)" test "${RX1:-0}" -gt "${RX0:-0}"
hl_check "gwa's packet port merged segments into GSO packets to the LAN (gso_tx grew)" test "${TX1:-0}" -gt "${TX0:-0}"
tc_counts() {
	local st sn nt
	st=$(tc_stat steered) sn=$(tc_stat sent) nt=$(tc_stat no_target)
	echo "steered $st sent $sn no_target $nt"
	[ "${st:-0}" -gt 0 ] && [ "${sn:-0}" -gt 0 ] && [ "$nt" = 0 ]
}
no_forward() {
	local f
	f=$(fwd_count)
	echo "forwarded or unroutable $FWD0 -> $f"
	[ "$f" = "$FWD0" ]
}
no_pair_drop() {
	local d
	d=$(pair_tx_dropped)
	echo "tx_dropped $d"
	[ "$d" = 0 ]
}
no_drop() {
	local d
	d=$(nonzero_drops "$1")
	echo "$d"
	[ "$d" = none ]
}
# MTU-sized frames from the LAN, as from a wire (the client's eth0 without TX offload, as
# bench/impl.sh's nic lab has it): lan-a's GRO merges them into super-packets, many of them
# with a fragment list; each must cross the pair whole, one packet out of gwa-lan per packet
# the tc program steered (the kernel splits a packet the pair's end cannot take whole).
pair_tx_packets() { lab_nsexec gwa cat "/sys/class/net/$GWA-lan/statistics/tx_packets"; }
lab_nsexec client ethtool -K eth0 tx off >/dev/null
ST0=$(tc_stat steered) PT0=$(pair_tx_packets) RX2=$(hl_tel "$GWA" /tunless/ports --get lan.gso_rx)
hl_check_out "iperf3 TCP client -> server 10.2.0.2, MTU-sized frames from the client" hl_iperf tcp client server 10.2.0.2
ST1=$(tc_stat steered) PT1=$(pair_tx_packets) RX3=$(hl_tel "$GWA" /tunless/ports --get lan.gso_rx)
lab_nsexec client ethtool -K eth0 tx on >/dev/null
pair_whole() {
	echo "steered $((ST1 - ST0)), $GWA-lan sent $((PT1 - PT0)), GSO packets split by the port $((RX3 - RX2))"
	[ $((RX3 - RX2)) -gt 0 ] && [ $((PT1 - PT0)) -eq $((ST1 - ST0)) ]
}
hl_check_out "lan-a's GRO super-packets crossed the pair whole (as many sent by $GWA-lan as steered)" pair_whole
hl_check_out "gwa's tc counters: steered and sent, no redirect without a target" tc_counts
hl_check_out "gwa's kernel routed none of the steered packets (forwarded or without a route: unchanged)" no_forward
hl_check_out "nothing dropped on gwa's pair (tx_dropped of both ends)" no_pair_drop
hl_check_out "gwa: no drop" no_drop "$GWA"
hl_check_out "gwb: no drop" no_drop "$GWB"

# ---- a crash, a restart, a stop ---------------------------------------------------------------
hl_check "gwa: SIGKILL" hl_tunless_stop "$GWA" KILL 5
hl_check "after the crash, the pair $GWA-lan is left over" lab_nsexec gwa ip link show "$GWA-lan"
hl_check "gwa: tunlessd up again" hl_tunless_start gwa "$LAB_DIR/gwa.yaml" "$LAB_DIR/gwa2.log"
hl_check "gwa: it removed the left-over pair" grep -q "removed $GWA-lan left over" "$LAB_DIR/gwa2.log"
hl_check "gwa: it removed the left-over tc program on lan-a" grep -q 'removed a tunless tc program left over on lan-a' "$LAB_DIR/gwa2.log"
hl_check "ping client -> 10.2.0.2 after the restart" lab_wait_ping client 10.2.0.2 20
hl_check "ping server -> 10.1.0.2 after the restart, 3/3" ping_n server 10.1.0.2 3
hl_check "gwa: SIGTERM, exit 0" eval 'hl_tunless_stop "$GWA" TERM 10 && [ "$HL_TL_RC" = 0 ]'
hl_check "after the stop: no tc program on lan-a" eval '! tc_prog_on gwa lan-a'
hl_check "after the stop: no pair $GWA-lan" eval "! lab_nsexec gwa ip link show $GWA-lan"
hl_check "after the stop: ping gwa's own 10.1.0.1 still answered" ping_n client 10.1.0.1 3

hl_end_lab_daemons
hl_finish
