/* The `udp` WAN port kind's receive side (udpport.h): recvmmsg into the queue's buffers or
 * its arena, and each datagram handed out as the frame it was on the wire. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_memcpy.h>
#include <rte_udp.h>

#include "dataplane/dp.h"
#include "dataplane/dpdk_compat.h"
#include "dataplane/sockport.h"
#include "dataplane/udpport.h"
#include "dataplane/udpport_int.h"

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

/* ---- receiving straight into buffers ---------------------------------------------------- */

/* UDP_GRO hands a run of datagrams over as one message, their bytes back to back: with an
 * iovec of one buffer per datagram, each of the datagrams' size, the kernel's copy puts
 * every datagram in a buffer of its own, where the frame is then built around it (no second
 * copy). The size is the one the queue saw last (zseg). A message that does not fit that
 * layout (another segment size, a lone datagram larger than zseg, more bytes than the
 * buffers hold) is gathered into its arena slot, and handed out from there as before. */

void tl_udpport_rx_free(struct udpq *q)
{
	for (unsigned i = 0; i < GRO_MSGS; i++) {
		for (unsigned j = 0; j < q->zn[i]; j++)
			rte_pktmbuf_free(q->zm[i][j]);   /* NULL: handed out */
		q->zn[i] = 0;
	}
}

/* Slot i's buffers handed out are gone from zm[i] (NULL): the rest close up, and the slot is
 * topped up to want buffers. Short (the pool is low): the slot reads into the arena. */
static void rxz_stock(struct udpq *q, unsigned i, unsigned want)
{
	unsigned n = 0;

	for (unsigned j = 0; j < q->zn[i]; j++)
		if (q->zm[i][j])
			q->zm[i][n++] = q->zm[i][j];
	q->zn[i] = (uint8_t)n;
	if (n < want && rte_pktmbuf_alloc_bulk(q->mp, q->zm[i] + n, want - n) == 0)
		q->zn[i] = (uint8_t)want;
}

/* Message i's iovec: k buffers of q->zseg bytes, then the rest of its 64 KiB in its arena
 * slot (at the same offset the bytes would have in the arena); or all of it in the arena.
 * Returns the buffers lent (0: arena only). */
static unsigned rxz_iov(struct udpq *q, unsigned i, struct iovec *iov, unsigned *iovlen)
{
	uint8_t *slot = q->arena + i * GRO_MSG_LEN;
	unsigned k = q->zseg ? RTE_MIN((unsigned)RXZ_SEGS, GRO_MSG_LEN / q->zseg) : 0;

	if (k)
		rxz_stock(q, i, k);
	if (!k || q->zn[i] < k) {
		iov[0] = (struct iovec){ slot, GRO_MSG_LEN };
		*iovlen = 1;
		return 0;
	}
	for (unsigned j = 0; j < k; j++)
		iov[j] = (struct iovec){ rte_pktmbuf_mtod_offset(q->zm[i][j], uint8_t *, HDR_ROOM), q->zseg };
	iov[k] = (struct iovec){ slot + k * q->zseg, GRO_MSG_LEN - k * q->zseg };
	*iovlen = k + 1;
	return k;
}

/* Whether message r, read into k buffers of seg bytes each, lies one datagram per buffer;
 * if not, its bytes are gathered into its arena slot. */
static bool rxz_settle(struct udpq *q, const struct rx_msg *r, unsigned k, uint32_t seg)
{
	uint8_t *slot = q->arena + r->slot * GRO_MSG_LEN;

	if (r->meta.seg ? r->meta.seg == seg && r->len <= k * seg : r->len <= seg)
		return true;
	for (unsigned j = 0; j < k && j * seg < r->len; j++)
		rte_memcpy(slot + j * seg, rte_pktmbuf_mtod_offset(q->zm[r->slot][j], uint8_t *, HDR_ROOM),
			   RTE_MIN(seg, r->len - j * seg));
	return false;
}

/* The segment size to lay the buffers out for next: the last message's (a lone datagram
 * raises it), if a buffer holds it. */
static void rxz_learn(struct udpq *q, const struct rx_msg *r)
{
	uint32_t s = r->meta.seg ? r->meta.seg : RTE_MAX(r->len, (uint32_t)q->zseg);

	if (s && s + HDR_ROOM <= tl_sp_room(q->mp))
		q->zseg = (uint16_t)s;
}

/* ---- the arena ------------------------------------------------------------------------- */

/* Reads up to GRO_MSGS messages of family f from fd into the empty arena (or straight into
 * buffers); false if there was nothing to read. */
static bool arena_fill(struct udpq *q, int fd, int f)
{
	struct mmsghdr h[GRO_MSGS];
	struct iovec iov[GRO_MSGS][RXZ_SEGS + 1];
	union ctlbuf ctl[GRO_MSGS];
	unsigned lent[GRO_MSGS];
	uint16_t seg = q->zseg;
	int k;

	q->rm_n = q->rm_i = 0;
	q->rm_off = 0;
	if (fd < 0)
		return false;
	for (unsigned i = 0; i < GRO_MSGS; i++) {
		unsigned iovlen;

		lent[i] = rxz_iov(q, i, iov[i], &iovlen);
		h[i].msg_hdr = (struct msghdr){ .msg_name = &q->rm[i].src, .msg_namelen = sizeof(q->rm[i].src),
						.msg_iov = iov[i], .msg_iovlen = iovlen, .msg_control = ctl[i].buf,
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
		if (i != (int)q->rm_n)
			r->src = q->rm[i].src;
		r->len = h[i].msg_len;
		r->f = (uint8_t)f;
		r->slot = (uint8_t)i;
		r->direct = lent[i] && rxz_settle(q, r, lent[i], seg);
		rxz_learn(q, r);
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
	unsigned got = 0, direct = 0;

	while (got < n && q->rm_i < q->rm_n) {
		struct rx_msg *r = &q->rm[q->rm_i];
		uint32_t len = r->meta.seg ? RTE_MIN((uint32_t)r->meta.seg, r->len - q->rm_off) : r->len;

		if (r->direct) {
			/* in its own buffer already (and it fits one: zseg does) */
			unsigned j = r->meta.seg ? q->rm_off / r->meta.seg : 0;
			struct rte_mbuf *x = q->zm[r->slot][j];

			q->zm[r->slot][j] = NULL;
			frame_build(u, x, r->f, &r->src, &r->meta, len);
			cnt_add(&q->ibytes, x->pkt_len);
			out[got++] = x;
			direct++;
		} else if (len + HDR_ROOM <= room) {
			struct rte_mbuf *x = tl_sp_buf(&b, q->mp, n - got);

			if (!x)
				break;      /* no buffer: the datagrams wait in the arena */
			rte_memcpy(rte_pktmbuf_mtod_offset(x, void *, HDR_ROOM),
				   q->arena + r->slot * GRO_MSG_LEN + q->rm_off, len);
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
	cnt_add(&q->rx_direct, direct);
	return got;
}

uint16_t tl_udpport_rx(struct tl_udpport *u, uint16_t qi, struct rte_mbuf **pkts, uint16_t n)
{
	struct udpq *q = &u->q[qi];
	unsigned got;

	tl_udpport_move_take(q);
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

