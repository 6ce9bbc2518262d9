#!/usr/bin/env bash
# A gateway that also routes: UDP to the listen port of ANOTHER host, forwarded through the
# tunless gateway's AF_XDP WAN, is the kernel's to forward; only datagrams to the WAN
# interface's own addresses are tunless's (bpf/tl_wan.bpf.c, its address maps written by
# src/ctrl/wanaddr.c). The gateway lab of lab.sh, with tunless on gwa only:
#
#   ${P}-client  (UDP listener on 51820)    ${P}-gwa (tunless, configs/gateway-a.yaml)
#   eth0 10.1.0.2 fd01::2 ─────────── lan-a 10.1.0.1 fd01::1   wan-a 10.99.0.1 fd99::1 ─┐
#                                                                                   br-wan
#   ${P}-far  wan-far 10.99.0.4 fd99::4 ─────────────────────────────────────────────┤
#     routes 10.1.0.0/24 via 10.99.0.1, fd01::/64 via fd99::1 (plain forwarding)      │
#   ${P}-rw   wan-rw 10.99.0.3 fd99::3, wireguard-go wg0 10.3.0.2 (configs/roadwarrior.conf)
#
#   1 far sends numbered datagrams to 10.1.0.2:51820 and [fd01::2]:51820: every one arrives
#     at the client, tunless counts no not_for_us, the WAN program counted them as passed.
#   2 the road warrior's handshake and pings through the tunnel to 10.1.0.2, to gwa's WAN
#     [fd99::1] and then to 10.99.0.1: steered to the AF_XDP socket (the program's
#     redirected count grows by at least the pings), not through the kernel's slow path.
#     A datagram to gwa's subnet-router anycast address [fd99::] (the kernel's, as wan-a
#     forwards; not an address wan-a lists) is not steered and counts not_for_us.
#   3 the WAN program's address maps hold 10.99.0.1 and fd99::1 (no link-local address); an
#     address added to wan-a is added to them, a removed one removed.
#   4 the forwarded flow again (after the address changes): all arrive, none is not_for_us.
#
# Needs root, $TUNLESS_BUILD (tunlessd, tests/integration/kernel_driver), wireguard-go
# (scripts/setup.sh), wg, python3. Output: "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=wf$$
KD=$TUNLESS_BUILD/tests/integration/kernel_driver
N=20           # datagrams per family and round

hl_need_bins "$HL_TUNLESSD" "$WG_GO" "$KD"
hl_need_cmds wg ping python3

lab_init "$P"
GW=${P}a
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$GW"
trap 'hl_end_lab' EXIT
trap 'hl_end_lab; trap - INT; kill -INT $$' INT
trap 'hl_end_lab; trap - TERM; kill -TERM $$' TERM
lab_gateway
lab_add_roadwarrior
lab_add_roadwarrior far 10.99.0.4 fd99::4
lab_nsexec far ip route add 10.1.0.0/24 via 10.99.0.1
lab_nsexec far ip -6 route add fd01::/64 via fd99::1

CFG=$LAB_DIR/gateway-a.yaml
LOG=$LAB_DIR/tunless-gwa.log
sed "s/^name: gwa\$/name: $GW/" "$TUNLESS_ROOT/configs/gateway-a.yaml" >"$CFG"
# The road warrior starts on gwa's IPv6 address and goes to IPv4 after (step 2), never back:
# wireguard-go 0.0.20250522 reuses a pooled destination whose address an IPv4 send cut to 4
# bytes, so the first IPv6 datagrams after IPv4 ones go to the IPv6 address's first 4 bytes
# and zeros (conn/bind_std.go, StdNetBind.Send), here [fd99::], gwa's subnet-router anycast
# address, which the kernel takes and tunless counts not_for_us (checked below).
grep -v '^Address' "$TUNLESS_ROOT/configs/roadwarrior.conf" |
	sed 's/^Endpoint = 10\.99\.0\.1:51820$/Endpoint = [fd99::1]:51820/' >"$LAB_DIR/rw.conf"

tel_drop() { hl_tel "$GW" /tunless/drops --get "$1"; }
# xdp_stat <name>: a counter of the WAN program of gwa (redirected, passed, no_socket).
xdp_stat() { lab_nsexec gwa "$KD" stats wan-a | sed -n "s/^$1=//p"; }
# The WAN program's own-address maps, one address a line.
xaddrs() { lab_nsexec gwa "$KD" xaddr-list wan-a; }
has_xaddr() { xaddrs | grep -qx "$1"; }
no_xaddr() { xaddrs >/dev/null && ! has_xaddr "$1"; }

# The client's UDP 51820: one line per datagram.
lab_bg client "$LAB_DIR/listener.log" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::", 51820))
with open(sys.argv[1], "w", buffering=1) as f:
    while True:
        d, a = s.recvfrom(2048); f.write(d.decode(errors="replace").strip() + "\n")
