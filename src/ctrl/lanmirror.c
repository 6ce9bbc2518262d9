/* Gateway mode: the control plane's mirror of the kernel's view of the LAN interface, as
 * routers built on DPDK keep one.
 *
 * - Routes: the unicast routes of the main table whose output interface is the LAN port
 *   (connected prefixes and routes via a gateway; of a multipath route the first hop). They
 *   live here in an rte_hash keyed by (family, prefix, length, metric); every change marks
 *   the snapshot dirty, and at most every TL_LM_BUILD_NS a new dataplane/lanfib.h snapshot
 *   (rte_fib + rte_fib6 + gateway addresses) is built and swapped in; the old one is freed
 *   after an RCU grace period of the workers. rte_fib of DPDK 22.11 promises nothing about
 *   lookups during add/delete, hence build-and-swap.
 * - Neighbours: the kernel's entries on the LAN interface that carry a MAC (REACHABLE,
 *   STALE, DELAY, PROBE, PERMANENT, NOARP) go into dp->neigh_table keyed by address;
 *   FAILED/INCOMPLETE entries and deletions take them out. Static `neighbours:` of the
 *   configuration are loaded at start and never overridden. The table has a fixed size;
 *   what does not fit is counted (neigh_full), and its packets wait and then count as
 *   no_neighbour.
 * - Kept current by rtnetlink notifications (kernel/rtmon.h: the route and neighbour groups,
 *   the socket in the control loop), subscribed before the initial dump so that nothing is
 *   missed (replays are idempotent). A notification overrun (ENOBUFS) triggers a full dump
 *   again.
 * - Resolution: a worker holding packets for a next hop asks once through dp->neigh_req;
 *   requests are deduplicated here (one kernel request per next hop per TL_LM_ASK_NS) and
 *   handed to the kernel as a managed neighbour entry, which the kernel resolves and keeps
 *   fresh; the entry reaches the table by notification and the workers are kicked. A
 *   managed entry that fails (no such host) is deleted again, so that the kernel's table
 *   holds the hosts that exist, not every address the tunnel sent to.
 * Nothing here polls per entry or per destination: the netlink traffic follows changes in
 * the kernel and new next hops only. */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <rte_malloc.h>

#include "ctrl/device.h"
#include "ctrl/lanmirror.h"
#include "ctrl/log.h"
#include "ctrl/neigh.h"
#include "kernel/netlink.h"
#include "kernel/rtmon.h"
#include "dataplane/lanfib.h"

#define TL_LM_ROUTES_MAX 16384
#define TL_LM_PENDING 256
#define TL_LM_ASK_NS (1000ull * 1000000ull)
#define TL_LM_BUILD_NS (50ull * 1000000ull)
#define TL_LM_RCVBUF (4 << 20)
#define TL_LM_READS_PER_POLL 64

struct tl_lm_route_key {
	uint8_t family, plen, pad[2];
	uint32_t metric;
	uint8_t dst[16];
};

struct tl_lanmirror {
	struct tl_rtmon *mon;             /* the kernel's routes and neighbours as they change */
	struct tl_evitem ev_item;         /* its socket in the control loop */
	int ifindex;
	struct rte_hash *routes;          /* tl_lm_route_key -> struct tl_lanfib_route * */
	bool dirty, resync;
	uint64_t build_after_ns, gen;
	struct {
		struct tl_neigh_key key;
		uint64_t until;
	} pend[TL_LM_PENDING];
	unsigned n_pend;
	struct tl_lanmirror_stats st;
};

/* ---- the mirror ----------------------------------------------------------------------------- */

static void route_forget(struct tl_lanmirror *c, const struct tl_lm_route_key *k)
{
	struct tl_lanfib_route *old;

	if (rte_hash_lookup_data(c->routes, k, (void **)&old) < 0)
		return;
	rte_hash_del_key(c->routes, k);
	free(old);
	c->dirty = true;
}

