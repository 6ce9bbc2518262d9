#!/usr/bin/env bash
# Prometheus text on /metrics and the DPDK telemetry queue/worker commands.
#
#   ${P}-a                                               ${P}-b
#   tunlessd (configs/host-a.yaml, renamed mt<pid>a)     wireguard-go as wg0 (configs/host-b.yaml's key)
#     metrics: {listen: "127.0.0.1:9586"} (ns a only)      10.77.0.2 fd77::2
#     host veth mt<pid>a 10.77.0.1/24 fd77::1/64
#     AF_XDP on veth-a 10.99.0.1 fd99::1  <──veth──>  veth-b 10.99.0.2 fd99::2
#
# Checks: every scrape parses as strict Prometheus text (tests/integration/promtext.py: names,
# labels, escapes, HELP/TYPE order, contiguous families, no duplicate series, histogram
# buckets monotone with +Inf = _count); the drop reasons are exactly drop.h's list; counters
# grow with traffic (ports, queues, sojourn histogram, peer bytes under both WireGuard exporter
# namings) and never go down; /metrics agrees with the telemetry socket and with `wg show`;
# HEAD, HTTP/1.0, absolute-form; bad requests get 400/404/405/431/505 and the daemon keeps
# serving; idle and excess clients do not lock scrapers out; /tunless/queues, /tunless/queue,
# /tunless/workers answer (a bad queue id does not); the control plane's conservation is exact
# per flow once quiet (with staged packets, some dropped with their peer); SIGTERM while
# telemetry is queried back to back: exit 0 and no torn-down state served; a busy metrics port
# stops the daemon with a clear error. Output "ok ..."/"not ok ...", then "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/env.sh
. "$HERE/../../scripts/env.sh"
# shellcheck source=lab.sh
. "$HERE/lab.sh"
# shellcheck source=hostlib.sh
. "$HERE/hostlib.sh"

P=mt$$
HL_NAME_A=mt$(($$ % 100000))a   # unique instance name (DPDK runtime dir is global)
A=$HL_NAME_A
B_PUB=KzETaL5ZMbcJUBnaaIpf/8sCfCptDvrtsrECFQCknlk=
URL=http://127.0.0.1:9586/metrics
PROM="python3 $HERE/promtext.py"
DROP_H=$TUNLESS_ROOT/src/dataplane/drop.h
T0=$SECONDS

hl_need_bins "$HL_TUNLESSD" "$WG_GO"
hl_need_cmds wg iperf3 python3 ethtool

# scrape <out-file>: GET /metrics from inside ns a.
scrape() { lab_exec a $PROM fetch "$URL" "$1"; }
prom() { $PROM "$@"; }
val() { $PROM get "$@" 2>/dev/null; }

lab_init "$P"    # its scratch dir $LAB_DIR (removed at cleanup) holds the helpers below
lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$A"

# Raw HTTP client: http_raw <payload with \r\n escapes> [repeat-suffix-count]: prints the status
# line's code and, with -h, the response headers; "closed" if the server closed without a reply.
cat >"$LAB_DIR/http.py" <<'EOF'
import socket, sys, time
mode, payload = sys.argv[1], sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
s = socket.create_connection(("127.0.0.1", 9586), timeout=10)
if mode == "big":
    payload = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n"
try:
    s.sendall(payload)
    if mode == "eof":
        s.shutdown(socket.SHUT_WR)
except OSError:
    pass
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
except OSError:
    pass
if not out:
    print("closed"); sys.exit(0)
head, _, body = out.partition(b"\r\n\r\n")
lines = head.decode("latin-1").split("\r\n")
print(lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "garbage")
if mode == "headers":
    for l in lines[1:]:
        print(l)
    print("body-bytes: %d" % len(body))
EOF
# Idle client: connects, sends half a request line, reports how long until the server closes.
cat >"$LAB_DIR/idle.py" <<'EOF'
import socket, sys, time
n = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", 9586), timeout=30) for _ in range(n)]
for s in socks:
    s.sendall(b"GET /met")
print("connected %d" % n, flush=True)
t0 = time.time()
closed = 0
for s in socks:
    try:
        closed += s.recv(1) == b""
    except OSError:
        closed += 1
