/* The udp WAN port kind (src/dataplane/udpport.c) over the loopback: datagrams a plain
 * socket sends arrive as the frames they were on the wire (addresses, ports, the ECN field,
 * checksums marked verified), frames sent leave as datagrams to the address, port and ECN
 * field their headers name, several queues share the port (SO_REUSEPORT), a frame the kernel
 * refuses is handed back and counted, and datagrams the kernel dropped for a full receive
 * buffer are counted as imissed: read + imissed == sent; a socket that takes no more is named
 * for the worker to wait for POLLOUT on. Every address of the interface is the port's: a
 * datagram to a second one (127.0.0.2 on lo) parses as ours, and a frame whose source is that
 * address leaves from it (IP_PKTINFO), as a reply to a peer that wrote there must. What must
 * not arrive is checked after a marker sent behind it did. Runs in a network namespace of its
 * own. Needs root (SO_BINDTODEVICE, namespaces, tc). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "check.h"
#include "dataplane/dp.h"
#include "dataplane/packet.h"
#include "dataplane/udpport.h"
#include "test_eal.h"

#define PORT 47811
#define PEER_PORT 47812
#define QUEUES 2

static const uint8_t MAC[6] = { 0x02, 0, 0, 0, 0, 0x0a }, GW[6] = { 0x02, 0x74, 0x6c, 0, 0, 1 };
static const uint8_t LO4[4] = { 127, 0, 0, 1 }, LO4B[4] = { 127, 0, 0, 2 };
#define WAIT_MS 5000      /* a bound for what must come, never a measure */

static struct rte_mempool *pools[QUEUES];

static struct tl_udpport *port_open(int rcvbuf)
{
	struct tl_udpport_cfg c = { .iface = "lo", .port = PORT, .queues = QUEUES, .v4 = true, .v6 = false,
				    .mac = MAC, .gw_mac = GW, .ip4 = LO4, .pools = pools, .rcvbuf = rcvbuf };
	char err[256] = "";
	struct tl_udpport *u = tl_udpport_open(&c, err, sizeof(err));

	CHECK(u != NULL, "udp port on lo:%u opens (%s)", PORT, err);
	return u;
}

static int peer_socket(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PEER_PORT) };
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "peer socket on lo:%u", PEER_PORT);
	return fd;
}

static void send_to_port(int fd, const void *p, size_t len, int tos)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	CHECK(sendto(fd, p, len, 0, (struct sockaddr *)&a, sizeof(a)) == (ssize_t)len, "datagram sent");
}

/* Reads every queue until n frames came or nothing more does. */
static unsigned rx_all(struct tl_udpport *u, struct rte_mbuf **m, unsigned n)
{
	unsigned got = 0;

	for (int round = 0; round < WAIT_MS && got < n; round++) {
		for (uint16_t q = 0; q < QUEUES && got < n; q++)
			got += tl_udpport_rx(u, q, m + got, (uint16_t)RTE_MIN(n - got, 32u));
		if (got < n)
			usleep(1000);
	}
	return got;
}

static void test_rx_frames(void)
{
	struct tl_udpport *u = port_open(0);
	struct tl_port_info wan = { .has_ip4 = true };
	struct rte_mbuf *m[4];
	struct rte_eth_stats st;
	struct tl_outer o;
	int fd = peer_socket();
	char msg[100];

	if (!u)
		return;
	memcpy(wan.mac, MAC, 6);
	memcpy(wan.ip4, LO4, 4);
	memset(msg, 0x42, sizeof(msg));
	msg[0] = 4;       /* a WireGuard data message type, for the parser */
	send_to_port(fd, msg, sizeof(msg), 0x03);        /* ECN CE */
	CHECK(rx_all(u, m, 1) == 1, "one frame read");
	CHECK((rte_pktmbuf_mtod_offset(m[0], struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN)->type_of_service & 3) == 3,
	      "the ECN field arrives (CE)");
	CHECK(m[0]->pkt_len == RTE_ETHER_HDR_LEN + 20 + 8 + sizeof(msg), "frame length %u", m[0]->pkt_len);
	CHECK(!memcmp(rte_pktmbuf_mtod_offset(m[0], void *, RTE_ETHER_HDR_LEN + 28), msg, sizeof(msg)), "payload intact");
	CHECK(tl_pkt_parse_outer(m[0], &wan, PORT, &o) == TL_DROP_MAX, "the frame parses as a WAN frame to us");
	CHECK(o.family == AF_INET && o.src_port == PEER_PORT && !memcmp(o.src_ip, LO4, 4), "source 127.0.0.1:%u",
	      PEER_PORT);
	CHECK(!memcmp(o.src_mac, GW, 6), "source MAC: the fixed next hop");
	CHECK(tl_pkt_outer_udp_check(m[0], &o) == TL_DROP_MAX, "checksums pass (marked verified)");
	rte_pktmbuf_free(m[0]);
	tl_udpport_stats(u, &st);
	CHECK(st.ipackets == 1 && st.ibytes == RTE_ETHER_HDR_LEN + 28 + sizeof(msg) && st.imissed == 0,
	      "counted: ipackets %lu", (unsigned long)st.ipackets);
	close(fd);
	tl_udpport_close(u);
}

