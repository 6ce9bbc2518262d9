#!/usr/bin/env bash
# The YAML control API (/run/tunless/<name>.sock) and tunlessctl against a running tunless.
#
#   ${P}-a                                               ${P}-b
#   tunlessd (configs/host-a.yaml, renamed ca<pid>a)     wireguard-go wg0 (configs/host-b.yaml's key)
#     /run/tunless/ca<pid>a.sock                            10.77.0.2 fd77::2
#     host veth ca<pid>a 10.77.0.1/24 fd77::1/64           wireguard-go wg1 (a new key, port 51821)
#                                                            10.78.0.3/32, replies from it routed
#                                                            to wg1 by `ip rule from 10.78.0.3`
#     AF_XDP on veth-a 10.99.0.1 fd99::1  <──veth──>  veth-b 10.99.0.2 fd99::2
#
# Checks: socket modes; show with traffic (peer rx/tx grow, handshake age, queues, drops);
# --yaml/--json output parses; set of the AQM target and shaper is visible in the next show;
# peer_add of wg1's key gives a working tunnel to 10.78.0.3; peer_remove of it while a ping to
# wg0 runs loses nothing; reload after editing the YAML (wg1 back as a peer, AQM target)
# applies; reload of a key that needs a restart / of a broken file is refused with the field
# named; bad requests (malformed YAML, unknown op, unknown field, wrong type, out of range,
# missing field, allowed IP of another peer, oversized, garbage, silent client) get an error
# reply naming the field and leave the configuration as it was; tunlessctl exit codes and
# local argument checks; watch; docs/control-api.md in sync with the spec; socket removed on
# SIGTERM. Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=ca$$
HL_NAME_A=ca$(($$ % 100000))a   # unique instance name (DPDK runtime dir and sockets are global)
A=$HL_NAME_A
CTL=$TUNLESS_BUILD/src/cli/tunlessctl
SOCK=/run/tunless/$A.sock
B_PUB=KzETaL5ZMbcJUBnaaIpf/8sCfCptDvrtsrECFQCknlk=
T0=$SECONDS

hl_need_bins "$HL_TUNLESSD" "$WG_GO" "$CTL"

ctl() { "$CTL" -n "$A" "$@"; }
yq_get() { # <python expression on r (the reply mapping)>: evaluated on `tunlessctl --yaml show`
	ctl --yaml show | python3 -c 'import sys, yaml; r = yaml.safe_load(sys.stdin.read().replace("\n...\n", "\n")); print(eval(sys.argv[1]))' "$1"
}
# The configuration part of show: device, peers' settings, queue parameters. Left out are
# what moves while traffic goes on (the control plane's keepalives and handshakes): the read
# model's counters, by the kind it declares for each field (tunlessctl help --read-model), and
# the two gauges of the moment, uptime and the crypto ring's fill.
conf_snapshot() {
	ctl --json show | python3 -c '
import json, subprocess, sys
table = subprocess.run([sys.argv[1], "help", "--read-model"], capture_output=True, text=True, check=True).stdout
moving = {"uptime_s", "crypto_ring"} | {c[2].strip(" `") for c in (l.split("|") for l in table.splitlines()) if len(c) > 4 and c[3].strip() == "counter"}
r = json.load(sys.stdin)["result"]
d = {k: v for k, v in r["device"].items() if k not in moving}
peers = [{k: p.get(k) for k in ("public_key", "name", "allowed_ips", "persistent_keepalive")} for p in r["peers"]]
queues = [{k: v for k, v in q.items() if k in ("port", "worker") or (k.startswith(("aqm_", "shaper_")) and k not in moving)} for q in r["queues"]]
print(json.dumps({"device": d, "peers": peers, "queues": queues}, sort_keys=True))' "$CTL"
}

