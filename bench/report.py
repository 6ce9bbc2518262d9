#!/usr/bin/env python3
"""Plots and the report of a bench/run.sh run: reads DIR/results.json, writes DIR/*.png
(matplotlib, Agg), DIR/report.md and DIR/report.html (the same content).

Usage: report.py DIR
"""
import html
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"tunless": "#1b9e77", "wireguard-go": "#d95f02", "wggo-ts": "#e6ab02", "boringtun": "#7570b3",
          "openvpn": "#e7298a", "kernel-wg": "#66a61e"}
# Implementations whose id does not say what was measured: their version line (for wggo-ts,
# Tailscale's fork of wireguard-go, the module and pseudo-version) goes into every label.
VERSIONED = ("wggo-ts",)
VERSIONS = {}


def label(r):
    q = r["params"].get("txqueuelen")
    s = r["impl"]
    if r["impl"] == "tunless" and r["mode"] not in ("-", None):
        s += " " + r["mode"]
    if r["impl"] in VERSIONED and VERSIONS.get(r["impl"]):
        s += " (%s)" % VERSIONS[r["impl"]]
    if q is not None and q != 500:
        s += " txq%d" % q
    return s


def vname(key):
    """'tunless/wggo-ts' -> 'tunless/wggo-ts (<its version>)' for the VERSIONED ids."""
    for v in VERSIONED:
        if key.endswith("/" + v) and VERSIONS.get(v):
            return "%s (%s)" % (key, VERSIONS[v])
    return key


def color(lbl):
    if lbl.startswith("tunless fwd-udp"):  # the gateway scenario's second pair of port kinds
        return "#66c2a5"
    for k, c in COLORS.items():
        if lbl.startswith(k):
            return c if "txq" not in lbl else "#a6761d"
    return "#666666"


# What each port kind (ports.*.driver, docs/config.md) reads and writes with.
PORT_KINDS = {"udp": "kernel UDP sockets, GSO/GRO", "packet": "AF_PACKET with virtio-net headers, TSO/GRO",
              "af_xdp": "AF_XDP, copy mode on a veth", "pmd": "a DPDK PMD",
              "auto": "af_xdp where the driver offers zero-copy, else udp"}


def ports(doc, mode):
    """'host mode: WAN `udp` (...), LAN `packet` (...)' from the configs the run wrote."""
    p = (doc["settings"].get("tunless_ports") or {}).get(mode)
    if not p:
        return "%s mode (port kinds not recorded)" % mode
    return "%s mode: WAN `%s` (%s), LAN `%s` (%s)" % (
        mode, p.get("wan"), PORT_KINDS.get(p.get("wan"), "?"), p.get("lan"), PORT_KINDS.get(p.get("lan"), "?"))


def ok(recs, scenario):
    return [r for r in recs if r["scenario"] == scenario and r["status"] == "ok"]


def pc(x):
    return None if x is None else 100 * x


def fmt(v, f="%.1f"):
    return "-" if v is None else (f % v if isinstance(v, (int, float)) else str(v))


def test_name(p):
    if p["test"] == "tcp":
        return "TCP %dx %s" % (p["streams"], "rev" if p["direction"] == "reverse" else "fwd")
    return "UDP %d B" % p["payload"]


# ---- plots -------------------------------------------------------------------------------------
def plot_throughput(recs, out, scenario="throughput"):
    rs = ok(recs, scenario)
    tests = list(dict.fromkeys(test_name(r["params"]) for r in rs))
    labels = list(dict.fromkeys(label(r) for r in rs))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    w = 0.8 / max(1, len(labels))
    for i, lb in enumerate(labels):
        xs, g, c = [], [], []
        for j, t in enumerate(tests):
            m = next((r["metrics"] for r in rs if label(r) == lb and test_name(r["params"]) == t), None)
            if m:
                xs.append(j + i * w)
                g.append(m.get("gbit_s") or 0)
                c.append(m.get("cpu_percent_per_gbit_s") or float("nan"))
        ax1.bar(xs, g, w, label=lb, color=color(lb))
        ax2.bar(xs, c, w, label=lb, color=color(lb))
    ax1.set_ylabel("Gbit/s (UDP: payload at < 1 % loss)")
    ax2.set_ylabel("VPN CPU % per Gbit/s (log)")
    ax2.set_yscale("log")
    ax2.set_xticks([j + 0.4 - w / 2 for j in range(len(tests))])
    ax2.set_xticklabels(tests)
    if ax1.get_legend_handles_labels()[0]:
        ax1.legend(fontsize=8, ncol=3)
    ax1.set_title("Throughput host to host (gwa -> gwb) and the VPN's CPU per Gbit/s" if scenario == "throughput" else
                  "Gateway forwarding client -> gwa -> gwb -> server (LAN and WAN ports) and the VPN's CPU per Gbit/s")
    fig.tight_layout()
    fig.savefig(os.path.join(out, scenario + ".png"), dpi=90)
    plt.close(fig)
    return scenario + ".png"