print("closed %d of %d after %.1f s" % (closed, n, time.time() - t0), flush=True)
EOF
http() { lab_exec a python3 "$LAB_DIR/http.py" "$@"; }
BAD_SENT=0    # requests sent that must be answered with an error status
code_is() { # <want> <mode> <payload>
	local want=$1 got
	shift
	[ "$want" -lt 400 ] || BAD_SENT=$((BAD_SENT + 1))
	got=$(http "$@")
	[ "$got" = "$want" ] || { hl_note "  status ${got:-none}, want $want"; return 1; }
}

# ---- lab and daemons ---------------------------------------------------------------------------
lab_host_pair
lab_exec a ethtool -K veth-a tx off >/dev/null
lab_exec b ethtool -K veth-b tx off >/dev/null
hl_config "$LAB_DIR/a.yaml" host-a
printf 'metrics: {listen: "127.0.0.1:9586"}\n' >>"$LAB_DIR/a.yaml"
if ! hl_tunless_start a "$LAB_DIR/a.yaml" "$LAB_DIR/tunless-a.log"; then
	hl_nok "tunlessd starts with metrics enabled"
	hl_finish
	exit 1
fi
hl_ok "tunlessd starts with metrics enabled"
hl_check "it logs the metrics URL" grep -q "metrics: Prometheus text on http://127.0.0.1:9586/metrics" "$LAB_DIR/tunless-a.log"
if ! hl_peer_start b wggo; then
	hl_nok "wireguard-go starts and takes its configuration"
	hl_finish
	exit 1
fi
hl_check "ping a -> b through the tunnel" lab_wait_ping a 10.77.0.2 10

# ---- format -------------------------------------------------------------------------------------
REQUIRED=tunless_info,tunless_peers,tunless_workers,tunless_port_rx_packets_total,tunless_port_tx_packets_total
REQUIRED+=,tunless_drops_total,tunless_ethdev_rx_packets_total,tunless_handshakes_completed_total
REQUIRED+=,tunless_queue_depth_packets,tunless_queue_depth_bytes,tunless_queue_enqueued_packets_total
REQUIRED+=,tunless_queue_dequeued_packets_total,tunless_queue_ecn_marks_total,tunless_queue_aqm_drops_total
REQUIRED+=,tunless_queue_backpressure_total,tunless_queue_sojourn_seconds,tunless_aqm_target_seconds
REQUIRED+=,tunless_aqm_interval_seconds,tunless_aqm_limit_packets,tunless_shaper_rate_bits_per_second
REQUIRED+=,tunless_worker_busy_ratio,tunless_worker_polls_total,tunless_conservation_balance_packets
REQUIRED+=,tunless_port_rx_drops_total,tunless_port_dequeue_drops_total
REQUIRED+=,tunless_queue_pairs,tunless_worker_crypto_jobs_total,tunless_worker_crypto_packets_total
REQUIRED+=,tunless_worker_inflight_packets,tunless_worker_job_fifo_jobs,tunless_worker_crypto_backpressure_total
REQUIRED+=,tunless_crypto_ring_jobs,tunless_crypto_ring_capacity_jobs
REQUIRED+=,wireguard_sent_bytes_total,wireguard_received_bytes_total,wireguard_latest_handshake_seconds
REQUIRED+=,wireguard_latest_handshake_delay_seconds,wireguard_device_info,wireguard_peer_info
REQUIRED+=,wireguard_peer_allowed_ips_info,wireguard_peer_receive_bytes_total
REQUIRED+=,wireguard_peer_transmit_bytes_total,wireguard_peer_last_handshake_seconds
S1=$LAB_DIR/scrape1.txt S2=$LAB_DIR/scrape2.txt S3=$LAB_DIR/scrape3.txt
hl_check "GET /metrics answers 200" scrape "$S1"
check_out=$(prom check "$S1" --drop-h "$DROP_H" --require "$REQUIRED" 2>&1)
hl_note "scrape 1: $(tail -n 1 <<<"$check_out")"
if prom check "$S1" --drop-h "$DROP_H" --require "$REQUIRED" >/dev/null 2>&1; then
	hl_ok "scrape 1 is strict Prometheus text, drop reasons = drop.h, required families present"
else
	hl_nok "scrape 1 is strict Prometheus text, drop reasons = drop.h, required families present"
	head -n 20 <<<"$check_out" | sed 's/^/#   /'
