/* Flow isolation as the queue measures it, under a virtual clock: per DRR class (sparse:
 * served from the new-flows list; bulk: from the old list), the sojourn and the bytes the
 * queue served between a packet's arrival and its own service ("bytes ahead").
 *
 * The DRR's bound (RFC 8290 §4.2 as aqm.c runs it): a flow joins the new list with a deficit
 * of one quantum Q and is served while its deficit is positive, so in its turn it sends
 * less than Q bytes and then one packet more: at most Q + M - 1 bytes (M the largest
 * packet). The new list is served before the old, so a sparse packet waits for at most
 *     k * (Q + M - 1) + (Q - 1)
 * bytes: k flows ahead of its own on the new list, and less than Q of its own flow's
 * earlier packets of the turn. The bulk backlog does not appear in it: a bulk packet's
 * bytes ahead are at least its own flow's backlog ahead of it, as in a FIFO. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/aqm.h"
#include "dataplane/runtime.h"
#include "aqm_pkt.h"
#include "tap.h"
#include "test_eal.h"

#define US 1000ull
#define T0 (1000000 * US)
#define TICK (80 * US)          /* one 1000-byte packet at 100 Mbit/s */

static struct rte_mempool *mp;

/* An IPv4 UDP packet of len bytes from source port sport, ECN codepoint ecn. */
static struct rte_mbuf *mk(uint16_t sport, uint8_t ecn, uint16_t len)
{
	return tl_aqm_test_pkt(mp, sport, ecn, len);
}

static uint16_t sport_of(struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	return (uint16_t)(p[20] << 8 | p[21]);
}

/* CoDel out of the way (a target of 50 s): the bytes ahead are the DRR's alone, at the
 * quantum setting (the queue is not shaped: quantum_fast off). */
static struct tl_aqm *make(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q;

	p.quantum_fast = 0;
	p.target_us = 50000000;
	p.interval_us = 100000000;
	q = tl_aqm_create("test_aqm_iso", &p, 0, SOCKET_ID_ANY);
	if (!q) {
		fprintf(stderr, "tl_aqm_create: %s\n", rte_strerror(rte_errno));
		exit(2);
	}
	return q;
}

static struct tl_aqm_stats *stats(struct tl_aqm *q)
{
	static struct tl_aqm_stats s;

	tl_aqm_stats_get(q, &s);
	return &s;
}

/* One packet out (its source port, 0 if none). */
static uint16_t deq(struct tl_aqm *q, uint64_t now)
{
	struct rte_mbuf *m;
	uint16_t sp;

	if (!tl_aqm_dequeue_burst(q, &m, 1, now))
		return 0;
	sp = sport_of(m);
	rte_pktmbuf_free(m);
	return sp;
}

/* A copy of the queue's statistics (the histograms are a few KiB). */
static struct tl_aqm_stats *snap(struct tl_aqm *q)
{
	struct tl_aqm_stats *s = malloc(sizeof(*s));

	if (!s)
		exit(2);
	tl_aqm_stats_get(q, s);
	return s;
}

/* Packets of the class served between the readings `before` and `after` whose bytes ahead
 * (ahead) or sojourn (!ahead) fall in the buckets of the values lo .. hi (the histogram's
 * buckets are 1/8 wide: 100 shares its bucket with 96 .. 103). */
static uint64_t count(const struct tl_aqm_stats *after, const struct tl_aqm_stats *before, unsigned cls, bool ahead,
		      uint64_t lo, uint64_t hi)
{
	const uint64_t *a = ahead ? after->cls[cls].ahead_hist : after->cls[cls].sojourn_hist;
	const uint64_t *b = ahead ? before->cls[cls].ahead_hist : before->cls[cls].sojourn_hist;
	uint64_t n = 0;

	for (unsigned i = tl_aqm_hist_index(lo); i <= tl_aqm_hist_index(hi); i++)
		n += a[i] - b[i];
	return n;
}

