/* The `udp` WAN port kind (udpport.h): recvmmsg/sendmmsg on SO_REUSEPORT sockets, frames
 * rebuilt around the datagrams on the way in and read off them on the way out. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_memcpy.h>
#include <rte_udp.h>

#include "dataplane/dp.h"
#include "dataplane/dpdk_compat.h"
#include "dataplane/sockport.h"
#include "dataplane/udpport.h"

/* UDP_GRO: the kernel queues a run of datagrams from one sender as one super-datagram of at
 * most 64 KiB (in particular a peer's UDP_SEGMENT send, which then never gets segmented on
 * its way here). A queue reads up to GRO_MSGS of them at once into its arena and hands their
 * datagrams out as frames, a burst at a time; what a burst has no room for waits there. */
#define GRO_MSGS 4
#define GRO_MSG_LEN 65536u
/* A GSO send: at most this many segments and bytes (the kernel's limits are 64 and 64 KiB). */
#define TL_UDPPORT_GSO_SEGS 64
#define TL_UDPPORT_GSO_BYTES 65000
/* Room before a datagram for the largest frame header (Ethernet, IPv6, UDP). */
#define HDR_ROOM (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr))
#define HDR4 (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
/* A destination the kernel refused a UDP_SEGMENT send to (EMSGSIZE, or EINVAL before Linux
 * 6.x: segments above its route's MTU; EIO: an xfrm route; EOPNOTSUPP) gets datagram by
 * datagram for a while, then GSO is
 * tried again (its path MTU may have grown): per queue, the latest few. */
#define NO_GSO_DSTS 8
#define NO_GSO_NS 1000000000ull

struct no_gso {
	uint64_t until_ns;             /* 0: a free entry */
	uint8_t f, addr[16];
	uint16_t port;                 /* network order */
};

struct rx_meta {
	uint8_t dst[16];
	bool has_dst;
	uint8_t tos;
	uint16_t seg;                  /* UDP_GRO: the datagrams' size; 0: one datagram */
};

/* A message read into the arena: one datagram, or several of seg bytes (the last may be
 * shorter) from one source with one ECN field. */
struct rx_msg {
	uint32_t len;
	uint8_t f;
	struct rx_meta meta;
	struct sockaddr_storage src;
};

struct udpq {
	int fd[2];                     /* IPv4, IPv6; -1 if not open */
	int old_fd[2];                 /* after a move: the sockets of the old port, read until empty */
	int next_fd[2];                /* a move posted by the control plane, taken by the worker */
	int swap;                      /* 1: next_fd holds a move not taken yet */
	uint32_t ovfl_seen[2];         /* SO_RXQ_OVFL's running count, last seen */
	struct rte_mempool *mp;
	struct tl_counters *cnt;       /* the reading worker's (rx drops), or NULL */
	uint8_t first;                 /* family read first this time, alternated */
	struct no_gso no_gso[NO_GSO_DSTS];   /* destinations without GSO for now */
	unsigned no_gso_n, no_gso_next;      /* entries in use (maybe expired), the next to replace */
	int8_t out_full;               /* family whose socket took no more at the last send, or -1 */
	uint8_t *arena;                /* GRO_MSGS x GRO_MSG_LEN */
	struct rx_msg rm[GRO_MSGS];
	unsigned rm_n, rm_i;           /* messages in the arena, the one being handed out */
	uint32_t rm_off;               /* its bytes handed out so far */
	/* written by the queue's worker only, read by the control plane */
	uint64_t ipackets, ibytes, opackets, obytes, imissed, ierrors, oerrors, gro_msgs, gso_sends;
	uint64_t gso_fallbacks;        /* UDP_SEGMENT sends refused (then sent datagram by datagram) */
} __rte_cache_aligned;

struct tl_udpport {
	uint16_t queues, port;
	struct tl_udpport_cfg cfg;     /* as opened (iface copied), for a move */
	char iface[32];
	uint8_t mac[6], gw_mac[6], ip4[4], ip6[16];
	struct udpq q[];
};

union ctlbuf {
	char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + 2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t))];
	struct cmsghdr align;
};