' "$LAB_DIR/udp.log"
got() { local n; n=$(grep -c "^$1-" "$LAB_DIR/udp.log" 2>/dev/null); echo "${n:-0}"; }
got_all() { [ "$(got "$1")" -eq "$2" ]; }
# send_round <tag> <v4 dst> <v6 dst>: N datagrams per family from far, port 51820 both ends.
send_round() {
	lab_nsexec far python3 -c '
import socket, sys, time
tag, d4, d6, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for fam, dst in ((socket.AF_INET, d4), (socket.AF_INET6, d6)):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0" if fam == socket.AF_INET else "::", 51820))
    for i in range(n):
        s.sendto(("%s%s-%d" % (tag, "4" if fam == socket.AF_INET else "6", i)).encode(), (dst, 51820))
        time.sleep(0.01)
    s.close()
' "$1" "$2" "$3" "$N"
}

hl_check "gwa: tunlessd up (gateway-a.yaml, AF_XDP on wan-a and lan-a)" hl_tunless_start gwa "$CFG" "$LOG"
hl_check "client: listener bound on UDP 51820" \
	lab_wait_for 10 sh -c "ip netns exec $(lab_ns client) ss -Hlun 'sport = :51820' | grep -q 51820"
[ "$HL_FAIL" -eq 0 ] || { hl_finish; exit 1; }

# ---- 1: a forwarded flow to another host's 51820 ----
NFU0=$(tel_drop not_for_us)
PA0=$(xdp_stat passed)
send_round fwd 10.1.0.2 fd01::2
lab_wait_for 5 sh -c "[ \$(grep -c '^fwd4-' '$LAB_DIR/udp.log') -eq $N ] && [ \$(grep -c '^fwd6-' '$LAB_DIR/udp.log') -eq $N ]"
hl_note "1: the client got $(got fwd4)/$N IPv4 and $(got fwd6)/$N IPv6 datagrams; not_for_us $NFU0 -> $(tel_drop not_for_us); WAN program passed ${PA0:-?} -> $(xdp_stat passed)"
hl_check "1 every forwarded IPv4 datagram to 10.1.0.2:51820 reached the client" got_all fwd4 "$N"
hl_check "1 every forwarded IPv6 datagram to [fd01::2]:51820 reached the client" got_all fwd6 "$N"
hl_check "1 tunless counted none of them as not_for_us" test "$(tel_drop not_for_us)" = 0
hl_check "1 the WAN program passed them to the kernel" test "$(xdp_stat passed)" -ge $((${PA0:-0} + 2 * N))

# ---- 2: the tunnel still works, steered by the WAN program ----
RW_SOCK=$LAB_DIR/$(lab_ns rw)/wireguard/wg0.sock
rw_up() {
	lab_bg rw "$LAB_DIR/wggo.log" env WG_PROCESS_FOREGROUND=1 "$WG_GO" wg0
	lab_wait_for 10 test -S "$RW_SOCK" && lab_wait_for 5 lab_nsexec rw ip link show wg0 &&
		lab_exec rw wg setconf wg0 "$LAB_DIR/rw.conf" &&
		lab_nsexec rw ip addr add 10.3.0.2/32 dev wg0 && lab_nsexec rw ip link set wg0 mtu 1420 up &&
		lab_nsexec rw ip route add 10.1.0.0/24 dev wg0
}
GWA_PUB=$(awk '/^PublicKey/ { print $3 }' "$LAB_DIR/rw.conf")
# steered <what> <endpoint>: the road warrior writes to endpoint; 10 pings through the tunnel
# are answered and the WAN program redirected at least as many datagrams to the socket.
steered() {
	local r0 sp0
	lab_exec rw wg set wg0 peer "$GWA_PUB" endpoint "$2" || return 1
	lab_wait_ping rw 10.1.0.2 20 || return 1
	r0=$(xdp_stat redirected)
	sp0=$(hl_tel "$GW" /tunless/device --get slowpath_rx)
	lab_exec rw ping -c 10 -i 0.1 -W 2 -q 10.1.0.2 | grep -q ' 10 received' || return 1
	echo "$1: redirected ${r0:-?} -> $(xdp_stat redirected), slowpath_rx $sp0 -> $(hl_tel "$GW" /tunless/device --get slowpath_rx), not_for_us $(tel_drop not_for_us)" >>"$LAB_DIR/steered.log"
	[ "$(xdp_stat redirected)" -ge $((${r0:-0} + 10)) ]
}
hl_check "2 wireguard-go road warrior up (configs/roadwarrior.conf)" rw_up
hl_check "2 the road warrior's endpoint is [fd99::1]:51820" grep -qx 'Endpoint = \[fd99::1\]:51820' "$LAB_DIR/rw.conf"
hl_check "2 handshake and pings to 10.1.0.2 through the tunnel via [fd99::1], steered" steered v6 "[fd99::1]:51820"
hl_check "2 ... and via 10.99.0.1, steered" steered v4 10.99.0.1:51820
hl_note "$(tr '\n' ';' <"$LAB_DIR/steered.log")"
hl_check "2 gwa's peer roadwarrior has a session" test "$(hl_tel "$GW" /tunless/peers --get peer1.session)" = 1
# anycast_dropped <not_for_us before> <slowpath_rx before>: each one more.
anycast_dropped() {
	[ "$(tel_drop not_for_us)" -eq $(($1 + 1)) ] &&
		[ "$(hl_tel "$GW" /tunless/device --get slowpath_rx)" -eq $(($2 + 1)) ]
}
NFU_AC=$(tel_drop not_for_us)
SP_AC=$(hl_tel "$GW" /tunless/device --get slowpath_rx)
# gwb forwards as well and holds fd99:: too: far asks gwa only.
lab_nsexec far ip -6 neigh replace fd99:: lladdr "$(lab_nsexec gwa cat /sys/class/net/wan-a/address)" \
	dev wan-far nud permanent
