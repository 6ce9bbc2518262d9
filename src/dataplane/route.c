#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dataplane/route.h"

void tl_table_free(struct tl_table *t)
{
	if (!t)
		return;
	rte_lpm_free(t->lpm4);
	rte_lpm6_free(t->lpm6);
	rte_free(t);
}

static int table_add(struct tl_table *t, const struct tl_route_entry *e)
{
	if (e->peer_id >= TL_MAX_PEERS)
		return -EINVAL;
	if (e->family == AF_INET)
		return rte_lpm_add(t->lpm4, rte_be_to_cpu_32(tl_load32(e->addr)), e->len, e->peer_id);
	return rte_lpm6_add(t->lpm6, e->addr, e->len, e->peer_id);
}

static bool has_prefix(const struct tl_route_entry *e, size_t n, const struct tl_route_entry *p)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].family == p->family && e[i].len == p->len && !memcmp(e[i].addr, p->addr, 16))
			return true;
	return false;
}

/* The LPM libraries take depths from 1: a default route (/0) goes in as its two halves
 * (/1), except a half that some entry claims itself, which keeps that entry. */
static int table_add_default(struct tl_table *t, const struct tl_route_entry *def,
			     const struct tl_route_entry *e, size_t n)
{
	for (int half = 0; half < 2; half++) {
		struct tl_route_entry h = *def;
		int r;

		h.len = 1;
		memset(h.addr, 0, sizeof(h.addr));
		h.addr[0] = half ? 0x80 : 0;
		if (has_prefix(e, n, &h))
			continue;
		r = table_add(t, &h);
		if (r != 0)
			return r;
	}
	return 0;
}

struct tl_table *tl_table_build(const struct tl_route_entry *e, size_t n, uint64_t name_gen)
{
	struct tl_table *t = rte_zmalloc("tl_table", sizeof(*t), RTE_CACHE_LINE_SIZE);
	char name[RTE_LPM_NAMESIZE];
	uint32_t n4 = 0, n6 = 0;

	if (!t)
		return NULL;
	for (size_t i = 0; i < n; i++)
		e[i].family == AF_INET ? n4++ : n6++;
	snprintf(name, sizeof(name), "lpm4_%" PRIu64, name_gen);
	t->lpm4 = rte_lpm_create(name, SOCKET_ID_ANY,
				 &(struct rte_lpm_config){ .max_rules = n4 + 16, .number_tbl8s = 64 + n4 });
	snprintf(name, sizeof(name), "lpm6_%" PRIu64, name_gen);
	t->lpm6 = rte_lpm6_create(name, SOCKET_ID_ANY,
				  &(struct rte_lpm6_config){ .max_rules = n6 + 16, .number_tbl8s = 64 + 16 * n6 });
	if (!t->lpm4 || !t->lpm6)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if ((e[i].len ? table_add(t, &e[i]) : table_add_default(t, &e[i], e, n)) != 0)
			goto fail;
	return t;
fail:
	tl_table_free(t);
	return NULL;
}
