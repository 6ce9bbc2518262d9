/* ECN across the tunnel (RFC 6040 normal mode) on the real pipeline (pipeline.h): the outer
 * header of an encapsulated packet carries the inner ECN field, so an ECT(1) (L4S) or CE
 * packet keeps its codepoint on the wire; on decapsulation every combination of inner and
 * outer field gives RFC 6040's result (section 4.2): an outer CE reaches an ECN-capable inner
 * packet, an outer ECT(1) over an inner ECT(0) makes it ECT(1), an inner not-ECT packet
 * stays not-ECT, and one whose outer header says CE is dropped (counted as ecn_ce_not_ect). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_ip.h>

#include "check.h"
#include "pipeline.h"



/* An inner IP packet from src to dst with ECN field ecn (IPv4 checksum fixed). */
static uint16_t inner_ip(uint8_t *ip, int family, const void *src, const void *dst, uint8_t ecn)
{
	uint16_t len = tl_pl_ip(ip, family, src, dst, 300, 7);

	if (family == AF_INET) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		ip[1] = (uint8_t)((ip[1] & ~3u) | ecn);
		h->hdr_checksum = 0;
		h->hdr_checksum = rte_ipv4_cksum(h);
	} else {
		ip[1] = (uint8_t)((ip[1] & ~0x30u) | (unsigned)ecn << 4);
	}
	return len;
}

static uint8_t ip_ecn(const uint8_t *ip)
{
	return (ip[0] >> 4) == 6 ? (ip[1] >> 4) & 3 : ip[1] & 3;
}

static const char *const NAME[4] = { "not-ECT", "ECT(1)", "ECT(0)", "CE" };

/* Encapsulation: the outer field is the inner one, for each codepoint and inner family. */
static void test_encap(int family)
{
	struct tl_pl_fixture f;
	unsigned wrong = 0;
	char why[160] = "";

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "encap: setup");
		return;
	}
	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		uint8_t ip[600];
		struct rte_mbuf *m[4];
		uint16_t len = family == AF_INET ? inner_ip(ip, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, ecn)
						 : inner_ip(ip, AF_INET6, TL_PL_LAN_HOST6, TL_PL_PEER_HOST6, ecn);
		unsigned n;

		tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
		tl_pl_run(&f.pl);
		n = tl_pl_collect(&f.pl, TL_PORT_WAN, m, 4);
		if (n != 1 || ip_ecn(rte_pktmbuf_mtod_offset(m[0], const uint8_t *, RTE_ETHER_HDR_LEN)) != ecn) {
			wrong++;
			snprintf(why, sizeof(why), "inner %s: %u frames, outer %s", NAME[ecn], n,
				 n ? NAME[ip_ecn(rte_pktmbuf_mtod_offset(m[0], const uint8_t *, RTE_ETHER_HDR_LEN))] : "-");
		}
		for (unsigned i = 0; i < n; i++)
			rte_pktmbuf_free(m[i]);
	}
	CHECK(!wrong && tl_pl_balanced(&f.pl), "encap (inner IPv%d): the outer ECN field copies the inner one %s",
	      family == AF_INET ? 4 : 6, why);
	tl_pl_teardown(&f.pl);
}

/* RFC 6040 section 4.2, [inner][outer] -> what leaves, 4 = dropped. */
static const uint8_t DECAP[4][4] = {
	/* outer:  not-ECT ECT(1) ECT(0) CE */
	[0] = { 0, 0, 0, 4 },   /* inner not-ECT */
	[1] = { 1, 1, 1, 3 },   /* inner ECT(1) */
	[2] = { 2, 1, 2, 3 },   /* inner ECT(0) */
	[3] = { 3, 3, 3, 3 },   /* inner CE */
};

static void test_decap(int family)
{
	struct tl_pl_fixture f;
	unsigned wrong = 0, dropped = 0;
	uint64_t ctr = 0;
	char why[200] = "";

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "decap: setup");
		return;
	}
	for (uint8_t in = 0; in < 4; in++) {
		for (uint8_t out = 0; out < 4; out++) {
			uint8_t ip[600];
			struct rte_mbuf *m[4];
			struct tl_pl_wire wire = { .ecn = out };
			uint16_t len = family == AF_INET ? inner_ip(ip, AF_INET, TL_PL_PEER_HOST4, TL_PL_LAN_HOST4, in)
							 : inner_ip(ip, AF_INET6, TL_PL_PEER_HOST6, TL_PL_LAN_HOST6, in);
			unsigned n, want = DECAP[in][out];
			int got;

			tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, ctr++, ip, len, &wire));
			tl_pl_run(&f.pl);
			n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, 4);
			got = n == 1 ? ip_ecn(rte_pktmbuf_mtod_offset(m[0], const uint8_t *, RTE_ETHER_HDR_LEN)) :
				       n == 0 ? 4 : -1;
			if (n == 1 && family == AF_INET &&
			    rte_ipv4_cksum(rte_pktmbuf_mtod_offset(m[0], const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN)) !=
				    0 &&
			    rte_ipv4_cksum(rte_pktmbuf_mtod_offset(m[0], const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN)) !=
				    0xffff)
				got = -2;
			if (got != (int)want) {
				wrong++;
				snprintf(why, sizeof(why), "inner %s, outer %s: got %s, want %s", NAME[in], NAME[out],
					 got == 4 ? "dropped" : got >= 0 ? NAME[got] : got == -2 ? "bad checksum" : "?",
					 want == 4 ? "dropped" : NAME[want]);
			}
			dropped += want == 4;
			for (unsigned i = 0; i < n; i++)
				rte_pktmbuf_free(m[i]);
		}
	}
	CHECK(!wrong, "decap (inner IPv%d): RFC 6040 section 4.2 for the 16 inner/outer pairs %s",
	      family == AF_INET ? 4 : 6, why);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_ecn_ce_not_ect, dropped) && tl_pl_balanced(&f.pl),
	      "decap (inner IPv%d): the not-ECT packet under an outer CE counted as ecn_ce_not_ect",
	      family == AF_INET ? 4 : 6);
	tl_pl_teardown(&f.pl);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	test_encap(AF_INET);
	test_encap(AF_INET6);
	test_decap(AF_INET);
	test_decap(AF_INET6);
	tl_pl_eal_fini();
	return check_report();
}
