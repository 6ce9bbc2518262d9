#!/usr/bin/env bash
# The stock `wg` tool against tunless through the WireGuard UAPI socket.
#
#   ${P}-a                                               ${P}-b
#   tunlessd (configs/host-a.yaml, renamed tu<pid>a)     wireguard-go as wg0 (configs/host-b.yaml's key)
#     /run/wireguard/tu<pid>a.sock (private per ns)        10.77.0.2 fd77::2
#     host veth tu<pid>a 10.77.0.1/24 fd77::1/64
#     AF_XDP on veth-a 10.99.0.1 fd99::1  <──veth──>  veth-b 10.99.0.2 fd99::2
#
# Checks: a stale socket file is replaced at start; wg show / show dump / showconf after a
# ping; showconf fed to setconf changes nothing; wg set adds a peer (wg show, telemetry, host
# route) and removes it while the existing peer's ping keeps flowing; wg syncconf from a
# wg-quick style file; malformed requests on a raw socket get errno=-22 (minus EINVAL, as
# `wg` reads it) and change nothing; a refused `wg set` prints the error's text; an
# line longer than the server's line buffer is refused and the daemon keeps serving; wg set listen-port moves the port
# (a held port is refused with "Address already in use"; the new one is held, the old one
# freed, a peer handshakes with the new one over the XDP fast path); the socket file is gone
# after SIGTERM. Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=wu$$
HL_NAME_A=tu$(($$ % 100000))a   # unique instance name (DPDK runtime dir is global)
A=$HL_NAME_A
B_PUB=KzETaL5ZMbcJUBnaaIpf/8sCfCptDvrtsrECFQCknlk=
A_PRIV=AC9YAPkLtUwtZI/TLcjHKrXB5pwRcbZZdNaMDYgxPFY=
T0=$SECONDS

hl_need_bins "$HL_TUNLESSD" "$WG_GO"
command -v wg >/dev/null && command -v wg-quick >/dev/null ||
	{ echo "not ok wireguard-tools (wg, wg-quick) not installed"; exit 1; }

wga() { lab_exec a wg "$@"; }
sock_file() { printf '%s/%s/wireguard/%s.sock' "$LAB_DIR" "$(lab_ns a)" "$A"; }

# Raw UAPI client: uapi_raw <mode> [payload]; modes: req (send payload, print reply),
# big (a set=1 whose one line is 70000 bytes, then the blank line: print the reply or "closed").
cat_client() {
	cat >"$LAB_DIR/uapi_raw.py" <<'EOF'
import socket, sys
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(path)
data = b"set=1\n" + b"x" * 70000 + b"\n\n" if mode == "big" else sys.argv[3].encode().decode("unicode_escape").encode()
try:
    s.sendall(data)
except OSError:
    print("closed"); sys.exit(0)
out = b""
try:
    while not out.endswith(b"\n\n"):
        b = s.recv(65536)
        if not b:
            break
        out += b
except OSError:
    pass
print(out.decode().strip() if out else "closed")
EOF
}
uapi_raw() { lab_exec a python3 "$LAB_DIR/uapi_raw.py" "/run/wireguard/$A.sock" "$@"; }
errno_is() { # <want> <mode> [payload]
	local want=$1 got
	shift
	got=$(uapi_raw "$@" | awk -F= '/^errno=/ { print $2 }')
	[ "$got" = "$want" ] || { hl_note "  reply errno=${got:-none}, want $want"; return 1; }
}

# The configuration part of `wg show dump` (no handshake times, no byte counts).
conf_dump() { wga show "$A" dump | awk -F'\t' 'NR == 1 { print $2, $3, $4; next } { print $1, $2, $3, $4, $8 }'; }

# ---- lab and daemons ----------------------------------------------------------------------
lab_init "$P"
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$A"
lab_host_pair
lab_exec a ethtool -K veth-a tx off >/dev/null
lab_exec b ethtool -K veth-b tx off >/dev/null
cat_client

# A stale socket file, as a killed daemon leaves it: nobody listens on it.
mkdir -p "$(dirname "$(sock_file)")"
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$(sock_file)"

hl_config "$LAB_DIR/a.yaml" host-a
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log"; then
	hl_nok "tunlessd starts over a stale socket file"
	hl_finish
	exit 1
fi
hl_ok "tunlessd starts over a stale socket file"
if ! hl_peer_start b wggo; then
	hl_nok "wireguard-go starts and takes its configuration"
	hl_finish
	exit 1
fi
hl_check "socket file is mode 0600" test "$(stat -c %a "$(sock_file)")" = 600
hl_check "ping a -> b through the tunnel" lab_wait_ping a 10.77.0.2 10

