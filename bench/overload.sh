#!/usr/bin/env bash
# Overload through a VPN gateway: wireguard-go over kernel TUN vs tunless, side by side.
#
#   ${P}-client        ${P}-gwa                        ${P}-wan       ${P}-gwb                ${P}-server
#   10.1.0.2 ── lan-a 10.1.0.1  [VPN]  wan-a 10.99.0.1 ─ br-wan ─ wan-b 10.99.0.2  [VPN]  lan-b 10.2.0.1 ── 10.2.0.2
#   iperf3 -c, ping                    └ bottleneck R: egress of gwa's WAN                    iperf3 -s
#
# The tunnel runs gwa <-> gwb (tests/integration/lab.sh lab_gateway); the WAN leaving gwa is the
# bottleneck at rate R, and the traffic goes client -> server:
#   wggo500, wggo25  wireguard-go on both gateways over kernel TUN (wg0, txqueuelen 500 / 25,
#                    the host's default qdisc on wg0), `tc qdisc ... tbf rate R` on wan-a
#                    (burst as tunless's default: 1 ms at R; queue: -L of latency; counted on
#                    the wire like tunless, `stab overhead 24`)
#   tunless          tunless on both gateways (configs/gateway-{a,b}.yaml),
#                    ports.wan.shaper: {rate_bps: R} on gwa, AQM at its defaults
# Scenarios, each -t seconds, with a sparse ping (10/s) client -> server during the load and an
# idle ping (50/s, 2 s, after 10 unmeasured warm-up pings) before it:
#   udp  iperf3 -u -b 2R -l 1200 (inner packets fit the 1420 tunnel MTU)
#   tcp  one iperf3 TCP flow at full speed
# Reported per run: packets sent/received, loss, WHERE it was lost (counter deltas of every
# interface, qdisc and UDP socket in the lab, tunless's drops by reason), ping p50/p99 idle and
# under load, and tunless/wireguard-go ratios measured in the same run. Not a test: no
# assertions; one run; the machine is shared.
#
# Usage: bench/overload.sh [-r Mbit/s=100] [-t seconds=10] [-L tbf latency ms=50]
#                          [-i wggo500,wggo25,tunless] [-s udp,tcp] [-o out.json]
# Writes docs/results/overload-<date>.json and .txt (the table) unless -o is given.
# Env: TUNLESS_BUILD (meson build dir with src/daemon/tunlessd), WG_GO (scripts/env.sh).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/env.sh
. "$ROOT/scripts/env.sh"
# shellcheck source=../tests/integration/lab.sh
. "$ROOT/tests/integration/lab.sh"

RATE=100
DURATION=10
TBF_LAT=50
IMPLS=wggo500,wggo25,tunless
SCENARIOS=udp,tcp
OUT=
COMMAND="bench/overload.sh $*"
while getopts "r:t:L:i:s:o:h" o; do
	case $o in
	r) RATE=$OPTARG ;;
	t) DURATION=$OPTARG ;;
	L) TBF_LAT=$OPTARG ;;
	i) IMPLS=$OPTARG ;;
	s) SCENARIOS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	*) sed -n '2,29p' "$0"; exit 2 ;;
	esac
done
[[ $RATE =~ ^[0-9]+$ && $DURATION =~ ^[0-9]+$ && $TBF_LAT =~ ^[0-9]+$ ]] && [ "$RATE" -gt 0 ] && [ "$DURATION" -ge 3 ] ||
	{ echo "overload.sh: -r, -t, -L take positive integers (-t >= 3)" >&2; exit 2; }
STAMP=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/docs/results/overload-$STAMP.json}
TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
STATS="python3 $ROOT/bench/overload_stats.py"
WORK=$(mktemp -d /tmp/tl-overload.XXXXXX)
RESULTS=$WORK/results.jsonl
RUN=0
GW_A_PUB=ZDqoMH8guMBB/RLjCQV59cWgjLViQwPEYDmS70tTp3E=
trap 'rm -rf "$WORK"' EXIT

say() { printf '[overload] %s\n' "$*" >&2; }
for c in ip tc wg iperf3 ping python3 ethtool; do
	command -v "$c" >/dev/null || { say "missing '$c': run scripts/setup.sh"; exit 1; }
done

# Burst of the WAN bottleneck: tunless's default (1 ms at R, at least two full frames).
BURST=$((RATE * 1000000 / 8 / 1000))
[ "$BURST" -ge 3076 ] || BURST=3076

record_error() { # <variant> <scenario> <message>
	python3 -c 'import json,sys; print(json.dumps({"variant":sys.argv[1],"scenario":sys.argv[2],"error":sys.argv[3]}))' \
		"$1" "$2" "$3" >>"$RESULTS"
	say "$1 $2: $3"
}

