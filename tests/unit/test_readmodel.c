/* The read model as its readers on other threads see it: a reader thread loops over
 * tl_stats_peers (what /tunless/peers runs on DPDK's telemetry thread) while this thread
 * changes allowed IPs through the write model, as `wg set`, `wg setconf` and a reload do
 * (adds that grow a peer's list, replaces that shrink and reorder it, prefixes taken from
 * another peer, a peer removed and added again). Every list the reader gets must parse as a
 * prefix list of one of the committed states. Run under ASan (and with MALLOC_PERTURB_ set)
 * in the sanitizer build. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/addr.h"
#include "common/key.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/stats.h"
#include "ctrl_harness.h"

#define CHURN_CYCLES 1500
#define BIG 256

struct reader {
	struct tl_device *dev;
	atomic_bool stop;
	unsigned long reads, lists, bad;
	char first_bad[160];
};

/* "a/n,b/m": every item a prefix as tl_prefix_format writes it, and none twice in a row
 * empty. */
static bool list_ok(const char *s)
{
	while (s && *s) {
		size_t n = strcspn(s, ",");
		struct tl_prefix p;
		char item[64], again[64];

		if (!n || n >= sizeof(item))
			return false;
		memcpy(item, s, n);
		item[n] = '\0';
		if (tl_prefix_parse(&p, item) != 0)
			return false;
		tl_prefix_format(again, sizeof(again), &p);
		if (strcmp(again, item))
			return false;
		s += n + (s[n] == ',');
	}
	return s != NULL;
}

static void *reader_run(void *arg)
{
	struct reader *rd = arg;

	while (!atomic_load(&rd->stop)) {
		bool oom = false;
		size_t n = 0;
		struct tl_stats_peer *v = tl_stats_peers(rd->dev, &n, &oom);

		for (size_t i = 0; i < n; i++, rd->lists++)
			if (!list_ok(v[i].allowed_ips) && !rd->bad++)
				snprintf(rd->first_bad, sizeof(rd->first_bad), "%.150s",
					 v[i].allowed_ips ? v[i].allowed_ips : "(null)");
		tl_stats_peers_free(v, n);
		rd->reads++;
	}
	return NULL;
}

static void prefix24(struct tl_prefix *p, uint8_t a, uint8_t b)
{
	*p = (struct tl_prefix){ .ip.family = AF_INET, .ip.addr = { 10, a, b, 0 }, .len = 24 };
}

static void key_of(uint8_t key[TL_KEY_LEN], uint8_t tag)
{
	memset(key, tag, TL_KEY_LEN);
	key[0] = 0x40;
}

/* T2 of the review: the telemetry thread against the write model. */
static void test_reader_vs_writes(void)
{
	static struct tl_prefix big[BIG], few[BIG / 4];
	struct reader rd = { 0 };
	struct tl_peer_op op;
	struct tl_ch h;
	pthread_t t;
	uint8_t a[TL_KEY_LEN], b[TL_KEY_LEN];
	unsigned cycles = 0, refused = 0;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	key_of(a, 0xa1);
	key_of(b, 0xb2);
	for (unsigned i = 0; i < BIG; i++)
		prefix24(&big[i], 1, (uint8_t)i);
	rd.dev = &h.dev;
	CHECK(pthread_create(&t, NULL, reader_run, &rd) == 0, "reader thread");
	for (; cycles < CHURN_CYCLES && !rd.bad; cycles++) {
		/* A: a quarter of B's prefixes, replaced each cycle by another quarter (the list
		 * shrinks and is reordered); B: created with all of them (its list grows from
		 * nothing, taking A's), cut to a few, then removed. */
		for (unsigned i = 0; i < BIG / 4; i++)
			few[i] = big[(cycles * 7 + i * 5) % BIG];
		op = (struct tl_peer_op){ .aips = few, .n_aips = BIG / 4, .replace_aips = true };
		memcpy(op.pub, a, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
		op = (struct tl_peer_op){ .aips = big, .n_aips = BIG };
		memcpy(op.pub, b, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
		op = (struct tl_peer_op){ .aips = big + cycles % 3, .n_aips = 3, .replace_aips = true };
		memcpy(op.pub, b, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
		op = (struct tl_peer_op){ .remove = true };
		memcpy(op.pub, b, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
	}
	atomic_store(&rd.stop, true);
	pthread_join(t, NULL);
	CHECK(!refused, "%u changes applied (%u refused)", cycles * 4, refused);
	CHECK(rd.reads > 0 && rd.lists > 0, "the reader read %lu times, %lu lists", rd.reads, rd.lists);
	CHECK(!rd.bad, "every list the reader got parses: %lu did not, the first \"%s\"", rd.bad, rd.first_bad);
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_reader_vs_writes();
	tl_ch_eal_fini();
	return check_report();
}