#define cnt_add tl_sp_cnt_add
#define cnt_get tl_sp_cnt_get

/* ---- open, close -------------------------------------------------------------------------- */

static int sock_open(const struct tl_udpport_cfg *cfg, int family)
{
	int one = 1, fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss = { 0 };
	socklen_t len;

	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(cfg->port);
		len = sizeof(*a);
		if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0)
			goto fail;
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(cfg->port);
		len = sizeof(*a);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)) < 0)
			goto fail;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, cfg->iface, (socklen_t)strlen(cfg->iface)) < 0)
		goto fail;
	/* Without UDP_GRO (an older kernel) every datagram comes alone: the same path, slower. */
	setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	return tl_sp_bind(fd, (struct sockaddr *)&ss, len, cfg->rcvbuf, cfg->sndbuf);
fail:
	return tl_sp_fail(fd);
}

struct tl_udpport *tl_udpport_open(const struct tl_udpport_cfg *cfg, char *err, size_t errlen)
{
	struct tl_udpport *u;

	if (!cfg->queues || cfg->queues > TL_MAX_WORKERS || (!cfg->v4 && !cfg->v6)) {
		snprintf(err, errlen, "udp port: no queue or no address family to open");
		return NULL;
	}
	u = rte_zmalloc("tl_udpport", sizeof(*u) + cfg->queues * sizeof(u->q[0]), RTE_CACHE_LINE_SIZE);
	if (!u) {
		snprintf(err, errlen, "udp port: out of memory");
		return NULL;
	}
	u->queues = cfg->queues;
	u->port = cfg->port;
	u->cfg = *cfg;
	snprintf(u->iface, sizeof(u->iface), "%s", cfg->iface);
	u->cfg.iface = u->iface;
	memcpy(u->mac, cfg->mac, 6);
	memcpy(u->gw_mac, cfg->gw_mac, 6);
	if (cfg->ip4)
		memcpy(u->ip4, cfg->ip4, 4);
	if (cfg->ip6)
		memcpy(u->ip6, cfg->ip6, 16);
	for (uint16_t q = 0; q < u->queues; q++)
		for (int f = 0; f < 2; f++)
			u->q[q].fd[f] = u->q[q].old_fd[f] = u->q[q].next_fd[f] = -1;
	for (uint16_t q = 0; q < u->queues; q++)
		u->q[q].out_full = -1;
	for (uint16_t q = 0; q < u->queues; q++) {
		u->q[q].mp = cfg->pools[q];
		u->q[q].cnt = cfg->counters ? cfg->counters[q] : NULL;
		u->q[q].arena = rte_malloc("tl_udpport_gro", GRO_MSGS * GRO_MSG_LEN, RTE_CACHE_LINE_SIZE);
		if (!u->q[q].arena) {
			snprintf(err, errlen, "udp port: out of memory");
			tl_udpport_close(u);
			return NULL;
		}
		for (int f = 0; f < 2; f++) {
			int fd;

			if (!(f ? cfg->v6 : cfg->v4))
				continue;
			fd = sock_open(cfg, f ? AF_INET6 : AF_INET);
			if (fd < 0) {
				snprintf(err, errlen, "udp port: cannot bind UDP %u (%s) on %s for queue %u: %s", cfg->port,
					 f ? "IPv6" : "IPv4", cfg->iface, q, strerror(-fd));
				tl_udpport_close(u);
				return NULL;
			}
			u->q[q].fd[f] = fd;
		}
	}
	return u;
}

void tl_udpport_close(struct tl_udpport *u)
{
	if (!u)
		return;
	for (uint16_t q = 0; q < u->queues; q++) {
		for (int f = 0; f < 2; f++) {
			if (u->q[q].fd[f] >= 0)
				close(u->q[q].fd[f]);
			if (u->q[q].old_fd[f] >= 0)
				close(u->q[q].old_fd[f]);
			if (u->q[q].next_fd[f] >= 0)
				close(u->q[q].next_fd[f]);
		}
		rte_free(u->q[q].arena);
	}
	rte_free(u);
}

