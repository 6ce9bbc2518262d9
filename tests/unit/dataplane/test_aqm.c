/* Egress AQM (fq_codel semantics) on synthetic IPv4/IPv6 TCP/UDP packets, virtual clock:
 * CoDel drop spacing and its resume rule, DRR fairness, ECN marking, the hard limits,
 * sparse-flow priority and list rotation, conservation under random workloads with
 * requeues, parameter validation (test_aqm_rtt.c: rtt, decay, L4S). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/runtime.h"
#include "dataplane/aqm.h"
#include "dataplane/drop.h"
#include "tap.h"
#include "test_eal.h"

#define MS 1000000ull
#define US 1000ull
#define T0 (1000 * MS)
#define TAG_OFF 80          /* flow id and sequence number, from the IP header */
#define MIN_LEN 100

static struct rte_mempool *mp;
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- synthetic packets ---------------------------------------------------------- */

struct fspec {
	uint32_t id;
	bool v6;
	uint8_t proto;          /* IPPROTO_TCP, IPPROTO_UDP or IPPROTO_ICMP */
	uint16_t sport, dport;
	uint8_t ecn;            /* 0 not ECT, 1 ECT(1), 2 ECT(0), 3 CE */
	unsigned l3;            /* 0 or 14 */
	uint32_t seq;           /* next sequence number */
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void build_ipv4(uint8_t *p, const struct fspec *f, uint16_t len)
{
	struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)p;

	p[0] = 0x45;
	p[1] = f->ecn;
	put16(p + 2, len);
	p[8] = 64;
	p[9] = f->proto;
	memcpy(p + 12, (uint8_t[]){ 10, 0, (uint8_t)(f->id >> 8), (uint8_t)f->id }, 4);
	memcpy(p + 16, (uint8_t[]){ 10, 9, 0, 1 }, 4);
	h->hdr_checksum = 0;
	h->hdr_checksum = rte_ipv4_cksum(h);
}

static void build_ipv6(uint8_t *p, const struct fspec *f, uint16_t len)
{
	p[0] = 0x60 | 0x0a;                       /* TC high nibble 0xa: must survive marking */
	p[1] = (uint8_t)(f->ecn << 4);
	put16(p + 4, (uint16_t)(len - 40));
	p[6] = f->proto == IPPROTO_ICMP ? IPPROTO_ICMPV6 : f->proto;
	p[7] = 64;
	p[8] = 0xfd;
	p[22] = (uint8_t)(f->id >> 8);
	p[23] = (uint8_t)f->id;
	p[24] = 0xfd;
	p[39] = 1;
}

