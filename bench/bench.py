#!/usr/bin/env python3
"""Records for bench/run.sh: each subcommand reads one cell's raw files and prints one JSON
record (one line); `assemble` makes results.json (schema in bench/README.md). Stdlib only.

  bench.py record --impl I --mode M --scenario S --params JSON --status skipped|error --message M
  bench.py udp-probe IPERF.json           "ok" if loss < 1 %, else "more <next offered bit/s>"
  bench.py throughput DIR --impl --mode --txq --test tcp|udp [--streams N --direction f|r | --size B]
  bench.py gateway DIR ...               the same, for the gateway scenario (client -> server)
  bench.py latency DIR --impl --mode --txq --rate MBIT
  bench.py overload DIR --impl --mode --txq --rate MBIT --x X
  bench.py nodrop DIR --impl --mode --queue Q|none --rtt MS --rate MBIT
  bench.py rebuild RECORDS.jsonl         recompute overload/nodrop records from their raw dirs
  bench.py assemble RECORDS.jsonl OUTDIR --profile P --command C --rate R ... --version impl=text
"""
import argparse
import glob
import json
import math
import os
import platform
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overload_stats as ost  # noqa: E402

SCHEMA = "tunless-bench/1"
LOSS_OK = 1.0  # % loss below which a UDP rate step counts as carried
UNLOCATED = ("info", "late")
GRADES = ((5, "A+"), (30, "A"), (60, "B"), (200, "C"), (400, "D"))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def clean(v):
    """No NaN/inf in the output: they become null."""
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v


def emit(rec):
    print(json.dumps(clean(rec)))


def base(a, scenario, params):
    return {"impl": a.impl, "mode": a.mode, "scenario": scenario, "params": params,
            "status": "ok", "metrics": {}, "samples": {}}


def grade(added_ms):
    if added_ms is None:
        return None
    for lim, g in GRADES:
        if added_ms < lim:
            return g
    return "F"


def rtts(path):
    try:
        return [float(x) for x in re.findall(r"time=([\d.]+) ms", open(path).read())]
    except OSError:
        return []


def quantile(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(p * len(s)))], 3)


def cpu(d, gbit):
    c = load(os.path.join(d, "cpu.json")) or {}
    if not c.get("wall_s"):
        return None, None
    pct = 100.0 * c["vpn_cpu_s"] / c["wall_s"]
    return round(pct, 1), (round(pct / gbit, 1) if gbit else None)


def cores(per):
    """CPU % per Gbit/s as cores per Gbit/s (100 % = one core)."""
    return round(per / 100, 3) if per is not None else None


def udp_result(path):
    """iperf3 UDP: packets sent/received, loss, received rate, seconds."""
    r = load(path)
    if not r or "error" in r or "end" not in r:
        return None
    st = ost.iperf_stats(path, "udp")
    secs = r["end"].get("sum", r["end"].get("sum_received", {})).get("seconds") or 1
    st["seconds"] = secs
    st["received_pps"] = round(st["received"] / secs, 1)
    return st


def cmd_udp_probe(argv):
    st = udp_result(argv[0])
    if st is None or not st["sent"]:
        print("fail 0")
    elif (st["loss_percent"] or 0) < LOSS_OK:
        print("ok")
    else:
        print("more %d" % int(st["received_mbit_s"] * 1e6 * 0.9))


def cmd_throughput(a):
    """Scenario throughput (host to host) or gateway (client -> server): the same record."""
    if a.test == "tcp":
        rec = base(a, a.cmd, {"test": "tcp", "streams": a.streams,
                                     "direction": "reverse" if a.direction == "r" else "forward",
                                     "txqueuelen": a.txq})
        r = load(os.path.join(a.dir, "iperf.json"))
        if not r or "error" in r or "end" not in r:
            rec.update(status="error", error=(r or {}).get("error", "iperf3 gave no JSON"))
            return emit(rec)
        e = r["end"]
        g = e["sum_received"]["bits_per_second"] / 1e9
        pct, per = cpu(a.dir, g)
        rec["metrics"] = {"gbit_s": round(g, 3), "retransmits": e["sum_sent"].get("retransmits"),
                          "vpn_cpu_percent": pct, "cpu_percent_per_gbit_s": per, "cores_per_gbit_s": cores(per)}
        rec["samples"]["interval_gbit_s"] = [round(i["sum"]["bits_per_second"] / 1e9, 3)
                                             for i in r.get("intervals", [])]
        return emit(rec)
    rec = base(a, a.cmd, {"test": "udp", "payload": a.size, "txqueuelen": a.txq})
    probes, best = [], None
    for n in sorted(os.listdir(a.dir)) if os.path.isdir(a.dir) else []:
        st = udp_result(os.path.join(a.dir, n, "iperf.json"))
        if st is None:
            continue
        pr = {"step": n, "sent": st["sent"], "received": st["received"], "loss_percent": st["loss_percent"],
              "offered_mbit_s": st["sent_mbit_s"], "received_pps": st["received_pps"]}
        g = st["received_pps"] * a.size * 8 / 1e9
        pr["cpu_percent"], pr["cpu_percent_per_gbit_s"] = cpu(os.path.join(a.dir, n), g)
        probes.append(pr)
        if (st["loss_percent"] or 0) < LOSS_OK and (best is None or pr["received_pps"] > best["received_pps"]):
            best = pr
    rec["samples"]["rate_steps"] = probes
    if not probes:
        rec.update(status="error", error="no iperf3 UDP result")
    elif best is None:
        low = min(probes, key=lambda p: p["loss_percent"] or 0)
        rec["metrics"] = {"pps": None, "gbit_s": None, "loss_percent": None, "vpn_cpu_percent": None,
                          "cpu_percent_per_gbit_s": None, "cores_per_gbit_s": None,
                          "lowest_loss_percent": low["loss_percent"],
                          "note": "no rate step below 1 % loss"}
    else:
        g = best["received_pps"] * a.size * 8 / 1e9
        rec["metrics"] = {"pps": best["received_pps"], "gbit_s": round(g, 4),
                          "loss_percent": best["loss_percent"], "vpn_cpu_percent": best["cpu_percent"],
                          "cpu_percent_per_gbit_s": best["cpu_percent_per_gbit_s"],
                          "cores_per_gbit_s": cores(best["cpu_percent_per_gbit_s"])}
    emit(rec)


