#!/bin/sh
# `meson install --destdir D` puts the binaries in sbindir, the XDP objects in libdir/tunless
# (the path tunlessd has compiled in after TUNLESS_BPF_DIR and the build tree) and the example
# configurations in the documentation; the installed tunlessd checks a configuration.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR PREFIX SBINDIR BPF_DIR EXAMPLES_DIR (dirs relative to PREFIX or absolute)
set -u
build=$1 src=$2 prefix=$3
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
sbin=$(abs "$4") bpf=$(abs "$5") ex=$(abs "$6")
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
check() { if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
meson install -C "$build" --no-rebuild --quiet --destdir "$d" >"$d.log" 2>&1
rc=$?; [ $rc -eq 0 ] || cat "$d.log"; rm -f "$d.log"
check "meson install --destdir" $rc
for f in "$sbin/tunlessd" "$sbin/tunlessctl"; do
	[ -x "$d$f" ]; check "$f installed, executable" $?
done
for f in tl_wan.bpf.o tl_lan.bpf.o; do
	[ -s "$d$bpf/$f" ]; check "$bpf/$f installed" $?
done
for f in gateway-a.yaml gateway-b.yaml host-a.yaml host-b.yaml roadwarrior.conf; do
	[ -f "$d$ex/$f" ]; check "$ex/$f installed" $?
done
[ -f "$d$prefix/lib/systemd/system/tunless@.service" ]; check "$prefix/lib/systemd/system/tunless@.service installed" $?
[ ! -e "$d/etc" ] && [ ! -e "$d$prefix/etc" ]; check "nothing installed under etc" $?
grep -qF "$bpf" "$d$sbin/tunlessd"; check "tunlessd has $bpf compiled in" $?
out=$(env -u TUNLESS_BPF_DIR "$d$sbin/tunlessd" --check -c "$src/configs/host-a.yaml" 2>&1)
check "installed tunlessd --check -c configs/host-a.yaml: $out" $?
out=$("$d$sbin/tunlessd" --check -c "$d$ex/gateway-a.yaml" 2>&1)
check "installed tunlessd --check -c (installed example) gateway-a.yaml: $out" $?
exit $fail