#define AHEAD true
#define SOJOURN false
#define INF UINT64_MAX

/* Bulk flows start as new flows too: their first quantum is served from the new list. Each
 * of n flows, backlogged, gets its first turn and settles on the old list. */
static void settle(struct tl_aqm *q, unsigned n, uint64_t *now)
{
	while (stats(q)->flows_new == 0 && stats(q)->flows_old < n)
		deq(q, *now += TICK);
	while (stats(q)->flows_new)
		deq(q, *now += TICK);
}

#define NBULK 3
#define BACKLOG 100             /* packets of each bulk flow, kept queued */
#define ROUNDS 20

/* Bulk flows keep the queue full, two sparse flows send one packet each now and then. */
static void test_isolation(void)
{
	struct tl_aqm *q = make();
	uint16_t sp[NBULK + 2];
	uint64_t now = T0, sparse_sent = 0, deqs = 0;
	struct tl_aqm_stats *s, *s0;
	char why[400];

	tl_aqm_test_distinct_flows(q, mp, 2000, sp, NBULK + 2);       /* sp[0..NBULK-1] bulk, the last two sparse */
	for (unsigned f = 0; f < NBULK; f++)
		for (unsigned i = 0; i < BACKLOG + 2; i++)
			tl_aqm_enqueue(q, mk(sp[f], 2, 1000), now);
	settle(q, NBULK, &now);
	for (unsigned i = 0; i < NBULK * BACKLOG; i++) {    /* the first fill leaves */
		uint16_t out = deq(q, now += TICK);

		tl_aqm_enqueue(q, mk(out, 2, 1000), now);
	}
	s0 = snap(q);
	for (unsigned r = 0; r < ROUNDS; r++) {
		/* both sparse flows at the same instant: the second waits behind the first */
		tl_aqm_enqueue(q, mk(sp[NBULK], 0, 100), now);
		tl_aqm_enqueue(q, mk(sp[NBULK + 1], 0, 100), now);
		sparse_sent += 2;
		for (unsigned i = 0; i < 50; i++, deqs++) {
			uint16_t out;

			now += TICK;
			out = deq(q, now);
			for (unsigned f = 0; f < NBULK; f++)      /* refill: each bulk flow keeps BACKLOG */
				if (out == sp[f])
					tl_aqm_enqueue(q, mk(sp[f], 2, 1000), now);
		}
	}
	s = stats(q);
	snprintf(why, sizeof(why), "sparse served %" PRIu64 "/%" PRIu64 ", bulk %" PRIu64 ", dequeued %" PRIu64
		 "; ahead max sparse %" PRIu64 " bulk %" PRIu64 "; sojourn max sparse %" PRIu64 " ns, bulk p50 %" PRIu64
		 " ns; served bytes %" PRIu64, tl_aqm_served(s, TL_AQM_SPARSE) - tl_aqm_served(s0, TL_AQM_SPARSE), sparse_sent,
		 tl_aqm_served(s, TL_AQM_BULK) - tl_aqm_served(s0, TL_AQM_BULK),
		 s->dequeued - s0->dequeued, s->cls[TL_AQM_SPARSE].ahead_max_bytes, s->cls[TL_AQM_BULK].ahead_max_bytes,
		 s->cls[TL_AQM_SPARSE].sojourn_max_ns, tl_aqm_sojourn_quantile(s, TL_AQM_BULK, 0.5), s->served_bytes);
	check(tl_aqm_served(s, TL_AQM_SPARSE) - tl_aqm_served(s0, TL_AQM_SPARSE) == sparse_sent &&
	      tl_aqm_served(s, TL_AQM_BULK) - tl_aqm_served(s0, TL_AQM_BULK) == deqs - sparse_sent &&
	      tl_aqm_served(s, TL_AQM_ALL) == s->dequeued && s->dequeued - s0->dequeued == deqs,
	      "isolation: every sparse packet served from the new list, every bulk one from the old", why);
	/* One sparse flow ahead of the other on the new list (k = 1), none of its own: the
	 * first waits behind nothing, the second behind the first's 100 bytes, within
	 * 1 * (Q + M - 1), whatever the 300 kB of bulk backlog. From the start, the bulk flows'
	 * first turns included (up to NBULK flows on the new list together), within the bound. */
	check(count(s, s0, TL_AQM_SPARSE, AHEAD, 0, 0) == ROUNDS && count(s, s0, TL_AQM_SPARSE, AHEAD, 100, 100) == ROUNDS &&
	      s->cls[TL_AQM_SPARSE].ahead_max_bytes <= (NBULK - 1) * (1514 + 1000 - 1) + 1514 - 1,
	      "isolation: a sparse packet waits behind at most Q + M - 1 bytes per new flow ahead of it "
	      "(here: nothing, or the other sparse packet's 100 bytes)", why);
	/* A bulk packet waits for its own flow's backlog ahead of it (BACKLOG - 1 packets) and
	 * the other flows' turns meanwhile, about NBULK times as much. */
	check(count(s, s0, TL_AQM_BULK, AHEAD, (BACKLOG - 1) * 1000ull, INF) == deqs - sparse_sent &&
	      s->cls[TL_AQM_BULK].ahead_max_bytes >= NBULK * (BACKLOG - 1) * 1000ull - NBULK * 2 * 1514,
	      "isolation: a bulk packet waits behind its flow's backlog, and the other flows' turns", why);
	check(count(s, s0, TL_AQM_SPARSE, SOJOURN, TICK, TICK) == ROUNDS &&
	      count(s, s0, TL_AQM_SPARSE, SOJOURN, 2 * TICK, 2 * TICK) == ROUNDS &&
	      count(s, s0, TL_AQM_BULK, SOJOURN, NBULK * (BACKLOG - 2) * TICK, INF) == deqs - sparse_sent &&
	      s->sojourn_max_ns == s->cls[TL_AQM_BULK].sojourn_max_ns,
	      "isolation: the per-class sojourn: sparse packets leave within two ticks, bulk ones after the backlog", why);
	free(s0);
	tl_aqm_free(q);
}

