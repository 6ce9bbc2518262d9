/* One classic ECN flow on a long path through the real AQM, under a virtual clock.
 *
 * A sender that reacts to congestion as Linux's CUBIC does with ECN (RFC 3168: at most one
 * reduction per window, to 0.7 of the window over one round trip as PRR (RFC 6937) does,
 * fast convergence, the cubic growth from the
 * last maximum with its Reno-friendly floor; slow start from 10 packets without HyStart),
 * packets of 1420 bytes into a tl_aqm served at the bottleneck's rate, the path's RTT
 * downstream of the queue (half to the receiver, half back), a receiver that echoes CE
 * until it sees CWR. Segments carry TCP timestamps (TSval in ms, echoed per segment), and
 * the acknowledgements pass the queue's round-trip table on their way back, as they pass the
 * decap path in the daemon (dataplane/flowrtt.h). What is measured is the queue's own: the
 * bytes it delivered over the run against the rate, the packets it marked, the reductions
 * the sender made, the round trip the table measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/aqm.h"
#include "dataplane/flowrtt.h"
#include "dataplane/runtime.h"
#include "tap.h"
#include "test_eal.h"

#define MS 1000000ull
#define US 1000ull
#define T0 (1000 * MS)
#define PKT 1420u
#define TICK (20 * US)
#define LINE 65536u            /* packets in flight on a delay line at most */

static struct rte_mempool *mp;

/* ---- the path: packets on a delay line ------------------------------------------------ */

struct hop {
	uint64_t at;     /* arrival time at the other end */
	uint32_t seq;
	uint32_t ts;     /* data: TSval; ack: TSecr */
	uint8_t flag;    /* data: CE seen (1), CWR set (2); ack: ECE (1) */
};

struct line {
	struct hop h[LINE];
	uint32_t head, tail;
};

static void line_put(struct line *l, uint64_t at, uint32_t seq, uint32_t ts, uint8_t flag)
{
	if (l->tail - l->head == LINE) {
		fprintf(stderr, "delay line full\n");
		exit(2);
	}
	l->h[l->tail++ % LINE] = (struct hop){ at, seq, ts, flag };
}

static const struct hop *line_due(const struct line *l, uint64_t now)
{
	return l->head != l->tail && l->h[l->head % LINE].at <= now ? &l->h[l->head % LINE] : NULL;
}

/* ---- the sender: CUBIC with ECN, in packets and seconds (Linux's constants) ----------- */

#define CUBIC_BETA 0.7
#define CUBIC_C 0.4

struct cubic {
	double cwnd, ssthresh, wmax, origin, k, reno;
	double epoch;            /* s, < 0: none */
	double min_rtt;          /* s */
	uint32_t nxt, una, high;
	double prr_credit, prior;   /* during the reduction (PRR, RFC 6937) */
	bool cwr, send_cwr;
	unsigned reductions;
};

static void cubic_reduce(struct cubic *c)
{
	c->epoch = -1;
	c->wmax = c->cwnd < c->wmax ? c->cwnd * (1 + CUBIC_BETA) / 2 : c->cwnd;
	c->ssthresh = fmax(c->cwnd * CUBIC_BETA, 2);
	c->prior = c->cwnd;
	c->prr_credit = 0;
	c->cwr = true;
	c->send_cwr = true;
	c->high = c->nxt;
	c->reductions++;
}

static void cubic_grow(struct cubic *c, double now)
{
	double t, target;

	if (c->cwnd < c->ssthresh) {
		c->cwnd += 1;
		return;
	}
	if (c->epoch < 0) {
		c->epoch = now;
		c->reno = c->cwnd;
		c->origin = fmax(c->wmax, c->cwnd);
		c->k = c->wmax > c->cwnd ? cbrt((c->wmax - c->cwnd) / CUBIC_C) : 0;
	}
	t = now - c->epoch + c->min_rtt;
	target = c->origin + CUBIC_C * (t - c->k) * (t - c->k) * (t - c->k);
	c->reno += 8.0 / 15.0 / c->cwnd;     /* about 0.53 packets per RTT, as Linux's beta_scale */
	target = fmax(target, c->reno);
	if (target > c->cwnd)
		c->cwnd += fmin((target - c->cwnd) / c->cwnd, 0.5);
}

/* ---- one run ---------------------------------------------------------------------------- */

struct run {
	double fill;            /* bytes delivered x 8 / (rate x time) */
	double fill_late;       /* the same from the run's second half */
	uint64_t marks, drops;
	unsigned reductions;
	double sojourn_p50_ms;
	double rtt_ms;          /* the table's estimate of the flow's round trip at the end, 0: none */
};

