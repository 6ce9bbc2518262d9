/* One copy of the cryptokey routing table (route.h): IPv4 in an rte_fib (DIR24_8, 4-byte next
 * hops), IPv6 in an rte_lpm6, changed prefix by prefix. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_lpm6.h>
#include <rte_malloc.h>
#include <rte_rib.h>

#include "dataplane/route.h"

/* What the IPv4 FIB answers for an address no prefix covers: never a peer id. */
#define TL_FIB_MISS TL_MAX_PEERS

static uint32_t at_least(size_t want, uint32_t min)
{
	return want > min ? (want > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)want) : min;
}

/* Prefixes packed in a pool (a hub's road warriors) share their groups: a /32 per address of
 * a /16 needs 256 IPv4 groups for 65536 prefixes. A sparser set makes a change fail with
 * -ENOSPC, and the control plane builds a larger copy. */
struct tl_table_size tl_table_size_for(size_t n4, size_t n6)
{
	return (struct tl_table_size){
		.routes4 = at_least(n4 + n4 / 4, 1024),
		.tbl8_4 = at_least(n4 / 64, 256),
		.rules6 = at_least(n6 + n6 / 4, 1024),
		.tbl8_6 = at_least(n6 / 32 + 256, 512),
	};
}

void tl_table_free(struct tl_table *t)
{
	if (!t)
		return;
	rte_fib_free(t->fib4);
	rte_lpm6_free(t->lpm6);
	rte_free(t);
}

int tl_table_family_new(struct tl_table *t, int family, const struct tl_table_size *size, uint64_t name_gen)
{
	struct rte_fib_conf c4 = {
		.type = RTE_FIB_DIR24_8,
		.default_nh = TL_FIB_MISS,
		.max_routes = (int)size->routes4,
		.dir24_8 = { .nh_sz = RTE_FIB_DIR24_8_4B, .num_tbl8 = size->tbl8_4 },
	};
	struct rte_lpm6_config c6 = { .max_rules = size->rules6, .number_tbl8s = size->tbl8_6 };
	char name[RTE_LPM6_NAMESIZE];

	if (family == AF_INET) {
		rte_fib_free(t->fib4);
		snprintf(name, sizeof(name), "rt4_%" PRIu64, name_gen);
		t->fib4 = rte_fib_create(name, SOCKET_ID_ANY, &c4);
		t->n[0] = 0;
		t->def[0] = t->half[0][0] = t->half[0][1] = TL_ROUTE_NONE;
		t->size.routes4 = size->routes4;
		t->size.tbl8_4 = size->tbl8_4;
		return t->fib4 ? 0 : -1;
	}
	rte_lpm6_free(t->lpm6);
	snprintf(name, sizeof(name), "rt6_%" PRIu64, name_gen);
	t->lpm6 = rte_lpm6_create(name, SOCKET_ID_ANY, &c6);
	t->n[1] = 0;
	t->def[1] = t->half[1][0] = t->half[1][1] = TL_ROUTE_NONE;
	t->size.rules6 = size->rules6;
	t->size.tbl8_6 = size->tbl8_6;
	return t->lpm6 ? 0 : -1;
}

struct tl_table *tl_table_new(const struct tl_table_size *size, uint64_t name_gen)
{
	struct tl_table *t = rte_zmalloc("tl_table", sizeof(*t), RTE_CACHE_LINE_SIZE);

	if (t && (tl_table_family_new(t, AF_INET, size, name_gen) != 0 ||
		  tl_table_family_new(t, AF_INET6, size, name_gen) != 0)) {
		tl_table_free(t);
		return NULL;
	}
	return t;
}

static uint32_t ip4(const uint8_t *addr)
{
	return rte_be_to_cpu_32(tl_load32(addr));
}

/* ---- rules as the libraries hold them (length >= 1) ----------------------------------------- */

static uint32_t raw_get(struct tl_table *t, int v6, const uint8_t *addr, uint8_t len)
{
	struct rte_rib_node *node;
	uint64_t nh4;
	uint32_t nh;

	if (v6)
		return rte_lpm6_is_rule_present(t->lpm6, TL_RTE_IP6(addr), len, &nh) == 1 ? nh : TL_ROUTE_NONE;
	node = rte_rib_lookup_exact(rte_fib_get_rib(t->fib4), ip4(addr), len);
	return node && rte_rib_get_nh(node, &nh4) == 0 ? (uint32_t)nh4 : TL_ROUTE_NONE;
}

static int raw_drop(struct tl_table *t, int v6, const uint8_t *addr, uint8_t len)
{
	int r = v6 ? rte_lpm6_delete(t->lpm6, TL_RTE_IP6(addr), len) : rte_fib_delete(t->fib4, ip4(addr), len);

	return r == 0 ? 0 : -ENOENT;
}

