#!/bin/sh
# Debian package: builds the committed tree (git archive HEAD, debian/ included) with
# dpkg-buildpackage -b -us -uc in a temp dir (DEB_BUILD_OPTIONS=nocheck unless CHECK=1), then
# checks with dpkg -c that the .deb holds the binaries, XDP objects, unit and examples, and
# that the packaged binaries pass tests/unit/test_hardening.sh. Needs debhelper. Slow: not in
# the meson suites. Usage: tests/deb/test_deb.sh (from the source tree)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
d=$(mktemp -d /tmp/tunless-deb.XXXXXX)
trap 'rm -rf "$d"' EXIT
fail=0
check() { if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
git -C "$root" archive --prefix=tunless/ HEAD | tar -x -C "$d"
opts=nocheck
[ "${CHECK:-0}" = 1 ] && opts=
(cd "$d/tunless" && DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -b -us -uc >"$d/build.log" 2>&1)
rc=$?; [ $rc -eq 0 ] || tail -30 "$d/build.log"
check "dpkg-buildpackage -b -us -uc" $rc
deb=$(ls "$d"/tunless_*.deb 2>/dev/null | head -1)
[ -n "$deb" ]; check "tunless_*.deb built" $?
[ -n "$deb" ] || exit 1
list=$(dpkg -c "$deb" | awk '{ print $6 }')
for f in ./usr/sbin/tunlessd ./usr/sbin/tunlessctl ./usr/lib/systemd/system/tunless@.service \
	./usr/share/doc/tunless/examples/host-a.yaml ./usr/share/doc/tunless/copyright; do
	echo "$list" | grep -qx "$f"; check "dpkg -c: $f" $?
done
echo "$list" | grep -Eq '^\./usr/lib/[^/]+/tunless/tl_wan\.bpf\.o$'; check "dpkg -c: XDP objects in libdir/tunless" $?
echo "$list" | grep -q '^\./etc/'; [ $? -ne 0 ]; check "nothing under /etc" $?
dpkg -x "$deb" "$d/x"
"$root/tests/unit/test_hardening.sh" "$d/x/usr/sbin/tunlessd" "$d/x/usr/sbin/tunlessctl" >/dev/null
check "packaged binaries hardened (test_hardening.sh)" $?
"$d/x/usr/sbin/tunlessd" --check -c "$d/x/usr/share/doc/tunless/examples/host-a.yaml" >/dev/null
check "packaged tunlessd --check -c (packaged) host-a.yaml" $?
exit $fail