def plot_heatmaps(recs, out, metric, title, fname, cmap):
    rs = ok(recs, "nodrop")
    # one endpoint setting (the first the run used: the study's CUBIC with ECN) and one run
    first = next(((r["params"].get("cc"), r["params"].get("ecn")) for r in rs), None)
    rs = [r for r in rs if (r["params"].get("cc"), r["params"].get("ecn")) == first and r["params"].get("run", 1) == 1]
    if first and first[0]:
        title += " (%s, ECN %s, run 1)" % (first[0], "on" if first[1] else "off")
    impls = list(dict.fromkeys(r["impl"] for r in rs))
    if not impls:
        impls = ["(no no-drop cell ran)"]
    fig, axes = plt.subplots(1, len(impls), figsize=(3.2 * len(impls) + 1, 3.6), squeeze=False)
    for ax, impl in zip(axes[0], impls):
        cells = [r for r in rs if r["impl"] == impl]
        qs = sorted({r["params"]["queue"] for r in cells}, key=lambda q: -1 if q is None else q)
        rtts = sorted({r["params"]["rtt_ms"] for r in cells})
        grid = [[float("nan")] * len(rtts) for _ in qs]
        for r in cells:
            v = r["metrics"].get(metric)
            grid[qs.index(r["params"]["queue"])][rtts.index(r["params"]["rtt_ms"])] = v if v is not None else float("nan")
        if qs:
            ax.imshow(grid, cmap=cmap, aspect="auto", vmin=0,
                      vmax=max([v for row in grid for v in row if v == v] + [1e-9]))
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    ax.text(j, i, "-" if v != v else ("%.1f" % v), ha="center", va="center", fontsize=9)
        ax.set_xticks(range(len(rtts)))
        ax.set_xticklabels(["+%d" % x for x in rtts])
        ax.set_yticks(range(len(qs)))
        ax.set_yticklabels(["none" if q is None else str(q) for q in qs])
        ax.set_xlabel("added RTT (ms)")
        ax.set_ylabel("TUN queue (txqueuelen)")
        ax.set_title(impl + ("\n" + VERSIONS[impl] if impl in VERSIONED and VERSIONS.get(impl) else ""), fontsize=10 if impl not in VERSIONED else 7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(os.path.join(out, fname), dpi=90)
    plt.close(fig)
    return fname


def plot_latency(recs, out):
    fig, ax = plt.subplots(figsize=(9, 5))
    for r in ok(recs, "latency"):
        xs = sorted(r["samples"].get("rtt_load_ms") or [])
        if xs:
            ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=label(r),
                    color=color(label(r)), linestyle="--" if "txq" in label(r) else "-")
    ax.set_xscale("log")
    ax.set_xlabel("ping RTT client -> server under load (ms, log)")
    ax.set_ylabel("CDF")
    ax.set_title("Latency under load: 4 TCP flows through the bottleneck")
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency_cdf.png"), dpi=90)
    plt.close(fig)
    return "latency_cdf.png"


def plot_overload(recs, out):
    fig, ax = plt.subplots(figsize=(9, 5))
    rs = ok(recs, "overload")
    for lb in dict.fromkeys(label(r) for r in rs):
        pts = sorted((r["params"]["offered_x"], r["metrics"]["forwarded_pps"]) for r in rs if label(r) == lb)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lb, color=color(lb),
                linestyle="--" if "txq" in lb else "-")
    ax.set_xlabel("offered load (x bottleneck rate), UDP 1200 B")
    ax.set_ylabel("forwarded packets/s")
    ax.set_title("Overload: offered vs forwarded")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "overload.png"), dpi=90)
    plt.close(fig)
    return "overload.png"


# ---- report ------------------------------------------------------------------------------------
def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def ratio_table(tr):
    """{test: {"tunless.../<impl>": ratio}} as a table, one column per pair."""
    others = sorted({k for v in tr.values() for k in v})
    return table(["test"] + [vname(o) for o in others],
                 [[t] + [fmt(v.get(o), "%.2f") for o in others] for t, v in tr.items()]) if tr else ["(no pair ran)"]