static void route_keep(struct tl_lanmirror *c, const struct tl_lm_route_key *k, const struct tl_lanfib_route *r)
{
	struct tl_lanfib_route *e;

	if (rte_hash_lookup_data(c->routes, k, (void **)&e) >= 0) {
		*e = *r;
		c->dirty = true;
		return;
	}
	e = malloc(sizeof(*e));
	if (!e || rte_hash_add_key_data(c->routes, k, e) != 0) {
		free(e);
		c->st.routes_full++;
		return;
	}
	*e = *r;
	c->dirty = true;
}

static void route_event(void *ctx, const struct tl_rt_route *r)
{
	struct tl_lanmirror *c = ((struct tl_device *)ctx)->lanmirror;
	struct tl_lanfib_route e = { .family = r->family, .plen = r->plen, .has_gw = r->has_gw, .metric = r->metric };
	struct tl_lm_route_key k = { .family = r->family, .plen = r->plen, .metric = r->metric };

	memcpy(e.dst, r->dst, 16);
	memcpy(e.gw, r->gw, 16);
	memcpy(k.dst, r->dst, 16);
	if (r->add && r->oif == (uint32_t)c->ifindex)
		route_keep(c, &k, &e);
	else if (r->oif == (uint32_t)c->ifindex || r->replace)
		route_forget(c, &k);   /* deleted, or replaced by a route off the LAN port */
}

static void kick_workers(struct tl_device *dev)
{
	for (unsigned w = 0; w < dev->dp.n_workers; w++)
		if (atomic_load_explicit(&dev->workers[w].running, memory_order_acquire))
			tl_worker_kick(&dev->workers[w]);
}

static void neigh_set(struct tl_device *dev, const struct tl_neigh_key *k, const uint8_t mac[6])
{
	struct tl_lanmirror *c = dev->lanmirror;
	void *old;

	if (rte_hash_lookup_data(dev->dp.neigh_table, k, &old) >= 0 && (uintptr_t)old == tl_mac_pack(mac))
		return;
	if (rte_hash_add_key_data(dev->dp.neigh_table, k, (void *)tl_mac_pack(mac)) != 0) {
		c->st.neigh_full++;
		return;
	}
	kick_workers(dev);   /* packets may be held for it */
}

static void neigh_event(void *ctx, const struct tl_rt_neigh *n)
{
	struct tl_device *dev = ctx;
	struct tl_neigh_key k = { .family = n->family };

	if (n->ifindex != dev->lanmirror->ifindex)
		return;
	memcpy(k.ip, n->ip, 16);
	if (tl_neigh_static(dev, TL_PORT_LAN, k.family, k.ip, NULL))
		return;
	if (n->usable) {
		neigh_set(dev, &k, n->mac);
		return;
	}
	rte_hash_del_key(dev->dp.neigh_table, &k);
	/* A managed entry we asked for that failed: no such host. The kernel would keep
	 * probing it for ever; only hosts that answer stay in its table. */
	if (n->failed_managed && tl_nl_neigh_del_managed(dev->nl, dev->lanmirror->ifindex, k.family, k.ip) == 0)
		dev->lanmirror->st.failed_removed++;
}

static const struct tl_rtmon_ops mirror_ops = { .route = route_event, .neigh = neigh_event };

/* ---- dumps -------------------------------------------------------------------------------- */

static void routes_clear(struct tl_lanmirror *c)
{
	const void *k;
	void *data;
	uint32_t it = 0;

	while (rte_hash_iterate(c->routes, &k, &data, &it) >= 0)
		free(data);
	rte_hash_reset(c->routes);
	c->dirty = true;
}

/* Routes and neighbours of the LAN interface, from scratch. */
static int dump_all(struct tl_device *dev)
{
	routes_clear(dev->lanmirror);
	return tl_rtmon_dump(dev->lanmirror->mon, &dev->lanmirror->st.dumps);
}

