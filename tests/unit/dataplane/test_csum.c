/* The checksums built for the CPU (src/dataplane/csum.c) against DPDK's scalar ones they
 * stand in for: random IPv4 and IPv6 packets of every length from 0 to 1500 payload bytes,
 * at every alignment of 0..7 bytes (the IP headers at the even ones: struct rte_ipv4_hdr and
 * rte_ipv6_hdr are 2-byte aligned since DPDK 24.11, as an IP header in an mbuf is), and a
 * buffer that sums to all ones. */
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>

#include "check.h"
#include "dataplane/csum.h"

static _Alignas(8) uint8_t buf[2048 + 64];

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
}

int main(void)
{
	unsigned raw = 0, v4 = 0, v6 = 0, cases = 0, hdr_cases = 0;

	srand(7);
	for (size_t len = 0; len <= 1500; len++) {
		for (size_t al = 0; al < 8; al++) {
			uint8_t *p = buf + al;
			struct rte_ipv4_hdr *ip4 = (void *)p;
			struct rte_ipv6_hdr *ip6 = (void *)p;

			fill(p, len + 60);
			raw += tl_csum_raw(p, len) == rte_raw_cksum(p, len);
			cases++;
			if (al & 1)
				continue;
			hdr_cases++;
			ip4->version_ihl = RTE_IPV4_VHL_DEF;
			ip4->total_length = rte_cpu_to_be_16((uint16_t)(20 + 8 + len));
			ip4->next_proto_id = (len & 1) ? IPPROTO_UDP : IPPROTO_TCP;
			v4 += tl_csum_ipv4_l4(ip4, p + 20) == rte_ipv4_udptcp_cksum(ip4, p + 20);
			ip6->payload_len = rte_cpu_to_be_16((uint16_t)(8 + len));
			ip6->proto = (len & 1) ? IPPROTO_UDP : IPPROTO_TCP;
			v6 += tl_csum_ipv6_l4(ip6, p + 40) == rte_ipv6_udptcp_cksum(ip6, p + 40);
		}
	}
	CHECK(raw == cases, "raw sums equal DPDK's (%u of %u)", raw, cases);
	CHECK(v4 == hdr_cases, "IPv4 TCP/UDP checksums equal DPDK's (%u of %u)", v4, hdr_cases);
	CHECK(v6 == hdr_cases, "IPv6 TCP/UDP checksums equal DPDK's (%u of %u)", v6, hdr_cases);
	memset(buf, 0xff, 1400);
	CHECK(tl_csum_raw(buf, 1400) == 0xffff && rte_raw_cksum(buf, 1400) == 0xffff, "all ones sum to 0xffff");
	return check_report();
}
