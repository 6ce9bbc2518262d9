#!/usr/bin/env python3
"""Ratios of bench/throughput.sh JSONs (this page's sittings): per file (one cell, the
implementations paired in each run), each other implementation against BASE (default wggo-ts):
Gbit/s medians, the ratio of the medians, each run's own ratio, cores per Gbit/s medians.
  ratios.py [--base IMPL] FILE.json ..."""
import json, statistics, sys
from collections import defaultdict

args = sys.argv[1:]
base = "wggo-ts"
if args[:1] == ["--base"]:
    base, args = args[1], args[2:]
print("| cell | impl | runs | Gbit/s (median; runs) | / %s: of the medians | per run | cores per Gbit/s (impl / %s) |" % (base, base))
print("|---|---|---|---|---|---|---|")
for f in args:
    d = json.load(open(f))
    runs = defaultdict(dict)
    for r in d["results"]:
        if r.get("gbit_s"):
            runs[r["run"]][r["impl"]] = r
    impls = list(dict.fromkeys(i for k in sorted(runs) for i in runs[k]))
    cell = "%s %dP %s" % (d.get("mode", "?"), d["streams"], "reverse" if "server -> client" in d["direction"] or "b -> a" in d["direction"] else "forward")
    med = lambda i, key: statistics.median(runs[k][i][key] for k in sorted(runs) if i in runs[k])
    for i in impls:
        if i == base:
            continue
        rr = [runs[k][i]["gbit_s"] / runs[k][base]["gbit_s"] for k in sorted(runs) if i in runs[k] and base in runs[k]]
        g = [runs[k][i]["gbit_s"] for k in sorted(runs) if i in runs[k]]
        cpg = lambda j: statistics.median(runs[k][j]["vpn_cpu_percent"] / 100 / runs[k][j]["gbit_s"] for k in sorted(runs) if j in runs[k])
        print("| %s | %s | %d | %.3f (%s) | **%.2f** | %s | %.2f / %.2f |" % (
            cell, i, len(g), statistics.median(g), " ".join("%.2f" % x for x in g),
            statistics.median(g) / med(base, "gbit_s"), " ".join("%.2f" % x for x in rr), cpg(i), cpg(base)))