# Raw client: ctl_raw <mode> [payload]. Modes: req (payload with \n escapes, ends with "..."
# line added unless present), eof (payload, then shut down writing), big (70000 bytes, no end
# line), garbage (bytes with NULs, then "..."), silent (connect, send nothing, close).
# Prints the reply's error field (or "ok" / "closed"), then "closed" if the server closed.
cat >"/tmp/ctlraw$$.py" <<'EOF'
import socket, sys, yaml
path, mode = sys.argv[1], sys.argv[2]
arg = sys.argv[3].encode().decode("unicode_escape").encode() if len(sys.argv) > 3 else b""
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(path)
if mode == "silent":
    s.close(); print("silent"); sys.exit(0)
data = {"req": arg if arg.endswith(b"...\n") else arg + b"\n...\n", "eof": arg,
        "big": b"op: show\n" + b"# " + b"x" * 70000 + b"\n",
        "garbage": bytes(range(256)) * 4 + b"\n...\n"}[mode]
try:
    s.sendall(data)
    if mode == "eof":
        s.shutdown(socket.SHUT_WR)
except OSError as e:
    print("send failed:", e)
out = b""
while not out.endswith(b"\n...\n"):
    try:
        b = s.recv(65536)
    except OSError:
        break
    if not b:
        break
    out += b
if not out:
    print("closed"); sys.exit(0)
r = yaml.safe_load(out.decode().replace("\n...\n", "\n"))
print(r["error"]["field"] if r.get("status") == "error" else "ok", "|", r.get("error", {}).get("message", ""))
if mode in ("big", "garbage"):
    s.settimeout(3)
    try:
        rest = s.recv(1)
        print("closed" if rest == b"" else "open")
    except socket.timeout:
        print("open")
    except OSError:
        print("closed")
EOF
ctl_raw() { python3 "/tmp/ctlraw$$.py" "$SOCK" "$@"; }
# bad <desc> <want-field> <mode> [payload]: the reply names want-field; configuration unchanged.
bad() {
	local desc=$1 want=$2 got
	shift 2
	got=$(ctl_raw "$@" 2>&1)
	hl_note "  $desc -> ${got//$'\n'/ / }"
	case $got in
	"$want |"*) hl_ok "$desc: error names '$want'" ;;
	*) hl_nok "$desc: error names '$want'" ;;
	esac
}

# ---- lab and daemons ------------------------------------------------------------------------
lab_init "$P"
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$A /tmp/ctlraw$$.py"
lab_host_pair
lab_exec a ethtool -K veth-a tx off >/dev/null
lab_exec b ethtool -K veth-b tx off >/dev/null

# A stale socket file, as a killed daemon leaves it.
mkdir -p /run/tunless
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$SOCK"

hl_config "$LAB_DIR/a.yaml" host-a
cp "$LAB_DIR/a.yaml" "$LAB_DIR/a.orig.yaml"
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log"; then
	hl_nok "tunlessd starts over a stale control socket file"
	hl_finish
	exit 1
fi
hl_ok "tunlessd starts over a stale control socket file"
if ! hl_peer_start b wggo; then
	hl_nok "wireguard-go starts and takes its configuration"
	hl_finish
	exit 1
fi
hl_check "socket $SOCK is mode 0600" test "$(stat -c %a "$SOCK")" = 600
hl_check "/run/tunless is mode 0755" test "$(stat -c %a /run/tunless)" = 755
hl_check "ping a -> b through the tunnel" lab_wait_ping a 10.77.0.2 10

# ---- show ----------------------------------------------------------------------------------------
show=$(ctl show 2>&1)
hl_check "tunlessctl show exits 0" ctl show
hl_note "tunlessctl show:"
printf '%s\n' "$show" | sed 's/^/#   /'
hl_check "show: device name and mode" test "$(yq_get 'r["result"]["device"]["name"] + " " + r["result"]["device"]["mode"]')" = "$A host"
hl_check "show: one peer, wg0's key" test "$(yq_get '[p["public_key"] for p in r["result"]["peers"]]')" = "['$B_PUB']"
hl_check "show: handshake age present and small" \
	test "$(yq_get '0 <= __import__("time").time() - r["result"]["peers"][0]["last_handshake"] < 60')" = True
