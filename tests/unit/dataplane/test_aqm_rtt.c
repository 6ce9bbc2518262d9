/* The AQM for the path it serves, under a virtual clock: the drop law's state decays while
 * a flow is below target instead of restarting (COBALT), so short dips do not hold the
 * drop rate flat; the rtt setting (interval = rtt, target = rtt / 20); the target's floor
 * of two frame times at the shaped rate; the byte limit from the rate (4 intervals at
 * rate, at least 4 MiB); the shallow marking of ECT(1) packets (L4S, RFC 9331); and the DRR
 * quantum from the rate (quantum_fast while not shaped below 1 Gbit/s). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/aqm.h"
#include "dataplane/runtime.h"
#include "aqm_pkt.h"
#include "tap.h"
#include "test_eal.h"

#define MS 1000000ull
#define US 1000ull
#define T0 (1000 * MS)

static struct rte_mempool *mp;

/* An IPv4 UDP packet of len bytes from source port sport with ECN codepoint ecn. */
static struct rte_mbuf *mk(uint16_t sport, uint8_t ecn, uint16_t len)
{
	return tl_aqm_test_pkt(mp, sport, ecn, len);
}

static struct tl_aqm *make(const struct tl_aqm_params *p)
{
	struct tl_aqm *q = tl_aqm_create("test_aqm_rtt", p, 0, SOCKET_ID_ANY);

	if (!q) {
		fprintf(stderr, "tl_aqm_create: %s\n", rte_strerror(rte_errno));
		exit(2);
	}
	return q;
}

static struct tl_aqm_stats stats(const struct tl_aqm *q)
{
	struct tl_aqm_stats s;

	tl_aqm_stats_get(q, &s);
	return s;
}

/* One flow whose packets all wait `sojourn` from time `from` to `to`: each tick of 100 us
 * one arrives and the one that arrived `sojourn` ago leaves (the queue is primed first).
 * Returns the packets dropped or marked in that time. */
static uint64_t hold(struct tl_aqm *q, uint16_t sport, uint8_t ecn, uint64_t *now, uint64_t to, uint64_t sojourn)
{
	struct tl_aqm_stats s0 = stats(q), s1;
	struct rte_mbuf *m;

	for (; *now < to; *now += 100 * US) {
		tl_aqm_enqueue(q, mk(sport, ecn, 1000), *now);
		while (tl_aqm_backlog(q) > sojourn / (100 * US) + 1 && tl_aqm_dequeue_burst(q, &m, 1, *now))
			rte_pktmbuf_free(m);
	}
	s1 = stats(q);
	return s1.drops_codel + s1.ecn_marks - s0.drops_codel - s0.ecn_marks;
}

/* Lets the queue run dry at time *now (every packet leaves). */
static void drain(struct tl_aqm *q, uint64_t now)
{
	struct rte_mbuf *m;

	while (tl_aqm_dequeue_burst(q, &m, 1, now))
		rte_pktmbuf_free(m);
}

/* CoDel's law at fq_codel's 5 / 100 ms: the law's own checks, whatever the defaults are. */
static struct tl_aqm_params codel_5_100(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();

	p.target_us = 5000;
	p.interval_us = 100000;
	return p;
}

/* ---- 1. decay instead of restart -------------------------------------------------------- */

/* Episodes of 300 ms at 20 ms sojourn, each followed by a dip of 30 ms below target. With
 * the count restarted at count - lastcount (RFC 8289's rule), each episode gets about the
 * same few drops; with the count decaying only while below target, the rate keeps rising
 * until the flow would respond. */
