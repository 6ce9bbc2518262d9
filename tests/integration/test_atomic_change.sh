#!/usr/bin/env bash
# A request that fails changes nothing, through the three entries that change a running
# tunless: SIGHUP's reload of the edited configuration file, the control API's reload
# (tunlessctl reload) and UAPI set (wg).
#
#   ${P}-a                                          ${P}-b
#   tunlessd (configs/host-a.yaml, renamed)          wireguard-go wg0 (configs/host-b.yaml's key)
#     veth-a 10.99.0.1  <──────── veth ────────>  veth-b 10.99.0.2
#
# Each request moves the listen port 51820 -> 51900 and asks for something that cannot be had:
# - the file (SIGHUP, then tunlessctl reload) also raises ports.wan.aqm.limit to 20000, more
#   than the port buffers were sized for at start (10240 packets);
# - `wg addconf` gives ListenPort = 51900 and 100 000 new peers while the daemon's address
#   space is held (prlimit --as) to what it uses plus 48 MB: the request (16 MB parsed) is read,
#   the peers (70 MB) cannot be made, errno ENOMEM.
# After each: the reply is an error, and `wg show` / `ss -uln` / tunlessctl show still have
# port 51820 (51900 not bound), the WAN limit 10240, one peer, and the tunnel works. Then the
# file without the impossible limit is reloaded: the port moves (the checks can fail).
# Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=ac$$
HL_NAME_A=ac$(($$ % 100000))a   # unique instance name (DPDK runtime dir and sockets are global)
A=$HL_NAME_A
CTL=$TUNLESS_BUILD/src/cli/tunlessctl
OLD=51820
NEW=51900
T0=$SECONDS

hl_need_bins "$HL_TUNLESSD" "$WG_GO" "$CTL"
hl_need_cmds wg ss prlimit python3

ctl() { "$CTL" -n "$A" "$@"; }
wga() { lab_exec a wg "$@"; }
show_get() { # <python expression on r, the reply of `tunlessctl --yaml show`>
	ctl --yaml show | python3 -c 'import sys, yaml; r = yaml.safe_load(sys.stdin.read().replace("\n...\n", "\n")); print(eval(sys.argv[1]))' "$1"
}
bound() { lab_exec a ss -Hunl | awk '{ print $4 }' | grep -q ":$1\$"; }

# What must hold after a refused request (after: which entry).
unchanged() {
	local after=$1 port limit peers
	port=$(wga show "$A" listen-port)
	hl_check "$after: wg show: listening port $OLD (is ${port:-none})" test "$port" = "$OLD"
	hl_check "$after: ss -uln: UDP $OLD bound" bound "$OLD"
	hl_check "$after: ss -uln: UDP $NEW not bound" eval "! bound $NEW"
	port=$(show_get 'r["result"]["device"]["listen_port"]')
	hl_check "$after: tunlessctl show: listen_port $OLD (is $port)" test "$port" = "$OLD"
	limit=$(show_get 'sorted({q["aqm_limit"] for q in r["result"]["queues"] if q["port"] == "wan"})')
	hl_check "$after: tunlessctl show: every WAN queue's aqm_limit 10240 (is $limit)" test "$limit" = "[10240]"
	peers=$(wga show "$A" peers | wc -l)
	hl_check "$after: wg show: one peer (is $peers)" test "$peers" = 1
	hl_check "$after: ping a -> b through the tunnel" hl_ping a 10.77.0.2
	# A port moved anyway is moved back, so that each entry is checked on its own.
	[ "$(wga show "$A" listen-port)" = "$OLD" ] || wga set "$A" listen-port "$OLD"
}

# The file with port and limit (limit empty: the file's own queue parameters).
edit_config() {
	cp "$LAB_DIR/a.orig.yaml" "$LAB_DIR/a.yaml"
	sed -i -e "s/^listen_port: .*/listen_port: $1/" "$LAB_DIR/a.yaml"
	[ -z "$2" ] || sed -i -e "s/^\( *wan: {\)/\1aqm: {limit: $2}, /" "$LAB_DIR/a.yaml"
}

