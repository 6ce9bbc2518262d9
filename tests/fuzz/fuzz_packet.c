/* libFuzzer harness for the dataplane's frame parsers and the egress AQM, on arbitrary
 * frames in mbufs of a real mempool (EAL is brought up once, without hugepages or PCI).
 *
 * Input: one config byte, then records [op][len lo][len hi][len bytes of frame]. The config
 * byte picks the AQM side (bit 0: LAN, IP header after Ethernet; else WAN, IP header
 * first), ECN marking (bit 1) and the tunnel MTU (576 + 16 * (bits 2..7)). Each frame goes
 *  - as a WAN frame through tl_pkt_parse_outer (mbuf),
 *  - as bytes through tl_pkt_parse_inner (whole frame, and after its Ethernet header),
 *  - when encap would answer it with an ICMP error (IPv4/IPv6 Ethernet type, valid inner
 *    packet longer than the MTU), through tl_pkt_make_too_big, and the error is checked,
 *  - as bytes through the flows' round-trip table (tl_flowrtt_sent, _ack, _get, exactly
 *    the frame's bytes, as from the IP header on),
 *  - through tl_aqm_classify and into a small AQM, which has the round-trip table, (few flows, tight limits, ms-scale CoDel)
 *    at a virtual time; op bits 3..7 advance the clock (2 ms steps), bits 0..1 dequeue 0, 1,
 *    4 or all packets, bit 2 gives the second half of a dequeued burst back.
 * At the end the clock jumps and the AQM is drained.
 *
 * Oracles besides the sanitizers: the bytes around each frame inside its mbuf (headroom,
 * tailroom) are poisoned, so a parser reading outside the frame is an ASan report; parse
 * results point inside the frame; the ICMP error is well formed (lengths, checksums, quote
 * size, addressed to the sender); a packet leaves the AQM with its length and bytes
 * unchanged but for CE marking of an ECT packet (with the IPv4 header checksum still
 * right); the AQM counters balance (enqueued = dequeued + dropped + queued) and the
 * mempool holds exactly the queued packets whenever the harness holds none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_random.h>
#include <sanitizer/asan_interface.h>

#include "dataplane/aqm.h"
#include "dataplane/flowrtt.h"
#include "dataplane/packet.h"
#include "dataplane/runtime.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LISTEN_PORT 51820
#define MS 1000000ull
#define SNAP 128                 /* frame bytes remembered to check what the AQM changed */
#define MAX_FRAME RTE_MBUF_DEFAULT_DATAROOM

struct snap {
	uint16_t len;
	uint8_t b[SNAP];
};

static struct rte_mempool *mp;
static struct tl_flowrtt *frtt;

/* Buffers the AQM dropped went back to the pool still poisoned. */
static void unpoison(struct rte_mempool *pool, void *arg, void *obj, unsigned i)
{
	struct rte_mbuf *m = obj;

	(void)pool, (void)arg, (void)i;
	ASAN_UNPOISON_MEMORY_REGION(m->buf_addr, m->buf_len);
}