/* A frame as the dataplane builds it: from src to dst:port, with the ECN field. */
static struct rte_mbuf *frame_from(const uint8_t src[4], const uint8_t dst[4], uint16_t port, uint8_t ecn, unsigned len)
{
	struct tl_port_info wan = { .has_ip4 = true };
	struct tl_endpoint ep = { .family = AF_INET, .port = port, .mac_valid = true };
	struct rte_mbuf *m = rte_pktmbuf_alloc(pools[0]);

	memcpy(wan.mac, MAC, 6);
	memcpy(wan.ip4, src, 4);
	memcpy(ep.ip, dst, 4);
	memcpy(ep.mac, GW, 6);
	if (!m)
		return NULL;
	memset(rte_pktmbuf_append(m, (uint16_t)len), 0x17, len);
	if (tl_pkt_push_outer(m, &wan, &ep, PORT, ecn) != 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

static struct rte_mbuf *frame_to(const uint8_t dst[4], uint16_t port, uint8_t ecn, unsigned len)
{
	return frame_from(LO4, dst, port, ecn, len);
}

/* Waits until fd has a datagram, at most WAIT_MS: true if one is there. */
static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, WAIT_MS) == 1;
}

/* One datagram from fd into buf, with the TOS byte it carried (-1 if none came). */
static ssize_t recv_tos(int fd, uint8_t *buf, size_t len, int *tos)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} ctl;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	ssize_t n = readable(fd) ? recvmsg(fd, &mh, MSG_DONTWAIT) : -1;

	*tos = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			*tos = *(uint8_t *)CMSG_DATA(c);
	return n;
}

static void test_tx_datagrams(void)
{
	struct tl_udpport *u = port_open(0);
	struct rte_mbuf *m[4], *refused[4];
	struct rte_eth_stats st;
	uint16_t nf = 0, took;
	int fd = peer_socket();
	uint8_t buf[2048];
	ssize_t n;
	int tos;

	if (!u)
		return;
	m[0] = frame_to(LO4, PEER_PORT, 0x02, 300);        /* ECT(0) */
	m[1] = rte_pktmbuf_alloc(pools[0]);                 /* not an IP frame */
	if (m[1])
		memset(rte_pktmbuf_append(m[1], 60), 0, 60);
	m[2] = frame_to(LO4, 0, 0, 100);                   /* to port 0: the kernel refuses (EINVAL) */
	m[3] = frame_to(LO4, PEER_PORT, 0x03, 200);        /* CE */
	took = tl_udpport_tx(u, 1, m, 4, refused, &nf);
	CHECK(took == 4, "all four frames taken (%u)", took);
	CHECK(nf == 2 && refused[0] == m[1] && refused[1] == m[2], "the non-IP frame and the one the kernel refused handed back (%u)", nf);
	for (unsigned i = 0; i < nf; i++)
		rte_pktmbuf_free(refused[i]);
	/* a marker behind them: once it is read, whatever the port sent before it came */
	m[0] = frame_to(LO4, PEER_PORT, 0, 77);
	CHECK(m[0] && tl_udpport_tx(u, 1, m, 1, refused, &nf) == 1 && nf == 0, "a marker sent after them");
	n = recv_tos(fd, buf, sizeof(buf), &tos);
	CHECK(n == 300 && buf[0] == 0x17, "first datagram: the payload (%zd bytes)", n);
	CHECK(tos >= 0 && (tos & 3) == 2, "first datagram: ECT(0) on the wire (tos %d)", tos);
	n = recv_tos(fd, buf, sizeof(buf), &tos);
	CHECK(n == 200 && (tos & 3) == 3, "second datagram: 200 bytes, CE (%zd, tos %d)", n, tos);
	n = recv_tos(fd, buf, sizeof(buf), &tos);
	CHECK(n == 77, "then the marker: nothing else arrived in between (%zd bytes)", n);
	tl_udpport_stats(u, &st);
	CHECK(st.opackets == 3 && st.oerrors == 2, "counted: opackets %lu, oerrors %lu", (unsigned long)st.opackets,
	      (unsigned long)st.oerrors);
	close(fd);
	tl_udpport_close(u);
}

