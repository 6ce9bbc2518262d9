#!/usr/bin/env bash
# systemd integration (Type=notify) against a fake service manager: a Python AF_UNIX datagram
# socket as NOTIFY_SOCKET, WATCHDOG_USEC set, JOURNAL_STREAM naming the daemon's stderr.
# tunlessd runs host mode (configs/host-a.yaml) in ns a; wireguard-go (configs/host-b.yaml's
# key) in ns b is its peer.
#   ready     the moment READY=1 arrives the listener pings tunless's tunnel address from b:
#             the ping is answered and wireguard-go sent one handshake initiation (one lost
#             to a daemon not yet receiving would be retried 5 s later: two);
#   journal   every log line of the daemon's own carries a priority prefix (<6> info, <3> error);
#   status    STATUS= lines name the peers, the one with a session and the bytes carried;
#   watchdog  WATCHDOG=1 keeps coming;
#   reload    SIGHUP (systemctl reload) with a changed file (a peer added, the WAN AQM target
#             changed) while a numbered UDP stream b -> a runs: RELOADING=1 then READY=1, the
#             diff applied, every datagram arrived in order, no new handshake;
#   refused   SIGHUP with a YAML error, then with a change that needs a restart (mtu): the
#             daemon runs on with the old configuration, logs one <3> line naming the cause,
#             sends READY=1 after RELOADING=1 (systemd waits for it to end the reload) with
#             STATUS= saying so, and the peer still answers; a good file reloads again;
#   stop      STOPPING=1 on SIGTERM, exit 0; systemd-analyze verify accepts the unit;
#   two       two instances of the unit (sd_runtime.py: what systemd does with the unit's
#   instances RuntimeDirectory=/...Mode=/...Preserve= at boot, start and stop, read from the
#             unit file, around real daemons, in a private /run): stopping one leaves the
#             other's control and UAPI sockets serving and a wireguard-go socket in
#             /run/wireguard, and removes its own; a killed instance starts again.
# Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

HL_NAME_A=sd$(($$ % 100000))a
A=$HL_NAME_A
CTL=$TUNLESS_BUILD/src/cli/tunlessctl
SEQFLOW=$HERE/seqflow.py
hl_need_bins "$HL_TUNLESSD" "$CTL"
hl_need_cmds "$WG_GO"

hl_host_lab "sd$$"

