#!/usr/bin/env bash
# prof.sh BIN DIR OUT: perf record -g of the timed stretches of W=1 1420 B, direction DIR
# (BIN: a build's tests/unit/tl-pipeline-bench; run as root for perf).
T=$(mktemp -d)
BIN=$1 DIR=$2 OUT=$3
mkfifo "$T/ctl" "$T/ack"
TL_BENCH_PERF_CTL=$T/ctl TL_BENCH_PERF_ACK=$T/ack \
  perf record -g -D -1 --control "fifo:$T/ctl,$T/ack" -o "$OUT.data" \
  "$BIN" --sizes 1420 --workers 1 --packets 300000 --dirs "$DIR" > "$OUT.bench.txt" 2>&1
perf report -i "$OUT.data" --no-children --stdio -g none --percent-limit 0.4 2>/dev/null | grep -E '^ +[0-9]+\.[0-9]+%' > "$OUT.top.txt"
perf report -i "$OUT.data" --no-children --stdio --sort dso -g none 2>/dev/null | grep -E '^ +[0-9]+\.[0-9]+%' > "$OUT.dso.txt"
rm -r "$T"
