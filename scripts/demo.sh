#!/usr/bin/env bash
# tunless demo: two tunless VPN gateways and a wireguard-go road warrior in network
# namespaces, iperf3 traffic through the tunnels, live per-peer and per-queue counters.
# gwa's WAN uplink is shaped to 200 Mbit/s, so the queue forms in its AQM (fq_codel with
# ECN): watch its depth, sojourn and marks while the 300 Mbit/s site flow pushes into it.
#
#   client 10.1.0.2 ── [gwa: tunless] ══ WAN bridge 10.99.0.0/24 ══ [gwb: tunless] ── server 10.2.0.2
#                                     ╚═ road warrior 10.99.0.3 (wireguard-go, inner 10.3.0.2)
#
# Usage: scripts/demo.sh [--duration N] [--no-setup] [--no-build]
#   --duration N   stop by itself after N seconds (CI: --duration 20); default: until Ctrl-C
#   --no-setup     skip scripts/setup.sh (packages, wireguard-go, boringtun)
#   --no-build     skip meson/ninja
# Needs root. Everything lives in namespaces named demo<pid>-*, removed on exit and Ctrl-C.
# Logs (daemons, peers, iperf3) stay in ${TUNLESS_DEMO_LOGS:-/tmp/tunless-demo}.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=0
DO_SETUP=1
DO_BUILD=1
while [ $# -gt 0 ]; do
	case $1 in
	--duration) DURATION=${2:?--duration N}; shift ;;
	--duration=*) DURATION=${1#*=} ;;
	--no-setup) DO_SETUP=0 ;;
	--no-build) DO_BUILD=0 ;;
	-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[[ $DURATION =~ ^[0-9]+$ ]] || { echo "demo.sh: --duration wants seconds" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: needs root (network namespaces, XDP)" >&2; exit 1; }

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
[ -t 1 ] || say() { printf '==> %s\n' "$*"; }

cd "$ROOT"
if [ "$DO_SETUP" -eq 1 ]; then
	say "setup: packages and interop peers (scripts/setup.sh)"
	scripts/setup.sh
fi
# shellcheck source=env.sh
. "$ROOT/scripts/env.sh"
if [ "$DO_BUILD" -eq 1 ]; then
	say "build ($TUNLESS_BUILD)"
	[ -f "$TUNLESS_BUILD/build.ninja" ] || meson setup "$TUNLESS_BUILD"
	ninja -C "$TUNLESS_BUILD" >/dev/null
fi
TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
[ -x "$TUNLESSD" ] || { echo "demo.sh: no $TUNLESSD" >&2; exit 1; }
[ -x "$WG_GO" ] || { echo "demo.sh: no wireguard-go at $WG_GO (run scripts/setup.sh)" >&2; exit 1; }

LOGS=${TUNLESS_DEMO_LOGS:-/tmp/tunless-demo}
rm -rf "$LOGS"
mkdir -p "$LOGS"

# shellcheck source=../tests/integration/lab.sh
. "$ROOT/tests/integration/lab.sh"
set +e   # from here on, lab.sh's trap does the cleanup; the checks below say what failed
lab_init "demo$$"
lab_on_cleanup 'printf "\n==> stopping: daemons, traffic, namespaces demo%s-* removed; logs in %s\n" "$$" "$LOGS"'

say "lab: namespaces client, gwa, wan (bridge), gwb, server, rw"
lab_gateway
lab_add_roadwarrior
for x in client:eth0 server:eth0 rw:wan-rw gwa:wan-a gwb:wan-b; do
	lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx off >/dev/null   # full checksums into AF_XDP
done
for ns in client server rw; do lab_nsexec "$ns" sysctl -qw net.ipv4.tcp_ecn=1; done

# Instance names of the example configs, unless another gwa/gwb runs on this machine.
telemetry_busy() {
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); s.connect(sys.argv[1])' \
		"/var/run/dpdk/tunless-$1/dpdk_telemetry.v2" 2>/dev/null
}
GWA=gwa GWB=gwb
if telemetry_busy gwa || telemetry_busy gwb; then GWA=d$$a GWB=d$$b; fi
sed -e "s/^name: gwa\$/name: $GWA/" \
	-e 's/wan: {iface: wan-a}/wan: {iface: wan-a, shaper: {rate_bps: 200000000}}/' \
	configs/gateway-a.yaml >"$LOGS/gateway-a.yaml"
