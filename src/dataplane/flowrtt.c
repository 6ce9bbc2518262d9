/* Each TCP flow's round trip from its timestamps: the segment parser, the table's slots. */
#include <netinet/in.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_random.h>
#include <rte_tcp.h>

#include "dataplane/flowrtt.h"

#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_TS 8
#define TCPOLEN_TS 10

/* What the table needs of a TCP segment. */
struct seg {
	uint32_t key[9];          /* addresses and ports, in the data direction */
	unsigned key_words;
	uint32_t tsval, tsecr;
	uint32_t payload;         /* TCP payload bytes */
	uint8_t flags;
	bool ts;                  /* a well-formed timestamp option was found */
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The timestamp option among the options [o, o + len). */
static void tcp_ts(const uint8_t *o, uint32_t len, struct seg *s)
{
	uint32_t i = 0;

	while (i < len) {
		uint8_t kind = o[i], olen;

		if (kind == TCPOPT_EOL)
			return;
		if (kind == TCPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return;
		olen = o[i + 1];
		if (olen < 2 || olen > len - i)
			return;
		if (kind == TCPOPT_TS && olen == TCPOLEN_TS) {
			s->tsval = be32(o + i + 2);
			s->tsecr = be32(o + i + 6);
			s->ts = true;
			return;
		}
		i += olen;
	}
}

/* The key words: source, destination, ports; swapped when the packet goes against the data
 * direction (an acknowledgement from the peer), so both directions name one flow. */
static void key_put(struct seg *s, const uint8_t *src, const uint8_t *dst, unsigned alen, const uint8_t *l4,
		    bool reverse)
{
	uint16_t sport = (uint16_t)(l4[0] << 8 | l4[1]), dport = (uint16_t)(l4[2] << 8 | l4[3]);

	if (reverse) {
		const uint8_t *a = src;
		uint16_t p = sport;

		src = dst;
		dst = a;
		sport = dport;
		dport = p;
	}
	memcpy(s->key, src, alen);
	memcpy((uint8_t *)s->key + alen, dst, alen);
	s->key[2 * alen / 4] = (uint32_t)sport << 16 | dport;
	s->key_words = 2 * alen / 4 + 1;
}

/* False unless l3 holds a whole IP packet (its length within avail) with a whole TCP header,
 * options included: unfragmented IPv4, or IPv6 without extension headers. */
static bool seg_parse(const uint8_t *l3, uint32_t avail, bool reverse, struct seg *s)
{
	uint32_t end, l4, doff;
	unsigned alen;

	memset(s, 0, sizeof(*s));
	if (avail < 20)
		return false;
	if (l3[0] >> 4 == 4) {
		uint32_t hl = (l3[0] & 0xfu) * 4u;

		end = (uint32_t)(l3[2] << 8 | l3[3]);
		if (hl < 20 || l3[9] != IPPROTO_TCP || ((l3[6] << 8 | l3[7]) & 0x3fff) != 0 || end < hl)
			return false;
		l4 = hl;
		alen = 4;
	} else if (l3[0] >> 4 == 6) {
		if (avail < 40 || l3[6] != IPPROTO_TCP)
			return false;
		end = 40u + (uint32_t)(l3[4] << 8 | l3[5]);
		l4 = 40;
		alen = 16;
	} else {
		return false;
	}
	if (end > avail || end < l4 + 20)
		return false;
	doff = (uint32_t)(l3[l4 + 12] >> 4) * 4u;
	if (doff < 20 || l4 + doff > end)
		return false;
	key_put(s, l3 + (alen == 4 ? 12 : 8), l3 + (alen == 4 ? 16 : 24), alen, l3 + l4, reverse);
	s->flags = l3[l4 + 13];
	s->payload = end - l4 - doff;
	tcp_ts(l3 + l4 + 20, doff - 20, s);
	return true;
}

/* The flow's slot, and its tag (the high word of `pending` and `rtt`, never 0). */
static uint32_t slot_of(const struct tl_flowrtt *t, const struct seg *s, uint64_t *tag)
{
	uint32_t h = rte_jhash_32b(s->key, s->key_words, t->seed);

	*tag = (uint64_t)(h | 1u) << 32;
	return h & (TL_FLOWRTT_SLOTS - 1);
}

#define TAG_OF(w) ((w) & ~0xffffffffull)
#define LOW_OF(w) ((w) & 0xffffffffull)

/* More than span after then (the workers' clocks may be read a little apart). */
static bool older(uint64_t now, uint64_t then, uint64_t span)
{
	return (int64_t)(now - then) > (int64_t)span;
}

struct tl_flowrtt *tl_flowrtt_create(const char *name, int socket)
{
	struct tl_flowrtt *t = rte_zmalloc_socket(name, sizeof(*t), RTE_CACHE_LINE_SIZE, socket);

	if (!t) {
		rte_errno = ENOMEM;
		return NULL;
	}
	t->seed = (uint32_t)rte_rand();
	return t;
}

void tl_flowrtt_free(struct tl_flowrtt *t)
{
	rte_free(t);
}

/* The estimate of the slot if it is the flow's (tag) and not forgotten, in µs; else 0. */
static uint64_t estimate_us(const struct tl_flowrtt_slot *sl, uint64_t tag, uint64_t now)
{
	uint64_t r = atomic_load_explicit(&sl->rtt, memory_order_relaxed);

	if (!r || TAG_OF(r) != tag || older(now, atomic_load_explicit(&sl->rtt_at, memory_order_relaxed), TL_FLOWRTT_KEEP_NS))
		return 0;
	return LOW_OF(r);
}

void tl_flowrtt_sent(struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail, uint64_t now)
{
	struct tl_flowrtt_slot *sl;
	struct seg s;
	uint64_t tag, p, r;

	if (!seg_parse(l3, avail, false, &s) || !s.ts || (s.flags & RTE_TCP_RST_FLAG) ||
	    !(s.payload || (s.flags & (RTE_TCP_SYN_FLAG | RTE_TCP_FIN_FLAG))))
		return;
	sl = &t->slot[slot_of(t, &s, &tag)];
	p = atomic_load_explicit(&sl->pending, memory_order_relaxed);
	if (p && !older(now, atomic_load_explicit(&sl->sent_ns, memory_order_relaxed), TL_FLOWRTT_STALE_NS))
		return;     /* a sample in flight (this flow's or another's) */
	r = atomic_load_explicit(&sl->rtt, memory_order_relaxed);
	if (r && TAG_OF(r) != tag && estimate_us(sl, TAG_OF(r), now))
		return;     /* the slot holds another flow's estimate */
	atomic_store_explicit(&sl->sent_ns, now, memory_order_relaxed);
	if (atomic_compare_exchange_strong_explicit(&sl->pending, &p, tag | s.tsval, memory_order_release,
						    memory_order_relaxed))
		atomic_store_explicit(&t->last_start_ns, now, memory_order_relaxed);
}

uint64_t tl_flowrtt_ack(struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail, uint64_t now)
{
	struct tl_flowrtt_slot *sl;
	struct seg s;
	uint64_t tag, p, sent, rtt, us, r;

	if (!seg_parse(l3, avail, true, &s) || !s.ts || !(s.flags & RTE_TCP_ACK_FLAG))
		return 0;
	sl = &t->slot[slot_of(t, &s, &tag)];
	p = atomic_load_explicit(&sl->pending, memory_order_acquire);
	if (!p || TAG_OF(p) != tag || (int32_t)(s.tsecr - (uint32_t)p) < 0)
		return 0;
	sent = atomic_load_explicit(&sl->sent_ns, memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&sl->pending, &p, 0, memory_order_relaxed,
						     memory_order_relaxed))
		return 0;
	rtt = now - sent;
	if ((int64_t)rtt <= 0 || rtt > TL_FLOWRTT_STALE_NS)
		return 0;
	us = RTE_MIN(RTE_MAX(rtt / 1000, 1ull), 0xffffffffull);
	r = atomic_load_explicit(&sl->rtt, memory_order_relaxed);
	if (TAG_OF(r) != tag || us <= LOW_OF(r) ||
	    older(now, atomic_load_explicit(&sl->rtt_at, memory_order_relaxed), TL_FLOWRTT_WINDOW_NS)) {
		atomic_store_explicit(&sl->rtt, tag | us, memory_order_relaxed);
		atomic_store_explicit(&sl->rtt_at, now, memory_order_relaxed);
	}
	return rtt;
}

uint64_t tl_flowrtt_get(const struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail, uint64_t now)
{
	struct seg s;
	uint64_t tag;
	uint32_t i;

	if (!seg_parse(l3, avail, false, &s))
		return 0;
	i = slot_of(t, &s, &tag);
	return estimate_us(&t->slot[i], tag, now) * 1000;
}

uint32_t tl_flowrtt_slot(const struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail)
{
	struct seg s;
	uint64_t tag;

	return seg_parse(l3, avail, false, &s) ? slot_of(t, &s, &tag) : UINT32_MAX;
}
