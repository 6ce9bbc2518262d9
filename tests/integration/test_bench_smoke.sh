#!/usr/bin/env bash
# bench/run.sh --smoke keeps working: it runs every implementation x scenario once at tiny
# scale and this checks what it wrote (not the numbers):
#   * results.json parses under the strict reader (no NaN/Infinity), has the schema's keys, and
#     a record for every implementation x scenario, each ok, skipped with a reason, or an error
#     with its message; every ok record has the metrics its scenario promises;
#   * tunless, wireguard-go, wggo-ts (Tailscale's fork), boringtun and openvpn each have at least
#     one ok record per scenario (kernel WireGuard may be skipped where the module does not load);
#   * the gateway scenario (client -> gwa -> gwb -> server, no shaper) ran tunless once per pair
#     of port kinds (AF_XDP on both; udp WAN with AF_XDP LAN), each ok, with its ratios to wggo-ts
#     and wireguard-go from the same run and its cores per Gbit/s;
#   * wggo-ts is named by its module and pseudo-version in results.json and both reports;
#   * bench/throughput.sh -m gateway measures wggo-ts and tunless and writes their ratio;
#   * >= 4 PNG plots that are PNG files, report.md and report.html that show them;
#   * results.json and the report name tunless's port kinds in host and gateway mode;
#   * the counter snapshots carry Ip FragFails and the loss accounting counts them;
#   * the no-drop cells are the study's: R = 50 Mbit/s, the heavy video, tunless with CUBIC + ECN
#     and BBR without, wireguard-go at txqueuelen 25 and 500; each names its endpoints' CC and ECN
#     as set (iperf3's sender CC agrees), the capacity left to TCP and the bottleneck's share of R;
#     one statement per cell says where the bits went, with the cell's median numbers;
#   * the kernel-TUN cell with IFF_BACKPRESSURE ran, or is skipped with the reason;
#   * no namespace of the run is left behind, and none of an interrupted run's (Ctrl-C: SIGINT to
#     its process group) nor any process that ran in them.
# Needs root, the build (tunlessd, tl-delayline), scripts/setup.sh's packages.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../../scripts/env.sh"
OUT=$(mktemp -d /tmp/tl-bench-smoke.XXXXXX)
# Kept when something failed (or BENCH_SMOKE_KEEP=1), to look at.
trap '[ "${BENCH_SMOKE_KEEP:-}${KEEP:-}" ] && echo "# output kept in $OUT" || rm -rf "$OUT"' EXIT
PY=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && PY=/usr/bin/python3

before=$(ip netns list | awk '$1 ~ /^bn[0-9]+-/ { print $1 }' | sort)
# No TL_LAB_LOCK: this test already runs under the lab lock.
env -u TL_LAB_LOCK timeout 840 "$TUNLESS_ROOT/bench/run.sh" --smoke -o "$OUT" >"$OUT/run.log" 2>&1
rc=$?
P=0 F=0
if [ $rc -eq 0 ]; then P=$((P + 1)); echo "ok bench/run.sh --smoke exits 0"; else
	F=$((F + 1)); echo "not ok bench/run.sh --smoke exits 0 (rc $rc)"
	tail -n 30 "$OUT/run.log" | sed 's/^/#   /'
fi
after=$(ip netns list | awk '$1 ~ /^bn[0-9]+-/ { print $1 }' | sort)
if [ "$before" = "$after" ]; then P=$((P + 1)); echo "ok no namespace left behind"; else
	F=$((F + 1)); echo "not ok namespaces left behind: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
fi

# Ctrl-C in the middle of a no-drop cell (tunless, the delay line, iperf3 and the video
# stream running): the terminal's SIGINT goes to the run's process group. Every process in
# the run's namespaces, the namespaces and the lab's files go with it.
# A shell started in the background (as by CI) ignores SIGINT and hands that on: the run is
# started with SIGINT's default action, as from a terminal, in a process group of its own.
INT_OUT=$OUT/interrupted
set -m
$PY -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
	env -u TL_LAB_LOCK "$TUNLESS_ROOT/bench/run.sh" --smoke -i tunless -s nodrop -o "$INT_OUT" >"$OUT/run-int.log" 2>&1 &
