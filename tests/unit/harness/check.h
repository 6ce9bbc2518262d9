/* Check counting shared by the unit tests that report with a message: CHECK(cond, fmt, ...)
 * prints "FAIL file:line: <message>" when cond is false; check_report() prints
 * "N passed, M failed" and gives the exit status. */
#ifndef TL_TEST_CHECK_H
#define TL_TEST_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (cond) {                                                   \
			passed++;                                             \
		} else {                                                      \
			failed++;                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                  \
			printf("\n");                                         \
		}                                                             \
	} while (0)

static inline int check_report(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif
