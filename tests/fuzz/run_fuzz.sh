#!/usr/bin/env bash
# One libFuzzer harness for a short while: its committed corpus (if any) replayed, then RUNS
# mutations; new inputs go to a temporary directory, so the tree is left as it was. A crash,
# a sanitizer report or a leak fails the test.
#
# Usage: run_fuzz.sh <harness> <corpus dir or -> [runs=20000]
set -uo pipefail
exe=$(realpath "$1") corpus=$2 runs=${3:-20000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dirs=("$work")
[ "$corpus" != - ] && [ -d "$corpus" ] && dirs+=("$(realpath "$corpus")")
cd "$work" || exit 1            # crash-* files land here too
"$exe" -runs="$runs" -max_total_time=60 "${dirs[@]}" >"$work/log" 2>&1
rc=$?
tail -n 3 "$work/log"
# a clean end says how many runs it made
[ "$rc" = 0 ] && ! grep -q "^Done [0-9]* runs" "$work/log" && rc=1
exit "$rc"