ipid=$!
set +m
nsre="^bn$((ipid % 10000))[0-9]+-"
# The cell is "running" once its iperf3 runs in the run's namespaces (beside tunlessd and the
# delay line); before.json alone is written just before iperf3 starts. Waits at most 90 s.
int_ns= int_pids= int_comms=
for _ in $(seq 900); do
	kill -0 "$ipid" 2>/dev/null || break
	if compgen -G "$INT_OUT/raw/tunless-gateway/nodrop-*/before.json" >/dev/null; then
		int_ns=$(ip netns list | awk -v re="$nsre" '$1 ~ re { print $1 }')
		int_pids=$(for ns in $int_ns; do ip netns pids "$ns"; done | sort -u | tr '\n' ' ')
		int_comms=$(for p in $int_pids; do cat "/proc/$p/comm"; done 2>/dev/null | sort -u | tr '\n' ' ')
		[[ $int_comms == *tunlessd* && $int_comms == *tl-delayline* && $int_comms == *iperf3* ]] && break
	fi
	sleep 0.1
done
kill -INT -- "-$ipid" 2>/dev/null
# A run that ignored the signal is killed after 2 minutes (and fails below).
for _ in $(seq 1200); do kill -0 "$ipid" 2>/dev/null || break; sleep 0.1; done
kill -KILL -- "-$ipid" 2>/dev/null
wait "$ipid"
irc=$?
# Killed processes the run left are reparented and reaped: give them up to 5 s.
for _ in $(seq 50); do
	left_pids=$(for p in $int_pids; do [ -d "/proc/$p" ] && echo "$p($(cat "/proc/$p/comm" 2>/dev/null))"; done | tr '\n' ' ')
	[ -z "$left_pids" ] && break
	sleep 0.1
done
left_ns=$(ip netns list | awk -v re="$nsre" '$1 ~ re { print $1 }' | tr '\n' ' ')
left_dirs=$(ls -d /tmp/lab-bn$((ipid % 10000))[0-9]*.* 2>/dev/null | tr '\n' ' ')
if [[ $int_comms == *tunlessd* && $int_comms == *tl-delayline* && $int_comms == *iperf3* ]] && [ $irc -eq 130 ] &&
	[ -z "$left_ns" ] && [ -z "$left_pids" ] && [ -z "$left_dirs" ]; then
	P=$((P + 1)); echo "ok Ctrl-C in a no-drop cell (rc $irc): $(echo $int_ns | wc -w) namespaces and $(echo $int_pids | wc -w) processes ($int_comms) gone"
else
	F=$((F + 1)); echo "not ok Ctrl-C in a no-drop cell (rc $irc; running then: $int_comms; left: namespaces '$left_ns' processes '$left_pids' dirs '$left_dirs')"
	tail -n 20 "$OUT/run-int.log" | sed 's/^/#   /'
fi

# bench/throughput.sh -m gateway (the same gateway forwarding, paired runs): one short run of
# wggo-ts and tunless writes its JSON with both measured and their ratio.
env -u TL_LAB_LOCK timeout 300 "$TUNLESS_ROOT/bench/throughput.sh" -m gateway -t 1 -i wggo-ts,tunless \
	-o "$OUT/tp-gateway/throughput.json" >"$OUT/tp-gateway.log" 2>&1
trc=$?
if $PY - "$OUT/tp-gateway/throughput.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
res = {r["impl"]: r for r in d["results"]}
ok = (d["mode"] == "gateway" and all((res.get(i) or {}).get("gbit_s", 0) > 0 for i in ("wggo-ts", "tunless"))
      and res["wggo-ts"]["version"].startswith("github.com/tailscale/wireguard-go v0.0.0-")
      and "tunless/wggo-ts" in d["ratios"] and d["summary"]["tunless"]["vpn_cores_per_gbit_s"] is not None)
sys.exit(0 if ok else 1)
EOF
then P=$((P + 1)); echo "ok bench/throughput.sh -m gateway: wggo-ts and tunless measured, their ratio and cores per Gbit/s (rc $trc)"; else
	F=$((F + 1)); echo "not ok bench/throughput.sh -m gateway (rc $trc)"
	tail -n 15 "$OUT/tp-gateway.log" | sed 's/^/#   /'
