/* Outer-frame checks and edge cases of the worker pipeline (pipeline.h): what reaches the
 * control plane of a frame with Ethernet padding; outer checksums and destinations checked
 * before any roaming or handshake work (the UDP checksum of data messages only when they
 * would move the endpoint, or while a roam is under way); roaming per packet in arrival
 * order within a job; a failed encryption is a counted drop; a keypair
 * born after the worker's clock stamp is fresh, not expired. With --bench N: WAN -> LAN
 * packets per second over N data messages (printed, not a test). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "check.h"
#include "dataplane/dpdk_compat.h"
#include "crypto/messages.h"
#include "pipeline.h"

#define LOCAL_INDEX 0x3001
#define REMOTE_INDEX 0x4001

static const struct tl_endpoint PEER4 = {
	.family = AF_INET, .ip = { 203, 0, 113, 9 }, .port = 40009,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x09 }, .mac_valid = true,
};
static const struct tl_endpoint PEER6 = {
	.family = AF_INET6, .ip = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9 }, .port = 40009,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x09 }, .mac_valid = true,
};
static const uint8_t PEER_NET4[4] = { 10, 1, 0, 0 };
static const uint8_t PEER_HOST4[4] = { 10, 1, 0, 5 };
static const uint8_t LAN_HOST4[4] = { 10, 99, 0, 20 };
static const uint8_t OTHER_IP4[4] = { 192, 0, 2, 99 };
static const uint8_t OTHER_IP6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x99 };
static const uint8_t OTHER_MAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x99 };

struct fixture {
	struct tl_pl pl;
	struct tl_peer *peer;
	struct tl_keypair *kp;
};

static int fixture_up(struct fixture *f, const struct tl_endpoint *ep, const struct tl_pl_opts *o)
{
	if (tl_pl_setup(&f->pl, o) != 0)
		return -1;
	f->peer = tl_pl_peer_add(&f->pl, 0, ep);
	f->kp = NULL;
	if (f->peer && tl_pl_route_add(&f->pl, AF_INET, PEER_NET4, 16, 0) == 0 && tl_pl_routes_publish(&f->pl) == 0)
		f->kp = tl_pl_keypair_add(&f->pl, f->peer, LOCAL_INDEX, REMOTE_INDEX);
	if (f->peer && f->kp)
		return 0;
	tl_pl_teardown(&f->pl);
	return -1;
}

static bool endpoint_is(struct tl_peer *p, const struct tl_endpoint *want)
{
	struct tl_endpoint ep;

	tl_endpoint_read(p, &ep);
	return ep.family == want->family && ep.port == want->port && !memcmp(ep.ip, want->ip, 16) &&
	       !memcmp(ep.mac, want->mac, 6);
}

static void initiation(uint8_t msg[sizeof(struct tl_msg_initiation)])
{
	memset(msg, 0x5a, sizeof(struct tl_msg_initiation));
	msg[0] = TL_MSG_INITIATION;
	msg[1] = msg[2] = msg[3] = 0;
}

static unsigned delivered(struct tl_pl *pl)
{
	struct rte_mbuf *m[8];
	unsigned n = tl_pl_collect(pl, TL_PORT_LAN, m, 8);

	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	return n;
}

/* A handshake message in a frame with Ethernet padding: the control plane's copy is the
 * message alone, without the padding, its outer headers parsed beside it. */
static void test_trailer_to_ctrl(const struct tl_endpoint *ep)
{
	uint8_t msg[sizeof(struct tl_msg_initiation)];
	struct tl_pl_wire wire = { .trailer = 12 };
	uint16_t hlen = ep->family == AF_INET ? TL_OUTER4_LEN : TL_OUTER6_LEN;
	struct rte_mbuf *c = NULL;
	struct fixture f;

	if (fixture_up(&f, ep, NULL) != 0) {
		CHECK(0, "trailer: setup");
		return;
	}
	initiation(msg);
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_frame(&f.pl, ep, msg, sizeof(msg), &wire));
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.dp.hs_ring) == 1, "trailer: %u on hs_ring", rte_ring_count(f.pl.dp.hs_ring));
	if (rte_ring_dequeue(f.pl.dp.hs_ring, (void **)&c) == 0) {
		const uint8_t *d = rte_pktmbuf_mtod(c, const uint8_t *);
		const struct tl_outer *o = tl_hs_outer(c);

		CHECK(c->pkt_len == sizeof(msg), "trailer: copy of %u bytes, expected %zu", c->pkt_len, sizeof(msg));
		CHECK(c->pkt_len >= sizeof(msg) && !memcmp(d, msg, sizeof(msg)), "trailer: copy is not the message");
		CHECK(o && o->hdr_len == hlen && !memcmp(o->src_mac, ep->mac, 6),
		      "trailer: the parsed outer headers are not beside the copy");
		rte_pktmbuf_free(c);
	}
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "trailer: drops");
	CHECK(tl_pl_balanced(&f.pl), "trailer: balance");
	tl_pl_teardown(&f.pl);
}

