#!/usr/bin/env python3
"""The NIC lab's table from bench/throughput.sh -m gateway JSONs (sitting-nic.sh): the runs of
one cell (streams, direction) may be spread over several files (nic-gateway-P1.json with -n 3,
nic-gateway-P1-x1.json, ... with -n 1); each run pairs the implementations measured in it.
Per cell: medians over every run, the ratio of the medians and each run's own ratio, cores per
Gbit/s (median of the runs'), VPN CPU, and the "other" CPU of the runs (min-max, median)."""
import json, statistics, sys
from collections import defaultdict

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

NAME = {"wggo": "wireguard-go"}
cells = defaultdict(list)   # (streams, direction) -> [run: {impl: result}]
for f in sys.argv[1:]:
    d = json.load(open(f))
    runs = defaultdict(dict)
    for r in d["results"]:
        if "gbit_s" in r:
            runs[r["run"]][r["impl"]] = r
    for k in sorted(runs):
        cells[(d["streams"], d["direction"])].append((f, runs[k]))

print("| streams | direction | runs | impl | Gbit/s | VPN CPU | cores per Gbit/s | other CPU | retransmits |")
print("|---|---|---|---|---|---|---|---|---|")
ratios = []
for (st, dr), runs in sorted(cells.items(), key=lambda c: (c[0][1], c[0][0])):
    impls = list(dict.fromkeys(i for _, r in runs for i in r))
    def col(i, k):
        return [r[i][k] for _, r in runs if i in r]
    for i in impls:
        cpg = [r[i]["vpn_cpu_percent"] / 100 / r[i]["gbit_s"] for _, r in runs if i in r]
        oth = col(i, "other_cpu_percent")
        print("| %d | %s | %d | %s | %.3f | %.0f %% | %.2f | %.0f-%.0f %% (median %.0f) | %s |" % (
            st, dr, len(col(i, "gbit_s")), NAME.get(i, i), med(col(i, "gbit_s")), med(col(i, "vpn_cpu_percent")),
            med(cpg), min(oth), max(oth), med(oth), " ".join(str(x) for x in col(i, "retransmits"))))
    for a, b in (("tunless-xdp", "wggo-ts"), ("tunless-xdp", "wggo"), ("tunless-udp", "wggo-ts"),
                 ("tunless-udp", "wggo"), ("wggo-ts", "wggo")):
        if a in impls and b in impls:
            per = [r[a]["gbit_s"] / r[b]["gbit_s"] for _, r in runs if a in r and b in r]
            ca = med([r[a]["vpn_cpu_percent"] / 100 / r[a]["gbit_s"] for _, r in runs if a in r])
            cb = med([r[b]["vpn_cpu_percent"] / 100 / r[b]["gbit_s"] for _, r in runs if b in r])
            ratios.append("| %d | %s | %s / %s | %.2f | %s | %d of %d | %.2f / %.2f |" % (
                st, dr, a, NAME.get(b, b), med(col(a, "gbit_s")) / med(col(b, "gbit_s")),
                " ".join("%.2f" % x for x in per), sum(x >= 1 for x in per), len(per), ca, cb))
print()
print("| streams | direction | ratio | of the medians | per run | runs >= 1.0 | cores per Gbit/s |")
print("|---|---|---|---|---|---|---|")
print("\n".join(ratios))
