#!/usr/bin/env bash
# The dataplane with the kernel taken out: one tunnel through the real worker code over DPDK
# net_ring ports, encap and decap, 64/512/1420-byte inner packets, W = 1, 2 and every core
# (up to 4), beside the raw one-core ChaCha20-Poly1305 rate measured in the same run
# (bench/pipeline.c says how). Prints a table with the floors (one worker >= 0.8x the raw
# AEAD at 1420 B; W=2 >= 1.8x W=1) as PASS/FAIL, or with --json one object:
#   {"aead_gbps_1420": x, "aead_cpu_gbps_1420": x, "cores": n, "packets": n,
#    "results": [{"dir": "encap"|"decap", "size": b, "workers": w, "mpps": x, "gbps": y,
#                 "owner_cpu_gbps": z, "owner_crypto_share": s}, ...],
#    "aead_ns_per_packet": {...}, "aead_cpu_ns_per_packet": {...}}
# Not a test: no root, no network; the machine's other work shows in the wall-clock numbers.
# The rates over CPU time (the owner thread's; the AEAD loop's) do not count the time the
# scheduler gave other tasks, so that the W=1 / raw AEAD ratio over CPU time is the one to
# compare on shared cores (with W > 1 the owner's CPU time is not the case's cost).
#
# Usage: bench/pipeline.sh [--json] [--packets N] [--sizes 64,512,1420] [--workers 1,2,...]
#                          [--dirs encap,decap]
# Env: TUNLESS_BUILD (meson build dir; the program is brought up to date there first).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/env.sh
. "$ROOT/scripts/env.sh"
BIN=$TUNLESS_BUILD/tests/unit/tl-pipeline-bench
[ -d "$TUNLESS_BUILD" ] || meson setup "$TUNLESS_BUILD" "$ROOT" >&2
ninja -C "$TUNLESS_BUILD" tests/unit/tl-pipeline-bench >/dev/null || { echo "bench/pipeline.sh: build failed" >&2; exit 1; }
if [[ " $* " != *" --json "* ]]; then
	echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (the benchmark needs a core per worker)"
fi
exec "$BIN" "$@"