def throughput_table(rs):
    return table(["implementation", "test", "Gbit/s", "packets/s", "retransmits", "VPN CPU %", "CPU % per Gbit/s",
                  "cores per Gbit/s"],
                 [[label(r), test_name(r["params"]), fmt(r["metrics"].get("gbit_s"), "%.3f"), fmt(r["metrics"].get("pps"), "%.0f"),
                   fmt(r["metrics"].get("retransmits"), "%s"), fmt(r["metrics"].get("vpn_cpu_percent")),
                   fmt(r["metrics"].get("cpu_percent_per_gbit_s")), fmt(r["metrics"].get("cores_per_gbit_s"), "%.3f")]
                  for r in rs])


def statements(doc):
    s, out = doc["summary"], []
    u = s.get("tunless_unaccounted")
    if u:
        out.append("- **tunless unaccounted loss**: %s in %d no-drop cell(s) (max %s packets)."
                   % ("0" if u["all_zero"] else "NOT 0", u["cells"], fmt(u["max"], "%s")))
    else:
        out.append("- tunless unaccounted loss: no tunless no-drop cell ran.")
    pl = s.get("tunless_nodrop_loss_places")
    if pl:
        out.append("- Where tunless lost packets in the no-drop matrix: " + ", ".join("%s %d" % kv for kv in pl.items()) + ".")
    ua = s.get("unaccounted_by_impl") or {}
    if ua:
        out.append("- Unaccounted loss, every no-drop and overload cell: " + ", ".join(
            "%s %s (%d cells, max |x| %d)" % (k, "0" if v["all_zero"] else "not 0", v["cells"], v["max_abs"]) for k, v in ua.items()) + ".")
    vq = s.get("video_loss_percent_by_queue") or {}
    if vq:
        out.append("- Video loss % by TUN queue and cell (medians over runs): " + "; ".join(
            "%s: %s" % (k, ", ".join("%s @%s" % (fmt(x, "%.2f"), c) for c, x in v.items())) for k, v in vq.items()) + ".")
    v = s.get("tunless_video_loss_percent")
    if v:
        out.append("- **tunless video-stream loss** (medians over runs): " +
                   ", ".join("%s %% at %s" % (fmt(x, "%.2f"), k) for k, x in v.items()) + ".")
    t = s.get("tcp_goodput_high_rtt")
    if t:
        out.append("- **TCP goodput at +%d ms RTT, %s ECN %s** (medians of %d and %d runs): tunless %s Mbit/s vs wireguard-go "
                   "(txqueuelen 25) %s Mbit/s: %s (the NODROP study: +36 %%, 117 -> 185 Mbit/s, on its own testbed)."
                   % (t["rtt_ms"], t["cc"], "on" if t["ecn"] else "off", t["runs"][0], t["runs"][1], fmt(t["tunless_mbit_s"]),
                      fmt(t["wireguard_go_q25_mbit_s"]), ("%+.1f %%" % t["gain_percent"]) if t["gain_percent"] is not None else "n/a"))
        # the same two cells' video one-way delay: what the goodput cost in queueing
        out.append("- Video one-way delay in those cells (the path adds %d ms; medians): tunless p50 %s ms, p99 %s ms; "
                   "wireguard-go (txqueuelen 25) p50 %s ms, p99 %s ms." % (
                       t["rtt_ms"] // 2, fmt(t["video_p50_ms"][0]), fmt(t["video_p99_ms"][0]),
                       fmt(t["video_p50_ms"][1]), fmt(t["video_p99_ms"][1])))
    for w in s.get("where_bits_went") or []:
        out.append("- " + w["text"] + ("" if all(w["claims"].values()) else
                                       " (NOT consistent with its numbers: %s)" % ", ".join(k for k, v in w["claims"].items() if not v)))
    g = s.get("latency_grades") or {}
    if g:
        out.append("- **Bufferbloat grade under load** (median added latency): " +
                   ", ".join("%s %s (%s ms; p99 %s ms, %s)" % (k, v["grade"], fmt(v["added_p50_ms"]),
                                                               fmt(v["added_p99_ms"]), v["grade_p99"]) for k, v in g.items()) + ".")
    return out