/* ---- the snapshot ------------------------------------------------------------------------- */

static int publish(struct tl_device *dev)
{
	struct tl_lanmirror *c = dev->lanmirror;
	uint32_t n = rte_hash_count(c->routes), i = 0, it = 0;
	struct tl_lanfib_route *all = calloc(n ? n : 1, sizeof(*all));
	struct tl_lanfib *f, *old;
	const void *k;
	void *data;
	uint64_t skipped;

	if (!all)
		return -ENOMEM;
	while (i < n && rte_hash_iterate(c->routes, &k, &data, &it) >= 0)
		all[i++] = *(struct tl_lanfib_route *)data;
	f = tl_lanfib_build(all, i, c->ifindex > 0, ++c->gen, &skipped);
	free(all);
	if (!f)
		return -ENOMEM;
	c->st.routes_skipped = skipped;
	c->st.routes4 = f->n_routes4;
	c->st.routes6 = f->n_routes6;
	c->st.gateways4 = f->n_gw4;
	c->st.gateways6 = f->n_gw6;
	c->st.builds++;
	old = atomic_exchange_explicit(&dev->dp.lanfib, f, memory_order_acq_rel);
	if (old) {
		rte_rcu_qsbr_synchronize(dev->dp.qsbr, RTE_QSBR_THRID_INVALID);
		tl_lanfib_free(old);
	}
	c->dirty = false;
	return 0;
}

/* ---- requests from the workers ------------------------------------------------------------ */

/* true if k was asked for recently; otherwise remembers it as asked now. */
static bool asked_recently(struct tl_lanmirror *c, const struct tl_neigh_key *k, uint64_t now)
{
	unsigned oldest = 0;

	for (unsigned i = 0; i < c->n_pend; i++) {
		if (!memcmp(&c->pend[i].key, k, sizeof(*k))) {
			if (now < c->pend[i].until)
				return true;
			c->pend[i].until = now + TL_LM_ASK_NS;
			return false;
		}
		if (c->pend[i].until < c->pend[oldest].until)
			oldest = i;
	}
	if (c->n_pend < TL_LM_PENDING)
		oldest = c->n_pend++;
	c->pend[oldest].key = *k;
	c->pend[oldest].until = now + TL_LM_ASK_NS;
	return false;
}

static void resolve(struct tl_device *dev, const struct tl_neigh_key *k)
{
	struct tl_lanmirror *c = dev->lanmirror;
	uint8_t mac[6];

	if (tl_neigh_static(dev, TL_PORT_LAN, k->family, k->ip, mac))
		return neigh_set(dev, k, mac);
	if (c->ifindex <= 0)
		return;
	c->st.resolve_requests++;
	tl_nl_neigh_resolve(dev->nl, c->ifindex, k->family, k->ip);
	/* Already resolved in the kernel (no notification will come): take it now. */
	if (tl_nl_neigh_get(dev->nl, c->ifindex, k->family, k->ip, mac) == 1)
		neigh_set(dev, k, mac);
}

static unsigned serve_requests(struct tl_device *dev, uint64_t now)
{
	struct tl_neigh_key k;
	unsigned n = 0;

	while (rte_ring_sc_dequeue_elem(dev->dp.neigh_req, &k, sizeof(k)) == 0) {
		n++;
		if (rte_hash_lookup(dev->dp.neigh_table, &k) >= 0 || asked_recently(dev->lanmirror, &k, now))
			continue;
		resolve(dev, &k);
	}
	return n;
}

/* ---- notifications ------------------------------------------------------------------------ */

static unsigned read_events(struct tl_device *dev)
{
	struct tl_lanmirror *c = dev->lanmirror;
	bool overrun = false;
	unsigned n = c->mon ? tl_rtmon_read(c->mon, TL_LM_READS_PER_POLL, &overrun) : 0;

	c->st.events += n - overrun;
	if (overrun) {
		c->resync = true;      /* notifications were lost: dump again */
		c->st.overruns++;
	}
	return n;
}