sed "s/^name: gwb\$/name: $GWB/" configs/gateway-b.yaml >"$LOGS/gateway-b.yaml"
grep -v '^Address' configs/roadwarrior.conf >"$LOGS/roadwarrior.conf"

fail() {
	echo "demo.sh: $*" >&2
	for f in "$LOGS"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done >&2
	exit 1
}

say "start tunless gwa (configs/gateway-a.yaml) and gwb (configs/gateway-b.yaml)"
lab_bg gwa "$LOGS/gwa.log" "$TUNLESSD" -c "$LOGS/gateway-a.yaml"
lab_bg gwb "$LOGS/gwb.log" "$TUNLESSD" -c "$LOGS/gateway-b.yaml"
for g in "$GWA" "$GWB"; do
	lab_wait_for 20 test -S "/var/run/dpdk/tunless-$g/dpdk_telemetry.v2" || fail "tunlessd $g did not come up"
done

say "start the road warrior: wireguard-go in rw (configs/roadwarrior.conf)"
lab_bg rw "$LOGS/wireguard-go.log" env WG_PROCESS_FOREGROUND=1 "$WG_GO" wg0
lab_wait_for 10 test -S "$LAB_DIR/$(lab_ns rw)/wireguard/wg0.sock" || fail "wireguard-go did not start"
lab_exec rw wg setconf wg0 "$LOGS/roadwarrior.conf" || fail "wg setconf"
lab_nsexec rw ip addr add 10.3.0.2/32 dev wg0
lab_nsexec rw ip link set wg0 mtu 1420 up
lab_nsexec rw ip route add 10.1.0.0/24 dev wg0

lab_wait_ping client 10.2.0.2 20 || fail "client cannot reach the server through the tunnel"
lab_wait_ping rw 10.1.0.2 20 || fail "road warrior cannot reach the client"

cat <<EOF

  client 10.1.0.2 ── lan-a [gwa: tunless, AF_XDP] wan-a 10.99.0.1 ═╗  (uplink shaped: 200 Mbit/s)
                                                                  ║ WAN bridge: only UDP 51820
  server 10.2.0.2 ── lan-b [gwb: tunless, AF_XDP] wan-b 10.99.0.2 ═╣
                                                                  ║
  road warrior 10.3.0.2 ── wg0 [wireguard-go] wan-rw 10.99.0.3 ═══╝
  traffic: iperf3 TCP client -> server (300 Mbit/s), road warrior -> client (100 Mbit/s)

EOF

# Background traffic for the whole demo (stopped by the cleanup).
lab_bg server "$LOGS/iperf3-server.log" iperf3 -s
lab_bg client "$LOGS/iperf3-client-server.log" iperf3 -s
lab_wait_for 5 lab_nsexec server sh -c 'ss -ltn | grep -q ":5201 "'
lab_wait_for 5 lab_nsexec client sh -c 'ss -ltn | grep -q ":5201 "'
lab_bg client "$LOGS/iperf3-site.log" iperf3 -c 10.2.0.2 -t 86400 -b 300M -i 10
lab_bg rw "$LOGS/iperf3-rw.log" iperf3 -c 10.1.0.2 -t 86400 -b 100M -i 10

say "live counters (DPDK telemetry /tunless/peers, /tunless/queue, /tunless/drops) every second;" \
	"$([ "$DURATION" -gt 0 ] && echo "for $DURATION s" || echo "Ctrl-C to stop")"
say "logs: $LOGS"
# In the background so that a signal to this script (Ctrl-C, SIGTERM) runs the cleanup at
# once; the cleanup stops the monitor too.
python3 - "$DURATION" "$GWA:gwa" "$GWB:gwb" <<'EOF' &
import json, socket, sys, time

duration = int(sys.argv[1])
insts = [a.split(":") for a in sys.argv[2:]]
tty = sys.stdout.isatty()

