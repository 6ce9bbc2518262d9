#!/usr/bin/env bash
# WireGuard's timers in host mode against other implementations, over the lab of
# test_host_interop.sh (lab.sh topology (a): tunlessd on side a, the peer as wg0 on side b).
#
# Scenarios
#   1 one-way  wireguard-go and boringtun initiate, then send 45 s of UDP to a sink on tunless's
#              side that answers nothing. tunless sends keepalives (counted on the peer's veth:
#              data messages of 32 bytes from tunless) and no handshake happens during the
#              stream (tunless's completed handshakes and initiations received unchanged).
#   2 vanish   tunless pings wireguard-go every 0.1 s; wg0 of the peer is deleted mid-stream.
#              tunless sends a new initiation KEEPALIVE + REKEY_TIMEOUT (15 s) after the first
#              unanswered packet: asserted within 12..20 s of the peer's disappearance.
#   3 rekey    tunless (initiator) with rekey_after_time 4 s against wireguard-go under 13 s
#              of iperf3 TCP both ways: no key_expired drop (no drop at all), and the completed
#              handshakes are what the rekey interval predicts, all initiated by tunless once.
#
# Needs root, $TUNLESS_BUILD/src/daemon/tunlessd, wireguard-go and boringtun-cli (scripts/setup.sh),
# wg, iperf3, tcpdump, ethtool, python3. Output: "ok ..."/"not ok ...", then "N passed, N failed".
# TIMERS_ONLY="1 3" runs only those scenarios.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=tt$$
A=$HL_NAME_A
T0=$SECONDS

want() { [ -z "${TIMERS_ONLY:-}" ] || [[ " $TIMERS_ONLY " == *" $1 "* ]]; }

new_lab() { hl_host_lab "$P"; }   # DPDK runtime dirs of A and B go with the lab

end_lab() {
	local n
	for n in "${!HL_PID[@]}"; do [ -z "${HL_PID[$n]}" ] || hl_tunless_stop "$n" TERM 5; done
	lab_cleanup
	rm -rf "/var/run/dpdk/tunless-$A"
}

# start <tag> <impl> [timers-yaml]: tunlessd on a, <impl> on b. Fails (reported) if one does not.
start() {
	local tag=$1 impl=$2 timers=${3:-}
	new_lab
	hl_config "$LAB_DIR/a.yaml" host-a "" "" "$timers"
	if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log" || ! hl_peer_start b "$impl"; then
		hl_nok "$tag: tunlessd and $impl start"
		end_lab
		return 1
	fi
}

tl_stat() { hl_tel "$A" /tunless/device --get "$1"; }
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; } 2>/dev/null

# A UDP sink (reads, never answers) on <ns> at <ip>:9000.
sink() {
	lab_bg "$1" "$LAB_DIR/sink.log" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9000))
while True:
    s.recv(65536)' "$2"
}

# send_udp <ns> <ip> <seconds>: 20 datagrams of 200 bytes a second to <ip>:9000.
send_udp() {
	lab_exec "$1" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    s.sendto(b"x" * 200, (sys.argv[1], 9000))
    time.sleep(0.05)' "$2" "$3"
}

# ---- 1. one-way stream towards tunless --------------------------------------------------------
oneway_run() {
	local impl=$1 tag="one-way $1" hs0 hs1 rx0 rx1 ka cap
	start "$tag" "$impl" || return
	hl_check "$tag: first ping b -> a gets through ($impl initiates)" lab_wait_ping b 10.77.0.1 10
	sink a 10.77.0.1
	# Keepalives from tunless: UDP length 8 + 32 (type, receiver, counter, empty AEAD tag).
	cap=$LAB_DIR/ka.pcap
	lab_bg b "$LAB_DIR/tcpdump.log" tcpdump -i veth-b -n -U -w "$cap" \
		'udp and src host 10.99.0.1 and src port 51820 and udp[4:2] = 40'
	lab_wait_for 5 grep -q 'listening on' "$LAB_DIR/tcpdump.log"
	sleep 1
	hs0=$(hl_peer_get "$A" handshakes) rx0=$(tl_stat handshakes_received)
	send_udp b 10.77.0.1 45
	sleep 1
	hs1=$(hl_peer_get "$A" handshakes) rx1=$(tl_stat handshakes_received)
	ka=$(tcpdump -r "$cap" -n 2>/dev/null | grep -c 'UDP')
	hl_note "$tag: 45 s stream: handshakes $hs0 -> $hs1, handshake messages received $rx0 -> $rx1, keepalives from tunless $ka"
	hl_check "$tag: tunless sent keepalives during the stream (>= 3 in 45 s, one per 10 s)" \
		test "${ka:-0}" -ge 3
	hl_check "$tag: no handshake during the stream (completed: $hs0 -> $hs1)" test "$hs0" = "$hs1"
	hl_check "$tag: no initiation from $impl during the stream (handshake messages received $rx0 -> $rx1)" \
		test "$rx0" = "$rx1"
	end_lab
}

