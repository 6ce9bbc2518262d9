#!/usr/bin/env bash
# A hub's many peers: tunless vs wireguard-go at N peers, on the same machine.
#
#   ${P}-a   tunless host mode (configs/host-a.yaml + N generated peers) | wireguard-go wg0
#            veth-a 10.99.0.1/24  <── veth ──>  veth-b 10.99.0.2/24  ${P}-b (not used)
#
# Per implementation and N: start-up (process start until the UAPI answers `wg show`; tunless
# loads its N peers from the file, wireguard-go gets them with one `wg setconf`), the time of
# that `wg setconf` (wireguard-go) or of a `wg syncconf` to the same N peers (tunless, a no-op
# diff), resident memory, one `wg set` that adds a peer and one that removes it, a
# `wg setconf` of all N + 1 peers through the stock tool, SIGTERM until the process is gone;
# then (tunless) a restart from the file, timed as the start-up; then all N peers return at
# once: bench/hsgen.py in ${P}-b plays N distinct initiators (their own keys and source
# addresses in 172.16.0.0/12) and counts completed handshakes per second, cookies honoured;
# resident memory with N sessions, and SIGTERM again. A step that fails is recorded with its
# error (for example a request over a limit). Peers: distinct X25519 keys, one /32 each in
# 10.128.0.0/9, no endpoint (a hub's road warriors connect to it). The `wg` steps are timed
# around `ip netns exec wg ...` (about 7 ms of that is the exec itself, measured with `true`).
# Benchmarks are not tests: one run per point, seconds.
#
# Usage: bench/peers.sh [-n 1000,2000] [-i tunless,wggo] [-o out.json]
# Env: TUNLESS_BUILD (tunlessd), TL_LAB_LOCK (held for each lab).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/env.sh
. "$ROOT/scripts/env.sh"
# shellcheck source=../tests/integration/lab.sh
. "$ROOT/tests/integration/lab.sh"

CMDLINE="bench/peers.sh $*"
COUNTS=1000,2000
IMPLS=tunless,wggo
OUT=
while getopts "n:i:o:h" o; do
	case $o in
	n) COUNTS=$OPTARG ;;
	i) IMPLS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	*) sed -n '2,17p' "$0"; exit 2 ;;
	esac
done
OUT=${OUT:-$ROOT/docs/results/peers-$(date +%Y-%m-%d).json}
TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
WORK=$(mktemp -d /tmp/tl-peers.XXXXXX)
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
trap 'lab_cleanup 2>/dev/null; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM     # a signal ends the run (the EXIT trap cleans up), never resumes it

