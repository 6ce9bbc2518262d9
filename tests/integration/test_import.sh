#!/usr/bin/env bash
# A wg-quick user switches in one step: the demo's road warrior (configs/roadwarrior.conf, the
# wg-quick file wireguard-go runs in scripts/demo.sh) goes through `tunlessctl import` and
# runs as tunlessd in its place, in the demo's topology (lab_gateway + lab_add_roadwarrior,
# gwa = tunless with configs/gateway-a.yaml):
#   import    exit 0, the WAN port named on stderr, the output mode 600 (it holds the private
#             key), tunlessd --check accepts the output;
#   traffic   rw -> client 10.1.0.2 and client -> rw 10.3.0.2 through the tunnel, gwa's
#             roadwarrior peer has a session;
#   round     `wg showconf` of the running instance gives back the file's private key, peer,
#   trip      endpoint, allowed IPs and keepalive; the host interface carries Address with
#             MTU 1420 and a route for the peer's allowed IPs, as wg-quick would set up.
# Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

CTL=$TUNLESS_BUILD/src/cli/tunlessctl
SRC=$TUNLESS_ROOT/configs/roadwarrior.conf
hl_need_bins "$HL_TUNLESSD" "$CTL"
hl_need_cmds wg

P=im$$
GWA=im$(($$ % 100000))g
RW=im$(($$ % 100000))r
lab_init "$P"
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$GWA /var/run/dpdk/tunless-$RW"
lab_gateway
lab_add_roadwarrior

sed "s/^name: gwa\$/name: $GWA/" "$TUNLESS_ROOT/configs/gateway-a.yaml" >"$LAB_DIR/gwa.yaml"
hl_tunless_start gwa "$LAB_DIR/gwa.yaml" "$LAB_DIR/gwa.log" || { hl_nok "gwa (tunless) started"; hl_finish; exit 1; }
hl_ok "gwa (tunless, configs/gateway-a.yaml) started"

# --- the switch: one command ---------------------------------------------------------------------
CFG=$LAB_DIR/rw.yaml
"$CTL" import "$SRC" -o "$CFG" --name "$RW" --wan wan-rw 2>"$LAB_DIR/import.err"
rc=$?
hl_check_out "tunlessctl import configs/roadwarrior.conf --wan wan-rw: exit 0" sh -c "cat '$LAB_DIR/import.err'; [ $rc -eq 0 ]"
hl_check "import names the WAN port on stderr" grep -q 'WAN port: wan-rw' "$LAB_DIR/import.err"
hl_check_out "the imported file, holding the private key, is mode 600" sh -c "stat -c %a '$CFG'; [ \$(stat -c %a '$CFG') = 600 ]"
hl_check_out "tunlessd --check accepts the imported file" "$HL_TUNLESSD" --check -c "$CFG"
hl_tunless_start rw "$CFG" "$LAB_DIR/rw.log" || { hl_nok "the imported road warrior runs as tunlessd"; hl_finish; exit 1; }
hl_ok "the imported road warrior runs as tunlessd in rw"

hl_check "rw -> client 10.1.0.2 answers through the tunnel" lab_wait_ping rw 10.1.0.2 20
hl_check "client -> rw 10.3.0.2 answers" lab_exec client ping -c 3 -i 0.2 -W 2 -q 10.3.0.2
hl_check "gwa's peer roadwarrior has a session" test "$(hl_tel "$GWA" /tunless/peers --get peer1.session)" = 1

# --- round trip: what runs is what the wg-quick file said ------------------------------------------
lab_exec rw wg showconf "$RW" >"$LAB_DIR/showconf" 2>&1
hl_check_out "wg showconf gives back the file's keys, peer, endpoint, allowed IPs, keepalive" \
	python3 - "$SRC" "$LAB_DIR/showconf" <<'EOF'
import sys


def ini(path):
    """[Interface] and [Peer] keys as wg reads them (comments, comma lists, case)."""
    sec, out = None, {"interface": {}, "peers": []}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            sec = {} if line.lower() == "[peer]" else out["interface"]
            if line.lower() == "[peer]":
                out["peers"].append(sec)
            continue
        k, v = (s.strip() for s in line.split("=", 1))
        sec[k.lower()] = ",".join(sorted(x.strip() for x in v.split(","))) if k.lower() in ("allowedips", "address") else v
    return out


want, got = ini(sys.argv[1]), ini(sys.argv[2])
bad = []
if got["interface"].get("privatekey") != want["interface"]["privatekey"]:
    bad.append("PrivateKey")
if len(got["peers"]) != len(want["peers"]):
    bad.append("%d peers, want %d" % (len(got["peers"]), len(want["peers"])))
for g, w in zip(got["peers"], want["peers"]):
    for k in ("publickey", "endpoint", "allowedips", "persistentkeepalive"):
        if g.get(k) != w.get(k):
            bad.append("%s: %s, want %s" % (k, g.get(k), w.get(k)))
print("; ".join(bad) or "PrivateKey, PublicKey, Endpoint, AllowedIPs, PersistentKeepalive equal")
sys.exit(1 if bad else 0)
EOF
hl_check "the host interface $RW carries Address 10.3.0.2/32" \
	sh -c "ip -n '$(lab_ns rw)' -4 addr show dev '$RW' | grep -q 'inet 10.3.0.2/32'"
hl_check "... with MTU 1420 (wg-quick's default)" sh -c "ip -n '$(lab_ns rw)' link show dev '$RW' | grep -q 'mtu 1420 '"
hl_check "... and a route for AllowedIPs 10.1.0.0/24" sh -c "ip -n '$(lab_ns rw)' route show 10.1.0.0/24 | grep -q 'dev $RW'"

hl_tunless_stop "$RW" TERM 10
hl_check "the road warrior's tunlessd exits 0 on SIGTERM" test "$HL_TL_RC" -eq 0
hl_finish
