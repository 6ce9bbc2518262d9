#!/bin/sh
# `meson install --destdir D` puts the binaries in sbindir, the XDP objects in libdir/tunless
# (the path tunlessd has compiled in after TUNLESS_BPF_DIR and the build tree) and the example
# configurations in the documentation, the manual pages in mandir (each renders without a
# warning, as lintian renders them); the installed tunlessd checks a configuration.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR PREFIX SBINDIR BPF_DIR EXAMPLES_DIR MANDIR UNIT_DIR TMPFILES_DIR
# (dirs relative to PREFIX or absolute)
set -u
build=$1 src=$2 prefix=$3
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
sbin=$(abs "$4") bpf=$(abs "$5") ex=$(abs "$6") man=$(abs "${7:-share/man}") unit=$(abs "$8") tmpfiles=$(abs "$9")
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
[ -n "${7:-}" ] || echo "# manual pages not built (-Dman=disabled): not checked"
for f in ${7:+man8/tunlessd.8 man8/tunlessctl.8 man5/tunless.yaml.5}; do
	[ -s "$d$man/$f" ]; check "$man/$f installed" $?
	w=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$d$man/$f" 2>&1 >/dev/null)
	[ $? -eq 0 ] && [ -z "$w" ]; check "$man/$f renders without warnings${w:+: $w}" $?
	MANWIDTH=80 man -l "$d$man/$f" 2>/dev/null | grep -q '^NAME'; check "man -l $man/$f shows the page" $?
done
[ -f "$d$unit/tunless@.service" ]; check "$unit/tunless@.service installed" $?
grep -qx 'd /run/wireguard 0755 root root -' "$d$tmpfiles/tunless.conf" 2>/dev/null
check "$tmpfiles/tunless.conf installed (the shared socket directories)" $?
[ ! -e "$d/etc" ] && [ ! -e "$d$prefix/etc" ]; check "nothing installed under etc" $?
grep -qF "$bpf" "$d$sbin/tunlessd"; check "tunlessd has $bpf compiled in" $?
out=$(env -u TUNLESS_BPF_DIR "$d$sbin/tunlessd" --check -c "$src/configs/host-a.yaml" 2>&1)
check "installed tunlessd --check -c configs/host-a.yaml: $out" $?
out=$("$d$sbin/tunlessd" --check -c "$d$ex/gateway-a.yaml" 2>&1)
check "installed tunlessd --check -c (installed example) gateway-a.yaml: $out" $?
exit $fail