/* The bound is exact: k new flows that each spend their whole turn (one packet of
 * M = 1513 bytes leaves a deficit of 1, the next one takes M more) ahead of a sparse flow
 * whose second packet also waits for its first. */
static void test_bound_exact(void)
{
	struct tl_aqm *q = make();
	const uint64_t Q = 1514, M = 1513, k = 3;
	uint16_t sp[5];
	uint64_t now = T0, want = k * (Q + M - 1) + 100;
	struct tl_aqm_stats *s, *s0;
	char why[200];

	tl_aqm_test_distinct_flows(q, mp, 2000, sp, 5);               /* sp[0] bulk, sp[1..3] new bursts, sp[4] sparse */
	for (unsigned i = 0; i < 20; i++)
		tl_aqm_enqueue(q, mk(sp[0], 2, 1000), now);
	settle(q, 1, &now);
	s0 = snap(q);
	for (unsigned f = 1; f <= k; f++)
		for (unsigned i = 0; i < 4; i++)
			tl_aqm_enqueue(q, mk(sp[f], 2, (uint16_t)M), now);
	tl_aqm_enqueue(q, mk(sp[4], 0, 100), now);
	tl_aqm_enqueue(q, mk(sp[4], 0, 100), now);
	for (unsigned i = 0; i < 2 * k + 2; i++)
		deq(q, now += TICK);
	s = stats(q);
	snprintf(why, sizeof(why), "sparse ahead max %" PRIu64 " (want %" PRIu64 ", bound %" PRIu64 "), served sparse %"
		 PRIu64, s->cls[TL_AQM_SPARSE].ahead_max_bytes, want, k * (Q + M - 1) + Q - 1,
		 tl_aqm_served(s, TL_AQM_SPARSE) - tl_aqm_served(s0, TL_AQM_SPARSE));
	check(s->cls[TL_AQM_SPARSE].ahead_max_bytes == want && want <= k * (Q + M - 1) + Q - 1 &&
	      tl_aqm_served(s, TL_AQM_SPARSE) - tl_aqm_served(s0, TL_AQM_SPARSE) == 2 * k + 2,
	      "bound: k new flows' full turns (k * (Q + M - 1)) and its own earlier bytes, exactly", why);
	free(s0);
	tl_aqm_free(q);
}