/* A data message that authenticates, in a frame whose outer source address changed on the
 * way (the IPv4 header checksum no longer matches): counted, not delivered, no roaming. */
static void test_bad_ip_cksum_no_roam(void)
{
	uint8_t ip[256];
	uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, 200, 7);
	struct fixture f;
	struct rte_mbuf *m;

	if (fixture_up(&f, &PEER4, NULL) != 0) {
		CHECK(0, "bad ip checksum: setup");
		return;
	}
	m = tl_pl_wan_data(&f.pl, &PEER4, f.kp, 0, ip, len, NULL);
	rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, TL_ETH_LEN)->src_addr ^= rte_cpu_to_be_32(0x55);
	tl_pl_inject(&f.pl, TL_PORT_WAN, m);
	tl_pl_run(&f.pl);
	CHECK(delivered(&f.pl) == 0, "bad ip checksum: delivered");
	CHECK(endpoint_is(f.peer, &PEER4), "bad ip checksum: the endpoint moved");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_bad_checksum, 1), "bad ip checksum: drops");
	CHECK(tl_pl_balanced(&f.pl), "bad ip checksum: balance");
	tl_pl_teardown(&f.pl);
}

/* Data messages that authenticate, with a UDP checksum, and what they do to the endpoint:
 * from a new source with the checksum matching, the endpoint roams there; from a source
 * changed on the way (IPv6 address, or IPv4 source port, checksum no longer matching), it
 * is counted and nothing moves; from the endpoint itself the checksum is not needed (the
 * tag covers what is used), so a damaged checksum field still delivers. */
enum roam_case { ROAM_GOOD, ROAM_DAMAGED, STAY_DAMAGED };

static void test_roam_udp_cksum(const struct tl_endpoint *ep, enum roam_case which, const char *name)
{
	struct tl_pl_wire wire = { .udp_cksum = true };
	uint16_t l3 = ep->family == AF_INET ? 20 : 40;
	uint8_t ip[256];
	uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, 200, 14);
	struct tl_endpoint moved = *ep;
	struct rte_udp_hdr *udp;
	struct fixture f;
	struct rte_mbuf *m;
	bool ok = which != ROAM_DAMAGED;

	moved.port++;
	moved.ip[ep->family == AF_INET ? 3 : 15]++;
	if (fixture_up(&f, ep, NULL) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	m = tl_pl_wan_data(&f.pl, which == ROAM_GOOD ? &moved : ep, f.kp, 0, ip, len, &wire);
	udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, TL_ETH_LEN + l3);
	if (which == ROAM_DAMAGED && ep->family == AF_INET6)
		TL_IP6_ADDR(rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, TL_ETH_LEN)->src_addr)[15]++;
	else if (which == ROAM_DAMAGED)
		udp->src_port = rte_cpu_to_be_16(moved.port);
	else if (which == STAY_DAMAGED)
		udp->dgram_cksum ^= 0x0101;
	tl_pl_inject(&f.pl, TL_PORT_WAN, m);
	tl_pl_run(&f.pl);
	CHECK(delivered(&f.pl) == ok, "%s: delivered %s", name, ok ? "nothing" : "a packet");
	CHECK(endpoint_is(f.peer, which == ROAM_GOOD ? &moved : ep), "%s: endpoint", name);
	CHECK(tl_pl_drops_only(&f.pl, ok ? TL_DROP_MAX : TL_DROP_bad_checksum, ok ? 0 : 1), "%s: drops", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* Two data messages in one job: the first from a new source, the second from the old
 * endpoint. The endpoint ends as the source of the latest authenticated packet, the old one;
 * the second's UDP checksum is checked too (a roam is under way), and when it is damaged
 * the second is delivered (the tag covers what is used) but moves nothing back. */
static void test_roam_back_in_one_job(const struct tl_endpoint *ep, bool damaged, const char *name)
{
	struct tl_pl_wire wire = { .udp_cksum = true };
	uint16_t l3 = ep->family == AF_INET ? 20 : 40;
	uint8_t ip[256];
	uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, 200, 15);
	struct tl_endpoint moved = *ep;
	struct rte_mbuf *m;
	struct fixture f;

	moved.port++;
	moved.ip[ep->family == AF_INET ? 3 : 15]++;
	if (fixture_up(&f, ep, NULL) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &moved, f.kp, 0, ip, len, &wire));
	m = tl_pl_wan_data(&f.pl, ep, f.kp, 1, ip, len, &wire);
	if (damaged)
		rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, TL_ETH_LEN + l3)->dgram_cksum ^= 0x0101;
	tl_pl_inject(&f.pl, TL_PORT_WAN, m);
	tl_pl_run(&f.pl);
	CHECK(delivered(&f.pl) == 2, "%s: both delivered", name);
	CHECK(endpoint_is(f.peer, damaged ? &moved : ep), "%s: the endpoint is not the %s", name,
	      damaged ? "new source (the damaged packet moved it back)" : "source of the latest packet");
	CHECK(f.pl.w.roams_inflight == 0, "%s: %u roams still counted in flight", name, f.pl.w.roams_inflight);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "%s: drops", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* The pseudo-header sum a kernel sender leaves in the field under checksum offload. */