/* A run of n equal frames of size bytes to one place (the last one last bytes) is taken in
 * one call and leaves as one GSO send: every datagram arrives, in order, with its size. */
static void tx_run(unsigned n, uint16_t size, uint16_t last)
{
	struct tl_udpport *u = port_open(0);
	struct rte_mbuf *m[TL_JOB_MAX], *refused[TL_JOB_MAX];
	struct rte_eth_stats st;
	uint16_t nf = 0, took;
	int fd = peer_socket();
	uint8_t buf[2048];
	unsigned ok = 0, k = 0;
	ssize_t got;

	if (!u)
		return;
	for (unsigned i = 0; i < n; i++) {
		m[i] = frame_to(LO4, PEER_PORT, 0x02, i + 1 == n ? last : size);
		if (m[i])
			rte_pktmbuf_mtod_offset(m[i], uint8_t *, RTE_ETHER_HDR_LEN + 28)[0] = (uint8_t)i;
	}
	took = tl_udpport_tx(u, 0, m, (uint16_t)n, refused, &nf);
	CHECK(took == n && nf == 0, "%u frames taken in one call (%u, %u refused)", n, took, nf);
	while (k < took && readable(fd) && (got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		ok += buf[0] == (uint8_t)k && got == (k + 1 == n ? last : size);
		k++;
	}
	CHECK(k == n && ok == n, "%u datagrams in order with their sizes (%u, %u right)", n, k, ok);
	tl_udpport_stats(u, &st);
	CHECK(st.opackets == took && st.oerrors == 0, "counted: opackets %lu", (unsigned long)st.opackets);
	CHECK(tl_udpport_gso_sends(u) == 1, "as one GSO send (%lu)", (unsigned long)tl_udpport_gso_sends(u));
	rte_pktmbuf_free_bulk(m + took, n - took);
	close(fd);
	tl_udpport_close(u);
}

/* Twelve frames, the last one shorter. */
static void test_tx_run(void)
{
	tx_run(12, 1000, 500);
}

/* A whole crypto job (TL_JOB_MAX frames of 900 bytes, under the 64 KiB of one GSO send). */
static void test_tx_job(void)
{
	tx_run(TL_JOB_MAX, 900, 900);
}

/* A peer's GSO send (12 datagrams, the last shorter) arrives as one UDP_GRO message and
 * leaves the port as 12 frames in order, even when a burst has room for only some of them
 * (the rest waits in the queue, which says so). */
static void test_rx_gro(void)
{
	struct tl_udpport *u = port_open(0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct rte_mbuf *m[16];
	struct rte_eth_stats st;
	int fd = peer_socket(), seg = 1000;
	uint8_t msg[11 * 1000 + 500];
	unsigned got = 0, ok = 0, pending = 0;

	if (!u)
		return;
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i / 1000 * 16 + i % 7);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0, "the peer sends with UDP_SEGMENT");
	CHECK(sendto(fd, msg, sizeof(msg), 0, (struct sockaddr *)&a, sizeof(a)) == (ssize_t)sizeof(msg), "sent");
	for (int round = 0; round < 100 && got < 12; round++) {
		for (uint16_t q = 0; q < QUEUES && got < 12; q++) {
			unsigned n = tl_udpport_rx(u, q, m + got, 5);

			got += n;
			pending += n == 5 && tl_udpport_rx_pending(u, q);
		}
		if (got < 12)
			usleep(1000);
	}
	CHECK(got == 12, "twelve frames (%u)", got);
	CHECK(pending >= 1, "a burst of 5 left the rest waiting in the queue");
	for (unsigned i = 0; i < got; i++) {
		unsigned len = i == 11 ? 500 : 1000;

		ok += m[i]->pkt_len == RTE_ETHER_HDR_LEN + 28 + len &&
		      !memcmp(rte_pktmbuf_mtod_offset(m[i], void *, RTE_ETHER_HDR_LEN + 28), msg + i * 1000, len);
	}
	CHECK(ok == 12, "each datagram whole, in order (%u right)", ok);
	rte_pktmbuf_free_bulk(m, got);
	CHECK(tl_udpport_gro_msgs(u) == 1, "they came as one message (%lu)", (unsigned long)tl_udpport_gro_msgs(u));
	tl_udpport_stats(u, &st);
	CHECK(st.ipackets == 12 && st.ierrors == 0, "counted as 12 datagrams (%lu)", (unsigned long)st.ipackets);
	for (uint16_t q = 0; q < QUEUES; q++)
		CHECK(!tl_udpport_rx_pending(u, q), "queue %u has nothing left", q);
	close(fd);
	tl_udpport_close(u);
}