static void test_decay(void)
{
	struct tl_aqm_params p = codel_5_100();
	struct tl_aqm *q = make(&p);
	uint64_t now = T0, per[12];
	char why[200];

	for (unsigned e = 0; e < 12; e++) {
		per[e] = hold(q, 1000, 0, &now, now + 300 * MS, 20 * MS);
		drain(q, now);
		hold(q, 1000, 0, &now, now + 30 * MS, 1 * MS);
	}
	snprintf(why, sizeof(why), "drops per episode: %llu %llu %llu ... %llu %llu %llu",
		 (unsigned long long)per[0], (unsigned long long)per[1], (unsigned long long)per[2],
		 (unsigned long long)per[9], (unsigned long long)per[10], (unsigned long long)per[11]);
	check(per[0] >= 2 && per[11] >= 3 * per[0], "decay: short dips below target do not restart the drop rate",
	      why);

	/* Long below target: the state decays to nothing, the next episode starts afresh (its
	 * first drop one interval after the sojourn exceeds target). */
	hold(q, 1000, 0, &now, now + 20000 * MS, 1 * MS);
	uint64_t start = now, first = 0;
	while (!first && now < start + 300 * MS) {
		if (hold(q, 1000, 0, &now, now + 100 * US, 20 * MS))
			first = now;
	}
	/* The queue holds 1 ms; nothing leaves until the head has waited 20 ms, 19 ms in. */
	snprintf(why, sizeof(why), "first drop %llu us after the episode began, want 119 ms",
		 (unsigned long long)((first - start) / US));
	check(first >= start + 118 * MS && first <= start + 120 * MS,
	      "decay: after 20 s below target the law starts afresh", why);
	tl_aqm_free(q);
}

/* ---- 2. rtt ------------------------------------------------------------------------------ */

static uint64_t first_signal(const struct tl_aqm_params *p, uint64_t rate, uint64_t sojourn, uint64_t span)
{
	struct tl_aqm *q = make(p);
	uint64_t now = T0, at = 0;

	tl_aqm_set_rate(q, rate);
	while (!at && now < T0 + span)
		if (hold(q, 2000, 0, &now, now + 100 * US, sojourn))
			at = now;
	tl_aqm_free(q);
	return at ? at - T0 : 0;
}

static void test_rtt(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	uint64_t a, b, c;
	char why[200];

	p.rtt_us = 200000;   /* interval 200 ms, target 10 ms */
	a = first_signal(&p, 0, 8 * MS, 2000 * MS);
	b = first_signal(&p, 0, 20 * MS, 2000 * MS);
	p.rtt_us = 10000;    /* interval 10 ms, target 500 us */
	c = first_signal(&p, 0, 2 * MS, 2000 * MS);
	snprintf(why, sizeof(why), "rtt 200 ms: 8 ms sojourn first drop at %llu us, 20 ms at %llu us; rtt 10 ms: "
		 "2 ms sojourn at %llu us", (unsigned long long)(a / US), (unsigned long long)(b / US),
		 (unsigned long long)(c / US));
	check(a == 0 && b >= 220 * MS && b <= 221 * MS && c >= 12 * MS && c <= 13 * MS,
	      "rtt: interval = rtt and target = rtt / 20", why);

	/* 1 Mbit/s: a 1538-byte frame takes 12.3 ms, so target 5 ms would drop a queue of two
	 * frames; the floor of two frame times (24.6 ms) keeps a 15 ms queue. */
	p = tl_aqm_params_default();
	a = first_signal(&p, 1000000, 15 * MS, 3000 * MS);
	b = first_signal(&p, 1000000, 40 * MS, 3000 * MS);
	snprintf(why, sizeof(why), "1 Mbit/s: 15 ms sojourn first drop at %llu us, 40 ms at %llu us",
		 (unsigned long long)(a / US), (unsigned long long)(b / US));
	check(a == 0 && b > 0, "rtt: target never below two frame times at the shaped rate", why);
}

/* ---- 3. byte limit from the rate ------------------------------------------------------------ */

static void test_byte_limit(void)
{
	struct tl_aqm_params p = codel_5_100();
	struct tl_aqm *q = make(&p);
	uint64_t lim = 4ull * 100000000 / 8 / 10;   /* 4 intervals of 100 ms at 100 Mbit/s: 5 MB */
	struct tl_aqm_stats s;
	char why[200];

	tl_aqm_set_rate(q, 100000000);
	for (unsigned i = 0; i < 7000; i++)   /* 10.5 MB of one unresponsive flow, none leaves */
		tl_aqm_enqueue(q, mk(3000, 0, 1500), T0);
	s = stats(q);
	snprintf(why, sizeof(why), "backlog %llu bytes (limit %llu), %llu overlimit drops", (unsigned long long)s.backlog_bytes,
		 (unsigned long long)lim, (unsigned long long)s.drops_overlimit);
	check(s.backlog_bytes <= lim && s.backlog_bytes + 64 * 1500 >= lim &&
	      s.drops_overlimit + s.backlog_pkts == 7000 && s.byte_limit == lim,
	      "limit: packet bytes at most 4 intervals at the shaped rate, the excess dropped from the fattest flow", why);
	drain(q, T0);
	tl_aqm_set_rate(q, 10000000);   /* 4 intervals at 10 Mbit/s is 500 kB: the floor, 4 MiB */
	s = stats(q);
	snprintf(why, sizeof(why), "byte limit %llu at 10 Mbit/s", (unsigned long long)s.byte_limit);
	check(s.byte_limit == 4u << 20, "limit: at least 4 MiB", why);
	tl_aqm_free(q);
}

