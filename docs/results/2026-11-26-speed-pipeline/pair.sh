#!/usr/bin/env bash
# pair.sh A B runs [packets]: A and B interleaved (A B A B ...), W=1, 1420 B, both directions;
# prints per run the CPU-time ratio W1/AEAD per dir and the wall rate, then medians.
A=$1 B=$2 R=${3:-3} P=${4:-100000}
for i in $(seq "$R"); do
  for x in A B; do
    bin=${!x}
    echo "$x $(cut -d' ' -f1 /proc/loadavg) $("$bin" --sizes 1420 --workers 1 --packets "$P" --json)"
  done
done | python3 -c '
import sys, json, statistics as st
rows = {"A": [], "B": []}
for line in sys.stdin:
    tag, load, js = line.split(" ", 2)
    d = json.loads(js)
    r = {x["dir"]: x for x in d["results"]}
    row = (float(load), r["encap"]["owner_cpu_gbps"] / d["aead_cpu_gbps_1420"], r["decap"]["owner_cpu_gbps"] / d["aead_cpu_gbps_1420"],
           r["encap"]["owner_cpu_gbps"], r["decap"]["owner_cpu_gbps"], d["aead_cpu_gbps_1420"], r["encap"]["gbps"], r["decap"]["gbps"])
    rows[tag].append(row)
    print(tag, "load %.2f  encap %.3f decap %.3f  (cpu Gbit/s encap %.2f decap %.2f aead %.2f; wall encap %.2f decap %.2f)" % row)
for tag in "AB":
    m = [st.median(c) for c in zip(*rows[tag])]
    print("median", tag, "encap W1/AEAD %.3f decap %.3f  cpu Gbit/s encap %.2f decap %.2f aead %.2f" % tuple(m[1:6]))
ma = [st.median(c) for c in zip(*rows["A"])]; mb = [st.median(c) for c in zip(*rows["B"])]
print("B/A (cpu Gbit/s): encap %.3f decap %.3f" % (mb[3] / ma[3], mb[4] / ma[4]))
'
