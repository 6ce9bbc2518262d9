/* Egress AQM: fq_codel semantics (RFC 8290) with the CoDel control law of RFC 8289, its
 * count kept and decayed between episodes as COBALT's, marks held back while a flow still
 * answers the last one, an L4S step for ECT(1), and each TCP flow's target raised to a share
 * of its own round trip (flow_target).
 *
 * A flow is a FIFO of mbufs linked through an mbuf dynamic field (which also holds the
 * enqueue time and the queue's served bytes then, for the per-class histograms of
 * aqm_hist.c), so the queue needs no memory of its own and m->next stays NULL. Active
 * flows sit on the new or the old list (singly linked, touched only at head and tail).
 * Packets the port refused wait in a separate FIFO that is served before the scheduler:
 * they were already scheduled and judged, so the port sees exactly the sequence it would
 * have seen, and CoDel never looks at them again (they may be encrypted by then). */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_mbuf_dyn.h>
#include <rte_random.h>

#include "dataplane/aqm.h"
#include "dataplane/drop.h"
#include "dataplane/flowrtt.h"

/* Per-packet state, in an mbuf dynamic field. */
struct tl_aqm_cb {
	uint64_t enq_ns;
	uint64_t served;          /* the queue's served bytes at enqueue */
	struct rte_mbuf *link;
};

static int tl_aqm_cb_offset = -1;

struct tl_aqm_fifo {
	struct rte_mbuf *head, *tail;
};

struct tl_aqm_codel {
	uint64_t drop_next_ns;    /* next signal time (above target), or next decay step (below) */
	uint64_t mark_quiet_ns;   /* packets enqueued before this are not marked (last mark + interval) */
	uint64_t trend_ns, trend_sojourn_ns;  /* the sojourn sampled once per interval, and when */
	uint32_t count;           /* signals of the episode, decayed while below target */
	bool dropping;            /* the sojourn is above target */
	bool falling;             /* the sojourn fell over the last interval */
};

enum tl_aqm_list_id { TL_AQM_LIST_NONE, TL_AQM_LIST_NEW, TL_AQM_LIST_OLD };

struct tl_aqm_flow {
	struct tl_aqm_fifo pkts;
	struct tl_aqm_flow *next;     /* on the new or old list */
	uint64_t backlog;             /* bytes */
	int32_t deficit;
	uint8_t list;                 /* enum tl_aqm_list_id */
	struct tl_aqm_codel cv;
	uint64_t target_ns;           /* the target from the flow's round trip (flow_target) */
	uint64_t target_at;           /* when it was looked up; 0: never */
};

struct tl_aqm_list {
	struct tl_aqm_flow *head, *tail;
	uint32_t len;
};

/* Params in runtime units. */
struct tl_aqm_cfg {
	uint64_t target_ns;
	uint64_t interval_ns;
	uint64_t l4s_ns;          /* 0: no L4S step */
	uint32_t flow_rtt_pct;    /* 0: every flow gets target_ns */
	uint64_t byte_limit;      /* packet bytes, from the rate; 0: none */
	uint64_t rate_bps;        /* the shaped rate, 0: none */
	uint64_t memory_limit;
	uint32_t quantum;         /* in force: quantum, or quantum_fast while not shaped slower */
	uint32_t mask;
	uint32_t limit;
	bool ecn;
};

struct tl_aqm {
	struct tl_aqm_cfg cfg;
	struct tl_aqm_list new_flows, old_flows;
	struct tl_aqm_fifo held;      /* given back by the port, served first */
	uint32_t held_n;
	uint32_t seed;
	uint32_t maxpacket;
	unsigned l3_offset;
	int socket;
	uint64_t *drops;
	struct tl_flowrtt *rtt;       /* the flows' round trips (tl_aqm_attach_flowrtt), or NULL */
	struct tl_aqm_flow *flows;
	struct tl_aqm_params params;
	struct tl_aqm_stats st;
};

/* ---- packets ---------------------------------------------------------------------- */

static inline struct tl_aqm_cb *pkt_cb(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, tl_aqm_cb_offset, struct tl_aqm_cb *);
}

