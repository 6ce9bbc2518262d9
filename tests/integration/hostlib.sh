# shellcheck shell=bash
# Helpers for host-mode integration tests: TAP-ish assertions, the tunless daemon, its
# telemetry, and the interop peers (wireguard-go, boringtun-cli) configured with `wg`.
# Source lab.sh and scripts/env.sh first. Keys are the demo keys of configs/host-a.yaml
# (tunless, side a) and configs/host-b.yaml (the peer on side b, whatever implements it).
#
#   hl_ok/hl_nok <desc>          count and print "ok <desc>" / "not ok <desc>"
#   hl_check <desc> cmd...       run cmd, ok if it succeeds (on failure: dump daemon logs)
#   hl_finish                    "N passed, N failed"; returns non-zero on any failure
#   hl_need_bins <file>... / hl_need_cmds <cmd>...   stop with "not ok ..." if one is missing
#   hl_config <out> [src=host-a] [endpoint] [psk-file] [timers-yaml]   sed'ed copy of a config
#                                (TL_WAN_DRIVER=udp in the environment: its WAN port kind)
#   hl_tunless_start <ns> <cfg> <log>   start tunlessd -v, wait until up; sets HL_TL_NAME
#   hl_tunless_stop <name> [sig=TERM] [timeout_s=5]   stop it; sets HL_TL_RC (its exit status)
#   hl_tel <name> <command> [--get key.sub]   DPDK telemetry of instance <name>
#   hl_peer_start <ns> <wggo|boringtun> [endpoint] [psk-file]    the side-b peer as wg0
#   hl_iperf <tcp|udp> <client-ns> <server-ns> <server-ip> [-R]    one 3 s iperf3 run
#   hl_check_out <desc> cmd...   hl_check that also prints what cmd printed as a note
#   hl_host_lab <prefix>         a fresh host-pair lab (lab_host_pair), transmit checksums off
#   hl_end_lab [signal=KILL]     stop every daemon started here, tear the lab down

HL_PASS=0
HL_FAIL=0
HL_LOGS=()      # logs dumped (tail) on every failure
declare -gA HL_PID=() HL_JOB=()
HL_TL_NAME=
HL_TL_RC=
HL_CFG_DIR=${TUNLESS_ROOT:?source scripts/env.sh first}/configs
HL_TUNLESSD=${TUNLESS_BUILD:?}/src/daemon/tunlessd
# Demo keys (public in configs/): side b's private key drives the interop peer.
HL_B_PRIV=8KXxrJDW0P45LXP9J7xJFF0BZ4roulGBYr3NWBVhTkM=
HL_A_PUB=iZJymIxf26UFE0sFwPH/37HRJKkv8mPlHrxKAsTi020=
# Instance names are unique per run: the DPDK runtime dir /var/run/dpdk/tunless-<name> is
# global, and other tests may run tla/tlb at the same time.
HL_NAME_A=ti$(($$ % 100000))a
HL_NAME_B=ti$(($$ % 100000))b

hl_ok() { HL_PASS=$((HL_PASS + 1)); printf 'ok %s\n' "$*"; }
hl_nok() {
	local l
	HL_FAIL=$((HL_FAIL + 1))
	printf 'not ok %s\n' "$*"
	for l in "${!HL_PID[@]}"; do
		[ -z "${HL_PID[$l]}" ] || kill -0 "${HL_PID[$l]}" 2>/dev/null ||
			printf '#   tunlessd %s (pid %s) is no longer running\n' "$l" "${HL_PID[$l]}"
	done
	for l in "${HL_LOGS[@]}"; do
		[ -f "$l" ] || continue
		printf '#   --- tail of %s\n' "${l##*/}"
		grep -v '^EAL: ' "$l" | tail -n 15 | sed 's/^/#   /'
	done
}
hl_check() {
	local d=$1
	shift
	if "$@" >/dev/null 2>&1; then hl_ok "$d"; else hl_nok "$d"; fi
}
hl_note() { printf '# %s\n' "$*"; }
hl_check_out() {
	local d=$1 out rc line
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then hl_ok "$d"; else hl_nok "$d"; fi
	if [ -n "$out" ]; then
		while IFS= read -r line; do hl_note "  $line"; done <<<"$out"
	fi
	return $rc
}
hl_finish() {
	printf '%d passed, %d failed\n' "$HL_PASS" "$HL_FAIL"
	[ "$HL_FAIL" -eq 0 ]
}
# hl_need_bins <file>...: stop the test ("not ok missing <file>") unless each is executable.
hl_need_bins() {
	local b
	for b; do
		[ -x "$b" ] || { echo "not ok missing $b (ninja -C build; scripts/setup.sh)"; exit 1; }
	done
}
# hl_need_cmds <command>...: stop the test ("not ok <command> not installed") unless each is found.
hl_need_cmds() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "not ok $t not installed (scripts/setup.sh)"; exit 1; }
	done
}