static void eal_down(void)
{
	tl_flowrtt_free(frtt);
	rte_mempool_obj_iter(mp, unpoison, NULL);
	rte_mempool_free(mp);
	rte_eal_cleanup();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char prefix[64], runtime_dir[4096];
	char *eal[] = { (*argv)[0], "--no-huge", "-m", "128", "--no-pci", "--no-shconf", "--no-telemetry",
			"--file-prefix", prefix, "--log-level", "lib.eal:error", NULL };

	(void)argc;
	snprintf(prefix, sizeof(prefix), "fz%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "EAL init: %s\n", rte_strerror(rte_errno));
		abort();
	}
	/* Nothing is kept there without shared config or telemetry: gone at once, so that a
	 * crashing run (no exit handlers) leaves no directory behind either. */
	tl_runtime_dir_save(runtime_dir, sizeof(runtime_dir));
	tl_runtime_dir_remove(runtime_dir);
	mp = rte_pktmbuf_pool_create("fz_pkt", 255, 0, RTE_ALIGN(sizeof(struct snap), RTE_MBUF_PRIV_ALIGN),
				     RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	frtt = tl_flowrtt_create("fz_flowrtt", SOCKET_ID_ANY);
	if (!mp || !frtt) {
		fprintf(stderr, "mempool, flowrtt: %s\n", rte_strerror(rte_errno));
		abort();
	}
	atexit(eal_down);
	return 0;
}

/* ---- mbufs: the frame, with the bytes before and after it poisoned ---------------------- */

static struct rte_mbuf *mk(const uint8_t *p, uint16_t len, bool poison_head)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *d;

	if (!m)
		return NULL;
	ASAN_UNPOISON_MEMORY_REGION(m->buf_addr, m->buf_len);   /* poisoned by its last use */
	d = (uint8_t *)rte_pktmbuf_append(m, len);
	if (!d)
		abort();
	memcpy(d, p, len);
	if (poison_head)
		ASAN_POISON_MEMORY_REGION(m->buf_addr, m->data_off);
	ASAN_POISON_MEMORY_REGION(d + len, (size_t)((uint8_t *)m->buf_addr + m->buf_len - (d + len)));
	return m;
}

static void release(struct rte_mbuf *m)
{
	ASAN_UNPOISON_MEMORY_REGION(m->buf_addr, m->buf_len);
	rte_pktmbuf_free(m);
}

/* ---- parsers ------------------------------------------------------------------------------- */

/* The WAN port the frame is addressed to: its own destination MAC and address, so that
 * inputs get past the destination checks to the checksums and the UDP header. */
static const struct tl_port_info *wan_of(const uint8_t *p, uint16_t len)
{
	static struct tl_port_info wan;

	memset(&wan, 0, sizeof(wan));
	if (len >= TL_ETH_LEN)
		memcpy(wan.mac, p, 6);
	if (len >= TL_ETH_LEN + 20) {
		memcpy(wan.ip4, p + TL_ETH_LEN + 16, 4);
		wan.has_ip4 = true;
	}
	if (len >= TL_ETH_LEN + 40) {
		memcpy(wan.ip6, p + TL_ETH_LEN + 24, 16);
		wan.has_ip6 = true;
	}
	return &wan;
}

static void fuzz_outer(const uint8_t *p, uint16_t len)
{
	struct rte_mbuf *m = mk(p, len, true);
	struct tl_outer o;
	const uint8_t *start;

	if (!m)
		return;
	start = rte_pktmbuf_mtod(m, const uint8_t *);
	if (tl_pkt_parse_outer(m, wan_of(p, len), LISTEN_PORT, &o) == TL_DROP_MAX) {
		unsigned l3 = o.family == AF_INET ? (p[14] & 0xfu) * 4u : 40u;

		/* the data starts at the UDP payload, which ends where the UDP length says */
		if ((o.family != AF_INET && o.family != AF_INET6) || o.ecn > 3 ||
		    rte_pktmbuf_mtod(m, const uint8_t *) != start + TL_ETH_LEN + l3 + 8 ||
		    m->data_len != (unsigned)((p[TL_ETH_LEN + l3 + 4] << 8 | p[TL_ETH_LEN + l3 + 5]) - 8) ||
		    m->data_len + TL_ETH_LEN + l3 + 8 > len || m->pkt_len != m->data_len ||
		    o.src_port != (p[TL_ETH_LEN + l3] << 8 | p[TL_ETH_LEN + l3 + 1]) || o.hdr_len != TL_ETH_LEN + l3 + 8)
			abort();
		tl_pkt_outer_udp_check(m, &o);
	}
	release(m);
}