def report_lines(doc, pngs):
    recs, m = doc["records"], doc["machine"]
    L = ["# tunless vs kernel-TUN VPNs: %s run, %s" % (doc["profile"], doc["date"]), "",
         "Command: `%s`. Machine: %s, %d cores, kernel %s; load average %s at the start, %s at the end."
         % (doc["command"], m["cpu"], m["cores"], m["kernel"], m["loadavg_start"], m["loadavg_end"]), "",
         "This machine is shared with other sessions while the benchmark runs: every number is one "
         "run and only indicative; compare ratios from the same run, not absolutes." +
         ("" if doc["profile"] == "full" else " This is a `--%s` run (short runs, fewer cells than `--full`)." % doc["profile"]), "",
         "Bottleneck R = %d Mbit/s: %s (kernel-TUN VPNs); %s (tunless)." % (
             doc["settings"]["bottleneck_mbit_s"], doc["settings"]["bottleneck_tun_vpns"], doc["settings"]["bottleneck_tunless"]),
         "", "tunless's port kinds (`ports.*.driver` in the configs this run wrote, `raw/tunless-<mode>/`): "
         "throughput in %s; latency, overload and the no-drop matrix in %s." % (ports(doc, "host"), ports(doc, "gateway")),
         "", "## Statements (this run)", ""]
    L += statements(doc)
    L += ["", "## Implementations", ""]
    L += table(["implementation", "version", "ran", "why not"],
               [[i["id"], i["version"] or "-", "yes" if i["available"] else "no", i["reason"] or ""] for i in doc["implementations"]])
    L += ["", "versions: " + "; ".join("%s: %s" % kv for kv in doc["versions"].items()), ""]
    L += ["## Throughput ratios (tunless / other, same run)", ""]
    L += ratio_table(doc["summary"].get("throughput_ratios") or {})
    L += ["", "![throughput](%s)" % pngs[0], "", "## Throughput", "",
          "Host to host, gwa -> gwb (reverse: gwb -> gwa), no shaper. tunless in %s." % ports(doc, "host"), ""]
    L += throughput_table(ok(recs, "throughput"))
    fwd = sorted({r["mode"] for r in ok(recs, "gateway") if r["impl"] == "tunless"})
    L += ["", "## Gateway forwarding", "",
          "client -> gwa -> gwb -> server (reverse: server -> client), no shaper: each gateway takes the "
          "LAN's packets at its LAN port and sends them through the tunnel at its WAN port, and the other "
          "way round; the TUN VPNs route the same LANs into their TUN device. tunless in " +
          ("; ".join(ports(doc, m) for m in fwd) if fwd else "no gateway-scenario mode") + ".", "",
          "### Gateway ratios (tunless / other, same run)", ""]
    L += ratio_table(doc["summary"].get("gateway_ratios") or {})
    L += ["", "![gateway](%s)" % pngs[5], ""]
    L += throughput_table(ok(recs, "gateway"))
    L += ["", "## No-drop matrix (TCP bulk + video through the bottleneck, delay line on the WAN)", "",
          "client -> server through gwa and gwb. tunless in %s." % ports(doc, "gateway"), "",
          "![udp loss](%s)" % pngs[1], "", "![tcp goodput](%s)" % pngs[2], ""]
    L += table(["implementation", "TUN queue", "RTT +ms", "TCP Mbit/s", "retrans", "video loss %", "lost pkts",
                "located", "unaccounted", "where"],
               [[r["impl"], fmt(r["params"]["queue"], "%s") if r["params"]["queue"] is not None else "none",
                 r["params"]["rtt_ms"], fmt(r["metrics"]["tcp_goodput_mbit_s"]), fmt(r["metrics"]["tcp_retransmits"], "%s"),
                 fmt(r["metrics"]["video_loss_percent"], "%.2f"), fmt(r["metrics"]["lost"], "%s"),
                 fmt(r["metrics"]["located"], "%s"), fmt(r["metrics"]["unaccounted"], "%s"),
                 ", ".join("%s %d" % kv for kv in (r["metrics"]["loss_by_place"] or {}).items()) or "-"]
                for r in ok(recs, "nodrop")])
    cells = doc["summary"].get("nodrop_cells") or []
    if cells:
        L += ["", "### No-drop cells: medians over runs, where the bits went", "",
              "R = %s Mbit/s; video: %s. TCP left = what R leaves to TCP's goodput after the video's wire bytes "
              "(R - video) x MSS / (MSS + 150); fill = TCP / left; R share = the bottleneck's wire bytes (tunless: its WAN "
              "queues' tx_bytes + 24 x tx_packets; the TUN VPNs: the tbf's bytes) x 8 / (R x iperf3's TCP seconds). "
              "Endpoints: the client's and the server's net.ipv4.tcp_congestion_control and tcp_ecn, set per cell "
              "(new namespaces inherit the host's: %s)." % (
                  doc["settings"].get("nodrop_bottleneck_mbit_s"), json.dumps(doc["settings"]["video"]),
                  ", ".join(sorted({"%s tcp_ecn=%s" % (c["endpoints"]["host"]["cc"], c["endpoints"]["host"]["ecn"])
                                    for c in cells if (c.get("endpoints") or {}).get("host")})) or "not recorded"), ""]
        L += table(["implementation", "queue", "RTT +ms", "endpoints (client / server)", "runs", "TCP Mbit/s", "left", "fill %",
                    "R share %", "CoDel", "overlimit", "CE marks", "ring", "tail", "video loss %", "video p99 ms", "unaccounted"],
                   [[c["impl"], "none" if c["queue"] is None else c["queue"], c["rtt_ms"],
                     " / ".join("%s%s ECN %s" % (e.get("cc"), " (iperf3 -C)" if "iperf3" in e.get("cc_set_by", "") else "", e.get("ecn"))
                                if e else "-" for e in
                                ((c.get("endpoints") or {}).get(n) for n in ("client", "server"))),
                     c["runs"], fmt(c["median"]["tcp_goodput_mbit_s"]), fmt(c["median"]["capacity_left_to_tcp_mbit_s"]),
                     fmt(pc(c["median"]["tcp_share_of_left"])), fmt(pc(c["median"]["shaper_share_of_r"])),
                     fmt(c["median"]["queue_drops_codel"], "%s"), fmt(c["median"]["queue_drops_overlimit"], "%s"),
                     fmt(c["median"]["ecn_marks"], "%s"), fmt(c["median"]["ring_drops"], "%s"), fmt(c["median"]["tail_drops"], "%s"),
                     fmt(c["median"]["video_loss_percent"], "%.2f"), fmt(c["median"]["video_delay_p99_ms"]),
                     fmt(c["median"]["unaccounted"], "%s")] for c in cells])
    sh = doc["summary"].get("nodrop_show") or {}
    if sh:
        L += ["", "### tunless vs wireguard-go txqueuelen 500 and 25 (same run)", ""]
        L += table(["cell", "tunless TCP", "vs q500", "vs q25", "tunless video loss % / p99 ms", "q500 video loss % / p99",
                    "q25 video loss % / p99"],
                   [[k, fmt(v.get("tunless_tcp_mbit_s")), fmt(v.get("tcp_ratio_q500"), "%.2fx"), fmt(v.get("tcp_ratio_q25"), "%.2fx"),
                     "%s / %s" % (fmt(v.get("tunless_video_loss_percent"), "%.2f"), fmt(v.get("tunless_video_p99_ms"))),
                     "%s / %s" % (fmt(v.get("wireguard_go_q500_video_loss_percent"), "%.2f"), fmt(v.get("wireguard_go_q500_video_p99_ms"))),
                     "%s / %s" % (fmt(v.get("wireguard_go_q25_video_loss_percent"), "%.2f"), fmt(v.get("wireguard_go_q25_video_p99_ms")))]
                    for k, v in sh.items()])
    L += ["", "Packets: client eth0 TX -> server eth0 RX (client -> server, both flows); located = drops "
          "counted on that path (tun_ring = `ip -s link` TX drops of gwa's TUN device; qdisc = `tc -s` "
          "on gwa's WAN, one per device (tbf repeats its pfifo's drops); " + (
              "frag_needed = IP FragFails on gwa and gwb: forwarded packets too big for the tunnel's MTU with DF "
              "set, answered with ICMP (path MTU discovery); " if any("frag_needed" in (r["metrics"].get("loss_by_place") or {})
                                                                     for r in recs if r["status"] == "ok") else "") +
          "socket = RcvbufErrors/MemErrors "
          "on gwb and the server; send_refused = gwa's UdpSndbufErrors minus its qdisc drops: sends the "
          "kernel refused for a full socket buffer, which the VPN dropped or retried; tunless_aqm / "
          "tunless_other = tunless's drop reasons (xsk_ring_full: the kernel found the AF_XDP RX ring "
          "of the port full; tunless counts it, the veth's rx_dropped is the same packets); "
          "delay_line = its own counters); unaccounted = lost - located. Drops on the reverse path "
          "(ACKs: gwb's TUN TX, ...) are in `reverse_path_drops` of results.json, not in located.",
          "", "## Latency under load", "", "tunless in %s." % ports(doc, "gateway"), "", "![latency](%s)" % pngs[3], ""]
    L += table(["implementation", "idle p50 ms", "load p50 ms", "load p99 ms", "added p50", "grade", "grade (p99)", "TCP Mbit/s"],
               [[label(r), fmt(r["metrics"]["idle_p50_ms"], "%.2f"), fmt(r["metrics"]["load_p50_ms"], "%.2f"),
                 fmt(r["metrics"]["load_p99_ms"], "%.2f"), fmt(r["metrics"]["added_p50_ms"], "%.2f"),
                 r["metrics"]["grade"] or "-", r["metrics"]["grade_p99"] or "-", fmt(r["metrics"]["tcp_goodput_mbit_s"])]
                for r in ok(recs, "latency")])
    L += ["", "Grade of the added latency: A+ < 5 ms, A < 30, B < 60, C < 200, D < 400, else F.", "",
          "## Overload", "", "tunless in %s." % ports(doc, "gateway"), "", "![overload](%s)" % pngs[4], ""]
    L += table(["implementation", "offered x", "offered Mbit/s", "forwarded pps", "loss %", "unaccounted", "where"],
               [[label(r), r["params"]["offered_x"], fmt(r["metrics"]["offered_mbit_s"]), fmt(r["metrics"]["forwarded_pps"], "%.0f"),
                 fmt(r["metrics"]["loss_percent"], "%.2f"), fmt(r["metrics"]["unaccounted"], "%s"),
                 ", ".join("%s %d" % kv for kv in (r["metrics"]["loss_by_place"] or {}).items()) or "-"]
                for r in ok(recs, "overload")])
    bad = [r for r in recs if r["status"] != "ok"]
    if bad:
        L += ["", "## Not measured", ""]
        L += table(["implementation", "scenario", "status", "why"],
                   [[r["impl"], r["scenario"], r["status"], r.get("reason") or r.get("error") or ""] for r in bad])
    return L


