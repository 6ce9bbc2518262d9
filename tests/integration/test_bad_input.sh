#!/usr/bin/env bash
# Hostile and broken input: every crafted packet is counted under exactly the drop reason it
# deserves, no other reason moves, and the tunnel keeps working; then a handshake flood.
#
#   ${P}-a                                              ${P}-b
#   host iface $NA 10.77.0.1/24 fd77::1/64              host iface $NB 10.77.0.2/24 fd77::2/64
#     tunless A (under test)                              tunless B (the real peer)
#   veth-a 10.99.0.1 fd99::1  <──────── veth ────────>  veth-b 10.99.0.2 fd99::2
#     :51820 (AF_XDP, or udp                              :51820 (tunless B)
#             with TL_WAN_DRIVER=udp)
#                                                         :40000 probe: a WireGuard initiator in
#                                                                python, A's second peer 10.77.0.3
#                                                         :40001-3 junk (UDP sockets, scapy)
# The cases themselves are in bad_input.py (runs in ${P}-b).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build}
TUNLESSD=$BUILD/src/daemon/tunlessd
PY=/usr/bin/python3              # Debian's python: python3-scapy, python3-cryptography
# shellcheck source=lab.sh
. "$HERE/lab.sh"

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); printf 'ok %s\n' "$*"; }
nok() { FAIL=$((FAIL + 1)); printf 'not ok %s\n' "$*"; }
dump_logs() {
	local f
	for f in "$LAB_DIR"/a.log "$LAB_DIR"/b.log; do
		[ -f "$f" ] || continue
		echo "---- $(basename "$f") (last 80 lines) ----"
		tail -n 80 "$f"
	done
	for t in "${TEL_A:-}" "${TEL_B:-}"; do
		[ -S "$t" ] || continue
		echo "---- telemetry $t ----"
		$PY - "$t" <<'EOF2'
import json, socket, sys
for cmd in ("/tunless/device", "/tunless/ports", "/tunless/drops", "/tunless/peers"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1]); s.recv(4096); s.send(cmd.encode())
    print(cmd, json.dumps(json.loads(s.recv(1 << 20))[cmd]))
    s.close()
EOF2
	done
}
finish() {
	printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	[ "$FAIL" -eq 0 ] || [ -n "${DUMPED:-}" ] || dump_logs
	[ "$FAIL" -eq 0 ]
}

[ -x "$TUNLESSD" ] || { echo "not ok tunlessd not built at $TUNLESSD"; exit 1; }
$PY -c 'import scapy, cryptography' 2>/dev/null || { echo "not ok $PY lacks scapy/cryptography"; exit 1; }

START=$SECONDS
P=bi$$
NA=bia$$        # unique instance names: /var/run/dpdk/tunless-<name> is not per namespace
NB=bib$$
lab_init "$P"
lab_host_pair
# frames from the kernel of b into A's AF_XDP port must carry complete checksums
lab_exec b ethtool -K veth-b tx off >/dev/null

read -r PROBE_PRIV PROBE_PUB < <($PY "$HERE/bad_input.py" keygen)
sed "s/^name: tla$/name: $NA/" "$ROOT/configs/host-a.yaml" >"$LAB_DIR/a.yaml"
cat >>"$LAB_DIR/a.yaml" <<EOF
  - name: probe
    public_key: $PROBE_PUB
    allowed_ips: [10.77.0.3/32, fd77::3/128]
EOF
sed "s/^name: tlb$/name: $NB/" "$ROOT/configs/host-b.yaml" >"$LAB_DIR/b.yaml"
# A's WAN port kind: af_xdp unless TL_WAN_DRIVER says otherwise (the cases expect one of them)
WAN_DRIVER=${TL_WAN_DRIVER:-af_xdp}
TL_WAN_DRIVER=$WAN_DRIVER lab_wan_driver "$LAB_DIR/a.yaml"
A_PUB=$(sed -n 's/^# Public key of this instance: //p' "$ROOT/configs/host-a.yaml")
TEL_A=/var/run/dpdk/tunless-$NA/dpdk_telemetry.v2
TEL_B=/var/run/dpdk/tunless-$NB/dpdk_telemetry.v2

