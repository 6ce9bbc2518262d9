#!/usr/bin/env python3
"""The doc's table from bench/throughput.sh -m gateway JSONs: medians, per-run ratios of tunless
to wggo-ts and wireguard-go, cores per Gbit/s, and the sitting's "other" CPU range."""
import json, statistics, sys

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

for f in sys.argv[1:]:
    d = json.load(open(f))
    rows = [r for r in d["results"] if "gbit_s" in r]
    s = d["summary"]
    other = [r["other_cpu_percent"] for r in rows]
    head = "| %d | %s " % (d["streams"], d["direction"])
    for t in ("tunless-xdp", "tunless-udp"):
        for b in ("wggo-ts", "wggo"):
            bn = "wireguard-go" if b == "wggo" else b
            k = "%s/%s" % (t, bn)
            print(head + "| %s | %.3f | %s %.3f | %.2f (%s) | %.2f / %.2f | %.0f-%.0f %% |" % (
                t, s[t]["gbit_s"], bn, s[b]["gbit_s"], d["ratios"][k],
                " ".join("%.2f" % x for x in d["ratios_per_run"][k]),
                s[t]["vpn_cores_per_gbit_s"], s[b]["vpn_cores_per_gbit_s"], min(other), max(other)))
    print("<!-- %s: wggo-ts/wireguard-go %s per run %s; retransmits %s -->" % (
        f, d["ratios"].get("wggo-ts/wireguard-go"), d["ratios_per_run"].get("wggo-ts/wireguard-go"),
        {i: [r["retransmits"] for r in rows if r["impl"] == i] for i in s}))
    print("<!-- other CPU per run: %s -->" % {i: [r["other_cpu_percent"] for r in rows if r["impl"] == i] for i in s})
