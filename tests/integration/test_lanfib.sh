#!/usr/bin/env bash
# Gateway mode, LAN next hops: gwb forwards decrypted traffic by the kernel's routes of its
# LAN interface, with MACs keyed by next hop, not by destination (lab topology b):
#
#   client ── gwa (tunless) ══ WAN ══ gwb (tunless) lan-b 10.2.0.1 ── server eth0 10.2.0.2
#                                      route 10.200.0.0/16 via 10.2.0.2      (a LAN router that
#                                                                              counts what arrives)
#
#   1  one UDP datagram to each of N (>= 50 000) distinct destinations in 10.200.0.0/16,
#      twice: >= 99 % of round 2 reaches the router (eth0 rx_packets of server), no
#      no_neighbour / neigh_hold_overflow in round 2, and gwb's RSS, its netlink requests
#      and the netlink notifications it read stay flat between the rounds
#   2  a route added in gwb's kernel (10.201.0.0/16 via 10.2.0.2) carries traffic 1 s later;
#      before, and 1 s after it is deleted, the datagrams count lan_no_route
#   3  the first ping to a LAN host gwb never talked to is answered (held while the kernel
#      resolves it, not dropped), and no_neighbour does not move
#   5  a peer endpoint changed through the WireGuard UAPI (wg set ... endpoint) on gwa: the
#      first ping after it waits for the new next hop's MAC instead of counting no_neighbour
#   6  datagrams to a LAN address where no host answers are held, then counted
#      no_neighbour, and gwb's kernel keeps no neighbour entry for it afterwards
#   4  conservation stays exact on both gateways (held packets are accounted)
# Needs root. Env: TUNLESS_BUILD (meson build dir), LANFIB_N (destinations, default 50000).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lab.sh
. "$HERE/lab.sh"

TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
TEL=$ROOT/scripts/tl-telemetry
N=${LANFIB_N:-50000}
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