int tl_udpport_move_prepare(struct tl_udpport *u, uint16_t port, int (*fds)[2], char *err, size_t errlen)
{
	struct tl_udpport_cfg c = u->cfg;

	c.port = port;
	for (uint16_t q = 0; q < u->queues; q++)
		if (__atomic_load_n(&u->q[q].swap, __ATOMIC_ACQUIRE)) {
			snprintf(err, errlen, "udp port: the last move is not taken yet by queue %u", q);
			return -EBUSY;
		}
	for (uint16_t q = 0; q < u->queues; q++)
		for (int f = 0; f < 2; f++) {
			int fd = -1;

			if (u->q[q].fd[f] >= 0 && (fd = sock_open(&c, f ? AF_INET6 : AF_INET)) < 0) {
				snprintf(err, errlen, "cannot bind UDP %u (%s) on %s: %s", port, f ? "IPv6" : "IPv4",
					 c.iface, strerror(-fd));
				for (uint16_t k = 0; k <= q; k++)
					for (int g = 0; g < (k == q ? f : 2); g++)
						if (fds[k][g] >= 0)
							close(fds[k][g]);
				return fd;
			}
			fds[q][f] = fd;
		}
	return 0;
}

void tl_udpport_move_commit(struct tl_udpport *u, uint16_t port, int (*fds)[2])
{
	for (uint16_t q = 0; q < u->queues; q++) {
		u->q[q].next_fd[0] = fds[q][0];
		u->q[q].next_fd[1] = fds[q][1];
		__atomic_store_n(&u->q[q].swap, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&u->port, port, __ATOMIC_RELAXED);
}

void tl_udpport_move_abort(const struct tl_udpport *u, int (*fds)[2])
{
	for (uint16_t q = 0; q < u->queues; q++)
		for (int f = 0; f < 2; f++)
			if (fds[q][f] >= 0)
				close(fds[q][f]);
}

int tl_udpport_move(struct tl_udpport *u, uint16_t port, char *err, size_t errlen)
{
	int fds[TL_MAX_WORKERS][2];
	int r = tl_udpport_move_prepare(u, port, fds, err, errlen);

	if (r == 0)
		tl_udpport_move_commit(u, port, fds);
	return r;
}

int tl_udpport_tx_full(const struct tl_udpport *u, uint16_t q)
{
	return u && q < u->queues && u->q[q].out_full >= 0 ? u->q[q].fd[u->q[q].out_full] : -1;
}

bool tl_udpport_moved(const struct tl_udpport *u)
{
	for (uint16_t q = 0; u && q < u->queues; q++)
		if (__atomic_load_n(&u->q[q].swap, __ATOMIC_ACQUIRE))
			return false;
	return true;
}

/* The worker takes a move: the new sockets serve from now on, the old ones are read until
 * empty (what was queued there is not lost), then closed. */
static void move_take(struct udpq *q)
{
	if (!__atomic_load_n(&q->swap, __ATOMIC_ACQUIRE))
		return;
	for (int f = 0; f < 2; f++) {
		if (q->old_fd[f] >= 0)
			close(q->old_fd[f]);
		q->old_fd[f] = q->fd[f];
		q->fd[f] = q->next_fd[f];
		q->next_fd[f] = -1;
	}
	__atomic_store_n(&q->swap, 0, __ATOMIC_RELEASE);
}

int tl_udpport_fd(const struct tl_udpport *u, uint16_t q, int f)
{
	return u && q < u->queues && f >= 0 && f < 2 ? u->q[q].fd[f] : -1;
}

void tl_udpport_stats(const struct tl_udpport *u, struct rte_eth_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint16_t i = 0; u && i < u->queues; i++) {
		const struct udpq *q = &u->q[i];

		st->ipackets += cnt_get(&q->ipackets);
		st->ibytes += cnt_get(&q->ibytes);
		st->opackets += cnt_get(&q->opackets);
		st->obytes += cnt_get(&q->obytes);
		st->imissed += cnt_get(&q->imissed);
		st->ierrors += cnt_get(&q->ierrors);
		st->oerrors += cnt_get(&q->oerrors);
	}
}

uint64_t tl_udpport_gro_msgs(const struct tl_udpport *u)
{
	uint64_t n = 0;

	for (uint16_t i = 0; u && i < u->queues; i++)
		n += cnt_get(&u->q[i].gro_msgs);
	return n;
}