static struct rte_mbuf *mk(struct fspec *f, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *p;

	if (!m) {
		fprintf(stderr, "mempool empty\n");
		exit(2);
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(f->l3 + len));
	memset(p, 0, f->l3 + len);
	if (f->l3)
		put16(p + 12, f->v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	p += f->l3;
	if (f->v6)
		build_ipv6(p, f, len);
	else
		build_ipv4(p, f, len);
	put16(p + (f->v6 ? 40 : 20), f->sport);
	put16(p + (f->v6 ? 42 : 22), f->dport);
	memcpy(p + TAG_OFF, &f->id, 4);
	memcpy(p + TAG_OFF + 4, &f->seq, 4);
	f->seq++;
	return m;
}

static uint8_t *l3(struct rte_mbuf *m, unsigned off)
{
	return rte_pktmbuf_mtod_offset(m, uint8_t *, off);
}

static uint32_t tag_id(struct rte_mbuf *m, unsigned off)
{
	uint32_t v;

	memcpy(&v, l3(m, off) + TAG_OFF, 4);
	return v;
}

static uint32_t tag_seq(struct rte_mbuf *m, unsigned off)
{
	uint32_t v;

	memcpy(&v, l3(m, off) + TAG_OFF + 4, 4);
	return v;
}

static uint8_t pkt_ecn(struct rte_mbuf *m, unsigned off)
{
	uint8_t *p = l3(m, off);

	return (p[0] >> 4) == 6 ? (p[1] >> 4) & 3 : p[1] & 3;
}

static bool ipv4_cksum_ok(struct rte_mbuf *m, unsigned off)
{
	struct rte_ipv4_hdr h;

	memcpy(&h, l3(m, off), sizeof(h));
	uint16_t stored = h.hdr_checksum;
	h.hdr_checksum = 0;
	return rte_ipv4_cksum(&h) == stored;
}

static struct fspec flow(uint32_t id, bool v6, uint8_t proto, uint8_t ecn, unsigned l3off)
{
	return (struct fspec){ .id = id, .v6 = v6, .proto = proto, .sport = (uint16_t)(1000 + id),
			       .dport = 443, .ecn = ecn, .l3 = l3off };
}

/* Moves f's source port until its bucket differs from the n buckets taken. */
static void distinct_bucket(struct tl_aqm *q, struct fspec *f, const uint32_t *taken, unsigned n)
{
	for (unsigned tries = 0; tries < 1000; tries++) {
		struct rte_mbuf *m = mk(f, MIN_LEN);
		uint32_t b = tl_aqm_classify(q, m);
		bool clash = false;

		f->seq--;
		rte_pktmbuf_free(m);
		for (unsigned i = 0; i < n; i++)
			clash |= taken[i] == b;
		if (!clash)
			return;
		f->sport++;
	}
	fprintf(stderr, "flow %u: no free bucket found\n", f->id);
	exit(2);
}

static uint32_t bucket(struct tl_aqm *q, struct fspec *f)
{
	struct rte_mbuf *m = mk(f, MIN_LEN);
	uint32_t b = tl_aqm_classify(q, m);

	f->seq--;
	rte_pktmbuf_free(m);
	return b;
}

static struct tl_aqm *make(const struct tl_aqm_params *p, unsigned l3off)
{
	struct tl_aqm *q = tl_aqm_create("test_aqm", p, l3off, SOCKET_ID_ANY);

	if (!q) {
		fprintf(stderr, "tl_aqm_create: %s\n", rte_strerror(rte_errno));
		exit(2);
	}
	return q;
}

static struct tl_aqm_stats stats(struct tl_aqm *q)
{
	struct tl_aqm_stats s;

	tl_aqm_stats_get(q, &s);
	return s;
}

static uint64_t drops(struct tl_aqm *q)
{
	struct tl_aqm_stats s = stats(q);

	return s.drops_codel + s.drops_overlimit;
}

/* ---- 1. CoDel drop spacing ---------------------------------------------------------- */

#define TICK (100 * US)

struct drop_log {
	uint64_t t[64];
	unsigned n;
};

/* One tick: enq packets arrive, deq leave; drop times logged. Returns packets out. */
static unsigned tick(struct tl_aqm *q, struct fspec *f, uint64_t now, unsigned enq, unsigned deq,
		     struct drop_log *log)
{
	struct rte_mbuf *out[8];
	uint64_t before = drops(q);
	unsigned n;

	for (unsigned i = 0; i < enq; i++)
		tl_aqm_enqueue(q, mk(f, 1000), now);
	n = tl_aqm_dequeue_burst(q, out, deq, now);
	rte_pktmbuf_free_bulk(out, n);
	for (uint64_t d = before; d < drops(q) && log->n < RTE_DIM(log->t); d++)
		log->t[log->n++] = now;
	return n;
}

static bool gaps_follow_law(const struct drop_log *log, unsigned first, uint32_t count0, unsigned gaps,
			    char *why, size_t whylen)
{
	for (unsigned k = 0; k < gaps; k++) {
		double c = (double)(count0 + k), want2 = 100.0 * MS * 100.0 * MS;   /* (gap^2 * count) */
		double got = (double)(log->t[first + k + 1] - log->t[first + k]);

		/* got within one tick of interval/sqrt(count), without libm */
		if ((got - TICK) * (got - TICK) * c > want2 || (got + TICK) * (got + TICK) * c < want2) {
			snprintf(why, whylen, "gap %u after count %u: %.0f ns, want 1e8/sqrt(%u) +- %llu", k,
				 count0 + k, got, count0 + k, (unsigned long long)TICK);
			return false;
		}
	}
	return true;
}

/* CoDel's law at fq_codel's 5 / 100 ms: the law's own checks, whatever the defaults are. */
static struct tl_aqm_params codel_5_100(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();

	p.target_us = 5000;
	p.interval_us = 100000;
	return p;
}

static void test_codel_spacing(void)
{
	struct tl_aqm_params p = codel_5_100();
	struct tl_aqm *q = make(&p, 0);
	struct fspec f = flow(1, false, IPPROTO_UDP, 0, 0);
	struct drop_log ep1 = { .n = 0 }, ep2 = { .n = 0 }, drain = { .n = 0 };
	uint64_t now = T0;
	char why[160] = "";
	bool ok;

	for (unsigned i = 0; i < 3000; i++)
		tl_aqm_enqueue(q, mk(&f, 1000), now);
	for (unsigned i = 0; i < 7000; i++, now += TICK)
		tick(q, &f, now, 1, 1, &ep1);
	ok = ep1.n >= 11 && ep1.t[0] >= T0 + 105 * MS && ep1.t[0] < T0 + 105 * MS + TICK;
	if (!ok)
		snprintf(why, sizeof(why), "%u drops, first at +%llu ns", ep1.n,
			 (unsigned long long)(ep1.n ? ep1.t[0] - T0 : 0));
	ok = ok && gaps_follow_law(&ep1, 0, 1, 10, why, sizeof(why));
	check(ok, "codel: first drop one interval after sojourn exceeds target, then gaps interval/sqrt(count)", why);

	/* Drain to empty (still dropping while above target), overload again soon: the count
	 * decayed below target (a step per would-be signal), did not restart: the gaps resume
	 * at a count in 2 .. the count reached + 1 (the episode's first signal adds one). */
	while (tl_aqm_backlog(q)) {
		tick(q, &f, now, 0, 2, &drain);
		now += TICK;
	}
	uint32_t reached = ep1.n + drain.n, resumed = 0;
	for (unsigned i = 0; i < 3000; i++)
		tl_aqm_enqueue(q, mk(&f, 1000), now);
	for (unsigned i = 0; i < 3000; i++, now += TICK)
		tick(q, &f, now, 1, 1, &ep2);
	for (uint32_t c = 2; ep2.n >= 4 && !resumed && c <= reached + 1; c++)
		if (gaps_follow_law(&ep2, 0, c, 3, why, sizeof(why)))
			resumed = c;
	ok = ep2.n >= 4 && resumed;
	if (!ok)
		snprintf(why, sizeof(why), "%u drops in the second episode; gaps follow the law from no count "
			 "in 2..%u", ep2.n, reached + 1);
	check(ok, "codel: re-entering soon after resumes at the decayed count, not at 1", why);
	tl_aqm_free(q);
}

/* ---- 2. DRR fairness ------------------------------------------------------------------ */

static void test_drr_fairness(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q = make(&p, 0);
	struct fspec f[2] = { flow(1, false, IPPROTO_TCP, 0, 0), flow(2, true, IPPROTO_UDP, 0, 0) };
	uint16_t len[2] = { 1500, 300 };
	uint64_t bytes[2] = { 0, 0 }, now = T0;
	long queued[2] = { 0, 0 };
	uint32_t taken = bucket(q, &f[0]);
	char why[120];

	distinct_bucket(q, &f[1], &taken, 1);
	for (unsigned it = 0; it < 100000; it++, now += US) {
		struct rte_mbuf *out[4];
		unsigned n;

		for (int i = 0; i < 2; i++)
			for (; queued[i] < 64; queued[i]++)
				tl_aqm_enqueue(q, mk(&f[i], len[i]), now);
		n = tl_aqm_dequeue_burst(q, out, 4, now);
		for (unsigned k = 0; k < n; k++) {
			int i = tag_id(out[k], 0) == 2;

			bytes[i] += rte_pktmbuf_pkt_len(out[k]);
			queued[i]--;
		}
		rte_pktmbuf_free_bulk(out, n);
	}
	double ratio = (double)bytes[0] / (double)bytes[1];
	snprintf(why, sizeof(why), "1500 B flow %llu bytes, 300 B flow %llu bytes, %llu drops",
		 (unsigned long long)bytes[0], (unsigned long long)bytes[1], (unsigned long long)drops(q));
	check(ratio > 0.95 && ratio < 1.05 && drops(q) == 0, "drr: two backlogged flows get bytes within 5%", why);
	tl_aqm_free(q);
}

/* ---- 3. ECN ------------------------------------------------------------------------------- */

static void test_ecn(unsigned l3off)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q = make(&p, l3off);
	struct fspec f[3] = { flow(0, false, IPPROTO_TCP, 2, l3off), flow(1, true, IPPROTO_TCP, 1, l3off),
			      flow(2, false, IPPROTO_UDP, 0, l3off) };
	uint64_t sent[3] = { 0, 0, 0 }, got[3] = { 0, 0, 0 }, ce = 0, bad_cksum = 0, bad_tc = 0, now = T0;
	uint32_t taken[3];
	char name[96], why[200];

	taken[0] = bucket(q, &f[0]);
	distinct_bucket(q, &f[1], taken, 1);
	taken[1] = bucket(q, &f[1]);
	distinct_bucket(q, &f[2], taken, 2);
	for (unsigned it = 0; it < 25000; it++, now += TICK) {
		struct rte_mbuf *out[4];
		unsigned n;

		for (int i = 0; i < 3; i++) {
			tl_aqm_enqueue(q, mk(&f[i], 1200), now);
			sent[i]++;
		}
		if (it < 1000)
			continue;                         /* build a standing queue first */
		n = tl_aqm_dequeue_burst(q, out, it < 24000 ? 3 : 4, now);
		for (unsigned k = 0; k < n; k++) {
			uint32_t id = tag_id(out[k], l3off);
			uint8_t *h = l3(out[k], l3off);

			got[id]++;
			ce += pkt_ecn(out[k], l3off) == 3;
			bad_cksum += id != 1 && !ipv4_cksum_ok(out[k], l3off);
			bad_tc += id == 1 && (h[0] != 0x6a || (h[1] & 0xcf) != 0);
			bad_tc += id == 2 && pkt_ecn(out[k], l3off) != 0;
		}
		rte_pktmbuf_free_bulk(out, n);
	}
	for (struct rte_mbuf *m; tl_aqm_dequeue_burst(q, &m, 1, now); rte_pktmbuf_free(m))
		got[tag_id(m, l3off)]++, ce += pkt_ecn(m, l3off) == 3;   /* the L4S step marks here too */
	struct tl_aqm_stats s = stats(q);
	snprintf(why, sizeof(why), "delivered %llu/%llu %llu/%llu %llu/%llu, ce %llu marks %llu, codel drops %llu, "
		 "bad cksum %llu, bad tc %llu", (unsigned long long)got[0], (unsigned long long)sent[0],
		 (unsigned long long)got[1], (unsigned long long)sent[1], (unsigned long long)got[2],
		 (unsigned long long)sent[2], (unsigned long long)ce, (unsigned long long)s.ecn_marks,
		 (unsigned long long)s.drops_codel, (unsigned long long)bad_cksum, (unsigned long long)bad_tc);
	snprintf(name, sizeof(name), "ecn (l3 offset %u): ECT v4/v6 marked CE and never dropped, not-ECT dropped",
		 l3off);
	check(got[0] == sent[0] && got[1] == sent[1] && s.ecn_marks > 10 && ce == s.ecn_marks &&
	      s.drops_codel > 10 && s.drops_codel == sent[2] - got[2] && !bad_cksum && !bad_tc &&
	      s.drops_overlimit == 0, name, why);
	tl_aqm_free(q);
}

