#!/usr/bin/env python3
"""Counters and summaries for bench/overload.sh (stdlib only; needs root for ip netns).

  overload_stats.py snap OUT.json NS... [--tunless NAME ...] [--telemetry PATH]
      Snapshot of every interface (ip -s link), qdisc (tc -s qdisc) and UDP socket counter
      (/proc/net/snmp, /proc/net/snmp6) of the namespaces, plus, per tunless instance, its
      drops by reason, port stats and egress queues (DPDK telemetry via scripts/tl-telemetry).
  overload_stats.py summary VARIANT SCENARIO RUNDIR
      One JSON line: iperf3 and ping results of RUNDIR, and where packets were lost, from
      the difference of RUNDIR/before.json and RUNDIR/after.json.
  overload_stats.py report RESULTS.jsonl OUT.json RATE_MBIT DURATION COMMAND [META.json]
      The side-by-side table (stdout) and the JSON document (OUT.json).
"""
import json
import os
import platform
import re
import subprocess
import sys
import time

UDP_FIELDS = ("RcvbufErrors", "SndbufErrors", "InErrors", "MemErrors", "NoPorts")


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


IP_FIELDS = ("FragFails",)  # forwarded packets too big for the next hop's MTU with DF set


def snmp(ns):
    out = {}
    text = run("ip", "netns", "exec", ns, "cat", "/proc/net/snmp")
    for proto, fields in (("Udp", UDP_FIELDS), ("Ip", IP_FIELDS)):
        rows = [l.split() for l in text.splitlines() if l.startswith(proto + ":")]
        if len(rows) >= 2:
            for k, v in zip(rows[0][1:], rows[1][1:]):
                if k in fields:
                    out[proto + k] = int(v)
    for l in run("ip", "netns", "exec", ns, "cat", "/proc/net/snmp6").splitlines():
        p = l.split()
        if len(p) == 2 and (p[0].startswith("Udp6") and p[0][4:] in UDP_FIELDS or
                            p[0].startswith("Ip6") and p[0][3:] in IP_FIELDS):
            out[p[0]] = int(p[1])
    return out


def links(ns):
    res = {}
    try:
        data = json.loads(run("ip", "-n", ns, "-s", "-j", "link", "show") or "[]")
    except ValueError:
        return res
    for l in data:
        s = l.get("stats64", {})
        res[l["ifname"]] = {
            "txqlen": l.get("txqlen"), "qdisc": l.get("qdisc"),
            "rx_packets": s.get("rx", {}).get("packets", 0), "rx_dropped": s.get("rx", {}).get("dropped", 0),
            "tx_packets": s.get("tx", {}).get("packets", 0), "tx_dropped": s.get("tx", {}).get("dropped", 0),
        }
    return res


