#!/usr/bin/env bash
# systemd integration (Type=notify) against a fake service manager: a Python AF_UNIX datagram
# socket as NOTIFY_SOCKET, WATCHDOG_USEC set. tunlessd (host mode, configs/host-a.yaml in ns a)
# must send READY=1 only once up (after its "up:" log line), WATCHDOG=1 while it runs,
# RELOADING=1 then READY=1 on SIGHUP (the control API's reload: a peer added to the file
# appears in `tunlessctl show`), STOPPING=1 on SIGTERM; systemd-analyze verify on the unit.
# Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=sd$$
HL_NAME_A=sd$(($$ % 100000))a
A=$HL_NAME_A
CTL=$TUNLESS_BUILD/src/cli/tunlessctl
hl_need_bins "$HL_TUNLESSD" "$CTL"

lab_init "$P"
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$A"
lab_host_pair

MSGS=$LAB_DIR/notify.log
export NOTIFY_SOCKET=$LAB_DIR/notify.sock
cat >"$LAB_DIR/listen.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    f.write("LISTENING\n")
    while True:
        d = s.recv(4096).decode()
        for line in d.split("\n"):
            f.write(line + "\n")
EOF
python3 "$LAB_DIR/listen.py" "$NOTIFY_SOCKET" "$MSGS" &
LISTENER=$!
lab_on_cleanup "kill $LISTENER"
lab_wait_for 5 grep -q LISTENING "$MSGS" || lab_die "fake NOTIFY_SOCKET listener did not start"
export WATCHDOG_USEC=1000000
unset WATCHDOG_PID

CFG=$LAB_DIR/a.yaml
LOG=$LAB_DIR/a.log
hl_config "$CFG" host-a
hl_tunless_start a "$CFG" "$LOG" || { hl_nok "tunlessd started"; hl_finish; exit 1; }
hl_ok "tunlessd started"
hl_check "READY=1 received" lab_wait_for 10 grep -q '^READY=1$' "$MSGS"
hl_check "STATUS= with the mode" grep -q '^STATUS=up: host mode' "$MSGS"
# READY=1 is sent after the dataplane is up: the daemon logged "up:" before the message came.
hl_check "nothing before READY=1 but the listener" sh -c "head -1 '$MSGS' | grep -q LISTENING"
hl_check "WATCHDOG=1 received (WATCHDOG_USEC=1000000)" lab_wait_for 10 grep -q '^WATCHDOG=1$' "$MSGS"
n1=$(grep -c '^WATCHDOG=1$' "$MSGS")
hl_check "WATCHDOG=1 keeps coming while the daemon runs" lab_wait_for 10 \
	sh -c "[ \$(grep -c '^WATCHDOG=1\$' '$MSGS') -gt $n1 ]"

# SIGHUP: the same reload as the control API's. Add a peer to the file first.
cat >>"$CFG" <<'EOF'
  - name: sighup-peer
    public_key: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
    allowed_ips: [10.77.0.9/32]
EOF
nready=$(grep -c '^READY=1$' "$MSGS")
kill -HUP "${HL_PID[$A]}"
hl_check "RELOADING=1 on SIGHUP" lab_wait_for 10 grep -q '^RELOADING=1$' "$MSGS"
hl_check "MONOTONIC_USEC with RELOADING=1" grep -q '^MONOTONIC_USEC=[0-9]' "$MSGS"
hl_check "READY=1 again after the reload" lab_wait_for 10 \
	sh -c "[ \$(grep -c '^READY=1\$' '$MSGS') -gt $nready ]"
hl_check "RELOADING=1 came before the second READY=1" \
	sh -c "awk '/^RELOADING=1\$/ { r = NR } /^READY=1\$/ { last = NR } END { exit !(r && last > r) }' '$MSGS'"
hl_check "STATUS=reloaded" grep -q '^STATUS=reloaded ' "$MSGS"
hl_check "the reload applied: the new peer is in show" \
	sh -c "'$CTL' -n '$A' show | grep -q sighup-peer"
hl_check "daemon still running after SIGHUP" hl_tl_alive "$A"

hl_tunless_stop "$A" TERM 10
hl_check "tunlessd exited 0 on SIGTERM" test "$HL_TL_RC" -eq 0
hl_check "STOPPING=1 on SIGTERM" lab_wait_for 5 grep -q '^STOPPING=1$' "$MSGS"

UNIT=$TUNLESS_ROOT/systemd/tunless@.service
if command -v systemd-analyze >/dev/null; then
	d=$LAB_DIR/unit
	mkdir -p "$d"
	sed -e "s|/usr/sbin/tunlessd|$HL_TUNLESSD|" "$UNIT" >"$d/tunless@.service"
	hl_check "systemd-analyze verify tunless@.service" sh -c \
		"out=\$(systemd-analyze verify '$d/tunless@.service' 2>&1); echo \"\$out\"; ! echo \"\$out\" | grep -v -e 'Failed to prepare' -e 'Cannot add dependency job' -e '^\$' | grep -q ."
else
	hl_note "systemd-analyze not found: unit not verified"
fi
hl_finish