/* ---- 4. Hard limits ------------------------------------------------------------------------ */

static void drain_count(struct tl_aqm *q, uint64_t now, uint64_t *per_id, unsigned ids, uint32_t *first_seq)
{
	struct rte_mbuf *m;

	while (tl_aqm_dequeue_burst(q, &m, 1, now)) {
		uint32_t id = tag_id(m, 0);

		if (id < ids) {
			if (per_id[id]++ == 0 && first_seq)
				first_seq[id] = tag_seq(m, 0);
		}
		rte_pktmbuf_free(m);
	}
}

static void test_limit_packets(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct fspec fat = flow(0, false, IPPROTO_TCP, 0, 0), thin = flow(1, true, IPPROTO_UDP, 0, 0);
	uint64_t got[2] = { 0, 0 };
	uint32_t first[2] = { 0, 0 }, taken;
	unsigned self = 0, over = 0;
	char why[160];

	p.limit = 100;
	struct tl_aqm *q = make(&p, 0);
	taken = bucket(q, &fat);
	distinct_bucket(q, &thin, &taken, 1);
	for (unsigned i = 0; i < 90; i++)
		self += tl_aqm_enqueue(q, mk(&fat, 1000), T0);
	for (unsigned i = 0; i < 5; i++)
		self += tl_aqm_enqueue(q, mk(&thin, 200), T0);
	for (unsigned i = 0; i < 60; i++) {
		self += tl_aqm_enqueue(q, mk(&fat, 1000), T0);
		over += tl_aqm_backlog(q) > 100;
	}
	struct tl_aqm_stats s = stats(q);
	drain_count(q, T0, got, 2, first);
	snprintf(why, sizeof(why), "fat %llu/150 (first seq %u), thin %llu/5, overlimit %llu, arrivals dropped %u",
		 (unsigned long long)got[0], first[0], (unsigned long long)got[1],
		 (unsigned long long)s.drops_overlimit, self);
	check(got[1] == 5 && got[0] + s.drops_overlimit == 150 && s.drops_overlimit > 0 && first[0] > 0 &&
	      self == 0 && over == 0 && s.drops_codel == 0,
	      "limit: over 100 packets the fat flow loses from its head, the thin flow nothing", why);
	tl_aqm_free(q);
}