/* The source a peer sees on what the port sends it for ep (built as the dataplane does). */
static bool reply_source(struct tl_udpport *u, const struct tl_port_info *wan, const struct tl_endpoint *ep, int fd,
			 struct sockaddr_in *from)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pools[0]), *refused[1];
	socklen_t flen = sizeof(*from);
	uint8_t buf[128];
	uint16_t nf = 0;

	if (!m)
		return false;
	memset(rte_pktmbuf_append(m, 64), 0x5a, 64);
	if (tl_pkt_push_outer(m, wan, ep, PORT, 0) != 0 || tl_udpport_tx(u, 0, &m, 1, refused, &nf) != 1 || nf) {
		rte_pktmbuf_free(nf ? refused[0] : m);
		return false;
	}
	return readable(fd) && recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)from, &flen) == 64;
}

/* Every address of the interface is the port's: with lo's addresses 127.0.0.1 and 127.0.0.2
 * published, a datagram to the second parses as ours and names it; the reply to the peer
 * leaves from it. Once it is no longer the port's, datagrams to it are not_for_us and the
 * reply leaves from the address the kernel picks; without any address nothing is ours. */
static void test_second_address(void)
{
	struct tl_udpport *u = port_open(0);
	uint8_t two[2][4], one[1][4];
	struct tl_addrset both = { .n4 = 2, .a4 = two }, first = { .n4 = 1, .a4 = one }, none = { .n4 = 0 };
	struct tl_port_info wan = { .ops = &tl_udpport_ops, .priv = u, .has_ip4 = true, .src_by_kernel = true };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(PORT) }, from;
	struct tl_endpoint ep = { .family = AF_INET, .mac_valid = true, .has_local = true };
	struct rte_mbuf *m[1];
	struct tl_outer o;
	int fd = peer_socket();
	uint8_t msg[64] = { 4 };

	if (!u)
		return;
	memcpy(two[0], LO4, 4);
	memcpy(two[1], LO4B, 4);
	memcpy(one[0], LO4, 4);
	memcpy(both.first4, LO4, 4);
	memcpy(first.first4, LO4, 4);
	memcpy(wan.mac, MAC, 6);
	memcpy(wan.ip4, LO4, 4);                 /* the address picked at start */
	atomic_store(&wan.addrs, &both);
	memcpy(&to.sin_addr, LO4B, 4);
	CHECK(sendto(fd, msg, sizeof(msg), 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)sizeof(msg),
	      "a datagram to 127.0.0.2");
	CHECK(rx_all(u, m, 1) == 1, "read");
	CHECK(tl_pkt_parse_outer(m[0], &wan, PORT, &o) == TL_DROP_MAX, "it parses as ours (a second address)");
	CHECK(!memcmp(o.dst_ip, LO4B, 4) && o.src_port == PEER_PORT, "and names 127.0.0.2 as where it went");
	rte_pktmbuf_free(m[0]);
	memcpy(ep.ip, LO4, 4);
	ep.port = PEER_PORT;
	memcpy(ep.mac, GW, 6);
	memcpy(ep.local, LO4B, 4);               /* learnt from it */
	CHECK(reply_source(u, &wan, &ep, fd, &from) && !memcmp(&from.sin_addr, LO4B, 4) && ntohs(from.sin_port) == PORT,
	      "the reply leaves from 127.0.0.2:%u (from %s)", PORT, inet_ntoa(from.sin_addr));
	atomic_store(&wan.addrs, &first);        /* 127.0.0.2 is gone */
	CHECK(reply_source(u, &wan, &ep, fd, &from) && !memcmp(&from.sin_addr, LO4, 4),
	      "gone: the reply leaves from the kernel's pick, 127.0.0.1 (from %s)", inet_ntoa(from.sin_addr));
	CHECK(sendto(fd, msg, sizeof(msg), 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)sizeof(msg), "sent again");
	CHECK(rx_all(u, m, 1) == 1 && tl_pkt_parse_outer(m[0], &wan, PORT, &o) == TL_DROP_not_for_us,
	      "and a datagram to it is not_for_us");
	rte_pktmbuf_free(m[0]);
	atomic_store(&wan.addrs, &none);
	CHECK(!tl_pkt_wan_has_family(&wan, AF_INET) && !tl_pkt_wan_local(&wan, AF_INET, LO4),
	      "no address: nothing is ours, nothing to send from");
	close(fd);
	tl_udpport_close(u);
}