static inline uint32_t pkt_len(const struct rte_mbuf *m)
{
	return rte_pktmbuf_pkt_len(m);
}

/* What a queued packet costs against memory_limit. */
static inline uint32_t pkt_mem(const struct rte_mbuf *m)
{
	return (uint32_t)m->buf_len + (uint32_t)sizeof(struct rte_mbuf);
}

static void fifo_push_tail(struct tl_aqm_fifo *f, struct rte_mbuf *m)
{
	pkt_cb(m)->link = NULL;
	if (f->tail)
		pkt_cb(f->tail)->link = m;
	else
		f->head = m;
	f->tail = m;
}

static struct rte_mbuf *fifo_pop_head(struct tl_aqm_fifo *f)
{
	struct rte_mbuf *m = f->head;

	if (m) {
		f->head = pkt_cb(m)->link;
		if (!f->head)
			f->tail = NULL;
		pkt_cb(m)->link = NULL;
	}
	return m;
}

static void backlog_add(struct tl_aqm *q, const struct rte_mbuf *m)
{
	q->st.backlog_pkts++;
	q->st.backlog_bytes += pkt_len(m);
	q->st.memory_bytes += pkt_mem(m);
}

static void backlog_sub(struct tl_aqm *q, const struct rte_mbuf *m)
{
	q->st.backlog_pkts--;
	q->st.backlog_bytes -= pkt_len(m);
	q->st.memory_bytes -= pkt_mem(m);
}

static void count_drop(struct tl_aqm *q, struct rte_mbuf *m, enum tl_drop why)
{
	if (why == TL_DROP_aqm_codel)
		q->st.drops_codel++;
	else
		q->st.drops_overlimit++;
	if (q->drops)
		q->drops[why]++;
	rte_pktmbuf_free(m);
}

/* ---- inner headers: flow key and ECN ---------------------------------------------- */

struct tl_aqm_key {
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport, dport;
	uint8_t proto, version;
	uint16_t zero;
};

_Static_assert(sizeof(struct tl_aqm_key) % 4 == 0, "the flow key is hashed as 32-bit words");

/* The IP header and the bytes available from it, or NULL; *version is 4 or 6. */
static uint8_t *pkt_l3(const struct tl_aqm *q, const struct rte_mbuf *m, uint32_t *avail, int *version)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);

	if (len < q->l3_offset + 20u)
		return NULL;
	if (q->l3_offset) {
		uint16_t type = (uint16_t)(p[12] << 8 | p[13]);

		if (type != RTE_ETHER_TYPE_IPV4 && type != RTE_ETHER_TYPE_IPV6)
			return NULL;
	}
	p += q->l3_offset;
	*avail = len - q->l3_offset;
	*version = p[0] >> 4;
	if (*version == 6 && *avail < 40)
		return NULL;
	return *version == 4 || *version == 6 ? p : NULL;
}

static bool proto_has_ports(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP ||
	       proto == IPPROTO_UDPLITE || proto == IPPROTO_DCCP;
}

static void key_ports(struct tl_aqm_key *k, const uint8_t *l4, uint32_t avail)
{
	if (!proto_has_ports(k->proto) || avail < 4)
		return;
	k->sport = (uint16_t)(l4[0] << 8 | l4[1]);
	k->dport = (uint16_t)(l4[2] << 8 | l4[3]);
}

/* Every fragment of a datagram hashes on addresses only, so that they stay in order. */
static void key_ipv4(struct tl_aqm_key *k, const uint8_t *p, uint32_t avail)
{
	uint32_t hl = (p[0] & 0xfu) * 4u;
	bool frag = ((p[6] << 8 | p[7]) & 0x3fff) != 0;

	memcpy(k->src, p + 12, 4);
	memcpy(k->dst, p + 16, 4);
	k->proto = p[9];
	if (hl >= 20 && hl <= avail && !frag)
		key_ports(k, p + hl, avail - hl);
}

static bool ipv6_ext_skippable(uint8_t nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING || nh == IPPROTO_DSTOPTS;
}