# ---- lab and daemons ------------------------------------------------------------------------
hl_host_lab "$P"
hl_config "$LAB_DIR/a.yaml" host-a
cp "$LAB_DIR/a.yaml" "$LAB_DIR/a.orig.yaml"
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log"; then
	hl_nok "tunlessd starts"
	hl_finish
	exit 1
fi
if ! hl_peer_start b wggo; then
	hl_nok "wireguard-go starts and takes its configuration"
	hl_finish
	exit 1
fi
hl_check "ping a -> b through the tunnel" lab_wait_ping a 10.77.0.2 10
unchanged "at start"
PID=${HL_PID[$A]}

# ---- 1. SIGHUP: reload of the edited file --------------------------------------------------------
edit_config "$NEW" 20000
hl_note "the file now: $(grep -E '^listen_port|wan:' "$LAB_DIR/a.yaml" | tr '\n' ' ')"
n0=$(grep -c 'SIGHUP: reload of' "$LAB_DIR/tunless-a.log")
kill -HUP "$PID"
sighup_done() { [ "$(grep -c 'SIGHUP: reload of' "$LAB_DIR/tunless-a.log")" -gt "$n0" ]; }
hl_check "SIGHUP: the daemon answers the reload" lab_wait_for 10 sighup_done
hl_check_out "SIGHUP: the reload is refused on ports.wan.aqm.limit" \
	grep -m1 'SIGHUP: reload of .* refused, the running configuration is kept: ports.wan.aqm.limit' "$LAB_DIR/tunless-a.log"
unchanged "after SIGHUP"

# ---- 2. the control API's reload -------------------------------------------------------------------
out=$(ctl reload 2>&1)
rc=$?
hl_note "tunlessctl reload: exit $rc: ${out//$'\n'/ / }"
hl_check "tunlessctl reload: exits non-zero" test "$rc" -ne 0
hl_check "tunlessctl reload: the error names ports.wan.aqm.limit" grep -q 'ports.wan.aqm.limit' <<<"$out"
unchanged "after tunlessctl reload"

# ---- 3. UAPI set: wg addconf with a new port and peers that cannot be made ---------------------------------
python3 - "$LAB_DIR/many.conf" "$NEW" <<'EOF'
import base64, os, sys
with open(sys.argv[1], "w") as f:
    f.write("[Interface]\nListenPort = %s\n" % sys.argv[2])
    for _ in range(100000):
        f.write("[Peer]\nPublicKey = %s\n" % base64.b64encode(os.urandom(32)).decode())
EOF
vm=$(awk '/^VmSize:/ { print $2 }' "/proc/$PID/status")
hl_note "tunlessd VmSize ${vm} kB; its address space held to that plus 48 MB"
prlimit --pid "$PID" --as=$(((vm + 48 * 1024) * 1024))
out=$(wga addconf "$A" "$LAB_DIR/many.conf" 2>&1)
rc=$?
prlimit --pid "$PID" --as=unlimited
hl_note "wg addconf: exit $rc: $out"
hl_check "wg addconf: exits non-zero" test "$rc" -ne 0
hl_check "wg addconf: the error is 'Cannot allocate memory'" grep -q 'Cannot allocate memory' <<<"$out"
hl_check_out "the daemon logs that the peers could not be made (and nothing changed)" \
	grep -m1 'peers: Cannot allocate memory; nothing changed' "$LAB_DIR/tunless-a.log"
unchanged "after wg addconf"

# ---- the same file without the impossible limit: applied ------------------------------------------
edit_config "$NEW" 5000
out=$(ctl reload 2>&1)
rc=$?
hl_check "tunlessctl reload of port $NEW and limit 5000: exits 0" test "$rc" -eq 0
hl_check "wg show: listening port $NEW" test "$(wga show "$A" listen-port)" = "$NEW"
hl_check "ss -uln: UDP $NEW bound" lab_wait_for 5 bound "$NEW"
hl_check "tunlessctl show: every WAN queue's aqm_limit 5000" \
	test "$(show_get 'sorted({q["aqm_limit"] for q in r["result"]["queues"] if q["port"] == "wan"})')" = "[5000]"
hl_check "tunlessd still runs" hl_tl_alive "$A"

hl_end_lab
hl_check "no ${P}-* namespace left" test -z "$(lab_leftovers "$P")"
hl_note "runtime $((SECONDS - T0)) s"
hl_finish
