/* The host-mode LAN port kind `packet` (afpacket.h): recvmmsg/sendmmsg on an AF_PACKET
 * socket with virtio-net headers; GSO packets split on the way in, runs of one TCP flow
 * merged into GSO packets on the way out. */
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_memcpy.h>
#include <rte_tcp.h>

#include "dataplane/afpacket.h"
#include "dataplane/csum.h"
#include "dataplane/sockport.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define VNET_LEN sizeof(struct virtio_net_hdr)
#define AFP_MSGS 8                       /* packets read per recvmmsg */
#define AFP_FILLS 8                      /* recvmmsg calls per read at most */
#define AFP_MSG_LEN (VNET_LEN + 65536u + 512u)   /* a 64 KiB GSO packet and its headers */
#define AFP_BURST TL_AFP_TX_MAX
#define AFP_LOOKBACK 16                  /* messages searched back for a frame's flow */
#define AFP_TX_SEGS 64                   /* segments merged into one GSO packet at most */
#define AFP_NO_MERGE_NS 1000000000ull    /* after a merged send was refused: frame by frame this long */
#define HDR_MAX (RTE_ETHER_HDR_LEN + 60 + 60)    /* Ethernet, IPv4 with options, TCP with options */

#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_CWR 0x80

/* Where a frame's headers are: a TCP segment over IPv4 or IPv6 (no IPv6 extension headers). */
struct tcp_hdrs {
	uint16_t l4, hlen;        /* offsets of TCP and of the payload */
	bool v6;
};

/* The packet being split. */
struct split {
	struct tcp_hdrs h;
	uint16_t gso;
	uint32_t nseg, payload;
};

struct afq {
	int fd;
	struct rte_mempool *mp;
	struct tl_counters *cnt;         /* the reading worker's (rx drops), or NULL */
	uint8_t *arena;                  /* AFP_MSGS x AFP_MSG_LEN */
	uint32_t len[AFP_MSGS];
	unsigned n, i;                   /* packets in the arena, the one being handed out */
	uint32_t seg;                    /* its next segment */
	bool started;                    /* packet_start ran for it (it finishes checksums in place) */
	struct split sp;
	uint64_t no_merge_until;         /* a merged send was refused: frame by frame until then */
	bool merge_off;                  /* in this call */
	bool out_full;                   /* the last send stopped on EAGAIN: the socket buffer */
	/* written by the queue's worker only, read by the control plane */
	uint64_t ipackets, ibytes, ierrors, opackets, obytes, oerrors, split, merged;
	uint64_t merge_fallbacks;        /* merged sends refused (their frames then went one by one) */
	uint64_t imissed;                /* PACKET_STATISTICS, added up by the readers */
} __rte_cache_aligned;

struct tl_afp {
	uint16_t queues;
	struct afq q[];
};

#define cnt_add tl_sp_cnt_add
#define cnt_get tl_sp_cnt_get

/* ---- open, close -------------------------------------------------------------------------- */

static int sock_open(const struct tl_afp_cfg *cfg, int ifindex)
{
	int one = 1, fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = ifindex };

	if (fd < 0)
		return -errno;
	/* Our own sends would come back through the tap otherwise. */
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0)
		return tl_sp_fail(fd);
	return tl_sp_bind(fd, (struct sockaddr *)&a, sizeof(a), cfg->rcvbuf, cfg->sndbuf);
}

struct tl_afp *tl_afp_open(const struct tl_afp_cfg *cfg, char *err, size_t errlen)
{
	int ifindex = (int)if_nametoindex(cfg->iface);
	struct tl_afp *p;