static uint16_t partial_cksum(struct rte_mbuf *m, int family)
{
	const void *ip = rte_pktmbuf_mtod_offset(m, const void *, TL_ETH_LEN);

	return family == AF_INET ? rte_ipv4_phdr_cksum(ip, 0) : rte_ipv6_phdr_cksum(ip, 0);
}

enum udp_case { UDP_GOOD, UDP_CORRUPT, UDP_ZERO, UDP_PORT_SAYS_BAD, UDP_PARTIAL };

/* Handshake initiations and UDP checksums: a valid non-zero checksum passes (IPv4 and
 * IPv6), and so does a partial one (the pseudo-header sum a kernel sender with checksum
 * offload leaves, e.g. a peer behind a veth); a wrong one, zero on IPv6, or one the port
 * flagged bad, is counted and never reaches the control plane. */
static void test_udp_cksum(const struct tl_endpoint *ep, enum udp_case which, const char *name)
{
	uint8_t msg[sizeof(struct tl_msg_initiation)];
	struct tl_pl_wire wire = { .udp_cksum = true };
	uint16_t l3 = ep->family == AF_INET ? 20 : 40;
	unsigned want_hs = which == UDP_GOOD || which == UDP_PARTIAL;
	struct rte_udp_hdr *udp;
	struct fixture f;
	struct rte_mbuf *m;

	if (fixture_up(&f, ep, NULL) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	initiation(msg);
	m = tl_pl_wan_frame(&f.pl, ep, msg, sizeof(msg), &wire);
	udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, TL_ETH_LEN + l3);
	if (which == UDP_CORRUPT)
		*rte_pktmbuf_mtod_offset(m, uint8_t *, TL_ETH_LEN + l3 + 8 + 40) ^= 0x10;
	else if (which == UDP_ZERO)
		udp->dgram_cksum = 0;
	else if (which == UDP_PORT_SAYS_BAD)
		m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_BAD;      /* the port's verdict wins */
	else if (which == UDP_PARTIAL)
		udp->dgram_cksum = partial_cksum(m, ep->family);
	tl_pl_inject(&f.pl, TL_PORT_WAN, m);
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.dp.hs_ring) == want_hs, "%s: %u on hs_ring, expected %u", name,
	      rte_ring_count(f.pl.dp.hs_ring), want_hs);
	CHECK(tl_pl_drops_only(&f.pl, want_hs ? TL_DROP_MAX : TL_DROP_bad_checksum, want_hs ? 0 : 1), "%s: drops", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* A data message with a valid non-zero IPv4 UDP checksum is delivered. */
static void test_udp_cksum_data(void)
{
	struct tl_pl_wire wire = { .udp_cksum = true };
	uint8_t ip[1400];
	uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, 1300, 8);
	struct fixture f;

	if (fixture_up(&f, &PEER4, NULL) != 0) {
		CHECK(0, "udp checksum data: setup");
		return;
	}
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &PEER4, f.kp, 0, ip, len, &wire));
	tl_pl_run(&f.pl);
	CHECK(delivered(&f.pl) == 1, "udp checksum data: not delivered");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "udp checksum data: drops");
	tl_pl_teardown(&f.pl);
}

/* Frames not addressed to the WAN port (another IP, another MAC, a family the port has no
 * address of) are counted and go nowhere: no delivery, no roaming, no handshake work. */
enum dst_case { DST_IP, DST_MAC, DST_NO_FAMILY };

