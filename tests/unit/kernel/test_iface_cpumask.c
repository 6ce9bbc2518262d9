/* A CPU set turned into the mask rps_cpus takes (kernel/iface.c, host mode's RPS on the packet
 * port's end, over the daemon's CPUs): single CPUs, ranges and gaps, the 32-bit words past
 * CPU 31, the last CPU a cpu_set_t holds, an empty set and a buffer too small refused; an
 * empty set refused before any interface is looked at. No root, no interface written. */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "kernel/iface.h"

static int fails;

/* The set of the CPUs a .. b of each pair in cpus[n][2]. */
static cpu_set_t set_of(const int (*cpus)[2], size_t n)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	for (size_t i = 0; i < n; i++)
		for (int c = cpus[i][0]; c <= cpus[i][1]; c++)
			CPU_SET(c, &s);
	return s;
}

static void want_len(const char *what, const cpu_set_t *s, size_t len, int rc, const char *mask)
{
	char out[TL_CPU_MASK_LEN] = "?";
	int r = tl_cpu_set_mask(s, out, len);

	if (r != rc || (len > 0 && strcmp(out, rc == 0 ? mask : ""))) {
		printf("FAIL: %s (buffer of %zu): got %d \"%s\", want %d \"%s\"\n", what, len, r, out, rc,
		       rc == 0 ? mask : "");
		fails++;
	}
}

#define SET(...) set_of((const int[][2]){ __VA_ARGS__ }, sizeof((const int[][2]){ __VA_ARGS__ }) / sizeof(int[2]))
#define WANT(what, set, rc, mask)                                          \
	do {                                                               \
		cpu_set_t s_ = set;                                        \
		want_len(what, &s_, TL_CPU_MASK_LEN, rc, mask);            \
	} while (0)

int main(void)
{
	char words[TL_CPU_MASK_LEN];
	cpu_set_t s;

	WANT("CPU 0", SET({ 0, 0 }), 0, "1");
	WANT("CPUs 0-1", SET({ 0, 1 }), 0, "3");
	WANT("CPUs 0-3 and 8", SET({ 0, 3 }, { 8, 8 }), 0, "10f");
	WANT("CPUs 1, 3, 5-6", SET({ 1, 1 }, { 3, 3 }, { 5, 6 }), 0, "6a");
	WANT("CPU 1 alone (no CPU 0)", SET({ 1, 1 }), 0, "2");
	WANT("CPUs 0-31", SET({ 0, 31 }), 0, "ffffffff");
	WANT("CPU 31", SET({ 31, 31 }), 0, "80000000");
	WANT("CPU 32", SET({ 32, 32 }), 0, "1,00000000");
	WANT("CPUs 0-32", SET({ 0, 32 }), 0, "1,ffffffff");
	WANT("CPUs 31-32", SET({ 31, 32 }), 0, "1,80000000");
	WANT("CPU 63", SET({ 63, 63 }), 0, "80000000,00000000");
	WANT("CPU 64", SET({ 64, 64 }), 0, "1,00000000,00000000");
	WANT("CPUs 2, 40-41, 70", SET({ 2, 2 }, { 40, 41 }, { 70, 70 }), 0, "40,00000300,00000004");

	/* The last CPU a cpu_set_t holds, and all of them: TL_CPU_MASK_LEN is enough. */
	CPU_ZERO(&s);
	CPU_SET(CPU_SETSIZE - 1, &s);
	snprintf(words, sizeof(words), "80000000");
	for (int g = CPU_SETSIZE / 32 - 1; g > 0; g--)
		strcat(words, ",00000000");
	want_len("the last CPU of a cpu_set_t", &s, sizeof(words), 0, words);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &s);
	words[0] = '\0';
	for (int g = CPU_SETSIZE / 32 - 1; g >= 0; g--)
		strcat(words, g == CPU_SETSIZE / 32 - 1 ? "ffffffff" : ",ffffffff");
	want_len("every CPU of a cpu_set_t", &s, sizeof(words), 0, words);

	CPU_ZERO(&s);
	want_len("no CPU", &s, TL_CPU_MASK_LEN, -EINVAL, NULL);
	want_len("no CPU, no buffer", &s, 0, -EINVAL, NULL);

	/* "1,ffffffff" is 10 characters: 11 with its NUL fits, 10 and less do not. */
	s = SET({ 0, 32 });
	want_len("CPUs 0-32", &s, 11, 0, "1,ffffffff");
	want_len("CPUs 0-32", &s, 10, -ENOSPC, NULL);
	want_len("CPUs 0-32", &s, 3, -ENOSPC, NULL);
	want_len("CPUs 0-32", &s, 1, -ENOSPC, NULL);
	if (tl_cpu_set_mask(&s, NULL, 0) != -ENOSPC) {
		printf("FAIL: a buffer of 0 bytes is not refused with -ENOSPC\n");
		fails++;
	}

	/* An empty set is refused before the interface is looked at (an interface that does not
	 * exist: nothing is ever written). */
	CPU_ZERO(&s);
	if (tl_iface_rps_set("tl-no-such-if", &s) != -EINVAL) {
		printf("FAIL: RPS over no CPU is not refused with -EINVAL before the interface is looked at\n");
		fails++;
	}
	s = SET({ 0, 0 });
	if (tl_iface_rps_set("tl-no-such-if", &s) != -ENOENT) {
		printf("FAIL: RPS on an interface that does not exist is not -ENOENT\n");
		fails++;
	}
	if (!fails)
		printf("cpu set masks ok\n");
	return fails != 0;
}
