/* The packet LAN port kind (src/dataplane/afpacket.c) on a veth pair in a network namespace
 * of the test's own (unshare): what a host's kernel sends through the veth with offloads
 * (a TSO packet of TCP over IPv4 and IPv6, a UDP datagram with its checksum left to the
 * device) arrives as the segments the host would have sent, each with its headers and
 * checksums right; frames sent leave as the host's GRO would have merged them (one flow's
 * consecutive equal segments as one GSO packet whose partial checksum completes right,
 * anything else as it is); packets the socket could not hold are counted as imissed.
 * The far end of the veth is a plain AF_PACKET socket with virtio-net headers, standing
 * in for the host's kernel on both sides. Needs CAP_NET_ADMIN and CAP_SYS_ADMIN. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "check.h"
#include "dataplane/afpacket.h"
#include "dataplane/dp.h"
#include "dataplane/dpdk_compat.h"
#include "test_eal.h"

#define VH sizeof(struct virtio_net_hdr)
#define OPT 12                  /* TCP options: NOP NOP timestamps */

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5     /* Linux 5.18 and later; not in every libc's headers */
#endif

static struct rte_mempool *pool;

/* A raw socket on iface with virtio-net headers: the host's kernel on the far end. */
static int far_socket(const char *iface)
{
	int one = 1, fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, 0);
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				 .sll_ifindex = (int)if_nametoindex(iface) };

	CHECK(fd >= 0 && setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) == 0 &&
	      setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) == 0 &&
	      bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "far socket on %s", iface);
	return fd;
}

/* Ethernet + IPv4 or IPv6 + TCP with OPT bytes of options + payload (byte i = i * 7 + salt);
 * returns the frame length. */
static size_t tcp_frame(uint8_t *f, bool v6, uint32_t seq, uint8_t flags, uint8_t tos, size_t payload, uint8_t salt)
{
	struct rte_ether_hdr *eth = (void *)f;
	size_t l3 = v6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr);
	struct rte_tcp_hdr *th = (void *)(f + RTE_ETHER_HDR_LEN + l3);
	uint8_t *opt = (uint8_t *)(th + 1);

	memset(f, 0, RTE_ETHER_HDR_LEN + l3 + sizeof(*th) + OPT);
	memset(&eth->dst_addr, 0x02, 6);
	memset(&eth->src_addr, 0x04, 6);
	if (v6) {
		struct rte_ipv6_hdr *ip = (void *)(eth + 1);

		eth->ether_type = htons(RTE_ETHER_TYPE_IPV6);
		ip->vtc_flow = htonl(6u << 28 | (uint32_t)tos << 20 | 0x12345);
		ip->payload_len = htons((uint16_t)(sizeof(*th) + OPT + payload));
		ip->proto = IPPROTO_TCP;
		ip->hop_limits = 64;
		TL_IP6_ADDR(ip->src_addr)[0] = 0xfd, TL_IP6_ADDR(ip->src_addr)[15] = 1;
		TL_IP6_ADDR(ip->dst_addr)[0] = 0xfd, TL_IP6_ADDR(ip->dst_addr)[15] = 2;
	} else {
		struct rte_ipv4_hdr *ip = (void *)(eth + 1);

		eth->ether_type = htons(RTE_ETHER_TYPE_IPV4);
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->type_of_service = tos;
		ip->total_length = htons((uint16_t)(l3 + sizeof(*th) + OPT + payload));
		ip->packet_id = htons(100);
		ip->fragment_offset = htons(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_TCP;
		ip->src_addr = htonl(0x0a4d0001);
		ip->dst_addr = htonl(0x0a4d0002);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	th->src_port = htons(40000);
	th->dst_port = htons(5201);
	th->sent_seq = htonl(seq);
	th->recv_ack = htonl(777);
	th->data_off = (uint8_t)((sizeof(*th) + OPT) / 4 << 4);
	th->tcp_flags = flags;
	th->rx_win = htons(512);
	opt[0] = opt[1] = 1;
	opt[2] = 8, opt[3] = 10;
	memset(opt + 4, 0x5a, 8);
	for (size_t i = 0; i < payload; i++)
		opt[OPT + i] = (uint8_t)(i * 7 + salt);
	return RTE_ETHER_HDR_LEN + l3 + sizeof(*th) + OPT + payload;
}

static void tcp_partial(uint8_t *f, bool v6)
{
	void *ip = f + RTE_ETHER_HDR_LEN;
	struct rte_tcp_hdr *th = (void *)(f + RTE_ETHER_HDR_LEN + (v6 ? 40 : 20));

	th->cksum = v6 ? rte_ipv6_phdr_cksum(ip, 0) : rte_ipv4_phdr_cksum(ip, 0);
}

static bool l4_ok(const uint8_t *f, bool v6)
{
	const void *ip = f + RTE_ETHER_HDR_LEN;
	const void *l4 = f + RTE_ETHER_HDR_LEN + (v6 ? 40 : 20);

	if (v6)
		return rte_ipv6_udptcp_cksum_verify(ip, l4) == 0;
	return rte_ipv4_cksum(ip) == 0 && rte_ipv4_udptcp_cksum_verify(ip, l4) == 0;
}

static ssize_t far_send(int fd, const struct virtio_net_hdr *vh, const uint8_t *f, size_t len)
{
	struct iovec iov[2] = { { (void *)vh, VH }, { (void *)f, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	return sendmsg(fd, &mh, 0);
}

static unsigned rx_all(struct tl_afp *p, struct rte_mbuf **m, unsigned n)
{
	unsigned got = 0;

	for (int round = 0; round < 200 && got < n; round++) {
		got += tl_afp_rx(p, 0, m + got, (uint16_t)RTE_MIN(n - got, 7u));   /* small bursts */
		if (got < n)
			usleep(1000);
	}
	return got;
}

/* A TSO packet of 4 x 1000 + 500 payload bytes over IPv4 (CWR and PSH set, checksum
 * partial) and one of 2 x 1200 + 1 over IPv6: 5 + 3 segments. */
static void test_rx_split(struct tl_afp *p, int far)
{
	static uint8_t f[8192];
	struct rte_mbuf *m[16];
	struct virtio_net_hdr vh = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
				     .hdr_len = 14 + 20 + 20 + OPT, .gso_size = 1000, .csum_start = 34,
				     .csum_offset = 16 };
	size_t len = tcp_frame(f, false, 1000000, 0x10 | 0x08 | 0x80, 0x02, 4500, 3);
	unsigned got, ok = 0, flags_ok = 0;
	uint64_t split, merged;

	tcp_partial(f, false);
	CHECK(far_send(far, &vh, f, len) == (ssize_t)(VH + len), "the host sends a TSO packet (%s)", strerror(errno));
	got = rx_all(p, m, 5);
	CHECK(got == 5, "IPv4: five segments (%u)", got);
	for (unsigned i = 0; i < got; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(m[i], const uint8_t *);
		const struct rte_ipv4_hdr *ip = (const void *)(d + 14);
		const struct rte_tcp_hdr *th = (const void *)(d + 34);
		unsigned plen = i == 4 ? 500 : 1000;

		ok += m[i]->pkt_len == 14 + 20 + 20 + OPT + plen && ntohs(ip->total_length) == 20 + 20 + OPT + plen &&
		      ntohs(ip->packet_id) == 100 + i && ntohl(th->sent_seq) == 1000000 + i * 1000 && l4_ok(d, false) &&
		      !memcmp(d + 54 + OPT, f + 54 + OPT + i * 1000, plen) && ip->type_of_service == 0x02;
		flags_ok += th->tcp_flags == (uint8_t)(0x10 | (i == 0 ? 0x80 : 0) | (i == 4 ? 0x08 : 0));
	}
	CHECK(ok == 5, "IPv4: lengths, ids, sequence numbers, checksums, payload, ECN right (%u of 5)", ok);
	CHECK(flags_ok == 5, "IPv4: CWR on the first only, PSH on the last only (%u of 5)", flags_ok);
	rte_pktmbuf_free_bulk(m, got);

	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
	vh.hdr_len = 14 + 40 + 20 + OPT;
	vh.gso_size = 1200;
	vh.csum_start = 54;
	len = tcp_frame(f, true, 0xfffffc00, 0x10, 0x01, 2401, 9);   /* the sequence wraps */
	tcp_partial(f, true);
	CHECK(far_send(far, &vh, f, len) == (ssize_t)(VH + len), "the host sends a TSO packet over IPv6");
	got = rx_all(p, m, 3);
	CHECK(got == 3, "IPv6: three segments (%u)", got);
	ok = 0;
	for (unsigned i = 0; i < got; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(m[i], const uint8_t *);
		const struct rte_ipv6_hdr *ip = (const void *)(d + 14);
		const struct rte_tcp_hdr *th = (const void *)(d + 54);
		unsigned plen = i == 2 ? 1 : 1200;

		ok += ntohs(ip->payload_len) == 20 + OPT + plen && ntohl(th->sent_seq) == 0xfffffc00u + i * 1200 &&
		      l4_ok(d, true) && !memcmp(d + 74 + OPT, f + 74 + OPT + i * 1200, plen);
	}
	CHECK(ok == 3, "IPv6: lengths, sequence numbers, checksums, payload right (%u of 3)", ok);
	rte_pktmbuf_free_bulk(m, got);
	tl_afp_gso_counts(p, &split, &merged);
	CHECK(split == 2, "two packets split (%lu)", (unsigned long)split);
}

/* A UDP datagram of 100 bytes from 10.77.0.1:1 to .2:2, its checksum left to the device. */
static size_t udp_partial(uint8_t *f, struct virtio_net_hdr *vh)
{
	struct rte_ipv4_hdr *ip = (void *)(f + 14);
	struct rte_udp_hdr *uh = (void *)(f + 34);

	memset(f, 0, 14 + 128);
	*vh = (struct virtio_net_hdr){ .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 34, .csum_offset = 6 };
	memset(f, 0x02, 12);
	f[12] = 0x08;
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = htons(20 + 8 + 100);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = htonl(0x0a4d0001);
	ip->dst_addr = htonl(0x0a4d0002);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	uh->src_port = htons(1);
	uh->dst_port = htons(2);
	uh->dgram_len = htons(108);
	memset(uh + 1, 0xab, 100);
	uh->dgram_cksum = rte_ipv4_phdr_cksum(ip, 0);
	return 14 + 128;
}

static bool udp_ok(struct rte_mbuf *m)
{
	return rte_ipv4_udptcp_cksum_verify(rte_pktmbuf_mtod_offset(m, void *, 14),
					    rte_pktmbuf_mtod_offset(m, void *, 34)) == 0;
}

/* A UDP datagram whose checksum the host left to the device arrives complete. */
static void test_rx_csum(struct tl_afp *p, int far)
{
	uint8_t f[256];
	struct virtio_net_hdr vh;
	size_t len = udp_partial(f, &vh);
	struct rte_mbuf *m[1];

	CHECK(far_send(far, &vh, f, len) == (ssize_t)(VH + len), "the host sends a UDP datagram");
	CHECK(rx_all(p, m, 1) == 1, "it arrives");
	CHECK(udp_ok(m[0]), "with its checksum completed");
	rte_pktmbuf_free(m[0]);
}

/* The host sends 40 single frames (no GSO packet among them): one read of a 32-frame burst
 * hands out 32, not just what one recvmmsg holds, and the next read the other 8. */
static void test_rx_single_frames(struct tl_afp *p, int far)
{
	uint8_t f[256];
	struct virtio_net_hdr vh;
	size_t len = udp_partial(f, &vh);
	struct rte_mbuf *m[32];
	unsigned sent = 0, got, ok = 0, more;

	for (unsigned i = 0; i < 40; i++)
		sent += far_send(far, &vh, f, len) == (ssize_t)(VH + len);
	CHECK(sent == 40, "the host sends 40 single frames (%u)", sent);
	usleep(20000);
	got = tl_afp_rx(p, 0, m, 32);
	CHECK(got == 32, "one read hands out a full burst of 32 (%u)", got);
	for (unsigned i = 0; i < got; i++)
		ok += m[i]->pkt_len == len && udp_ok(m[i]);
	CHECK(ok == got, "each whole, its checksum completed (%u of %u)", ok, got);
	rte_pktmbuf_free_bulk(m, got);
	more = tl_afp_rx(p, 0, m, 32);
	CHECK(more == 8, "the next read the other 8 (%u)", more);
	rte_pktmbuf_free_bulk(m, more);
	CHECK(tl_afp_rx(p, 0, m, 32) == 0 && !tl_afp_rx_pending(p, 0), "then nothing is left");
}

/* UDP over IPv4 from 10.77.0.1:1 to .2:2 with payload bytes (0xab), checksum partial. */
static size_t udp_frame(uint8_t *f, size_t payload)
{
	struct rte_ipv4_hdr *ip = (void *)(f + 14);
	struct rte_udp_hdr *uh = (void *)(f + 34);

	memset(f, 0x02, 12);
	f[12] = 0x08, f[13] = 0x00;
	*ip = (struct rte_ipv4_hdr){ .version_ihl = RTE_IPV4_VHL_DEF, .time_to_live = 64, .next_proto_id = IPPROTO_UDP,
				     .total_length = htons((uint16_t)(28 + payload)) };
	ip->src_addr = htonl(0x0a4d0001);
	ip->dst_addr = htonl(0x0a4d0002);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	*uh = (struct rte_udp_hdr){ .src_port = htons(1), .dst_port = htons(2), .dgram_len = htons((uint16_t)(8 + payload)) };
	memset(uh + 1, 0xab, payload);
	uh->dgram_cksum = rte_ipv4_phdr_cksum(ip, 0);
	return 42 + payload;
}

/* What the port reads and cannot hand out is dropped under a reason, as received on the LAN
 * port, in the reading worker's counters (cnt): a 3000-byte frame (larger than a 2 KiB
 * buffer) as oversized, a UDP GSO packet (not a kind the port splits) as gso_unsplittable;
 * the frame after them arrives. */
static void test_rx_dropped(struct tl_afp *p, int far, const struct tl_counters *cnt)
{
	static uint8_t f[4096];
	struct virtio_net_hdr plain = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	struct virtio_net_hdr uso = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso_type = VIRTIO_NET_HDR_GSO_UDP_L4,
				      .hdr_len = 42, .gso_size = 500, .csum_start = 34, .csum_offset = 6 };
	struct virtio_net_hdr vh;
	size_t len = udp_frame(f, 3000 - 42);
	struct rte_eth_stats st;
	struct rte_mbuf *m[1];
	uint64_t ierrors;

	tl_afp_stats(p, &st);
	ierrors = st.ierrors;
	CHECK(far_send(far, &plain, f, len) == (ssize_t)(VH + len), "the host sends a 3000-byte frame (%s)", strerror(errno));
	len = udp_frame(f, 2000);
	CHECK(far_send(far, &uso, f, len) == (ssize_t)(VH + len), "the host sends a UDP GSO packet (%s)", strerror(errno));
	len = udp_partial(f, &vh);
	CHECK(far_send(far, &vh, f, len) == (ssize_t)(VH + len), "the host sends a UDP datagram");
	CHECK(rx_all(p, m, 1) == 1 && m[0]->pkt_len == len, "the datagram after them arrives");
	rte_pktmbuf_free(m[0]);
	CHECK(cnt->drops[TL_DROP_oversized] == 1 && cnt->drops[TL_DROP_gso_unsplittable] == 1,
	      "dropped: oversized %lu, gso_unsplittable %lu", (unsigned long)cnt->drops[TL_DROP_oversized],
	      (unsigned long)cnt->drops[TL_DROP_gso_unsplittable]);
	CHECK(cnt->rx[TL_PORT_LAN] == 2 && cnt->rx_drops[TL_PORT_LAN] == 2,
	      "received and dropped on the LAN port (rx %lu, rx_drops %lu)", (unsigned long)cnt->rx[TL_PORT_LAN],
	      (unsigned long)cnt->rx_drops[TL_PORT_LAN]);
	tl_afp_stats(p, &st);
	CHECK(st.ierrors == ierrors + 2, "and in ierrors (%lu)", (unsigned long)(st.ierrors - ierrors));
}

/* The pool runs dry after a packet was read: it waits in the port, and arrives whole (its
 * checksum completed once) when buffers are back. */
static void test_rx_pool_empty(int far)
{
	struct rte_mempool *small = rte_pktmbuf_pool_create("afp_small", 8, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
							    (int)rte_socket_id());
	struct tl_afp_cfg c = { .iface = "vb", .queues = 1, .pools = &small };
	struct rte_mbuf *held[8], *m[1];
	struct virtio_net_hdr vh;
	uint8_t f[256];
	size_t len = udp_partial(f, &vh);
	char err[256] = "";
	struct tl_afp *p = small ? tl_afp_open(&c, err, sizeof(err)) : NULL;
	unsigned k = 0;

	CHECK(p != NULL, "a port with a pool of 8 opens (%s)", err);
	if (!p)
		return;
	while (k < 8 && (held[k] = rte_pktmbuf_alloc(small)))
		k++;
	CHECK(far_send(far, &vh, f, len) == (ssize_t)(VH + len), "the host sends a UDP datagram");
	usleep(20000);
	CHECK(tl_afp_rx(p, 0, m, 1) == 0 && tl_afp_rx_pending(p, 0), "no buffer: it waits in the port");
	for (int i = 0; i < 2; i++)   /* a checksum finished twice would be undone */
		CHECK(tl_afp_rx(p, 0, m, 1) == 0, "still no buffer (%d)", i);
	rte_pktmbuf_free_bulk(held, k);
	CHECK(tl_afp_rx(p, 0, m, 1) == 1 && udp_ok(m[0]), "buffers back: it arrives with a right checksum");
	rte_pktmbuf_free(m[0]);
	tl_afp_close(p);
	rte_mempool_free(small);
}

static struct rte_mbuf *mbuf_of(const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	if (m) {
		memcpy(rte_pktmbuf_append(m, (uint16_t)len), f, len);
	}
	return m;
}

/* What the far end reads: the virtio-net header and the frame. */
static ssize_t far_recv(int fd, struct virtio_net_hdr *vh, uint8_t *f, size_t cap)
{
	struct iovec iov[2] = { { vh, VH }, { f, cap } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	for (int i = 0; i < 200; i++) {
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n >= 0 || errno != EAGAIN)
			return n < 0 ? n : n - (ssize_t)VH;
		usleep(1000);
	}
	return -1;
}

/* 10 segments of flow A (PSH on the last), a UDP frame, 3 segments of flow B whose second
 * carries CE: A leaves as one GSO packet, the UDP frame as it is, B as one frame and a GSO
 * packet of 2 (a different ECN field is never merged). */
static void test_tx_merge(struct tl_afp *p, int far)
{
	static uint8_t f[70000];
	struct rte_mbuf *m[16], *refused[16];
	struct virtio_net_hdr vh;
	uint16_t nf = 0, took;
	unsigned k = 0;
	uint64_t split, merged;
	ssize_t n;
	uint8_t udp[64] = { 0 };

	for (unsigned i = 0; i < 10; i++) {
		size_t len = tcp_frame(f, false, 5000 + i * 1000, i == 9 ? 0x18 : 0x10, 0x02, i == 9 ? 300 : 1000,
				       (uint8_t)i);
		struct rte_tcp_hdr *th = (void *)(f + 34);

		th->cksum = rte_ipv4_udptcp_cksum((void *)(f + 14), th);
		m[k++] = mbuf_of(f, len);
	}
	memset(udp, 0x02, 12);
	udp[12] = 0x08, udp[13] = 0x00, udp[14] = 0x45;
	m[k++] = mbuf_of(udp, sizeof(udp));
	for (unsigned i = 0; i < 3; i++) {
		size_t len = tcp_frame(f, true, 9000 + i * 800, 0x10, i == 0 ? 0x02 : 0x03, 800, (uint8_t)(50 + i));

		m[k++] = mbuf_of(f, len);
	}
	took = tl_afp_tx(p, 0, m, (uint16_t)k, refused, &nf);
	CHECK(took == k && nf == 0, "all %u frames taken (%u, %u refused)", k, took, nf);

	n = far_recv(far, &vh, f, sizeof(f));
	CHECK(n == 14 + 20 + 20 + OPT + 9300 && vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV4 && vh.gso_size == 1000 &&
	      (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && vh.csum_start == 34 && vh.csum_offset == 16,
	      "flow A: one GSO packet of 9300 bytes in segments of 1000 (%zd bytes, type %u, size %u)", n,
	      vh.gso_type, vh.gso_size);
	if (n > 54) {
		struct rte_ipv4_hdr *ip = (void *)(f + 14);
		struct rte_tcp_hdr *th = (void *)(f + 34);
		uint16_t c = (uint16_t)~rte_raw_cksum(th, (size_t)n - 34);
		bool payload = true;

		for (unsigned i = 0; i < 10 && payload; i++)
			for (unsigned b = 0; b < (i == 9 ? 300u : 1000u); b++)
				payload &= f[54 + OPT + i * 1000 + b] == (uint8_t)(b * 7 + i);
		CHECK(ntohs(ip->total_length) == 20 + 20 + OPT + 9300 && rte_ipv4_cksum(ip) == 0 &&
		      ntohl(th->sent_seq) == 5000 && th->tcp_flags == 0x18,
		      "flow A: its IPv4 length, header checksum, first sequence number and PSH");
		th->cksum = c ? c : 0xffff;
		CHECK(l4_ok(f, false), "flow A: the partial checksum completes to a right one");
		CHECK(payload, "flow A: every payload byte in order");
	}
	n = far_recv(far, &vh, f, sizeof(f));
	CHECK(n == sizeof(udp) && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE && vh.flags == 0, "the UDP frame as it is (%zd)", n);
	n = far_recv(far, &vh, f, sizeof(f));
	CHECK(n == 14 + 40 + 20 + OPT + 800 && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE, "flow B: its first segment alone (%zd)", n);
	n = far_recv(far, &vh, f, sizeof(f));
	CHECK(n == 14 + 40 + 20 + OPT + 1600 && vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV6 && vh.gso_size == 800,
	      "flow B: its two CE segments as one GSO packet (%zd, type %u)", n, vh.gso_type);
	if (n > 74) {
		struct rte_ipv6_hdr *ip = (void *)(f + 14);
		struct rte_tcp_hdr *th = (void *)(f + 54);
		uint16_t c = (uint16_t)~rte_raw_cksum(th, (size_t)n - 54);

		CHECK(ntohs(ip->payload_len) == 20 + OPT + 1600 && (ntohl(ip->vtc_flow) >> 20 & 3) == 3 &&
		      ntohl(th->sent_seq) == 9800, "flow B: IPv6 length, CE, sequence number");
		th->cksum = c ? c : 0xffff;
		CHECK(l4_ok(f, true), "flow B: the partial checksum completes to a right one");
	}
	tl_afp_gso_counts(p, &split, &merged);
	CHECK(merged == 2, "two GSO packets sent (%lu)", (unsigned long)merged);
}

/* Two flows taking turns (as the AQM hands them out), a pure ACK of the first in between:
 * A1 B1 A2 B2 A3 ack(A) A4 B3 leave as A1-3, B1-3, the ACK, A4 (a flow never passes itself). */
static void test_tx_interleaved(struct tl_afp *p, int far)
{
	static uint8_t f[70000];
	static const struct { char flow; unsigned k, len; } seq[] = {
		{ 'A', 0, 1000 }, { 'B', 0, 1000 }, { 'A', 1, 1000 }, { 'B', 1, 1000 }, { 'A', 2, 1000 },
		{ 'a', 3, 0 }, { 'A', 3, 1000 }, { 'B', 2, 700 },
	};
	struct rte_mbuf *m[8], *refused[8];
	struct virtio_net_hdr vh;
	uint16_t nf = 0;
	unsigned want[][3] = { { 'A', 3000, VIRTIO_NET_HDR_GSO_TCPV4 }, { 'B', 2700, VIRTIO_NET_HDR_GSO_TCPV4 },
			       { 'a', 0, 0 }, { 'A', 1000, 0 } };

	for (unsigned i = 0; i < 8; i++) {
		size_t len = tcp_frame(f, false, (seq[i].flow == 'B' ? 90000 : 50000) + seq[i].k * 1000, 0x10, 0,
				       seq[i].len, (uint8_t)i);
		struct rte_tcp_hdr *th = (void *)(f + 34);

		if (seq[i].flow == 'B')
			th->src_port = htons(40001);
		th->cksum = rte_ipv4_udptcp_cksum((void *)(f + 14), th);
		m[i] = mbuf_of(f, len);
	}
	CHECK(tl_afp_tx(p, 0, m, 8, refused, &nf) == 8 && nf == 0, "all 8 frames taken");
	for (unsigned i = 0; i < 4; i++) {
		ssize_t n = far_recv(far, &vh, f, sizeof(f));
		struct rte_tcp_hdr *th = (void *)(f + 34);
		bool flow_ok = n > 54 && ntohs(th->src_port) == (want[i][0] == 'B' ? 40001 : 40000);

		CHECK(flow_ok && n == (ssize_t)(14 + 20 + 20 + OPT + want[i][1]) && vh.gso_type == want[i][2],
		      "message %u: flow %c, %u payload bytes, GSO type %u (got %zd bytes, type %u)", i, (char)want[i][0],
		      want[i][1], want[i][2], n, vh.gso_type);
	}
}

/* Eight flows taking turns, eight segments each (as the AQM's round robin hands them out):
 * one call takes all 64 frames and each flow leaves as one GSO packet of 8 segments. */
static void test_tx_many_flows(struct tl_afp *p, int far)
{
	static uint8_t f[70000];
	struct rte_mbuf *m[64], *refused[64];
	struct virtio_net_hdr vh;
	uint16_t nf = 0, took;
	unsigned whole = 0;

	for (unsigned i = 0; i < 64; i++) {
		unsigned flow = i % 8, k = i / 8;
		size_t len = tcp_frame(f, false, 70000 + k * 1000, 0x10, 0, 1000, (uint8_t)i);
		struct rte_tcp_hdr *th = (void *)(f + 34);

		th->src_port = htons((uint16_t)(41000 + flow));
		th->cksum = rte_ipv4_udptcp_cksum((void *)(f + 14), th);
		m[i] = mbuf_of(f, len);
	}
	took = tl_afp_tx(p, 0, m, 64, refused, &nf);
	CHECK(took == 64 && nf == 0, "many flows: all 64 frames taken in one call (%u)", took);
	for (unsigned i = 0; i < 8; i++) {
		ssize_t n = far_recv(far, &vh, f, sizeof(f));
		struct rte_tcp_hdr *th = (void *)(f + 34);

		whole += n == (ssize_t)(14 + 20 + 20 + OPT + 8000) && vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV4 &&
			 ntohs(th->src_port) == 41000 + i && ntohl(th->sent_seq) == 70000;
	}
	CHECK(whole == 8, "many flows: each of the 8 flows left as one GSO packet of 8 segments (%u did)", whole);
}

/* Twenty flows taking turns, two segments each: a flow's second segment is 20 messages
 * after its first, beyond the 16 a frame's flow is looked for among. However the port groups
 * them (merged or not), all 40 segments arrive and every flow's bytes in their order. */
static void test_tx_far_flows(struct tl_afp *p, int far)
{
	static uint8_t f[70000];
	struct rte_mbuf *m[40], *refused[40];
	struct virtio_net_hdr vh;
	uint32_t next[20];
	uint16_t nf = 0, took;
	unsigned ordered = 0, whole = 0;

	for (unsigned i = 0; i < 40; i++) {
		size_t len = tcp_frame(f, false, 90000 + (i / 20) * 1000, 0x10, 0, 1000, (uint8_t)i);
		struct rte_tcp_hdr *th = (void *)(f + 34);

		th->src_port = htons((uint16_t)(42000 + i % 20));
		th->cksum = rte_ipv4_udptcp_cksum((void *)(f + 14), th);
		m[i] = mbuf_of(f, len);
	}
	for (unsigned k = 0; k < 20; k++)
		next[k] = 90000;
	took = tl_afp_tx(p, 0, m, 40, refused, &nf);
	CHECK(took == 40 && nf == 0, "far flows: all 40 frames taken (%u)", took);
	for (ssize_t n; (n = far_recv(far, &vh, f, sizeof(f))) > 54 + OPT;) {
		struct rte_tcp_hdr *th = (void *)(f + 34);
		unsigned k = ntohs(th->src_port) - 42000u, payload = (unsigned)(n - 54 - OPT);

		if (k < 20 && ntohl(th->sent_seq) == next[k] && payload % 1000 == 0) {
			next[k] += payload;
			ordered += payload / 1000;
		}
	}
	for (unsigned k = 0; k < 20; k++)
		whole += next[k] == 92000;
	CHECK(ordered == 40 && whole == 20, "far flows: all 40 segments arrive, every flow's in order (%u, %u flows whole)",
	      ordered, whole);
}

/* Four segments of one flow from sequence number seq, as the AQM hands them out. */
static void flow_frames(struct rte_mbuf **m, uint32_t seq)
{
	static uint8_t f[2048];

	for (unsigned i = 0; i < 4; i++) {
		size_t len = tcp_frame(f, false, seq + i * 1000, 0x10, 0, 1000, (uint8_t)i);
		struct rte_tcp_hdr *th = (void *)(f + 34);

		th->src_port = htons(43000);
		th->cksum = rte_ipv4_udptcp_cksum((void *)(f + 14), th);
		m[i] = mbuf_of(f, len);
	}
}

/* A merged send refused (the veth down) turns merging off for a while, not for good: the
 * frames are refused one by one; with the veth up again the next ones leave frame by frame,
 * and after a second they are merged again. */
static void test_tx_merge_recovers(struct tl_afp *p, int far)
{
	static uint8_t f[70000];
	struct rte_mbuf *m[4], *refused[4];
	struct virtio_net_hdr vh;
	uint16_t nf = 0, took;
	uint64_t split, merged0, merged;
	unsigned singles = 0;
	ssize_t n;

	tl_afp_gso_counts(p, &split, &merged0);
	CHECK(system("ip link set vb down") == 0, "merge recovers: vb down");
	flow_frames(m, 200000);
	took = tl_afp_tx(p, 0, m, 4, refused, &nf);
	CHECK(took == 4 && nf == 4 && tl_afp_merge_fallbacks(p) == 1,
	      "merge recovers: the merged send and then each frame refused (%u, %u refused, %lu fallbacks)", took, nf,
	      (unsigned long)tl_afp_merge_fallbacks(p));
	rte_pktmbuf_free_bulk(refused, nf);
	CHECK(system("ip link set vb up && for i in $(seq 200); do [ $(ip -o link show up | grep -c 'v[ab]@.*state UP') = 2 ] && exit 0; "
		     "sleep 0.01; done; exit 1") == 0, "merge recovers: vb up (operstate up: its qdisc active)");
	for (int i = 0; i < 100; i++) {     /* until a frame crosses (the first after up may not) */
		uint8_t udp[64] = { 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, [12] = 0x08, [14] = 0x45 };

		m[0] = mbuf_of(udp, sizeof(udp));
		if (tl_afp_tx(p, 0, m, 1, refused, &nf) != 1 || nf)
			rte_pktmbuf_free(m[0]);
		if (far_recv(far, &vh, f, sizeof(f)) == sizeof(udp))
			break;
	}
	flow_frames(m, 300000);
	took = tl_afp_tx(p, 0, m, 4, refused, &nf);
	for (unsigned i = 0; i < 4 && (n = far_recv(far, &vh, f, sizeof(f))) > 0; i++)
		singles += n == 14 + 20 + 20 + OPT + 1000 && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE;
	CHECK(took == 4 && nf == 0 && singles == 4, "merge recovers: at once, the frames leave one by one (%u, %u)", took,
	      singles);
	usleep(1100 * 1000);    /* past the second merging is off for */
	flow_frames(m, 400000);
	took = tl_afp_tx(p, 0, m, 4, refused, &nf);
	n = far_recv(far, &vh, f, sizeof(f));
	tl_afp_gso_counts(p, &split, &merged);
	CHECK(took == 4 && nf == 0 && n == 14 + 20 + 20 + OPT + 4000 && vh.gso_type == VIRTIO_NET_HDR_GSO_TCPV4 &&
	      merged == merged0 + 1, "merge recovers: a second later merged again (%zd bytes, merged %lu)", n,
	      (unsigned long)(merged - merged0));
}

/* Two IPv4 fragments (MF set, offset 0) of one flow whose payloads look like consecutive
 * TCP segments: fragments are not TCP segments, so they leave as two frames as they are,
 * nothing merged (GRO never merges fragments). */
static void test_tx_fragments(struct tl_afp *p, int far)
{
	static uint8_t f[70000];
	struct rte_mbuf *m[2], *refused[2];
	struct virtio_net_hdr vh;
	uint16_t nf = 0;
	uint64_t split, merged, merged_before;
	unsigned plain = 0;

	tl_afp_gso_counts(p, &split, &merged_before);
	for (unsigned i = 0; i < 2; i++) {
		size_t len = tcp_frame(f, false, 60000 + i * 1000, 0x10, 0, 1000, (uint8_t)i);
		struct rte_ipv4_hdr *ip = (void *)(f + 14);

		ip->packet_id = htons((uint16_t)(300 + i));
		ip->fragment_offset = htons(RTE_IPV4_HDR_MF_FLAG);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		m[i] = mbuf_of(f, len);
	}
	CHECK(tl_afp_tx(p, 0, m, 2, refused, &nf) == 2 && nf == 0, "fragments: both taken");
	for (unsigned i = 0; i < 2; i++) {
		ssize_t n = far_recv(far, &vh, f, sizeof(f));

		plain += n == 14 + 20 + 20 + OPT + 1000 && vh.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
			 ntohs(((struct rte_ipv4_hdr *)(f + 14))->packet_id) == 300 + i;
	}
	tl_afp_gso_counts(p, &split, &merged);
	CHECK(plain == 2 && merged == merged_before, "fragments: two frames as they are (%u), merged %lu",
	      plain, (unsigned long)(merged - merged_before));
}

/* A small receive buffer, more frames than it holds: read + imissed == sent. */
static void test_overflow_counted(int far)
{
	struct tl_afp_cfg c = { .iface = "vb", .queues = 1, .pools = &pool, .rcvbuf = 4096 };
	char err[256] = "";
	struct tl_afp *p = tl_afp_open(&c, err, sizeof(err));
	struct virtio_net_hdr vh = { 0 };
	struct rte_eth_stats st;
	struct rte_mbuf *m[32];
	uint8_t f[1000] = { 0 };
	unsigned sent = 300, got = 0, k;

	CHECK(p != NULL, "a second packet port opens (%s)", err);
	if (!p)
		return;
	memset(f, 0x02, 12);
	f[12] = 0x08;
	for (unsigned i = 0; i < sent; i++)
		CHECK(far_send(far, &vh, f, sizeof(f)) == (ssize_t)(VH + sizeof(f)), "frame %u sent", i);
	do {
		k = tl_afp_rx(p, 0, m, 32);
		rte_pktmbuf_free_bulk(m, k);
		got += k;
	} while (k);
	tl_afp_stats(p, &st);
	CHECK(st.imissed > 0, "the kernel dropped some (imissed %lu)", (unsigned long)st.imissed);
	CHECK(got + st.imissed == sent, "read %u + imissed %lu == sent %u", got, (unsigned long)st.imissed, sent);
	tl_afp_close(p);
}

int main(int argc, char **argv)
{
	static struct tl_counters cnt;
	struct tl_counters *const cnts[1] = { &cnt };
	struct tl_afp_cfg c = { .iface = "vb", .queues = 1, .pools = &pool, .counters = cnts };
	char err[256] = "";
	struct tl_afp *p;
	int far;

	(void)argc;
	if (unshare(CLONE_NEWNET) != 0) {
		printf("FAIL: unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
		return 1;
	}
	/* No IPv6 of the namespace's own: its router solicitations and MLD reports would cross
	 * the veth between the frames the cases send and read. */
	if (system("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && "
		   "ip link add va mtu 9000 type veth peer name vb mtu 9000 && ip link set va up && ip link set vb up") != 0) {
		printf("FAIL: cannot make the veth pair\n");
		return 1;
	}
	if (tl_test_eal_init(argv[0], "afpacket") != 0)
		return 1;
	pool = rte_pktmbuf_pool_create("afp", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	CHECK(pool != NULL, "pool");
	p = pool ? tl_afp_open(&c, err, sizeof(err)) : NULL;
	CHECK(p != NULL, "packet port on vb opens (%s)", err);
	far = far_socket("va");
	if (p && far >= 0) {
		test_rx_split(p, far);
		test_rx_csum(p, far);
		test_rx_single_frames(p, far);
		test_rx_dropped(p, far, &cnt);
		test_rx_pool_empty(far);
		test_tx_merge(p, far);
		test_tx_interleaved(p, far);
		test_tx_many_flows(p, far);
		test_tx_far_flows(p, far);
		test_tx_fragments(p, far);
		test_tx_merge_recovers(p, far);
		test_overflow_counted(far);
	}
	if (far >= 0)
		close(far);
	tl_afp_close(p);
	rte_mempool_free(pool);
	tl_test_eal_fini();
	return check_report();
}