static void test_not_for_us(const struct tl_endpoint *ep, enum dst_case which, const char *name)
{
	uint8_t msg[sizeof(struct tl_msg_initiation)], ip[256];
	struct tl_pl_opts opts = { .no_ip4 = which == DST_NO_FAMILY && ep->family == AF_INET,
				   .no_ip6 = which == DST_NO_FAMILY && ep->family == AF_INET6 };
	struct tl_pl_wire wire = { 0 };
	uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, 200, 9);
	struct tl_endpoint moved = *ep;
	struct fixture f;

	if (which == DST_IP)
		wire.dst_ip = ep->family == AF_INET ? OTHER_IP4 : OTHER_IP6;
	if (which == DST_MAC)
		wire.dst_mac = OTHER_MAC;
	moved.port++;
	if (fixture_up(&f, ep, &opts) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	initiation(msg);
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_frame(&f.pl, ep, msg, sizeof(msg), &wire));
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &moved, f.kp, 0, ip, len, &wire));
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.dp.hs_ring) == 0, "%s: handshake reached the control plane", name);
	CHECK(delivered(&f.pl) == 0, "%s: data delivered", name);
	CHECK(endpoint_is(f.peer, ep), "%s: the endpoint moved", name);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_not_for_us, 2), "%s: drops", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* Encryption that fails (a context without its cipher) drops the packet, counted at the
 * WAN queue's dequeue; nothing goes out. */
static void test_encrypt_failed(void)
{
	uint8_t ip[256];
	uint16_t len = tl_pl_ip(ip, AF_INET, LAN_HOST4, PEER_HOST4, 200, 10);
	struct tl_dp_aead *good;
	struct fixture f;

	if (fixture_up(&f, &PEER4, NULL) != 0) {
		CHECK(0, "encrypt failed: setup");
		return;
	}
	good = f.pl.w.aead;
	f.pl.w.aead = tl_dp_aead_new_unusable();
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.tx[TL_PORT_WAN]) == 0, "encrypt failed: %u frames sent",
	      rte_ring_count(f.pl.tx[TL_PORT_WAN]));
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_encrypt_failed, 1), "encrypt failed: drops");
	CHECK(f.pl.w.cnt.deq_drops[TL_PORT_WAN] == 1, "encrypt failed: deq_drops[WAN]");
	CHECK(tl_pl_balanced(&f.pl), "encrypt failed: balance");
	tl_dp_aead_free(f.pl.w.aead);
	f.pl.w.aead = good;
	tl_pl_teardown(&f.pl);
}

/* The control plane made a keypair after the worker stamped its clock: the keypair is
 * fresh both ways (received data is delivered, sent data is encrypted, no handshake). */
static void test_birth_after_now(void)
{
	uint8_t in[256], out[256];
	uint16_t lin = tl_pl_ip(in, AF_INET, PEER_HOST4, LAN_HOST4, 200, 11);
	uint16_t lout = tl_pl_ip(out, AF_INET, LAN_HOST4, PEER_HOST4, 200, 12);
	struct fixture f;
	unsigned sent;

	if (fixture_up(&f, &PEER4, NULL) != 0) {
		CHECK(0, "birth after now: setup");
		return;
	}
	f.kp->birth_ns = f.pl.w.now_ns + 1000000000ull;
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &PEER4, f.kp, 0, in, lin, NULL));
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, out, lout));
	tl_pl_run(&f.pl);
	sent = rte_ring_count(f.pl.tx[TL_PORT_WAN]);
	CHECK(delivered(&f.pl) == 1, "birth after now: data not delivered");
	CHECK(sent == 1, "birth after now: %u frames sent, expected 1", sent);
	CHECK(f.pl.w.cnt.staged == 0, "birth after now: packet staged");
	CHECK(!atomic_load(&f.peer->want_handshake), "birth after now: asked for a handshake");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "birth after now: drops");
	CHECK(tl_pl_balanced(&f.pl), "birth after now: balance");
	tl_pl_discard(&f.pl);
	tl_pl_teardown(&f.pl);
}

/* CPU time of this thread: the machine may be shared, wall time would count the others. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The UDP checksum verification alone over the frames (outer headers at TL_ETH_LEN). */
static double cksum_only(struct rte_mbuf **fr, unsigned k, int family)
{
	double t0 = now_s();
	unsigned ok = 0;

	for (unsigned i = 0; i < k; i++) {
		const uint8_t *ip = rte_pktmbuf_mtod_offset(fr[i], const uint8_t *, TL_ETH_LEN);

		if (family == AF_INET)
			ok += rte_ipv4_udptcp_cksum_verify((const void *)ip, ip + 20) == 0;
		else
			ok += rte_ipv6_udptcp_cksum_verify((const void *)ip, ip + 40) == 0;
	}
	return ok == k ? now_s() - t0 : 0;
}