fi
# The checker itself must reject broken text (else the check above proves nothing).
bad_text() {
	local f=$LAB_DIR/bad.txt
	printf '%s\n' "$@" >"$f"
	! prom check "$f" >/dev/null 2>&1
}
hl_check "checker rejects a sample without TYPE" bad_text 'x_total 1'
hl_check "checker rejects a bad label escape" bad_text '# HELP x_total h' '# TYPE x_total counter' 'x_total{a="\q"} 1'
hl_check "checker rejects +Inf != _count" bad_text '# HELP h h' '# TYPE h histogram' 'h_bucket{le="1"} 1' \
	'h_bucket{le="+Inf"} 2' 'h_sum 1' 'h_count 3'
hl_check "checker rejects falling buckets" bad_text '# HELP h h' '# TYPE h histogram' 'h_bucket{le="1"} 2' \
	'h_bucket{le="2"} 1' 'h_bucket{le="+Inf"} 2' 'h_sum 1' 'h_count 2'
hl_check "checker rejects a split family" bad_text '# HELP a a' '# TYPE a gauge' 'a 1' '# HELP b b' '# TYPE b gauge' 'b 1' 'a{x="1"} 2'

hl_check "tunless_info names the instance" sh -c "grep -q '^tunless_info{name=\"$A\",mode=\"host\",public_key=\"$HL_A_PUB\"' '$S1'"
hl_check "tunless_peers is 1" test "$(val "$S1" tunless_peers)" = 1
hl_check "queues wan/0 and lan/0 exported" sh -c "grep -q '^tunless_queue_depth_packets{port=\"wan\",worker=\"0\"}' '$S1' &&
	grep -q '^tunless_queue_depth_packets{port=\"lan\",worker=\"0\"}' '$S1'"
hl_check "AQM target at the default (10 ms)" test "$(val "$S1" tunless_aqm_target_seconds port=wan)" = 0.01
hl_check "AQM limit at the default 10240" test "$(val "$S1" tunless_aqm_limit_packets port=wan)" = 10240
hl_check "MindFlavor names: labels interface, public_key, allowed_ips, friendly_name" \
	grep -qF "wireguard_sent_bytes_total{interface=\"$A\",public_key=\"$B_PUB\",allowed_ips=\"10.77.0.2/32,fd77::2/128\",friendly_name=\"host-b\"}" "$S1"
hl_check "mdlayher names: wireguard_peer_info with endpoint and name" \
	grep -qF "wireguard_peer_info{device=\"$A\",public_key=\"$B_PUB\",endpoint=\"10.99.0.2:51820\",name=\"host-b\"} 1" "$S1"
hs=$(val "$S1" wireguard_latest_handshake_seconds)
now=$(date +%s)
hl_check "latest handshake is a recent UNIX time ($hs)" test "${hs:-0}" -gt $((now - 120)) -a "${hs:-0}" -le $((now + 1))