[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root"; exit 77; }
[ -x "$TUNLESSD" ] || { echo "1..0 # SKIP no $TUNLESSD (build first)"; exit 77; }
for t in ethtool python3 wg; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t missing"; exit 77; }
done

P=tf$$
lab_init "$P"
GWA=${P}a
GWB=${P}b
sed -e "s/^name: gwa\$/name: $GWA/" \
	-e 's|allowed_ips: \[10.2.0.0/24, fd02::/64\]|allowed_ips: [10.2.0.0/24, fd02::/64, 10.200.0.0/16, 10.201.0.0/16]|' \
	"$ROOT/configs/gateway-a.yaml" >"$LAB_DIR/gateway-a.yaml"
sed "s/^name: gwb\$/name: $GWB/" "$ROOT/configs/gateway-b.yaml" >"$LAB_DIR/gateway-b.yaml"
grep -q '10.200.0.0/16' "$LAB_DIR/gateway-a.yaml" || lab_die "allowed_ips not extended in the config"

lab_gateway
for x in client:eth0 server:eth0 gwa:wan-a gwb:wan-b; do
	lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx off >/dev/null || lab_die "ethtool $x"
done

dump() { local f; for f in "$LAB_DIR"/*.log; do printf '# ---- %s\n' "${f##*/}"; tail -n 30 "$f" | sed 's/^/#   /'; done; }
finish() {
	[ "$FAIL" -eq 0 ] || dump
	printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	[ "$FAIL" -eq 0 ]
	exit $?
}

tel() { "$TEL" --get "$3" "$1" "/tunless/$2" 2>/dev/null; }
drop() { tel "$1" drops "$2"; }
rx_router() { lab_nsexec server cat /sys/class/net/eth0/statistics/rx_packets; }
gwb_pid() { ip netns pids "$(lab_ns gwb)" | xargs -r ps -o pid=,comm= -p | awk '$2 == "tunlessd" { print $1 }'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$(gwb_pid)/status"; }
# rx_settled: the router's counter once it stopped moving (the tunnel drained)
rx_settled() {
	local a b i
	a=$(rx_router)
	for i in $(seq 1 40); do
		sleep 0.5
		b=$(rx_router)
		[ "$a" = "$b" ] && break
		a=$b
	done
	printf '%s\n' "$a"
}
# send <first-octets> <count>: one UDP datagram to each of <count> addresses <first-octets>.x.y,
# paced (20 000/s) so that the tunnel's queues never fill: the test is about next hops.
send() {
	lab_exec client python3 - "$1" "$2" <<'EOF'
import socket, sys, time
net, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t0 = time.monotonic()
for i in range(n):
    h = i + 1
    s.sendto(b"lanfib", (f"{net}.{(h >> 8) & 255}.{h & 255}", 9))
    if i % 200 == 199:
        ahead = (i + 1) / 20000 - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
EOF
}

lab_bg gwa "$LAB_DIR/gwa.log" "$TUNLESSD" -c "$LAB_DIR/gateway-a.yaml"
lab_bg gwb "$LAB_DIR/gwb.log" "$TUNLESSD" -c "$LAB_DIR/gateway-b.yaml"
check "gwa up" lab_wait_for 30 grep -q ': up:' "$LAB_DIR/gwa.log"
check "gwb up" lab_wait_for 30 grep -q ': up:' "$LAB_DIR/gwb.log"
check "tunnel: client -> server answers" lab_wait_ping client 10.2.0.2 20
[ "$FAIL" -eq 0 ] || finish

# ---- 1: many destinations behind one LAN router ----------------------------------------------
lab_nsexec gwb ip route add 10.200.0.0/16 via 10.2.0.2 dev lan-b
check "1: gwb mirrors the kernel route via 10.2.0.2 (one IPv4 gateway)" \
	lab_wait_for 5 sh -c "[ \"\$('$TEL' --get gateways4 '$GWB' /tunless/lanfib)\" = 1 ]"

round() { # round <label>: sends, prints "<arrived>"
	local r0 r1
	r0=$(rx_router)
	send 10.200 "$N"
	r1=$(rx_settled)
	printf '%s\n' $((r1 - r0))
}
got1=$(round 1)
rss1=$(rss_kb)
req1=$(tel "$GWB" lanfib netlink_requests)
ev1=$(tel "$GWB" lanfib events)
nn1=$(drop "$GWB" no_neighbour)
ho1=$(drop "$GWB" neigh_hold_overflow)
info "round 1: $got1 of $N datagrams reached the router; gwb RSS ${rss1} kB, netlink requests $req1, events $ev1"
got2=$(round 2)
rss2=$(rss_kb)
req2=$(tel "$GWB" lanfib netlink_requests)
ev2=$(tel "$GWB" lanfib events)
nn2=$(drop "$GWB" no_neighbour)
ho2=$(drop "$GWB" neigh_hold_overflow)
info "round 2: $got2 of $N datagrams reached the router; gwb RSS ${rss2} kB, netlink requests $req2, events $ev2"
info "gwb lanfib: $("$TEL" "$GWB" /tunless/lanfib 2>/dev/null | tr -d '\n ')"
check "1: round 2: >= 99 % of $N destinations reached the router ($got2)" \
	test "${got2:-0}" -ge $((N * 99 / 100))
check "1: round 2: no no_neighbour drops (${nn1:-?} -> ${nn2:-?})" test -n "$nn1" -a "$nn1" = "$nn2"
check "1: round 2: no neigh_hold_overflow drops (${ho1:-?} -> ${ho2:-?})" test -n "$ho1" -a "$ho1" = "$ho2"
check "1: gwb RSS flat between the rounds (${rss1:-?} -> ${rss2:-?} kB, < 2 MB growth)" \
	test -n "$rss1" -a -n "$rss2" -a $((${rss2:-0} - ${rss1:-0})) -lt 2048
check "1: gwb netlink requests flat between the rounds (${req1:-?} -> ${req2:-?}, <= 2 more)" \
	test -n "$req1" -a -n "$req2" -a $((${req2:-0} - ${req1:-0})) -le 2
check "1: gwb netlink notifications flat between the rounds (${ev1:-?} -> ${ev2:-?}, <= 20 more)" \
	test -n "$ev1" -a -n "$ev2" -a $((${ev2:-0} - ${ev1:-0})) -le 20
check "1: gwb neighbour table holds next hops, not destinations (<= 8 entries)" \
	test "$(tel "$GWB" lanfib neighbours)" -le 8

# ---- 2: a route added or deleted in the kernel takes effect within 1 s -----------------------
nr0=$(drop "$GWB" lan_no_route)
r0=$(rx_router)
send 10.201 200
r1=$(rx_settled)
nr1=$(drop "$GWB" lan_no_route)
info "2: before the route: $((r1 - r0)) arrived, lan_no_route $nr0 -> $nr1"
check "2: before the route, 10.201.0.0/16 counts lan_no_route (200) and nothing arrives" \
	test $((nr1 - nr0)) -eq 200 -a $((r1 - r0)) -lt 10
lab_nsexec gwb ip route add 10.201.0.0/16 via 10.2.0.2 dev lan-b
sleep 1
r0=$(rx_router)
send 10.201 200
r1=$(rx_settled)
info "2: 1 s after ip route add: $((r1 - r0)) of 200 arrived"
check "2: 1 s after 'ip route add 10.201.0.0/16 via 10.2.0.2', >= 198 of 200 arrive" test $((r1 - r0)) -ge 198
lab_nsexec gwb ip route del 10.201.0.0/16 via 10.2.0.2 dev lan-b
sleep 1
nr0=$(drop "$GWB" lan_no_route)
send 10.201 200
rx_settled >/dev/null
nr1=$(drop "$GWB" lan_no_route)
check "2: 1 s after 'ip route del', the 200 datagrams count lan_no_route ($((nr1 - nr0)))" test $((nr1 - nr0)) -eq 200

# ---- 3: first packet to a fresh LAN host -------------------------------------------------------
lab_nsexec server ip addr add 10.2.0.9/24 dev eth0
nn0=$(drop "$GWB" no_neighbour)
check "3: the first ping to never-seen 10.2.0.9 is answered (held while resolving)" \
	lab_exec client ping -c 1 -W 3 -q 10.2.0.9
check "3: ... and counted no no_neighbour" test "$(drop "$GWB" no_neighbour)" = "$nn0"
lab_nsexec server ip -6 addr add fd02::9/64 dev eth0 nodad
check "3: the first ping to never-seen fd02::9 is answered" lab_exec client ping -c 1 -W 3 -q fd02::9

# ---- 6: a LAN address where no host answers ------------------------------------------------------
nn0=$(drop "$GWB" no_neighbour)
lab_exec client python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    s.sendto(b"nobody", ("10.2.0.99", 9))'
nobody_gone() { [ -z "$(lab_nsexec gwb ip neigh show 10.2.0.99 dev lan-b)" ]; }
check "6: datagrams to 10.2.0.99 (no host) are held, then given up as no_neighbour (3)" \
	lab_wait_for 15 sh -c "[ \$(( \$('$TEL' --get no_neighbour '$GWB' /tunless/drops) - $nn0 )) -eq 3 ]"
check "6: gwb's kernel keeps no entry for 10.2.0.99 once it failed" lab_wait_for 15 nobody_gone
info "6: gwb neighbours on lan-b: $(lab_nsexec gwb ip neigh show dev lan-b | tr '\n' ';')"

# ---- 5: a peer endpoint changed through UAPI: packets wait for its next hop's MAC ------------
# gwa's kernel forgets its WAN neighbours, so that resolving the new endpoint takes a while.
GWB_PUB=jwvLVZNBEOjlezHaE9TcIWeGdLxHEtjl+blkivUaeR8=
en0=$(drop "$GWA" no_neighbour)
lab_nsexec gwa ip -6 neigh flush dev wan-a
check "5: gwa: wg set peer gwb endpoint [fd99::2]:51820" lab_exec gwa wg set "$GWA" peer "$GWB_PUB" endpoint "[fd99::2]:51820"
check "5: the first ping right after it is answered (held while the endpoint resolves)" \
	lab_exec client ping -c 1 -W 3 -q 10.2.0.2
check "5: ... and gwa counted no no_neighbour" test "$(drop "$GWA" no_neighbour)" = "$en0"
check "5: gwa sends to the new endpoint" \
	eval '[[ $("$TEL" --get peer0.endpoint "$GWA" /tunless/peers) == "[fd99::2]:51820" ]]'

# ---- 4: conservation ---------------------------------------------------------------------------
balance_zero() {
	"$TEL" "$1" /tunless/conservation | python3 -c '
import json, sys
b = json.load(sys.stdin)
sys.exit(1 if any(v["balance"] != 0 for v in b.values()) else 0)'
}
check "4: gwa conservation exact on both ports once quiet" lab_wait_for 10 balance_zero "$GWA"
check "4: gwb conservation exact on both ports once quiet" lab_wait_for 10 balance_zero "$GWB"
info "gwb drops: $("$TEL" "$GWB" /tunless/drops | python3 -c 'import json,sys; print({k: v for k, v in json.load(sys.stdin).items() if v})')"
finish