# hl_config <out> [src=host-a] [endpoint] [psk-file] [timers-yaml-flow]
hl_config() {
	local out=$1 src=${2:-host-a} ep=${3:-} psk=${4:-} timers=${5:-} name
	case $src in host-a) name=$HL_NAME_A ;; *) name=$HL_NAME_B ;; esac
	sed -e "s/^name: .*/name: $name/" "$HL_CFG_DIR/$src.yaml" >"$out"
	[ -z "$ep" ] || sed -i -e "s/^\( *endpoint:\) [^ ]*/\1 \"$ep\"/" "$out"
	[ -z "$psk" ] || sed -i -e "s|^\( *\)public_key: \(.*\)|&\n\1preshared_key_file: $psk|" "$out"
	[ -z "$timers" ] || printf 'timers: %s\n' "$timers" >>"$out"
	lab_wan_driver "$out"
	lab_lan_driver "$out"
}

hl_tl_alive() { [ -n "${HL_PID[$1]:-}" ] && kill -0 "${HL_PID[$1]}" 2>/dev/null; }

hl_tel_sock() { printf '/var/run/dpdk/tunless-%s/dpdk_telemetry.v2' "$1"; }

# hl_tel <name> <command> [--get a.b.c]: JSON reply (without the command wrapper) or one value.
hl_tel() {
	local name=$1 cmd=$2
	shift 2
	if [ -x "$TUNLESS_ROOT/scripts/tl-telemetry" ] && [ -z "${HL_OWN_TEL:-}" ]; then
		"$TUNLESS_ROOT/scripts/tl-telemetry" "$name" "$cmd" "$@"
		return
	fi
	python3 - "$(hl_tel_sock "$name")" "$cmd" "$@" <<'EOF'
import json, socket, sys
path, cmd = sys.argv[1], sys.argv[2]
get = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--get" else None
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(3)
s.connect(path)
s.recv(1 << 16)  # greeting: version, pid, max_output_len
s.send(cmd.encode())
v = json.loads(s.recv(1 << 20))[cmd]
for k in (get.split(".") if get else []):
    v = v[k]
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
EOF
}

# hl_tunless_start <ns> <cfg> <log>: start tunlessd -v, wait until it is up and answers
# telemetry. HL_TL_NAME = its instance name; HL_PID[name] = the daemon itself; HL_JOB[name] =
# the lab_bg job, whose exit status is the daemon's (ip netns exec and sh exec into it).
hl_tunless_start() {
	local ns=$1 cfg=$2 log=$3 name p
	name=$(awk '/^name:/ { print $2; exit }' "$cfg")
	HL_LOGS+=("$log")
	lab_bg "$ns" "$log" "$HL_TUNLESSD" -c "$cfg" -v
	HL_JOB[$name]=$LAB_LAST_PID
	HL_PID[$name]=
	HL_TL_NAME=$name
	if ! lab_wait_for 20 grep -q 'up: ' "$log" || ! lab_wait_for 5 hl_tel "$name" /tunless/device; then
		hl_note "tunlessd $name did not come up"
		return 1
	fi
	for p in $(ip netns pids "$(lab_ns "$ns")"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = tunlessd ] || continue
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$cfg" && HL_PID[$name]=$p
	done
	[ -n "${HL_PID[$name]}" ] || { hl_note "tunlessd $name: pid not found"; return 1; }
}

# hl_tunless_stop <name> [signal=TERM] [timeout_s=5]: signal the daemon. Fails if it is still
# running after the timeout (then it is killed). HL_TL_RC = its exit status.
hl_tunless_stop() {
	local name=$1 sig=${2:-TERM} t=${3:-5} i=0 pid job
	pid=${HL_PID[$name]:-} job=${HL_JOB[$name]:-}
	HL_TL_RC=124
	[ -n "$pid" ] || return 1
	HL_PID[$name]=
	kill -"$sig" "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null && [ $i -lt $((t * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$job" 2>/dev/null
		return 1
	fi
	wait "$job"
	HL_TL_RC=$?
}

# Peer telemetry of the single peer (peer0) of instance <name>.
hl_peer_get() { hl_tel "$1" /tunless/peers --get "peer0.$2"; }
hl_has_session() { [ "$(hl_peer_get "$1" session)" = 1 ]; }

# hl_peer_start <ns> <wggo|boringtun> [endpoint] [psk-file]: wg0 on side b, peer = tunless (a).
hl_peer_start() {
	local ns=$1 impl=$2 ep=${3:-10.99.0.1:51820} psk=${4:-} log key
	log=$LAB_DIR/$impl-$ns.log
	key=$LAB_DIR/b.key
	printf '%s\n' "$HL_B_PRIV" >"$key"
	chmod 600 "$key"
	HL_LOGS+=("$log")
	case $impl in
	wggo) lab_bg "$ns" "$log" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=verbose "$WG_GO" wg0 ;;
	boringtun)
		HL_LOGS+=("$LAB_DIR/boringtun-$ns.out")
		lab_bg "$ns" "$log" env WG_SUDO=1 "$BORINGTUN" --foreground --disable-drop-privileges \
			--verbosity info --log "$LAB_DIR/boringtun-$ns.out" wg0
		;;
	*) hl_note "unknown peer implementation $impl"; return 1 ;;
	esac
	lab_wait_for 10 lab_exec "$ns" wg show wg0 || { hl_note "$impl did not create wg0"; return 1; }
	lab_exec "$ns" wg set wg0 private-key "$key" listen-port 51820 \
		peer "$HL_A_PUB" allowed-ips 10.77.0.1/32,fd77::1/128 endpoint "$ep" \
		${psk:+preshared-key "$psk"} || return 1
	lab_exec "$ns" ip addr add 10.77.0.2/24 dev wg0
	lab_exec "$ns" ip -6 addr add fd77::2/64 dev wg0 nodad
	lab_exec "$ns" ip link set wg0 mtu 1420 up
}