static void fuzz_inner_at(const uint8_t *p, uint32_t len)
{
	uint8_t *copy = malloc(len ? len : 1);     /* exactly the bytes: ASan sees an overread */
	struct tl_inner in;

	if (!copy)
		return;
	memcpy(copy, p, len);
	if (tl_pkt_parse_inner(copy, len, &in) == TL_DROP_MAX) {
		unsigned alen = in.family == AF_INET ? 4 : 16;

		if ((in.family != AF_INET && in.family != AF_INET6) || in.len > len || in.ecn > 3 ||
		    in.len < (in.family == AF_INET ? 20 : 40) || in.src < copy || in.dst < copy ||
		    in.src + alen > copy + in.len || in.dst + alen > copy + in.len)
			abort();
	}
	free(copy);
}

/* A sample started and ended by the same bytes is at most the stale bound; an estimate fits
 * its 32 bits of µs. */
static void fuzz_flowrtt(const uint8_t *p, uint32_t len, uint64_t now)
{
	uint8_t *copy = malloc(len ? len : 1);     /* exactly the bytes: ASan sees an overread */

	if (!copy)
		return;
	memcpy(copy, p, len);
	tl_flowrtt_sent(frtt, copy, len, now);
	if (tl_flowrtt_ack(frtt, copy, len, now + MS) > TL_FLOWRTT_STALE_NS ||
	    tl_flowrtt_get(frtt, copy, len, now) > 0xffffffffull * 1000 ||
	    (tl_flowrtt_slot(frtt, copy, len) != UINT32_MAX && tl_flowrtt_slot(frtt, copy, len) >= TL_FLOWRTT_SLOTS))
		abort();
	free(copy);
}

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static const struct tl_port_info lan = {
	.mac = { 0x02, 0, 0, 0, 0, 1 },
	.ip4 = { 10, 0, 0, 1 },
	.ip6 = { 0xfd, 0, [15] = 1 },
	.has_ip4 = true, .has_ip6 = true,
};

/* The ICMP error that replaced the frame p (of len bytes) in m. */
static void check_too_big(const struct rte_mbuf *m, const uint8_t *p, uint16_t len, uint16_t mtu)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *), *ip = f + TL_ETH_LEN;
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

	if (memcmp(f, p + 6, 6) || memcmp(f + 6, lan.mac, 6) || m->pkt_len != m->data_len)
		abort();
	/* an error of the offending packet's own IP version */
	if ((type == RTE_ETHER_TYPE_IPV4) != (p[TL_ETH_LEN] >> 4 == 4)) {
		fprintf(stderr, "ICMP%s error for an IPv%u packet\n", type == RTE_ETHER_TYPE_IPV4 ? "v4" : "v6",
			p[TL_ETH_LEN] >> 4);
		abort();
	}
	if (type == RTE_ETHER_TYPE_IPV4) {
		size_t quote = RTE_MIN((size_t)len - TL_ETH_LEN, (size_t)(576 - 28));

		if (m->data_len != TL_ETH_LEN + 28 + quote || ip[0] != 0x45 || ip[9] != IPPROTO_ICMP ||
		    (size_t)(ip[2] << 8 | ip[3]) != 28 + quote || fold(sum16(ip, 20, 0)) != 0xffff ||
		    memcmp(ip + 12, lan.ip4, 4) || memcmp(ip + 16, p + TL_ETH_LEN + 12, 4) ||
		    ip[20] != 3 || ip[21] != 4 || (ip[26] << 8 | ip[27]) != mtu ||
		    fold(sum16(ip + 20, 8 + quote, 0)) != 0xffff || memcmp(ip + 28, p + TL_ETH_LEN, quote))
			abort();
	} else if (type == RTE_ETHER_TYPE_IPV6) {
		size_t quote = RTE_MIN((size_t)len - TL_ETH_LEN, (size_t)(1280 - 48));
		uint32_t pseudo = sum16(ip + 8, 32, 0) + (uint32_t)(8 + quote) + IPPROTO_ICMPV6;

		if (m->data_len != TL_ETH_LEN + 48 + quote || ip[0] >> 4 != 6 || ip[6] != IPPROTO_ICMPV6 ||
		    (size_t)(ip[4] << 8 | ip[5]) != 8 + quote || memcmp(ip + 8, lan.ip6, 16) ||
		    memcmp(ip + 24, p + TL_ETH_LEN + 8, 16) || ip[40] != 2 || ip[41] != 0 ||
		    (uint32_t)(ip[44] << 24 | ip[45] << 16 | ip[46] << 8 | ip[47]) != mtu ||
		    fold(sum16(ip + 40, 8 + quote, pseudo)) != 0xffff || memcmp(ip + 48, p + TL_ETH_LEN, quote))
			abort();
	} else {
		abort();
	}
}