bench_lab() {
	RUN=$((RUN + 1))
	lab_init "ov$$$RUN"
	trap 'lab_cleanup; rm -rf "$WORK"' EXIT
	lab_gateway
	# Frames from kernel veths into AF_XDP ports must carry complete checksums (tunless);
	# the same for wireguard-go keeps the two setups identical.
	local x
	for x in client:eth0 server:eth0 gwa:wan-a gwb:wan-b gwa:lan-a gwb:lan-b; do
		lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx off >/dev/null
	done
	lab_wait_ping gwa 10.99.0.2 5 || { say "lab: WAN not up"; return 1; }
}

# ---- wireguard-go over kernel TUN on both gateways --------------------------------------------
wggo_up() { # wggo_up <txqueuelen>
	local q=$1 ka kb ns
	ka=$LAB_DIR/gwa.key kb=$LAB_DIR/gwb.key
	(umask 077 && wg genkey >"$ka" && wg genkey >"$kb")
	for ns in gwa gwb; do
		lab_bg "$ns" "$LAB_DIR/wggo-$ns.log" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$WG_GO" wg0
		lab_wait_for 10 lab_exec "$ns" wg show wg0 || { say "wireguard-go: no wg0 in $ns"; return 1; }
	done
	lab_exec gwa wg set wg0 private-key "$ka" listen-port 51820 \
		peer "$(wg pubkey <"$kb")" allowed-ips 10.2.0.0/24 endpoint 10.99.0.2:51820 || return 1
	lab_exec gwb wg set wg0 private-key "$kb" listen-port 51820 \
		peer "$(wg pubkey <"$ka")" allowed-ips 10.1.0.0/24 endpoint 10.99.0.1:51820 || return 1
	for ns in gwa gwb; do
		lab_exec "$ns" ip link set wg0 mtu 1420 txqueuelen "$q" up || return 1
	done
	lab_exec gwa ip route add 10.2.0.0/24 dev wg0 &&
		lab_exec gwb ip route add 10.1.0.0/24 dev wg0 &&
		lab_exec gwa tc qdisc replace dev wan-a root stab overhead 24 linklayer ethernet \
			tbf rate "${RATE}mbit" burst "$BURST" latency "${TBF_LAT}ms" || return 1
	lab_wait_ping client 10.2.0.2 15
}

# ---- tunless on both gateways -------------------------------------------------------------------
tunless_up() {
	local x cfg
	for x in a b; do
		cfg=$LAB_DIR/gateway-$x.yaml
		sed -e "s/^name: .*/name: ov$$$RUN$x/" "$ROOT/configs/gateway-$x.yaml" >"$cfg"
		printf 'metrics: {listen: "127.0.0.1:9586"}\n' >>"$cfg"
	done
	sed -i -e "s/^\( *wan: {iface: wan-a\)}/\1, shaper: {rate_bps: $((RATE * 1000000))}}/" "$LAB_DIR/gateway-a.yaml"
	grep -q "shaper: {rate_bps: $((RATE * 1000000))}" "$LAB_DIR/gateway-a.yaml" ||
		{ say "tunless: could not put the shaper into gateway-a.yaml"; return 1; }
	lab_on_cleanup "rm -rf /var/run/dpdk/tunless-ov$$${RUN}a /var/run/dpdk/tunless-ov$$${RUN}b"
	for x in a b; do
		lab_bg "gw$x" "$LAB_DIR/tunless-gw$x.log" "$TUNLESSD" -c "$LAB_DIR/gateway-$x.yaml"
	done
	for x in a b; do
		lab_wait_for 30 grep -q ': up:' "$LAB_DIR/tunless-gw$x.log" ||
			{ say "tunless gw$x did not come up: $(grep -v '^EAL' "$LAB_DIR/tunless-gw$x.log" | tail -n 3)"; return 1; }
	done
	lab_wait_ping client 10.2.0.2 20
}

# ---- one scenario -------------------------------------------------------------------------------
snapshot() { # snapshot <out.json> <tunless instances...>
	local out=$1 n
	local -a args=()
	shift
	for n in "$@"; do args+=(--tunless "$n"); done
	$STATS snap "$out" "$(lab_ns client)" "$(lab_ns gwa)" "$(lab_ns wan)" "$(lab_ns gwb)" "$(lab_ns server)" "${args[@]}"
}