	if (cfg->queues != 1) {
		snprintf(err, errlen, "packet port: %u queues asked, a veth has one", cfg->queues);
		return NULL;
	}
	if (!ifindex) {
		snprintf(err, errlen, "packet port: no interface '%s'", cfg->iface);
		return NULL;
	}
	p = rte_zmalloc("tl_afp", sizeof(*p) + cfg->queues * sizeof(p->q[0]), RTE_CACHE_LINE_SIZE);
	if (!p) {
		snprintf(err, errlen, "packet port: out of memory");
		return NULL;
	}
	p->queues = cfg->queues;
	for (uint16_t i = 0; i < p->queues; i++)
		p->q[i].fd = -1;
	for (uint16_t i = 0; i < p->queues; i++) {
		struct afq *q = &p->q[i];

		q->mp = cfg->pools[i];
		q->cnt = cfg->counters ? cfg->counters[i] : NULL;
		q->arena = rte_malloc("tl_afp_arena", (size_t)AFP_MSGS * AFP_MSG_LEN, RTE_CACHE_LINE_SIZE);
		q->fd = sock_open(cfg, ifindex);
		if (!q->arena || q->fd < 0) {
			snprintf(err, errlen, "packet port: cannot open AF_PACKET on %s: %s", cfg->iface,
				 q->arena ? strerror(-q->fd) : "out of memory");
			tl_afp_close(p);
			return NULL;
		}
	}
	return p;
}

void tl_afp_close(struct tl_afp *p)
{
	if (!p)
		return;
	for (uint16_t i = 0; i < p->queues; i++) {
		if (p->q[i].fd >= 0)
			close(p->q[i].fd);
		rte_free(p->q[i].arena);
	}
	rte_free(p);
}

int tl_afp_tx_full(const struct tl_afp *p, uint16_t q)
{
	return p && q < p->queues && p->q[q].out_full ? p->q[q].fd : -1;
}

int tl_afp_fd(const struct tl_afp *p, uint16_t q)
{
	return p && q < p->queues ? p->q[q].fd : -1;
}

bool tl_afp_rx_pending(const struct tl_afp *p, uint16_t q)
{
	return p && q < p->queues && p->q[q].i < p->q[q].n;
}

void tl_afp_stats(struct tl_afp *p, struct rte_eth_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint16_t i = 0; p && i < p->queues; i++) {
		struct afq *q = &p->q[i];
		struct tpacket_stats ts;
		socklen_t len = sizeof(ts);

		/* Reading resets the kernel's counts: each reader adds what it read. */
		if (getsockopt(q->fd, SOL_PACKET, PACKET_STATISTICS, &ts, &len) == 0 && ts.tp_drops)
			__atomic_fetch_add(&q->imissed, ts.tp_drops, __ATOMIC_RELAXED);
		st->ipackets += cnt_get(&q->ipackets);
		st->ibytes += cnt_get(&q->ibytes);
		st->ierrors += cnt_get(&q->ierrors);
		st->opackets += cnt_get(&q->opackets);
		st->obytes += cnt_get(&q->obytes);
		st->oerrors += cnt_get(&q->oerrors);
		st->imissed += cnt_get(&q->imissed);
	}
}

uint64_t tl_afp_merge_fallbacks(const struct tl_afp *p)
{
	uint64_t n = 0;

	for (uint16_t i = 0; p && i < p->queues; i++)
		n += cnt_get(&p->q[i].merge_fallbacks);
	return n;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tl_afp_gso_counts(const struct tl_afp *p, uint64_t *split, uint64_t *merged)
{
	*split = *merged = 0;
	for (uint16_t i = 0; p && i < p->queues; i++) {
		*split += cnt_get(&p->q[i].split);
		*merged += cnt_get(&p->q[i].merged);
	}
}

/* ---- headers ------------------------------------------------------------------------------ */

/* A TCP segment's header offsets; false if the frame is not one. An IPv4 fragment is not
 * one (its payload may only look like TCP): kernel GRO never merges fragments either. */
static bool tcp_parse(const uint8_t *f, uint32_t len, struct tcp_hdrs *h)
{
	const struct rte_ether_hdr *eth = (const void *)f;
	const struct rte_tcp_hdr *th;

	if (len < RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(*th))
		return false;
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		const struct rte_ipv4_hdr *ip = (const void *)(eth + 1);
		uint16_t ihl = (uint16_t)((ip->version_ihl & 0xf) * 4);

		if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || ip->next_proto_id != IPPROTO_TCP ||
		    (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)))
			return false;
		h->l4 = (uint16_t)(RTE_ETHER_HDR_LEN + ihl);
		h->v6 = false;
	} else if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *ip = (const void *)(eth + 1);

		if (ip->proto != IPPROTO_TCP)
			return false;
		h->l4 = RTE_ETHER_HDR_LEN + sizeof(*ip);
	        h->v6 = true;
	} else {
		return false;
	}
	if (len < (uint32_t)h->l4 + sizeof(*th))
		return false;
	th = (const void *)(f + h->l4);
	h->hlen = (uint16_t)(h->l4 + (th->data_off >> 4) * 4);
	return (th->data_off >> 4) >= 5 && h->hlen <= len;
}