# pid of the tunlessd running in a lab namespace (lab_bg's pid is the wrapping subshell)
daemon_pid() {
	local p
	for p in $(ip netns pids "$P-$1" 2>/dev/null); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = tunlessd ] && { echo "$p"; return 0; }
	done
	return 1
}
lab_bg a "$LAB_DIR/a.log" "$TUNLESSD" -c "$LAB_DIR/a.yaml"
lab_bg b "$LAB_DIR/b.log" "$TUNLESSD" -c "$LAB_DIR/b.yaml"
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$NA /var/run/dpdk/tunless-$NB"

if lab_wait_for 20 test -S "$TEL_A" && lab_wait_for 20 test -S "$TEL_B"; then
	ok "both daemons up (telemetry sockets present)"
else
	nok "both daemons up (telemetry sockets present)"
	finish
	exit
fi
if lab_wait_ping a 10.77.0.2 20; then ok "tunnel a -> b answers"; else nok "tunnel a -> b answers"; finish; exit; fi
PID_A=$(daemon_pid a)
PID_B=$(daemon_pid b)

DST_MAC=$(lab_exec a cat /sys/class/net/veth-a/address)
lab_exec b $PY "$HERE/bad_input.py" run --ns-a "$P-a" --tel-a "$TEL_A" --dst-mac "$DST_MAC" \
	--resp-pub "$A_PUB" --probe-priv "$PROBE_PRIV" --peer-if "$NB" --wan-driver "$WAN_DRIVER" 2>&1 | tee "$LAB_DIR/cases.log"
PY_RC=${PIPESTATUS[0]}
PASS=$((PASS + $(grep -c '^ok ' "$LAB_DIR/cases.log")))
FAIL=$((FAIL + $(grep -c '^not ok ' "$LAB_DIR/cases.log")))
if [ "$PY_RC" -ne 0 ] && ! grep -q '^not ok ' "$LAB_DIR/cases.log"; then
	nok "bad_input.py exited $PY_RC without a failed case (crash?)"
fi

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
if alive "$PID_A"; then ok "daemon A survived"; else nok "daemon A survived"; fi
if alive "$PID_B"; then ok "daemon B survived"; else nok "daemon B survived"; fi
if lab_wait_ping a 10.77.0.2 5; then ok "tunnel still answers at the end"; else nok "tunnel still answers at the end"; fi

# clean exit on SIGTERM, XDP program gone
[ "$FAIL" -eq 0 ] || { dump_logs; DUMPED=1; }
# debugging aid: BAD_INPUT_HOLD=<seconds> keeps a failed lab up for inspection
[ "$FAIL" -eq 0 ] || [ -z "${BAD_INPUT_HOLD:-}" ] || { echo "# holding lab $P for $BAD_INPUT_HOLD s"; sleep "$BAD_INPUT_HOLD"; }
[ -n "$PID_A" ] && kill -TERM "$PID_A"
for _ in $(seq 1 100); do alive "$PID_A" || break; sleep 0.1; done
if ! alive "$PID_A" && grep -q 'info: stopping' "$LAB_DIR/a.log"; then ok "daemon A exits on SIGTERM"; else nok "daemon A exits on SIGTERM"; fi
if ! lab_exec a ip link show veth-a | grep -q 'prog/xdp'; then ok "no XDP program left on veth-a"; else nok "no XDP program left on veth-a"; fi
if ! lab_exec a ip link show "$NA" >/dev/null 2>&1; then ok "host interface $NA removed"; else nok "host interface $NA removed"; fi
echo "# runtime $((SECONDS - START)) s"
finish