# ---- wg show, dump, showconf ----------------------------------------------------------------
show=$(wga show "$A" 2>&1)
hl_note "wg show $A:"
printf '%s\n' "$show" | sed 's/^/#   /'
has() { printf '%s\n' "$show" | grep -q "$1"; }
hl_check "wg show: our public key" has "public key: $HL_A_PUB"
hl_check "wg show: listening port 51820" has "listening port: 51820"
hl_check "wg show: peer listed" has "peer: $B_PUB"
hl_check "wg show: endpoint 10.99.0.2:51820" has "endpoint: 10.99.0.2:51820"
hl_check "wg show: allowed ips" has "allowed ips: 10.77.0.2/32, fd77::2/128"
hl_check "wg show: latest handshake" has "latest handshake: "
hl_check "wg show: transfer" has "transfer: .* received, .* sent"

dump_ok() {
	local d
	d=$(wga show "$A" dump) || return 1
	printf '%s\n' "$d" | awk -F'\t' -v priv="$(echo "$A_PRIV" | base64 -d | base64)" \
		-v pub="$HL_A_PUB" -v bpub="$B_PUB" -v now="$(date +%s)" '
		NR == 1 { ok = $1 == priv && $2 == pub && $3 == 51820 && $4 == "off"; next }
		NR == 2 { ok = ok && $1 == bpub && $2 == "(none)" && $3 == "10.99.0.2:51820" &&
			  $4 == "10.77.0.2/32,fd77::2/128" && $5 > now - 60 && $5 <= now + 1 &&
			  $6 > 0 && $7 > 0 && $8 == "off" }
		END { exit !(ok && NR == 2) }'
}
hl_check "wg show dump: device and peer fields" dump_ok

wga showconf "$A" >"$LAB_DIR/conf1" 2>&1
hl_check "wg showconf: has [Interface] and [Peer]" \
	sh -c "grep -q '^\[Interface\]' '$LAB_DIR/conf1' && grep -q '^PublicKey = $B_PUB' '$LAB_DIR/conf1'"
before=$(conf_dump)
hl_check "wg setconf <showconf output> is accepted" wga setconf "$A" "$LAB_DIR/conf1"
wga showconf "$A" >"$LAB_DIR/conf2" 2>&1
hl_check "showconf -> setconf round-trips (showconf unchanged)" cmp -s "$LAB_DIR/conf1" "$LAB_DIR/conf2"
hl_check "wg show dump configuration unchanged by setconf" test "$before" = "$(conf_dump)"
hl_check "ping a -> b after setconf" lab_wait_ping a 10.77.0.2 10

# ---- wg set: add and remove a peer while traffic flows ----------------------------------------
NEW_PUB=$(wg genkey | wg pubkey)
lab_bg a "$LAB_DIR/ping-set.log" ping -c 40 -i 0.1 -W 1 10.77.0.2
ping_job=$LAB_LAST_PID
sleep 0.5
hl_check "wg set: add a peer with allowed-ips 10.77.0.50/32" wga set "$A" peer "$NEW_PUB" allowed-ips 10.77.0.50/32
new_listed() { wga show "$A" allowed-ips | grep -q "^$NEW_PUB	10.77.0.50/32$"; }
hl_check "wg show lists the new peer with 10.77.0.50/32" new_listed
hl_check "telemetry /tunless/peers shows the new peer" sh -c "'$TUNLESS_ROOT/scripts/tl-telemetry' '$A' /tunless/peers | grep -qF '$NEW_PUB'"
route_new() { lab_exec a ip route show 10.77.0.50 | grep -q "dev $A"; }
hl_check "host route 10.77.0.50 via $A added" route_new
sleep 0.5
hl_check "wg set: remove the new peer" wga set "$A" peer "$NEW_PUB" remove
new_gone() { ! wga show "$A" peers | grep -qF "$NEW_PUB"; }
hl_check "wg show no longer lists the removed peer" new_gone
route_gone() { ! route_new; }
hl_check "host route 10.77.0.50 removed with the peer" route_gone
wait "$ping_job"
rx=$(awk '/packets transmitted/ { print $4 }' "$LAB_DIR/ping-set.log")
hl_note "ping during wg set add/remove: ${rx:-?}/40 received"
hl_check "existing peer's ping kept flowing (>= 38 of 40)" test "${rx:-0}" -ge 38

# ---- wg syncconf from a wg-quick style file ------------------------------------------------------
NEW2_PUB=$(wg genkey | wg pubkey)
cat >"$LAB_DIR/base.conf" <<EOF
[Interface]
PrivateKey = $A_PRIV
ListenPort = 51820
Address = 10.77.0.1/24, fd77::1/64
MTU = 1420

[Peer]
PublicKey = $B_PUB
Endpoint = 10.99.0.2:51820
AllowedIPs = 10.77.0.2/32, fd77::2/128
EOF
cat "$LAB_DIR/base.conf" - >"$LAB_DIR/$A.conf" <<EOF