static int raw_put(struct tl_table *t, int v6, const uint8_t *addr, uint8_t len, uint32_t id)
{
	uint32_t old;
	int r;

	if (v6)
		return rte_lpm6_add(t->lpm6, TL_RTE_IP6(addr), len, id);
	old = raw_get(t, 0, addr, len);
	if (old == id)
		return 0;
	/* DPDK 22.11 reports success when changing the next hop of a prefix fails: remove and
	 * add instead, which report what happened. */
	if (old != TL_ROUTE_NONE && rte_fib_delete(t->fib4, ip4(addr), len) != 0)
		return -EINVAL;
	r = rte_fib_add(t->fib4, ip4(addr), len, id);
	if (r != 0 && old != TL_ROUTE_NONE)
		rte_fib_add(t->fib4, ip4(addr), len, old);     /* put the old one back */
	return r == -ENOMEM ? -ENOSPC : r;     /* the RIB's node pool is part of the copy's size */
}

/* ---- the default route ---------------------------------------------------------------------- */

/* Neither library keeps a default route right (rte_lpm6 takes depths from 1; DPDK 22.11's
 * rte_fib loses every longer prefix when 0.0.0.0/0 is deleted): /0 goes in as its two /1
 * halves, except a half that has a route of its own. */
static const uint8_t *half_addr(int half)
{
	static const uint8_t halves[2][16] = { { 0 }, { 0x80 } };

	return halves[half];
}

/* What the library holds for a /1 half: its own route, else /0's, else nothing. */
static int half_sync(struct tl_table *t, int v6, int half)
{
	uint32_t id = t->half[v6][half] != TL_ROUTE_NONE ? t->half[v6][half] : t->def[v6];

	if (id != TL_ROUTE_NONE)
		return raw_put(t, v6, half_addr(half), 1, id);
	if (raw_get(t, v6, half_addr(half), 1) != TL_ROUTE_NONE)
		return raw_drop(t, v6, half_addr(half), 1);
	return 0;
}

static uint32_t *short_slot(struct tl_table *t, int v6, const uint8_t *addr, uint8_t len)
{
	return len == 0 ? &t->def[v6] : &t->half[v6][addr[0] >> 7];
}

/* ---- the table -------------------------------------------------------------------------------- */

int tl_table_set(struct tl_table *t, int family, const uint8_t *addr, uint8_t len, uint32_t id)
{
	int v6 = family == AF_INET6;
	uint32_t *slot, old;
	int r = 0;

	if (id >= TL_MAX_PEERS || len > (v6 ? 128 : 32))
		return -EINVAL;
	if (len > 1) {
		bool had = raw_get(t, v6, addr, len) != TL_ROUTE_NONE;

		r = raw_put(t, v6, addr, len, id);
		t->n[v6] += r == 0 && !had;
		return r;
	}
	slot = short_slot(t, v6, addr, len);
	old = *slot;
	*slot = id;
	for (int h = 0; h < 2 && r == 0; h++)
		if (len == 0 || h == addr[0] >> 7)
			r = half_sync(t, v6, h);
	if (r != 0) {
		*slot = old;
		for (int h = 0; h < 2; h++)     /* the halves as they were (replaces or frees) */
			half_sync(t, v6, h);
		return r;
	}
	t->n[v6] += old == TL_ROUTE_NONE;
	return 0;
}

int tl_table_del(struct tl_table *t, int family, const uint8_t *addr, uint8_t len)
{
	int v6 = family == AF_INET6;
	uint32_t *slot;

	if (len > 1) {
		if (raw_drop(t, v6, addr, len) != 0)
			return -ENOENT;
		t->n[v6]--;
		return 0;
	}
	slot = short_slot(t, v6, addr, len);
	if (*slot == TL_ROUTE_NONE)
		return -ENOENT;
	*slot = TL_ROUTE_NONE;
	t->n[v6]--;
	/* A half falls back to /0, whose rule it held before this route (no room needed). */
	for (int h = 0; h < 2; h++)
		if (len == 0 || h == addr[0] >> 7)
			half_sync(t, v6, h);
	return 0;
}

uint32_t tl_table_get(struct tl_table *t, int family, const uint8_t *addr, uint8_t len)
{
	int v6 = family == AF_INET6;

	return len > 1 ? raw_get(t, v6, addr, len) : *short_slot(t, v6, addr, len);
}

struct tl_table *tl_table_build(const struct tl_route_entry *e, size_t n, uint64_t name_gen)
{
	struct tl_table_size size;
	struct tl_table *t;
	size_t n4 = 0;

	for (size_t i = 0; i < n; i++)
		n4 += e[i].family == AF_INET;
	size = tl_table_size_for(n4, n - n4);
	size.tbl8_4 = at_least(n4, size.tbl8_4);       /* room for any set of n prefixes */
	size.tbl8_6 = at_least(16 * (n - n4), size.tbl8_6);
	t = tl_table_new(&size, name_gen);
	for (size_t i = 0; t && i < n; i++)
		if (tl_table_set(t, e[i].family, e[i].addr, e[i].len, e[i].peer_id) != 0) {
			tl_table_free(t);
			t = NULL;
		}
	return t;
}
