#!/bin/bash
# Kernel helpers of the control plane (src/kernel/netlink.c, src/kernel/xdp.c) and the XDP
# steering programs (bpf/) on a real veth pair, driven through kernel_driver.
#
#   ns tlk<pid>-a                                  ns tlk<pid>-b
#   ka 10.77.0.1/24 fd77::1/64  <────── veth ──────>  kb 10.77.0.2/24 fd77::2/64
#   (created by tl_nl_veth_create in -a, kb moved)    XDP: tl_wan (its address maps) / tl_lan / foreign_pass
#   routes 10.88.0.0/16, fd88::/64 dev ka             UDP listener on 51820 (python3)
#   10.99.0.0/24 via 10.77.0.2 (LAN steering)
#
# usage: test_kernel.sh <kernel_driver> <bpf build dir> <foreign_pass.bpf.o>
set -u
DRV=${1:?kernel_driver}; BPFDIR=${2:?bpf dir}; FOREIGN=${3:?foreign object}
NA=tlk$$-a; NB=tlk$$-b
TMP=$(mktemp -d /tmp/tl-kernel.XXXXXX)
PASS=0; FAIL=0

cleanup() {
	[ -n "${LISTENER:-}" ] && kill "$LISTENER" 2>/dev/null
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok()   { PASS=$((PASS + 1)); echo "ok   - $1"; }
bad()  { FAIL=$((FAIL + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && echo "       $2"; }
# check DESC COMMAND...: passes if the command succeeds.
check() { local d=$1; shift; local out; if out=$("$@" 2>&1); then ok "$d"; else bad "$d" "$out"; fi; }
# expect DESC PATTERN COMMAND...: passes if the output matches the extended regex.
expect() {
	local d=$1 pat=$2; shift 2; local out
	out=$("$@" 2>&1)
	if grep -Eq -- "$pat" <<<"$out"; then ok "$d"; else bad "$d" "wanted /$pat/, got: $(tr '\n' ' ' <<<"$out")"; fi
}
A() { ip netns exec "$NA" "$@"; }
B() { ip netns exec "$NB" "$@"; }
DA() { A "$DRV" "$@"; }
DB() { B env TUNLESS_BPF_DIR="$BPFDIR" "$DRV" "$@"; }
stat_of() { DB stats kb | sed -n "s/^$1=//p"; }
# wait_for SECONDS COMMAND...: retries every 0.1 s.
wait_for() {
	local n=$(($1 * 10)); shift
	while [ "$n" -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; n=$((n - 1)); done
	return 1
}
# joined COMMAND...: its output on one line.
joined() { "$@" 2>&1 | tr '\n' ' '; }
udp_send() { A bash -c "echo $3 > /dev/udp/$1/$2"; }

ip netns add "$NA" && ip netns add "$NB" || { echo "cannot create namespaces"; exit 1; }
A ip link set lo up; B ip link set lo up

# ---- links ----
check "veth_create ka/kb with 2 queues" DA veth-create ka kb 2
expect "veth_create refuses an existing name" "File exists" DA veth-create ka kc 1
expect "both ends have 2 RX queues" "^2 2$" A bash -c 'echo $(ls -d /sys/class/net/ka/queues/rx-* | wc -l) $(ls -d /sys/class/net/kb/queues/tx-* | wc -l)'
A ip link set kb netns "$NB"
check "link_set ka up, mtu 1400" DA link-set ka 1 1400 -1
check "link_set kb up" DB link-set kb 1 0 -1
expect "link_info reports mtu and ifindex" "mtu=1400" DA link-info ka
expect "link_info reports the MAC" "mac=([0-9a-f]{2}:){5}[0-9a-f]{2}" DA link-info ka
MAC_B=$(DB link-info kb | sed -n 's/^mac=//p')
expect "kernel agrees on the MAC" "$MAC_B" B ip link show kb
check "link_set noarp on" DA link-set ka -1 0 1
expect "NOARP flag set" "NOARP" A ip link show ka
check "link_set noarp off, keep the rest" DA link-set ka -1 0 0
expect "NOARP cleared, still UP, mtu kept" "<BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400" A ip link show ka
expect "link_delete absent link is -ENODEV" "rc=-19" DA link-del nosuch0

# ---- addresses and routes ----
check "addr_add v4" DA addr-add ka 10.77.0.1/24
check "addr_add v6 (nodad)" DA addr-add ka fd77::1/64
check "addr_add again is fine" DA addr-add ka 10.77.0.1/24
check "addr_add v4 on kb" DB addr-add kb 10.77.0.2/24
check "addr_add v6 on kb" DB addr-add kb fd77::2/64
expect "v6 address is not tentative" "fd77::1/64 scope global nodad" A ip -6 addr show dev ka
check "route_add v4 (host bits cleared)" DA route-add ka 10.88.1.2/16
expect "route is proto static, dev ka" "10.88.0.0/16 dev ka proto static scope link" A ip route show 10.88.0.0/16
check "route_add existing is success" DA route-add ka 10.88.0.0/16
check "route_add v6" DA route-add ka fd88::/64
expect "v6 route present" "fd88::/64 dev ka proto static" A ip -6 route show fd88::/64
expect "route_get on-link v4" "oif=ka gw=none" joined DA route-get 10.88.3.4
A ip route add 10.66.0.0/16 via 10.77.0.2
A ip -6 route add fd66::/64 via fd77::2
expect "route_get via gateway v4" "gw=10.77.0.2" DA route-get 10.66.0.9
expect "route_get via gateway v6" "gw=fd77::2" DA route-get fd66::9
expect "route_get unreachable" "unreachable" DA route-get 192.0.2.1
check "route_del v4" DA route-del ka 10.88.0.0/16
expect "route gone" "^$" A ip route show 10.88.0.0/16
expect "route_del absent is -ESRCH" "rc=-3" DA route-del ka 10.88.0.0/16
check "route_del v6" DA route-del ka fd88::/64

# ---- neighbours ----
expect "neigh_get before resolution: none" "rc=0" DA neigh-get ka 10.77.0.2
check "ping kb (v4)" A ping -c1 -W2 10.77.0.2
expect "neigh_get after ping returns kb's MAC" "mac=$MAC_B" DA neigh-get ka 10.77.0.2
expect "neigh_resolve v6 is managed" "rc=1" DA neigh-resolve ka fd77::2
check "managed v6 entry resolves on its own" wait_for 15 bash -c "ip netns exec $NA $DRV neigh-get ka fd77::2 | grep -q mac=$MAC_B"
expect "kernel lists it as managed" "managed" A ip -6 neigh show fd77::2 dev ka
expect "neigh_resolve on a resolved entry keeps it" "rc=1" DA neigh-resolve ka 10.77.0.2
expect "... and it stays usable" "mac=$MAC_B" DA neigh-get ka 10.77.0.2
expect "neigh_del_managed v6" "rc=0" DA neigh-del ka fd77::2
expect "entry gone" "rc=0$" DA neigh-get ka fd77::2
expect "neigh_del_managed absent is -ENOENT" "rc=-2" DA neigh-del ka fd77::2
expect "neigh_resolve of a silent address is accepted" "rc=1" DA neigh-resolve ka 10.77.0.99
check "... and never yields a MAC" bash -c "sleep 1.5; ip netns exec $NA $DRV neigh-get ka 10.77.0.99 | grep -qx rc=0"
DA neigh-del ka 10.77.0.99 >/dev/null 2>&1

# ---- XDP: object lookup ----
expect "object path from TUNLESS_BPF_DIR" "rc=0" DB object-path tl_wan.bpf.o
expect "object path from the build dir" "rc=0.*path=.*/bpf/tl_lan.bpf.o" joined "$DRV" object-path tl_lan.bpf.o
expect "missing object is -ENOENT" "rc=-2" DB object-path nosuch.bpf.o

# ---- XDP: WAN program, as net_af_xdp attaches it ----
check "attach tl_wan (verifier accepts it)" DB attach kb "$BPFDIR/tl_wan.bpf.o"
expect "second attach refused (UPDATE_IF_NOEXIST)" "rc=-16" DB attach kb "$BPFDIR/tl_wan.bpf.o"
expect "maps_open: tl_wan has cfg and stats, no routes" "cfg=1 routes4=0 routes6=0 stats=1" joined DB maps kb
expect "addrmaps_open: tl_wan has its address maps" "^$" DB xaddr-list kb
check "set_cfg listen port 51820" DB cfg kb 51820 0
ip netns exec "$NB" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::", 51820))
with open(sys.argv[1], "w", buffering=1) as f:
    while True:
        d, a = s.recvfrom(2048); f.write(d.decode(errors="replace").strip() + "\n")
' "$TMP/udp.log" >/dev/null 2>&1 &
LISTENER=$!     # ip netns exec execs python3: this is the listener itself
# python3 may take seconds to start on a loaded machine: send only once the port is bound
check "listener bound on 51820" wait_for 10 bash -c "ip netns exec $NB ss -Hlun 'sport = :51820' | grep -q 51820"
N0=$(stat_of no_socket); P0=$(stat_of passed)
expect "address maps start empty" "^$" DB xaddr-list kb
udp_send 10.77.0.2 51820 noaddr4
udp_send fd77::2 51820 noaddr6
check "UDP to 51820 at an address not in the maps reaches the kernel (v4)" wait_for 3 grep -qx noaddr4 "$TMP/udp.log"
check "... and v6" wait_for 3 grep -qx noaddr6 "$TMP/udp.log"
expect "... counted as passed, not steered" "^$N0$" stat_of no_socket
check "... passed count grew by 2" test "$(stat_of passed)" -ge $((P0 + 2))
check "addrmaps_set 10.77.0.2 fd77::2 10.77.0.9" DB xaddr-set kb 10.77.0.2 fd77::2 10.77.0.9
expect "the maps hold the three" "^10.77.0.2 10.77.0.9 fd77::2 $" joined bash -c "ip netns exec $NB $DRV xaddr-list kb | sort"
check "addrmaps_set 10.77.0.2 fd77::2: 10.77.0.9 deleted" DB xaddr-set kb 10.77.0.2 fd77::2
expect "the maps hold the two" "^10.77.0.2 fd77::2 $" joined bash -c "ip netns exec $NB $DRV xaddr-list kb | sort"
N0=$(stat_of no_socket); P0=$(stat_of passed)
udp_send 10.77.0.2 51820 wan4
udp_send fd77::2 51820 wan6
check "UDP to 51820 with no socket still reaches the kernel (v4)" wait_for 3 grep -qx wan4 "$TMP/udp.log"
check "... and v6" wait_for 3 grep -qx wan6 "$TMP/udp.log"
expect "both counted as no_socket (redirect fell back to pass)" "^$((N0 + 2))$" stat_of no_socket
check "addrmaps_set fd77::2 only" DB xaddr-set kb fd77::2
udp_send 10.77.0.2 51820 gone4
check "an address deleted from the maps: passed again" wait_for 3 grep -qx gone4 "$TMP/udp.log"
expect "... not steered" "^$((N0 + 2))$" stat_of no_socket
check "addrmaps_set 10.77.0.2 fd77::2 again" DB xaddr-set kb 10.77.0.2 fd77::2
udp_send 10.77.0.2 9999 other
check "ping through tl_wan" A ping -c1 -W2 10.77.0.2
check "other UDP and ICMP counted as passed" test "$(stat_of passed)" -ge $((P0 + 2))
check "set_cfg listen port 0" DB cfg kb 0 0
udp_send 10.77.0.2 51820 off
check "port 0 steers nothing" wait_for 3 grep -qx off "$TMP/udp.log"
expect "no_socket unchanged" "^$((N0 + 2))$" stat_of no_socket
expect "clear_leftover detaches our program" "rc=1" DB clear kb
expect "nothing attached any more" "^$" bash -c "ip -n $NB link show kb | grep -o 'prog/xdp.*'"
expect "maps_open without a program is an error" "no tunless XDP program" DB maps kb
expect "clear_leftover with nothing attached" "rc=0" DB clear kb

# ---- XDP: LAN program ----
check "attach tl_lan (verifier accepts it)" DB attach kb "$BPFDIR/tl_lan.bpf.o"
expect "maps_open: all four maps" "cfg=1 routes4=1 routes6=1 stats=1" joined DB maps kb
expect "tl_lan has no address maps" "address maps.*absent" DB xaddr-list kb
check "route_add 10.99.0.0/24 -> 7" DB xroute-add kb 10.99.0.0/24 7
check "route_add fd99::/64 -> 8" DB xroute-add kb fd99::1/64 8
expect "trie matches 10.99.0.5" "value=7" DB xroute-lookup kb 10.99.0.5
expect "trie matches fd99::5" "value=8" DB xroute-lookup kb fd99::5
expect "trie misses 10.98.0.5" "value=none" DB xroute-lookup kb 10.98.0.5
A ip route add 10.99.0.0/24 via 10.77.0.2
N0=$(stat_of no_socket); P0=$(stat_of passed)
udp_send 10.99.0.5 9 lan
check "packet to a tunnel route is steered (counted no_socket)" wait_for 3 test "$(stat_of no_socket)" -gt "$N0"
N1=$(stat_of no_socket)
check "ping kb's own address through tl_lan" A ping -c1 -W2 10.77.0.2
check "ping6 kb's own address (ND passes)" A ping -6 -c1 -W2 fd77::2
expect "ordinary traffic not steered" "^$N1$" stat_of no_socket
check "... counted as passed" test "$(stat_of passed)" -gt "$P0"
check "set_cfg redirect-all" DB cfg kb 0 1
A ip neigh flush dev ka
check "ping still works in redirect-all (ARP passes, fallback passes)" A ping -c1 -W2 10.77.0.2
check "... and was steered" test "$(stat_of no_socket)" -gt "$N1"
check "route_del 10.99.0.0/24" DB xroute-del kb 10.99.0.0/24
expect "trie no longer matches" "value=none" DB xroute-lookup kb 10.99.0.5
expect "route_del absent is -ENOENT" "rc=-2" DB xroute-del kb 10.99.0.0/24
expect "stats readable" "redirected=0" DB stats kb
expect "detach removes ours" "rc=1" DB detach kb

# ---- XDP: leftovers in generic mode, foreign programs ----
check "attach tl_wan in generic mode" DB attach kb "$BPFDIR/tl_wan.bpf.o" skb
expect "clear_leftover finds it in generic mode" "rc=1" DB clear kb
check "attach a foreign program" DB attach kb "$FOREIGN"
expect "clear_leftover refuses it" "rc=-16" DB clear kb
expect "... and names it" "foreign XDP program 'foreign_pass'" DB clear kb
expect "detach leaves it alone" "rc=0" DB detach kb
expect "foreign program still attached" "prog/xdp" B ip link show kb
B ip link set dev kb xdp off

# ---- veth XDP requirements (what the daemon must respect) ----
check "ka mtu 9000" DA link-set ka -1 9000 -1
expect "native XDP on kb refused while the peer MTU is too large (-ERANGE)" "rc=-34" DB attach kb "$BPFDIR/tl_wan.bpf.o"
check "ka mtu back to 1500" DA link-set ka -1 1500 -1
check "native XDP attaches again" DB attach kb "$BPFDIR/tl_wan.bpf.o"
expect "... and caps the peer MTU meanwhile" "link_set: Invalid argument" DA link-set ka -1 9000 -1
check "clear it" DB clear kb
B ip link add qa numtxqueues 4 numrxqueues 4 type veth peer qb numtxqueues 1 numrxqueues 1
expect "native XDP needs rx queues >= the peer's tx queues (-ENOSPC)" "rc=-28" DB attach qb "$BPFDIR/tl_wan.bpf.o"
check "... the other direction is fine" DB attach qa "$BPFDIR/tl_wan.bpf.o"
B ip link del qa

# ---- teardown through the library ----
expect "link_delete kb" "rc=0" DB link-del kb
expect "peer ka went with it" "No such device" DA link-info ka

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