fi
# Its lab is set as a gateway's NICs are (bench/impl.sh impl_gateway_lab, BENCH_GW_LAB=nic), as
# ethtool -k showed during each run: GRO on the gateways' four ports and the client's and server's
# eth0; TX offload (checksum, TSO, UDP segmentation) on the gateways' ports whose frames reach no
# AF_XDP port: all four for wggo-ts, the LAN ports only for tunless with AF_XDP on its WAN; off on
# the client's and server's eth0 (they feed tunless's AF_XDP LAN ports).
if $PY - "$OUT/tp-gateway/throughput.json" "$TUNLESS_ROOT" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[2] + "/tests/integration")
from test_bench_smoke_veths import veths_bad
d = json.load(open(sys.argv[1]))
res = {r["impl"]: r for r in d["results"]}
bad = [(i, b) for i, wan in (("wggo-ts", "tun"), ("tunless", "af_xdp"))
       for b in [veths_bad((res.get(i) or {}).get("veths") or [], wan)] if b]
print("# gateway_lab %s; %s" % (d.get("gateway_lab"), bad or "as expected"))
sys.exit(0 if d.get("gateway_lab") == "nic" and not bad else 1)
EOF
then P=$((P + 1)); echo "ok bench/throughput.sh -m gateway: the veths as a gateway's NICs, TX offload where no AF_XDP port receives"; else
	F=$((F + 1)); echo "not ok bench/throughput.sh -m gateway: the veths' GRO and TX offload are not as a gateway's NICs"
fi

$PY - "$OUT" "$P" "$F" "$TUNLESS_ROOT" <<'EOF'
import glob, json, os, sys, tempfile
out = sys.argv[1]
passed, failed = int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, os.path.join(sys.argv[4], "bench"))
import bench
def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print("ok", what)
    else:
        failed += 1
        print("not ok", what)
def nonfinite(x):
    raise ValueError("non-finite number %s" % x)
try:
    doc = json.load(open(os.path.join(out, "results.json")), parse_constant=nonfinite)
except (OSError, ValueError) as e:
    check(False, "results.json parses without NaN/Infinity (%s)" % e)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1)
check(True, "results.json parses without NaN/Infinity")
check(doc.get("schema") == "tunless-bench/1", "schema tunless-bench/1")
for k in ("profile", "date", "machine", "versions", "settings", "implementations", "records", "summary"):
    check(k in doc, "results.json has '%s'" % k)
check(all(k in doc["machine"] for k in ("kernel", "cpu", "cores")), "machine: kernel, cpu, cores")
tp = doc.get("settings", {}).get("tunless_ports") or {}
FWD = {"fwd-af_xdp-af_xdp": ("af_xdp", "af_xdp"), "fwd-udp-af_xdp": ("udp", "af_xdp")}
check(all(tp.get(m, {}).get("wan") and tp.get(m, {}).get("lan") for m in ("host", "gateway")) and
      all((tp.get(m, {}).get("wan"), tp.get(m, {}).get("lan")) == k for m, k in FWD.items()),
      "settings.tunless_ports names the WAN and LAN port kinds of every mode: %s" % json.dumps(tp))
IMPLS = ("tunless", "wireguard-go", "wggo-ts", "boringtun", "openvpn", "kernel-wg")
SCENS = ("throughput", "gateway", "latency", "overload", "nodrop")
TPUT = ("gbit_s", "cpu_percent_per_gbit_s", "cores_per_gbit_s")
NEED = {"throughput": TPUT, "gateway": TPUT,
        "latency": ("idle_p50_ms", "load_p99_ms", "grade", "tcp_goodput_mbit_s"),
        "overload": ("forwarded_pps", "loss_percent", "unaccounted", "loss_by_place"),
        "nodrop": ("tcp_goodput_mbit_s", "tcp_retransmits", "video_loss_percent", "located", "unaccounted", "loss_by_place",
                   "shaper_share_of_r", "capacity_left_to_tcp_mbit_s", "tcp_share_of_left", "ring_drops", "tail_drops",
                   "queue_drops_codel", "ecn_marks", "endpoints")}
recs = doc["records"]
for r in recs:
    if not all(k in r for k in ("impl", "mode", "scenario", "params", "status", "metrics", "samples")):
        check(False, "record has every key: %s" % json.dumps(r)[:200])
        break
    if r["status"] == "ok" and not all(k in r["metrics"] for k in NEED[r["scenario"]]):
        check(False, "%s %s record has %s" % (r["impl"], r["scenario"], NEED[r["scenario"]]))
        break