static void test_limit_memory(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct fspec fat = flow(0, false, IPPROTO_TCP, 0, 0), thin = flow(1, false, IPPROTO_UDP, 0, 0);
	uint64_t got[2] = { 0, 0 }, peak = 0;
	uint32_t taken;
	char why[160];

	p.memory_limit = TL_AQM_MEMORY_MIN;
	struct tl_aqm *q = make(&p, 0);
	taken = bucket(q, &fat);
	distinct_bucket(q, &thin, &taken, 1);
	for (unsigned i = 0; i < 200; i++) {
		tl_aqm_enqueue(q, mk(&fat, 1400), T0);
		if (i % 50 == 0)
			tl_aqm_enqueue(q, mk(&thin, 100), T0);
		peak = RTE_MAX(peak, stats(q).memory_bytes);
	}
	struct tl_aqm_stats s = stats(q);
	drain_count(q, T0, got, 2, NULL);
	snprintf(why, sizeof(why), "peak memory %llu, fat %llu/200, thin %llu/4, overlimit %llu, left %llu B",
		 (unsigned long long)peak, (unsigned long long)got[0], (unsigned long long)got[1],
		 (unsigned long long)s.drops_overlimit, (unsigned long long)stats(q).memory_bytes);
	check(peak <= TL_AQM_MEMORY_MIN && got[1] == 4 && got[0] + s.drops_overlimit == 200 &&
	      stats(q).memory_bytes == 0 && stats(q).backlog_bytes == 0,
	      "limit: memory_limit holds, the fat flow pays", why);
	tl_aqm_free(q);
}