uint64_t tl_udpport_gso_fallbacks(const struct tl_udpport *u)
{
	uint64_t n = 0;

	for (uint16_t i = 0; u && i < u->queues; i++)
		n += cnt_get(&u->q[i].gso_fallbacks);
	return n;
}

uint64_t tl_udpport_gso_sends(const struct tl_udpport *u)
{
	uint64_t n = 0;

	for (uint16_t i = 0; u && i < u->queues; i++)
		n += cnt_get(&u->q[i].gso_sends);
	return n;
}

bool tl_udpport_rx_pending(const struct tl_udpport *u, uint16_t q)
{
	return u && q < u->queues &&
	       (u->q[q].rm_i < u->q[q].rm_n || u->q[q].old_fd[0] >= 0 || u->q[q].old_fd[1] >= 0);
}

/* ---- receive ------------------------------------------------------------------------------ */

static void rx_cmsgs(struct udpq *q, int f, struct msghdr *mh, struct rx_meta *meta)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
			uint32_t total;

			memcpy(&total, CMSG_DATA(c), sizeof(total));
			cnt_add(&q->imissed, (uint32_t)(total - q->ovfl_seen[f]));   /* wraps at 2^32 */
			q->ovfl_seen[f] = total;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(meta->dst, &pi.ipi_addr, 4);
			meta->has_dst = true;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			meta->tos = *(const uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(meta->dst, &pi.ipi6_addr, 16);
			meta->has_dst = true;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			int tc;

			memcpy(&tc, CMSG_DATA(c), sizeof(tc));
			meta->tos = (uint8_t)tc;
		} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int seg;

			memcpy(&seg, CMSG_DATA(c), sizeof(seg));
			meta->seg = seg > 0 && seg < 65536 ? (uint16_t)seg : 0;
		}
	}
}

/* The frame the datagram of len bytes (at HDR_ROOM in m) was on the wire. */
static void frame_build(const struct tl_udpport *u, struct rte_mbuf *m, int f, const struct sockaddr_storage *src,
			const struct rx_meta *meta, uint32_t len)
{
	uint16_t hlen = f ? (uint16_t)HDR_ROOM : (uint16_t)HDR4;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *) + HDR_ROOM - hlen;
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
	struct rte_udp_hdr *udp;

	m->data_off = (uint16_t)(m->data_off + HDR_ROOM - hlen);
	m->data_len = (uint16_t)(hlen + len);
	m->pkt_len = m->data_len;
	memcpy(&eth->dst_addr, u->mac, 6);
	memcpy(&eth->src_addr, u->gw_mac, 6);
	if (!f) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)src;
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		*ip = (struct rte_ipv4_hdr){
			.version_ihl = RTE_IPV4_VHL_DEF,
			.type_of_service = meta->tos,
			.total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + sizeof(*udp) + len)),
			.time_to_live = 64,
			.next_proto_id = IPPROTO_UDP,
		};
		memcpy(&ip->src_addr, &a->sin_addr, 4);
		memcpy(&ip->dst_addr, meta->has_dst ? meta->dst : u->ip4, 4);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->src_port = a->sin_port;
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)src;
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
		*ip = (struct rte_ipv6_hdr){
			.vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)meta->tos << 20),
			.payload_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + len)),
			.proto = IPPROTO_UDP,
			.hop_limits = 64,
		};
		memcpy(TL_IP6_ADDR(ip->src_addr), &a->sin6_addr, 16);
		memcpy(TL_IP6_ADDR(ip->dst_addr), meta->has_dst ? meta->dst : u->ip6, 16);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->src_port = a->sin6_port;
	}
	udp->dst_port = rte_cpu_to_be_16(__atomic_load_n(&u->port, __ATOMIC_RELAXED));
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + len));
	udp->dgram_cksum = 0;
	/* The kernel verified both checksums before it queued the datagram. */
	m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
}

/* Reads up to GRO_MSGS messages of family f from fd into the empty arena; false if there
 * was nothing to read. */