else:
    check(True, "every record has its keys, every ok record its scenario's metrics")
for impl in IMPLS:
    for s in SCENS:
        rs = [r for r in recs if r["impl"] == impl and r["scenario"] == s]
        explained = all(r["status"] == "ok" or (r.get("reason") or r.get("error")) for r in rs)
        okc = sum(r["status"] == "ok" for r in rs)
        must = impl != "kernel-wg"
        check(rs and explained and (okc > 0 or not must),
              "%s x %s: %d record(s), %d ok%s" % (impl, s, len(rs), okc,
                  "" if okc or not rs else " (%s)" % (rs[0].get("reason") or rs[0].get("error"))))
gw = [r for r in recs if r["impl"] == "tunless" and r["scenario"] == "gateway"]
check(gw and {r["mode"] for r in gw} == set(FWD) and all(r["status"] == "ok" for r in gw),
      "gateway scenario: tunless ran in %s, all ok: %s" % (sorted(FWD), sorted((r["mode"], r["status"]) for r in gw)))
gr = doc["summary"].get("gateway_ratios") or {}
for m in FWD:
    for o in ("wggo-ts", "wireguard-go"):
        k = "tunless %s/%s" % (m, o)
        check(any((v.get(k) or 0) > 0 for v in gr.values()), "summary.gateway_ratios has %s" % k)
check(all(r["metrics"].get("cores_per_gbit_s") is not None for r in recs
          if r["scenario"] == "gateway" and r["status"] == "ok" and r["params"]["test"] == "tcp"),
      "every gateway TCP record has its cores per Gbit/s")
tsv = doc.get("versions", {}).get("wggo-ts") or ""
check(tsv.startswith("github.com/tailscale/wireguard-go v0.0.0-") and
      any(i["id"] == "wggo-ts" and i["version"] == tsv for i in doc["implementations"]),
      "wggo-ts is named by its module and pseudo-version: '%s'" % tsv)
# The loss accounting reads the kernel's forwarding drops for too big packets (Ip FragFails,
# path MTU discovery): every snapshot has them, and located_loss() counts them on gwa/gwb.
snaps = glob.glob(os.path.join(out, "raw", "*", "*", "after.json"))
check(snaps and all(any("IpFragFails" in n["snmp"] for k, n in json.load(open(f))["ns"].items() if k.endswith("-gwa"))
                    for f in snaps), "%d counter snapshots carry gwa's Ip FragFails" % len(snaps))
cell = tempfile.mkdtemp()
for name, frag, txd in (("before", 5, 1), ("after", 15, 3)):
    json.dump({"time": 0, "tunless": {}, "ns": {"bn1-gwa": {"links": {"wg0": {
        "rx_packets": 0, "rx_dropped": 0, "tx_packets": 0, "tx_dropped": txd}}, "qdiscs": {},
        "snmp": {"IpFragFails": frag}}}}, open(os.path.join(cell, name + ".json"), "w"))
_, cats, located, _ = bench.located_loss(cell)
check(located == 12 and cats.get("frag_needed") == 10 and cats.get("tun_ring") == 2,
      "located_loss counts gwa's FragFails (10) beside its TUN drops (2): %s, %s" % (located, cats))
# The no-drop cells of the study (bench/run.sh ND_*): which ran, with what endpoints.
nd = [r for r in recs if r["scenario"] == "nodrop" and r["status"] == "ok"]
def cells(impl, **p):
    return [r for r in nd if r["impl"] == impl and all(r["params"].get(k) == v for k, v in p.items())]
for impl, p in (("tunless", dict(cc="cubic", ecn=1)), ("tunless", dict(cc="bbr", ecn=0)),
                ("wireguard-go", dict(queue=25, cc="cubic", ecn=1)), ("wireguard-go", dict(queue=500, cc="cubic", ecn=1))):
    rs = cells(impl, video="heavy", rate_mbit_s=50, **p)
    check(rs, "no-drop cell %s %s, heavy video at R = 50 Mbit/s: %d record(s)" % (impl, p, len(rs)))
