#!/usr/bin/env bash
# Jumbo frames in host mode: two tunlessd with mtu 9000 on host mode's default port kinds (on a
# veth: udp WAN, packet LAN), WAN veths of MTU 9100 (lab.sh, topology (a)):
#
#   ${P}-a                                          ${P}-b
#   tunlessd (configs/host-a.yaml, mtu 9000)        tunlessd (configs/host-b.yaml, mtu 9000)
#     host veth ti<pid>a 10.77.0.1 (MTU 9000)         host veth 10.77.0.2 (MTU 9000)
#     WAN veth-a 10.99.0.1 (MTU 9100)  <──veth──>  veth-b 10.99.0.2 (MTU 9100)
#
# Checks: both come up with mtu 9000 and their host veth has MTU 9000; a 9000-byte inner
# packet (ping -s 8972 with DF) crosses both ways; TCP (iperf3, the hosts' MSS about 8 940,
# their TSO packets split by the packet port into 9000-byte segments) crosses both ways;
# nothing dropped under any reason, no port's rx error, both stop cleanly.
#
# Needs root, $TUNLESS_BUILD/src/daemon/tunlessd, iperf3, python3.
# Output: "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=jb$$
A=$HL_NAME_A
B=$HL_NAME_B

hl_need_bins "$HL_TUNLESSD"
hl_need_cmds iperf3 python3 ping
trap 'hl_end_lab KILL' EXIT

nonzero_drops() { hl_tel "$1" /tunless/drops | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%d" % kv for kv in d.items() if kv[1]))'; }
no_drops() {
	local d
	d=$(nonzero_drops "$1") || { echo "cannot read /tunless/drops of $1"; return 1; }
	[ -z "$d" ] || { echo "drops: $d"; return 1; }
}
rx_errors_zero() {
	local p
	for p in wan lan; do
		[ "$(hl_tel "$1" /tunless/ports --get "$p.ethdev_rx_errors")" = 0 ] || return 1
	done
}
link_mtu() { lab_exec "$1" ip -o link show "$2" | grep -q "mtu $3 "; }
big_ping() { lab_exec "$1" ping -c 3 -i 0.2 -W 2 -q -M do -s 8972 "$2"; }

hl_host_lab "$P"
lab_exec a ip link set veth-a mtu 9100
lab_exec b ip link set veth-b mtu 9100
for s in a b; do
	hl_config "$LAB_DIR/$s.yaml" "host-$s"
	sed -i -e 's/^mtu: .*/mtu: 9000/' "$LAB_DIR/$s.yaml"
done
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log" ||
	! hl_tunless_start b "$LAB_DIR/b.yaml" "$LAB_DIR/tunless-b.log"; then
	hl_nok "both tunlessd start with mtu 9000"
	hl_finish
	exit
fi
hl_ok "both tunlessd start with mtu 9000"
hl_check "a: device mtu 9000" test "$(hl_tel "$A" /tunless/device --get mtu)" = 9000
hl_check "a: host veth $A has MTU 9000" link_mtu a "$A" 9000
hl_check "b: host veth $B has MTU 9000" link_mtu b "$B" 9000
hl_check "first ping a -> b gets through" lab_wait_ping a 10.77.0.2 10
hl_check_out "a 9000-byte packet a -> b and back (ping -s 8972, DF)" big_ping a 10.77.0.2
hl_check_out "a 9000-byte packet b -> a and back (ping -s 8972, DF)" big_ping b 10.77.0.1
hl_check_out "TCP a -> b (iperf3, 3 s)" hl_iperf tcp a b 10.77.0.2
hl_check_out "TCP b -> a (iperf3 -R, 3 s)" hl_iperf tcp a b 10.77.0.2 -R
for n in "$A" "$B"; do
	hl_check_out "$n dropped nothing (every reason 0)" no_drops "$n"
	hl_check "$n: no port counted a receive error" rx_errors_zero "$n"
	hl_tunless_stop "$n" TERM 5
	hl_check "$n exits 0 within 5 s of SIGTERM" test "$HL_TL_RC" = 0
done
hl_finish