#define HDR 52u                /* IPv4 20, TCP 20, NOP NOP and the timestamp option 12 */

/* IPv4 + TCP with the timestamp option into p: data (from 10.0.0.1:39936) or its ack. */
static void tcp_hdr(uint8_t *p, uint32_t seq, bool ack, bool cwr, uint32_t tsval, uint32_t tsecr)
{
	static const uint8_t a[4] = { 10, 0, 0, 1 }, b[4] = { 10, 9, 0, 1 };
	uint16_t len = ack ? HDR : PKT;

	memset(p, 0, HDR);
	p[0] = 0x45;
	p[1] = ack ? 0 : 2;        /* data: ECT(0) */
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 6;
	memcpy(p + 12, ack ? b : a, 4);
	memcpy(p + 16, ack ? a : b, 4);
	p[ack ? 22 : 20] = 0x9c;
	p[ack ? 20 : 22] = 0x14;
	memcpy(p + 24, &seq, 4);
	p[32] = 0x80;              /* data offset: 8 words */
	p[33] = (uint8_t)(0x10 | (cwr ? 0x80 : 0));   /* ACK, CWR */
	p[40] = p[41] = 1;
	p[42] = 8;
	p[43] = 10;
	for (int i = 0; i < 4; i++) {
		p[44 + i] = (uint8_t)(tsval >> (24 - 8 * i));
		p[48 + i] = (uint8_t)(tsecr >> (24 - 8 * i));
	}
	((struct rte_ipv4_hdr *)p)->hdr_checksum = rte_ipv4_cksum((struct rte_ipv4_hdr *)p);
}

static uint32_t tsval_of(const uint8_t *p)
{
	return (uint32_t)p[44] << 24 | (uint32_t)p[45] << 16 | (uint32_t)p[46] << 8 | p[47];
}

static struct rte_mbuf *mk(uint32_t seq, bool cwr, uint32_t tsval)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *p;

	if (!m) {
		fprintf(stderr, "mempool empty\n");
		exit(2);
	}
	p = (uint8_t *)rte_pktmbuf_append(m, PKT);
	if (!p) {
		fprintf(stderr, "mbuf too small\n");
		exit(2);
	}
	tcp_hdr(p, seq, false, cwr, tsval, 0);
	return m;
}

static struct line down, up;

/* One run; with `table`, the queue has a round-trip table as the daemon's WAN queues do. */
static struct run simulate(const struct tl_aqm_params *p, uint64_t rate_bps, uint64_t rtt_ns, uint64_t span,
			   bool table)
{
	struct tl_aqm *q = tl_aqm_create("test_aqm_longpath", p, 0, SOCKET_ID_ANY);
	struct tl_flowrtt *t = table ? tl_flowrtt_create("test_aqm_longpath_rtt", SOCKET_ID_ANY) : NULL;
	static uint8_t hdr[PKT];
	struct cubic c = { .cwnd = 10, .ssthresh = 1e9, .epoch = -1, .min_rtt = (double)rtt_ns / 1e9 };
	uint64_t ser = (uint64_t)PKT * 8 * 1000000000ull / rate_bps, link_free = T0, bytes = 0, bytes_late = 0;
	bool ece = false;
	struct tl_aqm_stats s;
	struct run r;

	if (!q || (table && !t)) {
		fprintf(stderr, "tl_aqm_create, tl_flowrtt_create: %s\n", rte_strerror(rte_errno));
		exit(2);
	}
	tl_aqm_set_rate(q, rate_bps);
	tl_aqm_attach_flowrtt(q, t);
	memset(&down, 0, sizeof(down));
	memset(&up, 0, sizeof(up));
	for (uint64_t now = T0; now < T0 + span; now += TICK) {
		const struct hop *h;
		struct rte_mbuf *m;

		while ((h = line_due(&down, now))) {        /* the receiver */
			if (h->flag & 2)
				ece = false;
			if (h->flag & 1)
				ece = true;
			line_put(&up, h->at + rtt_ns / 2, h->seq, h->ts, ece);
			down.head++;
		}
		while ((h = line_due(&up, now))) {          /* the sender's acks */
			if (t) {
				tcp_hdr(hdr, 0, true, false, (uint32_t)(now / MS), h->ts);
				tl_flowrtt_ack(t, hdr, HDR, now);
			}
			c.una = h->seq + 1;
			if (c.cwr && (int32_t)(c.una - c.high) > 0) {   /* an ack above high: the CWR packet arrived */
				c.cwr = false;
				c.cwnd = c.ssthresh;
			}
			if (h->flag && !c.cwr)
				cubic_reduce(&c);
			else if (!c.cwr)
				cubic_grow(&c, (double)(now - T0) / 1e9);
			else
				c.prr_credit += c.ssthresh / c.prior;
			up.head++;
		}
		for (;;) {
			uint32_t inflight = c.nxt - c.una;

			if (c.cwr && c.prr_credit >= 1)
				c.prr_credit -= 1;
			else if (c.cwr ? inflight >= (uint32_t)c.ssthresh : inflight >= (uint32_t)c.cwnd)
				break;
			tl_aqm_enqueue(q, mk(c.nxt++, c.send_cwr, (uint32_t)(now / MS)), now);
			c.send_cwr = false;
		}
		if (link_free < now && !tl_aqm_backlog(q))
			link_free = now;
		while (link_free <= now && tl_aqm_dequeue_burst(q, &m, 1, link_free)) {
			uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
			uint32_t seq;

			memcpy(&seq, d + 24, 4);
			link_free += ser;
			line_put(&down, link_free + rtt_ns / 2, seq, tsval_of(d),
				 (uint8_t)(((d[1] & 3) == 3) | (d[33] & 0x80 ? 2 : 0)));
			bytes += PKT;
			if (now >= T0 + span / 2)
				bytes_late += PKT;
			rte_pktmbuf_free(m);
		}
	}
	tl_aqm_stats_get(q, &s);
	r.fill = (double)bytes * 8 / ((double)rate_bps * (double)span / 1e9);
	r.fill_late = (double)bytes_late * 8 / ((double)rate_bps * (double)(span / 2) / 1e9);
	r.marks = s.ecn_marks;
	r.drops = s.drops_codel + s.drops_overlimit;
	r.reductions = c.reductions;
	r.sojourn_p50_ms = (double)tl_aqm_sojourn_quantile(&s, TL_AQM_ALL, 0.5) / 1e6;
	tcp_hdr(hdr, 0, false, false, 0, 0);
	r.rtt_ms = t ? (double)tl_flowrtt_get(t, hdr, PKT, T0 + span) / 1e6 : 0;
	tl_aqm_free(q);
	tl_flowrtt_free(t);
	return r;
}

