#!/bin/sh
# The installed binaries are built hardened: PIE, full RELRO (GNU_RELRO + BIND_NOW), the stack
# protector and FORTIFY's checked functions (*_chk) referenced. Usage: test_hardening.sh BINARY...
set -u
fail=0
for bin in "$@"; do
	name=$(basename "$bin")
	hdr=$(readelf -h "$bin") || { echo "FAIL $name: readelf -h"; fail=1; continue; }
	phdr=$(readelf -lW "$bin")
	dyn=$(readelf -dW "$bin")
	syms=$(readelf -sW --dyn-syms "$bin")
	check() { # what, result
		if [ "$2" -eq 0 ]; then echo "ok   $name: $1"; else echo "FAIL $name: $1"; fail=1; fi
	}
	echo "$hdr" | grep -q 'Type:[[:space:]]*DYN'; check "PIE (ELF type DYN)" $?
	echo "$dyn" | grep -q '(FLAGS_1).*PIE'; check "PIE (FLAGS_1 PIE)" $?
	echo "$phdr" | grep -q 'GNU_RELRO'; check "GNU_RELRO segment" $?
	echo "$dyn" | grep -Eq '\(BIND_NOW\)|\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW'; check "BIND_NOW" $?
	echo "$syms" | grep -q '__stack_chk_fail'; check "__stack_chk_fail referenced" $?
	echo "$syms" | grep -Eq 'UND[[:space:]]+__[a-z_0-9]+_chk(@|$| )'; check "FORTIFY *_chk referenced" $?
done
exit $fail
