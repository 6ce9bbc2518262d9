#!/usr/bin/env bash
# Broken configurations: tunlessd exits 2 with exactly one line `tunlessd: FILE:LINE: FIELD: WHY`
# on stderr, nothing on stdout, and starts nothing: no new interface, no XDP program, no DPDK
# runtime directory, no UAPI socket. `--check` on a good file prints OK, exits 0, starts nothing.
#
#   ${P}-cfg   veth-a 10.99.0.1 <──> veth-b 10.99.0.2 ${P}-peer    (interfaces the configs could name)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${TUNLESS_BUILD:-$ROOT/build}
TUNLESSD=$BUILD/src/daemon/tunlessd
BAD_DIR=$ROOT/tests/unit/config/configs/bad
# shellcheck source=lab.sh
. "$HERE/lab.sh"

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); printf 'ok %s\n' "$*"; }
nok() { FAIL=$((FAIL + 1)); printf 'not ok %s\n' "$*"; }
finish() {
	printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	[ "$FAIL" -eq 0 ]
}

[ -x "$TUNLESSD" ] || { echo "not ok tunlessd not built at $TUNLESSD"; exit 1; }
START=$SECONDS
P=bc$$
lab_init "$P"
lab_ns_add cfg
lab_ns_add peer
lab_veth cfg veth-a peer veth-b
lab_addr cfg veth-a 10.99.0.1/24 fd99::1/64
ip -n "$P-cfg" link add eth0 type dummy && ip -n "$P-cfg" link set eth0 up

# What the namespace looks like: links (with any XDP program), files the daemon would make.
snapshot() { # snapshot <instance name>
	ip -n "$P-cfg" -d -o link show | sed 's/ \(tx\|rx\)_\?[a-z_]*queues [0-9]*//g' | awk '{ $1 = ""; print }' | sort
	ls -d "/var/run/dpdk/tunless-$1" 2>/dev/null
	ls "$LAB_DIR/$P-cfg/wireguard" 2>/dev/null
}
config_name() { sed -n 's/^name:[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$1" | head -n 1; }

# run_bad <file>: exit 2, one well-formed line on stderr, nothing on stdout, nothing started
run_bad() {
	local f=$1 name base out err rc before after lines
	base=$(basename "$f")
	name=$(config_name "$f")
	before=$(snapshot "${name:-none}")
	out=$LAB_DIR/out err=$LAB_DIR/err
	(cd "$ROOT" && timeout 20 ip netns exec "$P-cfg" sh -c 'mount --bind "$0" /run/wireguard && exec "$@"' \
		"$LAB_DIR/$P-cfg/wireguard" "$TUNLESSD" -c "$f") >"$out" 2>"$err"
	rc=$?
	after=$(snapshot "${name:-none}")
	lines=$(wc -l <"$err")
	if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$out" ] &&
		grep -Eq "^tunlessd: $(printf '%s' "$f" | sed 's/[.[\*^$]/\\&/g'):[0-9]+: [^ :][^ ]*: .+" "$err" &&
		[ "$before" = "$after" ]; then
		ok "$base: exit 2, one line: $(cat "$err")"
	else
		nok "$base: exit $rc (want 2), $lines stderr line(s) (want 1), stdout $(wc -c <"$out") bytes"
		sed 's/^/#   stderr: /' "$err" | head -n 5
		[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after") | sed 's/^/#   changed: /'
	fi
}

mkdir -p "$LAB_DIR/$P-cfg/wireguard"
for f in "$BAD_DIR"/*.yaml; do
	run_bad "tests/unit/config/configs/bad/$(basename "$f")"
done
# absolute paths are reported as given, too
run_bad "$BAD_DIR/bad_mode.yaml"

# a file that does not exist, and one that is not YAML
printf 'name: x\n\tmode: [\n' >"$LAB_DIR/tabs.yaml"
run_bad "$LAB_DIR/tabs.yaml"
(cd "$ROOT" && ip netns exec "$P-cfg" "$TUNLESSD" -c "$LAB_DIR/nope.yaml") >/dev/null 2>"$LAB_DIR/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$LAB_DIR/err")" -eq 1 ]; then ok "missing file: exit 2, one line: $(cat "$LAB_DIR/err")"; else nok "missing file: exit $rc, $(wc -l <"$LAB_DIR/err") line(s)"; fi

# --check on good files: OK on stdout, exit 0, nothing started (unique names: other tests
# may be running tla/tlb on this machine)
for src in configs/host-a.yaml configs/host-b.yaml configs/gateway-a.yaml; do
	[ -f "$ROOT/$src" ] || continue
	name=bc$$$(basename "$src" .yaml | tr -dc 'ab' | tail -c 1)
	name=${name:0:15}
	sed "s/^name:.*/name: $name/" "$ROOT/$src" >"$LAB_DIR/$(basename "$src")"
	chmod 600 "$LAB_DIR/$(basename "$src")"   # it holds its key inline: only then is --check silent
	before=$(snapshot "$name")
	out=$(ip netns exec "$P-cfg" "$TUNLESSD" -c "$LAB_DIR/$(basename "$src")" --check 2>"$LAB_DIR/err")
	rc=$?
	after=$(snapshot "$name")
	if [ $rc -eq 0 ] && printf '%s' "$out" | grep -q 'OK' && [ ! -s "$LAB_DIR/err" ] && [ "$before" = "$after" ]; then
		ok "--check $src: exit 0, '$out', nothing started"
	else
		nok "--check $src: exit $rc, stdout '$out', stderr '$(head -c 200 "$LAB_DIR/err")'"
	fi
done
# As checked out: stdout says OK; stderr warns about the inline key exactly when the file is
# readable by group or others (a checkout under umask 022 is), and is empty otherwise.
out=$(cd "$ROOT" && "$TUNLESSD" -c configs/host-a.yaml --check 2>"$LAB_DIR/err")
rc=$?
if [ $(( 0$(stat -c %a "$ROOT/configs/host-a.yaml") & 077 )) -ne 0 ]; then
	warned=$(grep -c '^tunlessd: warning: configs/host-a.yaml:[0-9]*: private_key: the file is accessible to group or others' "$LAB_DIR/err")
else
	warned=$(wc -l <"$LAB_DIR/err")
	[ "$warned" -eq 0 ] && warned=1 || warned=0
fi
if [ $rc -eq 0 ] && [ "$out" = "configs/host-a.yaml: configuration OK" ] && [ "$warned" -eq 1 ] && [ "$(wc -l <"$LAB_DIR/err")" -le 1 ]; then
	ok "--check configs/host-a.yaml as given: '$out', mode $(stat -c %a "$ROOT/configs/host-a.yaml"), the key-mode warning as the mode asks"
else
	nok "--check configs/host-a.yaml: exit $rc, '$out', stderr '$(head -c 300 "$LAB_DIR/err")'"
fi
out=$(cd "$ROOT" && "$TUNLESSD" -c tests/unit/config/configs/bad/bad_mode.yaml --check 2>&1)
rc=$?
if [ $rc -eq 2 ]; then ok "--check on a bad file: exit 2"; else nok "--check on a bad file: exit $rc ($out)"; fi

if [ -z "$(ip -n "$P-cfg" -d link show | grep 'prog/xdp')" ]; then ok "no XDP program anywhere in $P-cfg"; else nok "XDP program found in $P-cfg"; fi
echo "# runtime $((SECONDS - START)) s"
finish
