/* Check counting for the unit tests that report one line per check, TAP style: check()
 * prints "ok <what>" or "not ok <what>: <detail>"; tap_report() prints "N passed, M failed"
 * and gives the exit status. (check.h is the other style: FAIL lines only.) */
#ifndef TL_TEST_TAP_H
#define TL_TEST_TAP_H

#include <stdbool.h>
#include <stdio.h>

static unsigned passed, failed;

static inline void check(bool ok, const char *what, const char *detail)
{
	if (ok) {
		passed++;
		printf("ok %s\n", what);
	} else {
		failed++;
		printf("not ok %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	}
}

static inline int tap_report(void)
{
	printf("%u passed, %u failed\n", passed, failed);
	return failed != 0;
}

#endif
