#!/usr/bin/env bash
# Lab sanity: both topologies of lab.sh come up, plain kernel connectivity works (no tunless),
# and everything is gone after cleanup, also when a run is killed.
#
# (a)  ${P}-a veth-a 10.99.0.1 fd99::1 <──> veth-b 10.99.0.2 fd99::2 ${P}-b
# (b)  ${P}-client ─lan-a─ ${P}-gwa ─wan-a─ [${P}-wan br-wan] ─wan-b─ ${P}-gwb ─lan-b─ ${P}-server
#                                              │
#                                          ${P}-rw (10.99.0.3, fd99::3; roams to 10.99.0.13)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lab.sh
. "$HERE/lab.sh"

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); printf 'ok   %s\n' "$*"; }
nok() { FAIL=$((FAIL + 1)); printf 'FAIL %s\n' "$*"; }
check() { # check <description> cmd...
	local d=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$d"; else nok "$d"; fi
}
ping_from() { lab_exec "$1" ping -c 1 -W 2 -q "$2"; }
no_leftovers() { [ -z "$(lab_leftovers "$1")" ]; }

finish() {
	printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	[ "$FAIL" -eq 0 ]
}

P=tl$$
lab_init "$P"

# ---- (a) host pair ---------------------------------------------------------------------------
lab_host_pair
check "(a) a -> b IPv4" lab_wait_ping a 10.99.0.2 5
check "(a) a -> b IPv6" lab_wait_ping a fd99::2 5
check "(a) b -> a IPv4" ping_from b 10.99.0.1
check "(a) b -> a IPv6" ping_from b fd99::1
check "(a) veth-a is in ${P}-a" lab_exec a ip link show veth-a

# private /run/wireguard per namespace
lab_exec a touch /run/wireguard/lab-probe.sock
check "private /run/wireguard: visible in a" lab_exec a test -e /run/wireguard/lab-probe.sock
check "private /run/wireguard: not in b" lab_exec b test ! -e /run/wireguard/lab-probe.sock
check "private /run/wireguard: not on host" test ! -e /run/wireguard/lab-probe.sock

# background processes are tracked and killed
lab_bg a "$LAB_DIR/sleep.log" sleep 300
BG=$LAB_LAST_PID
lab_cleanup
check "(a) cleanup: no ${P}-* namespace left" no_leftovers "$P"
check "(a) cleanup: lab_bg process gone" bash -c "! kill -0 $BG 2>/dev/null"
check "(a) cleanup: idempotent" lab_cleanup

# ---- (b) gateway + road warrior --------------------------------------------------------------
lab_init "$P"
lab_gateway
lab_add_roadwarrior
check "(b) client -> gwa lan IPv4" lab_wait_ping client 10.1.0.1 5
check "(b) client -> gwa lan IPv6" lab_wait_ping client fd01::1 5
check "(b) gwa -> gwb over br-wan IPv4" lab_wait_ping gwa 10.99.0.2 5
check "(b) gwa -> gwb over br-wan IPv6" lab_wait_ping gwa fd99::2 5
check "(b) server -> gwb lan IPv4" ping_from server 10.2.0.1
check "(b) server -> gwb lan IPv6" ping_from server fd02::1
check "(b) no LAN-to-LAN route by default" bash -c "! ip netns exec $P-client ping -c 1 -W 1 -q 10.2.0.2"
check "(b) gwa forwards IPv4" test "$(lab_exec gwa sysctl -n net.ipv4.ip_forward)" = 1
check "(b) gwb forwards IPv6" test "$(lab_exec gwb sysctl -n net.ipv6.conf.all.forwarding)" = 1
lab_gateway_routes
check "(b) client -> server IPv4 (kernel forwarding)" lab_wait_ping client 10.2.0.2 5
check "(b) client -> server IPv6 (kernel forwarding)" lab_wait_ping client fd02::2 5
check "(b) server -> client IPv4" ping_from server 10.1.0.2
check "(b) server -> client IPv6" ping_from server fd01::2
check "(b) rw -> gwa IPv4" lab_wait_ping rw 10.99.0.1 5
check "(b) rw -> gwb IPv6" lab_wait_ping rw fd99::2 5

# roaming: new WAN address, old one gone, still reachable
lab_roam rw 10.99.0.13
lab_roam rw fd99::13
check "(b) roam: rw has 10.99.0.13" bash -c "ip -n $P-rw -4 addr show dev wan-rw | grep -q 'inet 10.99.0.13/24'"
check "(b) roam: old 10.99.0.3 gone" bash -c "! ip -n $P-rw -4 addr show dev wan-rw | grep -q 'inet 10.99.0.3/'"
check "(b) roam: gwa -> rw new IPv4" lab_wait_ping gwa 10.99.0.13 5
check "(b) roam: gwa -> rw new IPv6" lab_wait_ping gwa fd99::13 5
lab_cleanup
check "(b) cleanup: no ${P}-* namespace left" no_leftovers "$P"

# ---- a run that is killed cleans up through its trap ----------------------------------------
K=tk$$
bash -c ". '$HERE/lab.sh'; lab_init $K; lab_gateway; lab_bg gwa /dev/null sleep 300; wait \$LAB_LAST_PID" &
KPID=$!
lab_wait_for 10 bash -c "ip netns list | grep -q '^$K-gwa'"
lab_wait_for 10 bash -c "[ -n \"\$(ip netns pids $K-gwa)\" ]"
kill -TERM "$KPID"
wait "$KPID" 2>/dev/null
check "killed run (SIGTERM): trap removed its namespaces" no_leftovers "$K"
bash -c ". '$HERE/lab.sh'; lab_init $K; lab_host_pair; false" 2>/dev/null
check "failed run (exit 1): trap removed its namespaces" no_leftovers "$K"

trap - EXIT INT TERM
finish
