/* Inner packets above the tunnel MTU on the worker pipeline (pipeline.h): IPv4 with DF and
 * IPv6 get "fragmentation needed" / "packet too big" back; IPv4 without DF leaves as
 * fragments; no ICMP error about an ICMP error, a non-first fragment or an IPv4 multicast
 * destination; ICMP errors follow the worker's token bucket. Each case checks the exact
 * drop reasons and the per-port balance. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>

#include "check.h"
#include "dataplane/dpdk_compat.h"
#include "pipeline.h"

#define BIG 1478                       /* inner packet above TL_PL_MTU (1420) */

static const uint8_t MCAST_NET4[4] = { 224, 0, 0, 0 };
static const uint8_t MCAST4[4] = { 239, 1, 2, 3 };
static const uint8_t MCAST_NET6[16] = { 0xff };
static const uint8_t MCAST6[16] = { 0xff, 0x0e, [15] = 1 };

/* The one-peer fixture, the peer also routing the multicast groups MCAST_NET4/4 and
 * MCAST_NET6/8. */
static int fixture_up(struct tl_pl_fixture *f)
{
	if (tl_pl_fixture_up(f, &TL_PL_PEER4) != 0)
		return -1;
	if (tl_pl_route_add(&f->pl, AF_INET, MCAST_NET4, 4, 0) == 0 &&
	    tl_pl_route_add(&f->pl, AF_INET6, MCAST_NET6, 8, 0) == 0 && tl_pl_routes_publish(&f->pl) == 0)
		return 0;
	tl_pl_fixture_down(f);
	return -1;
}

/* An IPv4 UDP packet of len bytes to dst with the given fragment field (flags | offset
 * in 8-byte units) and protocol; an ICMP packet gets icmp_type as its first byte. */
static uint16_t ip4(uint8_t *buf, const uint8_t dst[4], uint16_t len, uint16_t frag, uint8_t proto, uint8_t icmp_type)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)buf;

	tl_pl_ip(buf, AF_INET, TL_PL_LAN_HOST4, dst, len, 7);
	ip->fragment_offset = rte_cpu_to_be_16(frag);
	ip->next_proto_id = proto;
	if (proto == IPPROTO_ICMP)
		buf[20] = icmp_type;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return len;
}

static void send_lan(struct tl_pl_fixture *f, const uint8_t *ip, uint16_t len)
{
	tl_pl_inject(&f->pl, TL_PORT_LAN, tl_pl_lan_frame(&f->pl, ip, len));
	tl_pl_run(&f->pl);
}

/* The one frame on the LAN port is an ICMP error of the packet's family telling MTU 1420
 * to the LAN host, quoting the packet's start. */
static void check_icmp_back(struct tl_pl_fixture *f, int family, const uint8_t *orig, const char *name)
{
	struct rte_mbuf *m[4];
	unsigned n = tl_pl_collect(&f->pl, TL_PORT_LAN, m, 4);

	CHECK(n == 1, "%s: %u frames on the LAN port, expected 1 ICMP error", name, n);
	if (n != 1)
		goto out;
	if (family == AF_INET) {
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m[0], const struct rte_ipv4_hdr *, 14);
		const struct rte_icmp_hdr *icmp = (const struct rte_icmp_hdr *)(ip + 1);

		CHECK(ip->next_proto_id == IPPROTO_ICMP && icmp->icmp_type == 3 && icmp->icmp_code == 4,
		      "%s: not a fragmentation-needed error", name);
		CHECK(rte_be_to_cpu_16(icmp->icmp_seq_nb) == TL_PL_MTU, "%s: next-hop MTU %u", name,
		      rte_be_to_cpu_16(icmp->icmp_seq_nb));
		CHECK(!memcmp(&ip->dst_addr, TL_PL_LAN_HOST4, 4), "%s: not addressed to the sender", name);
		CHECK(!memcmp(icmp + 1, orig, 28), "%s: quote differs", name);
	} else {
		const struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod_offset(m[0], const struct rte_ipv6_hdr *, 14);
		const uint8_t *icmp = (const uint8_t *)(ip + 1);

		CHECK(ip->proto == IPPROTO_ICMPV6 && icmp[0] == 2, "%s: not a packet-too-big error", name);
		CHECK(icmp[4] == 0 && icmp[5] == 0 && icmp[6] * 256 + icmp[7] == TL_PL_MTU, "%s: MTU", name);
		CHECK(!memcmp(TL_IP6_ADDR(ip->dst_addr), TL_PL_LAN_HOST6, 16), "%s: not addressed to the sender", name);
	}
out:
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
}