static void key_ipv6(struct tl_aqm_key *k, const uint8_t *p, uint32_t avail)
{
	uint32_t off = 40;
	uint8_t nh = p[6];

	memcpy(k->src, p + 8, 16);
	memcpy(k->dst, p + 24, 16);
	for (unsigned i = 0; i < 4 && ipv6_ext_skippable(nh) && off + 8 <= avail; i++) {
		nh = p[off];
		off += 8u * (p[off + 1] + 1u);
	}
	k->proto = nh;
	if (off <= avail)
		key_ports(k, p + off, avail - off);
}

uint32_t tl_aqm_classify(const struct tl_aqm *q, const struct rte_mbuf *m)
{
	uint32_t words[sizeof(struct tl_aqm_key) / 4];
	struct tl_aqm_key k;
	uint32_t avail;
	int version;
	const uint8_t *p = pkt_l3(q, m, &avail, &version);

	memset(&k, 0, sizeof(k));
	if (p) {
		k.version = (uint8_t)version;
		if (version == 4)
			key_ipv4(&k, p, avail);
		else
			key_ipv6(&k, p, avail);
	}
	/* The hash reads 32-bit words: hand it words, not a struct written field by field
	 * (reading those fields through a uint32_t pointer breaks C's aliasing rules, and
	 * the optimiser then hashes stale bytes: every flow landed in one bucket). */
	memcpy(words, &k, sizeof(k));
	return rte_jhash_32b(words, RTE_DIM(words), q->seed) & q->cfg.mask;
}

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), on 16-bit words in network order. */
static void ipv4_cksum_adjust(uint8_t *h, uint16_t old_word, uint16_t new_word)
{
	uint32_t sum = (uint16_t)~(uint16_t)(h[10] << 8 | h[11]);

	sum += (uint16_t)~old_word;
	sum += new_word;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	h[10] = (uint8_t)(~sum >> 8);
	h[11] = (uint8_t)~sum;
}

/* The packet's ECN codepoint (0 when it has no IP header). */
static unsigned pkt_ecn(const struct tl_aqm *q, const struct rte_mbuf *m)
{
	uint32_t avail;
	int version;
	const uint8_t *p = pkt_l3(q, m, &avail, &version);

	return p ? (version == 6 ? (p[1] >> 4) & 3u : p[1] & 3u) : 0;
}

/* Sets CE on an ECT packet. True if the packet carries CE now (it may already have). */
static bool pkt_set_ce(const struct tl_aqm *q, struct rte_mbuf *m)
{
	uint32_t avail;
	int version;
	uint8_t *p = pkt_l3(q, m, &avail, &version);
	uint16_t old_word;

	if (!p)
		return false;
	if (version == 6) {
		if (!(p[1] & 0x30))
			return false;
		p[1] |= 0x30;
		return true;
	}
	if (!(p[1] & 0x03))
		return false;
	old_word = (uint16_t)(p[0] << 8 | p[1]);
	p[1] |= 0x03;
	ipv4_cksum_adjust(p, old_word, (uint16_t)(p[0] << 8 | p[1]));
	return true;
}

/* ---- flows and lists -------------------------------------------------------------- */

static void list_push_tail(struct tl_aqm_list *l, struct tl_aqm_flow *f, uint8_t id)
{
	f->next = NULL;
	f->list = id;
	if (l->tail)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
	l->len++;
}

static struct tl_aqm_flow *list_pop_head(struct tl_aqm_list *l)
{
	struct tl_aqm_flow *f = l->head;

	l->head = f->next;
	if (!l->head)
		l->tail = NULL;
	l->len--;
	f->next = NULL;
	f->list = TL_AQM_LIST_NONE;
	return f;
}

static void flow_push(struct tl_aqm *q, struct tl_aqm_flow *f, struct rte_mbuf *m)
{
	fifo_push_tail(&f->pkts, m);
	f->backlog += pkt_len(m);
	backlog_add(q, m);
}

static struct rte_mbuf *flow_pop(struct tl_aqm *q, struct tl_aqm_flow *f)
{
	struct rte_mbuf *m = fifo_pop_head(&f->pkts);