LOC = re.compile(r"^(tun ring|tun rx|link|qdisc|socket|ip|info: sndbuf) \((\S+) (\S+)")
FORWARD_LINKS = {("client", "eth0", "tx"), ("gwa", "lan-a", "rx"), ("gwa", "wan-a", "tx"),
                 ("wan", "p-gwa", "rx"), ("wan", "p-gwb", "tx"), ("gwb", "wan-b", "rx"),
                 ("gwb", "lan-b", "tx"), ("server", "eth0", "rx")}


def forward(key):
    """Is this drop counter on the client -> server path? (TUN tx on gwa = into the tunnel;
    TUN rx on gwb = out of it; sockets receiving on gwb and server; the delay line a_to_b.)
    tunless's drop reasons carry no direction: all are counted."""
    if key.startswith("delay line"):
        return "a_to_b" in key
    if key.startswith("tunless"):
        return True
    m = LOC.match(key)
    if not m:
        return True
    kind, ns, dev = m.groups()
    if kind == "tun ring":
        return ns == "gwa"
    if kind == "tun rx":
        return ns == "gwb"
    if kind == "link":
        return (ns, dev, "tx" if "tx_dropped" in key else "rx") in FORWARD_LINKS
    if kind == "qdisc":
        return (ns, dev) in (("client", "eth0"), ("gwa", "wan-a"), ("gwa", "wg0"), ("gwa", "tun0"),
                             ("wan", "p-gwb"), ("gwb", "lan-b"))
    if kind == "socket":
        return ns in ("gwb", "server")
    if kind == "ip":  # too big for the next hop: the reverse path carries ACKs only
        return ns in ("gwa", "gwb")
    return ns == "gwa"  # info: sndbuf


def located_loss(d, extra=None):
    """Drops on the forward path: {location: n}, {category: n}, total located, and the drops
    seen on the reverse path (not part of the total)."""
    before, after = load(os.path.join(d, "before.json")), load(os.path.join(d, "after.json"))
    if not before or not after:
        return None, None, None, None
    raw = ost.delta_loss(before, after)
    for k, v in (extra or {}).items():
        if v:
            raw[k] = v
    loc, rev = {}, {}
    # A parent qdisc (tbf) counts its child's (pfifo) drops again: one per device, the largest.
    qmax = {}
    for k, v in raw.items():
        m = LOC.match(k)
        if m and m.group(1) == "qdisc":
            key = (m.group(2), m.group(3))
            if v > qmax.get(key, (None, -1))[1]:
                qmax[key] = (k, v)
    keep_q = {kv[0] for kv in qmax.values()}
    xsk = any(k.startswith("tunless") and "xsk" in k for k in raw)
    for k, v in raw.items():
        m = LOC.match(k)
        if m and m.group(1) == "qdisc" and k not in keep_q:
            continue
        # tunless counts the kernel's drops at its AF_XDP rings itself (xsk_*): the veth's
        # rx_dropped on its ports is the same packets.
        if xsk and m and m.group(1) == "link" and "rx_dropped" in k and \
                (m.group(2), m.group(3)) in (("gwa", "lan-a"), ("gwa", "wan-a"), ("gwb", "lan-b"), ("gwb", "wan-b")):
            continue
        if k.startswith("info: sndbuf"):
            # SndbufErrors = sends the qdisc dropped (counted there) + sends refused for a full
            # socket buffer, which the VPN drops or retries: the latter are counted here.
            q = sum(v2 for (ns, _), (_, v2) in qmax.items() if ns == m.group(2))
            v = max(0, v - q)
            k = "socket send refused (%s UdpSndbufErrors - qdisc drops)" % m.group(2)
            if not v:
                continue
        (loc if forward(k) else rev)[k] = v
    cats = {}
    for k, v in loc.items():
        c = "delay_line" if k.startswith("delay line") else "send_refused" if k.startswith("socket send refused") \
            else ost.category(k)
        cats[c] = cats.get(c, 0) + v
    located = sum(v for k, v in cats.items() if k not in UNLOCATED)
    return loc, cats, located, rev


def link_delta(d, ns_suffix, ifname, field):
    before, after = load(os.path.join(d, "before.json")), load(os.path.join(d, "after.json"))
    if not before or not after:
        return None
    for ns, a in after["ns"].items():
        if ns.endswith("-" + ns_suffix) and ifname in a["links"]:
            b = before["ns"].get(ns, {}).get("links", {}).get(ifname, {})
            return a["links"][ifname][field] - b.get(field, 0)
    return None


def cmd_latency(a):
    rec = base(a, "latency", {"rate_mbit_s": a.rate, "flows": 4, "txqueuelen": a.txq})
    idle, ld = rtts(os.path.join(a.dir, "ping-idle.txt")), rtts(os.path.join(a.dir, "ping-load.txt"))
    t = ost.iperf_stats(os.path.join(a.dir, "iperf.json"), "tcp")
    if not ld:
        rec.update(status="error", error="no ping reply under load (%s)" % t.get("error", "iperf3 ran"))
    pl = ost.ping_stats(os.path.join(a.dir, "ping-load.txt"))
    i50, l50, l99 = quantile(idle, 0.5), quantile(ld, 0.5), quantile(ld, 0.99)
    add50 = round(l50 - i50, 3) if l50 is not None and i50 is not None else None
    add99 = round(l99 - i50, 3) if l99 is not None and i50 is not None else None
    lost = (pl.get("sent") or 0) - (pl.get("received") or 0)
    rec["metrics"] = {"idle_p50_ms": i50, "load_p50_ms": l50, "load_p99_ms": l99,
                      "added_p50_ms": add50, "added_p99_ms": add99, "grade": grade(add50),
                      "grade_p99": grade(add99), "ping_lost": lost,
                      "tcp_goodput_mbit_s": t.get("goodput_mbit_s"), "tcp_retransmits": t.get("retransmits")}
    rec["samples"] = {"rtt_idle_ms": idle, "rtt_load_ms": ld}
    emit(rec)


