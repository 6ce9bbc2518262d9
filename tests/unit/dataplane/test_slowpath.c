/* Two things the worker pipeline (pipeline.h) must do with what kernels hand it:
 * - a LAN packet whose TCP/UDP checksum the sender's kernel left partial (transmit
 *   checksum offload on a veth: only the pseudo-header sum in the field) leaves the tunnel
 *   with the checksum complete; a complete or a wrong checksum is left as it is;
 * - a data message rebuilt from a datagram the kernel reassembled carries an all-zero
 *   source MAC when the sender's MAC is unknown: it is delivered, an unchanged endpoint
 *   keeps its MAC and a new endpoint waits for resolution (MAC not valid). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "check.h"
#include "pipeline.h"



enum csum_kind { CSUM_PARTIAL, CSUM_COMPLETE, CSUM_WRONG };

/* The UDP checksum field of an IP packet (IPv4 or IPv6, no options) as the kind asks. */
static uint16_t csum_field(uint8_t *ip, int family, enum csum_kind kind)
{
	uint16_t l3 = family == AF_INET ? 20 : 40;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + l3);

	if (kind == CSUM_PARTIAL)
		udp->dgram_cksum = family == AF_INET ? rte_ipv4_phdr_cksum((const void *)ip, 0)
						     : rte_ipv6_phdr_cksum((const void *)ip, 0);
	else if (kind == CSUM_WRONG)
		udp->dgram_cksum ^= 0x0101;
	return udp->dgram_cksum;
}

static bool csum_ok(const uint8_t *ip, int family)
{
	uint16_t l3 = family == AF_INET ? 20 : 40;

	return family == AF_INET ? rte_ipv4_udptcp_cksum_verify((const void *)ip, ip + l3) == 0
				 : rte_ipv6_udptcp_cksum_verify((const void *)ip, ip + l3) == 0;
}

static void test_csum(int family, enum csum_kind kind, const char *name)
{
	struct tl_pl_fixture f;
	uint8_t ip[1000], out[1500];
	struct rte_mbuf *m[4];
	const char *why = "";
	uint16_t len, l3 = family == AF_INET ? 20 : 40, field;
	uint64_t ctr;
	unsigned n;
	int plen;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	len = family == AF_INET ? tl_pl_ip(ip, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, sizeof(ip), 3)
				: tl_pl_ip(ip, AF_INET6, TL_PL_LAN_HOST6, TL_PL_PEER_HOST6, sizeof(ip), 3);
	field = csum_field(ip, family, kind);
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_WAN, m, 4);
	CHECK(n == 1, "%s: %u frames on the WAN, expected 1", name, n);
	if (n == 1) {
		plen = tl_pl_open_data(&f.pl, m[0], &TL_PL_PEER4, f.kp, &ctr, out, sizeof(out), &why);
		CHECK(plen >= len, "%s: does not open (%s)", name, why);
		if (plen >= len && kind == CSUM_WRONG) {
			CHECK(!memcmp(out, ip, len), "%s: a wrong checksum was changed", name);
		} else if (plen >= len) {
			CHECK(csum_ok(out, family), "%s: checksum not complete", name);
			CHECK(!memcmp(out, ip, l3 + 6) && !memcmp(out + l3 + 8, ip + l3 + 8, len - l3 - 8u),
			      "%s: more than the checksum changed", name);
		}
		rte_pktmbuf_free(m[0]);
	}
	CHECK(f.pl.w.cnt.csum_completed == (kind == CSUM_PARTIAL), "%s: csum_completed %lu (field %04x)", name,
	      (unsigned long)f.pl.w.cnt.csum_completed, field);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "%s: drops", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

/* A data message from ep (MAC all zero: a reassembled datagram, sender's MAC unknown). */
static void test_unknown_mac(bool moved)
{
	const char *name = moved ? "unknown MAC, new endpoint" : "unknown MAC, same endpoint";
	struct tl_endpoint from = TL_PL_PEER4, now;
	struct tl_pl_fixture f;
	uint8_t ip[200];
	struct rte_mbuf *m[4];
	uint16_t len;
	unsigned n;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	memset(from.mac, 0, 6);
	if (moved)
		from.port = 40002;
	len = tl_pl_ip(ip, AF_INET, TL_PL_PEER_HOST4, TL_PL_LAN_HOST4, sizeof(ip), 5);
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &from, f.kp, 0, ip, len, NULL));
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, 4);
	CHECK(n == 1, "%s: %u frames on the LAN, expected 1", name, n);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "%s: drops", name);
	tl_endpoint_read(f.peer, &now);
	if (moved)
		CHECK(now.port == 40002 && !now.mac_valid, "%s: endpoint port %u, MAC valid %d", name, now.port,
		      now.mac_valid);
	else
		CHECK(now.port == TL_PL_PEER4.port && now.mac_valid && !memcmp(now.mac, TL_PL_PEER4.mac, 6),
		      "%s: the endpoint's MAC was lost", name);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_teardown(&f.pl);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	test_csum(AF_INET, CSUM_PARTIAL, "ipv4 partial checksum");
	test_csum(AF_INET6, CSUM_PARTIAL, "ipv6 partial checksum");
	test_csum(AF_INET, CSUM_COMPLETE, "ipv4 complete checksum");
	test_csum(AF_INET, CSUM_WRONG, "ipv4 wrong checksum");
	test_unknown_mac(false);
	test_unknown_mac(true);
	tl_pl_eal_fini();
	return check_report();
}