	if (m) {
		f->backlog -= pkt_len(m);
		backlog_sub(q, m);
	}
	return m;
}

/* Active flows are all on the two lists: O(active flows), amortised by the batch. */
static struct tl_aqm_flow *flow_fattest(struct tl_aqm *q)
{
	struct tl_aqm_flow *best = NULL;
	struct tl_aqm_flow *lists[2] = { q->new_flows.head, q->old_flows.head };

	for (unsigned i = 0; i < 2; i++)
		for (struct tl_aqm_flow *f = lists[i]; f; f = f->next)
			if (f->backlog && (!best || f->backlog > best->backlog))
				best = f;
	return best;
}

/* Drops from the head of f up to TL_AQM_DROP_BATCH packets or half its bytes. True if
 * `arrival` was among them. */
static bool flow_drop_batch(struct tl_aqm *q, struct tl_aqm_flow *f, const struct rte_mbuf *arrival)
{
	uint64_t threshold = f->backlog / 2, len = 0;
	unsigned i = 0;
	bool self = false;

	do {
		struct rte_mbuf *m = flow_pop(q, f);

		len += pkt_len(m);
		self |= m == arrival;
		count_drop(q, m, TL_DROP_aqm_overlimit);
	} while (++i < TL_AQM_DROP_BATCH && len < threshold && f->pkts.head);
	q->st.overlimit_events++;
	return self;
}

static bool over_limit(const struct tl_aqm *q)
{
	return q->st.backlog_pkts > q->cfg.limit || q->st.memory_bytes > q->cfg.memory_limit ||
	       (q->cfg.byte_limit && q->st.backlog_bytes > q->cfg.byte_limit);
}

static bool trim(struct tl_aqm *q, const struct rte_mbuf *arrival)
{
	bool self = false;

	while (over_limit(q)) {
		struct tl_aqm_flow *f = flow_fattest(q);

		if (!f)
			break;
		self |= flow_drop_batch(q, f, arrival);
	}
	return self;
}

/* ---- the drop law: CoDel's (RFC 8289) with COBALT's memory --------------------------- *
 *
 * The signal times follow CoDel's control law: the first one interval after the flow's
 * sojourn rose above target, then every interval / sqrt(count) while it stays above. As
 * in COBALT (CAKE), count is not restarted when the sojourn falls below target: it decays
 * by one at each would-be signal time while the flow is below, and a flow that rises
 * again resumes at the rate it had decayed to. Short dips therefore do not hold the rate
 * flat (RFC 8289's count - lastcount restart can), and a flow below target long enough
 * starts afresh. A mark (not a drop) that is due waits while the flow still answers the
 * last one: see codel_mark_waits. */

static inline bool time_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static uint64_t isqrt64(uint64_t x)
{
	uint64_t r;

	if (x < 2)
		return x;
	r = 1ull << ((64 - __builtin_clzll(x) + 1) / 2);
	for (;;) {
		uint64_t n = (r + x / r) / 2;

		if (n >= r)
			return r;
		r = n;
	}
}

/* interval / sqrt(count), in 16.16 fixed point for the square root. */
static uint64_t codel_gap(const struct tl_aqm_cfg *c, uint32_t count)
{
	return (c->interval_ns << 16) / isqrt64((uint64_t)RTE_MAX(count, 1u) << 32);
}

static inline uint64_t sojourn_of(struct rte_mbuf *m, uint64_t now)
{
	return time_before(now, pkt_cb(m)->enq_ns) ? 0 : now - pkt_cb(m)->enq_ns;
}

/* Below target: count decays by one at each signal time that has passed. */
static void codel_decay(const struct tl_aqm_cfg *c, struct tl_aqm_codel *cv, uint64_t now)
{
	if (cv->count && (int64_t)(now - cv->drop_next_ns) > (int64_t)(16 * c->interval_ns))
		cv->count = 0;      /* long below target: every step has passed */
	while (cv->count && !time_before(now, cv->drop_next_ns)) {
		cv->count--;
		cv->drop_next_ns += codel_gap(c, cv->count);
	}
}