run_scenario() { # run_scenario <variant> <udp|tcp> <tunless instances...>
	local variant=$1 scen=$2 d srv cli pingp n_ping
	shift 2
	d=$WORK/$variant-$scen
	mkdir -p "$d"
	lab_exec client ping -i 0.05 -c 10 -W 1 -q 10.2.0.2 >/dev/null 2>&1   # warm-up: not measured
	lab_exec client ping -i 0.02 -c 100 -W 1 10.2.0.2 >"$d/ping-idle.txt" 2>&1
	lab_bg server "$d/iperf3-server.log" iperf3 -s -1 -B 10.2.0.2
	srv=$LAB_LAST_PID
	lab_wait_for 5 sh -c "ip netns exec $(lab_ns server) ss -Hltn 'sport = :5201' | grep -q ." ||
		{ record_error "$variant" "$scen" "iperf3 server did not start"; return; }
	snapshot "$d/before.json" "$@"
	local -a opt=()
	[ "$scen" = udp ] && opt=(-u -b "$((2 * RATE))M" -l 1200)
	say "$variant: $scen for ${DURATION}s ${opt[*]}"
	lab_bg client "$d/iperf3.json" iperf3 -c 10.2.0.2 -t "$DURATION" -J "${opt[@]}"
	cli=$LAB_LAST_PID
	sleep 1   # the queues fill first; the ping then samples the loaded path
	n_ping=$(((DURATION - 2) * 10))
	lab_bg client "$d/ping-load.txt" ping -i 0.1 -c "$n_ping" -W 2 10.2.0.2
	pingp=$LAB_LAST_PID
	wait "$cli" 2>/dev/null
	wait "$pingp" 2>/dev/null
	sleep 1   # what is still queued drains (and is counted) before the second snapshot
	snapshot "$d/after.json" "$@"
	wait "$srv" 2>/dev/null
	$STATS summary "$variant" "$scen" "$d" >>"$RESULTS"
	cp -r "$d" "$RAW_DIR/" 2>/dev/null
}

run_variant() { # run_variant <variant>
	local v=$1 scen
	local -a inst=()
	IFS=, read -ra SCEN <<<"$SCENARIOS"
	bench_lab || { record_error "$v" all "lab setup failed"; lab_cleanup; return; }
	case $v in
	wggo500 | wggo25)
		[ -x "$WG_GO" ] || { record_error "$v" all "$WG_GO missing: scripts/setup.sh"; lab_cleanup; return; }
		wggo_up "${v#wggo}" || { record_error "$v" all "wireguard-go tunnel did not come up"; lab_cleanup; return; }
		;;
	tunless)
		[ -x "$TUNLESSD" ] || { record_error "$v" all "$TUNLESSD not built"; lab_cleanup; return; }
		tunless_up || { record_error "$v" all "tunless tunnel did not come up"; lab_cleanup; return; }
		inst=("ov$$${RUN}a" "ov$$${RUN}b")
		;;
	*) say "unknown variant '$v'"; lab_cleanup; return ;;
	esac
	for scen in "${SCEN[@]}"; do
		case $scen in udp | tcp) run_scenario "$v" "$scen" "${inst[@]}" ;; *) say "unknown scenario $scen" ;; esac
	done
	lab_cleanup
}

RAW_DIR=${OUT%.json}-raw
rm -rf "$RAW_DIR"
mkdir -p "$(dirname "$OUT")" "$RAW_DIR"
: >"$RESULTS"
say "R = $RATE Mbit/s, ${DURATION}s per scenario, tbf latency ${TBF_LAT} ms, burst $BURST B; wireguard-go: $WG_GO; tunless: $TUNLESSD"
IFS=, read -ra LIST <<<"$IMPLS"
for v in "${LIST[@]}"; do run_variant "$v"; done
trap - EXIT INT TERM
cp "$RESULTS" "$RAW_DIR/results.jsonl"
python3 - "$WORK/meta.json" <<EOF
import json, subprocess, sys
def out(*c):
    try:
        return subprocess.run(c, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""
json.dump({
    "wireguard-go": out("$WG_GO", "--version").split("\n")[0],
    "tunless": "tunless " + (out("git", "-C", "$ROOT", "describe", "--always", "--dirty") or "unknown"),
    "iperf3": out("iperf3", "--version").split("\n")[0],
    "wan_bottleneck_wireguard_go": "tc qdisc replace dev wan-a root stab overhead 24 linklayer ethernet tbf rate ${RATE}mbit burst $BURST latency ${TBF_LAT}ms",
    "wan_bottleneck_tunless": "ports.wan.shaper: {rate_bps: $((RATE * 1000000))} (burst default $BURST B), AQM defaults",
    "default_qdisc": out("sysctl", "-n", "net.core.default_qdisc"),
}, open(sys.argv[1], "w"))
EOF
$STATS report "$RESULTS" "$OUT" "$RATE" "$DURATION" "$COMMAND" "$WORK/meta.json" | tee "${OUT%.json}.txt"
rm -rf "$WORK"