def cmd_overload(a):
    rec = base(a, "overload", {"offered_x": a.x, "rate_mbit_s": a.rate, "payload": 1200, "txqueuelen": a.txq})
    st = udp_result(os.path.join(a.dir, "iperf.json"))
    loc, cats, located, rev = located_loss(a.dir) if os.path.exists(os.path.join(a.dir, "after.json")) else (None, None, None, None)
    if st is None:
        rec.update(status="error", error="no iperf3 UDP result")
        return emit(rec)
    # Loss counted on the wire: client eth0 TX -> server eth0 RX, after the queues drained
    # (what arrived after iperf3's server stopped was queued, not lost). Forwarded = what the
    # iperf3 server received during the test, over the test's seconds.
    sent, recv = link_delta(a.dir, "client", "eth0", "tx_packets"), link_delta(a.dir, "server", "eth0", "rx_packets")
    if sent is None or recv is None:
        sent, recv = st["sent"], st["received"]
    lost = sent - recv
    wire, where, _ = shaper_wire(a.dir, a.impl)
    secs = busy_seconds(a.dir, st.get("seconds"))
    rec["metrics"] = {"shaper_share_of_r": round(wire * 8 / (a.rate * 1e6 * secs), 4) if wire is not None and secs and a.rate else None,
                      "busy_seconds": secs,
                      "bottleneck_counted_by": where,
                      "offered_mbit_s": st["sent_mbit_s"], "sent": sent, "received": recv,
                      "forwarded_pps": st["received_pps"], "forwarded_mbit_s": st["received_mbit_s"],
                      "loss_percent": round(100.0 * lost / sent, 3) if sent else None, "lost": lost,
                      "located": located,
                      "unaccounted": (lost - located) if located is not None else None,
                      "loss_by_place": {k: v for k, v in (cats or {}).items() if k not in UNLOCATED}}
    rec["samples"] = {"loss_locations": loc, "reverse_path_drops": rev}
    emit(rec)


WIRE_OVERHEAD = 24  # FCS, preamble, inter-frame gap: what tunless's shaper and the tbf's stab add
TUNNEL_OUTER = 32 + 28 + 14  # WireGuard data header and tag, outer UDP/IPv4, Ethernet
TUNNEL_MTU = 1420