static void test_df(int family)
{
	const char *name = family == AF_INET ? "ipv4 DF above the MTU" : "ipv6 above the MTU";
	struct tl_pl_fixture f;
	uint8_t ip[BIG];
	uint16_t len;

	if (fixture_up(&f) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	len = family == AF_INET ? ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_UDP, 0)
				: tl_pl_ip(ip, AF_INET6, TL_PL_LAN_HOST6, TL_PL_PEER_HOST6, BIG, 7);
	send_lan(&f, ip, len);
	check_icmp_back(&f, family, ip, name);
	CHECK(tl_pl_collect(&f.pl, TL_PORT_WAN, (struct rte_mbuf *[1]){ 0 }, 1) == 0, "%s: sent on the WAN", name);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_frag_needed, 1), "%s: drops", name);
	CHECK(f.pl.w.cnt.icmp_errors == 1, "%s: icmp_errors %lu", name, (unsigned long)f.pl.w.cnt.icmp_errors);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* IPv4 without DF above the MTU: fragments on the WAN that the peer reassembles into the
 * original packet. frag_field: the packet's own fragment field (it may be a fragment). */
static void test_no_df(uint16_t frag_field, const char *name)
{
	struct tl_pl_fixture f;
	uint8_t ip[BIG], out[1500], joined[BIG];
	struct rte_mbuf *m[8];
	uint16_t len = ip4(ip, TL_PL_PEER_HOST4, BIG, frag_field, IPPROTO_UDP, 0), got = 0;
	uint16_t want_off = (frag_field & RTE_IPV4_HDR_OFFSET_MASK) * 8;
	unsigned n;
	bool last_mf = false;

	if (fixture_up(&f) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	send_lan(&f, ip, len);
	n = tl_pl_collect(&f.pl, TL_PORT_WAN, m, 8);
	CHECK(n == 2, "%s: %u frames on the WAN, expected 2 fragments", name, n);
	for (unsigned i = 0; i < n; i++) {
		const char *why = "";
		uint64_t ctr;
		int plen = tl_pl_open_data(&f.pl, m[i], &TL_PL_PEER4, f.kp, &ctr, out, sizeof(out), &why);
		const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)out;
		uint16_t tot, fo;

		CHECK(plen >= 20, "%s: fragment %u does not open (%s)", name, i, why);
		if (plen < 20)
			continue;
		tot = rte_be_to_cpu_16(h->total_length);
		fo = rte_be_to_cpu_16(h->fragment_offset);
		CHECK(tot <= TL_PL_MTU && tot <= plen, "%s: fragment %u of %u bytes", name, i, tot);
		CHECK(rte_ipv4_cksum(h) == 0, "%s: fragment %u header checksum", name, i);
		CHECK(!memcmp(&h->src_addr, TL_PL_LAN_HOST4, 4) && !memcmp(&h->dst_addr, TL_PL_PEER_HOST4, 4) &&
		      !(fo & RTE_IPV4_HDR_DF_FLAG), "%s: fragment %u header", name, i);
		CHECK((fo & RTE_IPV4_HDR_OFFSET_MASK) * 8 == want_off + got, "%s: fragment %u at offset %u, expected %u",
		      name, i, (fo & RTE_IPV4_HDR_OFFSET_MASK) * 8, want_off + got);
		CHECK(i == n - 1 || (tot - 20) % 8 == 0, "%s: fragment %u payload not a multiple of 8", name, i);
		if (got + tot - 20 <= BIG - 20)
			memcpy(joined + 20 + got, out + 20, tot - 20u);
		got += tot - 20;
		last_mf = fo & RTE_IPV4_HDR_MF_FLAG;
	}
	CHECK(got == BIG - 20 && !memcmp(joined + 20, ip + 20, BIG - 20), "%s: fragments do not join into the packet", name);
	CHECK(last_mf == !!(frag_field & RTE_IPV4_HDR_MF_FLAG), "%s: more-fragments of the last fragment", name);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(tl_pl_collect(&f.pl, TL_PORT_LAN, m, 8) == 0, "%s: an ICMP error was sent", name);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "%s: drops", name);
	CHECK(f.pl.w.cnt.fragmented == 1 && f.pl.w.cnt.fragments == n, "%s: fragment counters", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* A DF packet above the MTU that must not get an ICMP error: dropped, counted. */
static void test_suppressed(const uint8_t *ip, uint16_t len, bool l2_broadcast, const char *name)
{
	struct tl_pl_fixture f;
	struct rte_mbuf *m[4], *frame;

	if (fixture_up(&f) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	frame = tl_pl_lan_frame(&f.pl, ip, len);
	if (l2_broadcast)
		memset(rte_pktmbuf_mtod(frame, uint8_t *), 0xff, 6);
	tl_pl_inject(&f.pl, TL_PORT_LAN, frame);
	tl_pl_run(&f.pl);
	CHECK(tl_pl_collect(&f.pl, TL_PORT_LAN, m, 4) == 0, "%s: an ICMP error was sent", name);
	CHECK(tl_pl_collect(&f.pl, TL_PORT_WAN, m, 4) == 0, "%s: sent on the WAN", name);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_icmp_suppressed, 1), "%s: drops", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

static void test_suppression(void)
{
	uint8_t ip[BIG];

	test_suppressed(ip, ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_ICMP, 3),
			false, "ICMP error about an ICMP unreachable");
	test_suppressed(ip, ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_ICMP, 11),
			false, "ICMP error about an ICMP time exceeded");
	test_suppressed(ip, ip4(ip, MCAST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_UDP, 0),
			false, "ICMP error about a multicast destination");
	test_suppressed(ip, ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG | 100, IPPROTO_UDP, 0),
			false, "ICMP error about a non-first fragment");
	test_suppressed(ip, ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_UDP, 0),
			true, "ICMP error about a link-layer broadcast");
}