/* The sojourn's trend, sampled once per interval on the head packet. */
static void codel_trend(const struct tl_aqm_cfg *c, struct tl_aqm_codel *cv, uint64_t sojourn, uint64_t now)
{
	if (now - cv->trend_ns < c->interval_ns)
		return;
	cv->falling = sojourn < cv->trend_sojourn_ns;
	cv->trend_sojourn_ns = sojourn;
	cv->trend_ns = now;
}

/* A mark that is due waits while the flow is still answering the last one (RFC 3168: a
 * sender reduces once per window, over one round trip, and ignores the echoes of the
 * packets it sent before): while the sojourn is falling, and for packets enqueued less than
 * an interval after the last mark. CoDel's schedule assumes every signal can take effect;
 * one classic flow on a path longer than the interval is otherwise marked again on the
 * packets it sent while reducing, and cuts its window twice (0.49) where once would do. */
static bool codel_mark_waits(const struct tl_aqm *q, const struct tl_aqm_codel *cv, struct rte_mbuf *m)
{
	unsigned ecn = pkt_ecn(q, m);   /* ECT(0) or ECT(1): CE already tells the sender */

	return q->cfg.ecn && (ecn == 1 || ecn == 2) &&
	       (cv->falling || time_before(pkt_cb(m)->enq_ns, cv->mark_quiet_ns));
}

/* The target a flow is judged against: the queue's, or flow_rtt_pct of the flow's round
 * trip when that is longer (at most half the interval). Looked up at most once per
 * TL_AQM_FLOW_TARGET_NS per bucket, and only for packets above the queue's target. */
#define TL_AQM_FLOW_TARGET_NS (10 * 1000 * 1000ull)

static uint64_t flow_target(struct tl_aqm *q, struct tl_aqm_flow *f, struct rte_mbuf *m, uint64_t now)
{
	uint64_t rtt, t;
	uint32_t avail;
	int version;
	const uint8_t *p;

	if (!q->rtt || !q->cfg.flow_rtt_pct)
		return q->cfg.target_ns;
	if (f->target_at && !time_before(f->target_at + TL_AQM_FLOW_TARGET_NS, now))
		return f->target_ns;
	p = pkt_l3(q, m, &avail, &version);
	rtt = p ? tl_flowrtt_get(q->rtt, p, avail, now) : 0;
	t = RTE_MIN(rtt * q->cfg.flow_rtt_pct / 100, q->cfg.interval_ns / 2);
	f->target_ns = RTE_MAX(t, q->cfg.target_ns);
	f->target_at = now;
	return f->target_ns;
}

/* The flow's packet leaves the queue: the start of a round-trip sample once its sojourn
 * is half the target (before that no flow needs one; so a queue that never builds costs
 * nothing). */
static void flow_sent(struct tl_aqm *q, struct rte_mbuf *m, uint64_t now)
{
	uint32_t avail;
	int version;
	const uint8_t *p;

	if (!q->rtt || !q->cfg.flow_rtt_pct || sojourn_of(m, now) < q->cfg.target_ns / 2)
		return;
	p = pkt_l3(q, m, &avail, &version);
	if (p)
		tl_flowrtt_sent(q->rtt, p, avail, now);
}

/* The head packet m (just taken off flow f): true if it is to be signalled (marked or
 * dropped) now. */
static bool codel_judge(struct tl_aqm *q, struct tl_aqm_flow *f, struct rte_mbuf *m, uint64_t now)
{
	struct tl_aqm_codel *cv = &f->cv;
	uint64_t sojourn = sojourn_of(m, now);

	codel_trend(&q->cfg, cv, sojourn, now);
	if (sojourn < q->cfg.target_ns || q->st.backlog_bytes <= q->maxpacket ||
	    (sojourn < flow_target(q, f, m, now) && ++q->st.rtt_held)) {
		cv->dropping = false;
		codel_decay(&q->cfg, cv, now);
		return false;
	}
	if (!cv->dropping) {
		codel_decay(&q->cfg, cv, now);
		cv->dropping = true;
		cv->drop_next_ns = now + codel_gap(&q->cfg, cv->count);
		return false;
	}
	if (time_before(now, cv->drop_next_ns) || codel_mark_waits(q, cv, m))
		return false;
	cv->mark_quiet_ns = now + q->cfg.interval_ns;
	if (cv->count < UINT32_MAX)
		cv->count++;
	cv->drop_next_ns += codel_gap(&q->cfg, cv->count);
	return true;
}

