/* Checksums compiled for the widest vector unit the CPU has (csum.h). This file is built at
 * -O3 on its own (src/dataplane/meson.build) so that DPDK's inline byte loop vectorises. */
#include "dataplane/csum.h"

#if defined(__clang__) || defined(__SANITIZE_THREAD__)
/* clang (the fuzz build) exports a multiversioned function only to callers that see the
 * attribute on its declaration: one version there. Under gcc's ThreadSanitizer the clones'
 * resolver, instrumented, runs before the sanitizer is up and crashes at load: one too. */
#define TL_CSUM_CLONES
#else
#define TL_CSUM_CLONES __attribute__((target_clones("avx2", "default")))
#endif

TL_CSUM_CLONES uint16_t tl_csum_raw(const void *buf, size_t len)
{
	return rte_raw_cksum(buf, len);
}

TL_CSUM_CLONES uint16_t tl_csum_ipv4_l4(const struct rte_ipv4_hdr *ip, const void *l4)
{
	return rte_ipv4_udptcp_cksum(ip, l4);
}

TL_CSUM_CLONES uint16_t tl_csum_ipv6_l4(const struct rte_ipv6_hdr *ip, const void *l4)
{
	return rte_ipv6_udptcp_cksum(ip, l4);
}