/* As encap_one: an IPv4/IPv6 Ethernet frame with a valid inner packet above the MTU. */
static void fuzz_too_big(const uint8_t *p, uint16_t len, uint16_t mtu)
{
	struct tl_inner in;
	struct rte_mbuf *m;
	uint16_t type;

	if (len < TL_ETH_LEN)
		return;
	type = (uint16_t)(p[12] << 8 | p[13]);
	if ((type != RTE_ETHER_TYPE_IPV4 && type != RTE_ETHER_TYPE_IPV6) ||
	    tl_pkt_parse_inner(p + TL_ETH_LEN, len - TL_ETH_LEN, &in) != TL_DROP_MAX || in.len <= mtu)
		return;
	m = mk(p, len, false);           /* the error is built in the headroom */
	if (!m)
		return;
	if (tl_pkt_make_too_big(m, &lan, mtu) == 0)
		check_too_big(m, p, len, mtu);
	release(m);
}

/* ---- AQM ------------------------------------------------------------------------------------- */

struct run {
	struct tl_aqm *q;
	unsigned l3;
	bool ecn;
	uint64_t now;
	uint64_t held;         /* mbufs the harness holds */
};

static struct snap *snap_of(struct rte_mbuf *m)
{
	return rte_mbuf_to_priv(m);
}

static uint16_t ipv4_sum(const uint8_t *ip, uint32_t avail)
{
	unsigned hl = (ip[0] & 0xfu) * 4u;

	return hl >= 20 && hl <= avail && hl <= SNAP ? fold(sum16(ip, hl, 0)) : 0;
}

/* A packet out of the AQM: the same bytes, but for CE on an ECT packet. */
static void check_left(const struct run *r, struct rte_mbuf *m)
{
	const struct snap *s = snap_of(m);
	const uint8_t *now = rte_pktmbuf_mtod(m, const uint8_t *);
	uint8_t want[SNAP];
	uint16_t n = RTE_MIN(s->len, (uint16_t)SNAP);

	if (m->data_len != s->len || m->pkt_len != s->len || m->nb_segs != 1)
		abort();
	memcpy(want, s->b, n);
	if (n >= r->l3 + 20u && memcmp(s->b + r->l3, now + r->l3, 20)) {
		const uint8_t *was = s->b + r->l3, *is = now + r->l3;

		if (!r->ecn)
			abort();             /* marking is off: nothing may change */
		if (was[0] >> 4 == 4) {
			if (!(was[1] & 3) || is[1] != (was[1] | 3))
				abort();
			/* the header checksum follows the change: right if it was right */
			if (ipv4_sum(was, n - r->l3) == 0xffff && ipv4_sum(is, n - r->l3) != 0xffff)
				abort();
			want[r->l3 + 1] = is[1];
			want[r->l3 + 10] = is[10];
			want[r->l3 + 11] = is[11];
		} else if (was[0] >> 4 == 6) {
			if (!(was[1] & 0x30) || is[1] != (was[1] | 0x30))
				abort();
			want[r->l3 + 1] = is[1];
		}
	}
	if (memcmp(want, now, n))
		abort();
}

static void out(struct run *r, struct rte_mbuf *m)
{
	check_left(r, m);
	release(m);
	r->held--;
}

