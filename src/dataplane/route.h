/* Cryptokey routing table: allowed IPs -> peer, as rte_lpm/rte_lpm6 with the peer id as
 * next hop. Built whole by the control plane, published to the workers by pointer, read
 * lock-free (longest prefix on the inner destination when sending, and on the inner
 * source when receiving, which must give the sending peer back). */
#ifndef TL_ROUTE_H
#define TL_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rte_byteorder.h>

#include "dataplane/dp.h"

struct tl_route_entry {
	int family;
	uint8_t addr[16];      /* network order, host bits clear */
	uint8_t len;
	uint32_t peer_id;      /* < TL_MAX_PEERS */
};

/* name_gen makes the LPM names unique; returns NULL (rte_errno set) on failure. */
struct tl_table *tl_table_build(const struct tl_route_entry *e, size_t n, uint64_t name_gen);
void tl_table_free(struct tl_table *t);

/* Peer id for addr, or UINT32_MAX. */
static inline uint32_t tl_route_lookup(const struct tl_table *t, int family, const uint8_t *addr)
{
	uint32_t hop;
	int r;

	if (family == AF_INET)
		r = rte_lpm_lookup(t->lpm4, rte_be_to_cpu_32(tl_load32(addr)), &hop);
	else
		r = rte_lpm6_lookup(t->lpm6, addr, &hop);
	return r == 0 ? hop : UINT32_MAX;
}

#endif