check(doc["settings"]["video"]["packets_per_frame"] == 40 and 11 < doc["settings"]["video"]["mbit_s"] < 12,
      "the video is the study's 11.5 Mbit/s of 40-packet frames: %s" % doc["settings"]["video"])
bad = [(r["impl"], r["params"]) for r in nd
       if not (r["metrics"]["endpoints"].get("iperf3_sender_cc") == r["params"]["cc"] and
               all((r["metrics"]["endpoints"].get(n) or {}).get("ecn") == r["params"]["ecn"] and
                   (r["metrics"]["endpoints"].get(n) or {}).get("cc") == r["params"]["cc"] for n in ("client", "server")) and
               r["metrics"]["endpoints"].get("host"))]
check(nd and not bad, "every no-drop cell names its endpoints' CC and ECN as set, the host's, and iperf3's sender CC agrees (not: %s)" % bad)
bad = [(r["impl"], r["params"]) for r in nd
       if not (r["metrics"]["shaper_share_of_r"] or 0) > 0 or not (r["metrics"]["capacity_left_to_tcp_mbit_s"] or 0) > 0]
check(nd and not bad, "every no-drop cell has the bottleneck's share of R and the capacity left to TCP (not: %s)" % bad)
tl = cells("tunless")
check(tl and all(r["metrics"]["ecn_marks"] is not None and r["metrics"]["queue_drops_codel"] is not None and
                 "tunless" in r["metrics"]["bottleneck_counted_by"] for r in tl),
      "tunless's cells count CoDel drops and CE marks from its WAN queues: %s"
      % [(r["params"]["cc"], r["metrics"]["ecn_marks"], r["metrics"]["queue_drops_codel"]) for r in tl])
law = {(r["metrics"].get("wan_aqm_target_us"), r["metrics"].get("wan_aqm_interval_us")) for r in tl}
check(tl and all(t and i and i >= t for t, i in law) and
      "in force on its WAN queues: target" in doc["settings"]["bottleneck_tunless"],
      "tunless's cells record the AQM law its WAN queues had in force, and the report names it: %s; %s"
      % (sorted(law, key=str), doc["settings"]["bottleneck_tunless"]))
check(tl and all(r["metrics"].get("wan_aqm_flow_rtt_pct") == 20 and isinstance(r["metrics"].get("flow_rtt_held"), int)
                 for r in tl) and "a TCP flow's target at least 20 % of its round trip" in doc["settings"]["bottleneck_tunless"],
      "tunless's cells record the per-flow target in force (flow_rtt_pct) and the packets it let pass, and the report names it: %s"
      % [(r["metrics"].get("wan_aqm_flow_rtt_pct"), r["metrics"].get("flow_rtt_held")) for r in tl])
# Each statement carries its cell's numbers: the median over its runs, recomputed here.
def med(xs):
    xs = sorted(x for x in xs if x is not None)
    return None if not xs else xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
ws = doc["summary"].get("where_bits_went") or []
bad = []
for w in ws:
    c = w["cell"]
    rs = [r for r in nd if r["impl"] == c["impl"] and all(r["params"].get(k) == c[k] for k in ("queue", "rtt_ms", "cc", "ecn", "video"))]
    g, rd = med([r["metrics"]["tcp_goodput_mbit_s"] for r in rs]), med([r["metrics"]["ring_drops"] for r in rs])
    if not rs or "TCP %s of the" % bench.fmt_n(g) not in w["text"] or "ring drops %s" % bench.fmt_n(rd) not in w["text"] \
            or not (w["claims"]["cause_matches_numbers"] and w["claims"]["sender_cc_as_set"]):
        bad.append(w["text"][:120])
check(len(ws) == len({bench.nd_cell_key(r) for r in nd}) and not bad,
      "one statement per no-drop cell, with its median numbers and consistent claims (%d; not: %s)" % (len(ws), bad))
# The study's statement and the video-loss statements come from the cells' medians, one entry
# per cell (the smoke run has two endpoint settings at one path: a statement keyed by the path
# alone kept whichever cell came last).
cs = doc["summary"]["nodrop_cells"]
tv = doc["summary"].get("tunless_video_loss_percent") or {}
st = doc["summary"].get("tcp_goodput_high_rtt") or {}
pair = [(a, b) for a in cs if a["impl"] == "tunless" for b in cs if b["impl"] == "wireguard-go" and b["queue"] == 25
        and (a["rtt_ms"], a["cc"], a["ecn"]) == (b["rtt_ms"], b["cc"], b["ecn"]) == (st.get("rtt_ms"), st.get("cc"), st.get("ecn"))]