MSGS=$LAB_DIR/notify.log
export NOTIFY_SOCKET=$LAB_DIR/notify.sock
# The listener logs every line it receives; on the first READY=1 it runs the command given
# (the ping through the tunnel) at once and logs "FIRSTPACKET rc=<exit status>".
cat >"$LAB_DIR/listen.py" <<'EOF'
import socket, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
ready = False
with open(sys.argv[2], "a", buffering=1) as f:
    f.write("LISTENING\n")
    while True:
        lines = s.recv(4096).decode().split("\n")
        for line in lines:
            f.write(line + "\n")
        if "READY=1" in lines and not ready:
            ready = True
            rc = subprocess.run(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            f.write("FIRSTPACKET rc=%d\n" % rc)
EOF
python3 "$LAB_DIR/listen.py" "$NOTIFY_SOCKET" "$MSGS" \
	ip netns exec "$(lab_ns b)" ping -c 1 -W 15 10.77.0.1 &
LISTENER=$!
lab_on_cleanup "kill $LISTENER"
lab_wait_for 5 grep -q LISTENING "$MSGS" || lab_die "fake NOTIFY_SOCKET listener did not start"
export WATCHDOG_USEC=1000000
unset WATCHDOG_PID

# The peer first, so that the ping at READY=1 finds it configured.
hl_peer_start b wggo || { hl_nok "wireguard-go started in b"; hl_finish; exit 1; }
WGLOG=$LAB_DIR/wggo-b.log

CFG=$LAB_DIR/a.yaml
LOG=$LAB_DIR/a.log
hl_config "$CFG" host-a
: >"$LOG"
JOURNAL_STREAM=$(stat -c '%d:%i' "$LOG")
export JOURNAL_STREAM
hl_tunless_start a "$CFG" "$LOG" || { hl_nok "tunlessd started"; hl_finish; exit 1; }
unset JOURNAL_STREAM
hl_ok "tunlessd started"
PID=${HL_PID[$A]}

ready_count() { grep -c '^READY=1$' "$MSGS"; }
hl_check "READY=1 received" lab_wait_for 10 grep -q '^READY=1$' "$MSGS"
hl_check "nothing before READY=1 but the listener" sh -c "head -1 '$MSGS' | grep -q LISTENING"
hl_check "STATUS= with READY=1: host mode, 1 peer, 1 worker" \
	grep -q '^STATUS=up: host mode, UDP 51820, 1 peer(s), 0 with a session, 1 worker(s); ' "$MSGS"
hl_check "a ping sent the moment READY=1 arrived is answered" lab_wait_for 20 grep -q '^FIRSTPACKET rc=0$' "$MSGS"
hl_check_out "... and wireguard-go needed one handshake initiation for it" \
	sh -c "n=\$(grep -ci 'sending handshake initiation' '$WGLOG'); echo \"initiations: \$n\"; [ \"\$n\" -eq 1 ]"

hl_check "journal: the up line has priority <6>" grep -q "^<6>$A: info: up: host mode" "$LOG"
hl_check_out "journal: every line of the daemon's own has a priority prefix" \
	sh -c "! grep -E '^$A: (error|warning|info|debug): ' '$LOG'"

hl_check "WATCHDOG=1 received (WATCHDOG_USEC=1000000)" lab_wait_for 10 grep -q '^WATCHDOG=1$' "$MSGS"
n1=$(grep -c '^WATCHDOG=1$' "$MSGS")
hl_check "WATCHDOG=1 keeps coming while the daemon runs" lab_wait_for 10 \
	sh -c "[ \$(grep -c '^WATCHDOG=1\$' '$MSGS') -gt $n1 ]"
hl_check_out "STATUS= every 5 s: the peer with a session, throughput and bytes carried" \
	sh -c "lab_line() { grep -E '^STATUS=up: host mode, UDP 51820, 1 peer\(s\), 1 with a session, 1 worker\(s\); tunnel rx [0-9.]+ [kMG]?bit/s, tx [0-9.]+ [kMG]?bit/s over 5 s; [1-9][0-9]* B received, [1-9][0-9]* B sent\$' '$MSGS' | tail -1; }
	       end=\$((\$(date +%s) + 15)); until l=\$(lab_line) && [ -n \"\$l\" ]; do [ \$(date +%s) -lt \$end ] || exit 1; sleep 0.5; done; echo \"\$l\""

# --- SIGHUP with a changed file while a stream runs ------------------------------------------
# wireguard-go arms its new-handshake timer (15 s) when it has sent data, on its sending
# goroutine, and clears it when an authenticated packet arrives, on its receiving one: the
# answer to the ping at READY=1 can arrive before the timer is armed for the ping, which
# leaves it armed with nothing but tunless's next packet to clear it. The one-way stream below
# gets no answer before tunless's keepalive, 10 s after the stream's first datagram, so
# wireguard-go would retry the handshake 15 s after that ping, whatever the reload does. A
# ping from a clears the timer first, so the checks count only what the reload causes.
hl_check "a ping from a to b before the stream" lab_exec a ping -c 1 -W 5 10.77.0.2
hs0=$(hl_peer_get "$A" handshakes)
wg0=$(hl_wg_latest b)
cp "$CFG" "$LAB_DIR/a.good.yaml"
rm -f "$LAB_DIR/seq.ready"
lab_bg a "$LAB_DIR/seq.json" python3 "$SEQFLOW" recv --bind 10.77.0.1 --port 5301 --idle 3 \
	--max-seconds 60 --ready "$LAB_DIR/seq.ready"
SEQ_RECV=$LAB_LAST_PID
lab_wait_for 5 test -e "$LAB_DIR/seq.ready" || hl_nok "seqflow receiver started"
lab_bg b "$LAB_DIR/seq.sent" python3 "$SEQFLOW" send --dst 10.77.0.1 --port 5301 --count 3000 --pps 300
SEQ_SEND=$LAB_LAST_PID
sleep 2   # the stream is flowing (sequencing only: the result below counts datagrams)
sed -i -e 's/^  wan: {iface: \([^}]*\)}/  wan: {iface: \1, aqm: {target_us: 2000}}/' "$CFG"
cat >>"$CFG" <<'EOF'
  - name: sighup-peer
    public_key: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
    allowed_ips: [10.77.0.9/32]
EOF
nready=$(ready_count)
kill -HUP "$PID"
hl_check "RELOADING=1 on SIGHUP" lab_wait_for 10 grep -q '^RELOADING=1$' "$MSGS"
hl_check "MONOTONIC_USEC with RELOADING=1" grep -q '^MONOTONIC_USEC=[0-9]' "$MSGS"
hl_check "READY=1 again after the reload" lab_wait_for 10 sh -c "[ \$(grep -c '^READY=1\$' '$MSGS') -gt $nready ]"
hl_check "RELOADING=1 came before the second READY=1" \
	sh -c "awk '/^RELOADING=1\$/ { r = NR } /^READY=1\$/ { last = NR } END { exit !(r && last > r) }' '$MSGS'"
hl_check "STATUS=reloaded" grep -q "^STATUS=reloaded $CFG\$" "$MSGS"
hl_check "the reload applied: the new peer is in show" sh -c "'$CTL' -n '$A' show | grep -q sighup-peer"
hl_check "the reload applied: the WAN AQM target is 2000 us" \
	sh -c "'$CTL' -n '$A' --yaml show section=queues | grep -q 'target_us: 2000'"
hl_check "the daemon logged the diff (<6>)" grep -q "^<6>$A: info: ctlapi: reloaded $CFG: 1 peer(s) added, 0 removed, 0 changed" "$LOG"
wait "$SEQ_SEND"
wait "$SEQ_RECV"
hl_check_out "the stream across the reload: 3000 of 3000 datagrams, in order, none lost" python3 - "$LAB_DIR/seq.json" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print("received %(received)d (unique %(unique)d), reordered %(reordered)d, duplicates %(duplicates)d, lost %(lost)d" % r)
sys.exit(0 if r["unique"] == 3000 and r["lost"] == 0 and r["reordered"] == 0 and r["duplicates"] == 0 else 1)
EOF
hl_check "no new handshake across the reload (tunless's count)" test "$(hl_peer_get "$A" handshakes)" = "$hs0"
hl_check "no new handshake across the reload (wireguard-go's latest)" test "$(hl_wg_latest b)" = "$wg0"

# --- SIGHUP with a file that cannot be applied ------------------------------------------------
# refused <desc> <field pattern>: SIGHUP with $CFG as it is now; the daemon must refuse it.
refused() {
	local desc=$1 pat=$2 nr nl
	nr=$(ready_count)
	nl=$(grep -c 'reload of .* refused' "$LOG")
	kill -HUP "$PID"
	hl_check "$desc: READY=1 after RELOADING=1 although refused" \
		lab_wait_for 10 sh -c "[ \$(grep -c '^READY=1\$' '$MSGS') -gt $nr ]"
	hl_check "$desc: STATUS= says the reload was refused" \
		sh -c "grep '^STATUS=reload of ' '$MSGS' | tail -1 | grep -q 'refused ($pat.*); running the previous configuration'"
	hl_check_out "$desc: one <3> line names the cause" sh -c "
		grep -c 'reload of .* refused' '$LOG' | grep -qx $((nl + 1)) &&
		grep '^<3>$A: error: SIGHUP: reload of $CFG refused, the running configuration is kept: ' '$LOG' | tail -1 | grep -E '$pat'"
	hl_check "$desc: daemon still running" hl_tl_alive "$A"
	hl_check "$desc: the peer still answers" hl_ping b 10.77.0.1
	hl_check "$desc: the running peers are kept" sh -c "'$CTL' -n '$A' show | grep -q sighup-peer"
}
cp "$CFG" "$LAB_DIR/a.reloaded.yaml"
printf 'peers: [\n' >>"$CFG"
refused "YAML error" '.*'
cp "$LAB_DIR/a.reloaded.yaml" "$CFG"
sed -i -e 's/^mtu: 1420/mtu: 1380/' "$CFG"
refused "restart-only change (mtu)" 'mtu'
cp "$LAB_DIR/a.good.yaml" "$CFG"
nready=$(ready_count)
nok=$(grep -c '^STATUS=reloaded ' "$MSGS")
kill -HUP "$PID"
hl_check "a good file reloads again: READY=1" lab_wait_for 10 sh -c "[ \$(grep -c '^READY=1\$' '$MSGS') -gt $nready ]"
hl_check "... STATUS=reloaded, the added peer removed again" \
	sh -c "[ \$(grep -c '^STATUS=reloaded ' '$MSGS') -gt $nok ] && ! '$CTL' -n '$A' show | grep -q sighup-peer"

hl_tunless_stop "$A" TERM 10
hl_check "tunlessd exited 0 on SIGTERM" test "$HL_TL_RC" -eq 0
hl_check "STOPPING=1 on SIGTERM" lab_wait_for 5 grep -q '^STOPPING=1$' "$MSGS"

UNIT=$TUNLESS_ROOT/systemd/tunless@.service
# --- two instances: stopping one leaves the other's sockets --------------------------------------
# No systemd runs here (PID 1 is not systemd, no systemd-nspawn): sd_runtime.py does what
# systemd does with the unit's RuntimeDirectory= settings, read from the unit file, around two
# real daemons in ns a, in a private mount namespace with its own /run.
ETC=$LAB_DIR/etc
mkdir -p "$ETC"
X=${A}x Y=${A}y
hl_config "$ETC/$X.yaml" host-a
sed -i -e "s/^name: .*/name: $X/" "$ETC/$X.yaml"
hl_config "$ETC/$Y.yaml" host-a
sed -i -e "s/^name: .*/name: $Y/" -e 's/^listen_port: .*/listen_port: 51821/' \
	-e 's|^addresses: .*|addresses: [10.78.0.1/24, fd78::1/64]|' \
	-e 's|^\( *allowed_ips:\) .*|\1 [10.78.0.2/32, fd78::2/128]|' "$ETC/$Y.yaml"
while IFS= read -r line; do
	case $line in
	"ok "*) hl_ok "two instances: ${line#ok }" ;;
	"not ok "*) hl_nok "two instances: ${line#not ok }" ;;
	*) printf '%s\n' "$line" ;;
	esac