/* ---- 4. L4S: ECT(1) marked at a shallow threshold --------------------------------------------- */

static void test_l4s(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q;
	unsigned ce[3] = { 0, 0, 0 }, n[3] = { 0, 0, 0 };
	uint16_t sport[3];
	struct rte_mbuf *m;
	char why[200];

	p.quantum = 256;   /* with 300-byte packets, one packet per flow and turn */
	p.quantum_fast = 0;
	q = make(&p);
	tl_aqm_test_distinct_flows(q, mp, 4001, sport, 3);
	/* Three flows, one packet each per ms: ECT(1) at 1.5 ms, ECT(0) at 1.5 ms, ECT(1) at
	 * 0.5 ms sojourn; far below CoDel's target, so only the L4S step can mark. */
	for (uint64_t t = T0; t < T0 + 200 * MS; t += MS) {
		tl_aqm_enqueue(q, mk(sport[0], 1, 300), t);
		tl_aqm_enqueue(q, mk(sport[1], 2, 300), t);
		tl_aqm_enqueue(q, mk(sport[2], 1, 300), t + MS);
	}
	for (uint64_t t = T0 + 1500 * US; t < T0 + 201500 * US; t += MS) {
		for (unsigned k = 0; k < 3 && tl_aqm_dequeue_burst(q, &m, 1, t); k++) {
			uint8_t *h = rte_pktmbuf_mtod(m, uint8_t *);
			uint16_t port = (uint16_t)((h[20] << 8) | h[21]);
			unsigned f = port == sport[0] ? 0 : port == sport[1] ? 1 : 2;

			n[f]++;
			ce[f] += (h[1] & 3) == 3;
			rte_pktmbuf_free(m);
		}
	}
	struct tl_aqm_stats s = stats(q);
	snprintf(why, sizeof(why), "CE: ECT(1)@1.5ms %u/%u, ECT(0)@1.5ms %u/%u, ECT(1)@0.5ms %u/%u; l4s marks %llu",
		 ce[0], n[0], ce[1], n[1], ce[2], n[2], (unsigned long long)s.l4s_marks);
	check(n[0] == 200 && ce[0] == n[0] && ce[1] == 0 && n[1] == 200 && ce[2] == 0 && n[2] == 200 &&
	      s.l4s_marks == 200 && s.drops_codel == 0,
	      "l4s: ECT(1) marked CE at 1 ms sojourn, ECT(0) at the same sojourn and ECT(1) below it not", why);
	tl_aqm_free(q);

	p.l4s_us = 0;
	q = make(&p);
	tl_aqm_enqueue(q, mk(4001, 1, 200), T0);
	tl_aqm_dequeue_burst(q, &m, 1, T0 + 5 * MS - 1);
	check((rte_pktmbuf_mtod(m, uint8_t *)[1] & 3) == 1, "l4s: l4s_us 0 turns the step off", NULL);
	rte_pktmbuf_free(m);
	tl_aqm_free(q);
}

/* The flow (source port) of the next packet out, or 0 if none. */
static uint16_t deq_sport(struct tl_aqm *q, uint64_t now)
{
	struct rte_mbuf *m;
	uint16_t sport;

	if (!tl_aqm_dequeue_burst(q, &m, 1, now))
		return 0;
	sport = (uint16_t)(rte_pktmbuf_mtod(m, uint8_t *)[20] << 8 | rte_pktmbuf_mtod(m, uint8_t *)[21]);
	rte_pktmbuf_free(m);
	return sport;
}

/* Runs of one flow in n dequeues: the shortest and the longest that began and ended within
 * them (none: shortest UINT_MAX, longest 0). */