/* A small receive buffer, more datagrams than it holds: read + imissed == sent. */
static void test_overflow_counted(void)
{
	struct tl_udpport *u = port_open(4096);
	struct rte_mbuf *m[32];
	struct rte_eth_stats st;
	int fd = peer_socket();
	unsigned sent = 200, got = 0, k;
	char msg[1000];

	if (!u)
		return;
	memset(msg, 1, sizeof(msg));
	for (unsigned i = 0; i < sent; i++)
		send_to_port(fd, msg, sizeof(msg), 0);
	do {
		k = 0;
		for (uint16_t q = 0; q < QUEUES; q++) {
			uint16_t n = tl_udpport_rx(u, q, m, 32);

			rte_pktmbuf_free_bulk(m, n);
			k += n;
		}
		got += k;
	} while (k);
	/* the last drop count arrives with the next datagram read */
	send_to_port(fd, msg, sizeof(msg), 0);
	usleep(10000);
	got += rx_all(u, m, 1);
	rte_pktmbuf_free_bulk(m, 1);
	sent++;
	tl_udpport_stats(u, &st);
	CHECK(st.imissed > 0, "the kernel dropped some (imissed %lu)", (unsigned long)st.imissed);
	CHECK(got + st.imissed == sent, "read %u + imissed %lu == sent %u", got, (unsigned long)st.imissed, sent);
	close(fd);
	tl_udpport_close(u);
}

static void send_to(int fd, uint16_t port, uint8_t tag)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint8_t msg[64];

	memset(msg, tag, sizeof(msg));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(sendto(fd, msg, sizeof(msg), 0, (struct sockaddr *)&a, sizeof(a)) == (ssize_t)sizeof(msg),
	      "datagram %u sent to :%u", tag, port);
}

/* The listen port moves (wg set listen-port): a port in use is refused and nothing changes;
 * otherwise what waited in the old sockets still arrives, then what comes to the new port,
 * frames leave from the new port, and the old one is closed. */
