#!/bin/sh
# Debian package: builds the committed tree (git archive HEAD, debian/ included) with
# dpkg-buildpackage -b -us -uc in a temp dir (DEB_BUILD_OPTIONS=nocheck unless CHECK=1: the
# unit suite runs on its own), then checks with dpkg -c that the .deb holds the binaries, XDP
# objects, unit, tmpfiles.d file, manual pages and examples and nothing under /etc, that the
# packaged binaries pass tests/unit/deploy/test_hardening.sh and check a packaged example, and that
# lintian reports no error or warning (the remaining remarks are justified in
# debian/tunless.lintian-overrides). Uncommitted changes are not in the package. Needs
# debhelper, lintian, git.
# Usage: tests/deb/test_deb.sh (from anywhere); "N passed, N failed" at the end.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
d=$(mktemp -d /tmp/tunless-deb.XXXXXX)
trap 'rm -rf "$d"' EXIT
pass=0 fail=0
check() { if [ "$2" -eq 0 ]; then echo "ok   $1"; pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); fi; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
git -C "$root" archive --prefix=tunless/ HEAD | tar -x -C "$d"
check "git archive HEAD" $?
opts=nocheck
[ "${CHECK:-0}" = 1 ] && opts=
(cd "$d/tunless" && DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -b -us -uc >"$d/build.log" 2>&1)
rc=$?; [ $rc -eq 0 ] || tail -30 "$d/build.log"
check "dpkg-buildpackage -b -us -uc" $rc
deb=$(ls "$d"/tunless_*.deb 2>/dev/null | head -1)
[ -n "$deb" ]; check "tunless_*.deb built" $?
[ -n "$deb" ] || finish
list=$(dpkg -c "$deb" | awk '{ print $6 }')
# The unit goes where systemd.pc says: /lib/systemd/system on Debian 12, /usr/lib/... on 13.
echo "$list" | grep -Eqx '\./(usr/)?lib/systemd/system/tunless@\.service'; check "dpkg -c: systemd unit tunless@.service" $?
for f in ./usr/sbin/tunlessd ./usr/sbin/tunlessctl \
	./usr/lib/tmpfiles.d/tunless.conf \
	./usr/share/man/man8/tunlessd.8.gz ./usr/share/man/man8/tunlessctl.8.gz \
	./usr/share/man/man5/tunless.yaml.5.gz \
	./usr/share/doc/tunless/examples/host-a.yaml ./usr/share/doc/tunless/examples/gateway-a.yaml \
	./usr/share/doc/tunless/examples/roadwarrior.conf ./usr/share/doc/tunless/copyright; do
	echo "$list" | grep -qx "$f"; check "dpkg -c: $f" $?
done
for f in tl_wan.bpf.o tl_lan.bpf.o tl_lan_tc.bpf.o; do
	echo "$list" | grep -Eq "^\./usr/lib/[^/]+/tunless/$f\$"; check "dpkg -c: BPF object libdir/tunless/$f" $?
done
echo "$list" | grep -q '^\./etc/'; [ $? -ne 0 ]; check "nothing under /etc" $?
dpkg-deb -f "$deb" Depends | grep -q 'libdpdk\|librte'; check "Depends names the DPDK libraries (shlibs)" $?
dpkg -x "$deb" "$d/x"
"$root/tests/unit/deploy/test_hardening.sh" "$d/x/usr/sbin/tunlessd" "$d/x/usr/sbin/tunlessctl" >/dev/null
check "packaged binaries hardened (test_hardening.sh)" $?
"$d/x/usr/sbin/tunlessd" --check -c "$d/x/usr/share/doc/tunless/examples/host-a.yaml" >/dev/null
check "packaged tunlessd --check -c (packaged) host-a.yaml" $?
out=$(cd "$d" && lintian --fail-on error,warning --display-info tunless_*.changes 2>&1)
rc=$?
echo "$out" | grep -v '^running with root' | sed 's/^/#   /'
check "lintian: no error or warning" $rc
finish