lab_nsexec far python3 -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.sendto(b"anycast", ("fd99::", 51820))
'
hl_check "2 a datagram to gwa's subnet-router anycast [fd99::]:51820: slow path, not_for_us" \
	lab_wait_for 5 anycast_dropped "$NFU_AC" "$SP_AC"
hl_note "2: to [fd99::]: not_for_us $NFU_AC -> $(tel_drop not_for_us), slowpath_rx $SP_AC -> $(hl_tel "$GW" /tunless/device --get slowpath_rx)"

# ---- 3: the address maps follow wan-a's addresses ----
hl_check_out "3 the WAN program's address maps" xaddrs
hl_check "3 hold 10.99.0.1" has_xaddr 10.99.0.1
hl_check "3 hold fd99::1" has_xaddr fd99::1
hl_check "3 hold no link-local address" sh -c "! ip netns exec $(lab_ns gwa) $KD xaddr-list wan-a | grep -q '^fe80:'"
lab_nsexec gwa ip addr add 10.99.0.9/24 dev wan-a
lab_nsexec gwa ip -6 addr add fd99::9/64 dev wan-a nodad
hl_check "3 10.99.0.9 added to wan-a: added to the map" lab_wait_for 10 has_xaddr 10.99.0.9
hl_check "3 fd99::9 added to wan-a: added to the map" lab_wait_for 10 has_xaddr fd99::9
hl_check "3 the road warrior through 10.99.0.9: steered" steered "v4 (added address)" 10.99.0.9:51820
# back to 10.99.0.1 first, as an operator would before taking an address away
hl_check "3 the road warrior back to 10.99.0.1: steered" steered "v4 (back)" 10.99.0.1:51820
lab_nsexec gwa ip addr del 10.99.0.9/24 dev wan-a
lab_nsexec gwa ip -6 addr del fd99::9/64 dev wan-a
hl_check "3 10.99.0.9 removed from wan-a: removed from the map" lab_wait_for 10 no_xaddr 10.99.0.9
hl_check "3 fd99::9 removed from wan-a: removed from the map" lab_wait_for 10 no_xaddr fd99::9
hl_note "3: $(tail -n 1 "$LAB_DIR/steered.log"); after the removal: not_for_us $(tel_drop not_for_us)"
hl_check "3 10.99.0.1 and fd99::1 still there" sh -c "ip netns exec $(lab_ns gwa) $KD xaddr-list wan-a | grep -c '^10.99.0.1$\|^fd99::1$' | grep -qx 2"

# ---- 4: the forwarded flow again ----
NFU1=$(tel_drop not_for_us)
send_round again 10.1.0.2 fd01::2
lab_wait_for 5 sh -c "[ \$(grep -c '^again4-' '$LAB_DIR/udp.log') -eq $N ] && [ \$(grep -c '^again6-' '$LAB_DIR/udp.log') -eq $N ]"
hl_note "4: the client got $(got again4)/$N IPv4 and $(got again6)/$N IPv6 datagrams; not_for_us $NFU1 -> $(tel_drop not_for_us)"
hl_check "4 every forwarded datagram reached the client again (IPv4)" got_all again4 "$N"
hl_check "4 ... and IPv6" got_all again6 "$N"
hl_check "4 tunless counted none of them as not_for_us" test "$(tel_drop not_for_us)" = "$NFU1"

hl_note "drops: $(hl_tel "$GW" /tunless/drops | tr -d ' \n')"
hl_check "tunlessd still running" hl_tl_alive "$GW"
hl_finish
