/* What the unit-test harnesses (pipeline.h, ctrl_harness.h) share: an EAL for a test
 * process (no hugepages, no PCI, its own file prefix, removed again at the end) and DPDK
 * net_ring ports whose rings the test reads and writes. */
#ifndef TL_TEST_EAL_H
#define TL_TEST_EAL_H

#include <stdint.h>

#include <rte_mempool.h>
#include <rte_ring.h>

/* EAL on --no-huge -m 512 --no-pci --no-shconf, file prefix <tag>_<pid>, then the crypto
 * libraries. 0 or -1 (reason printed). */
int tl_test_eal_init(const char *argv0, const char *tag);
/* rte_eal_cleanup and removal of the runtime directory. */
void tl_test_eal_fini(void);

/* A started net_ring port named <name> with one queue pair: *rx is what the port receives
 * (tests enqueue there), *tx what it transmitted; RX buffers from pool. The port id, or -1
 * (the rings, if made, are left for the caller to free). */
int tl_test_ring_port(const char *name, unsigned ring_size, struct rte_mempool *pool, struct rte_ring **rx,
		      struct rte_ring **tx);
/* Stops and closes port_id (unless -1) and frees both rings with the packets in them. */
void tl_test_ring_port_free(int port_id, struct rte_ring *rx, struct rte_ring *tx);

#endif