/* An ICMP echo request (a query, not an error) above the MTU with DF does get one. */
static void test_echo_gets_error(void)
{
	struct tl_pl_fixture f;
	uint8_t ip[BIG];
	uint16_t len = ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_ICMP, 8);

	if (fixture_up(&f) != 0) {
		CHECK(0, "echo: setup");
		return;
	}
	send_lan(&f, ip, len);
	check_icmp_back(&f, AF_INET, ip, "echo request above the MTU");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_frag_needed, 1), "echo: drops");
	tl_pl_teardown(&f.pl);
}

/* Packet Too Big does go to an IPv6 multicast destination's sender (RFC 4443 2.4(e.3)). */
static void test_ptb_multicast6(void)
{
	struct tl_pl_fixture f;
	uint8_t ip[BIG];
	uint16_t len = tl_pl_ip(ip, AF_INET6, TL_PL_LAN_HOST6, MCAST6, BIG, 7);

	if (fixture_up(&f) != 0) {
		CHECK(0, "ptb multicast: setup");
		return;
	}
	send_lan(&f, ip, len);
	check_icmp_back(&f, AF_INET6, ip, "ipv6 multicast above the MTU");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_frag_needed, 1), "ptb multicast: drops");
	tl_pl_teardown(&f.pl);
}

/* 200 DF packets above the MTU at one instant: the bucket's 50 errors, 150 counted; 10 ms
 * later 10 more tokens. */
static void test_rate_limit(void)
{
	struct tl_pl_fixture f;
	uint8_t ip[BIG];
	uint16_t len = ip4(ip, TL_PL_PEER_HOST4, BIG, RTE_IPV4_HDR_DF_FLAG, IPPROTO_UDP, 0);
	struct rte_mbuf *m[256];
	unsigned n;

	if (fixture_up(&f) != 0) {
		CHECK(0, "rate limit: setup");
		return;
	}
	for (int i = 0; i < 200; i++)
		tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, 256);
	CHECK(n == TL_ICMP_BURST, "rate limit: %u ICMP errors of 200, expected %d", n, TL_ICMP_BURST);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(f.pl.w.cnt.drops[TL_DROP_frag_needed] == TL_ICMP_BURST &&
	      f.pl.w.cnt.drops[TL_DROP_icmp_ratelimited] == 200 - TL_ICMP_BURST,
	      "rate limit: frag_needed %lu, icmp_ratelimited %lu", (unsigned long)f.pl.w.cnt.drops[TL_DROP_frag_needed],
	      (unsigned long)f.pl.w.cnt.drops[TL_DROP_icmp_ratelimited]);
	CHECK(tl_pl_drops_total(&f.pl) == 200, "rate limit: %lu drops", (unsigned long)tl_pl_drops_total(&f.pl));
	f.pl.w.now_ns += 10 * 1000000ull;         /* 10 tokens at 1000/s */
	for (int i = 0; i < 20; i++)
		tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, 256);
	CHECK(n == 10, "rate limit: %u ICMP errors 10 ms later, expected 10", n);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(f.pl.w.cnt.drops[TL_DROP_icmp_ratelimited] == 160, "rate limit: icmp_ratelimited %lu, expected 160",
	      (unsigned long)f.pl.w.cnt.drops[TL_DROP_icmp_ratelimited]);
	CHECK(tl_pl_balanced(&f.pl), "rate limit: balance");
	tl_pl_teardown(&f.pl);
}