/* A sparse flow that turns bulk: its first quantum is still served from the new list,
 * everything after from the old, where it waits its turn behind the other bulk flow. */
static void test_turns_bulk(void)
{
	struct tl_aqm *q = make();
	uint16_t sp[2], out;
	uint64_t now = T0, sparse0, bulk0, turned_sparse = 0, turned_bulk = 0;
	struct tl_aqm_stats *s, *s0, *s1;
	char why[200];

	tl_aqm_test_distinct_flows(q, mp, 2000, sp, 2);               /* sp[0] bulk, sp[1] sparse, then bulk */
	for (unsigned i = 0; i < 50; i++)
		tl_aqm_enqueue(q, mk(sp[0], 2, 1000), now);
	settle(q, 1, &now);
	s0 = snap(q);
	for (unsigned r = 0; r < 5; r++) {
		tl_aqm_enqueue(q, mk(sp[1], 0, 1000), now);
		for (unsigned i = 0; i < 10; i++)
			if (deq(q, now += TICK) == sp[0])
				tl_aqm_enqueue(q, mk(sp[0], 2, 1000), now);
	}
	s1 = snap(q);
	sparse0 = tl_aqm_served(s1, TL_AQM_SPARSE) - tl_aqm_served(s0, TL_AQM_SPARSE);
	bulk0 = tl_aqm_served(s1, TL_AQM_BULK) - tl_aqm_served(s0, TL_AQM_BULK);
	/* now 20 packets at once, kept backlogged: two fit its first quantum of 1514 bytes */
	for (unsigned i = 0; i < 20; i++)
		tl_aqm_enqueue(q, mk(sp[1], 0, 1000), now);
	for (unsigned i = 0; i < 200; i++) {
		out = deq(q, now += TICK);
		tl_aqm_enqueue(q, mk(out, out == sp[0] ? 2 : 0, 1000), now);
		turned_sparse += out == sp[1] &&
				 tl_aqm_served(stats(q), TL_AQM_SPARSE) > tl_aqm_served(s1, TL_AQM_SPARSE) + turned_sparse;
		turned_bulk += out == sp[1];
	}
	s = stats(q);
	turned_bulk -= turned_sparse;
	snprintf(why, sizeof(why), "before: sparse %" PRIu64 " bulk %" PRIu64 "; after: sparse %" PRIu64 " bulk %" PRIu64
		 ", the flow's packets out as sparse %" PRIu64 " as bulk %" PRIu64, sparse0, bulk0,
		 tl_aqm_served(s, TL_AQM_SPARSE) - tl_aqm_served(s1, TL_AQM_SPARSE),
		 tl_aqm_served(s, TL_AQM_BULK) - tl_aqm_served(s1, TL_AQM_BULK), turned_sparse, turned_bulk);
	check(sparse0 == 5 && bulk0 == 45, "turns bulk: single packets now and then are sparse", why);
	check(tl_aqm_served(s, TL_AQM_SPARSE) - tl_aqm_served(s1, TL_AQM_SPARSE) == 2 && turned_sparse == 2 &&
	      turned_bulk >= 90 && tl_aqm_served(s, TL_AQM_BULK) - tl_aqm_served(s1, TL_AQM_BULK) == 198,
	      "turns bulk: a backlogged flow is sparse for its first quantum only (2 x 1000 B of 1514), then bulk", why);
	/* bulk: but the burst's first 18 (fewer of their own ahead), each waited for 19 packets
	 * of its own flow at least (the other flow's 50 for its own) */
	check(count(s, s0, TL_AQM_SPARSE, AHEAD, 0, 0) == 6 && count(s, s0, TL_AQM_SPARSE, AHEAD, 1000, 1000) == 1 &&
	      count(s, s1, TL_AQM_BULK, AHEAD, 19 * 1000, INF) >= 198 - 18,
	      "turns bulk: its sparse packets waited behind nothing but its own first one, its bulk ones behind the "
	      "other flow's turns and its own backlog", why);
	free(s0);
	free(s1);
	tl_aqm_free(q);
}