# ---- traffic ------------------------------------------------------------------------------------
hl_note "iperf3 UDP a -> b: $(hl_iperf udp a b 10.77.0.2)"
hl_note "iperf3 TCP b -> a: $(hl_iperf tcp b a 10.77.0.1)"
lab_exec a ping -c 20 -i 0.05 -q 10.77.0.2 >/dev/null
hl_check "scrape 2 after traffic" scrape "$S2"
hl_check "scrape 2 is strict Prometheus text" prom check "$S2" --drop-h "$DROP_H" --require "$REQUIRED"
grew() {
	local out
	out=$(prom grew "$S1" "$S2" "$@")
	hl_note "  $out"
	[[ $out == *" -> "* ]] && prom grew "$S1" "$S2" "$@" >/dev/null
}
hl_check "tunless_port_rx_packets_total{port=lan} grew" grew tunless_port_rx_packets_total port=lan
hl_check "tunless_port_tx_packets_total{port=wan} grew" grew tunless_port_tx_packets_total port=wan
hl_check "tunless_queue_enqueued_packets_total{port=wan} grew" grew tunless_queue_enqueued_packets_total port=wan
hl_check "tunless_queue_dequeued_packets_total{port=lan} grew" grew tunless_queue_dequeued_packets_total port=lan
hl_check "tunless_queue_tx_packets_total{port=wan} grew" grew tunless_queue_tx_packets_total port=wan
hl_check "sojourn histogram _count{port=wan} grew" grew tunless_queue_sojourn_seconds_count port=wan
hl_check "wireguard_sent_bytes_total grew" grew wireguard_sent_bytes_total
hl_check "wireguard_received_bytes_total grew" grew wireguard_received_bytes_total
hl_check "wireguard_peer_transmit_bytes_total grew" grew wireguard_peer_transmit_bytes_total
hl_check "tunless_peer_rx_packets_total grew" grew tunless_peer_rx_packets_total
hl_check "tunless_worker_polls_total{state=busy} grew" grew tunless_worker_polls_total state=busy
hl_check "no counter or bucket went down between scrapes" prom monotone "$S1" "$S2"
same_pair() { [ -n "$(val "$S2" "$1")" ] && [ "$(val "$S2" "$1")" = "$(val "$S2" "$2")" ]; }
hl_check "both namings agree: sent = transmit bytes" same_pair wireguard_sent_bytes_total wireguard_peer_transmit_bytes_total
hl_check "both namings agree: received = receive bytes" same_pair wireguard_received_bytes_total wireguard_peer_receive_bytes_total
# Queue bookkeeping visible in one scrape: enqueued = dequeued + AQM drops + depth.
queue_balance() {
	local p=$1 e d a q
	e=$(val "$S2" tunless_queue_enqueued_packets_total port="$p") d=$(val "$S2" tunless_queue_dequeued_packets_total port="$p")
	a=$(val "$S2" tunless_queue_aqm_drops_total port="$p") q=$(val "$S2" tunless_queue_depth_packets port="$p")
	hl_note "  $p: enqueued $e dequeued $d aqm drops $a depth $q"
	[ -n "$e" ] && [ "$e" -eq $((d + a + q)) ]
}
hl_check "wan queue: enqueued = dequeued + aqm drops + depth" queue_balance wan
hl_check "lan queue: enqueued = dequeued + aqm drops + depth" queue_balance lan

# Prometheus agrees with the telemetry socket (drops read in between two scrapes) and wg show.
tel_between() {
	local t r m1 m2 tv bad=0
	scrape "$S2" || return 1
	t=$(hl_tel "$A" /tunless/drops) || return 1
	scrape "$S3" || return 1
	for r in $(awk '/^[[:space:]]*X\(/ { sub(/.*X\(/, ""); sub(/,.*/, ""); print }' "$DROP_H"); do
		m1=$(val "$S2" tunless_drops_total reason="$r") m2=$(val "$S3" tunless_drops_total reason="$r")
		tv=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$t" "$r")
		[ -n "$m1" ] && [ "$m1" -le "$tv" ] && [ "$tv" -le "$m2" ] || { hl_note "  $r: $m1 <= $tv <= $m2 fails"; bad=1; }
	done
	return $bad
}
hl_check "tunless_drops_total matches /tunless/drops for every reason" tel_between
# Per-port conservation as /metrics exports it equals /tunless/conservation on the quiet dataplane.
balance_agrees() {
	local p t
	sleep 0.5
	scrape "$S3" || return 1
	for p in wan lan; do
		t=$(hl_tel "$A" /tunless/conservation --get "$p.balance") || return 1
		hl_note "  $p balance: /metrics $(val "$S3" tunless_conservation_balance_packets port=$p), telemetry $t"
		[ "$(val "$S3" tunless_conservation_balance_packets port=$p)" = "$t" ] || return 1
	done
}
hl_check "tunless_conservation_balance_packets = /tunless/conservation balance (quiet)" balance_agrees

# The control plane's account: packets staged for a peer that never answers (its endpoint
# is a port nobody serves) and dropped when the peer is removed; with the first ping's
# packet staged before the handshake, handshake messages, frames the control plane built;
# every flow balances exactly once quiet, in telemetry and in /metrics.
GHOST=$(wg genkey | wg pubkey)
lab_exec a wg set "$A" peer "$GHOST" allowed-ips 10.77.0.50/32 endpoint 10.99.0.2:9
lab_exec a ping -c 3 -i 0.2 -W 1 -q 10.77.0.50 >/dev/null 2>&1
hl_check "packets to the silent peer are staged" \
	sh -c "'$TUNLESS_ROOT/scripts/tl-telemetry' '$A' /tunless/peers | grep -q '\"staged\": [1-9]'"