static void test_limit_arrival(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct fspec f[3] = { flow(0, false, IPPROTO_TCP, 0, 0), flow(1, false, IPPROTO_TCP, 0, 0),
			      flow(2, false, IPPROTO_TCP, 0, 0) };
	uint32_t taken[3];
	int r[3];
	uint64_t got[3] = { 0, 0, 0 };

	p.limit = 1;
	struct tl_aqm *q = make(&p, 0);
	taken[0] = bucket(q, &f[0]);
	distinct_bucket(q, &f[1], taken, 1);
	taken[1] = bucket(q, &f[1]);
	distinct_bucket(q, &f[2], taken, 2);
	tl_aqm_enqueue(q, mk(&f[0], 1000), T0);
	r[0] = tl_aqm_enqueue(q, mk(&f[1], 200), T0);   /* flow 0 is fatter: it loses */
	r[1] = tl_aqm_enqueue(q, mk(&f[2], 1400), T0);  /* the arrival is the fattest */
	r[2] = tl_aqm_enqueue(q, mk(&f[2], 100), T0);   /* flow 1 fatter again */
	drain_count(q, T0, got, 3, NULL);
	check(r[0] == 0 && r[1] == 1 && r[2] == 0 && got[0] == 0 && got[1] == 0 && got[2] == 1 &&
	      stats(q).drops_overlimit == 3, "limit: the arrival is dropped only when its flow is the fattest",
	      NULL);
	tl_aqm_free(q);
}

/* ---- 5. Sparse flows and list rotation ----------------------------------------------------- */

static uint32_t deq_id(struct tl_aqm *q, uint64_t now)
{
	struct rte_mbuf *m;
	uint32_t id;

	if (!tl_aqm_dequeue_burst(q, &m, 1, now))
		return UINT32_MAX;
	id = tag_id(m, 0);
	rte_pktmbuf_free(m);
	return id;
}

static void test_sparse(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q;
	struct fspec bulk = flow(0, false, IPPROTO_TCP, 0, 0), sparse = flow(1, true, IPPROTO_UDP, 0, 0),
		     burst = flow(2, false, IPPROTO_UDP, 0, 0);
	uint32_t taken[2], seq[3];

	uint64_t now = T0, nf;
	bool ok;

	p.quantum_fast = 0;   /* the DRR at the quantum setting (this queue is not shaped) */
	q = make(&p, 0);
	taken[0] = bucket(q, &bulk);
	distinct_bucket(q, &sparse, taken, 1);
	taken[1] = bucket(q, &sparse);
	distinct_bucket(q, &burst, taken, 2);
	/* 300 B bulk packets, quantum 1514: after 7 dequeues the bulk flow is on the old list
	 * with 928 bytes of deficit left. */
	for (unsigned i = 0; i < 200; i++)
		tl_aqm_enqueue(q, mk(&bulk, 300), now);
	for (unsigned i = 0; i < 7; i++)
		deq_id(q, now);
	nf = stats(q).new_flows_count;
	tl_aqm_enqueue(q, mk(&sparse, 120), now);
	ok = stats(q).new_flows_count == nf + 1 && deq_id(q, now) == 1;
	check(ok, "sparse: a new flow's packet leaves before the next quantum of a bulk flow", NULL);

	/* The emptied new flow passes through the old list: its next packet gets no priority. */
	deq_id(q, now);
	struct tl_aqm_stats s = stats(q);
	tl_aqm_enqueue(q, mk(&sparse, 120), now);
	ok = s.flows_new == 0 && s.flows_old == 2 && stats(q).new_flows_count == nf + 1;
	for (unsigned i = 0; i < 3 && ok; i++)         /* bulk spends its deficit first */
		ok = deq_id(q, now) == 0;
	ok = ok && deq_id(q, now) == 1;
	check(ok, "sparse: an emptied new flow moves to the old list, no second priority", NULL);

	/* A new flow that exhausts its deficit goes to the old list's tail. */
	while (deq_id(q, now) == 1)
		;
	for (unsigned i = 0; i < 10; i++)
		tl_aqm_enqueue(q, mk(&burst, 1000), now);
	for (unsigned i = 0; i < 3; i++)
		seq[i] = deq_id(q, now);
	check(seq[0] == 2 && seq[1] == 2 && seq[2] != 2,
	      "sparse: a new flow that spends its quantum goes behind the old flows", NULL);
	tl_aqm_free(q);
}

/* ---- 6. Conservation and requeue ---------------------------------------------------------------- */

#define RFLOWS 40

struct model {
	struct fspec f[RFLOWS];
	uint32_t last[RFLOWS];       /* last delivered seq + 1 */
	struct rte_mbuf *pending[32];  /* given back, must come out first in this order */
	unsigned npending;
	unsigned order_err, seq_err, cons_err, limit_err, requeue_err;
};

static bool conserved(struct tl_aqm *q)
{
	struct tl_aqm_stats s = stats(q);

	return s.enqueued == s.dequeued + s.drops_codel + s.drops_overlimit + s.backlog_pkts &&
	       s.backlog_pkts == tl_aqm_backlog(q) && rte_mempool_in_use_count(mp) == s.backlog_pkts;
}

