#!/usr/bin/env bash
# Every address of the WAN interface is the gateway's, as it changes under a running tunlessd,
# and replies leave from the address the peer wrote to. A fresh lab (lab.sh, topology (a)):
#
#   ${P}-a                                                ${P}-b
#   tunlessd (configs/host-a.yaml, renamed ti<pid>a,      wireguard-go as wg0 (the road warrior,
#     no endpoint for its peer: it waits to be called)      its endpoint set with `wg set`)
#     host veth ti<pid>a 10.77.0.1 fd77::1                  10.77.0.2 fd77::2
#     WAN veth-a: NO address at start  <──veth──>  veth-b 10.99.0.2/24 fd99::2/64
#
# The WAN port kind is host mode's default on a veth (udp) unless TL_WAN_DRIVER names another
# (wan_addr_xdp: af_xdp). Steps, each under the running daemon:
#   1 no address: tunlessd comes up and says so.
#   2 10.99.0.1 added: the road warrior's handshake and pings through the tunnel work.
#   3 a second address 10.99.0.11: the road warrior writes there; pings work and its endpoint
#     view stays 10.99.0.11 (wireguard-go takes the source of every authenticated packet: a
#     reply from another address of ours would move it).
#   4 10.99.0.11 removed, 10.99.0.1 changed to 10.99.0.21 (a new DHCP lease): the road
#     warrior writes to 10.99.0.21; pings work, its endpoint stays 10.99.0.21.
#   5 IPv6 fd99::1 and fd99::11 added: a new handshake (the road warrior's peer re-added) to
#     [fd99::11]: pings work, the endpoint stays [fd99::11] (the handshake response left from
#     there too); then [fd99::1] likewise; fd99::11 removed: still [fd99::1].
#
# Needs root, $TUNLESS_BUILD/src/daemon/tunlessd, wireguard-go (scripts/setup.sh), wg, ping.
# Output: "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=wa$$
A=$HL_NAME_A

hl_need_bins "$HL_TUNLESSD" "$WG_GO"
hl_need_cmds wg ping ethtool

hl_host_lab "$P"
trap 'hl_end_lab' EXIT
trap 'hl_end_lab; trap - INT; kill -INT $$' INT
trap 'hl_end_lab; trap - TERM; kill -TERM $$' TERM

# The road warrior's view of where tunless is: "ip:port" (or "[ip6]:port").
rw_endpoint() { lab_exec b wg show wg0 endpoints | awk '{ print $2; exit }'; }
rw_set_endpoint() { lab_exec b wg set wg0 peer "$HL_A_PUB" endpoint "$1"; }
# tunlessd published this address set (its log line after each change).
published() { grep -q "wan: veth-a has .*$1\( \|$\)" "$LOG"; }
gone() { tail -n 1 <(grep "wan: veth-a has" "$LOG") | grep -vq "$1\( \|$\)"; }
ping_through() { lab_wait_ping b "$1" "${2:-20}"; }
# pings through the tunnel, then the endpoint view is still where the road warrior wrote
tunnel_from() {
	local ep=$1
	ping_through 10.77.0.1 && hl_ping b 10.77.0.1 >/dev/null && hl_ping b fd77::1 >/dev/null &&
		[ "$(rw_endpoint)" = "$ep" ]
}
check_from() {
	if tunnel_from "$2"; then hl_ok "$1"; else hl_nok "$1 (road warrior's endpoint: $(rw_endpoint))"; fi
}

CFG=$LAB_DIR/a.yaml
LOG=$LAB_DIR/tunless-a.log
hl_config "$CFG"
sed -i -e '/^ *endpoint:/d' "$CFG"         # a road warrior's gateway: it learns the endpoint
hl_note "WAN port kind: ${TL_WAN_DRIVER:-udp, the default on a veth}"

# 1: no address on the WAN interface at start (the IPv6 link-local one is not an endpoint)
lab_exec a ip addr flush dev veth-a scope global
hl_check "1 tunlessd starts on a WAN interface without an address" hl_tunless_start a "$CFG" "$LOG"
hl_check "1 and says it has none" grep -q "wan: veth-a has no address" "$LOG"
hl_check "1 wireguard-go road warrior as wg0, endpoint 10.99.0.1:51820" hl_peer_start b wggo 10.99.0.1:51820

# 2: the first address comes
lab_exec a ip addr add 10.99.0.1/24 dev veth-a
hl_check "2 10.99.0.1 added: published" lab_wait_for 10 published 10.99.0.1
check_from "2 handshake and pings through the tunnel; replies from 10.99.0.1" 10.99.0.1:51820
hl_check "2 tunless has a session" hl_has_session "$A"

# 3: a second address; the road warrior writes to it
lab_exec a ip addr add 10.99.0.11/24 dev veth-a
hl_check "3 10.99.0.11 added: published" lab_wait_for 10 published 10.99.0.11
rw_set_endpoint 10.99.0.11:51820
check_from "3 pings to the second address work; replies from 10.99.0.11" 10.99.0.11:51820

# 4: the second goes, the first changes (a new lease)
lab_exec a ip addr del 10.99.0.11/24 dev veth-a
lab_exec a ip addr del 10.99.0.1/24 dev veth-a
lab_exec a ip addr add 10.99.0.21/24 dev veth-a
hl_check "4 10.99.0.11 and 10.99.0.1 gone, 10.99.0.21 published" \
	lab_wait_for 10 sh -c "grep 'wan: veth-a has' '$LOG' | tail -n 1 | grep -q ': 10.99.0.21$'"
rw_set_endpoint 10.99.0.21:51820
check_from "4 pings to the new address work; replies from 10.99.0.21" 10.99.0.21:51820

# 5: IPv6 addresses; a new handshake to the second one
lab_exec a ip -6 addr add fd99::1/64 dev veth-a nodad
lab_exec a ip -6 addr add fd99::11/64 dev veth-a nodad
hl_check "5 fd99::1 and fd99::11 published" lab_wait_for 10 sh -c "grep -q 'wan: veth-a has 3 .*fd99::11' '$LOG'"
lab_exec b wg set wg0 peer "$HL_A_PUB" remove
lab_exec b wg set wg0 peer "$HL_A_PUB" allowed-ips 10.77.0.1/32,fd77::1/128 endpoint "[fd99::11]:51820"
check_from "5 a new handshake to [fd99::11]: pings work, replies (the response too) from fd99::11" "[fd99::11]:51820"
rw_set_endpoint "[fd99::1]:51820"
check_from "5 to [fd99::1]: replies from fd99::1" "[fd99::1]:51820"
lab_exec a ip -6 addr del fd99::11/64 dev veth-a
hl_check "5 fd99::11 removed: published" lab_wait_for 10 gone fd99::11
check_from "5 still [fd99::1]" "[fd99::1]:51820"

hl_check "tunlessd still running" hl_tl_alive "$A"
hl_finish
