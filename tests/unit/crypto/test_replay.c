/* tl_replay against a naive model: the set of accepted counters and the greatest one.
 * Model (what Linux WireGuard accepts): a counter is accepted iff it is below the limit,
 * was never accepted before, and is at most TL_REPLAY_WINDOW (8128) behind the greatest
 * accepted counter. Fixed seeds: deterministic. */
#include <stdint.h>
#include <stdlib.h>

#include "crypto/replay.h"
#include "crypto_check.h"

#define REJECT_AFTER_MESSAGES (UINT64_MAX - (1ull << 13))   /* 2^64 - 2^13 - 1 */
#define SEQUENCES 200
#define OPS 5000
#define SET_SLOTS 65536   /* power of two, well above the counters one run inserts */

struct model {
	uint64_t slot[SET_SLOTS];
	uint8_t used[SET_SLOTS];
	uint64_t greatest;
	bool any;
};

static size_t model_find(const struct model *m, uint64_t c)
{
	size_t i = (size_t)((c * 0x9e3779b97f4a7c15ull) >> 50) & (SET_SLOTS - 1);

	while (m->used[i] && m->slot[i] != c)
		i = (i + 1) & (SET_SLOTS - 1);
	return i;
}

static bool model_check(struct model *m, uint64_t c, uint64_t limit)
{
	size_t i;

	if (c >= limit)
		return false;
	if (m->any && c < m->greatest && m->greatest - c > TL_REPLAY_WINDOW)
		return false;
	i = model_find(m, c);
	if (m->used[i])
		return false;
	m->used[i] = 1;
	m->slot[i] = c;
	if (!m->any || c > m->greatest)
		m->greatest = c;
	m->any = true;
	return true;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* One counter from a mix of traffic shapes around the current greatest. */
static uint64_t next_counter(unsigned long long *s, const struct model *m, uint64_t *history,
			     size_t n, uint64_t limit)
{
	uint64_t g = m->any ? m->greatest : 0, r = tl_test_rand(s);

	switch (r % 16) {
	case 0: case 1: case 2: case 3: case 4:
		return add_sat(g, 1);                                /* in order */
	case 5: case 6: case 7:
		return sub_sat(g, tl_test_rand(s) % 8200);          /* reordered around the edge */
	case 8:
		return sub_sat(g, tl_test_rand(s) % 64);            /* just behind */
	case 9:
		return add_sat(g, 1 + tl_test_rand(s) % 200);       /* small gap */
	case 10:
		return add_sat(g, 8000 + tl_test_rand(s) % 400);    /* around one window ahead */
	case 11:
		return add_sat(g, 8193 + tl_test_rand(s) % 100000); /* far jump */
	case 12:
		return sub_sat(g, 8129 + tl_test_rand(s) % 1000000); /* very old */
	case 13:
		return n ? history[tl_test_rand(s) % n] : 0;         /* duplicate */
	case 14:
		return limit - 4 + tl_test_rand(s) % 8;              /* at the limit */
	default:
		return sub_sat(g, 8120 + tl_test_rand(s) % 16);     /* window boundary */
	}
}

static void run_sequence(unsigned seq, struct model *m, uint64_t *history)
{
	unsigned long long s = 0x5eed0000ull + seq;
	uint64_t limit = seq % 5 == 4 ? UINT64_MAX : REJECT_AFTER_MESSAGES;
	struct tl_replay r;
	unsigned agree = 0, accepted = 0;
	size_t n = 0;

	memset(m, 0, sizeof(*m));
	tl_replay_init(&r);
	/* start at zero, somewhere random, or close to the limit */
	if (seq % 3 == 1)
		model_check(m, tl_test_rand(&s) >> 2, limit);
	else if (seq % 3 == 2)
		model_check(m, limit - 1 - tl_test_rand(&s) % 30000, limit);
	if (m->any)
		(void)tl_replay_check(&r, m->greatest, limit);
	for (unsigned op = 0; op < OPS; op++) {
		uint64_t c = next_counter(&s, m, history, n, limit);
		bool want = model_check(m, c, limit), got = tl_replay_check(&r, c, limit);

		agree += want == got;
		accepted += got;
		history[n++] = c;
		if (want != got && agree == op)
			fprintf(stderr, "seq %u op %u counter %llu: model %d, window %d\n", seq, op,
				(unsigned long long)c, want, got);
	}
	CHECK(agree == OPS);
	CHECK(accepted > 0);
}

static void test_edges(void)
{
	struct tl_replay r;

	tl_replay_init(&r);
	CHECK(tl_replay_check(&r, 0, REJECT_AFTER_MESSAGES));
	CHECK(!tl_replay_check(&r, 0, REJECT_AFTER_MESSAGES));
	CHECK(tl_replay_check(&r, 10000, REJECT_AFTER_MESSAGES));
	CHECK(!tl_replay_check(&r, 10000 - TL_REPLAY_WINDOW - 1, REJECT_AFTER_MESSAGES));
	CHECK(tl_replay_check(&r, 10000 - TL_REPLAY_WINDOW, REJECT_AFTER_MESSAGES));
	CHECK(!tl_replay_check(&r, 10000 - TL_REPLAY_WINDOW, REJECT_AFTER_MESSAGES));
	CHECK(tl_replay_check(&r, 9999, REJECT_AFTER_MESSAGES));
	/* far jump forgets everything behind the new window */
	CHECK(tl_replay_check(&r, 1000000, REJECT_AFTER_MESSAGES));
	CHECK(!tl_replay_check(&r, 10000, REJECT_AFTER_MESSAGES));
	CHECK(tl_replay_check(&r, 1000000 - 1, REJECT_AFTER_MESSAGES));
	CHECK(tl_replay_check(&r, 1000000 - TL_REPLAY_WINDOW, REJECT_AFTER_MESSAGES));
	/* limit */
	CHECK(tl_replay_check(&r, REJECT_AFTER_MESSAGES - 1, REJECT_AFTER_MESSAGES));
	CHECK(!tl_replay_check(&r, REJECT_AFTER_MESSAGES, REJECT_AFTER_MESSAGES));
	CHECK(!tl_replay_check(&r, UINT64_MAX, UINT64_MAX));
	CHECK(!tl_replay_check(&r, REJECT_AFTER_MESSAGES - 1, REJECT_AFTER_MESSAGES));
	CHECK(tl_replay_check(&r, REJECT_AFTER_MESSAGES - 2, REJECT_AFTER_MESSAGES));
}

/* Fills a window, jumps by every kind of distance (in and around whole rings of words),
 * then sweeps every counter of the new window: a stale word left behind shows here. */
static void test_jump_sweeps(struct model *m)
{
	static const uint64_t jumps[] = { 1, 63, 64, 65, 8127, 8128, 8129, 8191, 8192, 8193,
		127 * 64, 128 * 64 - 1, 128 * 64, 128 * 64 + 1, 129 * 64, 200 * 64 + 5, 256 * 64,
		1000000 };
	unsigned agree = 0, total = 0;

	for (size_t j = 0; j < sizeof(jumps) / sizeof(jumps[0]); j++) {
		for (uint64_t start = 0; start < 130; start += 43) {
			struct tl_replay r;
			uint64_t g = start + 9000 + jumps[j];

			memset(m, 0, sizeof(*m));
			tl_replay_init(&r);
			for (uint64_t c = start; c <= start + 9000; c++, total++)
				agree += model_check(m, c, REJECT_AFTER_MESSAGES) ==
					 tl_replay_check(&r, c, REJECT_AFTER_MESSAGES);
			agree += model_check(m, g, REJECT_AFTER_MESSAGES) ==
				 tl_replay_check(&r, g, REJECT_AFTER_MESSAGES);
			total++;
			for (uint64_t c = sub_sat(g, TL_REPLAY_WINDOW + 2); c < g + 2; c++, total++)
				agree += model_check(m, c, REJECT_AFTER_MESSAGES) ==
					 tl_replay_check(&r, c, REJECT_AFTER_MESSAGES);
		}
	}
	CHECK(agree == total);
}

int main(void)
{
	struct model *m = malloc(sizeof(*m));
	uint64_t *history = malloc(OPS * sizeof(*history));

	test_edges();
	test_jump_sweeps(m);
	for (unsigned seq = 0; seq < SEQUENCES; seq++)
		run_sequence(seq, m, history);
	free(m);
	free(history);
	return tl_checks_report();
}