/* Tunnel MTU mtu (the port buffers sized from it, as the daemon sizes them): an inner packet
 * of len bytes crosses LAN -> WAN (one sealed frame the peer opens to the same bytes) and
 * WAN -> LAN (one frame with the same bytes); while the peer has no session, a copy staged
 * for the control plane is one buffer too. Nothing dropped, both ports balanced. */
static void test_jumbo(uint16_t mtu, uint16_t len)
{
	static uint8_t ip[9100], out[9200];
	const struct tl_pl_opts opts = { .mtu = mtu };
	struct tl_pl_fixture f = { .peer = NULL };
	struct rte_mbuf *m = NULL, *lan;
	struct tl_staged st;
	const char *why = "no frame";
	uint64_t ctr = 0;
	int n = -1;

	if (tl_pl_setup(&f.pl, &opts) != 0) {
		CHECK(0, "jumbo %u: harness up", len);
		return;
	}
	f.peer = tl_pl_peer_add(&f.pl, 0, &TL_PL_PEER4);
	if (f.peer && tl_pl_route_add(&f.pl, AF_INET, TL_PL_PEER_NET4, 16, 0) == 0 && tl_pl_routes_publish(&f.pl) == 0)
		f.kp = tl_pl_keypair_add(&f.pl, f.peer, TL_PL_LOCAL_INDEX, TL_PL_REMOTE_INDEX);
	CHECK(f.kp != NULL, "jumbo %u: peer and keypair", len);
	tl_pl_ip(ip, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, len, 11);
	lan = tl_pl_lan_frame(&f.pl, ip, len);
	CHECK(lan != NULL, "jumbo %u: a LAN frame of %u bytes fits a port buffer of mtu %u", len, TL_ETH_LEN + len, mtu);
	tl_pl_inject(&f.pl, TL_PORT_LAN, lan);
	tl_pl_run(&f.pl);
	if (tl_pl_collect(&f.pl, TL_PORT_WAN, &m, 1) == 1)
		n = tl_pl_open_data(&f.pl, m, &TL_PL_PEER4, f.kp, &ctr, out, sizeof(out), &why);
	CHECK(n == RTE_MIN(RTE_ALIGN_CEIL(len, 16), mtu) && !memcmp(out, ip, len), "jumbo %u: LAN -> WAN, the peer opens the %u bytes "
	      "(%d: %s)", len, len, n, n < 0 ? why : "");
	rte_pktmbuf_free(m);
	m = NULL;
	tl_pl_ip(ip, AF_INET, TL_PL_PEER_HOST4, TL_PL_LAN_HOST4, len, 12);
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, 0, ip, len, NULL));
	tl_pl_run(&f.pl);
	n = (int)tl_pl_collect(&f.pl, TL_PORT_LAN, &m, 1);
	CHECK(n == 1 && m->nb_segs == 1 && m->pkt_len == TL_ETH_LEN + (uint32_t)len &&
	      !memcmp(rte_pktmbuf_mtod_offset(m, uint8_t *, TL_ETH_LEN), ip, len),
	      "jumbo %u: WAN -> LAN, the %u bytes in one frame (%d)", len, len, n);
	rte_pktmbuf_free(m);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "jumbo %u: no drop", len);
	CHECK(tl_pl_balanced(&f.pl), "jumbo %u: balance", len);
	/* no session: the packet is staged, as a copy in the stage pool */
	tl_pl_ip(ip, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, len, 13);
	if (f.kp)
		atomic_store(&f.peer->current, NULL);
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	n = rte_ring_dequeue_elem(f.pl.dp.stage_ring, &st, sizeof(st));
	CHECK(n == 0 && st.m->nb_segs == 1 && st.m->pkt_len == len, "jumbo %u: the staged copy is one buffer of %u bytes "
	      "(%u segments)", len, len, n == 0 ? st.m->nb_segs : 0);
	if (n == 0)
		rte_pktmbuf_free(st.m);
	tl_pl_teardown(&f.pl);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	test_df(AF_INET);
	test_df(AF_INET6);
	test_no_df(0, "ipv4 without DF above the MTU");
	test_no_df(RTE_IPV4_HDR_MF_FLAG | 50, "ipv4 fragment without DF above the MTU");
	test_suppression();
	test_echo_gets_error();
	test_ptb_multicast6();
	test_rate_limit();
	test_jumbo(9000, 3000);
	test_jumbo(9000, 9000);
	tl_pl_eal_fini();
	return check_report();
}
