#!/usr/bin/env python3
"""read_model.py TUNLESSCTL NAME TELEMETRY-SOCKET METRICS-URL: renders the control API's show,
the DPDK telemetry commands and the Prometheus text of one running tunlessd and checks that
every field of the read model (`tunlessctl help --read-model`, from src/api/stats_fields.h)
appears in all three under its one name with one value, that no section carries a value the
read model does not declare, and that the strings (name, mode, key, iface, endpoint, allowed
IPs) agree too. Each round reads show, then telemetry, then Prometheus, then show again: a
value that show reports alike before and after must be the same in all three; a counter that
moved meanwhile (an idle worker's polls and loop time) must read in that order, never less
than the read before. Gauges do not move on a quiet daemon: a round where one did is read
again (up to 20 rounds); the last round's differences are printed otherwise. The queues'
histograms (telemetry's sojourn_below_ns and the per-class *_below_*, Prometheus' histogram
families) are the one value outside the read model's fields.
Prints "ok <check>" / "not ok <check>" lines; exit status 1 on any failure."""
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request

CTL, NAME, TEL, URL = sys.argv[1:5]
STRINGS = {"device": {"name", "mode", "public_key", "version"}, "ports": {"port", "iface"},
           "queues": {"port", "worker"}, "workers": {"worker"},
           "peers": {"name", "public_key", "endpoint", "allowed_ips"}}
SCALE = {"µs": 1e-6, "ns": 1e-9}
# the queues' cumulative histograms in telemetry (Prometheus: tunless_queue_sojourn_seconds,
# tunless_queue_class_sojourn_seconds, tunless_queue_served_ahead_bytes)
HISTOGRAMS = {"sojourn_below_ns", "sparse_sojourn_below_ns", "bulk_sojourn_below_ns", "sparse_ahead_below_bytes",
              "bulk_ahead_below_bytes"}
# show's keys kept for a release beside the field that renamed them (src/api/ctlapi.yaml)
DEPRECATED = {"peers": {"latest_handshake_age_s"}}