def to_html(lines, title):
    out, i = ["<!doctype html><meta charset=utf-8><title>%s</title>" % html.escape(title),
              "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;font-size:13px}"
              "td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}</style>"], 0

    def inline(t):
        t = html.escape(t)
        parts = t.split("**")
        t = "".join(p if k % 2 == 0 else "<b>%s</b>" % p for k, p in enumerate(parts))
        parts = t.split("`")
        return "".join(p if k % 2 == 0 else "<code>%s</code>" % p for k, p in enumerate(parts))
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("#"):
            n = len(ln) - len(ln.lstrip("#"))
            out.append("<h%d>%s</h%d>" % (n, inline(ln[n:].strip()), n))
        elif ln.startswith("!["):
            src = ln[ln.index("(") + 1:-1]
            out.append('<p><img src="%s" alt="%s"></p>' % (html.escape(src), html.escape(src)))
        elif ln.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
            out.append("<table><tr>" + "".join("<th>%s</th>" % inline(c) for c in cells[0]) + "</tr>")
            out += ["<tr>" + "".join("<td>%s</td>" % inline(c) for c in r) + "</tr>" for r in cells[2:]]
            out.append("</table>")
            continue
        elif ln.startswith("- "):
            out.append("<ul>")
            while i < len(lines) and lines[i].startswith("- "):
                out.append("<li>%s</li>" % inline(lines[i][2:]))
                i += 1
            out.append("</ul>")
            continue
        elif ln.strip():
            out.append("<p>%s</p>" % inline(ln))
        i += 1
    return "\n".join(out) + "\n"


def main(argv):
    out = argv[0]
    doc = json.load(open(os.path.join(out, "results.json")))
    recs = doc["records"]
    VERSIONS.update(doc.get("versions") or {})
    pngs = [plot_throughput(recs, out),
            plot_heatmaps(recs, out, "video_loss_percent", "No-drop matrix: video (UDP) loss %", "nodrop_udp_loss.png", "Reds"),
            plot_heatmaps(recs, out, "tcp_goodput_mbit_s", "No-drop matrix: TCP goodput Mbit/s", "nodrop_tcp_goodput.png", "Greens"),
            plot_latency(recs, out), plot_overload(recs, out), plot_throughput(recs, out, "gateway")]
    lines = report_lines(doc, pngs)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(to_html(lines, lines[0].lstrip("# ")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