def query(name, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.settimeout(1)
        s.connect(f"/var/run/dpdk/tunless-{name}/dpdk_telemetry.v2")
        s.recv(4096)
        s.send(cmd.encode())
        return json.loads(s.recv(1 << 20))[cmd.split(",")[0]]
    finally:
        s.close()

def human(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000

def age(unix_s):
    if not unix_s:
        return "never"
    return f"{max(time.time() - unix_s, 0):.0f} s ago"

prev, t_prev, shown = {}, None, 0
start = time.monotonic()
try:
    while duration == 0 or time.monotonic() - start < duration:
        now = time.monotonic()
        lines = [time.strftime("%H:%M:%S") + f"  (+{now - start:.0f} s)"]
        lines.append(f"  {'gateway':<7} {'peer':<12} {'endpoint':<22} {'handshake':>10}"
                     f" {'rx':>10} {'tx':>10} {'rx Mbit/s':>10} {'tx Mbit/s':>10}")
        drops, queues = [], []
        for inst, label in insts:
            try:
                peers = query(inst, "/tunless/peers")
                d = query(inst, "/tunless/drops")
                q = query(inst, "/tunless/queue,wan/0")
            except (OSError, ValueError, KeyError) as e:
                lines.append(f"  {label:<7} (telemetry unavailable: {e})")
                continue
            qk = (inst, "queue")
            rate = marks = 0.0
            p99 = "-"
            hist = {int(k): v for k, v in q.get("sojourn_below_ns", {}).items()}
            if qk in prev and t_prev:
                dt = now - t_prev
                rate = (q["tx_bytes"] - prev[qk][0]) * 8 / dt / 1e6
                marks = (q["ecn_marks"] - prev[qk][1]) / dt
                # sojourn p99 of the last second: the cumulative histograms' difference
                delta = {b: n - prev[qk][2].get(b, 0) for b, n in hist.items()}
                total = max(delta.values(), default=0)
                if total:
                    p99 = f"{min(b for b, n in delta.items() if n >= 0.99 * total) / 1e6:.1f} ms"
            prev[qk] = (q["tx_bytes"], q["ecn_marks"], hist)
            shaper = f"{q['shaper_rate_bps'] / 1e6:.0f} Mbit/s" if q["shaper_rate_bps"] else "none"
            queues.append(f"  {label:<7} wan queue: shaper {shaper:<11} out {rate:7.1f} Mbit/s   depth {q['depth_packets']:>5} pkt"
                          f"   sojourn p99 {p99:>8}   CE marks {marks:6.0f}/s"
                          f"   AQM drops {q['drops_aqm_codel'] + q['drops_aqm_overlimit']}")
            for p in peers.values():
                key = (inst, p["public_key"])
                rx, tx = p["rx_bytes"], p["tx_bytes"]
                rrx = rtx = 0.0
                if key in prev and t_prev:
                    dt = now - t_prev
                    rrx = (rx - prev[key][0]) * 8 / dt / 1e6
                    rtx = (tx - prev[key][1]) * 8 / dt / 1e6
                prev[key] = (rx, tx)
                lines.append(f"  {label:<7} {p.get('name') or p['public_key'][:10]:<12} {p['endpoint']:<22}"
                             f" {age(p['last_handshake']):>10} {human(rx):>10} {human(tx):>10}"
                             f" {rrx:>10.1f} {rtx:>10.1f}")
            nz = [f"{k}={v}" for k, v in d.items() if v]
            drops.append(f"{label}: {' '.join(nz) if nz else 'none'}")
        t_prev = now
        lines.extend(queues)
        lines.append("  drops  " + "   ".join(drops))
        if tty and shown:   # redraw in place on a terminal; a log gets every block
            sys.stdout.write(f"\033[{shown}A\033[J")
        print("\n".join(lines), flush=True)
        shown = len(lines)
        time.sleep(max(0, 1 - (time.monotonic() - now)))
except (KeyboardInterrupt, BrokenPipeError):
    pass
EOF
MONITOR=$!
lab_on_cleanup "kill $MONITOR 2>/dev/null"
wait "$MONITOR"
exit 0