check(len(tv) == len([c for c in cs if c["impl"] == "tunless"]) and st.get("cc") == "cubic" and st.get("ecn") == 1 and pair and
      st["tunless_mbit_s"] == pair[0][0]["median"]["tcp_goodput_mbit_s"] and
      st["wireguard_go_q25_mbit_s"] == pair[0][1]["median"]["tcp_goodput_mbit_s"] and
      st["video_p99_ms"] == [pair[0][0]["median"]["video_delay_p99_ms"], pair[0][1]["median"]["video_delay_p99_ms"]],
      "the study's statement is the CUBIC + ECN cells' medians, and tunless's video loss one entry per cell: %s; %s"
      % (json.dumps(st), json.dumps(tv)))
bp = [r for r in recs if r["impl"] == "wireguard-go-bp"]
check(bp and all(r["status"] == "ok" or "IFF_BACKPRESSURE" in (r.get("reason") or "") for r in bp),
      "the kernel-TUN cell with IFF_BACKPRESSURE ran or is skipped with the reason: %s"
      % [(r["status"], r.get("reason")) for r in bp])
pngs = [f for f in os.listdir(out) if f.endswith(".png")]
check(len(pngs) >= 4 and all(open(os.path.join(out, f), "rb").read(8) == b"\x89PNG\r\n\x1a\n" for f in pngs),
      "%d PNG plots" % len(pngs))
md = open(os.path.join(out, "report.md")).read() if os.path.exists(os.path.join(out, "report.md")) else ""
ht = open(os.path.join(out, "report.html")).read() if os.path.exists(os.path.join(out, "report.html")) else ""
check(all(f in md and f in ht for f in pngs) and "<img" in ht, "report.md and report.html show every plot")
check("unaccounted" in md and "grade" in md.lower(), "the report states unaccounted loss and the latency grades")
check(all(w["text"] in md for w in ws) and "R share %" in md and "vs q500" in md and "IFF_BACKPRESSURE" in md,
      "the report has the no-drop statements, the cells' R share, the tunless vs wireguard-go table and the IFF_BACKPRESSURE cell")
check(all("WAN `%s`" % tp.get(m, {}).get("wan") in md for m in ("host", "gateway")) and
      all("%s mode: WAN `%s`" % (m, k[0]) in md for m, k in FWD.items()),
      "the report names tunless's port kinds")
# The gateway scenario's veths as a gateway's NICs are, for that scenario only: the lab's
# settings are back after it for the scenarios that share the lab (a kernel-TUN VPN's lab: no
# GRO, TX offload off on every veth, before and after).
sys.path.insert(0, os.path.join(sys.argv[4], "tests", "integration"))
from test_bench_smoke_veths import veths_bad
for impl in IMPLS:
    for mode in sorted({r["mode"] for r in recs if r["impl"] == impl and r["scenario"] == "gateway" and r["status"] == "ok"}):
        wan = mode.split("-")[1] if mode.startswith("fwd-") else "tun"
        f = os.path.join(out, "raw", "%s-%s-gateway-veths" % (impl, mode))
        try:
            before, during, after = (open(f + x + ".txt").read().splitlines() for x in ("-before", "", "-after"))
        except OSError as e:
            before, during, after = ["missing: %s" % e], [], []
        b = veths_bad(during, wan)
        a = [] if after == before else [("after", after), ("before", before)]
        a += veths_bad(before, "off") if wan == "tun" else []
        check(before and not b and not a, "%s %s: the veths as a gateway's NICs during the gateway scenario (%s), as before it after it (%s)"
              % (impl, mode, b or "ok", a or "ok"))
check(tsv and tsv in md and tsv in ht and "tunless fwd-af_xdp-af_xdp/wggo-ts (%s)" % tsv in md and "## Gateway forwarding" in md,
      "report.md and report.html name wggo-ts's version, the gateway table and its ratios")
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
py=$?
[ $rc -eq 0 ] && [ $py -eq 0 ] && [ $F -eq 0 ] || { KEEP=1; exit 1; }
