/* Cryptokey routing table: allowed IPs -> peer id (the index of the peer in tl_dp.peers).
 * One struct tl_table is one copy of it: an rte_fib of type DIR24_8 for IPv4 (its rules in
 * a RIB tree, so that adding or removing one costs the same with ten or a million others)
 * and an rte_lpm6 for IPv6 (rules in a hash), the peer id as next hop. Workers read the copy
 * the control plane published (tl_dp.table) lock-free: the longest prefix of the inner
 * destination when sending, of the inner source when receiving, which must give the sending
 * peer back. The control plane changes routes one by one in the copy nobody reads and then
 * publishes it (ctrl/aips.c): neither library is safe to change under a reader. */
#ifndef TL_ROUTE_H
#define TL_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rte_byteorder.h>
#include <rte_fib.h>

#include "dataplane/dp.h"
#include "dataplane/dpdk_compat.h"

#define TL_ROUTE_NONE UINT32_MAX

struct tl_route_entry {
	int family;
	uint8_t addr[16];      /* network order, host bits clear */
	uint8_t len;
	uint32_t peer_id;      /* < TL_MAX_PEERS */
};

/* What a copy can hold; the control plane builds a larger one when a change does not fit. */
struct tl_table_size {
	uint32_t routes4;      /* IPv4 prefixes (the RIB has room for twice as many nodes) */
	uint32_t tbl8_4;       /* IPv4 groups of 256 addresses below a /24 that hold a longer prefix */
	uint32_t rules6;       /* IPv6 prefixes */
	uint32_t tbl8_6;       /* IPv6 groups of 256 entries below the first 24 bits */
};

struct tl_table {
	struct rte_fib *fib4;
	struct rte_lpm6 *lpm6;
	/* The control plane's, never read by workers. */
	struct tl_table_size size;
	uint32_t n[2];                  /* prefixes held: IPv4, IPv6 */
	/* Per family, the peer ids (or TL_ROUTE_NONE) of /0 and of the two /1 halves: /0 goes
	 * into the libraries as the halves that have no route of their own. */
	uint32_t def[2], half[2][2];
};

/* The size for n4 IPv4 and n6 IPv6 prefixes, with room to grow. */
struct tl_table_size tl_table_size_for(size_t n4, size_t n6);
/* An empty copy; name_gen makes the DPDK object names unique. NULL (rte_errno set) on failure. */
struct tl_table *tl_table_new(const struct tl_table_size *size, uint64_t name_gen);
void tl_table_free(struct tl_table *t);
/* The table of one family replaced by an empty one of the new size (the old one is freed
 * first: no worker may read t). 0, or -1 (rte_errno set): that family is gone from t. */
int tl_table_family_new(struct tl_table *t, int family, const struct tl_table_size *size, uint64_t name_gen);

/* prefix -> peer id, added or changed. 0, -ENOSPC (the copy is full: nothing changed), or
 * -EINVAL (a bad id or length). */
int tl_table_set(struct tl_table *t, int family, const uint8_t *addr, uint8_t len, uint32_t id);
/* 0, or -ENOENT when the prefix is not there. Never needs memory. */
int tl_table_del(struct tl_table *t, int family, const uint8_t *addr, uint8_t len);
/* The peer id of exactly this prefix, or TL_ROUTE_NONE. */
uint32_t tl_table_get(struct tl_table *t, int family, const uint8_t *addr, uint8_t len);

/* A copy holding n entries (unit tests, the worker-pipeline harness). NULL on failure. */
struct tl_table *tl_table_build(const struct tl_route_entry *e, size_t n, uint64_t name_gen);

/* Peer id for addr, or TL_ROUTE_NONE. */
static inline uint32_t tl_route_lookup(const struct tl_table *t, int family, const uint8_t *addr)
{
	uint32_t hop;

	if (family == AF_INET) {
		uint32_t ip = rte_be_to_cpu_32(tl_load32(addr));
		uint64_t nh;

		rte_fib_lookup_bulk(t->fib4, &ip, &nh, 1);
		return nh < TL_MAX_PEERS ? (uint32_t)nh : TL_ROUTE_NONE;
	}
	return rte_lpm6_lookup(t->lpm6, TL_RTE_IP6(addr), &hop) == 0 ? hop : TL_ROUTE_NONE;
}

/* The peer addr routes to in t, or NULL. */
static inline struct tl_peer *tl_route_peer(struct tl_dp *dp, const struct tl_table *t, int family,
					    const uint8_t *addr)
{
	return tl_dp_peer(dp, tl_route_lookup(t, family, addr));
}

#endif