lab_exec a wg set "$A" peer "$GHOST" remove
ctrl_exact() { # prints the ctrl balance; true if every flow is 0 and the traffic above shows
	hl_tel "$A" /tunless/conservation | python3 -c '
import json, sys
c = json.load(sys.stdin)["ctrl"]
flows = ("handshakes", "staged", "frames", "slowpath")
print("  " + "; ".join("%s in %s out %s dropped %s held %s balance %s" % ((f,) + tuple(
      c[f + "_" + k] for k in ("in", "out", "dropped", "held", "balance"))) for f in flows), file=sys.stderr)
ok = all(int(c[f + "_balance"]) == 0 for f in flows) and int(c["balance"]) == 0
seen = c["handshakes_in"] > 0 and c["staged_in"] >= 4 and c["staged_dropped"] >= 3 and c["frames_in"] > 0
sys.exit(0 if ok and seen else 1)'
}
hl_check "ctrl conservation: every flow balances exactly (staged, dropped with the peer, handshakes, frames)" \
	lab_wait_for 10 ctrl_exact
ctrl_exact 2>&1 | sed 's/^/# /'
ctrl_metrics() {
	local f v
	scrape "$S3" || return 1
	for f in handshakes staged frames slowpath; do
		v=$(val "$S3" tunless_ctrl_conservation_balance_packets flow=$f)
		[ "$v" = 0 ] || { hl_note "  /metrics $f: ${v:-missing}"; return 1; }
	done
}
hl_check "tunless_ctrl_conservation_balance_packets{flow=...} = 0 (quiet)" ctrl_metrics
wg_agrees() {
	local tx
	tx=$(lab_exec a wg show "$A" transfer | awk '{ print $3 }')
	scrape "$S3" && [ "$(val "$S3" wireguard_sent_bytes_total)" -ge "${tx:-x}" ]
}
hl_check "wireguard_sent_bytes_total >= wg show transfer read just before" wg_agrees

# ---- HTTP edge cases ------------------------------------------------------------------------------
scrape "$S3"
ERR0=$(val "$S3" tunless_metrics_requests_total outcome=error)
H11='\r\nHost: 127.0.0.1\r\n\r\n'
head_out=$(http headers "HEAD /metrics HTTP/1.1$H11")
hl_check "HEAD /metrics: 200, Content-Length, no body" sh -c "printf '%s\n' \"\$0\" | grep -q '^200' &&
	printf '%s\n' \"\$0\" | grep -q '^Content-Length: [1-9]' && printf '%s\n' \"\$0\" | grep -q '^body-bytes: 0$'" "$head_out"
get_out=$(http headers "GET /metrics HTTP/1.1$H11")
hl_check "GET: text/plain; version=0.0.4 and Connection: close" sh -c "printf '%s\n' \"\$0\" | grep -q '^Content-Type: text/plain; version=0.0.4' &&
	printf '%s\n' \"\$0\" | grep -q '^Connection: close'" "$get_out"
hl_check "HTTP/1.0 without Host: 200" code_is 200 plain 'GET /metrics HTTP/1.0\r\n\r\n'
hl_check "query string ignored: 200" code_is 200 plain "GET /metrics?x=1 HTTP/1.1$H11"
hl_check "absolute-form target: 200" code_is 200 plain "GET http://127.0.0.1:9586/metrics HTTP/1.1$H11"
hl_check "bare LF line ends: 200" code_is 200 plain 'GET /metrics HTTP/1.1\nHost: x\n\n'
hl_check "request then EOF without the blank line: 400" code_is 400 eof 'GET /metrics HTTP/1.1\r\nHost: x\r\n'
hl_check "GET /: 404" code_is 404 plain "GET / HTTP/1.1$H11"
hl_check "GET /metricsx: 404" code_is 404 plain "GET /metricsx HTTP/1.1$H11"
hl_check "POST /metrics: 405" code_is 405 plain "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
allow_hdr() {
	local h
	BAD_SENT=$((BAD_SENT + 1))
	h=$(http headers "DELETE /metrics HTTP/1.1$H11")
	grep -q '^Allow: GET, HEAD' <<<"$h"
}
hl_check "405 carries Allow: GET, HEAD" allow_hdr
hl_check "HTTP/1.1 without Host: 400" code_is 400 plain 'GET /metrics HTTP/1.1\r\n\r\n'
hl_check "two Host headers: 400" code_is 400 plain 'GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'
hl_check "garbage request line: 400" code_is 400 plain 'HELLO\r\n\r\n'
hl_check "binary junk: 400" code_is 400 plain '\x00\x01\x02\xff\r\n\r\n'
hl_check "header without colon: 400" code_is 400 plain 'GET /metrics HTTP/1.1\r\nHost: x\r\nbroken\r\n\r\n'
hl_check "obsolete line folding: 400" code_is 400 plain 'GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n'
hl_check "lower-case version: 400" code_is 400 plain 'GET /metrics http/1.1\r\nHost: x\r\n\r\n'
hl_check "HTTP/2.0: 505" code_is 505 plain 'GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n'
hl_check "20 kB of headers: 431" code_is 431 big ''
hl_check "daemon alive after the bad requests" hl_tl_alive "$A"
hl_check "scrape after the bad requests" scrape "$S3"
ERR1=$(val "$S3" tunless_metrics_requests_total outcome=error)
hl_note "  error responses counted: ${ERR0:-?} -> ${ERR1:-?}, bad requests sent: $BAD_SENT"
hl_check "tunless_metrics_requests_total{outcome=error} counts each of them" test "$((ERR1 - ERR0))" = "$BAD_SENT"

