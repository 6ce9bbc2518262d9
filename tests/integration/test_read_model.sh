#!/usr/bin/env bash
# One read model, three outputs: the control API's show, the DPDK telemetry commands and the
# Prometheus text of one running daemon name every field of src/api/stats_fields.h the same
# way and report one value for it (tests/integration/read_model.py does the comparing).
#
#   ${P}-a                                               ${P}-b
#   tunlessd (configs/host-a.yaml, renamed)              wireguard-go as wg0 (configs/host-b.yaml's key)
#     metrics: {listen: "127.0.0.1:9586"} (ns a only)      10.77.0.2 fd77::2
#     host veth 10.77.0.1/24 fd77::1/64
#     AF_XDP on veth-a 10.99.0.1  <──────veth──────>  veth-b 10.99.0.2
#
# A ping and a short UDP stream first, so that the counters are not all 0. Output:
# "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=rm$$
A=$HL_NAME_A
CTL=$TUNLESS_BUILD/src/cli/tunlessctl

hl_need_bins "$HL_TUNLESSD" "$WG_GO" "$CTL"
hl_need_cmds wg iperf3 python3 ethtool

hl_host_lab "$P"
trap 'hl_end_lab TERM' EXIT
hl_config "$LAB_DIR/a.yaml" host-a
printf 'metrics: {listen: "127.0.0.1:9586"}\n' >>"$LAB_DIR/a.yaml"
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log" || ! hl_peer_start b wggo; then
	hl_nok "tunlessd and wireguard-go start"
	hl_finish
	exit 1
fi
hl_check "ping a -> b through the tunnel" lab_wait_ping a 10.77.0.2 10
hl_note "iperf3 UDP a -> b: $(hl_iperf udp a b 10.77.0.2)"
out=$(lab_exec a python3 "$HERE/read_model.py" "$CTL" "$A" "$(hl_tel_sock "$A")" http://127.0.0.1:9586/metrics 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v '^\(not \)\?ok '
while read -r line; do
	case $line in
	"ok "*) hl_ok "${line#ok }" ;;
	"not ok "*) hl_nok "${line#not ok }" ;;
	esac
done < <(printf '%s\n' "$out" | grep '^\(not \)\?ok ')
hl_check "read_model.py compared the three outputs and exited 0 (exit status $rc)" \
	sh -c "[ $rc = 0 ] && printf '%s\n' \"\$0\" | grep -q '^ok every read-model field'" "$out"
hl_finish
