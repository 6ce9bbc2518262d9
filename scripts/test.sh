#!/usr/bin/env bash
# Runs every tunless test: installs what is missing (scripts/setup.sh), builds with warnings
# as errors (also a release build), runs the unit tests (also under ASan+UBSan), builds and
# checks the Debian package, builds the libFuzzer harnesses with clang and runs each briefly, and runs the
# network-namespace lab tests (root; holding the lock file $TL_LAB_LOCK while they run, when
# it is set, as other lab users of the machine do). Ends with one line "tests: N passed, N failed".
#
# Usage: scripts/test.sh [--unit-only]
# Env: TL_LAB_TESTS  names of lab tests to run instead of all of them (space-separated; the
#                    Debian 13 run in CI uses it, scripts/test-debian13.sh --ci)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
unit_only=0
[ "${1:-}" = "--unit-only" ] && unit_only=1

scripts/setup.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh

configure() {   # dir, options...
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

passed=0 failed=0
run_suite() {   # dir, suite, [meson test options...]
	local dir=$1 suite=$2 log
	shift 2
	log=$(mktemp)
	if meson test -C "$dir" --suite "$suite" --print-errorlogs --num-processes 1 "$@" 2>&1 | tee "$log"; then :; fi
	# Each failed check by name with the notes ("# ..." lines, up to 6) that follow it
	# (--print-errorlogs shows only a log's last 100 lines), marked so that .ci/run can repeat
	# them at its end.
	if [ -f "$dir/meson-logs/testlog.txt" ]; then
		awk '/^(not ok |FAIL )/ { print; n = 6; next } n > 0 && /^# / { print; n--; next } { n = 0 }' \
			"$dir/meson-logs/testlog.txt" | head -n 120 | sed "s|^|failed check ($suite): |" || true
	fi
	passed=$((passed + $(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -n1)))
	failed=$((failed + $(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$log" | tail -n1)))
	failed=$((failed + $(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$log" | tail -n1)))
	# A skipped test is a failure here: nothing may disappear from the run quietly.
	failed=$((failed + $(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$log" | tail -n1)))
	rm -f "$log"
}

configure build -Dwerror=true
ninja -C build
run_suite build unit
# The Debian package (dpkg-buildpackage of the committed tree, dpkg -c, lintian).
run_suite build deb

configure build-san -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dintegration=false
ninja -C build-san
run_suite build-san unit

# The release build (-O3) with warnings as errors: what users build; GCC's -O3 sees paths
# (-Warray-bounds and others) that the -O2 builds above do not.
configure build-rel -Dbuildtype=release -Dwerror=true -Dintegration=false
ninja -C build-rel

# The fuzz harnesses (clang, libFuzzer): only they are built there, then each runs its corpus
# and 20 000 mutations.
CC=clang configure build-fuzz -Dwerror=true -Dfuzz=true -Dintegration=false
ninja -C build-fuzz $(ninja -C build-fuzz -t targets all | grep -o '^tests/fuzz/fuzz_[a-z]*:' | tr -d : | sort -u)
run_suite build-fuzz fuzz --no-rebuild

if [ "$unit_only" = 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "test.sh: the lab tests need root (network namespaces, XDP)" >&2
		failed=$((failed + 1))
	elif [ -n "${TL_LAB_LOCK:-}" ]; then
		exec 9>>"$TL_LAB_LOCK"
		echo "test.sh: waiting for the lab lock $TL_LAB_LOCK"
		flock 9
		# Held here for the whole suite: the tests' own lab users (bench/) must not wait for it.
		lock=$TL_LAB_LOCK
		unset TL_LAB_LOCK
		run_suite build integration ${TL_LAB_TESTS:-}
		exec 9>&-
		TL_LAB_LOCK=$lock
	else
		run_suite build integration ${TL_LAB_TESTS:-}
	fi
fi

echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