[Peer]
PublicKey = $NEW2_PUB
AllowedIPs = 10.77.0.60/32, fd77::60/128
PersistentKeepalive = 25
EOF
hl_check "wg syncconf <(wg-quick strip ...) is accepted" \
	lab_exec a bash -c "wg syncconf '$A' <(wg-quick strip '$LAB_DIR/$A.conf')"
want=$(printf '%s\t10.77.0.2/32 fd77::2/128\n%s\t10.77.0.60/32 fd77::60/128\n' "$B_PUB" "$NEW2_PUB" | sort)
got=$(wga show "$A" allowed-ips | sort)
hl_check "syncconf: allowed IPs of both peers match the file" test "$want" = "$got"
[ "$want" = "$got" ] || hl_note "  got: $got"
ka_ok() { wga show "$A" persistent-keepalive | grep -q "^$NEW2_PUB	25$"; }
hl_check "syncconf: persistent keepalive 25 on the new peer" ka_ok
hl_check "syncconf: host route fd77::60/128 added" sh -c "ip -n $(lab_ns a) -6 route show fd77::60 | grep -q 'dev $A'"
hl_check "ping a -> b after syncconf" lab_wait_ping a 10.77.0.2 10
# Syncing again with the new peer dropped from the file removes it.
cp "$LAB_DIR/base.conf" "$LAB_DIR/$A.conf"
lab_exec a bash -c "wg syncconf '$A' <(wg-quick strip '$LAB_DIR/$A.conf')"
hl_check "syncconf without the new peer removes it" test "$(wga show "$A" peers)" = "$B_PUB"
hl_check "host route 10.77.0.60 removed" sh -c "! ip -n $(lab_ns a) route show 10.77.0.60 | grep -q ."

# ---- malformed requests on a raw socket ---------------------------------------------------------
before=$(conf_dump)
NEW3_HEX=$(wg genkey | wg pubkey | base64 -d | od -An -tx1 | tr -d ' \n')
hl_check "raw get=1 answers errno=0" errno_is 0 req 'get=1\n\n'
hl_check "unknown key -> errno=-22" errno_is -22 req 'set=1\nno_such_key=1\n\n'
hl_check "bad hex public key -> errno=-22" errno_is -22 req 'set=1\npublic_key=zz\n\n'
hl_check "allowed_ip=10.0.0.300/32 -> errno=-22" errno_is -22 req "set=1\npublic_key=$NEW3_HEX\nallowed_ip=10.0.0.300/32\n\n"
hl_check "good peer then bad line -> errno=-22" errno_is -22 req "set=1\npublic_key=$NEW3_HEX\nallowed_ip=10.77.0.70/32\nendpoint=nowhere\n\n"
hl_check "unknown operation -> errno=-22" errno_is -22 req 'hello=1\n\n'
hl_check "protocol_version=2 -> errno=-22" errno_is -22 req "set=1\npublic_key=$NEW3_HEX\nprotocol_version=2\n\n"
hl_check "fwmark=7 -> errno=-95 (not supported)" errno_is -95 req 'set=1\nfwmark=7\n\n'
# `wg` prints strerror of minus the reply's errno.
wg_refused() { # <text> <wg set arguments...>
	local want=$1 out
	shift
	out=$(wga set "$A" "$@" 2>&1) && { hl_note "  wg set $* succeeded"; return 1; }
	hl_note "  wg set $*: $out"
	printf '%s\n' "$out" | grep -qF "$want" && ! printf '%s\n' "$out" | grep -q 'Unknown error'
}
hl_check "wg set fwmark 7 is refused with 'Operation not supported'" wg_refused "Operation not supported" fwmark 7
hl_check "wg show unchanged after the bad requests" test "$before" = "$(conf_dump)"
big=$(uapi_raw big)
hl_note "a 70000-byte line: ${big:-?}"
hl_check "a line over the line buffer is refused (errno=-22)" \
	sh -c "case '$big' in *errno=-22*) exit 0;; *) exit 1;; esac"
hl_check "daemon still serves wg show after it" wga show "$A"
hl_check "wg show still unchanged" test "$before" = "$(conf_dump)"
hl_check "ping a -> b still works" hl_ping a 10.77.0.2

# ---- private key: a new identity, then back (every peer re-handshakes) ---------------------------
(umask 077 && wg genkey >"$LAB_DIR/new.key")
printf '%s\n' "$A_PRIV" >"$LAB_DIR/a.key"
chmod 600 "$LAB_DIR/a.key"
hl_check "wg set private-key <new key> is accepted" wga set "$A" private-key "$LAB_DIR/new.key"
hl_check "wg show reports the new public key" \
	test "$(wga show "$A" public-key)" = "$(wg pubkey <"$LAB_DIR/new.key")"