static void balance(const struct run *r)
{
	struct tl_aqm_stats st;

	tl_aqm_stats_get(r->q, &st);
	if (st.enqueued != st.dequeued + st.drops_codel + st.drops_overlimit + st.backlog_pkts ||
	    st.backlog_pkts != tl_aqm_backlog(r->q) || tl_aqm_requeued_pending(r->q) > st.backlog_pkts ||
	    rte_mempool_in_use_count(mp) != st.backlog_pkts + r->held)
		abort();
}

static void dequeue(struct run *r, unsigned n, bool give_back)
{
	struct rte_mbuf *pkts[64];
	unsigned got = tl_aqm_dequeue_burst(r->q, pkts, RTE_MIN(n, (unsigned)RTE_DIM(pkts)), r->now);
	unsigned keep = give_back ? got / 2 : got;

	r->held += got;
	balance(r);
	if (give_back && got > keep) {
		tl_aqm_requeue_head(r->q, pkts + keep, got - keep);
		r->held -= got - keep;
	}
	for (unsigned i = 0; i < keep; i++)
		out(r, pkts[i]);
	balance(r);
}

static void enqueue(struct run *r, const uint8_t *p, uint16_t len, struct tl_aqm_params *prm)
{
	struct rte_mbuf *m = mk(p, len, true);
	struct snap *s;

	if (!m)
		return;
	s = snap_of(m);
	s->len = len;
	memcpy(s->b, p, RTE_MIN(len, (uint16_t)SNAP));
	if (tl_aqm_classify(r->q, m) >= prm->flows)
		abort();
	r->held++;
	balance(r);
	tl_aqm_enqueue(r->q, m, r->now);    /* the queue owns it now, dropped or not */
	r->held--;
	balance(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_aqm_params prm = tl_aqm_params_default();
	struct run r = { .now = 1000 * MS };
	uint16_t mtu;
	size_t off = 1;

	if (size < 1)
		return 0;
	r.l3 = data[0] & 1 ? RTE_ETHER_HDR_LEN : 0;
	prm.ecn = r.ecn = data[0] & 2;
	mtu = (uint16_t)(576 + 16 * (data[0] >> 2));
	prm.target_us = 1000;
	prm.interval_us = 10000;
	prm.quantum = 300;
	prm.flows = 8;
	prm.limit = 24;
	prm.memory_limit = 64 * 1024;
	rte_srand(1);                      /* the flow hash seed: the same input, the same run */
	r.q = tl_aqm_create("fz_aqm", &prm, r.l3, SOCKET_ID_ANY);
	if (!r.q)
		abort();
	memset(frtt->slot, 0, sizeof(frtt->slot));  /* the same input, the same run */
	frtt->seed = 1;
	atomic_store(&frtt->last_start_ns, 0);
	tl_aqm_attach_flowrtt(r.q, frtt);
	while (off + 3 <= size) {
		uint8_t op = data[off];
		uint16_t len = (uint16_t)(data[off + 1] | data[off + 2] << 8);
		const uint8_t *p = data + off + 3;
		static const unsigned deq[4] = { 0, 1, 4, 64 };

		len = (uint16_t)RTE_MIN((size_t)len, RTE_MIN(size - off - 3, (size_t)MAX_FRAME));
		off += 3 + len;
		fuzz_outer(p, len);
		fuzz_inner_at(p, len);
		if (len >= TL_ETH_LEN)
			fuzz_inner_at(p + TL_ETH_LEN, len - TL_ETH_LEN);
		fuzz_too_big(p, len, mtu);
		fuzz_flowrtt(p, len, r.now);
		enqueue(&r, p, len, &prm);
		r.now += 2 * MS * (op >> 3);
		if (op & 3)
			dequeue(&r, deq[op & 3], op & 4);
	}
	for (int i = 0; i < 64 && tl_aqm_backlog(r.q); i++) {
		r.now += 20 * MS;
		dequeue(&r, 64, false);
	}
	if (tl_aqm_backlog(r.q))
		abort();
	tl_aqm_free(r.q);
	if (rte_mempool_in_use_count(mp) != 0)
		abort();
	return 0;
}
