/* Minimal check helpers shared by the crypto unit tests: count checks, report failures
 * with their line, end with "N passed, M failed". */
#ifndef TL_CRYPTO_CHECK_H
#define TL_CRYPTO_CHECK_H

#include <stdio.h>
#include <string.h>

static unsigned tl_checks_passed, tl_checks_failed;

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (cond) {                                                               \
			tl_checks_passed++;                                               \
		} else {                                                                  \
			tl_checks_failed++;                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                         \
	} while (0)

#define CHECK_MEM(a, b, n) CHECK(memcmp((a), (b), (n)) == 0)

static inline int tl_checks_report(void)
{
	printf("%u passed, %u failed\n", tl_checks_passed, tl_checks_failed);
	return tl_checks_failed ? 1 : 0;
}

/* Deterministic generator for test inputs (xorshift64*), never for keys in production. */
static inline unsigned long long tl_test_rand(unsigned long long *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static inline void tl_test_fill(unsigned long long *s, void *buf, size_t len)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(tl_test_rand(s) >> 56);
}

static inline void tl_hex(unsigned char *out, const char *hex)
{
	for (size_t i = 0; hex[2 * i]; i++) {
		unsigned v;

		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (unsigned char)v;
	}
}

#endif
