#!/usr/bin/env bash
# The UMEM of a gateway whose WAN and LAN ports are both AF_XDP, as the kernel saw it made:
# shared by the two ports' sockets with DPDK >= 23.11 (Debian 13's 24.11, whose net_af_xdp has
# shared_umem), one per socket with DPDK 22.11 (Debian 12, whose Debian build has not).
#
#   client 10.1.0.2 ── lan-a [gwa: af_xdp/af_xdp] wan-a ── br-wan ── wan-b [gwb] lan-b ── server 10.2.0.2
#
# The observable is the kernel's record of gwa's system calls (the syscalls tracepoints in a
# tracefs instance of this test's own, following gwa's process and its threads): each AF_XDP
# socket sets its RX ring (setsockopt SOL_XDP XDP_RX_RING), each UMEM is registered once
# (XDP_UMEM_REG); a socket bound to another socket's UMEM (XDP_SHARED_UMEM) registers none.
# Only calls that returned 0 count. So with one queue pair per port (a veth has one):
#   DPDK >= 23.11: 2 sockets, 1 UMEM; DPDK 22.11: 2 sockets, 2 UMEMs.
# The release comes from pkg-config's libdpdk (what the daemon was built against), not from
# the daemon. Also checked: the PMD says so itself at INFO level (eal: --log-level: "<iface>,qid0
# sharing UMEM" when it takes the first port's UMEM for the second), and site-to-site ping
# passes both ways through gwa (frames forwarded between the two ports).
# No timing assertions. Needs root and tracefs (CONFIG_FTRACE_SYSCALLS). Env: TUNLESS_BUILD.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lab.sh
. "$HERE/lab.sh"

TUNLESSD=$TUNLESS_BUILD/src/daemon/tunlessd
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); printf 'ok %d - %s\n' $((PASS + FAIL)) "$*"; }
nok() { FAIL=$((FAIL + 1)); printf 'not ok %d - %s\n' $((PASS + FAIL)) "$*"; }
check() { # check <description> cmd...
	local d=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$d"; else nok "$d"; fi
}
info() { printf '# %s\n' "$*"; }
missing() { printf 'not ok - %s\n' "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || missing "needs root"
[ -x "$TUNLESSD" ] || missing "no $TUNLESSD (build first)"
command -v pkg-config >/dev/null || missing "pkg-config not installed (scripts/setup.sh)"
DPDK=$(pkg-config --modversion libdpdk) || missing "pkg-config knows no libdpdk"
if printf '23.11\n%s\n' "$DPDK" | sort -V -C; then SHARED=1; else SHARED=0; fi
info "DPDK $DPDK: expecting $([ $SHARED = 1 ] && echo 'one UMEM shared by WAN and LAN' || echo 'one UMEM per port')"

P=tu$$
lab_init "$P"
GWA=${P}a
GWB=${P}b
for x in a b; do
	sed -e "s/^name: gw$x\$/name: ${P}$x/" \
	    -e "s/^\( *\)\(wan\|lan\): {iface: \([^,}]*\)}/\1\2: {iface: \3, driver: af_xdp}/" \
	    "$ROOT/configs/gateway-$x.yaml" >"$LAB_DIR/gateway-$x.yaml"
	printf 'eal: ["--log-level=pmd.net.af_xdp:info"]\n' >>"$LAB_DIR/gateway-$x.yaml"
	[ "$(grep -c 'driver: af_xdp' "$LAB_DIR/gateway-$x.yaml")" = 2 ] || missing "gateway-$x.yaml: ports not found"
done

# A tracefs of our own (never under LAB_DIR, which is removed with rm -rf) and an instance in
# it: its own buffer, events and pid filter, so other users of tracing are not disturbed.
TRACEFS=$(mktemp -d /tmp/tl-tracefs.XXXXXX)
mount -t tracefs nodev "$TRACEFS" || { rmdir "$TRACEFS"; missing "cannot mount tracefs"; }
INST=$TRACEFS/instances/tunless_$P
trace_cleanup() {
	if [ -d "$INST" ]; then
		echo 0 >"$INST/events/syscalls/sys_enter_setsockopt/enable"
		echo 0 >"$INST/events/syscalls/sys_exit_setsockopt/enable"
		rmdir "$INST"
	fi
	umount "$TRACEFS" && rmdir "$TRACEFS"
}
lab_on_cleanup trace_cleanup
mkdir "$INST" || missing "cannot make a tracefs instance"
[ -d "$INST/events/syscalls/sys_enter_setsockopt" ] || missing "no syscalls tracepoints (CONFIG_FTRACE_SYSCALLS)"
echo 1 >"$INST/options/event-fork"   # the threads of a traced process are traced
echo 8192 >"$INST/buffer_size_kb"
echo 'level == 283' >"$INST/events/syscalls/sys_enter_setsockopt/filter"   # SOL_XDP

lab_gateway

start_gw() { # start_gw <ns> <config> <instance>
	lab_bg "$1" "$LAB_DIR/$1.log" "$TUNLESSD" -c "$2" -v
	lab_wait_for 20 test -S "/var/run/dpdk/tunless-$3/dpdk_telemetry.v2" &&
		lab_wait_for 10 grep -q ': up:' "$LAB_DIR/$1.log"
}
# Only gwa is traced, from its first instruction: the shell that becomes gwa's daemon puts its
# pid in the instance's pid filter and enables the events, then execs it.
TUNLESSD_TRACED=(sh -c 'echo $$ >"$0/set_event_pid" &&
	echo 1 >"$0/events/syscalls/sys_enter_setsockopt/enable" &&
	echo 1 >"$0/events/syscalls/sys_exit_setsockopt/enable" && exec "$@"' "$INST" "$TUNLESSD")
start_traced() { # start_gw with the traced command line
	lab_bg gwa "$LAB_DIR/gwa.log" "${TUNLESSD_TRACED[@]}" -c "$LAB_DIR/gateway-a.yaml" -v
	lab_wait_for 20 test -S "/var/run/dpdk/tunless-$GWA/dpdk_telemetry.v2" &&
		lab_wait_for 10 grep -q ': up:' "$LAB_DIR/gwa.log"
}
check "gwa: tunlessd up (af_xdp WAN and LAN), traced" start_traced
echo 0 >"$INST/events/syscalls/sys_enter_setsockopt/enable"
echo 0 >"$INST/events/syscalls/sys_exit_setsockopt/enable"
check "gwb: tunlessd up" start_gw gwb "$LAB_DIR/gateway-b.yaml" "$GWB"

# Enter and exit events of each thread pair up in order; exit events are not filtered by
# level (they have no such field), so an exit counts only right after a SOL_XDP enter.
cat "$INST/trace" >"$LAB_DIR/trace.txt"
read -r SOCKETS UMEMS FAILED < <(python3 - "$LAB_DIR/trace.txt" <<'EOF'
import re, sys
pending, sockets, umems, failed = {}, 0, 0, 0
for line in open(sys.argv[1]):
    m = re.match(r"\s*\S+-(\d+)\s.*?: sys_setsockopt\(fd: \w+, level: (\w+), optname: (\w+),", line)
    if m:
        pending[m[1]] = int(m[3], 16)
        continue
    m = re.match(r"\s*\S+-(\d+)\s.*?: sys_setsockopt -> (\S+)", line)
    if m and m[1] in pending:
        opt, ret = pending.pop(m[1]), int(m[2], 16)
        if ret != 0:
            failed += 1
        elif opt == 2:      # XDP_RX_RING
            sockets += 1
        elif opt == 4:      # XDP_UMEM_REG
            umems += 1
print(sockets, umems, failed)
EOF
)
info "gwa's AF_XDP sockets (XDP_RX_RING set): ${SOCKETS:-?}, UMEMs registered (XDP_UMEM_REG): ${UMEMS:-?}, SOL_XDP setsockopt failed: ${FAILED:-?}"
check "gwa: two AF_XDP sockets, one per port (XDP_RX_RING twice)" test "${SOCKETS:-}" = 2
# The PMD's INFO lines reach the log (so that the absence of "sharing UMEM" means something).
check "gwa: net_af_xdp's INFO lines are in the log" grep -q 'Zero copy between umem and mbuf enabled' "$LAB_DIR/gwa.log"
if [ "$SHARED" = 1 ]; then
	check "gwa: one UMEM registered for both (XDP_UMEM_REG once; DPDK $DPDK shares it)" test "${UMEMS:-}" = 1
	check "gwa: net_af_xdp says the second port shares the UMEM" grep -q 'qid0 sharing UMEM' "$LAB_DIR/gwa.log"
else
	check "gwa: one UMEM per port (XDP_UMEM_REG twice; DPDK $DPDK cannot share)" test "${UMEMS:-}" = 2
	check "gwa: net_af_xdp shares no UMEM" sh -c "! grep -q 'sharing UMEM' '$LAB_DIR/gwa.log'"
fi

check "client -> server 10.2.0.2 answers (forwarded LAN -> WAN at gwa)" lab_wait_ping client 10.2.0.2 20
check "server -> client 10.1.0.2 answers (forwarded WAN -> LAN at gwa)" lab_wait_ping server 10.1.0.2 10
check "ping client -> server, 20/20" sh -c "ip netns exec '$(lab_ns client)' ping -q -c 20 -i 0.05 -W 2 10.2.0.2 | grep -q ' 20 received'"

if [ "$FAIL" -ne 0 ]; then
	for f in "$LAB_DIR/gwa.log" "$LAB_DIR/trace.txt"; do
		printf '# ---- %s (last 40 lines)\n' "${f##*/}"
		tail -n 40 "$f" | sed 's/^/#   /'
	done
fi
printf '%d passed, %d failed\n' "$PASS" "$FAIL"
[ "$FAIL" -eq 0 ]
