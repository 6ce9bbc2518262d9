/* Gateway mode, LAN side of the fast path: the route snapshot (build, lookup, free). See
 * lanfib.h for the model; the hold of packets whose next hop is being resolved is the LAN
 * output of decap.c.
 *
 * The snapshot's tables are rte_fib/rte_fib6 of type DUMMY (a RIB tree): their memory
 * follows the number of routes (a DIR24_8 table costs 16-64 MB whatever it holds), they
 * are cheap to rebuild, and the routes of one LAN port are few, so the tree is shallow. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <rte_malloc.h>

#include "dataplane/dpdk_compat.h"
#include "dataplane/lanfib.h"

void tl_lanfib_free(struct tl_lanfib *f)
{
	if (!f)
		return;
	rte_fib_free(f->fib4);
	rte_fib6_free(f->fib6);
	rte_free(f);
}

/* Higher metric first, so that the lowest metric is added last and wins. */
static int metric_desc(const void *a, const void *b)
{
	const struct tl_lanfib_route *x = a, *y = b;

	return x->metric < y->metric ? 1 : x->metric > y->metric ? -1 : 0;
}

static int64_t gw_id(struct tl_lanfib *f, const struct tl_lanfib_route *r)
{
	size_t alen = r->family == AF_INET ? 4 : 16;
	uint32_t *n = r->family == AF_INET ? &f->n_gw4 : &f->n_gw6;

	for (uint32_t i = 0; i < *n; i++) {
		const uint8_t *g = r->family == AF_INET ? f->gw4[i] : f->gw6[i];

		if (!memcmp(g, r->gw, alen))
			return TL_NH_GW0 + i;
	}
	if (*n == TL_LANFIB_MAX_GW)
		return -1;
	memcpy(r->family == AF_INET ? f->gw4[*n] : f->gw6[*n], r->gw, alen);
	return TL_NH_GW0 + (*n)++;
}

static int fibs_create(struct tl_lanfib *f, uint32_t n4, uint32_t n6, uint64_t gen)
{
	struct rte_fib_conf c4 = { .type = RTE_FIB_DUMMY, .default_nh = TL_NH_NONE, .max_routes = (int)n4 + 16 };
	struct rte_fib6_conf c6 = { .type = RTE_FIB6_DUMMY, .default_nh = TL_NH_NONE, .max_routes = (int)n6 + 16 };
	char name[32];   /* RTE_FIB_NAMESIZE (64) is private to the library */

	snprintf(name, sizeof(name), "tl_lf4_%" PRIu64, gen);
	f->fib4 = rte_fib_create(name, (int)rte_socket_id(), &c4);
	snprintf(name, sizeof(name), "tl_lf6_%" PRIu64, gen);
	f->fib6 = rte_fib6_create(name, (int)rte_socket_id(), &c6);
	return f->fib4 && f->fib6 ? 0 : -1;
}

static int route_add(struct tl_lanfib *f, const struct tl_lanfib_route *r)
{
	int64_t nh = r->has_gw ? gw_id(f, r) : TL_NH_CONNECTED;
	int rc;

	if (nh < 0)
		return -1;
	if (r->family == AF_INET) {
		rc = rte_fib_add(f->fib4, rte_be_to_cpu_32(tl_load32(r->dst)), r->plen, (uint64_t)nh);
		f->n_routes4 += rc == 0;
	} else {
		rc = rte_fib6_add(f->fib6, TL_RTE_IP6(r->dst), r->plen, (uint64_t)nh);
		f->n_routes6 += rc == 0;
	}
	return rc;
}

struct tl_lanfib *tl_lanfib_build(const struct tl_lanfib_route *r, size_t n, bool with_fib, uint64_t gen,
				  uint64_t *skipped)
{
	struct tl_lanfib *f = rte_zmalloc("tl_lanfib", sizeof(*f), RTE_CACHE_LINE_SIZE);
	struct tl_lanfib_route *sorted = NULL;
	uint32_t n4 = 0, n6 = 0;

	*skipped = 0;
	if (!f || !with_fib)
		return f;
	for (size_t i = 0; i < n; i++) {
		n4 += r[i].family == AF_INET;
		n6 += r[i].family == AF_INET6;
	}
	if (n) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			goto fail;
		memcpy(sorted, r, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), metric_desc);
	}
	if (fibs_create(f, n4, n6, gen) != 0)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (route_add(f, &sorted[i]) != 0)
			(*skipped)++;
	free(sorted);
	return f;
fail:
	free(sorted);
	tl_lanfib_free(f);
	return NULL;
}

int tl_lanfib_next_hop(const struct tl_lanfib *f, int family, const uint8_t *dst, struct tl_neigh_key *hop)
{
	uint64_t nh = TL_NH_CONNECTED;
	const uint8_t *via = dst;

	memset(hop, 0, sizeof(*hop));
	hop->family = (uint8_t)family;
	if (family == AF_INET) {
		if (f && f->fib4) {
			uint32_t ip = rte_be_to_cpu_32(tl_load32(dst));

			rte_fib_lookup_bulk(f->fib4, &ip, &nh, 1);
			if (nh >= TL_NH_GW0 && nh - TL_NH_GW0 < f->n_gw4)
				via = f->gw4[nh - TL_NH_GW0];
		}
		memcpy(hop->ip, via, 4);
	} else {
		if (f && f->fib6) {
			uint8_t ip[1][16];

			memcpy(ip[0], dst, 16);
			rte_fib6_lookup_bulk(f->fib6, TL_RTE_IP6(ip), &nh, 1);
			if (nh >= TL_NH_GW0 && nh - TL_NH_GW0 < f->n_gw6)
				via = f->gw6[nh - TL_NH_GW0];
		}
		memcpy(hop->ip, via, 16);
	}
	return nh == TL_NH_NONE ? -1 : 0;
}