say() { printf '[peers] %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 4))" "$1" "$(now)"; }

# gen <n> <dir>: dir/peers.yaml (tunless peers: list), dir/wg.conf ([Interface] + N [Peer]),
# dir/extra.pub (one more peer's key)
gen() {
	python3 - "$1" "$2" "$(sed -n 's/^private_key: //p' "$ROOT/configs/host-a.yaml")" <<'EOF'
import base64, sys
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives import serialization as s
n, d, priv = int(sys.argv[1]), sys.argv[2], sys.argv[3]
privs = [X25519PrivateKey.generate() for _ in range(n + 1)]
def pub(k):
    return base64.b64encode(k.public_key().public_bytes(s.Encoding.Raw, s.PublicFormat.Raw)).decode()
keys = [pub(k) for k in privs]
with open(d + "/initiators.keys", "w") as f:
    for k in privs[:n]:
        f.write(base64.b64encode(k.private_bytes(s.Encoding.Raw, s.PrivateFormat.Raw, s.NoEncryption())).decode() + "\n")
ip = lambda i: "10.%d.%d.%d/32" % (128 + (i >> 16), (i >> 8) & 255, i & 255)
with open(d + "/peers.yaml", "w") as f:
    f.write("peers:\n")
    for i in range(n):
        f.write("  - {public_key: %s, allowed_ips: [%s]}\n" % (keys[i], ip(i)))
with open(d + "/wg.conf", "w") as f:
    f.write("[Interface]\nPrivateKey = %s\nListenPort = 51820\n" % priv)
    for i in range(n):
        f.write("\n[Peer]\nPublicKey = %s\nAllowedIPs = %s\n" % (keys[i], ip(i)))
with open(d + "/wg-all.conf", "w") as f:
    f.write(open(d + "/wg.conf").read() + "\n[Peer]\nPublicKey = %s\nAllowedIPs = %s\n" % (keys[n], ip(n)))
open(d + "/extra.pub", "w").write(keys[n] + "\n")
open(d + "/extra.ip", "w").write(ip(n) + "\n")
EOF
}

record() { # record <json object>
	printf '%s\n' "$1" >>"$RESULTS"
}

# timed <var> cmd...: runs cmd in ns a, sets var to the seconds taken or "error: <output>"
timed() {
	local __v=$1 t0 out rc
	shift
	t0=$(now)
	if out=$(lab_exec a "$@" 2>&1); then
		printf -v "$__v" '%s' "$(since "$t0")"
	else
		rc=$?        # no output: say how it ended (141: SIGPIPE, the server closed mid-request)
		out=$(printf '%s' "$out" | tail -n 1 | cut -c1-160)
		printf -v "$__v" 'error: %s' "${out:-exit status $rc}"
	fi
}

# uapi_set <iface> <add|remove> <dir>: the extra peer added (with its allowed IP) or removed by
# one set=1 on the UAPI socket, timed from the write to the reply in the client (no process
# start in the figure); seconds, or "error: <reply>"
uapi_set() {
	lab_exec a python3 - "/run/wireguard/$1.sock" "$2" "$(cat "$3/extra.pub")" "$(cat "$3/extra.ip")" <<'EOF2'
import base64, socket, sys, time
path, what, pub, ip = sys.argv[1:5]
key = base64.b64decode(pub).hex()
req = "set=1\npublic_key=%s\n%s\n\n" % (key, "allowed_ip=" + ip if what == "add" else "remove=true")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
t0 = time.perf_counter()
s.sendall(req.encode())
out = b""
while not out.endswith(b"\n\n"):
    b = s.recv(4096)
    if not b:
        break
    out += b
t = time.perf_counter() - t0
print(round(t, 6) if out.strip() == b"errno=0" else "error: " + out.decode().strip())
EOF2
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# the pid of the process named comm in namespace a
ns_pid() {
	local p
	for p in $(ip netns pids "$(lab_ns a)" 2>/dev/null); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$1" ] && { echo "$p"; return 0; }
	done
	return 1
}

stop_time() { # stop_time <pid>: SIGTERM until gone, seconds
	local pid=$1 t0
	t0=$(now)
	kill -TERM "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
	since "$t0"
}

SERVER_PUB=iZJymIxf26UFE0sFwPH/37HRJKkv8mPlHrxKAsTi020=   # configs/host-a.yaml's public key
# handshakes <dir>: N distinct initiators return at once (bench/hsgen.py in ns b); its JSON
handshakes() {
	lab_exec b ip route add local 172.16.0.0/12 dev lo 2>/dev/null
	lab_exec a ip route add 172.16.0.0/12 via 10.99.0.2 2>/dev/null
	local out
	out=$(lab_exec b /usr/bin/python3 "$ROOT/bench/hsgen.py" "$1/initiators.keys" "$SERVER_PUB" 10.99.0.1:51820 \
		--timeout 120 2>"$1/hsgen.err" | tail -n 1)
	case $out in
	'{'*) echo "$out" ;;
	*) echo "{\"error\": $(js "$(tail -n 1 "$1/hsgen.err")")}" ;;
	esac
}

js() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
num_or_str() { case $1 in error:*) js "$1" ;; *) echo "$1" ;; esac; }