/* Packets given back by the port and handed out again count once, where the DRR served
 * them; dropped packets are not served and advance no one's bytes ahead. */
static void test_requeue_and_drops(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q;
	struct rte_mbuf *a[32], *b[16];
	uint16_t sp[1];
	uint64_t now = T0, out = 0, out_bytes = 0;
	struct tl_aqm_stats *s;
	bool ok = true;
	char why[240];

	p.quantum_fast = 0;
	p.target_us = 50000000;
	p.interval_us = 100000000;
	p.limit = 64;
	q = tl_aqm_create("test_aqm_iso", &p, 0, SOCKET_ID_ANY);
	if (!q)
		exit(2);
	tl_aqm_test_distinct_flows(q, mp, 2000, sp, 1);
	for (unsigned i = 0; i < 100; i++)      /* 36 over the limit: dropped from the head */
		tl_aqm_enqueue(q, mk(sp[0], 0, (uint16_t)(500 + i)), now);
	while (tl_aqm_backlog(q)) {
		unsigned n = tl_aqm_dequeue_burst(q, a, 16, now += TICK), m;

		if (n > 4) {
			tl_aqm_requeue_head(q, a + 4, n - 4);   /* the port took 4 */
			m = tl_aqm_dequeue_burst(q, b, 16, now += TICK);
			ok &= m >= n - 4 && !memcmp(a + 4, b, (n - 4) * sizeof(*a));
			memcpy(a + 4, b, m * sizeof(*b));
			n = 4 + m;
		}
		for (unsigned i = 0; i < n; i++)
			out_bytes += rte_pktmbuf_pkt_len(a[i]);
		out += n;
		rte_pktmbuf_free_bulk(a, n);
	}
	s = stats(q);
	snprintf(why, sizeof(why), "out %" PRIu64 " (%" PRIu64 " B), served %" PRIu64 " (%" PRIu64 " B), requeued %" PRIu64
		 ", dropped %" PRIu64 ", ahead max %" PRIu64, out, out_bytes, tl_aqm_served(s, TL_AQM_ALL), s->served_bytes,
		 s->requeued, s->drops_overlimit, s->cls[TL_AQM_SPARSE].ahead_max_bytes + s->cls[TL_AQM_BULK].ahead_max_bytes);
	/* the 64 kept were enqueued last, behind the dropped ones: each waited for the kept
	 * packets ahead of it only, the last for 63 of them (lengths 537..599) */
	check(ok && s->requeued > 0 && s->drops_overlimit == 100 - out && tl_aqm_served(s, TL_AQM_ALL) == out &&
	      s->dequeued == out && s->served_bytes == out_bytes &&
	      RTE_MAX(s->cls[TL_AQM_SPARSE].ahead_max_bytes, s->cls[TL_AQM_BULK].ahead_max_bytes) ==
		      out_bytes - (500 + 99),
	      "requeue and drops: a packet handed out twice is served once, dropped ones are not served", why);
	tl_aqm_free(q);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_test_eal_init(argv[0], "tl_aqm_iso") != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("tl_aqm_iso", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (!mp) {
		printf("mempool: %s\n0 passed, 1 failed\n", rte_strerror(rte_errno));
		tl_test_eal_fini();
		return 1;
	}
	test_isolation();
	test_bound_exact();
	test_turns_bulk();
	test_requeue_and_drops();
	rte_mempool_free(mp);
	tl_test_eal_fini();
	return tap_report();
}