def read_model():
    """[(section, field, unit, family, extra label)] from the generated markdown table."""
    out = subprocess.run([CTL, "help", "--read-model"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 6 or not cells[1].startswith("`"):
            continue
        prom = cells[4].strip("`")
        fam, _, label = prom.partition("{")
        rows.append((cells[0], cells[1].strip("`"), cells[2], cells[3], fam, label.rstrip("}")))
    return rows


def telemetry(cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(TEL)
    s.recv(1 << 16)
    s.send(cmd.encode())
    v = json.loads(s.recv(1 << 22))[cmd.split(",")[0]]
    s.close()
    return v


def prometheus():
    """{(family, frozenset(labels)): value}"""
    text = urllib.request.urlopen(URL, timeout=10).read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def capture():
    show = json.loads(subprocess.run([CTL, "-n", NAME, "--json", "show"], check=True, capture_output=True,
                                     text=True).stdout)["result"]
    tel = {"device": telemetry("/tunless/device"), "ports": telemetry("/tunless/ports"),
           "workers": telemetry("/tunless/workers"), "peers": telemetry("/tunless/peers"),
           "drops": telemetry("/tunless/drops"), "queues": {}}
    for q in telemetry("/tunless/queues"):
        tel["queues"][q] = telemetry("/tunless/queue," + q)
    prom = prometheus()
    after = json.loads(subprocess.run([CTL, "-n", NAME, "--json", "show"], check=True, capture_output=True,
                                      text=True).stdout)["result"]
    return show, tel, prom, after


def entities(show, tel):
    """{section: [(key, show entry, telemetry entry, prometheus labels)]}"""
    dev = show["device"]
    out = {"device": [("device", dev, tel["device"], {})]}
    out["ports"] = [(p["port"], p, tel["ports"].get(p["port"]), {"port": p["port"]}) for p in show["ports"]]
    out["queues"] = [("%s/%d" % (q["port"], q["worker"]), q, tel["queues"].get("%s/%d" % (q["port"], q["worker"])),
                      {"port": q["port"], "worker": str(q["worker"])}) for q in show["queues"]]
    out["workers"] = [("worker%d" % w["worker"], w, tel["workers"].get("worker%d" % w["worker"]),
                       {"worker": str(w["worker"])}) for w in show["workers"]]
    by_key = {p["public_key"]: p for p in tel["peers"].values()}
    out["peers"] = [(p["public_key"], p, by_key.get(p["public_key"]),
                     {"device": dev["name"], "public_key": p["public_key"]}) for p in show["peers"]]
    return out


def near(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def agrees(kind, scale, sv, tv, pv, sv2):
    """show before, telemetry, Prometheus (scaled), show after: one value, or a counter read in order."""
    if None in (sv, tv, pv, sv2):
        return False
    if sv == sv2:
        return tv == sv and near(pv, sv * scale)
    return kind == "counter" and sv <= tv <= sv2 and sv * scale - 1e-9 <= pv <= sv2 * scale + 1e-9


def compare(model, show, tel, prom, after):
    """[difference, ...] and the number of values compared."""
    diffs, n = [], 0
    fields = {}
    for sec, fid, kind, unit, fam, label in model:
        fields.setdefault(sec, []).append((fid, kind, unit, fam, label))
    later = {(sec, key): s for sec, ents in entities(after, tel).items() for key, s, _, _ in ents}
    for sec, ents in entities(show, tel).items():
        if not ents and sec != "peers":
            diffs.append("%s: no entry in show" % sec)
        declared = {f[0] for f in fields[sec]} | STRINGS[sec]
        for key, s, t, labels in ents:
            if t is None:
                diffs.append("%s %s: not in telemetry" % (sec, key))
                continue
            for where, d in (("show", s), ("telemetry", t)):
                extra = set(d) - declared - (HISTOGRAMS if (sec, where) == ("queues", "telemetry") else set())
                extra -= DEPRECATED.get(sec, set()) if where == "show" else set()
                if extra:
                    diffs.append("%s %s: %s has keys the read model does not declare: %s" % (sec, key, where, sorted(extra)))
            s2 = later.get((sec, key), {})
            for fid, kind, unit, fam, label in fields[sec]:
                n += 1
                sv, tv, sv2 = s.get(fid), t.get(fid), s2.get(fid)
                sv = int(sv) if isinstance(sv, bool) else sv
                sv2 = int(sv2) if isinstance(sv2, bool) else sv2
                lab = dict(labels)
                if label:
                    k, v = label.split("=", 1)
                    lab[k] = v.strip('"')
                pv = prom.get((fam, frozenset(lab.items())))
                if not agrees(kind, SCALE.get(unit, 1), sv, tv, pv, sv2):
                    diffs.append("%s %s %s: show %s, telemetry %s, prometheus %s{%s} %s, show again %s"
                                 % (sec, key, fid, sv, tv, fam, label, pv, sv2))
    for key, s, t, labels in entities(show, tel)["peers"]:
        if t and (s.get("endpoint", "") != t["endpoint"] or ",".join(s["allowed_ips"]) != t["allowed_ips"]
                  or s.get("name", "") != t["name"]):
            diffs.append("peer %s: strings differ: show %s, telemetry %s" % (key, s, t))
    dev = show["device"]
    if any(dev[k] != tel["device"][k] for k in ("name", "mode", "public_key", "version")) or \
            (("tunless_info", frozenset({"name": dev["name"], "mode": dev["mode"], "public_key": dev["public_key"],
                                         "version": dev["version"]}.items())) not in prom):
        diffs.append("device strings differ: show %s, telemetry %s" % (dev, tel["device"]))
    for p in show["ports"]:
        if tel["ports"][p["port"]]["iface"] != p["iface"] or \
                ("tunless_port_info", frozenset({"port": p["port"], "iface": p["iface"]}.items())) not in prom:
            diffs.append("port %s: iface differs" % p["port"])
    for reason, v in show["drops"].items():
        n += 1
        pv = prom.get(("tunless_drops_total", frozenset({("reason", reason)})))
        if not agrees("counter", 1, v, tel["drops"].get(reason), pv, after["drops"].get(reason)):
            diffs.append("drop %s: show %s, telemetry %s, prometheus %s" % (reason, v, tel["drops"].get(reason), pv))
    if set(show["drops"]) != set(tel["drops"]):
        diffs.append("drop reasons differ: %s" % sorted(set(show["drops"]) ^ set(tel["drops"])))
    return diffs, n


def main():
    model = read_model()
    fails = 0
    if not model:
        print("not ok the read model lists its fields")
        return 1
    print("ok the read model lists %d fields in %d sections" % (len(model), len({r[0] for r in model})))
    for attempt in range(1, 21):
        show, tel, prom, after = capture()
        diffs, n = compare(model, show, tel, prom, after)
        if not diffs:
            break
        time.sleep(0.3)
    counts = {sec: len(v) for sec, v in entities(show, tel).items()}
    print("# %d values compared (entries: %s) in round %d" % (n, counts, attempt))
    for d in diffs:
        print("#   " + d)
    ok = not diffs and counts["peers"] > 0 and counts["queues"] > 0 and counts["ports"] > 0
    print("%s every read-model field appears in show, telemetry and Prometheus with one value" % ("ok" if ok else "not ok"))
    fails += not ok
    return 1 if fails else 0


sys.exit(main())