/* Sets the IP length fields of the TCP segment at f for payload bytes of data. */
static void ip_lengths(uint8_t *f, const struct tcp_hdrs *h, uint32_t payload)
{
	if (h->v6) {
		struct rte_ipv6_hdr *ip = (void *)(f + RTE_ETHER_HDR_LEN);

		ip->payload_len = rte_cpu_to_be_16((uint16_t)(h->hlen - h->l4 + payload));
	} else {
		struct rte_ipv4_hdr *ip = (void *)(f + RTE_ETHER_HDR_LEN);

		ip->total_length = rte_cpu_to_be_16((uint16_t)(h->hlen - RTE_ETHER_HDR_LEN + payload));
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
}

/* ---- receive ------------------------------------------------------------------------------ */

/* Reads up to AFP_MSGS packets into the (empty) arena; returns how many messages the socket
 * gave (those dropped here included): fewer than AFP_MSGS when it has no more. */
static int arena_fill(struct afq *q)
{
	struct mmsghdr h[AFP_MSGS];
	struct iovec iov[AFP_MSGS];
	int k;

	q->n = q->i = q->seg = 0;
	q->started = false;
	for (unsigned i = 0; i < AFP_MSGS; i++) {
		iov[i] = (struct iovec){ q->arena + (size_t)i * AFP_MSG_LEN, AFP_MSG_LEN };
		h[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	k = recvmmsg(q->fd, h, AFP_MSGS, MSG_DONTWAIT, NULL);
	for (int i = 0; i < k; i++) {
		if (h[i].msg_hdr.msg_flags & MSG_TRUNC || h[i].msg_len < VNET_LEN + RTE_ETHER_HDR_LEN) {
			tl_sp_rx_drop(&q->ierrors, q->cnt, TL_PORT_LAN,
				      h[i].msg_hdr.msg_flags & MSG_TRUNC ? TL_DROP_oversized : TL_DROP_malformed);
			continue;
		}
		if (i != (int)q->n)
			memmove(q->arena + (size_t)q->n * AFP_MSG_LEN, q->arena + (size_t)i * AFP_MSG_LEN, h[i].msg_len);
		q->len[q->n++] = h[i].msg_len;
	}
	return k;
}

/* Completes a checksum the host left to the device: the field holds the pseudo-header sum,
 * the sum over [start, end) finishes it. Only TCP's and UDP's (the host end offers no other). */
static bool csum_finish(uint8_t *f, uint32_t len, const struct virtio_net_hdr *vh)
{
	uint32_t start = vh->csum_start, off = vh->csum_offset;
	uint16_t c;

	if ((off != offsetof(struct rte_tcp_hdr, cksum) && off != offsetof(struct rte_udp_hdr, dgram_cksum)) ||
	    start < RTE_ETHER_HDR_LEN || start + off + 2 > len)
		return false;
	c = (uint16_t)~tl_csum_raw(f + start, len - start);
	if (c == 0)
		c = 0xffff;
	memcpy(f + start + off, &c, 2);
	return true;
}

/* Starts handing out the arena's current packet: TL_DROP_MAX, or why this port cannot. */
static enum tl_drop packet_start(struct afq *q)
{
	const struct virtio_net_hdr *vh = (const void *)(q->arena + (size_t)q->i * AFP_MSG_LEN);
	uint8_t *f = (uint8_t *)(vh + 1);
	uint32_t len = q->len[q->i] - VNET_LEN;
	uint8_t type = vh->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;

	q->seg = 0;
	if (type == VIRTIO_NET_HDR_GSO_NONE) {
		q->sp.nseg = 1;
		q->sp.gso = 0;
		return !(vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || csum_finish(f, len, vh) ? TL_DROP_MAX :
											 TL_DROP_malformed;
	}
	if (type != VIRTIO_NET_HDR_GSO_TCPV4 && type != VIRTIO_NET_HDR_GSO_TCPV6)
		return TL_DROP_gso_unsplittable;
	if (!vh->gso_size || !tcp_parse(f, len, &q->sp.h) || q->sp.h.v6 != (type == VIRTIO_NET_HDR_GSO_TCPV6) ||
	    len == q->sp.h.hlen)
		return TL_DROP_malformed;
	q->sp.gso = vh->gso_size;
	q->sp.payload = len - q->sp.h.hlen;
	q->sp.nseg = (q->sp.payload + q->sp.gso - 1) / q->sp.gso;
	return TL_DROP_MAX;
}

/* Segment k of the packet being split, built in m: its headers, its payload, checksums. */
static void segment_build(const struct afq *q, const uint8_t *f, struct rte_mbuf *m, uint32_t k)
{
	const struct split *sp = &q->sp;
	uint32_t off = (uint32_t)sp->h.hlen + k * sp->gso, slen = RTE_MIN((uint32_t)sp->gso, sp->payload - k * sp->gso);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_tcp_hdr *th = (void *)(d + sp->h.l4);

	rte_memcpy(d, f, sp->h.hlen);
	rte_memcpy(d + sp->h.hlen, f + off, slen);
	m->data_len = (uint16_t)(sp->h.hlen + slen);
	m->pkt_len = m->data_len;
	th->sent_seq = rte_cpu_to_be_32(rte_be_to_cpu_32(th->sent_seq) + k * sp->gso);
	if (k > 0)
		th->tcp_flags &= (uint8_t)~TCP_CWR;
	if (k + 1 < sp->nseg)
		th->tcp_flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
	th->cksum = 0;
	if (sp->h.v6) {
		struct rte_ipv6_hdr *ip = (void *)(d + RTE_ETHER_HDR_LEN);

		ip_lengths(d, &sp->h, slen);
		th->cksum = tl_csum_ipv6_l4(ip, th);
	} else {
		struct rte_ipv4_hdr *ip = (void *)(d + RTE_ETHER_HDR_LEN);

		ip->packet_id = rte_cpu_to_be_16((uint16_t)(rte_be_to_cpu_16(ip->packet_id) + k));
		ip_lengths(d, &sp->h, slen);
		th->cksum = tl_csum_ipv4_l4(ip, th);
	}
}

/* Hands out segments of the arena's packets as frames, at most n; stops early when the
 * pool is empty (the rest waits in the arena). */
static unsigned arena_take(struct afq *q, struct rte_mbuf **out, unsigned n)
{
	struct tl_sp_bufs b = { .have = 0 };
	uint32_t room = tl_sp_room(q->mp);
	unsigned got = 0;

	while (got < n && q->i < q->n) {
		const uint8_t *f = q->arena + (size_t)q->i * AFP_MSG_LEN + VNET_LEN;
		uint32_t len = q->len[q->i] - VNET_LEN;
		struct rte_mbuf *m;
		enum tl_drop why = q->started ? TL_DROP_MAX : packet_start(q);

		if (why != TL_DROP_MAX) {
			tl_sp_rx_drop(&q->ierrors, q->cnt, TL_PORT_LAN, why);   /* not one to split or finish */
			q->i++;
			continue;
		}
		q->started = true;
		if ((q->sp.gso ? (uint32_t)q->sp.h.hlen + q->sp.gso : len) > room) {
			tl_sp_rx_drop(&q->ierrors, q->cnt, TL_PORT_LAN, TL_DROP_oversized);   /* larger than a buffer */
			q->i++;
			q->seg = 0;
			q->started = false;
			continue;
		}
		m = tl_sp_buf(&b, q->mp, n - got);
		if (!m)
			break;                        /* no buffer: the rest waits in the arena */
		if (q->sp.gso == 0) {
			rte_memcpy(rte_pktmbuf_mtod(m, void *), f, len);
			m->data_len = (uint16_t)len;
			m->pkt_len = len;
		} else {
			segment_build(q, f, m, q->seg);
		}
		cnt_add(&q->ibytes, m->pkt_len);
		out[got++] = m;
		if (++q->seg >= q->sp.nseg) {
			if (q->sp.nseg > 1)
				cnt_add(&q->split, 1);
			q->i++;
			q->seg = 0;
			q->started = false;
		}
	}
	tl_sp_bufs_end(&b);
	cnt_add(&q->ipackets, got);
	return got;
}

uint16_t tl_afp_rx(struct tl_afp *p, uint16_t qi, struct rte_mbuf **pkts, uint16_t n)
{
	struct afq *q = &p->q[qi];
	unsigned got = arena_take(q, pkts, n);

	/* Reads again until the burst is full or the socket has no more: a host that sends single
	 * frames (not GSO packets) gives one frame per message, and one fill would cut every
	 * burst down to AFP_MSGS frames. */
	for (int f = 0; f < AFP_FILLS && got < n && q->i >= q->n; f++) {
		int k = arena_fill(q);

		got += arena_take(q, pkts + got, n - got);
		if (k < AFP_MSGS)
			break;
	}
	return (uint16_t)got;
}

/* ---- send --------------------------------------------------------------------------------- */

/* One message: a frame as it is, or a run of one flow's segments as a GSO packet. The
 * segments of a run need not be neighbours in the burst (the AQM takes turns between
 * flows), but a flow's frames keep their order: a frame joins only the latest message of its
 * flow, and messages leave in the order of their first frames. */
struct tx_msg {
	uint8_t idx[AFP_TX_SEGS];        /* its frames, as indexes into the burst */
	unsigned segs;
	bool tcp;                        /* a TCP segment, or a run of them */
	uint32_t gso, payload;           /* a run: the size of its segments, their total */
	struct tcp_hdrs h;
	bool psh;                        /* a run: its last segment pushes */
	struct virtio_net_hdr vh;
	uint8_t hdr[HDR_MAX];            /* a run: the headers it leaves with */
};

/* Frames a and f (TCP, headers h) belong to one flow: addresses and ports. */
static bool same_flow(const uint8_t *a, const uint8_t *f, const struct tcp_hdrs *ha, const struct tcp_hdrs *h)
{
	size_t off = h->v6 ? RTE_ETHER_HDR_LEN + 8 : RTE_ETHER_HDR_LEN + 12, len = h->v6 ? 32 : 8;

	return ha->v6 == h->v6 && !memcmp(a + off, f + off, len) && !memcmp(a + ha->l4, f + h->l4, 4);
}

/* May frame f (its TCP headers h, payload len) join run x, whose first frame is a? Only
 * what the host's GRO would merge: same headers but lengths, id, checksums and PSH on the
 * last; the next sequence number; segments of one size (the last may be shorter). */
static bool run_joins(const struct tx_msg *x, const uint8_t *a, const uint8_t *f, const struct tcp_hdrs *h,
		      uint32_t len)
{
	const struct rte_tcp_hdr *ta = (const void *)(a + x->h.l4), *tf = (const void *)(f + h->l4);
	uint32_t total = x->payload + len;

	if (x->psh || h->v6 != x->h.v6 || h->hlen != x->h.hlen || len == 0 || len > x->gso ||
	    x->payload != x->gso * x->segs || x->segs >= AFP_TX_SEGS ||
	    total + x->h.hlen - RTE_ETHER_HDR_LEN > 65535)
		return false;
	if ((tf->tcp_flags & (uint8_t)~TCP_PSH) != TCP_ACK || (ta->tcp_flags & (uint8_t)~(TCP_PSH | TCP_CWR)) != TCP_ACK ||
	    rte_be_to_cpu_32(tf->sent_seq) != rte_be_to_cpu_32(ta->sent_seq) + x->payload)
		return false;
	/* ports, ack; offset, window ... options (flags and checksum apart) */
	if (memcmp(ta, tf, 4) || memcmp(&ta->recv_ack, &tf->recv_ack, 5) || memcmp(&ta->rx_win, &tf->rx_win, 2) ||
	    memcmp(&ta->tcp_urp, &tf->tcp_urp, (size_t)(h->hlen - h->l4) - offsetof(struct rte_tcp_hdr, tcp_urp)))
		return false;
	if (memcmp(a, f, RTE_ETHER_HDR_LEN))
		return false;
	if (h->v6) {
		const uint8_t *ia = a + RTE_ETHER_HDR_LEN, *ib = f + RTE_ETHER_HDR_LEN;

		return !memcmp(ia, ib, 4) && !memcmp(ia + 6, ib + 6, 34);
	}
	const uint8_t *ia = a + RTE_ETHER_HDR_LEN, *ib = f + RTE_ETHER_HDR_LEN;

	/* version/ihl, tos; flags/fragment, ttl, protocol; addresses and options */
	return !memcmp(ia, ib, 2) && !memcmp(ia + 6, ib + 6, 4) &&
	       !memcmp(ia + 12, ib + 12, (size_t)(h->l4 - RTE_ETHER_HDR_LEN) - 12);
}

/* Gives run x the headers and virtio-net header it leaves with. */
static void run_close(struct tx_msg *x, const uint8_t *a)
{
	struct rte_tcp_hdr *th = (void *)(x->hdr + x->h.l4);

	if (x->segs == 1)
		return;       /* a frame as it is, vh all zero */
	memcpy(x->hdr, a, x->h.hlen);
	ip_lengths(x->hdr, &x->h, x->payload);
	if (x->psh)
		th->tcp_flags |= TCP_PSH;
	/* partial: the pseudo-header sum, the receiving stack trusts the rest */
	th->cksum = x->h.v6 ? rte_ipv6_phdr_cksum((const void *)(x->hdr + RTE_ETHER_HDR_LEN), 0) :
			      rte_ipv4_phdr_cksum((const void *)(x->hdr + RTE_ETHER_HDR_LEN), 0);
	x->vh = (struct virtio_net_hdr){
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = x->h.v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4,
		.hdr_len = x->h.hlen,
		.gso_size = (uint16_t)x->gso,
		.csum_start = x->h.l4,
		.csum_offset = offsetof(struct rte_tcp_hdr, cksum),
	};
}

/* Groups pkts[0..n) into messages; returns how many. *of[i] is frame i's message. */
static unsigned runs_make(struct afq *q, struct rte_mbuf **pkts, unsigned n, struct tx_msg *msgs, uint8_t *of)
{
	unsigned nm = 0;

	for (unsigned i = 0; i < n; i++) {
		const uint8_t *f = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
		struct tcp_hdrs h;
		bool tcp = !q->merge_off && pkts[i]->nb_segs == 1 && tcp_parse(f, pkts[i]->data_len, &h);
		uint32_t len = tcp ? pkts[i]->data_len - h.hlen : 0;
		struct tx_msg *x = NULL;

		/* the latest message of this flow, among the last AFP_LOOKBACK (further back, the
		 * frame starts a message of its own: its flow's order is kept either way) */
		for (unsigned m = nm; tcp && m-- > 0 && nm - m <= AFP_LOOKBACK;) {
			const uint8_t *a = rte_pktmbuf_mtod(pkts[msgs[m].idx[0]], const uint8_t *);

			if (msgs[m].tcp && same_flow(a, f, &msgs[m].h, &h)) {
				if (msgs[m].gso && run_joins(&msgs[m], a, f, &h, len))
					x = &msgs[m];
				break;
			}
		}
		if (x) {
			const struct rte_tcp_hdr *th = (const void *)(f + h.l4);

			x->idx[x->segs++] = (uint8_t)i;
			x->payload += len;
			x->psh = (th->tcp_flags & TCP_PSH) != 0;
			of[i] = (uint8_t)(x - msgs);
			continue;
		}
		x = &msgs[nm];
		*x = (struct tx_msg){ .segs = 1, .tcp = tcp };
		x->idx[0] = (uint8_t)i;
		if (tcp) {
			const struct rte_tcp_hdr *th = (const void *)(f + h.l4);

			x->h = h;
			x->gso = len;
			x->payload = len;
			x->psh = (th->tcp_flags & TCP_PSH) != 0;
		}
		of[i] = (uint8_t)nm++;
	}
	for (unsigned m = 0; m < nm; m++)
		run_close(&msgs[m], rte_pktmbuf_mtod(pkts[msgs[m].idx[0]], const uint8_t *));
	return nm;
}

/* Sends msgs[0..n) with one sendmmsg: returns how many the kernel took, or -errno. */
static int send_msgs(struct afq *q, struct rte_mbuf **pkts, struct tx_msg *msgs, unsigned n)
{
	struct mmsghdr h[AFP_BURST];
	struct iovec iov[AFP_BURST + AFP_BURST * 2];
	unsigned v = 0;
	int k;

	for (unsigned i = 0; i < n; i++) {
		struct tx_msg *x = &msgs[i];
		unsigned v0 = v;

		iov[v++] = (struct iovec){ &x->vh, VNET_LEN };
		if (x->segs == 1) {
			iov[v++] = (struct iovec){ rte_pktmbuf_mtod(pkts[x->idx[0]], void *), pkts[x->idx[0]]->data_len };
		} else {
			iov[v++] = (struct iovec){ x->hdr, x->h.hlen };
			for (unsigned s = 0; s < x->segs; s++) {
				struct rte_mbuf *m = pkts[x->idx[s]];

				iov[v++] = (struct iovec){ rte_pktmbuf_mtod_offset(m, uint8_t *, x->h.hlen),
							   (size_t)(m->data_len - x->h.hlen) };
			}
		}
		h[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[v0], .msg_iovlen = v - v0 };
	}
	k = sendmmsg(q->fd, h, n, MSG_DONTWAIT);
	return k < 0 ? -errno : k;
}

/* After k messages of pkts[0..n) were sent: their frames are counted and freed, the others
 * move behind them in their order. Returns the frames sent. */
static unsigned sent_take(struct afq *q, struct rte_mbuf **pkts, unsigned n, const struct tx_msg *msgs,
			  const uint8_t *of, unsigned k)
{
	struct rte_mbuf *rest[AFP_BURST];
	unsigned sent = 0, left = 0;

	for (unsigned i = 0; i < n; i++) {
		if (of[i] >= k) {
			rest[left++] = pkts[i];
			continue;
		}
		cnt_add(&q->obytes, pkts[i]->pkt_len);
		rte_pktmbuf_free(pkts[i]);
		pkts[sent++] = NULL;
	}
	for (unsigned m = 0; m < k; m++)
		if (msgs[m].segs > 1)
			cnt_add(&q->merged, 1);
	memcpy(pkts + sent, rest, left * sizeof(rest[0]));
	cnt_add(&q->opackets, sent);
	return sent;
}

uint16_t tl_afp_tx(struct tl_afp *p, uint16_t qi, struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **failed,
		   uint16_t *n_failed)
{
	struct afq *q = &p->q[qi];
	struct tx_msg msgs[AFP_BURST];
	uint8_t of[AFP_BURST];
	unsigned done = 0;

	*n_failed = 0;
	n = (uint16_t)RTE_MIN(n, (unsigned)AFP_BURST);
	q->out_full = false;
	q->merge_off = q->no_merge_until && mono_ns() < q->no_merge_until;
	while (done < n) {
		unsigned nm = runs_make(q, pkts + done, n - done, msgs, of);
		int k = send_msgs(q, pkts + done, msgs, nm);

		if (k > 0) {
			done += sent_take(q, pkts + done, n - done, msgs, of, (unsigned)k);
			continue;        /* a shorter count: the next call says why */
		}
		/* Full (EAGAIN), or ENOBUFS: the host's backlog was full and the kernel dropped its
		 * copy of the packet; ours waits with the caller. */
		if (k == -EAGAIN || k == -EWOULDBLOCK || k == -ENOBUFS || k == -EINTR) {
			q->out_full = k != -ENOBUFS && k != -EINTR;
			break;
		}
		if (msgs[0].segs > 1) {
			/* A merge refused (the device went down, a merge the kernel does not take):
			 * frame by frame for a while, then merging is tried again. */
			q->no_merge_until = mono_ns() + AFP_NO_MERGE_NS;
			q->merge_off = true;
			cnt_add(&q->merge_fallbacks, 1);
			continue;
		}
		/* the first message is the first frame alone: refused (too big for the device...) */
		failed[(*n_failed)++] = pkts[done++];
		cnt_add(&q->oerrors, 1);
	}
	return (uint16_t)done;
}
