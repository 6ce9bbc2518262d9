#!/usr/bin/env python3
"""Smoke run of bench/pipeline.sh's program: a few thousand packets per case, W = 1 and 2,
two sizes. It must exit 0 (every packet out, in order, no drop) and print one JSON object of
the documented schema. No timing is judged.

Usage: pipeline_bench_smoke.py <tl-pipeline-bench>
"""
import json
import subprocess
import sys


def main():
    out = subprocess.run([sys.argv[1], "--packets", "5000", "--sizes", "64,1420", "--workers", "1,2", "--json"],
                         capture_output=True, text=True, timeout=300)
    fails = []
    if out.returncode != 0:
        fails.append("exit status %d: %s" % (out.returncode, out.stderr[-500:]))
    try:
        doc = json.loads(out.stdout)
    except ValueError:
        print("not ok: output is not one JSON object: %r" % out.stdout[-300:])
        return 1
    if not isinstance(doc.get("aead_gbps_1420"), (int, float)) or doc["aead_gbps_1420"] <= 0:
        fails.append("aead_gbps_1420 missing or not positive")
    if not isinstance(doc.get("cores"), int) or doc["cores"] < 1:
        fails.append("cores missing")
    want = {(d, s, w) for d in ("encap", "decap") for s in (64, 1420) for w in (1, 2)}
    got = set()
    for r in doc.get("results", []):
        if set(r) < {"dir", "size", "workers", "mpps", "gbps"}:
            fails.append("result lacks keys: %r" % r)
            continue
        if not (r["mpps"] > 0 and r["gbps"] > 0):
            fails.append("result not positive: %r" % r)
        if abs(r["gbps"] - r["mpps"] * 1e6 * r["size"] * 8 / 1e9) > 0.01 * r["gbps"] + 1e-3:
            fails.append("gbps does not match mpps x size: %r" % r)
        got.add((r["dir"], r["size"], r["workers"]))
    if got != want:
        fails.append("cases %r, expected %r" % (sorted(got), sorted(want)))
    for f in fails:
        print("not ok:", f)
    print("ok" if not fails else "%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