static void test_move(void)
{
	struct tl_udpport *u = port_open(0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT + 10) };
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct rte_mbuf *m[4], *refused[1];
	uint16_t nf = 0;
	int fd = peer_socket(), busy = socket(AF_INET, SOCK_DGRAM, 0), old_fd;
	char err[256] = "";
	uint8_t buf[128];
	unsigned got;

	if (!u)
		return;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(busy >= 0 && bind(busy, (struct sockaddr *)&a, sizeof(a)) == 0, "another socket holds :%u", PORT + 10);
	old_fd = tl_udpport_fd(u, 0, 0);
	CHECK(tl_udpport_move(u, PORT + 10, err, sizeof(err)) < 0 && strstr(err, "cannot bind UDP"),
	      "a move to a port in use is refused: %s", err);
	CHECK(tl_udpport_moved(u) && tl_udpport_fd(u, 0, 0) == old_fd, "and nothing changed");
	close(busy);
	send_to(fd, PORT, 1);                        /* waits in an old socket */
	CHECK(tl_udpport_move(u, PORT + 10, err, sizeof(err)) == 0, "moved to :%u (%s)", PORT + 10, err);
	CHECK(!tl_udpport_moved(u), "the workers have not taken it yet");
	CHECK(tl_udpport_move(u, PORT + 11, err, sizeof(err)) == -EBUSY, "a second move waits for the first");
	send_to(fd, PORT + 10, 2);
	got = rx_all(u, m, 2);
	CHECK(got == 2, "both datagrams arrive (%u)", got);
	for (unsigned i = 0; i < got; i++) {
		struct rte_udp_hdr *uh = rte_pktmbuf_mtod_offset(m[i], struct rte_udp_hdr *, RTE_ETHER_HDR_LEN + 20);

		CHECK(ntohs(uh->dst_port) == PORT + 10, "frame %u names the new port", i);
	}
	rte_pktmbuf_free_bulk(m, got);
	for (uint16_t q = 0; q < QUEUES; q++)
		tl_udpport_rx(u, q, m, 4);                 /* each queue's next round; drained old sockets close */
	CHECK(tl_udpport_moved(u), "every queue took the move");
	for (uint16_t q = 0; q < QUEUES; q++)
		CHECK(!tl_udpport_rx_pending(u, q), "queue %u: old sockets closed", q);
	m[0] = frame_to(LO4, PEER_PORT, 0, 100);
	CHECK(m[0] && tl_udpport_tx(u, 0, m, 1, refused, &nf) == 1 && nf == 0, "a frame sent after the move");
	CHECK(readable(fd) && recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen) == 100 &&
	      ntohs(from.sin_port) == PORT + 10, "it leaves from :%u", PORT + 10);
	send_to(fd, PORT, 3);
	send_to(fd, PORT + 10, 4);                   /* a marker behind it, to the new port */
	got = rx_all(u, m, 1);
	CHECK(got == 1 && rte_pktmbuf_mtod_offset(m[0], uint8_t *, RTE_ETHER_HDR_LEN + 28)[0] == 4,
	      "the marker is read (%u), and nothing sent to the old port came before it", got);
	rte_pktmbuf_free_bulk(m, got);
	close(fd);
	tl_udpport_close(u);
}

/* A socket that takes no more (its send buffer held by a slow qdisc on the way out): the
 * send stops, the port names the socket to wait on for POLLOUT, which is not ready yet;
 * once the queue drains the rest goes and the port names none. Runs last: it moves this
 * process into another network namespace of its own (a veth with a tbf qdisc of 8 kbit/s). */
static void test_tx_full(void)
{
	static const uint8_t far[4] = { 10, 9, 0, 2 }, near[4] = { 10, 9, 0, 1 };
	struct tl_udpport_cfg c = { .iface = "va", .port = PORT, .queues = 1, .v4 = true, .mac = MAC, .gw_mac = GW,
				    .ip4 = near, .pools = pools, .sndbuf = 4096 };
	struct rte_mbuf *m[32], *refused[32];
	char err[256] = "";
	struct tl_udpport *u;
	uint16_t nf = 0, took = 0;
	struct pollfd pfd;

	if (unshare(CLONE_NEWNET) != 0 ||
	    system("ip link add va type veth peer name vb && ip addr add 10.9.0.1/24 dev va && "
		   "ip link set va up && ip link set vb up && "
		   "ip neigh add 10.9.0.2 lladdr 02:00:00:00:09:02 dev va nud permanent && "
		   "tc qdisc add dev va root tbf rate 8kbit burst 1600 limit 100000") != 0) {
		CHECK(0, "a veth with a slow tbf in a namespace of our own");
		return;
	}
	u = tl_udpport_open(&c, err, sizeof(err));
	CHECK(u != NULL, "udp port on va (%s)", err);
	if (!u)
		return;
	CHECK(tl_udpport_tx_full(u, 0) < 0, "nothing full before the first send");
	for (int round = 0; round < 20 && tl_udpport_tx_full(u, 0) < 0; round++) {
		unsigned k = 0;

		while (k < 32 && (m[k] = frame_from(near, far, PEER_PORT, 0, 1000)))
			k++;
		took = tl_udpport_tx(u, 0, m, (uint16_t)k, refused, &nf);
		rte_pktmbuf_free_bulk(m + took, k - took);
	}
	CHECK(tl_udpport_tx_full(u, 0) == tl_udpport_fd(u, 0, 0) && nf == 0,
	      "the socket took no more (%u of 32 taken): the port names it", took);
	pfd = (struct pollfd){ .fd = tl_udpport_fd(u, 0, 0), .events = POLLOUT };
	CHECK(poll(&pfd, 1, 0) == 0, "and it is not writable yet: a wait for POLLOUT makes sense");
	CHECK(system("tc qdisc del dev va root") == 0, "the qdisc goes (with what it held)");
	CHECK(poll(&pfd, 1, 2000) == 1 && (pfd.revents & POLLOUT), "POLLOUT comes");
	m[0] = frame_from(near, far, PEER_PORT, 0, 1000);
	CHECK(m[0] && tl_udpport_tx(u, 0, m, 1, refused, &nf) == 1 && tl_udpport_tx_full(u, 0) < 0,
	      "the next send goes and nothing is full");
	tl_udpport_close(u);
}

