#!/usr/bin/env bash
# What an idle daemon costs: how often its control thread wakes, and how much CPU the whole
# process uses, with a live tunnel and no traffic.
#
#   ${P}-a                                               ${P}-b
#   tunlessd (configs/host-a.yaml, renamed)              wireguard-go as wg0 (configs/host-b.yaml's key)
#     host veth 10.77.0.1/24 fd77::1/64                    10.77.0.2 fd77::2
#     AF_XDP on veth-a 10.99.0.1  <──────veth──────>  veth-b 10.99.0.2
#
# After a ping through the tunnel (handshake done) and 2 s of quiet, over IDLE_S (10) seconds:
# the control thread's (the daemon's main thread) context switches, voluntary and not, from
# /proc/<pid>/task/<pid>/status, and the CPU ticks of every thread of the process from
# /proc/<pid>/stat. The wakes are a count, not a timing: the control thread must wake at
# most 50 times a second. The CPU share (a time) and each other thread's switches are
# printed as notes, not checked. Output: "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=id$$
A=$HL_NAME_A
IDLE_S=${IDLE_S:-10}
MAX_WAKES_PER_S=50

hl_need_bins "$HL_TUNLESSD" "$WG_GO"
hl_need_cmds wg python3 ethtool

hl_host_lab "$P"
trap 'hl_end_lab TERM' EXIT
hl_config "$LAB_DIR/a.yaml" host-a
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log" || ! hl_peer_start b wggo; then
	hl_nok "tunlessd and wireguard-go start"
	hl_finish
	exit 1
fi
hl_check "ping a -> b through the tunnel" lab_wait_ping a 10.77.0.2 10
PID=${HL_PID[$A]}
sleep 2

# switches <pid> <tid>: voluntary + involuntary context switches of one thread.
switches() { awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }' "/proc/$1/task/$2/status"; }
# ticks <pid>: user + system CPU ticks of the process, all threads.
ticks() { awk '{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

declare -A S0
for t in /proc/"$PID"/task/*; do S0[${t##*/}]=$(switches "$PID" "${t##*/}"); done
C0=$(ticks "$PID")
sleep "$IDLE_S"
C1=$(ticks "$PID")
CTRL=0
for t in /proc/"$PID"/task/*; do
	tid=${t##*/}
	n=$(( $(switches "$PID" "$tid") - ${S0[$tid]:-0} ))
	[ "$tid" = "$PID" ] && CTRL=$n
	hl_note "  thread $tid ($(cat "$t/comm")): $n context switches in $IDLE_S s"
done
HZ=$(getconf CLK_TCK)
CPU=$(python3 -c 'import sys; print("%.2f" % ((int(sys.argv[1]) - int(sys.argv[2])) * 100.0 / int(sys.argv[3]) / int(sys.argv[4])))' \
	"$C1" "$C0" "$HZ" "$IDLE_S")
hl_note "control thread: $CTRL wakes in $IDLE_S s ($((CTRL / IDLE_S))/s); process: $CPU % of one core"
hl_check "the idle control thread wakes at most $MAX_WAKES_PER_S times a second ($CTRL in $IDLE_S s)" \
	test "$CTRL" -le $((MAX_WAKES_PER_S * IDLE_S))
hl_check "the tunnel still answers" hl_ping a 10.77.0.2
hl_finish