rx0=$(yq_get 'r["result"]["peers"][0]["rx_bytes"]')
tx0=$(yq_get 'r["result"]["peers"][0]["tx_bytes"]')
hl_ping a 10.77.0.2 >/dev/null
rx1=$(yq_get 'r["result"]["peers"][0]["rx_bytes"]')
tx1=$(yq_get 'r["result"]["peers"][0]["tx_bytes"]')
hl_note "peer rx_bytes $rx0 -> $rx1, tx_bytes $tx0 -> $tx1"
hl_check "show: peer rx_bytes grows with traffic" test "$rx1" -gt "$rx0"
hl_check "show: peer tx_bytes grows with traffic" test "$tx1" -gt "$tx0"
hl_check "show: wan and lan ports with rx/tx packets" \
	test "$(yq_get 'sorted(p["port"] for p in r["result"]["ports"] if p["rx_packets"] > 0 and p["tx_packets"] > 0 and p["ethdev_rx_packets"] > 0)')" = "['lan', 'wan']"
hl_check "show: a queue per port and worker, wan dequeued > 0" \
	test "$(yq_get 'len(r["result"]["queues"]) == 2 * r["result"]["device"]["workers"] and any(q["port"] == "wan" and q["dequeued"] > 0 for q in r["result"]["queues"])')" = True
hl_check "show: default AQM parameters (fq_codel's; no rtt, the L4S step at 1 ms, no byte limit and the fast quantum in force without a shaper)" \
	test "$(yq_get '{k: v for k, v in r["result"]["queues"][0].items() if k.startswith("aqm_")} == {"aqm_target_us": 10000, "aqm_interval_us": 200000, "aqm_rtt_us": 0, "aqm_l4s_us": 1000, "aqm_flow_rtt_pct": 20, "aqm_quantum": 65536, "aqm_quantum_fast": 65536, "aqm_flows": 1024, "aqm_limit": 10240, "aqm_memory_limit": 33554432, "aqm_byte_limit": 0, "aqm_ecn": True}')" = True
hl_check "show: every drop reason listed" test "$(yq_get '"aqm_codel" in r["result"]["drops"] and "xsk_ring_full" in r["result"]["drops"]')" = True
hl_check "show: workers with busy_percent" test "$(yq_get 'all(0 <= w["busy_percent"] <= 100 for w in r["result"]["workers"])')" = True
hl_check "show section=peers has only the peers and their count" test "$(ctl --yaml show section=peers | python3 -c 'import sys, yaml; print(list(yaml.safe_load(sys.stdin.read().replace("\n...\n", "\n"))["result"]))')" = "['peers_total', 'peers']"
hl_check "tunlessctl --json show parses with python3 -m json.tool" sh -c "'$CTL' -n '$A' --json show | python3 -m json.tool"
hl_check "tunlessctl --yaml show is one YAML document from --- to ..." \
	sh -c "'$CTL' -n '$A' --yaml show | python3 -c 'import sys, yaml; t = sys.stdin.read(); assert t.startswith(\"---\") and t.endswith(\"\n...\n\"); yaml.safe_load(t)'"

# ---- set -------------------------------------------------------------------------------------------
hl_check "set port=wan aqm.target_us=2000 shaper.rate_bps=100000000" ctl set port=wan aqm.target_us=2000 shaper.rate_bps=100000000
hl_check "next show: every wan queue has target 2000 us, interval unchanged, shaper 100 Mbit/s" \
	test "$(yq_get 'all(q["aqm_target_us"] == 2000 and q["aqm_interval_us"] == 200000 and q["shaper_rate_bps"] == 100000000 for q in r["result"]["queues"] if q["port"] == "wan")')" = True
hl_check "lan queues untouched" test "$(yq_get 'all(q["aqm_target_us"] == 10000 for q in r["result"]["queues"] if q["port"] == "lan")')" = True
hl_check "ping a -> b after set" hl_ping a 10.77.0.2