/* ---- the checks --------------------------------------------------------------------------- */

#define RATE 34000000ull       /* what one bulk flow has beside the bench's video at R = 50 Mbit/s */

static void describe(char *why, size_t n, const char *name, const struct run *r)
{
	snprintf(why, n, "%s: fill %.3f (second half %.3f), %llu marks, %u reductions, %llu drops, round trip %.1f ms",
		 name, r->fill, r->fill_late, (unsigned long long)r->marks, r->reductions, (unsigned long long)r->drops,
		 r->rtt_ms);
	printf("# %s\n", why);
}

/* The defaults (10 / 200 ms, flow_rtt_pct 20, the round-trip table) at +60, +120 and
 * +200 ms for 30 s. Marks are not wasted (at most one more per reduction: the slow start's
 * first round trip) and the slow start's overshoot is taken back without cutting far below
 * the pipe. Marking every packet the schedule names instead marked the packets sent during a
 * reduction and cut the window again: 31 marks for 7 reductions and 0.65 of the pipe after
 * the slow start at +120 ms, 0.69 of the rate at +200 ms. With the queue's 10 ms target
 * alone the second half of each run stayed near 0.93 (a reduction to 0.7 of a window that
 * fills the pipe plus 10 ms leaves it part empty until CUBIC grows back); a fifth of the
 * flow's own round trip fills it: 0.977, 0.971 and 0.955 over the 30 s. */
static void test_longpath(void)
{
	static const struct { uint64_t rtt_ms; double fill; } cell[] = { { 60, 0.95 }, { 120, 0.95 }, { 200, 0.93 } };
	struct tl_aqm_params p = tl_aqm_params_default();
	char why[240], name[64];

	for (unsigned i = 0; i < RTE_DIM(cell); i++) {
		struct run r = simulate(&p, RATE, cell[i].rtt_ms * MS, 30000 * MS, true);

		snprintf(name, sizeof(name), "+%llu ms", (unsigned long long)cell[i].rtt_ms);
		describe(why, sizeof(why), name, &r);
		check(r.drops == 0 && r.marks <= 2 * r.reductions && r.fill >= cell[i].fill,
		      "longpath: one CUBIC flow with ECN is marked once per reduction and fills the path", why);
	}
}

/* The study's +120 ms for 60 s: the table measures the flow's round trip from its
 * timestamps (the path's, within the millisecond a TSval lasts), and the flow's target of a
 * fifth of it keeps the pipe full in the steady state. With the queue's target alone
 * (flow_rtt_pct 0, or no table) the second half was 0.932. */