static bool codel_mark(struct tl_aqm *q, struct rte_mbuf *m)
{
	if (!q->cfg.ecn || !pkt_set_ce(q, m))
		return false;
	q->st.ecn_marks++;
	return true;
}

/* L4S (RFC 9331): an ECT(1) packet that waited l4s_ns or more is marked CE. */
static void l4s_step(struct tl_aqm *q, struct rte_mbuf *m, uint64_t now)
{
	if (!q->cfg.l4s_ns || !q->cfg.ecn || sojourn_of(m, now) < q->cfg.l4s_ns)
		return;
	if (pkt_ecn(q, m) == 1 && pkt_set_ce(q, m)) {
		q->st.ecn_marks++;
		q->st.l4s_marks++;
	}
}

/* The flow's next packet that the law lets through (marked, perhaps), or NULL. */
static struct rte_mbuf *codel_dequeue(struct tl_aqm *q, struct tl_aqm_flow *f, uint64_t now)
{
	struct rte_mbuf *m;

	while ((m = flow_pop(q, f))) {
		if (!codel_judge(q, f, m, now) || codel_mark(q, m)) {
			l4s_step(q, m, now);
			flow_sent(q, m, now);
			return m;
		}
		count_drop(q, m, TL_DROP_aqm_codel);
	}
	f->cv.dropping = false;
	return NULL;
}

/* A delivered packet, served from the new list (sparse) or the old (bulk): its sojourn and
 * the bytes served since its arrival, before its own. */
static void serve_record(struct tl_aqm *q, struct rte_mbuf *m, unsigned cls, uint64_t now)
{
	struct tl_aqm_class_stats *c = &q->st.cls[cls];
	uint64_t s = sojourn_of(m, now), ahead = q->st.served_bytes - pkt_cb(m)->served;

	q->st.served_bytes += pkt_len(m);
	c->sojourn_hist[tl_aqm_hist_index(s)]++;
	c->ahead_hist[tl_aqm_hist_index(ahead)]++;
	if (s > c->sojourn_max_ns)
		c->sojourn_max_ns = s;
	if (ahead > c->ahead_max_bytes)
		c->ahead_max_bytes = ahead;
}

/* ---- DRR over the new and old lists (RFC 8290 §4.2) -------------------------------- */

static struct rte_mbuf *drr_dequeue(struct tl_aqm *q, uint64_t now)
{
	for (;;) {
		struct tl_aqm_list *l = q->new_flows.head ? &q->new_flows : &q->old_flows;
		struct tl_aqm_flow *f = l->head;
		struct rte_mbuf *m;

		if (!f)
			return NULL;
		if (f->deficit <= 0) {
			f->deficit += (int32_t)q->cfg.quantum;
			list_push_tail(&q->old_flows, list_pop_head(l), TL_AQM_LIST_OLD);
			continue;
		}
		m = codel_dequeue(q, f, now);
		if (m) {
			f->deficit -= (int32_t)pkt_len(m);
			serve_record(q, m, l == &q->new_flows ? TL_AQM_SPARSE : TL_AQM_BULK, now);
			return m;
		}
		/* Empty: a new flow passes through the old list once (no starvation). */
		list_pop_head(l);
		if (l == &q->new_flows && q->old_flows.head)
			list_push_tail(&q->old_flows, f, TL_AQM_LIST_OLD);
	}
}

/* ---- API ---------------------------------------------------------------------------- */

/* Frame on the wire at most (MTU 1500 + Ethernet 14 + TL_WIRE_OVERHEAD), for the target's floor. */
#define TL_AQM_FRAME_MAX 1538u
#define TL_AQM_BYTE_LIMIT_MIN (4ull << 20)