# ---- peer_add: a second wireguard-go (wg1) in b with a new key ------------------------------------------
C_PRIV=$(wg genkey)
C_PUB=$(printf '%s\n' "$C_PRIV" | wg pubkey)
printf '%s\n' "$C_PRIV" >"$LAB_DIR/c.key"
chmod 600 "$LAB_DIR/c.key"
lab_bg b "$LAB_DIR/wggo-wg1.log" env WG_PROCESS_FOREGROUND=1 "$WG_GO" wg1
HL_LOGS+=("$LAB_DIR/wggo-wg1.log")
lab_wait_for 10 lab_exec b wg show wg1
lab_exec b wg set wg1 private-key "$LAB_DIR/c.key" listen-port 51821 \
	peer "$HL_A_PUB" allowed-ips 10.77.0.1/32 endpoint 10.99.0.1:51820
lab_exec b ip addr add 10.78.0.3/32 dev wg1
lab_exec b ip link set wg1 mtu 1420 up
lab_exec b ip rule add from 10.78.0.3 table 100
lab_exec b ip route add 10.77.0.1/32 dev wg1 table 100

out=$(ctl peer-add public_key="$C_PUB" endpoint=10.99.0.2:51821 allowed_ips=10.78.0.3/32 name=wg1 2>&1)
rc=$?
hl_note "peer-add: exit $rc: $out"
hl_check "peer-add wg1's key (endpoint, allowed_ips, name) exits 0" test "$rc" = 0
hl_check "show lists the new peer with its name and allowed IP" \
	test "$(yq_get '[(p.get("name"), p["allowed_ips"]) for p in r["result"]["peers"] if p["public_key"] == "'"$C_PUB"'"]')" = "[('wg1', ['10.78.0.3/32'])]"
hl_check "working tunnel to the new peer: ping 10.78.0.3" lab_wait_ping a 10.78.0.3 15
hl_check "peer-add of the same key again is refused (exit 1)" sh -c "'$CTL' -n '$A' peer-add public_key='$C_PUB'; test \$? = 1"
hl_check "peer-update name=renamed persistent_keepalive=25" ctl peer-update public_key="$C_PUB" name=renamed persistent_keepalive=25
hl_check "show: name and keepalive updated" \
	test "$(yq_get '[(p.get("name"), p["persistent_keepalive"]) for p in r["result"]["peers"] if p["public_key"] == "'"$C_PUB"'"]')" = "[('renamed', 25)]"

# ---- peer_remove while traffic to the other peer flows ----------------------------------------------------
lab_bg a "$LAB_DIR/ping-rm.log" ping -c 50 -i 0.1 -W 2 10.77.0.2
ping_job=$LAB_LAST_PID
sleep 1
hl_check "peer-remove wg1's key during a ping to wg0" ctl peer-remove public_key="$C_PUB"
wait "$ping_job"
rx=$(awk '/packets transmitted/ { print $4 }' "$LAB_DIR/ping-rm.log")
hl_note "ping to the other peer during peer-remove: ${rx:-?}/50 received"
hl_check "no loss on the other peer during peer-remove (50/50)" test "${rx:-0}" = 50
hl_check "show no longer lists the removed peer" test "$(yq_get 'len(r["result"]["peers"])')" = 1
hl_check "host route to 10.78.0.3 removed" sh -c "! ip -n $(lab_ns a) route show 10.78.0.3 | grep -q ."
hl_check "peer-remove of an unknown key: exit 1" sh -c "'$CTL' -n '$A' peer-remove public_key='$C_PUB'; test \$? = 1"

# ---- reload -----------------------------------------------------------------------------------------------
sed -i -e 's/^  wan: {iface: veth-a}/  wan: {iface: veth-a, aqm: {target_us: 3000}}/' "$LAB_DIR/a.yaml"
cat >>"$LAB_DIR/a.yaml" <<EOF
  - name: wg1
    public_key: $C_PUB
    endpoint: 10.99.0.2:51821
    allowed_ips: [10.78.0.3/32]
EOF
reload=$(ctl --yaml reload 2>&1)
reload_rc=$?
hl_note "reload reply:"
printf '%s\n' "$reload" | sed 's/^/#   /'
hl_check "reload after adding a peer and changing the AQM target exits 0" test "$reload_rc" = 0
hl_check "reload reply: wg1 added, wan queues changed" \
	sh -c "printf '%s\n' \"\$1\" | python3 -c 'import sys, yaml; r = yaml.safe_load(sys.stdin.read().replace(\"\n...\n\", \"\n\"))[\"result\"]; assert r[\"peers_added\"] == [sys.argv[1]] and r[\"peers_removed\"] == [] and r[\"queues_changed\"] == [\"wan\"], r' '$C_PUB'" _ "$reload"