static bool arena_fill(struct udpq *q, int fd, int f)
{
	struct mmsghdr h[GRO_MSGS];
	struct iovec iov[GRO_MSGS];
	union ctlbuf ctl[GRO_MSGS];
	int k;

	q->rm_n = q->rm_i = 0;
	q->rm_off = 0;
	if (fd < 0)
		return false;
	for (unsigned i = 0; i < GRO_MSGS; i++) {
		iov[i] = (struct iovec){ q->arena + i * GRO_MSG_LEN, GRO_MSG_LEN };
		h[i].msg_hdr = (struct msghdr){ .msg_name = &q->rm[i].src, .msg_namelen = sizeof(q->rm[i].src),
						.msg_iov = &iov[i], .msg_iovlen = 1, .msg_control = ctl[i].buf,
						.msg_controllen = sizeof(ctl[i].buf) };
	}
	k = recvmmsg(fd, h, GRO_MSGS, MSG_DONTWAIT, NULL);
	for (int i = 0; i < k; i++) {
		struct rx_msg *r = &q->rm[q->rm_n];

		r->meta = (struct rx_meta){ .tos = 0 };
		rx_cmsgs(q, f, &h[i].msg_hdr, &r->meta);
		if (h[i].msg_hdr.msg_flags & MSG_TRUNC) {
			/* over 64 KiB: not a datagram we carry */
			tl_sp_rx_drop(&q->ierrors, q->cnt, TL_PORT_WAN, TL_DROP_oversized);
			continue;
		}
		if (r->meta.seg && h[i].msg_len > r->meta.seg)
			cnt_add(&q->gro_msgs, 1);
		else
			r->meta.seg = 0;
		if (i != (int)q->rm_n) {
			memmove(q->arena + q->rm_n * GRO_MSG_LEN, q->arena + i * GRO_MSG_LEN, h[i].msg_len);
			r->src = q->rm[i].src;
		}
		r->len = h[i].msg_len;
		r->f = (uint8_t)f;
		q->rm_n++;
	}
	return k > 0;
}

/* Hands out the arena's datagrams as frames, at most n. Stops early when the pool is empty
 * (the rest waits in the arena). */
static unsigned arena_take(struct tl_udpport *u, struct udpq *q, struct rte_mbuf **out, unsigned n)
{
	struct tl_sp_bufs b = { .have = 0 };
	uint32_t room = tl_sp_room(q->mp);
	unsigned got = 0;

	while (got < n && q->rm_i < q->rm_n) {
		struct rx_msg *r = &q->rm[q->rm_i];
		uint32_t len = r->meta.seg ? RTE_MIN((uint32_t)r->meta.seg, r->len - q->rm_off) : r->len;

		if (len + HDR_ROOM <= room) {
			struct rte_mbuf *x = tl_sp_buf(&b, q->mp, n - got);

			if (!x)
				break;      /* no buffer: the datagrams wait in the arena */
			rte_memcpy(rte_pktmbuf_mtod_offset(x, void *, HDR_ROOM),
				   q->arena + q->rm_i * GRO_MSG_LEN + q->rm_off, len);
			frame_build(u, x, r->f, &r->src, &r->meta, len);
			cnt_add(&q->ibytes, x->pkt_len);
			out[got++] = x;
		} else {
			/* larger than a buffer (a peer's MTU above ours): not a frame we carry */
			tl_sp_rx_drop(&q->ierrors, q->cnt, TL_PORT_WAN, TL_DROP_oversized);
		}
		q->rm_off += len;
		if (q->rm_off >= r->len) {
			q->rm_i++;
			q->rm_off = 0;
		}
	}
	tl_sp_bufs_end(&b);
	cnt_add(&q->ipackets, got);
	return got;
}