def qdiscs(ns):
    try:
        data = json.loads(run("ip", "netns", "exec", ns, "tc", "-s", "-j", "qdisc", "show") or "[]")
    except ValueError:
        return {}
    res = {}
    for q in data:
        if q.get("kind") in ("noqueue", "noop"):
            continue
        key = "%s %s %s" % (q.get("dev"), q.get("kind"), q.get("handle"))
        res[key] = {k: q.get(k, 0) for k in ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")}
    return res


def telemetry(tool, name, cmd):
    out = run(tool, "--raw", name, cmd)
    try:
        return json.loads(out)
    except ValueError:
        return None


def snap(argv):
    out, rest = argv[0], argv[1:]
    names, nss, tool = [], [], os.path.join(os.path.dirname(__file__), "..", "scripts", "tl-telemetry")
    while rest:
        if rest[0] == "--tunless":
            names.append(rest[1])
            rest = rest[2:]
        elif rest[0] == "--telemetry":
            tool = rest[1]
            rest = rest[2:]
        else:
            nss.append(rest[0])
            rest = rest[1:]
    doc = {"time": time.time(), "ns": {}, "tunless": {}}
    for ns in nss:
        doc["ns"][ns] = {"links": links(ns), "qdiscs": qdiscs(ns), "snmp": snmp(ns)}
    for n in names:
        t = {"drops": telemetry(tool, n, "/tunless/drops"), "device": telemetry(tool, n, "/tunless/device"),
             "ports": telemetry(tool, n, "/tunless/ports"),
             "queues": {}}
        for q in telemetry(tool, n, "/tunless/queues") or []:
            t["queues"][q] = telemetry(tool, n, "/tunless/queue," + q)
        doc["tunless"][n] = t
    json.dump(doc, open(out, "w"), indent=1)
    return 0


def delta_loss(before, after):
    """Where packets were lost between two snapshots: {location: packets}."""
    loc = {}

    def add(k, v):
        if v:
            loc[k] = loc.get(k, 0) + v

    for ns, a in after["ns"].items():
        b = before["ns"].get(ns, {})
        short = ns.split("-", 1)[-1]
        for ifn, s in a["links"].items():
            o = b.get("links", {}).get(ifn, {})
            tx_d = s["tx_dropped"] - o.get("tx_dropped", 0)
            rx_d = s["rx_dropped"] - o.get("rx_dropped", 0)
            if ifn.startswith(("wg", "tun")):
                add("tun ring (%s %s tx_dropped)" % (short, ifn), tx_d)
                add("tun rx (%s %s rx_dropped)" % (short, ifn), rx_d)
            else:
                add("link (%s %s tx_dropped)" % (short, ifn), tx_d)
                add("link (%s %s rx_dropped)" % (short, ifn), rx_d)
        for key, q in a["qdiscs"].items():
            o = b.get("qdiscs", {}).get(key, {})
            add("qdisc (%s %s)" % (short, key.rsplit(" ", 1)[0]), q["drops"] - o.get("drops", 0))
        for k, v in a["snmp"].items():
            # SndbufErrors is no loss counter of its own: it counts sends the qdisc dropped
            # (ENOBUFS, already under that qdisc) and sends refused for a full buffer, which
            # the sender retries (EAGAIN). Kept for information, not summed.
            if "RcvbufErrors" in k or "MemErrors" in k:
                add("socket (%s %s)" % (short, k), v - b.get("snmp", {}).get(k, 0))
            elif "NoPorts" in k and short == "server":
                add("late (server %s: arrived after the receiver stopped)" % k, v - b.get("snmp", {}).get(k, 0))
            elif "FragFails" in k:
                # the kernel's forwarding dropped it and answered with ICMP "fragmentation
                # needed" (path MTU discovery; tunless counts the same as frag_needed)
                add("ip (%s %s: too big for the next hop, DF set)" % (short, k), v - b.get("snmp", {}).get(k, 0))
            elif "SndbufErrors" in k:
                add("info: sndbuf (%s %s)" % (short, k), v - b.get("snmp", {}).get(k, 0))
    for n, t in after["tunless"].items():
        o = before["tunless"].get(n, {})
        for r, v in (t.get("drops") or {}).items():
            add("tunless %s drop %s" % (n, r), v - (o.get("drops") or {}).get(r, 0))
    return loc


def category(loc):
    if loc.startswith("info:"):
        return "info"
    if loc.startswith("tun ring"):
        return "tun_ring"
    if loc.startswith("late"):
        return "late"
    if loc.startswith("qdisc"):
        return "qdisc"
    if loc.startswith("ip ("):
        return "frag_needed"
    if loc.startswith("socket"):
        return "socket"
    if loc.startswith("tunless") and " drop aqm_" in loc:
        return "tunless_aqm"
    if loc.startswith("tunless"):
        return "tunless_other"
    return "other"


def ping_stats(path):
    rtts, sent, recv = [], None, None
    try:
        text = open(path).read()
    except OSError:
        return {}
    for m in re.finditer(r"time=([\d.]+) ms", text):
        rtts.append(float(m.group(1)))
    m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    if m:
        sent, recv = int(m.group(1)), int(m.group(2))
    rtts.sort()

    def q(p):
        if not rtts:
            return None
        i = min(len(rtts) - 1, max(0, int(round(p * len(rtts) + 0.5)) - 1))
        return round(rtts[i], 3)
    return {"sent": sent, "received": recv, "p50_ms": q(0.50), "p99_ms": q(0.99),
            "max_ms": round(rtts[-1], 3) if rtts else None}


def iperf_stats(path, scenario):
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return {"error": "iperf3 gave no JSON"}
    if "error" in r:
        return {"error": r["error"]}
    e = r["end"]
    if scenario == "udp":
        # sum_sent.packets: datagrams the client sent; sum_received: the server's view, whose
        # "packets" is the highest sequence number seen (received + gaps), so packets still
        # queued when the test ended are neither received nor counted lost there.
        snt, rcv = e.get("sum_sent", e["sum"]), e.get("sum_received", e["sum"])
        sent = snt.get("packets", 0)
        received = rcv.get("packets", 0) - rcv.get("lost_packets", 0)
        return {"sent": sent, "received": received, "lost": sent - received,
                "loss_percent": round(100.0 * (sent - received) / sent, 2) if sent else None,
                "sent_mbit_s": round(snt.get("bits_per_second", 0) / 1e6, 1),
                "received_mbit_s": round(rcv.get("bits_per_second", 0) / 1e6, 1),
                "receiver_gaps": rcv.get("lost_packets", 0),
                "after_last_received": sent - rcv.get("packets", 0)}
    return {"goodput_mbit_s": round(e["sum_received"]["bits_per_second"] / 1e6, 1),
            "retransmits": e["sum_sent"].get("retransmits")}


def queue_delta(o, v):
    """One egress queue during the run: counter deltas and sojourn quantiles of the packets
    delivered during the run (from the cumulative histogram of /tunless/queue)."""
    d = {k: v.get(k, 0) - o.get(k, 0) for k in ("delivered", "ecn_marks", "drops_aqm_codel",
                                                   "drops_aqm_overlimit", "backpressure", "enqueued")}
    d["shaper_rate_bps"] = v.get("shaper_rate_bps")
    hb, ha = o.get("sojourn_below_ns") or {}, v.get("sojourn_below_ns") or {}
    bounds = sorted(int(k) for k in ha)
    total = d["delivered"]

    def q(p):
        if total <= 0:
            return None
        for b in bounds:
            if ha[str(b)] - hb.get(str(b), 0) >= p * total:
                return b
        return "above %d" % bounds[-1] if bounds else None
    d["sojourn_p50_below_ns"], d["sojourn_p99_below_ns"] = q(0.50), q(0.99)
    d["sojourn_max_ns_since_start"] = v.get("sojourn_max_ns")
    return d


def summary(argv):
    variant, scenario, d = argv
    res = {"variant": variant, "scenario": scenario}
    try:
        before = json.load(open(os.path.join(d, "before.json")))
        after = json.load(open(os.path.join(d, "after.json")))
    except (OSError, ValueError) as e:
        res["error"] = "no counters: %s" % e
        print(json.dumps(res))
        return 0
    res["iperf3"] = iperf_stats(os.path.join(d, "iperf3.json"), scenario)
    res["ping_idle"] = ping_stats(os.path.join(d, "ping-idle.txt"))
    res["ping_load"] = ping_stats(os.path.join(d, "ping-load.txt"))
    loss = delta_loss(before, after)
    res["loss_locations"] = loss
    cats = {}
    for k, v in loss.items():
        cats[category(k)] = cats.get(category(k), 0) + v
    res["loss_by_category"] = cats
    info = {}
    for n, t in after["tunless"].items():
        for q, v in (t.get("queues") or {}).items():
            o = ((before["tunless"].get(n) or {}).get("queues") or {}).get(q) or {}
            if v:
                info["%s %s" % (n, q)] = queue_delta(o, v)
    if info:
        res["tunless_queues"] = info
    for ns, a in after["ns"].items():
        for ifn, s in a["links"].items():
            if ifn.startswith(("wg", "tun")):
                res.setdefault("tun", {})["%s %s" % (ns.split("-", 1)[-1], ifn)] = {"txqlen": s["txqlen"], "qdisc": s["qdisc"]}
    print(json.dumps(res))
    return 0


def us(ns):
    return "-" if ns is None else ("%.0f" % (ns / 1000.0) if isinstance(ns, int) else ns)


def fmt(v, f="%s"):
    return "-" if v is None else f % v


def report(argv):
    rows = [json.loads(l) for l in open(argv[0]) if l.strip()]
    out, rate, dur, command = argv[1], float(argv[2]), float(argv[3]), argv[4]
    meta = json.load(open(argv[5])) if len(argv) > 5 else {}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    doc = {"benchmark": "overload", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": command,
           "rate_mbit_s": rate, "duration_s": dur,
           "topology": "client - gwa =WAN (bottleneck R at gwa egress)= gwb - server, tunnel gwa<->gwb",
           "machine": {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count()},
           "setup": meta, "results": rows}
    print("Overload through a VPN gateway: WAN bottleneck R = %g Mbit/s at gwa, %gs per scenario, %s, %d cores"
          % (rate, dur, platform.release(), os.cpu_count()))
    print("(shared machine: other jobs may have run at the same time; one run, compare ratios)")
    for k in ("wireguard-go", "tunless", "wan_bottleneck_wireguard_go", "wan_bottleneck_tunless", "default_qdisc"):
        if meta.get(k):
            print("%s: %s" % (k, meta[k]))
    for scen, title in (("udp", "UDP blast at 2R + sparse ping (10/s)"), ("tcp", "one TCP flow at full speed + sparse ping (10/s)")):
        sel = [r for r in rows if r.get("scenario") == scen]
        if not sel:
            continue
        print()
        print(title)
        if scen == "udp":
            print("%-13s %8s %8s %6s %7s | %8s %8s %8s %8s %7s %7s %6s | %13s %15s %5s"
                  % ("impl", "sent", "recv", "loss%", "Mbit/s", "TUN ring", "qdisc", "socket", "AQM", "other", "late", "unacc",
                     "ping idle p50/p99", "load p50/p99 ms", "ploss"))
        else:
            print("%-13s %8s %8s | %8s %8s %8s %8s %8s | %13s %15s %5s"
                  % ("impl", "Mbit/s", "retrans", "TUN ring", "qdisc", "socket", "AQM", "other",
                     "ping idle p50/p99", "load p50/p99 ms", "ploss"))
        for r in sel:
            if "error" in r or "error" in r.get("iperf3", {}):
                print("%-13s ERROR %s" % (r["variant"], r.get("error") or r["iperf3"]["error"]))
                continue
            c, ip, pi, pl = r["loss_by_category"], r["iperf3"], r["ping_idle"], r["ping_load"]
            other = c.get("other", 0) + c.get("tunless_other", 0) + c.get("frag_needed", 0)
            known = c.get("tun_ring", 0) + c.get("qdisc", 0) + c.get("socket", 0) + c.get("tunless_aqm", 0) + other
            ploss = None
            if pl.get("sent"):
                ploss = 100.0 * (pl["sent"] - pl["received"]) / pl["sent"]
            pings = "%s/%s" % (fmt(pi.get("p50_ms"), "%.2f"), fmt(pi.get("p99_ms"), "%.2f"))
            pingl = "%s/%s" % (fmt(pl.get("p50_ms"), "%.1f"), fmt(pl.get("p99_ms"), "%.1f"))
            if scen == "udp":
                print("%-13s %8d %8d %6.2f %7.1f | %8d %8d %8d %8d %7d %7d %6d | %13s %15s %4.0f%%"
                      % (r["variant"], ip["sent"], ip["received"], ip["loss_percent"] or 0, ip["received_mbit_s"],
                         c.get("tun_ring", 0), c.get("qdisc", 0), c.get("socket", 0), c.get("tunless_aqm", 0), other,
                         c.get("late", 0), ip["lost"] - known - c.get("late", 0), pings, pingl, ploss or 0))
            else:
                print("%-13s %8.1f %8s | %8d %8d %8d %8d %8d | %13s %15s %4.0f%%"
                      % (r["variant"], ip["goodput_mbit_s"], fmt(ip.get("retransmits")), c.get("tun_ring", 0),
                         c.get("qdisc", 0), c.get("socket", 0), c.get("tunless_aqm", 0), other, pings, pingl, ploss or 0))
        by = {r["variant"]: r for r in sel if "error" not in r and "error" not in r.get("iperf3", {})}
        tl = by.get("tunless")
        if tl:
            for base in sorted(v for v in by if v != "tunless"):
                b = by[base]
                parts = []
                p_tl, p_b = tl["ping_load"].get("p99_ms"), b["ping_load"].get("p99_ms")
                if p_tl and p_b:
                    parts.append("ping p99 under load %.2fx" % (p_tl / p_b))
                if scen == "udp":
                    r_tl, r_b = tl["iperf3"]["received"], b["iperf3"]["received"]
                    if r_b:
                        parts.append("packets delivered %.2fx" % (r_tl / r_b))
                else:
                    g_tl, g_b = tl["iperf3"]["goodput_mbit_s"], b["iperf3"]["goodput_mbit_s"]
                    if g_b:
                        parts.append("goodput %.2fx" % (g_tl / g_b))
                doc.setdefault("ratios", {})["%s tunless/%s" % (scen, base)] = parts
                print("  tunless / %-10s %s" % (base + ":", ", ".join(parts)))
        for r in sel:
            locs = r.get("loss_locations") or {}
            if locs:
                print("  %s loss locations: %s" % (r["variant"], ", ".join("%s=%d" % kv for kv in sorted(locs.items()))))
            for q, v in (r.get("tunless_queues") or {}).items():
                if v.get("delivered") or v.get("drops_aqm_codel") or v.get("drops_aqm_overlimit"):
                    print("  %s queue %s: %s delivered, sojourn p50 < %s us, p99 < %s us, ECN marks %s, AQM drops codel %s overlimit %s%s"
                          % (r["variant"], q, v["delivered"], us(v["sojourn_p50_below_ns"]), us(v["sojourn_p99_below_ns"]),
                             v["ecn_marks"], v["drops_aqm_codel"], v["drops_aqm_overlimit"],
                             ", shaped at %g Mbit/s" % (v["shaper_rate_bps"] / 1e6) if v.get("shaper_rate_bps") else ""))
    print()
    print("loss columns: packets dropped per place during the run (counter deltas): TUN ring = tun tx_dropped of wg0;")
    print("qdisc = drops of any qdisc (tbf on the WAN, wg0's); socket = UDP RcvbufErrors/MemErrors in any namespace")
    print("(SndbufErrors is listed under 'info' only: it repeats qdisc drops (ENOBUFS) and counts retried EAGAIN sends);")
    print("AQM = tunless aqm_codel + aqm_overlimit; other = any other link or tunless drop; late = arrived after the")
    print("iperf3 server stopped (its UdpNoPorts: they were queued when the test ended); unacc = sent - received - all")
    print("of these (in flight at the second snapshot, or lost where no counter sees them). ploss = ping loss under load.")
    json.dump(doc, open(out, "w"), indent=2)
    open(out, "a").write("\n")
    print("JSON: " + out)
    return 0


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "snap":
        return snap(rest)
    if cmd == "summary":
        return summary(rest)
    if cmd == "report":
        return report(rest)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