hl_check "show after reload: wan target 3000 us, shaper from the file (off)" \
	test "$(yq_get 'all(q["aqm_target_us"] == 3000 and q["shaper_rate_bps"] == 0 for q in r["result"]["queues"] if q["port"] == "wan")')" = True
hl_check "show after reload: the file's peer wg1 is back" \
	test "$(yq_get '[p.get("name") for p in r["result"]["peers"]]')" = "['host-b', 'wg1']"
hl_check "tunnel to wg1 works after reload" lab_wait_ping a 10.78.0.3 15
hl_check "reload again with no change: nothing added, removed or updated" \
	sh -c "'$CTL' -n '$A' --json reload | python3 -c 'import json, sys; r = json.load(sys.stdin)[\"result\"]; assert not (r[\"peers_added\"] or r[\"peers_removed\"] or r[\"peers_updated\"] or r[\"queues_changed\"]), r'"

before=$(conf_snapshot)
cp "$LAB_DIR/a.yaml" "$LAB_DIR/a.good.yaml"
sed -i -e 's/^mtu: 1420/mtu: 1400/' "$LAB_DIR/a.yaml"
printf '  - public_key: %s\n    allowed_ips: [10.78.0.9/32]\n' "$(wg genkey | wg pubkey)" >>"$LAB_DIR/a.yaml"
out=$(ctl reload 2>&1)
rc=$?
hl_note "reload with mtu changed: exit $rc: $out"
hl_check "reload of a restart-only key (mtu) exits 1 naming the field" \
	sh -c "test $rc = 1 && printf '%s' '$out' | grep -q 'mtu: changes need a restart'"
hl_check "nothing applied (configuration as before, no new peer)" test "$before" = "$(conf_snapshot)"
cp "$LAB_DIR/a.good.yaml" "$LAB_DIR/a.yaml"
printf 'peers: [\n' >>"$LAB_DIR/a.yaml"
out=$(ctl reload 2>&1)
rc=$?
hl_note "reload of a broken file: exit $rc: $out"
hl_check "reload of a broken file exits 1 with the loader's file:line message" \
	sh -c "test $rc = 1 && printf '%s' '$out' | grep -q 'a.yaml:[0-9]*: '"
hl_check "nothing applied after the broken file" test "$before" = "$(conf_snapshot)"
cp "$LAB_DIR/a.good.yaml" "$LAB_DIR/a.yaml"