uint16_t tl_udpport_rx(struct tl_udpport *u, uint16_t qi, struct rte_mbuf **pkts, uint16_t n)
{
	struct udpq *q = &u->q[qi];
	unsigned got;

	move_take(q);
	got = arena_take(u, q, pkts, n);
	for (int f = 0; f < 2 && got < n && q->rm_i >= q->rm_n; f++) {
		if (q->old_fd[f] < 0)
			continue;
		if (!arena_fill(q, q->old_fd[f], f)) {
			close(q->old_fd[f]);    /* drained: the move is complete for this family */
			q->old_fd[f] = -1;
			continue;
		}
		got += arena_take(u, q, pkts + got, n - got);
	}
	for (int i = 0; i < 2 && got < n && q->rm_i >= q->rm_n; i++) {
		int f = q->first;

		q->first ^= 1;
		arena_fill(q, q->fd[f], f);
		got += arena_take(u, q, pkts + got, n - got);
	}
	return (uint16_t)got;
}

/* ---- send --------------------------------------------------------------------------------- */

/* Where the frame m goes: family index, address, ECN/DSCP byte, payload, and the source
 * address it names (all zero: the kernel picks one). -1 if it is not an IPv4 or IPv6 UDP
 * frame in one segment. */
static int frame_read(struct rte_mbuf *m, struct sockaddr_storage *dst, socklen_t *dlen, int *tos,
		      struct iovec *payload, uint8_t src[16])
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ether_hdr *eth = (const void *)p;
	const struct rte_udp_hdr *udp;
	uint32_t l3;

	if (m->nb_segs != 1 || m->data_len < HDR4)
		return -1;
	memset(dst, 0, sizeof(*dst));
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		const struct rte_ipv4_hdr *ip = (const void *)(eth + 1);
		struct sockaddr_in *a = (struct sockaddr_in *)dst;

		l3 = (uint32_t)(ip->version_ihl & 0xf) * 4;
		if (ip->next_proto_id != IPPROTO_UDP || l3 < sizeof(*ip) || m->data_len < RTE_ETHER_HDR_LEN + l3 + sizeof(*udp))
			return -1;
		udp = (const void *)((const uint8_t *)ip + l3);
		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, &ip->dst_addr, 4);
		a->sin_port = udp->dst_port;
		memset(src, 0, 16);
		memcpy(src, &ip->src_addr, 4);
		*dlen = sizeof(*a);
		*tos = ip->type_of_service;
	} else if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *ip = (const void *)(eth + 1);
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)dst;

		l3 = sizeof(*ip);
		if (ip->proto != IPPROTO_UDP || m->data_len < HDR_ROOM)
			return -1;
		udp = (const void *)(ip + 1);
		a->sin6_family = AF_INET6;
		memcpy(&a->sin6_addr, TL_IP6_ADDR(ip->dst_addr), 16);
		a->sin6_port = udp->dst_port;
		memcpy(src, TL_IP6_ADDR(ip->src_addr), 16);
		*dlen = sizeof(*a);
		*tos = (int)(rte_be_to_cpu_32(ip->vtc_flow) >> 20 & 0xff);
	} else {
		return -1;
	}
	payload->iov_base = (void *)(udp + 1);
	payload->iov_len = (size_t)(p + m->data_len - (const uint8_t *)(udp + 1));
	if (rte_be_to_cpu_16(udp->dgram_len) < sizeof(*udp) ||
	    payload->iov_len < (size_t)rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp))
		return -1;
	payload->iov_len = (size_t)rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp);
	return dst->ss_family == AF_INET ? 0 : 1;
}

/* One datagram, or with UDP_SEGMENT one run of equal-sized datagrams (the last may be
 * shorter) to one address from one address with one ECN field: the kernel segments it after
 * one pass through its stack. A source (the address of ours the peer wrote to) goes as
 * IP_PKTINFO / IPV6_PKTINFO, as a server socket replies from where it was reached. */
struct tx_msg {
	int f, tos;
	uint8_t src[16];               /* all zero: the kernel picks */
	struct sockaddr_storage dst;
	socklen_t dlen;
	unsigned first, segs;          /* frames pkts[first .. first + segs) */
	size_t seg, bytes;             /* segment size, total */
};