# tunless_up <cfg> <name> <log>: starts tunlessd, prints the seconds until `wg show` answers
tunless_up() {
	local t0
	t0=$(now)
	lab_bg a "$3" "$TUNLESSD" -c "$1"
	lab_wait_for 300 lab_exec a wg show "$2" >/dev/null || return 1
	since "$t0"
}

run_tunless() {
	local n=$1 dir=$2 cfg pid up up2 set_t add_t del_t add_u del_u all_t stop stop2 rss rss2 hs name=bp$$a
	cfg=$dir/a.yaml
	{ sed -e "s/^name: .*/name: $name/" -e '/^peers:/,$d' "$ROOT/configs/host-a.yaml"; cat "$dir/peers.yaml"; } >"$cfg"
	if ! up=$(tunless_up "$cfg" "$name" "$dir/tunless.log"); then
		record "{\"impl\":\"tunless\",\"peers\":$n,\"error\":$(js "did not come up: $(tail -n 2 "$dir/tunless.log")")}"
		lab_cleanup
		return
	fi
	pid=$(ns_pid tunlessd)
	rss=$(rss_kb "$pid")
	timed set_t wg syncconf "$name" "$dir/wg.conf"
	timed add_t wg set "$name" peer "$(cat "$dir/extra.pub")" allowed-ips "$(cat "$dir/extra.ip")"
	timed del_t wg set "$name" peer "$(cat "$dir/extra.pub")" remove
	add_u=$(uapi_set "$name" add "$dir")
	del_u=$(uapi_set "$name" remove "$dir")
	timed all_t wg setconf "$name" "$dir/wg-all.conf"
	stop=$(stop_time "$pid")
	if ! up2=$(tunless_up "$cfg" "$name" "$dir/tunless2.log"); then
		up2=$(js "error: did not come up again: $(tail -n 2 "$dir/tunless2.log")")
	fi
	hs=$(handshakes "$dir")
	pid=$(ns_pid tunlessd)
	rss2=$(rss_kb "$pid")
	stop2=$(stop_time "$pid")
	record "{\"impl\":\"tunless\",\"peers\":$n,\"loadavg\":$(js "$LOADAVG"),\"loadavg_end\":$(js "$(cut -d" " -f1-3 /proc/loadavg)"),\"startup_s\":$up,\"rss_kb\":$rss,\"syncconf_s\":$(num_or_str "$set_t"),\"add_s\":$(num_or_str "$add_t"),\"remove_s\":$(num_or_str "$del_t"),\"add_uapi_s\":$(num_or_str "$add_u"),\"remove_uapi_s\":$(num_or_str "$del_u"),\"setconf_all_s\":$(num_or_str "$all_t"),\"sigterm_exit_s\":$stop,\"restart_s\":$up2,\"handshakes\":$hs,\"rss_sessions_kb\":$rss2,\"sigterm_sessions_exit_s\":$stop2}"
	lab_cleanup
}

run_wggo() {
	local n=$1 dir=$2 pid t0 up set_t add_t del_t add_u del_u all_t stop rss rss2 hs
	t0=$(now)
	lab_bg a "$dir/wggo.log" env WG_PROCESS_FOREGROUND=1 "$WG_GO" wg0
	lab_wait_for 10 lab_exec a wg show wg0 >/dev/null || { record "{\"impl\":\"wggo\",\"peers\":$n,\"error\":\"no wg0\"}"; lab_cleanup; return; }
	timed set_t wg setconf wg0 "$dir/wg.conf"
	up=$(since "$t0")
	pid=$(ns_pid wireguard-go)
	rss=$(rss_kb "$pid")
	timed add_t wg set wg0 peer "$(cat "$dir/extra.pub")" allowed-ips "$(cat "$dir/extra.ip")"
	timed del_t wg set wg0 peer "$(cat "$dir/extra.pub")" remove
	add_u=$(uapi_set wg0 add "$dir")
	del_u=$(uapi_set wg0 remove "$dir")
	timed all_t wg setconf wg0 "$dir/wg-all.conf"
	lab_exec a ip addr add 10.99.0.1/24 dev veth-a 2>/dev/null
	lab_exec a ip link set wg0 up
	hs=$(handshakes "$dir")
	rss2=$(rss_kb "$pid")
	stop=$(stop_time "$pid")
	record "{\"impl\":\"wggo\",\"peers\":$n,\"loadavg\":$(js "$LOADAVG"),\"loadavg_end\":$(js "$(cut -d" " -f1-3 /proc/loadavg)"),\"startup_s\":$up,\"rss_kb\":$rss,\"setconf_s\":$(num_or_str "$set_t"),\"add_s\":$(num_or_str "$add_t"),\"remove_s\":$(num_or_str "$del_t"),\"add_uapi_s\":$(num_or_str "$add_u"),\"remove_uapi_s\":$(num_or_str "$del_u"),\"setconf_all_s\":$(num_or_str "$all_t"),\"handshakes\":$hs,\"rss_sessions_kb\":$rss2,\"sigterm_sessions_exit_s\":$stop}"
	lab_cleanup
}