hl_check "wg set private-key <original key> is accepted" wga set "$A" private-key "$LAB_DIR/a.key"
hl_check "ping a -> b after the key round trip (new handshake)" lab_wait_ping a 10.77.0.2 10

# ---- wg set listen-port: the port moves (UDP sockets, XDP steering, workers) ------------------------
udp_bind() { # <port>: can a plain UDP socket of ns a take the port (on every interface)?
	lab_exec a python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", int(sys.argv[1])))' "$1" 2>/dev/null
}
hl_check "raw listen_port=0 -> errno=-22 (a random port is not supported)" errno_is -22 req 'set=1\nlisten_port=0\n\n'
# A port some other program holds: refused with its error, nothing changes.
lab_bg a "$LAB_DIR/holder.log" python3 -c 'import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 51998))
print("holding", flush=True); time.sleep(60)'
holder=$LAB_LAST_PID
lab_wait_for 5 grep -q holding "$LAB_DIR/holder.log"
hl_check "wg set listen-port 51998 (held by another program) is refused: 'Address already in use'" \
	wg_refused "Address already in use" listen-port 51998
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
hl_check "it logs why and keeps 51820" grep -q 'listen port: cannot move to UDP 51998 on veth-a: Address already in use; still 51820' \
	"$LAB_DIR/tunless-a.log"
port_is() { test "$(wga show "$A" listen-port)" = "$1"; }
hl_check "wg show: still listening on 51820" port_is 51820
tel_slow() { hl_tel "$A" /tunless/device --get slowpath_rx; }
hl_check "wg set listen-port 51999 is accepted" wga set "$A" listen-port 51999
hl_check "wg show: listening port 51999" port_is 51999
hl_check "telemetry /tunless/device: listen_port 51999" test "$(hl_tel "$A" /tunless/device --get listen_port)" = 51999
port_held() { ! udp_bind "$1"; }
hl_check "the new port is held in the kernel (a plain socket cannot take 51999)" port_held 51999
hl_check "the old port is free (a plain socket takes 51820)" udp_bind 51820
# The peer forgets tunless and meets it again on the new port: a fresh handshake and data, on
# the fast path (the steering moved: no datagram comes through the kernel's socket).
slow0=$(tel_slow)
lab_exec b wg set wg0 peer "$HL_A_PUB" remove
lab_exec b wg set wg0 peer "$HL_A_PUB" allowed-ips 10.77.0.1/32,fd77::1/128 endpoint 10.99.0.1:51999
hl_check "ping b -> a on the new port (new handshake)" lab_wait_ping b 10.77.0.1 15
peer_sees_new() {
	lab_exec b wg show wg0 endpoints | grep -q '10.99.0.1:51999' && hl_wg_has_handshake b
}
hl_check "wg show on the peer: tunless at 10.99.0.1:51999, with a handshake" peer_sees_new
hl_check "ping a -> b from the new port" hl_ping a 10.77.0.2
hl_check "the peer still has tunless at :51999 (what tunless sends comes from it)" peer_sees_new
hl_check "no datagram took the kernel's slow path (XDP steers the new port)" test "$(tel_slow)" = "$slow0"

# ---- shutdown --------------------------------------------------------------------------------
hl_tunless_stop "$A" TERM 5
hl_check "tunlessd exits 0 on SIGTERM" test "$HL_TL_RC" = 0
hl_check "socket file removed on SIGTERM" test ! -e "$(sock_file)"

# A live listener on the socket (another daemon of that name): tunlessd refuses to start and
# leaves the other's socket alone.
lab_bg a "$LAB_DIR/listener.log" python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4); print("listening", flush=True); time.sleep(60)' \
	"/run/wireguard/$A.sock"
listener=$LAB_LAST_PID
lab_wait_for 5 grep -q listening "$LAB_DIR/listener.log"
HL_LOGS+=("$LAB_DIR/tunless-a2.log")
lab_bg a "$LAB_DIR/tunless-a2.log" "$HL_TUNLESSD" -c "$LAB_DIR/a.yaml"
second=$LAB_LAST_PID
lab_wait_for 20 sh -c "! kill -0 $second 2>/dev/null"
wait "$second"
rc=$?
hl_check "second daemon on a live socket exits non-zero (status $rc)" test "$rc" -ne 0
hl_check "it says another daemon is serving the socket" grep -q 'another daemon is serving' "$LAB_DIR/tunless-a2.log"
hl_check "the live socket file is left in place" test -S "$(sock_file)"
kill "$listener" 2>/dev/null

lab_cleanup
rm -rf "/var/run/dpdk/tunless-$A"
hl_check "no ${P}-* namespace left" test -z "$(lab_leftovers "$P")"
hl_note "runtime $((SECONDS - T0)) s"
hl_finish