done < <(ip netns exec "$(lab_ns a)" unshare --mount --propagation private \
	python3 "$HERE/sd_runtime.py" "$UNIT" "$TUNLESS_ROOT/systemd/tunless.tmpfiles" "$HL_TUNLESSD" "$CTL" \
	"$ETC" "$LAB_DIR" "$X" "$Y" 2>&1)

if command -v systemd-analyze >/dev/null; then
	d=$LAB_DIR/unit
	mkdir -p "$d"
	sed -e "s|/usr/sbin/tunlessd|$HL_TUNLESSD|" "$UNIT" >"$d/tunless@.service"
	# verify also looks up the Documentation= manual pages: the built ones, laid out as installed
	mkdir -p "$d/man/man8" "$d/man/man5"
	cp "$TUNLESS_BUILD"/docs/man/*.8 "$d/man/man8/" && cp "$TUNLESS_BUILD"/docs/man/*.5 "$d/man/man5/"
	hl_check_out "systemd-analyze verify tunless@.service" sh -c \
		"out=\$(MANPATH='$d/man' systemd-analyze verify '$d/tunless@.service' 2>&1); echo \"\$out\"; ! echo \"\$out\" | grep -v -e 'Failed to prepare' -e 'Cannot add dependency job' -e '^\$' | grep -q ."
else
	hl_note "systemd-analyze not found: unit not verified"
fi
hl_finish