IFS=, read -ra NS <<<"$COUNTS"
IFS=, read -ra LIST <<<"$IMPLS"
for n in "${NS[@]}"; do
	dir=$WORK/n$n
	mkdir -p "$dir"
	say "$n peers: generating keys"
	gen "$n" "$dir" || exit 1
	for impl in "${LIST[@]}"; do
		say "$n peers: $impl"
		exec 9>"${TL_LAB_LOCK:-/dev/null}"
		[ -z "${TL_LAB_LOCK:-}" ] || flock 9
		lab_init "bp$$"
		lab_host_pair
		LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)   # the machine is shared: said with each row
		case $impl in
		tunless) run_tunless "$n" "$dir" ;;
		wggo | wireguard-go) run_wggo "$n" "$dir" ;;
		*) say "unknown implementation $impl"; exit 2 ;;
		esac
		exec 9>&-
	done
done
trap - EXIT INT TERM
mkdir -p "$(dirname "$OUT")"
python3 - "$RESULTS" "$OUT" "$(git -C "$ROOT" describe --always --dirty 2>/dev/null)" "$CMDLINE" <<'EOF'
import json, os, platform, sys, time
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
doc = {"benchmark": "peers", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": sys.argv[3],
       "command": sys.argv[4], "machine": {"kernel": platform.release(), "cores": os.cpu_count()},
       "results": rows}
json.dump(doc, open(sys.argv[2], "w"), indent=2)
for r in rows:
    h = r.get("handshakes") or {}
    r["hs_per_s"] = h.get("handshakes_per_s", h.get("error"))
cols = ["startup_s", "restart_s", "rss_kb", "rss_sessions_kb", "setconf_s", "syncconf_s", "add_s", "remove_s",
        "add_uapi_s", "remove_uapi_s", "setconf_all_s", "hs_per_s", "sigterm_exit_s", "sigterm_sessions_exit_s"]
print("%-8s %7s " % ("impl", "peers") + " ".join("%12s" % c[:12] for c in cols))
for r in rows:
    if "error" in r:
        print("%-8s %7d  ERROR %s" % (r["impl"], r["peers"], r["error"]))
        continue
    cell = lambda v: ("%12s" % "-") if v is None else ("%12s" % ("ERR" if isinstance(v, str) else v))
    print("%-8s %7d " % (r["impl"], r["peers"]) + " ".join(cell(r.get(c)) for c in cols) + "  load " + r.get("loadavg", "?"))
for r in rows:
    if r.get("handshakes"):
        print("  %s %d handshakes: %s" % (r["impl"], r["peers"], json.dumps(r["handshakes"])))
for r in rows:
    r.pop("hs_per_s", None)
    for c in cols:
        if isinstance(r.get(c), str) and c != "hs_per_s":
            print("  %s %d %s: %s" % (r["impl"], r["peers"], c, r[c]))
print("JSON: " + sys.argv[2])
EOF
rm -rf "$WORK"