/* Target and interval from rtt_us (or target_us/interval_us) and the rate, as CAKE's: the
 * target never below two frame times at rate, the interval lengthened by what the target
 * gained and at least twice the target; the byte limit 4 intervals at rate, >= 4 MiB; the
 * quantum_fast while not shaped below TL_AQM_FAST_RATE (CAKE's split of GSO packets). */
static void cfg_from_params(struct tl_aqm_cfg *c, const struct tl_aqm_params *p, uint64_t rate_bps)
{
	uint64_t target = p->rtt_us ? (uint64_t)p->rtt_us * 1000 / 20 : (uint64_t)p->target_us * 1000;
	uint64_t interval = p->rtt_us ? (uint64_t)p->rtt_us * 1000 : (uint64_t)p->interval_us * 1000;

	c->rate_bps = rate_bps;
	c->byte_limit = 0;
	if (rate_bps) {
		uint64_t floor = 2 * TL_AQM_FRAME_MAX * 8000000000ull / rate_bps;

		if (target < floor) {
			interval += floor - target;
			target = floor;
		}
		interval = RTE_MAX(interval, 2 * target);
		c->byte_limit = RTE_MAX(TL_AQM_BYTE_LIMIT_MIN,
					(uint64_t)((unsigned __int128)4 * rate_bps / 8 * interval / 1000000000ull));
	}
	c->target_ns = target;
	c->interval_ns = interval;
	c->l4s_ns = (uint64_t)p->l4s_us * 1000;
	c->flow_rtt_pct = p->flow_rtt_pct;
	c->memory_limit = p->memory_limit;
	c->quantum = p->quantum;
	if (p->quantum_fast > p->quantum && (!rate_bps || rate_bps >= TL_AQM_FAST_RATE))
		c->quantum = p->quantum_fast;
	c->mask = p->flows - 1;
	c->limit = p->limit;
	c->ecn = p->ecn;
}

static int cb_register(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "tl_aqm_cb",
		.size = sizeof(struct tl_aqm_cb),
		.align = __alignof__(struct tl_aqm_cb),
	};
	int off;

	if (tl_aqm_cb_offset >= 0)
		return 0;
	off = rte_mbuf_dynfield_register(&desc);
	if (off < 0)
		return -1;
	tl_aqm_cb_offset = off;
	return 0;
}

static struct tl_aqm_flow *flows_alloc(uint32_t n, int socket)
{
	return rte_zmalloc_socket("tl_aqm_flows", (size_t)n * sizeof(struct tl_aqm_flow), RTE_CACHE_LINE_SIZE,
				  socket);
}

struct tl_aqm *tl_aqm_create(const char *name, const struct tl_aqm_params *p, unsigned l3_offset, int socket)
{
	struct tl_aqm *q;

	if (!p || tl_aqm_params_check(p) || (l3_offset != 0 && l3_offset != RTE_ETHER_HDR_LEN)) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (cb_register() < 0)
		return NULL;
	q = rte_zmalloc_socket(name, sizeof(*q), RTE_CACHE_LINE_SIZE, socket);
	if (!q) {
		rte_errno = ENOMEM;
		return NULL;
	}
	q->flows = flows_alloc(p->flows, socket);
	if (!q->flows) {
		rte_free(q);
		rte_errno = ENOMEM;
		return NULL;
	}
	q->params = *p;
	cfg_from_params(&q->cfg, p, 0);
	q->l3_offset = l3_offset;
	q->socket = socket;
	q->seed = (uint32_t)rte_rand();
	return q;
}

static void fifo_free(struct tl_aqm_fifo *f)
{
	struct rte_mbuf *m;

	while ((m = fifo_pop_head(f)))
		rte_pktmbuf_free(m);
}

void tl_aqm_free(struct tl_aqm *q)
{
	if (!q)
		return;
	fifo_free(&q->held);
	for (uint32_t i = 0; i <= q->cfg.mask; i++)
		fifo_free(&q->flows[i].pkts);
	rte_free(q->flows);
	rte_free(q);
}