# Idle connections: 20 of them (more than the 16 client slots) do not lock a scraper out, and
# the server closes the ones it keeps once they stay quiet.
lab_bg a "$LAB_DIR/idle.log" python3 "$LAB_DIR/idle.py" 20
idle=$LAB_LAST_PID
lab_wait_for 10 grep -q connected "$LAB_DIR/idle.log"
hl_check "scrape while 20 idle clients hold connections" scrape "$S3"
hl_check "idle clients are closed by the server (within 30 s)" lab_wait_for 30 grep -q "closed 20 of 20" "$LAB_DIR/idle.log"
hl_note "  $(grep closed "$LAB_DIR/idle.log")"
wait "$idle" 2>/dev/null

# ---- telemetry ----------------------------------------------------------------------------------
queues=$(hl_tel "$A" /tunless/queues 2>&1)
hl_check "/tunless/queues lists wan/0 and lan/0" sh -c "printf '%s' '$queues' | python3 -c 'import json,sys; q=json.load(sys.stdin); sys.exit(0 if \"wan/0\" in q and \"lan/0\" in q else 1)'"
qinfo() { hl_tel "$A" "/tunless/queue,$1" --get "$2"; }
hl_check "/tunless/queue,wan/0 enqueued > 0" test "$(qinfo wan/0 enqueued)" -gt 0
hl_check "/tunless/queue,lan/0 aqm_target_us = 10000" test "$(qinfo lan/0 aqm_target_us)" = 10000
hl_check "/tunless/queue,wan/0 sojourn histogram present" test -n "$(qinfo wan/0 sojourn_below_ns.4194304)"
tel_q_vs_prom() {
	local t p
	t=$(qinfo wan/0 enqueued) || return 1
	scrape "$S3" && p=$(val "$S3" tunless_queue_enqueued_packets_total port=wan worker=0)
	[ "$p" -ge "$t" ]
}
hl_check "telemetry and /metrics agree on the wan queue" tel_q_vs_prom
hl_check "/tunless/queue,wan/7 (no such worker) is refused" sh -c "! '$TUNLESS_ROOT/scripts/tl-telemetry' '$A' /tunless/queue,wan/7"
hl_check "/tunless/queue,bogus is refused" sh -c "! '$TUNLESS_ROOT/scripts/tl-telemetry' '$A' /tunless/queue,bogus"
hl_check "/tunless/queue without a parameter is refused" sh -c "! '$TUNLESS_ROOT/scripts/tl-telemetry' '$A' /tunless/queue"
hl_check "/tunless/workers: worker0 busy_polls > 0" test "$(hl_tel "$A" /tunless/workers --get worker0.busy_polls)" -gt 0

# ---- shutdown under telemetry load ----------------------------------------------------------------
# Three clients query /tunless/conservation, /tunless/workers, /tunless/device and
# /tunless/peers back to back while the daemon gets SIGTERM. Every reply must parse, and none
# may show torn-down state: counters never go backwards on a connection (a reply once the
# gate closed is null). The daemon exits 0. Repeated with fresh daemons.
cat >"$LAB_DIR/hammer.py" <<'EOF'
import json, socket, sys, threading
path, bad, counts = sys.argv[1], [], [0, 0, 0]
CMDS = ("/tunless/conservation", "/tunless/workers", "/tunless/device", "/tunless/peers")

