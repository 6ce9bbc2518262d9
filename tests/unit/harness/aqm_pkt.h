/* What the AQM unit tests build their traffic from: an IPv4 UDP packet of a chosen source port,
 * ECN codepoint and length, and source ports that land in different flow queues. */
#ifndef TL_TEST_AQM_PKT_H
#define TL_TEST_AQM_PKT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/aqm.h"

/* An IPv4 UDP packet 10.0.0.1:sport -> 10.9.0.1:53 of len bytes with ECN codepoint ecn;
 * exits 2 if mp is empty or len does not fit in an mbuf. */
static inline struct rte_mbuf *tl_aqm_test_pkt(struct rte_mempool *mp, uint16_t sport, uint8_t ecn, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	struct rte_ipv4_hdr *h;
	uint8_t *p;

	if (!m) {
		fprintf(stderr, "mempool empty\n");
		exit(2);
	}
	p = (uint8_t *)rte_pktmbuf_append(m, len);
	if (!p) {
		fprintf(stderr, "no room for a %u-byte packet in an mbuf\n", len);
		exit(2);
	}
	memset(p, 0, len);
	h = (struct rte_ipv4_hdr *)p;
	p[0] = 0x45;
	p[1] = ecn;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 17;
	memcpy(p + 12, (uint8_t[]){ 10, 0, 0, 1 }, 4);
	memcpy(p + 16, (uint8_t[]){ 10, 9, 0, 1 }, 4);
	p[20] = (uint8_t)(sport >> 8);
	p[21] = (uint8_t)sport;
	p[23] = 53;
	h->hdr_checksum = rte_ipv4_cksum(h);
	return m;
}

/* n (at most 16) source ports from `first` on whose packets hash to n different flow queues
 * of q: the hash is seeded at random per queue, so fixed ports share a queue now and then. */
static inline void tl_aqm_test_distinct_flows(const struct tl_aqm *q, struct rte_mempool *mp, uint16_t first,
					      uint16_t *sport, unsigned n)
{
	uint32_t taken[16];

	for (unsigned i = 0, port = first; i < n && i < RTE_DIM(taken); port++) {
		struct rte_mbuf *m = tl_aqm_test_pkt(mp, (uint16_t)port, 0, 100);
		uint32_t b = tl_aqm_classify(q, m);
		bool clash = false;

		rte_pktmbuf_free(m);
		for (unsigned j = 0; j < i; j++)
			clash |= taken[j] == b;
		if (!clash) {
			taken[i] = b;
			sport[i++] = (uint16_t)port;
		}
	}
}

#endif