static void runs_of(struct tl_aqm *q, uint64_t now, unsigned n, unsigned *shortest, unsigned *longest)
{
	uint16_t prev = 0;
	unsigned run = 0;
	bool first = true;

	*shortest = UINT32_MAX;
	*longest = 0;
	for (unsigned i = 0; i < n; i++) {
		uint16_t sport = deq_sport(q, now);

		if (sport == prev) {
			run++;
			continue;
		}
		if (prev && !first) {
			*shortest = RTE_MIN(*shortest, run);
			*longest = RTE_MAX(*longest, run);
		}
		first = !prev;
		prev = sport;
		run = 1;
	}
}

/* The quantum from the rate: not shaped, or shaped at 1 Gbit/s or more, two backlogged flows
 * leave in runs of quantum_fast bytes (43 or 44 packets of 1514 B for 65536); shaped below
 * 1 Gbit/s, or with quantum_fast 0, in turns of the quantum setting (one packet of 1514 B).
 * The quantum in force follows a rate change at once; a larger quantum setting wins. */
static void test_quantum_fast(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q = make(&p);
	unsigned lo[4], hi[4];
	uint64_t quantum[5];
	uint16_t sport[2];
	char why[240];

	tl_aqm_test_distinct_flows(q, mp, 4001, sport, 2);
	for (unsigned i = 0; i < 1000; i++)
		for (int k = 0; k < 2; k++)
			tl_aqm_enqueue(q, mk(sport[k], 0, 1514), T0);
	quantum[0] = stats(q).quantum;
	runs_of(q, T0, 300, &lo[0], &hi[0]);
	tl_aqm_set_rate(q, 100000000);
	quantum[1] = stats(q).quantum;
	runs_of(q, T0, 100, &lo[1], &hi[1]);     /* what the long turns left of deficit */
	runs_of(q, T0, 100, &lo[1], &hi[1]);
	tl_aqm_set_rate(q, TL_AQM_FAST_RATE);
	quantum[2] = stats(q).quantum;
	runs_of(q, T0, 300, &lo[2], &hi[2]);
	tl_aqm_set_rate(q, 0);
	p.quantum_fast = 0;
	tl_aqm_set_params(q, &p);
	quantum[3] = stats(q).quantum;
	runs_of(q, T0, 100, &lo[3], &hi[3]);
	runs_of(q, T0, 100, &lo[3], &hi[3]);
	p.quantum = 100000;
	p.quantum_fast = 65536;
	tl_aqm_set_params(q, &p);
	quantum[4] = stats(q).quantum;
	snprintf(why, sizeof(why),
		 "quantum in force %llu %llu %llu %llu %llu; runs: unshaped %u-%u, 100 Mbit/s %u-%u, 1 Gbit/s %u-%u, "
		 "quantum_fast 0 %u-%u; drops %llu",
		 (unsigned long long)quantum[0], (unsigned long long)quantum[1], (unsigned long long)quantum[2],
		 (unsigned long long)quantum[3], (unsigned long long)quantum[4], lo[0], hi[0], lo[1], hi[1], lo[2],
		 hi[2], lo[3], hi[3], (unsigned long long)(stats(q).drops_codel + stats(q).drops_overlimit));
	check(quantum[0] == 65536 && lo[0] >= 43 && hi[0] <= 45 && lo[0] <= hi[0],
	      "quantum: not shaped, a flow leaves in runs of quantum_fast", why);
	check(quantum[1] == 1514 && lo[1] == 1 && hi[1] == 1, "quantum: shaped below 1 Gbit/s, one packet a turn", why);
	check(quantum[2] == 65536 && lo[2] >= 43 && hi[2] <= 45 && lo[2] <= hi[2],
	      "quantum: shaped at 1 Gbit/s, runs of quantum_fast again", why);
	check(quantum[3] == 1514 && lo[3] == 1 && hi[3] == 1, "quantum: quantum_fast 0 keeps the quantum setting unshaped",
	      why);
	check(quantum[4] == 100000 && stats(q).drops_codel + stats(q).drops_overlimit == 0,
	      "quantum: a quantum setting larger than quantum_fast wins, nothing dropped", why);
	tl_aqm_free(q);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_test_eal_init(argv[0], "tl_aqm_rtt") != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("tl_aqm_rtt", 16383, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (!mp) {
		printf("mempool: %s\n0 passed, 1 failed\n", rte_strerror(rte_errno));
		tl_test_eal_fini();
		return 1;
	}
	test_decay();
	test_rtt();
	test_byte_limit();
	test_l4s();
	test_quantum_fast();
	rte_mempool_free(mp);
	tl_test_eal_fini();
	return tap_report();
}