def video_wire_bytes(payload):
    """Wire bytes of one video datagram through the tunnel: the inner IPv4/UDP packet padded to
    16 bytes (at most to the MTU), WireGuard's 32, the outer UDP/IP and Ethernet, the overhead."""
    inner = payload + 28
    return min(-(-inner // 16) * 16, TUNNEL_MTU) + TUNNEL_OUTER + WIRE_OVERHEAD


def tcp_wire_bytes(mss):
    """Wire bytes of one full TCP segment (TCP/IP headers with timestamps: 52)."""
    return mss + 52 + TUNNEL_OUTER + WIRE_OVERHEAD


def shaper_wire(d, impl):
    """What the bottleneck put on gwa's WAN between the snapshots: (wire bytes, where counted),
    and tunless's WAN queue counters (CoDel drops, overlimit drops, CE marks, L4S marks, shaper
    time lost) summed over its workers. tunless: its WAN queues' tx_bytes + 24 x tx_packets (the
    shaper's own cost); the TUN VPNs: the tbf on gwa's wan-a (its stab adds the 24)."""
    before, after = load(os.path.join(d, "before.json")), load(os.path.join(d, "after.json"))
    if not before or not after:
        return None, None, {}
    if impl == "tunless":
        q = {}
        names = sorted(after.get("tunless") or {})
        if not names:
            return None, None, {}
        n = names[0]  # gwa's instance (tb<pid><run>a): the shaped WAN
        a, b = after["tunless"][n].get("queues") or {}, (before["tunless"].get(n) or {}).get("queues") or {}
        for qn, v in a.items():
            if not qn.startswith("wan/") or not v:
                continue
            o = b.get(qn) or {}
            for k in ("tx_bytes", "tx_packets", "drops_aqm_codel", "drops_aqm_overlimit", "ecn_marks", "l4s_marks", "rtt_held", "shaper_lost_ns"):
                q[k] = q.get(k, 0) + (v.get(k) or 0) - (o.get(k) or 0)
        if "tx_bytes" not in q:
            return None, None, q
        return q["tx_bytes"] + WIRE_OVERHEAD * q["tx_packets"], "tunless %s WAN queues tx_bytes + 24 x tx_packets" % n, q
    for ns, a in after["ns"].items():
        if not ns.endswith("-gwa"):
            continue
        for key, v in a["qdiscs"].items():
            if key.startswith("wan-a tbf") and "bytes" in v:
                o = before["ns"].get(ns, {}).get("qdiscs", {}).get(key, {})
                return v["bytes"] - o.get("bytes", 0), "tbf on gwa wan-a (%s) bytes" % key, {}
    return None, None, {}


def busy_seconds(d, fallback):
    """The time over which an overload cell's bottleneck bytes are counted: from the test's start
    to the last packet's arrival after it (drain.json, cpu.json: the full queue drains after the
    test); else fallback. (A no-drop cell counts over iperf3's TCP seconds: its TCP flow ends with
    the test and leaves no queue worth its drain.)"""
    c, dr = load(os.path.join(d, "cpu.json")) or {}, load(os.path.join(d, "drain.json")) or {}
    if c.get("start") and dr.get("last_rx") and dr["last_rx"] > c["start"]:
        return round(dr["last_rx"] - c["start"], 3)
    return fallback


def aqm_in_force(recs):
    """What tunless's no-drop cells ran: the WAN AQM settings asked (BENCH_TUNLESS_WAN_AQM, else the
    defaults) and the target / interval its queues reported in force."""
    laws = sorted({(r["metrics"].get("wan_aqm_target_us"), r["metrics"].get("wan_aqm_interval_us"),
                    r["metrics"].get("wan_aqm_flow_rtt_pct") or 0)
                   for r in recs if r.get("impl") == "tunless" and r.get("scenario") == "nodrop" and r.get("status") == "ok"
                   and r["metrics"].get("wan_aqm_target_us")})
    asked = os.environ.get("BENCH_TUNLESS_WAN_AQM")
    told = "AQM {%s}" % asked if asked else "AQM defaults"
    if laws:
        told += " (in force on its WAN queues: %s)" % ", ".join(
            "target %g ms, interval %g ms, %s" % (t / 1000, i / 1000, "a TCP flow's target at least %d %% of its round trip" % p
                                                  if p else "no per-flow target")
            for t, i, p in laws)
    return told


def cmd_nodrop(a):
    q = None if a.queue == "none" else int(a.queue)
    rec = base(a, "nodrop", {"queue": q, "rtt_ms": a.rtt, "rate_mbit_s": a.rate, "cc": a.cc, "ecn": a.ecn,
                             "video": a.video, "run": a.run})
    t = ost.iperf_stats(os.path.join(a.dir, "iperf.json"), "tcp")
    vs, vr = load(os.path.join(a.dir, "video-sent.json")), load(os.path.join(a.dir, "video-recv.json"))
    dl = load(os.path.join(a.dir, "delayline.json")) or {}
    extra = {}
    for k in ("a_to_b", "b_to_a"):
        for c in ("queue_full", "too_big", "send_errors", "socket_drops", "held_at_exit"):
            extra["delay line %s %s" % (k, c)] = (dl.get(k) or {}).get(c, 0)
    loc, cats, located, rev = located_loss(a.dir, extra) if os.path.exists(os.path.join(a.dir, "after.json")) else (None, None, None, None)
    sent, recv = link_delta(a.dir, "client", "eth0", "tx_packets"), link_delta(a.dir, "server", "eth0", "rx_packets")
    if "error" in t or vs is None:
        rec.update(status="error", error=t.get("error") or "video sender gave no result")
    vsent, vrecv = (vs or {}).get("sent"), (vr or {"received": 0}).get("received")
    m = {"tcp_goodput_mbit_s": t.get("goodput_mbit_s"), "tcp_retransmits": t.get("retransmits"),
         "video_sent": vsent, "video_received": vrecv,
         "video_loss_percent": round(100.0 * (vsent - vrecv) / vsent, 3) if vsent else None,
         "video_delay_p99_ms": (vr or {}).get("delay_p99_ms"),
         "packets_sent": sent, "packets_received": recv, "lost": None, "located": located,
         "unaccounted": None, "loss_by_place": cats,
         "delay_line_forwarded": sum((dl.get(k) or {}).get("forwarded", 0) for k in ("a_to_b", "b_to_a")) if dl else None}
    if sent is not None and recv is not None and located is not None:
        m["lost"] = sent - recv
        m["unaccounted"] = sent - recv - located
    rec["metrics"] = m
    m["reverse_path_drops"] = sum(rev.values()) if rev is not None else None
    # Where the bits went: the bottleneck's delivered share of R over the TCP test's seconds, the
    # capacity the video left to TCP (goodput terms), TCP's share of it, and the drops by kind.
    ip = load(os.path.join(a.dir, "iperf.json")) or {}
    secs = ((ip.get("end") or {}).get("sum_received") or {}).get("seconds")
    mss = ((ip.get("start") or {}).get("tcp_mss_default")) or (TUNNEL_MTU - 52)
    wire, where, qc = shaper_wire(a.dir, a.impl)
    m["bottleneck_wire_bytes"] = wire
    m["bottleneck_counted_by"] = where
    busy = secs
    m["busy_seconds"] = busy
    m["shaper_share_of_r"] = round(wire * 8 / (a.rate * 1e6 * busy), 4) if wire is not None and busy and a.rate else None
    # the video's delivered wire bytes over the TCP test's seconds (the video stops a second early)
    vwire = vrecv * video_wire_bytes((vs or {}).get("size", 1200)) * 8 / secs / 1e6 if secs and vrecv is not None else None
    m["video_wire_mbit_s"] = round(vwire, 3) if vwire is not None else None
    left = (a.rate - vwire) * mss / tcp_wire_bytes(mss) if vwire is not None and a.rate else None
    m["capacity_left_to_tcp_mbit_s"] = round(left, 2) if left is not None else None
    g = m["tcp_goodput_mbit_s"]
    m["tcp_share_of_left"] = round(g / left, 4) if g is not None and left else None
    m["tcp_mss"] = mss
    m["tcp_seconds"] = secs
    snd = ((ip.get("end") or {}).get("streams") or [{}])[0].get("sender") or {}
    m["tcp_rtt_mean_ms"] = round(snd["mean_rtt"] / 1000, 2) if snd.get("mean_rtt") else None
    m["tcp_rtt_min_ms"] = round(snd["min_rtt"] / 1000, 2) if snd.get("min_rtt") else None
    m["wan_sojourn_p50_ms"] = m["wan_sojourn_p99_ms"] = None
    m["wan_aqm_target_us"] = m["wan_aqm_interval_us"] = m["wan_aqm_flow_rtt_pct"] = None
    if a.impl == "tunless":  # the WAN queues' sojourn of the packets delivered during the cell
        b4, af = load(os.path.join(a.dir, "before.json")) or {}, load(os.path.join(a.dir, "after.json")) or {}
        for n in sorted(af.get("tunless") or {})[:1]:
            for qn, v in ((af["tunless"][n].get("queues")) or {}).items():
                if qn.startswith("wan/") and v:
                    # the law in force on the WAN queue (the daemon's own telemetry, not the config asked)
                    m["wan_aqm_target_us"] = m["wan_aqm_target_us"] or v.get("aqm_target_us")
                    m["wan_aqm_interval_us"] = m["wan_aqm_interval_us"] or v.get("aqm_interval_us")
                    m["wan_aqm_flow_rtt_pct"] = m["wan_aqm_flow_rtt_pct"] or v.get("aqm_flow_rtt_pct")
                    dq = ost.queue_delta((((b4.get("tunless") or {}).get(n) or {}).get("queues") or {}).get(qn) or {}, v)
                    for k, kk in (("sojourn_p50_below_ns", "wan_sojourn_p50_ms"), ("sojourn_p99_below_ns", "wan_sojourn_p99_ms")):
                        if isinstance(dq.get(k), int):
                            m[kk] = max(m[kk] or 0, dq[k] / 1e6)
    c = cats or {}
    m["queue_drops_codel"] = qc.get("drops_aqm_codel") if a.impl == "tunless" else None
    m["queue_drops_overlimit"] = qc.get("drops_aqm_overlimit") if a.impl == "tunless" else None
    m["ecn_marks"] = qc.get("ecn_marks") if a.impl == "tunless" else None
    m["flow_rtt_held"] = qc.get("rtt_held") if a.impl == "tunless" else None
    m["shaper_lost_ms"] = round(qc["shaper_lost_ns"] / 1e6, 3) if "shaper_lost_ns" in qc else None
    m["ring_drops"] = c.get("tun_ring", 0) + (c.get("tunless_other", 0) if a.impl == "tunless" else 0)
    m["tail_drops"] = c.get("qdisc", 0)
    ep = load(os.path.join(a.dir, "endpoints.json")) or {}
    snd = (ip.get("end") or {}).get("sender_tcp_congestion")
    m["endpoints"] = {"client": ep.get("client"), "server": ep.get("server"), "host": ep.get("host"),
                      "iperf3_sender_cc": snd}
    rec["samples"] = {"loss_locations": loc, "reverse_path_drops": rev,
                      "video_delay_p50_ms": (vr or {}).get("delay_p50_ms")}
    emit(rec)


def cmd_record(a):
    rec = {"impl": a.impl, "mode": a.mode, "scenario": a.scenario, "params": json.loads(a.params or "{}"),
           "status": a.status, "metrics": {}, "samples": {}}
    rec["reason" if a.status == "skipped" else "error"] = a.message
    emit(rec)


# ---- results.json ------------------------------------------------------------------------------
def pick(recs, impl, scenario, **params):
    out = []
    for r in recs:
        if r["impl"] != impl or r["scenario"] != scenario or r["status"] != "ok":
            continue
        if all(r["params"].get(k) == v for k, v in params.items()):
            out.append(r)
    return out


def ratio(x, y):
    return round(x / y, 3) if x is not None and y else None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


ND_KEYS = ("tcp_seconds", "busy_seconds", "tcp_goodput_mbit_s", "tcp_retransmits", "tcp_rtt_mean_ms", "wan_sojourn_p99_ms", "video_loss_percent", "video_delay_p99_ms", "shaper_share_of_r",
           "capacity_left_to_tcp_mbit_s", "tcp_share_of_left", "queue_drops_codel", "queue_drops_overlimit",
           "ecn_marks", "ring_drops", "tail_drops", "lost", "located", "unaccounted", "shaper_lost_ms")


def nd_cell_key(r):
    p = r["params"]
    return (r["impl"], p.get("queue"), p["rtt_ms"], p.get("cc"), p.get("ecn"), p.get("video"), p.get("rate_mbit_s"))


def nd_cells(recs):
    """The no-drop cells with the median of each metric over their runs (--full: 3 runs)."""
    groups = {}
    for r in recs:
        if r["scenario"] == "nodrop" and r["status"] == "ok":
            groups.setdefault(nd_cell_key(r), []).append(r)
    out = []
    for k, rs in groups.items():
        impl, q, rtt, cc, ecn, video, rate = k
        med = {m: median([r["metrics"].get(m) for r in rs]) for m in ND_KEYS}
        med["video_delay_p50_ms"] = median([(r.get("samples") or {}).get("video_delay_p50_ms") for r in rs])
        out.append({"impl": impl, "queue": q, "rtt_ms": rtt, "cc": cc, "ecn": ecn, "video": video, "rate_mbit_s": rate,
                    "runs": len(rs), "median": med,
                    "endpoints": rs[0]["metrics"].get("endpoints")})
    return out


def pct(x):
    return None if x is None else round(100 * x, 1)


def where_bits_went(c):
    """One statement per no-drop cell, from its medians, and the claims it makes with whether
    each holds for those numbers (the report prints the text; the smoke test re-checks)."""
    m = c["median"]
    share, fill, left, g = m["shaper_share_of_r"], m["tcp_share_of_left"], m["capacity_left_to_tcp_mbit_s"], m["tcp_goodput_mbit_s"]
    congestion = sum(m[k] or 0 for k in ("queue_drops_codel", "queue_drops_overlimit", "ring_drops", "tail_drops"))
    # the shaper explains the shortfall when the sending time it gave up while backlogged is at
    # least half of the time R went unused
    lost_ms, secs = m["shaper_lost_ms"], m.get("busy_seconds") or m["tcp_seconds"]
    unused_ms = (1 - share) * secs * 1000 if share is not None and secs else None
    if share is not None and share < 0.97 and c["impl"] == "tunless" and lost_ms and unused_ms and lost_ms >= unused_ms / 2:
        cause = "shaper"
        why = ("the bottleneck delivered only %s %% of R: the shaper gave up %s ms of sending time while backlogged, "
               "of %s ms that R went unused" % (fmt_n(pct(share)), fmt_n(lost_ms), fmt_n(round(unused_ms))))
    elif (share is not None and share < 0.97) or (fill is not None and fill < 0.9):
        cause = "tcp"
        why = ("TCP filled %s %% of what the video left and the bottleneck delivered %s %% of R: TCP did not keep the "
               "queue backlogged (%d drops, %s CE marks%s)" % (fmt_n(pct(fill)), fmt_n(pct(share)), congestion, m["ecn_marks"] or 0,
                                        "; the shaper gave up %s ms" % fmt_n(lost_ms) if lost_ms else ""))
    else:
        cause = "none"
        why = "TCP filled what the video left (%s %%)" % pct(fill)
    who = "%s%s" % (c["impl"], "" if c["queue"] is None else " txqueuelen %s" % c["queue"])
    text = ("%s, +%d ms, %s ECN %s (%d run(s), medians): TCP %s of the %s Mbit/s the video left (%s %%); bottleneck "
            "delivered %s %% of R; queue drops CoDel %s, overlimit %s, CE marks %s; ring drops %s, tail drops %s; video "
            "loss %s %%, p99 %s ms; unaccounted %s. Where the shortfall went: %s."
            % (who, c["rtt_ms"], c["cc"], "on" if c["ecn"] else "off", c["runs"], fmt_n(g), fmt_n(left), fmt_n(pct(fill)),
               fmt_n(pct(share)), fmt_n(m["queue_drops_codel"]), fmt_n(m["queue_drops_overlimit"]), fmt_n(m["ecn_marks"]),
               fmt_n(m["ring_drops"]), fmt_n(m["tail_drops"]), fmt_n(m["video_loss_percent"]), fmt_n(m["video_delay_p99_ms"]),
               fmt_n(m["unaccounted"]), why))
    claims = {
        "cause_matches_numbers": (cause != "shaper" or (share < 0.97 and lost_ms >= unused_ms / 2)) and
        (cause != "tcp" or (share is not None and share < 0.97) or (fill is not None and fill < 0.9)) and
        (cause != "none" or ((share is None or share >= 0.97) and (fill is None or fill >= 0.9))),
        "tcp_within_left": g is None or left is None or g <= left * 1.1,
        "sender_cc_as_set": c["cc"] is None or (c.get("endpoints") or {}).get("iperf3_sender_cc") == c["cc"],
        "loss_located": m["unaccounted"] is not None and m["unaccounted"] == 0 if c["runs"] == 1 else m["unaccounted"] is not None,
    }
    return {"cell": {k: c[k] for k in ("impl", "queue", "rtt_ms", "cc", "ecn", "video")}, "cause": cause, "text": text,
            "claims": claims}


def fmt_n(v):
    if v is None:
        return "n/a"
    return ("%.2f" % v).rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def show_ratios(cells):
    """The issue's Show: tunless vs wireguard-go txqueuelen 500 and 25 in the same run, per path and endpoints."""
    out = {}
    for c in cells:
        if c["impl"] != "tunless":
            continue
        row = {"tunless_tcp_mbit_s": c["median"]["tcp_goodput_mbit_s"], "tunless_video_loss_percent": c["median"]["video_loss_percent"],
               "tunless_video_p99_ms": c["median"]["video_delay_p99_ms"], "path_one_way_ms": c["rtt_ms"] / 2}
        for q in (500, 25):
            o = [x for x in cells if x["impl"] == "wireguard-go" and x["queue"] == q and
                 all(x[k] == c[k] for k in ("rtt_ms", "cc", "ecn", "video", "rate_mbit_s"))]
            if o:
                row["wireguard_go_q%d_tcp_mbit_s" % q] = o[0]["median"]["tcp_goodput_mbit_s"]
                row["wireguard_go_q%d_video_loss_percent" % q] = o[0]["median"]["video_loss_percent"]
                row["wireguard_go_q%d_video_p99_ms" % q] = o[0]["median"]["video_delay_p99_ms"]
                row["tcp_ratio_q%d" % q] = ratio(c["median"]["tcp_goodput_mbit_s"], o[0]["median"]["tcp_goodput_mbit_s"])
        out["+%d ms %s ECN %s %s video" % (c["rtt_ms"], c["cc"], "on" if c["ecn"] else "off", c["video"])] = row
    return out


def cell_name(c):
    return "+%d ms %s ECN %s" % (c["rtt_ms"], c["cc"], "on" if c["ecn"] else "off")


def study_cell(cells):
    """The study's comparison, from the cells' medians: tunless against wireguard-go with its
    25-packet TUN queue on the longest path, with the study's endpoints (CUBIC with ECN) where
    the run has them, else the first endpoints both ran."""
    pairs = [(a, b) for a in cells if a["impl"] == "tunless"
             for b in cells if b["impl"] == "wireguard-go" and b["queue"] == 25 and
             all(a[k] == b[k] for k in ("rtt_ms", "cc", "ecn", "video", "rate_mbit_s"))]
    if not pairs:
        return None
    hi = max(a["rtt_ms"] for a, _ in pairs)
    pairs = [p for p in pairs if p[0]["rtt_ms"] == hi]
    a, b = next((p for p in pairs if p[0]["cc"] == "cubic" and p[0]["ecn"]), pairs[0])
    ga, gb = a["median"]["tcp_goodput_mbit_s"], b["median"]["tcp_goodput_mbit_s"]
    return {"rtt_ms": hi, "cc": a["cc"], "ecn": a["ecn"], "runs": [a["runs"], b["runs"]],
            "tunless_mbit_s": ga, "wireguard_go_q25_mbit_s": gb, "ratio": ratio(ga, gb),
            "gain_percent": round(100 * (ga / gb - 1), 1) if ga and gb else None, "study_nodrop_gain_percent": 36,
            "video_p50_ms": [a["median"].get("video_delay_p50_ms"), b["median"].get("video_delay_p50_ms")],
            "video_p99_ms": [a["median"]["video_delay_p99_ms"], b["median"]["video_delay_p99_ms"]]}


def summarize(recs, rate):
    s = {}
    cells = nd_cells(recs)
    s["nodrop_cells"] = cells
    s["where_bits_went"] = [where_bits_went(c) for c in cells]
    s["nodrop_show"] = show_ratios(cells)
    tl = pick(recs, "tunless", "nodrop")
    if tl:
        un = [r["metrics"]["unaccounted"] for r in tl]
        s["tunless_unaccounted"] = {"cells": len(tl), "max": max((u for u in un if u is not None), default=None),
                                    "all_zero": all(u == 0 for u in un)}
        s["tunless_video_loss_percent"] = {cell_name(c): c["median"]["video_loss_percent"] for c in cells
                                           if c["impl"] == "tunless"}
    un = {}
    for r in recs:
        if r["scenario"] in ("nodrop", "overload") and r["status"] == "ok":
            u = un.setdefault(r["impl"], {"cells": 0, "max_abs": 0, "all_zero": True})
            v = r["metrics"].get("unaccounted")
            u["cells"] += 1
            u["all_zero"] = u["all_zero"] and v == 0
            u["max_abs"] = max(u["max_abs"], abs(v)) if v is not None else u["max_abs"]
    s["unaccounted_by_impl"] = un
    places = {}
    for r in tl:
        for k, v in (r["metrics"].get("loss_by_place") or {}).items():
            places[k] = places.get(k, 0) + v
    for r in tl:
        for k, v in (r["samples"].get("loss_locations") or {}).items():
            if k.startswith("tunless"):
                places["reason " + k.rsplit(" ", 1)[-1]] = places.get("reason " + k.rsplit(" ", 1)[-1], 0) + v
    s["tunless_nodrop_loss_places"] = places
    s["video_loss_percent_by_queue"] = {}
    for c in cells:
        s["video_loss_percent_by_queue"].setdefault("%s q%s" % (c["impl"], "none" if c["queue"] is None else c["queue"]),
                                                   {})[cell_name(c)] = c["median"]["video_loss_percent"]
    s["tcp_goodput_high_rtt"] = study_cell(cells)
    grades = {}
    for r in recs:
        if r["scenario"] == "latency" and r["status"] == "ok":
            k = r["impl"] + ("" if r["params"].get("txqueuelen") in (None, 500) else " txq%s" % r["params"]["txqueuelen"])
            grades[k] = {"grade": r["metrics"]["grade"], "added_p50_ms": r["metrics"]["added_p50_ms"],
                         "added_p99_ms": r["metrics"]["added_p99_ms"], "grade_p99": r["metrics"]["grade_p99"]}
    s["latency_grades"] = grades
    s["throughput_ratios"] = throughput_ratios(recs, "throughput")
    s["gateway_ratios"] = throughput_ratios(recs, "gateway")
    return s


OTHERS = ("wggo-ts", "wireguard-go", "boringtun", "openvpn", "kernel-wg")


def throughput_ratios(recs, scenario):
    """{test: {"tunless/<impl>": ratio}} of one run's records (host mode: one tunless mode), or
    for the gateway scenario {test: {"tunless <mode>/<impl>": ratio}}, one per pair of port kinds."""
    tp = {}
    for impl in OTHERS:
        for r in pick(recs, "tunless", scenario):
            p = dict(r["params"])
            p.pop("txqueuelen", None)
            o = [x for x in pick(recs, impl, scenario, txqueuelen=500, **p)]
            if o:
                label = "%s %s" % (p["test"], "%s stream(s) %s" % (p["streams"], p["direction"]) if p["test"] == "tcp" else "%d B" % p["payload"])
                who = "tunless" if scenario == "throughput" else "tunless " + r["mode"]
                tp.setdefault(label, {})[who + "/" + impl] = ratio(r["metrics"].get("gbit_s"), o[0]["metrics"].get("gbit_s"))
    return tp


PORT_LINE = re.compile(r"^  (wan|lan): \{(.*)\}\s*$")


def tunless_ports(outdir):
    """The port kinds of the tunless configs a run wrote (DIR/raw/tunless-<mode>/tunless-a.yaml):
    {mode: {"wan": kind, "lan": kind, "config": path}}; modes host, gateway and the gateway
    scenario's fwd-<wan>-<lan>."""
    res = {}
    found = sorted(os.path.basename(os.path.dirname(f))[len("tunless-"):]
                   for f in glob.glob(os.path.join(outdir, "raw", "tunless-*", "tunless-a.yaml")))
    for mode in [m for m in ("host", "gateway") if m in found] + [m for m in found if m not in ("host", "gateway")]:
        rel = os.path.join("raw", "tunless-" + mode, "tunless-a.yaml")
        try:
            lines = open(os.path.join(outdir, rel)).read().splitlines()
        except OSError:
            continue
        ent = {"config": rel}
        for ln in lines:
            m = PORT_LINE.match(ln)
            if m:
                d = re.search(r"driver: ([a-z_]+)", m.group(2))
                ent[m.group(1)] = d.group(1) if d else None
                sh = re.search(r"shaper: \{rate_bps: (\d+)(?:, burst_bytes: (\d+))?\}", m.group(2))
                if sh:
                    ent[m.group(1) + "_shaper_bps"] = int(sh.group(1))
                    if sh.group(2):
                        ent[m.group(1) + "_shaper_burst_bytes"] = int(sh.group(2))
        res[mode] = ent
    return res


def cmd_assemble(a):
    recs = []
    for line in open(a.records):
        if line.strip():
            recs.append(json.loads(line))
    versions = dict(v.split("=", 1) for v in a.version)
    prev = load(os.path.join(a.outdir, "results.json")) if a.append else None
    ports = tunless_ports(a.outdir)
    if prev:  # an earlier run into the same directory (run.sh --append): keep what it knew
        versions = dict(prev.get("versions", {}), **versions)
        ports = dict(prev.get("settings", {}).get("tunless_ports") or {}, **ports)
        a.load_start = prev["machine"].get("loadavg_start", a.load_start)
        a.command = prev.get("command", "") + " ; " + a.command
    impls = []
    for impl in dict.fromkeys(r["impl"] for r in recs):
        sk = [r for r in recs if r["impl"] == impl and r["status"] == "skipped"]
        impls.append({"id": impl, "version": versions.get(impl), "available": not sk,
                      "reason": sk[0].get("reason") if sk else None})
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    fps, burst, size = (int(x) for x in a.video.split(","))
    doc = {
        "schema": SCHEMA, "profile": a.profile, "command": a.command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count(),
                    "loadavg_start": a.load_start, "loadavg_end": " ".join(open("/proc/loadavg").read().split()[:3])},
        "versions": versions,
        "settings": {"bottleneck_mbit_s": a.rate,
                     "bottleneck_tun_vpns": "gwa wan-a: stab overhead 24, tbf rate %dmbit burst %d + pfifo limit 1000" % (a.rate, a.burst),
                     "bottleneck_tunless": "ports.wan.shaper: {rate_bps: %d} on gwa, %s" % (a.rate * 1000000, aqm_in_force(recs)),
                     "nodrop_bottleneck_mbit_s": a.nd_rate,
                     "tunless_ports": ports,
                     "video": {"fps": fps, "packets_per_frame": burst, "payload": size,
                               "mbit_s": round(fps * burst * size * 8 / 1e6, 2)},
                     "udp_loss_threshold_percent": LOSS_OK,
                     "grades_ms": {"A+": 5, "A": 30, "B": 60, "C": 200, "D": 400}},
        "implementations": impls, "records": recs, "summary": summarize(recs, a.rate),
    }
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "results.json"), "w") as f:
        json.dump(clean(doc), f, indent=1, allow_nan=False)
        f.write("\n")


