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
#include "dataplane/udpport_int.h"

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
		tl_udpport_rx_free(&u->q[q]);
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
void tl_udpport_move_take(struct udpq *q)
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

uint64_t tl_udpport_rx_direct(const struct tl_udpport *u)
{
	uint64_t n = 0;

	for (uint16_t i = 0; u && i < u->queues; i++)
		n += cnt_get(&u->q[i].rx_direct);
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
	struct mmsghdr h[UDPP_BURST];
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl[UDPP_BURST];
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
	struct iovec iov[UDPP_BURST];
	struct tx_msg msgs[UDPP_BURST];
	unsigned done = 0;
	uint64_t now = q->no_gso_n ? mono_ns() : 0;   /* only to expire entries */

	*n_failed = 0;
	n = (uint16_t)RTE_MIN(n, (unsigned)UDPP_BURST);
	tl_udpport_move_take(q);
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
