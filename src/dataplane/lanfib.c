/* Gateway mode, LAN side of the fast path: the route snapshot (build, lookup, free) and the
 * per-worker hold of packets whose next hop is being resolved. See lanfib.h for the model.
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
#include "dataplane/packet.h"
#include "dataplane/lcore.h"

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

/* ---- workers: output to the LAN port, holding while a next hop resolves ------------------ */

static bool mac_of(struct tl_worker *w, const struct tl_neigh_key *k, uint8_t mac[6])
{
	void *data;

	if (rte_hash_lookup_data(w->dp->neigh_table, k, &data) < 0)
		return false;
	tl_mac_unpack(mac, (uintptr_t)data);
	return true;
}

static void send_lan(struct tl_worker *w, struct rte_mbuf *m, const uint8_t mac[6], int family)
{
	if (tl_pkt_push_eth(m, mac, w->dp->port[TL_PORT_LAN].mac, family) != 0)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_malformed);
	tl_egress_enqueue(w, TL_PORT_LAN, m);
}

static struct tl_hold *hold_find(struct tl_worker *w, const struct tl_neigh_key *k)
{
	for (unsigned i = 0; i < w->n_hold; i++)
		if (!memcmp(&w->hold[i].key, k, sizeof(*k)))
			return &w->hold[i];
	return NULL;
}

/* One request per held next hop; a full ring is retried by tl_hold_poll. */
static void hold_ask(struct tl_worker *w, struct tl_hold *h)
{
	h->asked = rte_ring_mp_enqueue_elem(w->dp->neigh_req, &h->key, sizeof(h->key)) == 0;
	if (h->asked)
		tl_dp_kick_ctrl(w->dp);
}

static void hold_add(struct tl_worker *w, struct tl_hold *h, const struct tl_neigh_key *k, struct rte_mbuf *m)
{
	if (!h) {
		if (w->n_hold == TL_HOLD_HOPS)
			return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_neigh_hold_overflow);
		h = &w->hold[w->n_hold++];
		h->key = *k;
		h->until = w->now_ns + TL_HOLD_NS;
		h->n = 0;
		hold_ask(w, h);
	}
	if (h->n == TL_HOLD_PKTS)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_neigh_hold_overflow);
	h->m[h->n++] = m;
	w->cnt.held++;
}

void tl_lan_output(struct tl_worker *w, struct rte_mbuf *m, int family, const uint8_t *dst)
{
	const struct tl_port_info *lan = &w->dp->port[TL_PORT_LAN];
	const struct tl_lanfib *f;
	struct tl_neigh_key hop;
	struct tl_hold *h = NULL;
	uint8_t mac[6];

	if (lan->fixed_peer_mac)
		return send_lan(w, m, lan->peer_mac, family);
	f = atomic_load_explicit(&w->dp->lanfib, memory_order_acquire);
	if (tl_lanfib_next_hop(f, family, dst, &hop) != 0)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_lan_no_route);
	/* Behind packets already held for this next hop: order is kept. */
	if (w->n_hold)
		h = hold_find(w, &hop);
	if (!h && mac_of(w, &hop, mac))
		return send_lan(w, m, mac, family);
	hold_add(w, h, &hop, m);
}

static void hold_remove(struct tl_worker *w, unsigned i)
{
	w->cnt.held -= w->hold[i].n;
	w->hold[i] = w->hold[--w->n_hold];
}

void tl_hold_poll(struct tl_worker *w)
{
	uint8_t mac[6];

	for (unsigned i = 0; i < w->n_hold;) {
		struct tl_hold *h = &w->hold[i];

		if (mac_of(w, &h->key, mac)) {
			for (unsigned j = 0; j < h->n; j++)
				send_lan(w, h->m[j], mac, h->key.family);
		} else if (w->now_ns >= h->until) {
			for (unsigned j = 0; j < h->n; j++)
				tl_drop_rx(w, TL_PORT_WAN, h->m[j], TL_DROP_no_neighbour);
		} else {
			if (!h->asked)
				hold_ask(w, h);
			i++;
			continue;
		}
		hold_remove(w, i);
	}
}

void tl_hold_free(struct tl_worker *w)
{
	while (w->n_hold) {
		struct tl_hold *h = &w->hold[0];

		for (unsigned j = 0; j < h->n; j++)
			rte_pktmbuf_free(h->m[j]);
		hold_remove(w, 0);
	}
}