static void test_port_in_use(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct tl_udpport_cfg c = { .iface = "lo", .port = PORT, .queues = 1, .v4 = true, .mac = MAC, .gw_mac = GW,
				    .ip4 = LO4, .pools = pools };
	char err[256] = "";

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "another socket holds the port");
	CHECK(tl_udpport_open(&c, err, sizeof(err)) == NULL && strstr(err, "cannot bind UDP"),
	      "refused with a clear error: %s", err);
	close(fd);
}

/* After test_tx_full (its namespace): a datagram larger than a buffer (3000 bytes, a peer
 * whose MTU is above ours) is read and let go of: dropped as oversized, received and dropped on the WAN port in the reading
 * worker's counters, and in ierrors; the datagram after it arrives. */
static void test_rx_oversized(void)
{
	static struct tl_counters cnt[QUEUES];
	struct tl_counters *const cnts[QUEUES] = { &cnt[0], &cnt[1] };
	struct tl_udpport_cfg c = { .iface = "lo", .port = PORT, .queues = QUEUES, .v4 = true, .mac = MAC,
				    .gw_mac = GW, .ip4 = LO4, .pools = pools, .counters = cnts };
	char err[256] = "", big[3000], small[100];
	struct tl_udpport *u = tl_udpport_open(&c, err, sizeof(err));
	struct rte_eth_stats st;
	struct rte_mbuf *m[2];
	uint64_t over = 0, rx = 0, rx_drops = 0, other = 0;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);       /* from an ephemeral port */
	unsigned n;

	CHECK(u != NULL, "oversized: the port opens (%s)", err);
	CHECK(system("ip link set lo up") == 0, "lo up (the namespace test_tx_full made)");
	if (!u)
		return;
	memset(big, 4, sizeof(big));
	memset(small, 4, sizeof(small));
	send_to_port(fd, big, sizeof(big), 0);
	send_to_port(fd, small, sizeof(small), 0);
	n = rx_all(u, m, 2);
	CHECK(n == 1 && m[0]->pkt_len == RTE_ETHER_HDR_LEN + 28 + sizeof(small),
	      "oversized: the small datagram arrives, the large one does not (%u frames)", n);
	rte_pktmbuf_free_bulk(m, n);
	for (int q = 0; q < QUEUES; q++) {
		over += cnt[q].drops[TL_DROP_oversized];
		rx += cnt[q].rx[TL_PORT_WAN];
		rx_drops += cnt[q].rx_drops[TL_PORT_WAN];
		for (int r = 0; r < TL_DROP_MAX; r++)
			other += r == TL_DROP_oversized ? 0 : cnt[q].drops[r];
	}
	tl_udpport_stats(u, &st);
	CHECK(over == 1 && other == 0, "oversized: one drop, reason oversized (%lu, others %lu)", (unsigned long)over,
	      (unsigned long)other);
	CHECK(rx == 1 && rx_drops == 1, "oversized: received and dropped on the WAN port (rx %lu, rx_drops %lu)",
	      (unsigned long)rx, (unsigned long)rx_drops);
	CHECK(st.ierrors == 1 && st.ipackets == 1, "oversized: ierrors %lu, ipackets %lu", (unsigned long)st.ierrors,
	      (unsigned long)st.ipackets);
	close(fd);
	tl_udpport_close(u);
}