static void test_flow_rtt(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct run r = simulate(&p, RATE, 120 * MS, 60000 * MS, true);
	char why[240];

	describe(why, sizeof(why), "flow_rtt_pct 20, +120 ms, 60 s", &r);
	check(r.drops == 0 && r.fill_late >= 0.97 && r.rtt_ms >= 118.5 && r.rtt_ms <= 120.5,
	      "flow_rtt: at +120 ms the flow's own round trip sets its target and the path stays full", why);
}

/* +10 ms: the flow still fills the rate, and the law still holds its queue near target
 * (marks answered every few round trips, the median sojourn at most the target). */
static void test_shortpath(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct run r = simulate(&p, RATE, 10 * MS, 30000 * MS, true);
	char why[240];
	size_t n;

	describe(why, sizeof(why), "+10 ms", &r);
	n = strlen(why);
	snprintf(why + n, sizeof(why) - n, ", median sojourn %.1f ms", r.sojourn_p50_ms);
	check(r.drops == 0 && r.fill >= 0.99 && r.reductions >= 30 && r.sojourn_p50_ms <= p.target_us / 1000.0,
	      "shortpath: at +10 ms the flow fills the rate with its queue near target", why);
}

/* The defaults serve a 200 ms path too, in the steady state a long transfer reaches (the
 * second half of 60 s): 0.91 of the rate with 10 / 200 ms, where 5 / 100 ms left it at 0.70
 * (its interval ends before the sender's reduction reaches the queue, so a second mark cuts
 * the window again; docs/results/2026-11-26-longpath.md section 5). */
static void test_defaults_200(void)
{
	struct tl_aqm_params p = tl_aqm_params_default();
	struct run r = simulate(&p, RATE, 200 * MS, 60000 * MS, true);
	char why[240];

	describe(why, sizeof(why), "defaults, +200 ms, 60 s", &r);
	check(r.drops == 0 && r.fill_late >= 0.85,
	      "defaults: at +200 ms one CUBIC flow with ECN fills the path in the steady state", why);
}

/* `test_aqm_longpath --model SECONDS SETTING...`: the model's fill at +10, +60, +120 and
 * +200 ms for each setting, `rtt=US` (rtt_us; `rtt=path`: each cell's RTT) or `TARGET/INTERVAL`
 * (µs), instead of the checks (docs/results/2026-11-26-longpath.md section 5). `pct=N` sets
 * flow_rtt_pct for the settings after it and gives the queue the round-trip table when N > 0;
 * before any, 0 and no table (the law of sections 5 and 6). */
static int model(int argc, char **argv)
{
	static const uint64_t rtts[] = { 10, 60, 120, 200 };
	uint64_t span = strtoull(argv[2], NULL, 10) * 1000 * MS;
	char why[240], name[80];
	unsigned pct = 0;

	for (int a = 3; a < argc; a++) {
		if (!strncmp(argv[a], "pct=", 4)) {
			pct = (unsigned)strtoul(argv[a] + 4, NULL, 10);
			continue;
		}
		for (unsigned i = 0; i < RTE_DIM(rtts); i++) {
			struct tl_aqm_params p = tl_aqm_params_default();
			struct run r;

			p.flow_rtt_pct = pct;
			if (!strcmp(argv[a], "rtt=path"))
				p.rtt_us = (uint32_t)(rtts[i] * 1000);
			else if (!strncmp(argv[a], "rtt=", 4))
				p.rtt_us = (uint32_t)strtoul(argv[a] + 4, NULL, 10);
			else if (sscanf(argv[a], "%u/%u", &p.target_us, &p.interval_us) != 2 || tl_aqm_params_check(&p)) {
				fprintf(stderr, "%s: not rtt=US, rtt=path or TARGET/INTERVAL\n", argv[a]);
				return 2;
			}
			r = simulate(&p, RATE, rtts[i] * MS, span, pct > 0);
			snprintf(name, sizeof(name), "pct=%u %s +%llu ms", pct, argv[a], (unsigned long long)rtts[i]);
			describe(why, sizeof(why), name, &r);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (tl_test_eal_init(argv[0], "tl_aqm_lp") != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create("tl_aqm_longpath", 16383, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (!mp) {
		printf("mempool: %s\n0 passed, 1 failed\n", rte_strerror(rte_errno));
		tl_test_eal_fini();
		return 1;
	}
	if (argc > 2 && !strcmp(argv[1], "--model")) {
		int rc = model(argc, argv);

		rte_mempool_free(mp);
		tl_test_eal_fini();
		return rc;
	}
	test_longpath();
	test_flow_rtt();
	test_shortpath();
	test_defaults_200();
	rte_mempool_free(mp);
	tl_test_eal_fini();
	return tap_report();
}