static void random_enqueue(struct tl_aqm *q, struct model *md, uint64_t now)
{
	struct fspec *f = &md->f[next_rand() % (next_rand() % 4 ? 6 : RFLOWS)];

	f->ecn = (uint8_t)(next_rand() % 4);
	tl_aqm_enqueue(q, mk(f, (uint16_t)(MIN_LEN + next_rand() % 1400)), now);
}

static void deliver(struct model *md, struct rte_mbuf *m, unsigned l3off)
{
	uint32_t id = tag_id(m, l3off), seq = tag_seq(m, l3off);

	if (id >= RFLOWS || seq < md->last[id])
		md->seq_err++;
	else
		md->last[id] = seq + 1;
	rte_pktmbuf_free(m);
}

static void random_dequeue(struct tl_aqm *q, struct model *md, uint64_t now, unsigned l3off)
{
	struct rte_mbuf *out[32];
	unsigned want = 1 + (unsigned)(next_rand() % 32), n, sent;

	if (tl_aqm_requeued_pending(q) != md->npending)
		md->requeue_err++;
	n = tl_aqm_dequeue_burst(q, out, want, now);
	for (unsigned i = 0; i < RTE_MIN(n, md->npending); i++)
		md->order_err += out[i] != md->pending[i];
	if (n < RTE_MIN(want, md->npending))
		md->order_err++;
	if (n < md->npending) {
		memmove(md->pending, md->pending + n, (md->npending - n) * sizeof(md->pending[0]));
		md->npending -= n;
	} else {
		md->npending = 0;
	}
	sent = next_rand() % 3 ? n : (unsigned)(next_rand() % (n + 1));
	for (unsigned i = 0; i < sent; i++)
		deliver(md, out[i], l3off);
	tl_aqm_requeue_head(q, out + sent, n - sent);
	/* What was given back goes before what was still pending. */
	memmove(md->pending + (n - sent), md->pending, md->npending * sizeof(md->pending[0]));
	memcpy(md->pending, out + sent, (n - sent) * sizeof(out[0]));
	md->npending += n - sent;
}

static void random_params(struct tl_aqm *q, struct tl_aqm_params *p)
{
	struct tl_aqm_params n = *p;

	n.limit = 20 + (uint32_t)(next_rand() % 400);
	n.quantum = 256 + (uint32_t)(next_rand() % 3000);
	n.target_us = 500 + (uint32_t)(next_rand() % 5000);
	n.interval_us = n.target_us * (2 + (uint32_t)(next_rand() % 20));
	n.ecn = next_rand() % 2;
	if (!tl_aqm_set_params(q, &n))
		*p = n;
}

static void test_conservation(unsigned l3off, uint32_t flows)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct model md;
	uint64_t now = T0, drops_list[TL_DROP_MAX] = { 0 };
	char name[96], why[200];

	memset(&md, 0, sizeof(md));
	p.limit = 200;
	p.flows = flows;
	struct tl_aqm *q = make(&p, l3off);
	tl_aqm_attach_drops(q, drops_list);
	for (uint32_t i = 0; i < RFLOWS; i++)
		md.f[i] = flow(i, i % 3 == 0, i % 5 == 0 ? IPPROTO_ICMP : (i % 2 ? IPPROTO_UDP : IPPROTO_TCP), 0,
			       l3off);
	for (unsigned step = 0; step < 200000; step++) {
		uint64_t r = next_rand() % 100;

		bool congested = (step / 4000) % 2;      /* port mostly stalled: limits hit */

		if (r < 55)
			random_enqueue(q, &md, now);
		else if (r < 97 && (!congested || r < 58))
			random_dequeue(q, &md, now, l3off);
		else if (r < 98)
			random_params(q, &p);
		now += next_rand() % 8 ? next_rand() % (200 * US) : next_rand() % (30 * MS);
		md.cons_err += !conserved(q);
		md.limit_err += tl_aqm_backlog(q) > p.limit + tl_aqm_requeued_pending(q);
	}
	struct tl_aqm_params bad = p;
	bad.flows = flows * 2;
	bool refused = tl_aqm_backlog(q) == 0 || tl_aqm_set_params(q, &bad) != NULL;
	while (tl_aqm_backlog(q)) {
		random_dequeue(q, &md, now, l3off);
		now += 10 * US;
		md.cons_err += !conserved(q);
	}
	struct tl_aqm_stats s = stats(q);
	bool resized = tl_aqm_set_params(q, &bad) == NULL;
	uint64_t p50 = tl_aqm_sojourn_quantile(&s, TL_AQM_ALL, 0.5), p99 = tl_aqm_sojourn_quantile(&s, TL_AQM_ALL, 0.99);
	snprintf(why, sizeof(why), "order %u seq %u cons %u limit %u requeue %u; enq %llu deq %llu codel %llu "
		 "over %llu marks %llu requeued %llu; p50 %llu p99 %llu max %llu",
		 md.order_err, md.seq_err, md.cons_err, md.limit_err, md.requeue_err,
		 (unsigned long long)s.enqueued, (unsigned long long)s.dequeued, (unsigned long long)s.drops_codel,
		 (unsigned long long)s.drops_overlimit, (unsigned long long)s.ecn_marks,
		 (unsigned long long)s.requeued, (unsigned long long)p50, (unsigned long long)p99,
		 (unsigned long long)s.sojourn_max_ns);
	snprintf(name, sizeof(name), "conservation (l3 offset %u, %u flows): enqueued = dequeued + drops + backlog",
		 l3off, flows);
	check(!md.order_err && !md.seq_err && !md.cons_err && !md.limit_err && !md.requeue_err &&
	      s.backlog_bytes == 0 && s.memory_bytes == 0 && s.drops_codel > 0 && s.drops_overlimit > 0 &&
	      s.requeued > 0 && s.ecn_marks > 0 && drops_list[TL_DROP_aqm_codel] == s.drops_codel &&
	      drops_list[TL_DROP_aqm_overlimit] == s.drops_overlimit && refused && resized &&
	      p50 <= p99 && p99 <= s.sojourn_max_ns + s.sojourn_max_ns / 8 + 8, name, why);
	tl_aqm_free(q);
}