# Latest handshake (unix seconds) as `wg show` of side b reports it; 0 = never.
hl_wg_latest() { lab_exec "$1" wg show wg0 latest-handshakes | awk '{ print $2; exit }'; }
hl_wg_has_handshake() { [ "$(hl_wg_latest "$1")" -gt 0 ] 2>/dev/null; }

hl_ping() { lab_exec "$1" ping -c 3 -i 0.2 -W 2 -q "$2"; }

# UDP datagrams the kernel of <ns> dropped for a full socket buffer (v4 + v6).
hl_udp_rcvbuf_errors() {
	ip netns exec "$(lab_ns "$1")" awk '
		$1 == "Udp:" && !h { for (i = 1; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == "Udp:" { n += $col["RcvbufErrors"] }
		$1 == "Udp6RcvbufErrors" { n += $2 }
		END { print n + 0 }' /proc/net/snmp /proc/net/snmp6
}

# hl_iperf <tcp|udp> <client-ns> <server-ns> <server-ip> [-R]: one 3 s iperf3 run (UDP at
# 50 Mbit/s). Prints the bytes received (TCP) or "<received> received, <lost> lost of <sent>
# (<loss%>)" (UDP); fails on an iperf3 error, when the receiver got nothing, or (UDP) when
# more than 0.5 % of the datagrams were lost anywhere but in the receiving namespace's UDP
# socket buffers (RcvbufErrors: iperf3's own socket, or the peer's outer socket there).
hl_iperf() {
	local proto=$1 c=$2 s=$3 ip=$4 rev=${5:-} out=$LAB_DIR/iperf-$1.json srv i=0 rcv e0 e1
	local -a opt=()
	[ "$proto" = udp ] && opt=(-u -b 50M -l 1200)
	lab_bg "$s" "$LAB_DIR/iperf-server.log" iperf3 -s -1 -B "$ip" -p 5201
	srv=$LAB_LAST_PID
	lab_wait_for 5 sh -c "ip netns exec $(lab_ns "$s") ss -Hltn 'sport = :5201' | grep -q ."
	rcv=$s
	[ -z "$rev" ] || rcv=$c
	e0=$(hl_udp_rcvbuf_errors "$rcv")
	timeout 15 ip netns exec "$(lab_ns "$c")" iperf3 -c "$ip" -p 5201 -t 3 -J "${opt[@]}" $rev \
		>"$out" 2>&1
	while kill -0 "$srv" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	e1=$(hl_udp_rcvbuf_errors "$rcv")
	python3 - "$proto" "$out" "$((e1 - e0))" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[2]))
except ValueError:
    print("iperf3 gave no JSON"); sys.exit(1)
if "error" in r:
    print("error:", r["error"]); sys.exit(1)
if sys.argv[1] == "tcp":
    b = r["end"]["sum_received"]["bytes"]
    print(b, "bytes received")
    sys.exit(0 if b > 0 else 1)
s = r["end"]["sum"]
total, lost = s.get("packets", 0), s.get("lost_packets", 0)
rcvbuf = int(sys.argv[3])
print("%d received, %d lost of %d (%.2f%% loss; receiver's UDP RcvbufErrors +%d)"
      % (total - lost, lost, total, s.get("lost_percent", 0), rcvbuf))
sys.exit(0 if total - lost > 0 and lost - rcvbuf <= 0.005 * total else 1)
EOF
}

# hl_host_lab <prefix>: a fresh lab with the host pair. With AF_XDP WAN ports
# (TL_WAN_DRIVER=af_xdp), frames the kernel sends to them carry finished checksums; with
# the default udp ports the veths keep the kernel's offloads, as a host's WAN does (UDP GSO
# packets cross the veth whole and arrive as GRO messages). The instances' DPDK runtime
# dirs go with the lab.
hl_host_lab() {
	lab_init "$1"
	HL_LOGS=()
	lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$HL_NAME_A /var/run/dpdk/tunless-$HL_NAME_B"
	lab_host_pair
	if [ "${TL_WAN_DRIVER:-}" = af_xdp ]; then
		lab_exec a ethtool -K veth-a tx off >/dev/null
		lab_exec b ethtool -K veth-b tx off >/dev/null
	fi
}

# hl_end_lab [signal=KILL]: stops every tunlessd started with hl_tunless_start, then the lab.
hl_end_lab() {
	local n
	for n in "${!HL_PID[@]}"; do [ -z "${HL_PID[$n]}" ] || hl_tunless_stop "$n" "${1:-KILL}" 2; done
	lab_cleanup
}