static bool same_dst(const struct tx_msg *a, const struct sockaddr_storage *d, int f, int tos, const uint8_t src[16])
{
	if (a->f != f || a->tos != tos || memcmp(a->src, src, 16))
		return false;
	if (f == 0) {
		const struct sockaddr_in *x = (const void *)&a->dst, *y = (const void *)d;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)&a->dst, *y = (const void *)d;

	return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A destination's key: family index, address, port. */
static void dst_key(const struct sockaddr_storage *d, int f, uint8_t addr[16], uint16_t *port)
{
	memset(addr, 0, 16);
	if (f == 0) {
		const struct sockaddr_in *a = (const void *)d;

		memcpy(addr, &a->sin_addr, 4);
		*port = a->sin_port;
	} else {
		const struct sockaddr_in6 *a = (const void *)d;

		memcpy(addr, &a->sin6_addr, 16);
		*port = a->sin6_port;
	}
}

/* GSO is off for now for destination d (family index f). */
static bool gso_off(struct udpq *q, const struct sockaddr_storage *d, int f, uint64_t now)
{
	uint8_t addr[16];
	uint16_t port;

	if (!q->no_gso_n)
		return false;
	dst_key(d, f, addr, &port);
	for (unsigned i = 0; i < NO_GSO_DSTS; i++) {
		struct no_gso *x = &q->no_gso[i];

		if (!x->until_ns || x->f != f || x->port != port || memcmp(x->addr, addr, 16))
			continue;
		if (now < x->until_ns)
			return true;
		x->until_ns = 0;           /* expired: GSO again */
		q->no_gso_n--;
		return false;
	}
	return false;
}

/* The kernel refused a GSO send to d: datagram by datagram there for NO_GSO_NS (the oldest
 * entry makes room). */
static void gso_off_add(struct udpq *q, const struct sockaddr_storage *d, int f, uint64_t now)
{
	struct no_gso *x = &q->no_gso[q->no_gso_next];

	q->no_gso_next = (q->no_gso_next + 1) % NO_GSO_DSTS;
	if (!x->until_ns)
		q->no_gso_n++;
	x->f = (uint8_t)f;
	dst_key(d, f, x->addr, &x->port);
	x->until_ns = now + NO_GSO_NS;
	cnt_add(&q->gso_fallbacks, 1);
}

static bool src_given(const uint8_t src[16])
{
	static const uint8_t any[16];

	return memcmp(src, any, 16) != 0;
}

/* The IP_PKTINFO / IPV6_PKTINFO of a source address, after c. */
static void src_cmsg(struct msghdr *mh, struct cmsghdr *c, const struct tx_msg *x)
{
	c = CMSG_NXTHDR(mh, c);
	if (x->f) {
		struct in6_pktinfo pi = { .ipi6_ifindex = 0 };

		memcpy(&pi.ipi6_addr, x->src, 16);
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	} else {
		struct in_pktinfo pi = { .ipi_ifindex = 0 };

		memcpy(&pi.ipi_spec_dst, x->src, 4);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	}
}

/* Sends msgs[0..n) (all of one family) with one sendmmsg. Returns how many messages the
 * kernel took, or -errno for the first. */
static int send_msgs(struct udpq *q, struct tx_msg *msgs, unsigned n, struct iovec *iov)
{
	struct mmsghdr h[TL_UDPPORT_TX_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl[TL_UDPPORT_TX_BURST];
	int k;

	for (unsigned i = 0; i < n; i++) {
		struct tx_msg *x = &msgs[i];
		struct cmsghdr *c;
		bool src = src_given(x->src);
		size_t clen = CMSG_SPACE(sizeof(int)) + (x->segs > 1 ? CMSG_SPACE(sizeof(uint16_t)) : 0) +
			      (!src ? 0 : x->f ? CMSG_SPACE(sizeof(struct in6_pktinfo)) : CMSG_SPACE(sizeof(struct in_pktinfo)));

		memset(ctl[i].buf, 0, clen);      /* CMSG_NXTHDR reads the next header's length */
		h[i].msg_hdr = (struct msghdr){ .msg_name = &x->dst, .msg_namelen = x->dlen, .msg_iov = &iov[x->first],
						.msg_iovlen = x->segs, .msg_control = ctl[i].buf, .msg_controllen = clen };
		c = CMSG_FIRSTHDR(&h[i].msg_hdr);
		c->cmsg_level = x->f ? IPPROTO_IPV6 : IPPROTO_IP;
		c->cmsg_type = x->f ? IPV6_TCLASS : IP_TOS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &x->tos, sizeof(int));
		if (x->segs > 1) {
			uint16_t seg = (uint16_t)x->seg;

			c = CMSG_NXTHDR(&h[i].msg_hdr, c);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
		}
		if (src)
			src_cmsg(&h[i].msg_hdr, c, x);
	}
	k = sendmmsg(q->fd[msgs[0].f], h, n, MSG_DONTWAIT);
	return k < 0 ? -errno : k;
}

uint16_t tl_udpport_tx(struct tl_udpport *u, uint16_t qi, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed)
{
	struct udpq *q = &u->q[qi];
	struct iovec iov[TL_UDPPORT_TX_BURST];
	struct tx_msg msgs[TL_UDPPORT_TX_BURST];
	unsigned done = 0;
	uint64_t now = q->no_gso_n ? mono_ns() : 0;   /* only to expire entries */

	*n_failed = 0;
	n = (uint16_t)RTE_MIN(n, (unsigned)TL_UDPPORT_TX_BURST);
	move_take(q);
	q->out_full = -1;
	while (done < n) {
		unsigned nm = 0, i, sent = 0;
		int f = -1, k;

		/* Messages of one family from pkts[done..]: a frame joins the last message when it
		 * goes to the same place, is no larger than its segments and the last segment was
		 * full (GSO: equal segments, the last may be shorter). */
		for (i = done; i < n; i++) {
			struct sockaddr_storage dst;
			socklen_t dlen = 0;
			uint8_t src[16];
			int tos = 0, ff = frame_read(pkts[i], &dst, &dlen, &tos, &iov[i], src);
			struct tx_msg *last = nm ? &msgs[nm - 1] : NULL;

			if (ff < 0 || q->fd[ff] < 0) {
				if (nm)
					break;        /* send what is gathered first; this one comes next */
				failed[(*n_failed)++] = pkts[i];   /* not a frame we can send: refused */
				cnt_add(&q->oerrors, 1);
				done++;
				continue;
			}
			if (f >= 0 && ff != f)
				break;
			f = ff;
			if (last && same_dst(last, &dst, ff, tos, src) && iov[i].iov_len <= last->seg &&
			    last->bytes == last->seg * last->segs && last->segs < TL_UDPPORT_GSO_SEGS &&
			    last->bytes + iov[i].iov_len <= TL_UDPPORT_GSO_BYTES && !gso_off(q, &dst, ff, now)) {
				last->segs++;
				last->bytes += iov[i].iov_len;
				continue;
			}
			msgs[nm] = (struct tx_msg){ .f = ff, .tos = tos, .dst = dst, .dlen = dlen, .first = i, .segs = 1,
						    .seg = iov[i].iov_len, .bytes = iov[i].iov_len };
			memcpy(msgs[nm++].src, src, 16);
		}
		if (!nm)
			continue;
		k = send_msgs(q, msgs, nm, iov);
		for (int m = 0; m < k; m++) {
			sent += msgs[m].segs;
			if (msgs[m].segs > 1)
				cnt_add(&q->gso_sends, 1);
		}
		if (k > 0) {
			for (unsigned j = 0; j < sent; j++)
				cnt_add(&q->obytes, pkts[done + j]->pkt_len);
			cnt_add(&q->opackets, sent);
			rte_pktmbuf_free_bulk(pkts + done, sent);
			done += sent;
			continue;        /* a shorter count: the next call reports why */
		}
		if (k == -EAGAIN || k == -EWOULDBLOCK || k == -ENOBUFS || k == -EINTR) {
			q->out_full = (int8_t)msgs[0].f;
			break;           /* the socket is full: the rest waits with the caller */
		}
		if (msgs[0].segs > 1 && (k == -EMSGSIZE || k == -EINVAL || k == -EIO || k == -EOPNOTSUPP)) {
			if (!now)
				now = mono_ns();
			gso_off_add(q, &msgs[0].dst, msgs[0].f, now);   /* there: one by one */
			continue;
		}
		failed[(*n_failed)++] = pkts[done++];   /* refused by the kernel (no route, too big...) */
		cnt_add(&q->oerrors, 1);
	}
	return (uint16_t)done;
}