/* After test_tx_full (its namespace): on a veth, a route of MTU 1000 to 10.7.0.0/24
 * and one of 1500 to 10.8.0.0/24. Four 1200-byte datagrams to each, from the veth's own
 * address (the port sends from the source a frame carries): the GSO send to the
 * first is refused (segments above its MTU) and its datagrams go one by one, every frame is
 * taken and none refused, and GSO to the second still goes (gso_sends 1); the refusal is
 * counted once, and a second burst to the first goes one by one without trying GSO again. */
static void test_gso_per_destination(void)
{
	static const uint8_t small[4] = { 10, 7, 0, 5 }, big[4] = { 10, 8, 0, 5 }, D0_4[4] = { 10, 6, 0, 1 };
	struct tl_udpport_cfg c = { .iface = "d0", .port = PORT, .queues = 1, .v4 = true, .mac = MAC, .gw_mac = GW,
				    .ip4 = LO4, .pools = pools };
	struct rte_mbuf *m[8], *refused[8];
	struct rte_eth_stats st;
	char err[256] = "";
	struct tl_udpport *u;
	uint16_t nf = 0, took;

	if (system("ip link add d0 type veth peer name d1 && ip addr add 10.6.0.1/24 dev d0 && ip link set d0 up && "
		   "ip link set d1 up && ip route add 10.7.0.0/24 dev d0 mtu 1000 && ip route add 10.8.0.0/24 dev d0 && "
		   "ip neigh add 10.7.0.5 lladdr 02:00:00:00:07:05 dev d0 nud permanent && "
		   "ip neigh add 10.8.0.5 lladdr 02:00:00:00:08:05 dev d0 nud permanent") != 0) {
		CHECK(0, "gso per destination: a veth and two routes");
		return;
	}
	u = tl_udpport_open(&c, err, sizeof(err));
	CHECK(u != NULL, "gso per destination: the port opens on d0 (%s)", err);
	if (!u)
		return;
	for (unsigned i = 0; i < 8; i++)
		m[i] = frame_from(D0_4, i < 4 ? small : big, PEER_PORT, 0, 1200);
	took = tl_udpport_tx(u, 0, m, 8, refused, &nf);
	CHECK(took == 8 && nf == 0, "gso per destination: all 8 taken, none refused (%u, %u)", took, nf);
	CHECK(tl_udpport_gso_sends(u) == 1, "gso per destination: GSO to the other destination still goes (%lu sends)",
	      (unsigned long)tl_udpport_gso_sends(u));
	CHECK(tl_udpport_gso_fallbacks(u) == 1, "gso per destination: one refusal counted (%lu)",
	      (unsigned long)tl_udpport_gso_fallbacks(u));
	for (unsigned i = 0; i < 4; i++)
		m[i] = frame_from(D0_4, small, PEER_PORT, 0, 1200);
	took = tl_udpport_tx(u, 0, m, 4, refused, &nf);
	CHECK(took == 4 && nf == 0 && tl_udpport_gso_fallbacks(u) == 1,
	      "gso per destination: the first again, one by one without a new refusal (%u, %lu)", took,
	      (unsigned long)tl_udpport_gso_fallbacks(u));
	tl_udpport_stats(u, &st);
	CHECK(st.opackets == 12 && st.oerrors == 0, "gso per destination: 12 datagrams sent (%lu)",
	      (unsigned long)st.opackets);
	tl_udpport_close(u);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_test_eal_init(argv[0], "udpport") != 0)
		return 1;
	/* A network namespace of its own: another run of this test on the machine would join
	 * the port's SO_REUSEPORT group on the shared lo and take some of its datagrams. */
	CHECK(unshare(CLONE_NEWNET) == 0 && system("ip link set lo up") == 0, "a network namespace with lo up");
	for (int q = 0; q < QUEUES; q++) {
		char name[32];

		snprintf(name, sizeof(name), "udpp%d", q);
		pools[q] = rte_pktmbuf_pool_create(name, 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
		CHECK(pools[q] != NULL, "pool %d", q);
	}
	if (pools[0] && pools[1]) {
		test_rx_frames();
		test_second_address();
		test_tx_datagrams();
		test_tx_run();
		test_tx_job();
		test_rx_gro();
		test_move();
		test_overflow_counted();
		test_port_in_use();
		test_tx_full();
		test_rx_oversized();
		test_gso_per_destination();
	}
	for (int q = 0; q < QUEUES; q++)
		rte_mempool_free(pools[q]);
	tl_test_eal_fini();
	return check_report();
}