static const char *flows_resize(struct tl_aqm *q, uint32_t n)
{
	struct tl_aqm_flow *flows;

	if (q->st.backlog_pkts)
		return "flows: can only change while the queue is empty";
	flows = flows_alloc(n, q->socket);
	if (!flows)
		return "flows: out of memory";
	rte_free(q->flows);
	q->flows = flows;
	memset(&q->new_flows, 0, sizeof(q->new_flows));
	memset(&q->old_flows, 0, sizeof(q->old_flows));
	return NULL;
}

const char *tl_aqm_set_params(struct tl_aqm *q, const struct tl_aqm_params *p)
{
	const char *err = tl_aqm_params_check(p);

	if (!err && p->flows != q->params.flows)
		err = flows_resize(q, p->flows);
	if (err)
		return err;
	q->params = *p;
	cfg_from_params(&q->cfg, p, q->cfg.rate_bps);
	trim(q, NULL);
	return NULL;
}

void tl_aqm_set_rate(struct tl_aqm *q, uint64_t rate_bps)
{
	cfg_from_params(&q->cfg, &q->params, rate_bps);
	trim(q, NULL);
}

void tl_aqm_attach_flowrtt(struct tl_aqm *q, struct tl_flowrtt *t)
{
	q->rtt = t;
}

void tl_aqm_attach_drops(struct tl_aqm *q, uint64_t *drops)
{
	q->drops = drops;
}

int tl_aqm_enqueue(struct tl_aqm *q, struct rte_mbuf *m, uint64_t now_ns)
{
	struct tl_aqm_flow *f = &q->flows[tl_aqm_classify(q, m)];

	pkt_cb(m)->enq_ns = now_ns;
	pkt_cb(m)->served = q->st.served_bytes;
	flow_push(q, f, m);
	q->st.enqueued++;
	if (pkt_len(m) > q->maxpacket)
		q->maxpacket = pkt_len(m);
	if (f->list == TL_AQM_LIST_NONE) {
		list_push_tail(&q->new_flows, f, TL_AQM_LIST_NEW);
		f->deficit = (int32_t)q->cfg.quantum;
		q->st.new_flows_count++;
	}
	return over_limit(q) && trim(q, m);
}

unsigned tl_aqm_dequeue_burst(struct tl_aqm *q, struct rte_mbuf **out, unsigned n, uint64_t now_ns)
{
	unsigned k = 0;

	for (; k < n && q->held.head; k++) {
		out[k] = fifo_pop_head(&q->held);
		backlog_sub(q, out[k]);
		q->held_n--;
	}
	for (; k < n; k++) {
		out[k] = drr_dequeue(q, now_ns);
		if (!out[k])
			break;
	}
	q->st.dequeued += k;
	return k;
}

void tl_aqm_requeue_head(struct tl_aqm *q, struct rte_mbuf **pkts, unsigned n)
{
	struct tl_aqm_fifo chain = { NULL, NULL };

	if (n == 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		fifo_push_tail(&chain, pkts[i]);
		backlog_add(q, pkts[i]);
	}
	pkt_cb(chain.tail)->link = q->held.head;
	if (!q->held.head)
		q->held.tail = chain.tail;
	q->held.head = chain.head;
	q->held_n += n;
	q->st.dequeued -= n;
	q->st.requeued += n;
}

unsigned tl_aqm_requeued_pending(const struct tl_aqm *q)
{
	return q->held_n;
}

uint64_t tl_aqm_backlog(const struct tl_aqm *q)
{
	return q->st.backlog_pkts;
}

void tl_aqm_stats_get(const struct tl_aqm *q, struct tl_aqm_stats *s)
{
	*s = q->st;
	s->target_ns = q->cfg.target_ns;
	s->interval_ns = q->cfg.interval_ns;
	s->byte_limit = q->cfg.byte_limit;
	s->quantum = q->cfg.quantum;
	s->flows_new = q->new_flows.len;
	s->flows_old = q->old_flows.len;
	s->sojourn_max_ns = RTE_MAX(q->st.cls[TL_AQM_SPARSE].sojourn_max_ns, q->st.cls[TL_AQM_BULK].sojourn_max_ns);
}
