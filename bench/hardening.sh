#!/usr/bin/env bash
# What the hardened build costs on the fast path: bench/pipeline.sh (the real worker code over
# net_ring ports, no kernel) with the default build (PIE, stack protector, FORTIFY, CET, full
# RELRO) and with -Dhardening=false -Db_pie=false, alternated ROUNDS times in one run so the
# machine's other load falls on both alike. Prints one line per case (median Mpps of each
# build, the ratio hardened/plain) and, with --json, one object with every run.
# Not a test. Run it under the lab lock on a shared machine.
#
# Usage: bench/hardening.sh [--rounds N] [--packets N] [--sizes 64,512,1420] [--workers 1,2] [--json]
# Env: BENCH_BUILD_DIR (default /tmp/tunless-bench-hardening): the two builds go there.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=5 packets=1000000 sizes=64,512,1420 workers=1,2 json=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--packets) packets=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
	--json) json=1; shift ;;
	*) sed -n '2,11p' "$0" >&2; exit 2 ;;
	esac
done
dir=${BENCH_BUILD_DIR:-/tmp/tunless-bench-hardening}
declare -A opts=([hardened]="" [plain]="-Dhardening=false -Db_pie=false")
for b in hardened plain; do
	# shellcheck disable=SC2086
	[ -f "$dir/$b/build.ninja" ] || meson setup "$dir/$b" "$ROOT" -Dintegration=false ${opts[$b]} >/dev/null
	ninja -C "$dir/$b" tests/unit/tl-pipeline-bench >/dev/null
done
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for ((i = 1; i <= rounds; i++)); do
	for b in hardened plain; do
		printf '{"build": "%s", "round": %d, "run": ' "$b" "$i" >>"$runs"
		TUNLESS_BUILD=$dir/$b "$ROOT/bench/pipeline.sh" --json --packets "$packets" --sizes "$sizes" \
			--workers "$workers" | tr -d '\n' >>"$runs"
		echo '}' >>"$runs"
	done
done
python3 - "$runs" "$json" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
cases = {}
for r in runs:
    for x in r["run"]["results"]:
        cases.setdefault((x["dir"], x["size"], x["workers"]), {}).setdefault(r["build"], []).append(x["mpps"])
out = []
for (d, s, w), v in sorted(cases.items()):
    h, p = statistics.median(v["hardened"]), statistics.median(v["plain"])
    out.append({"dir": d, "size": s, "workers": w, "hardened_mpps": h, "plain_mpps": p, "ratio": h / p,
                "hardened_runs": v["hardened"], "plain_runs": v["plain"]})
if sys.argv[2] == "1":
    print(json.dumps({"rounds": len(runs) // 2, "cases": out, "runs": runs}))
else:
    print("%-6s %5s %2s  %14s  %14s  %s" % ("dir", "size", "W", "hardened Mpps", "plain Mpps", "hardened/plain"))
    for c in out:
        print("%-6s %5d %2d  %14.4f  %14.4f  %.3f" % (c["dir"], c["size"], c["workers"], c["hardened_mpps"],
                                                   c["plain_mpps"], c["ratio"]))
    print("medians of %d alternated runs per build; load average at the end: %s" % (len(runs) // 2, sys.argv[3]))
EOF
