/* Gateway mode: where a decrypted packet goes on the LAN port. A mirror of the kernel's
 * view of the LAN interface, kept by the control plane (ctrl/lanfib.c):
 *
 *   destination --rte_fib/rte_fib6--> next hop (the destination itself for a connected
 *   prefix, else a gateway address) --neigh_table--> MAC
 *
 * Memory is bounded by the LAN routes, the gateways and the kernel's neighbours, never by
 * the destinations. The route snapshot (struct tl_lanfib) is read-only once published and
 * replaced as a whole (DPDK 22.11's rte_fib has no reader/writer safety of its own); the
 * old one is freed after an RCU grace period. The neighbour table is an rte_hash with
 * lock-free readers keyed by next-hop address (struct tl_neigh_key).
 *
 * A packet whose next hop has no MAC yet is held by its worker (struct tl_hold in lcore.h,
 * the LAN output of decap.c). */
#ifndef TL_DP_LANFIB_H
#define TL_DP_LANFIB_H

#include <stdint.h>

#include <rte_fib.h>
#include <rte_fib6.h>

#include "dataplane/dp.h"

#define TL_LANFIB_MAX_GW 256            /* distinct gateways per family */
#define TL_NH_NONE 0                    /* no route on the LAN port (the FIB's default) */
#define TL_NH_CONNECTED 1               /* on-link: the destination is the next hop */
#define TL_NH_GW0 2                     /* gateway i is next hop TL_NH_GW0 + i */

struct tl_lanfib {
	struct rte_fib *fib4;           /* NULL: no kernel routes known, every address on-link */
	struct rte_fib6 *fib6;
	uint32_t n_gw4, n_gw6;
	uint8_t gw4[TL_LANFIB_MAX_GW][4];
	uint8_t gw6[TL_LANFIB_MAX_GW][16];
	uint32_t n_routes4, n_routes6;
};

/* One route of the LAN port, as the control plane hands it to tl_lanfib_build. */
struct tl_lanfib_route {
	uint8_t family;
	uint8_t plen;
	bool has_gw;
	uint32_t metric;
	uint8_t dst[16];
	uint8_t gw[16];
};

/* Builds a snapshot from n routes; for each prefix the route of lowest metric wins. Routes
 * beyond TL_LANFIB_MAX_GW gateways are left out and counted in *skipped. with_fib false:
 * a snapshot without tables (every address on-link). NULL on allocation failure. */
struct tl_lanfib *tl_lanfib_build(const struct tl_lanfib_route *r, size_t n, bool with_fib, uint64_t gen,
				  uint64_t *skipped);
void tl_lanfib_free(struct tl_lanfib *f);

/* The next hop toward inner destination dst (family AF_INET/AF_INET6): 0 and *hop, or -1
 * when the LAN port has no route to it. */
int tl_lanfib_next_hop(const struct tl_lanfib *f, int family, const uint8_t *dst, struct tl_neigh_key *hop);

#endif