/* Requeue of a whole burst: the same packets come back in the same order, counts intact. */
/* Flows between the same two hosts, told apart only by ports or protocol, spread over
 * the buckets like any others. */
static void test_classify_spread(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q = make(&p, 0);
	struct tl_aqm *qe = make(&p, 14);
	bool seen[1024] = { false }, seen_e[1024] = { false };
	unsigned distinct = 0, distinct_e = 0;
	char why[96];

	for (unsigned i = 0; i < 64; i++) {
		uint8_t proto = i == 0 ? IPPROTO_ICMP : i % 2 ? IPPROTO_UDP : IPPROTO_TCP;
		struct fspec f = flow(7, false, proto, 0, 0), fe = flow(7, true, proto, 0, 14);
		uint32_t b, be;

		f.sport = fe.sport = (uint16_t)(40000 + i / 2);
		b = bucket(q, &f);
		be = bucket(qe, &fe);
		distinct += !seen[b];
		distinct_e += !seen_e[be];
		seen[b] = seen_e[be] = true;
	}
	snprintf(why, sizeof(why), "%u and %u distinct buckets of 1024 for 64 flows", distinct, distinct_e);
	/* 64 random picks of 1024 collide a few times; one bucket for all would mean the key
	 * is not hashed. */
	check(distinct >= 56 && distinct_e >= 56, "classify: flows differing only in ports or protocol spread over the buckets", why);
	tl_aqm_free(q);
	tl_aqm_free(qe);
}

/* Overload as on a shaped uplink: an unresponsive flow arrives at twice the dequeue rate
 * until the queue sits at its hard limit; sparse packets still leave next and are never
 * the ones dropped. */
static void test_sparse_overload(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q;
	struct fspec bulk = flow(0, false, IPPROTO_UDP, 0, 0), ping = flow(1, false, IPPROTO_ICMP, 0, 0);
	uint32_t taken[1];
	uint64_t now = T0, worst = 0, lost = 0, sparse_seen = 0;
	char why[160];

	p.limit = 2000;
	q = make(&p, 0);
	taken[0] = bucket(q, &bulk);
	distinct_bucket(q, &ping, taken, 1);
	for (unsigned step = 0; step < 20000; step++, now += 100 * US) {
		tl_aqm_enqueue(q, mk(&bulk, 1200), now);
		tl_aqm_enqueue(q, mk(&bulk, 1200), now);
		if (step % 1000 == 999) {
			unsigned waited = 0;
			uint32_t id;

			tl_aqm_enqueue(q, mk(&ping, 84), now);
			while ((id = deq_id(q, now)) == 0)
				waited++;
			sparse_seen += id == 1;
			lost += id != 1;
			worst = RTE_MAX(worst, (uint64_t)waited);
		} else {
			deq_id(q, now);
		}
	}
	snprintf(why, sizeof(why), "sparse packets out %" PRIu64 "/20, worst wait %" PRIu64 " bulk packets, overlimit drops %" PRIu64,
		 sparse_seen, worst, stats(q).drops_overlimit);
	check(sparse_seen == 20 && lost == 0 && worst <= 1 && stats(q).drops_overlimit > 0,
	      "sparse: under a 2x unresponsive overload at the hard limit a sparse flow leaves next, never dropped", why);
	tl_aqm_free(q);
}