def cmd_rebuild(argv):
    """Recompute the overload and nodrop records of RECORDS.jsonl from their raw directories
    (after a change of the loss accounting; the measurements are not repeated)."""
    import contextlib
    import io
    path = argv[0]
    raw = os.path.dirname(os.path.abspath(path))
    out = []
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        p = r["params"]
        d = None
        if r["scenario"] == "overload" and r["status"] == "ok":
            d = os.path.join(raw, "%s-%s-q%s" % (r["impl"], r["mode"], p["txqueuelen"]), "overload-%g" % p["offered_x"])
            ns = argparse.Namespace(impl=r["impl"], mode=r["mode"], dir=d, txq=p["txqueuelen"],
                                    rate=p["rate_mbit_s"], x=p["offered_x"])
            fn = cmd_overload
        elif r["scenario"] == "nodrop" and r["status"] == "ok":
            q = "none" if p["queue"] is None else str(p["queue"])
            cell = "nodrop-q%s-rtt%d" % (q, p["rtt_ms"])
            if p.get("cc"):
                cell += "-%s-ecn%s-%s-r%s" % (p["cc"], p["ecn"], p["video"], p["run"])
            d = os.path.join(raw, "%s-%s" % (r["impl"], r["mode"]), cell)
            ns = argparse.Namespace(impl=r["impl"], mode=r["mode"], dir=d, queue=q, rtt=p["rtt_ms"],
                                    rate=p["rate_mbit_s"], txq=None, cc=p.get("cc"), ecn=p.get("ecn"),
                                    video=p.get("video"), run=p.get("run", 1))
            fn = cmd_nodrop
        if d and os.path.isdir(d):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                fn(ns)
            r = json.loads(buf.getvalue())
        out.append(json.dumps(clean(r)))
    with open(path + ".new", "w") as f:
        f.write("\n".join(out) + "\n")
    os.rename(path + ".new", path)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "udp-probe":
        return cmd_udp_probe(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "rebuild":
        return cmd_rebuild(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--impl", required=True)
    common.add_argument("--mode", required=True)
    r = sub.add_parser("record", parents=[common])
    r.add_argument("--scenario", required=True)
    r.add_argument("--params", default="{}")
    r.add_argument("--status", required=True, choices=("skipped", "error"))
    r.add_argument("--message", default="")
    for name in ("throughput", "gateway", "latency", "overload", "nodrop"):
        s = sub.add_parser(name, parents=[common])
        s.add_argument("dir")
        s.add_argument("--txq", type=int, default=None)
        s.add_argument("--rate", type=int, default=None)
        if name in ("throughput", "gateway"):
            s.add_argument("--test", choices=("tcp", "udp"), required=True)
            s.add_argument("--streams", type=int, default=1)
            s.add_argument("--direction", default="f")
            s.add_argument("--size", type=int, default=1400)
        if name == "overload":
            s.add_argument("--x", type=float, required=True)
        if name == "nodrop":
            s.add_argument("--queue", required=True)
            s.add_argument("--rtt", type=int, required=True)
            s.add_argument("--cc", default=None)
            s.add_argument("--ecn", type=int, default=None)
            s.add_argument("--video", default=None)
            s.add_argument("--run", type=int, default=1)
    s = sub.add_parser("assemble")
    s.add_argument("records")
    s.add_argument("outdir")
    s.add_argument("--profile", required=True)
    s.add_argument("--command", default="")
    s.add_argument("--rate", type=int, required=True)
    s.add_argument("--burst", type=int, default=0)
    s.add_argument("--load-start", default="")
    s.add_argument("--video", default="30,20,1200")
    s.add_argument("--nd-rate", type=int, default=None)
    s.add_argument("--version", action="append", default=[])
    s.add_argument("--append", action="store_true")
    a = p.parse_args()
    return {"record": cmd_record, "throughput": cmd_throughput, "gateway": cmd_throughput, "latency": cmd_latency,
            "overload": cmd_overload, "nodrop": cmd_nodrop, "assemble": cmd_assemble}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main() or 0)