# ---- bad input ----------------------------------------------------------------------------------------------
before=$(conf_snapshot)
bad "malformed YAML" "(document)" req 'op: [show\n'
bad "unknown operation" op req 'op: frobnicate'
bad "unknown top-level field" colour req 'op: show\ncolour: red'
bad "unknown field" args.aqm.target_usx req 'op: set\nargs: {port: wan, aqm: {target_usx: 1000}}'
bad "wrong type (string for integer)" args.aqm.target_us req 'op: set\nargs: {port: wan, aqm: {target_us: fast}}'
bad "wrong type (quoted integer)" args.aqm.limit req 'op: set\nargs: {port: wan, aqm: {limit: "100"}}'
bad "wrong type (mapping for prefix list)" args.allowed_ips req "op: peer_add\nargs: {public_key: $C_PUB, allowed_ips: {a: 1}}"
bad "out of range: aqm.flows=3 (not a power of two)" args.aqm.flows req 'op: set\nargs: {port: wan, aqm: {flows: 3}}'
bad "out of range: aqm.target_us=0" args.aqm.target_us req 'op: set\nargs: {port: wan, aqm: {target_us: 0}}'
bad "interval below target" args.aqm.interval_us req 'op: set\nargs: {port: wan, aqm: {target_us: 300000}}'
bad "out of range: persistent_keepalive=70000" args.persistent_keepalive req "op: peer_update\nargs: {public_key: $B_PUB, persistent_keepalive: 70000}"
bad "missing required field: set without port" args.port req 'op: set\nargs: {aqm: {target_us: 1000}}'
bad "missing required field: peer_add without public_key" args.public_key req 'op: peer_add\nargs: {allowed_ips: [10.9.9.9/32]}'
bad "bad key" args.public_key req 'op: peer_remove\nargs: {public_key: not-a-key}'
bad "allowed IP of another peer" "args.allowed_ips[1]" req "op: peer_add\nargs: {public_key: $(wg genkey | wg pubkey), allowed_ips: [10.9.9.9/32, 10.77.0.2/32]}"
bad "bad prefix in a list" "args.allowed_ips[0]" req "op: peer_add\nargs: {public_key: $(wg genkey | wg pubkey), allowed_ips: [10.0.0.300/32]}"
bad "two documents" "(document)" req 'op: show\n---\nop: show'
bad "not a mapping" "(document)" req '- op\n- show'
bad "request ended by shutting down the writing side" ok eof 'op: show'
bad "garbage bytes (NULs)" "(request)" garbage
bad "oversized request (70000 bytes)" "(request)" big
hl_check "garbage: connection closed after the error reply" sh -c "python3 /tmp/ctlraw$$.py '$SOCK' garbage | tail -n1 | grep -qx closed"
hl_check "oversized: connection closed after the error reply" sh -c "python3 /tmp/ctlraw$$.py '$SOCK' big | tail -n1 | grep -qx closed"
hl_check "a client that connects, sends nothing and disconnects" ctl_raw silent
hl_check "daemon still running" hl_tl_alive "$A"
hl_check "configuration unchanged by every bad request" test "$before" = "$(conf_snapshot)"
hl_check "ping a -> b still works" hl_ping a 10.77.0.2

# ---- tunlessctl: local checks, exit codes, watch, docs ----------------------------------------------------------
rc_is() { local want=$1; shift; "$@" >/dev/null 2>&1; [ $? = "$want" ]; }
hl_check "local type check: aqm.flows=abc -> exit 2, nothing sent" rc_is 2 ctl set port=wan aqm.flows=abc
hl_check "local range check: aqm.target_us=0 -> exit 2" rc_is 2 ctl set port=wan aqm.target_us=0
hl_check "unknown operation -> exit 2" rc_is 2 ctl frobnicate
hl_check "daemon refuses aqm.flows=3 -> exit 1" rc_is 1 ctl set port=wan aqm.flows=3
hl_check "no such instance -> exit 3" rc_is 3 "$CTL" -n nosuch$$ show
watch_out=$(ctl watch -i 0.5 --count 2 2>&1)
hl_check "watch --count 2 exits 0" ctl watch -i 0.3 --count 2
watch_ok() {
	[ "$(printf '%s' "$watch_out" | grep -o $'\033\[2J' | wc -l)" = 2 ] &&
		grep -q 'TX RATE' <<<"$watch_out" && grep -q 'DROP REASON' <<<"$watch_out" &&
		grep -q 'CRYPTO PPS' <<<"$watch_out" && grep -q 'crypto ring 0 of' <<<"$watch_out"
}
hl_check "watch: refreshed twice in place, queues, workers and drops" watch_ok
hl_check "docs/control-api.md equals tunlessctl help --markdown" \
	sh -c "'$CTL' help --markdown | diff -u '$TUNLESS_ROOT/docs/control-api.md' -"

# ---- shutdown ----------------------------------------------------------------------------------------------
hl_tunless_stop "$A" TERM 5
hl_check "tunlessd exits 0 on SIGTERM" test "$HL_TL_RC" = 0
hl_check "control socket removed on SIGTERM" test ! -e "$SOCK"

lab_cleanup
rm -rf "/var/run/dpdk/tunless-$A" "/tmp/ctlraw$$.py"
hl_check "no ${P}-* namespace left" test -z "$(lab_leftovers "$P")"
hl_note "runtime $((SECONDS - T0)) s"
hl_finish