def mono(cmd, v):
    if cmd == "/tunless/conservation":
        return v["wan"]["rx"] + v["lan"]["rx"] + v["ctrl"]["frames_in"]
    if cmd == "/tunless/workers":
        w = v["worker0"]
        return w["busy_polls"] + w["idle_polls"]
    return 0

def run(i):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    s.recv(1 << 20)
    last = {}
    while True:
        cmd = CMDS[counts[i] % len(CMDS)]
        try:
            s.send(cmd.encode())
            data = s.recv(1 << 20)
        except OSError:
            break
        if not data:
            break
        try:
            v = json.loads(data)[cmd]
        except (ValueError, KeyError):
            bad.append("%s: unparsable reply %r" % (cmd, data[:80]))
            break
        counts[i] += 1
        if counts[i] == 200:
            print("running", flush=True)
        if v is None:
            continue
        m = mono(cmd, v)
        if m < last.get(cmd, 0):
            bad.append("%s went backwards: %d after %d" % (cmd, m, last[cmd]))
            break
        last[cmd] = m

ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("done %d replies" % sum(counts), flush=True)
for b in bad:
    print("BAD " + b, flush=True)
sys.exit(1 if bad else 0)
EOF
hammer_stop() { # <round>: hammer the running daemon, SIGTERM it, check both
	local log=$LAB_DIR/hammer$1.log job ok=0
	python3 "$LAB_DIR/hammer.py" "$(hl_tel_sock "$A")" >"$log" 2>&1 </dev/null &
	job=$!
	lab_wait_for 20 grep -q running "$log" || ok=1
	hl_tunless_stop "$A" TERM 10
	wait "$job" || ok=1
	hl_note "  round $1: $(tr '\n' ' ' <"$log")daemon status $HL_TL_RC"
	[ "$HL_TL_RC" = 0 ] && ! grep -q BAD "$log" && grep -q done "$log" && return $ok
}
hl_check "SIGTERM while telemetry is hammered: exit 0, no torn-down state served (round 1)" hammer_stop 1
hl_check "the metrics port is closed after exit" sh -c "! ip netns exec $(lab_ns a) $PROM fetch '$URL' /dev/null"
hl_config "$LAB_DIR/a3.yaml" host-a
for round in 2 3; do
	if hl_tunless_start a "$LAB_DIR/a3.yaml" "$LAB_DIR/tunless-a$round.log"; then
		lab_wait_ping a 10.77.0.2 10 >/dev/null
		hl_check "SIGTERM while telemetry is hammered (round $round)" hammer_stop "$round"
	else
		hl_nok "tunlessd starts again (round $round)"
	fi
done

# ---- a busy metrics port: clear error, non-zero exit, nothing left behind -------------------------
# (SO_REUSEADDR: the first daemon's closed connections may still be in TIME_WAIT)
lab_bg a "$LAB_DIR/blocker.log" python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9586)); s.listen(1)
print("listening", flush=True); time.sleep(60)'
blocker=$LAB_LAST_PID
hl_check "another listener takes 127.0.0.1:9586" lab_wait_for 5 grep -q listening "$LAB_DIR/blocker.log"
HL_LOGS+=("$LAB_DIR/tunless-a2.log")
lab_bg a "$LAB_DIR/tunless-a2.log" timeout -s KILL 60 "$HL_TUNLESSD" -c "$LAB_DIR/a.yaml"
second=$LAB_LAST_PID
lab_wait_for 60 sh -c "! kill -0 $second 2>/dev/null"
wait "$second"
rc=$?
hl_check "daemon with a busy metrics port exits non-zero (status $rc)" test "$rc" -ne 0 -a "$rc" -lt 124
hl_check "the error names metrics.listen and the address" grep -q 'metrics.listen: cannot listen on 127.0.0.1:9586' "$LAB_DIR/tunless-a2.log"
hl_check "no XDP program left on veth-a" sh -c "! ip -n $(lab_ns a) link show veth-a | grep -q xdp"
hl_check "no host interface $A left" sh -c "! ip -n $(lab_ns a) link show $A 2>/dev/null"
kill "$blocker" 2>/dev/null
wait "$blocker" 2>/dev/null

lab_cleanup
hl_check "no ${P}-* namespace left" test -z "$(lab_leftovers "$P")"
hl_check "no DPDK runtime dir left" test ! -e "/var/run/dpdk/tunless-$A"
hl_note "runtime $((SECONDS - T0)) s"
hl_finish