static void test_requeue_exact(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct tl_aqm *q = make(&p, 0);
	struct fspec f[4] = { flow(0, false, IPPROTO_TCP, 0, 0), flow(1, true, IPPROTO_TCP, 0, 0),
			      flow(2, false, IPPROTO_UDP, 0, 0), flow(3, true, IPPROTO_UDP, 0, 0) };
	struct rte_mbuf *a[16], *b[16];
	bool ok = true;

	for (unsigned i = 0; i < 40; i++)
		tl_aqm_enqueue(q, mk(&f[i % 4], (uint16_t)(200 + 37 * i)), T0);
	struct tl_aqm_stats s0 = stats(q);
	unsigned n = tl_aqm_dequeue_burst(q, a, 16, T0 + MS);
	tl_aqm_requeue_head(q, a + 5, n - 5);
	tl_aqm_requeue_head(q, a, 5);
	struct tl_aqm_stats s1 = stats(q);
	unsigned m = tl_aqm_dequeue_burst(q, b, 16, T0 + 2 * MS);
	ok = n == 16 && m == 16 && !memcmp(a, b, sizeof(a)) && s1.backlog_pkts == s0.backlog_pkts &&
	     s1.backlog_bytes == s0.backlog_bytes && s1.memory_bytes == s0.memory_bytes && s1.dequeued == 0 &&
	     s1.requeued == 16 && tl_aqm_requeued_pending(q) == 0;
	rte_pktmbuf_free_bulk(b, m);
	check(ok, "requeue: given-back packets return first, same order, backlog restored", NULL);
	tl_aqm_free(q);
}

/* ---- 7. Params ------------------------------------------------------------------------------------ */

struct bad_case {
	const char *field;
	struct tl_aqm_params p;
};

static void test_params_validation(void)
{
	struct tl_aqm_params d = tl_aqm_params_default(), p;
	struct bad_case c[14];
	unsigned n = 0, wrong = 0;
	char why[200] = "";

#define ADD(fld, stmt) do { p = d; stmt; c[n++] = (struct bad_case){ fld, p }; } while (0)
	ADD("target_us", p.target_us = 0);
	ADD("interval_us", p.interval_us = p.target_us - 1);
	ADD("interval_us", p.interval_us = TL_AQM_INTERVAL_MAX + 1);
	ADD("quantum", p.quantum = 255);
	ADD("quantum_fast", p.quantum_fast = 255);
	ADD("quantum_fast", p.quantum_fast = TL_AQM_QUANTUM_MAX + 1);
	ADD("flows", p.flows = 0);
	ADD("flows", p.flows = 1000);
	ADD("flows", p.flows = 131072);
	ADD("limit", p.limit = 0);
	ADD("memory_limit", p.memory_limit = 65535);
#undef ADD
	for (unsigned i = 0; i < n; i++) {
		const char *e = tl_aqm_params_check(&c[i].p);

		if (!e || strncmp(e, c[i].field, strlen(c[i].field)) || e[strlen(c[i].field)] != ':' ||
		    tl_aqm_create("bad", &c[i].p, 0, SOCKET_ID_ANY)) {
			wrong++;
			snprintf(why, sizeof(why), "case %u (%s): %s", i, c[i].field, e ? e : "accepted");
		}
	}
	check(!wrong, "params: bad values rejected, the message names the field", why);

	p = d;
	p.flows = 1;
	p.quantum = 256;
	p.quantum_fast = 0;
	p.target_us = p.interval_us = 1;
	check(!tl_aqm_params_check(&d) && !tl_aqm_params_check(&p) &&
	      !tl_aqm_create("bad", &d, 7, SOCKET_ID_ANY) && rte_errno == EINVAL,
	      "params: defaults and edge values accepted, l3 offset other than 0/14 refused", NULL);

	struct tl_aqm *q = make(&d, 14);
	struct fspec f = flow(1, false, IPPROTO_TCP, 0, 14);
	for (unsigned i = 0; i < 10; i++)
		tl_aqm_enqueue(q, mk(&f, 500), T0);
	p = d;
	p.quantum = 300;
	p.target_us = 1000;
	p.limit = 5;
	bool live = !tl_aqm_set_params(q, &p) && tl_aqm_backlog(q) == 5 && stats(q).drops_overlimit == 5;
	p.flows = 64;
	const char *e = tl_aqm_set_params(q, &p);
	live = live && e && !strncmp(e, "flows:", 6);
	check(live, "params: live change keeps packets, lowers the limit at once, refuses a flows change while busy",
	      e);
	tl_aqm_free(q);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_test_eal_init(argv[0], "tl_aqm") != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("tl_aqm_test", 16383, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (!mp) {
		printf("mempool: %s\n0 passed, 1 failed\n", rte_strerror(rte_errno));
		tl_test_eal_fini();
		return 1;
	}
	test_codel_spacing();
	test_drr_fairness();
	test_ecn(0);
	test_ecn(14);
	test_limit_packets();
	test_limit_memory();
	test_limit_arrival();
	test_classify_spread();
	test_sparse();
	test_sparse_overload();
	test_requeue_exact();
	test_conservation(0, 1024);
	test_conservation(14, 16);
	test_params_validation();
	rte_mempool_free(mp);
	tl_test_eal_fini();
	return tap_report();
}