/* WAN -> LAN packets per second of CPU over n data messages of 1420-byte inner packets,
 * frames crafted ahead of the timed part in batches; and the CPU time of the UDP checksum
 * verification alone over the same frames. */
static void bench(const struct tl_endpoint *ep, bool udp_cksum, unsigned n)
{
	struct tl_pl_wire wire = { .udp_cksum = udp_cksum };
	enum { BATCH = 2048 };
	static struct rte_mbuf *fr[BATCH];
	uint8_t ip[TL_PL_MTU];
	uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, TL_PL_MTU, 13);
	double t = 0, tc = 0;
	uint64_t ctr = 0;
	struct fixture f;

	if (fixture_up(&f, ep, NULL) != 0)
		return;
	while (ctr < n) {
		unsigned k = 0;
		double t0;

		for (; k < BATCH && ctr < n; k++)
			fr[k] = tl_pl_wan_data(&f.pl, ep, f.kp, ctr++, ip, len, &wire);
		if (udp_cksum)
			tc += cksum_only(fr, k, ep->family);
		t0 = now_s();
		for (unsigned i = 0; i < k; i++)
			tl_pl_inject(&f.pl, TL_PORT_WAN, fr[i]);
		tl_pl_run(&f.pl);
		t += now_s() - t0;
		tl_pl_discard(&f.pl);
	}
	printf("bench: %s outer, UDP checksum %s: %u packets, %.0f packets/s of CPU, %.0f ns/packet; "
	       "checksum verification alone %.0f ns/packet (%" PRIu64 " delivered, %" PRIu64 " dropped)\n",
	       ep->family == AF_INET ? "IPv4" : "IPv6", udp_cksum ? "set" : "zero", n, n / t, t * 1e9 / n,
	       tc * 1e9 / n, f.pl.w.cnt.tx[TL_PORT_LAN], tl_pl_drops_total(&f.pl));
	tl_pl_teardown(&f.pl);
}

int main(int argc, char **argv)
{
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "--bench")) {
		unsigned n = (unsigned)strtoul(argv[2], NULL, 10);

		bench(&PEER4, false, n);
		bench(&PEER4, true, n);
		bench(&PEER6, true, n);
		tl_pl_eal_fini();
		return 0;
	}
	test_trailer_to_ctrl(&PEER4);
	test_trailer_to_ctrl(&PEER6);
	test_bad_ip_cksum_no_roam();
	test_udp_cksum(&PEER4, UDP_GOOD, "udp4 good");
	test_udp_cksum(&PEER6, UDP_GOOD, "udp6 good");
	test_udp_cksum(&PEER4, UDP_CORRUPT, "udp4 corrupt");
	test_udp_cksum(&PEER6, UDP_CORRUPT, "udp6 corrupt");
	test_udp_cksum(&PEER6, UDP_ZERO, "udp6 zero");
	test_udp_cksum(&PEER4, UDP_PORT_SAYS_BAD, "udp4 flagged bad by the port");
	test_udp_cksum(&PEER4, UDP_PARTIAL, "udp4 partial (checksum offload)");
	test_udp_cksum(&PEER6, UDP_PARTIAL, "udp6 partial (checksum offload)");
	test_udp_cksum_data();
	test_roam_udp_cksum(&PEER4, ROAM_GOOD, "roam4 good");
	test_roam_udp_cksum(&PEER6, ROAM_GOOD, "roam6 good");
	test_roam_udp_cksum(&PEER4, ROAM_DAMAGED, "roam4 damaged port");
	test_roam_udp_cksum(&PEER6, ROAM_DAMAGED, "roam6 damaged address");
	test_roam_udp_cksum(&PEER4, STAY_DAMAGED, "stay4 damaged checksum");
	test_roam_udp_cksum(&PEER6, STAY_DAMAGED, "stay6 damaged checksum");
	test_roam_back_in_one_job(&PEER4, false, "roam back4");
	test_roam_back_in_one_job(&PEER6, false, "roam back6");
	test_roam_back_in_one_job(&PEER4, true, "roam back4 damaged");
	test_roam_back_in_one_job(&PEER6, true, "roam back6 damaged");
	test_not_for_us(&PEER4, DST_IP, "not for us: ip4");
	test_not_for_us(&PEER6, DST_IP, "not for us: ip6");
	test_not_for_us(&PEER4, DST_MAC, "not for us: mac");
	test_not_for_us(&PEER4, DST_NO_FAMILY, "not for us: no ip4");
	test_not_for_us(&PEER6, DST_NO_FAMILY, "not for us: no ip6");
	test_encrypt_failed();
	test_birth_after_now();
	tl_pl_eal_fini();
	return check_report();
}