# ---- 2. the peer vanishes while tunless sends to it -------------------------------------------
sent_more() { [ "$(tl_stat handshakes_sent)" -gt "$1" ] 2>/dev/null; }

vanish_run() {
	local tag="vanish wggo" hs0 t0 dt
	start "$tag" wggo || return
	hl_check "$tag: first ping a -> b gets through" lab_wait_ping a 10.77.0.2 10
	lab_bg a "$LAB_DIR/ping.log" ping -i 0.1 -w 40 -q 10.77.0.2
	sleep 3
	hs0=$(tl_stat handshakes_sent)
	t0=$(date +%s.%N)
	lab_exec b ip link del wg0
	if lab_wait_for 30 sent_more "$hs0"; then
		dt=$(python3 -c "import sys, time; print(int(time.time() - float(sys.argv[1])))" "$t0")
	else
		dt=none
	fi
	hl_note "$tag: first initiation after the peer vanished: ${dt} s (initiations before: $hs0)"
	hl_check "$tag: new initiation 12..20 s after the peer vanished (KEEPALIVE + REKEY_TIMEOUT)" \
		between "$dt" 12 20
	end_lab
}

# ---- 3. rekey under sustained load ------------------------------------------------------------
no_drops() {
	local d
	d=$(hl_tel "$A" /tunless/drops | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("%s=%d" % kv for kv in d.items() if kv[1]))') ||
		{ echo "cannot read drops"; return 1; }
	[ -z "$d" ] || { echo "drops: $d"; return 1; }
}

rekey_run() {
	local tag="rekey under load wggo" hs sent t0 age lo hi out
	start "$tag" wggo \
		"{rekey_after_time: 4, reject_after_time: 8, rekey_attempt_time: 6, rekey_timeout: 2, keepalive_timeout: 2}" ||
		return
	t0=$(date +%s%N)
	hl_check "$tag: first ping a -> b gets through" lab_wait_ping a 10.77.0.2 10
	out=$(hl_iperf tcp a b 10.77.0.2 2>&1; hl_iperf tcp a b 10.77.0.2 -R 2>&1; hl_iperf tcp a b 10.77.0.2 2>&1;
		hl_iperf tcp a b 10.77.0.2 -R 2>&1)
	hl_note "$tag: iperf3 TCP: $(printf '%s' "$out" | tr '\n' ' ')"
	# One handshake at the first ping, then one each time the session is 4 s old (the next
	# packet sent triggers it; a pause between iperf3 runs may delay one). The traffic has
	# stopped, but the last initiation may still await its response: read the counters
	# once they agree, or after 3 s. A retried initiation keeps them apart for good (the
	# one it replaced never completes).
	age=$((($(date +%s%N) - t0) / 1000000))
	for _ in $(seq 30); do
		hs=$(hl_peer_get "$A" handshakes) sent=$(tl_stat handshakes_sent)
		[ "$hs" = "$sent" ] && break
		sleep 0.1
	done
	lo=$((1 + age / 4000 - 1)) hi=$((1 + (age + 3999) / 4000))
	hl_note "$tag: $hs handshakes completed in $age ms (rekey_after_time 4 s: $lo..$hi expected), initiations sent $sent"
	hl_check "$tag: handshakes as the rekey interval predicts ($lo..$hi, got $hs)" between "$hs" "$lo" "$hi"
	hl_check "$tag: every handshake is one tunless initiated, none retried ($sent sent, $hs completed)" \
		test "$sent" = "$hs"
	out=$(no_drops 2>&1)
	hl_check "$tag: no key_expired drop, no drop at all ${out:+($out)}" no_drops
	end_lab
}

hl_need_bins "$HL_TUNLESSD" "$WG_GO" "$BORINGTUN"
hl_need_cmds wg iperf3 tcpdump ethtool python3

if want 1; then
	oneway_run wggo
	oneway_run boringtun
fi
want 2 && vanish_run
want 3 && rekey_run

hl_check "no ${P}-* namespace left" test -z "$(lab_leftovers "$P")"
hl_note "runtime $((SECONDS - T0)) s"
hl_finish