unsigned tl_lanmirror_poll(struct tl_device *dev, uint64_t now)
{
	struct tl_lanmirror *c = dev->lanmirror;
	unsigned n;

	if (!c)
		return 0;
	n = read_events(dev) + serve_requests(dev, now);
	if (c->resync) {
		c->resync = false;
		c->st.resyncs++;
		if (dump_all(dev) != 0)
			c->resync = true;
	}
	if (c->dirty && !c->build_after_ns)
		c->build_after_ns = now + TL_LM_BUILD_NS;
	if (c->dirty && now >= c->build_after_ns && publish(dev) == 0)
		c->build_after_ns = 0;
	return n;
}

bool tl_lanmirror_pending(const struct tl_device *dev)
{
	return dev->lanmirror && (dev->lanmirror->dirty || dev->lanmirror->resync);
}

static void lanmirror_event(void *arg, uint32_t events)
{
	(void)events;
	tl_lanmirror_poll(arg, tl_now_ns());
}

/* ---- setup -------------------------------------------------------------------------------- */

static void statics_load(struct tl_device *dev)
{
	for (size_t i = 0; i < dev->cfg->n_neighbours; i++) {
		const struct tl_cfg_neighbour *n = &dev->cfg->neighbours[i];
		struct tl_neigh_key k = { .family = (uint8_t)n->ip.family };

		if (n->on_wan)
			continue;
		memcpy(k.ip, n->ip.addr, n->ip.family == AF_INET ? 4 : 16);
		neigh_set(dev, &k, n->mac);
	}
}

int tl_lanmirror_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct rte_hash_parameters p = {
		.name = "tl_lanmirror_routes",
		.entries = TL_LM_ROUTES_MAX,
		.key_len = sizeof(struct tl_lm_route_key),
		.socket_id = (int)rte_socket_id(),
	};
	struct tl_lanmirror *c = calloc(1, sizeof(*c));
	int rc;

	dev->lanmirror = c;
	if (c)
		c->ev_item.fd = -1;
	if (!c || !(c->routes = rte_hash_create(&p))) {
		snprintf(err, errlen, "LAN routes: cannot allocate");
		return -1;
	}
	c->ifindex = dev->ports[TL_PORT_LAN].ifindex;
	statics_load(dev);
	if (c->ifindex > 0) {
		c->mon = tl_rtmon_open(&mirror_ops, dev, TL_LM_RCVBUF);
		rc = c->mon ? 0 : -errno;
		if (!rc && dev->loop && tl_evloop_add(dev->loop, &c->ev_item, tl_rtmon_fd(c->mon), EPOLLIN, lanmirror_event, dev) != 0)
			rc = -errno;
		if (!rc)
			rc = dump_all(dev);
		if (rc) {
			snprintf(err, errlen, "LAN routes and neighbours (rtnetlink): %s", strerror(-rc));
			return -1;
		}
	}
	if (publish(dev) != 0) {
		snprintf(err, errlen, "LAN routes: cannot build the route table");
		return -1;
	}
	return 0;
}

void tl_lanmirror_close(struct tl_device *dev)
{
	struct tl_lanmirror *c = dev->lanmirror;

	if (!c)
		return;
	if (dev->loop)
		tl_evloop_del(dev->loop, &c->ev_item);
	tl_rtmon_close(c->mon);
	if (c->routes) {
		routes_clear(c);
		rte_hash_free(c->routes);
	}
	free(c);
	dev->lanmirror = NULL;
}

void tl_lanmirror_stats_get(const struct tl_device *dev, struct tl_lanmirror_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (dev->lanmirror)
		*st = dev->lanmirror->st;
	st->neighbours = dev->dp.neigh_table ? (uint64_t)rte_hash_count(dev->dp.neigh_table) : 0;
	st->netlink_requests = dev->nl ? tl_nl_requests(dev->nl) : 0;
}
