/* Allowed IPs owned in one place (aips.h): the peers' lists, the routing table's two copies
 * changed prefix by prefix, and the sinks that follow: host routes (host mode) and the LAN
 * XDP steering (ports.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/aips.h"
#include "ctrl/hostmode.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "ctrl/stats.h"

/* One prefix that moved: from peer id `was` (where it was the pos-th of the list) to peer id
 * `now`, at the end of its list (TL_ROUTE_NONE: nobody). Or, with `saved`, the list of peer
 * `now` put in the order a replace gave (saved: the list before, n_saved prefixes). */
struct aips_change {
	struct tl_prefix p;
	uint32_t was, now, pos, n_saved;
	struct tl_prefix *saved;
};

struct tl_aips {
	struct tl_table *spare;         /* the copy the workers do not read: unpublished changes */
	bool spare_stale;               /* it is not published + log: built again before a change */
	struct tl_table_size size;      /* of both copies */
	struct aips_change *log;        /* changes since the last publish, in order */
	size_t n_log, cap_log;
	bool sinks;                     /* host routes and steering follow (tl_aips_sinks_start) */
	uint64_t builds;
};

unsigned tl_aips_test_failures;

static bool test_failure(void)
{
	if (!tl_aips_test_failures)
		return false;
	tl_aips_test_failures--;
	return true;
}

static struct tl_table *live(struct tl_device *dev)
{
	return atomic_load_explicit(&dev->dp.table, memory_order_relaxed);
}

static struct tl_peer_ctrl *peer_of(struct tl_device *dev, uint32_t id)
{
	struct tl_peer *p = id == TL_ROUTE_NONE ? NULL : tl_dp_peer(&dev->dp, id);

	return p ? p->ctrl : NULL;
}

/* ---- the peers' lists ----------------------------------------------------------------------- */

static int list_reserve(struct tl_peer_ctrl *pc, size_t more)
{
	size_t want = pc->cfg.n_allowed_ips + more, cap = pc->aips_cap ? pc->aips_cap : 1;
	struct tl_prefix *a;

	if (want <= pc->aips_cap)
		return 0;
	while (cap < want)
		cap *= 2;
	a = realloc(pc->cfg.allowed_ips, cap * sizeof(*a));
	if (!a)
		return ENOMEM;
	pc->cfg.allowed_ips = a;
	pc->aips_cap = (uint32_t)cap;
	return 0;
}

/* The lists keep the order the prefixes were added in, as kernel WireGuard lists them (a
 * prefix taken from another peer comes last; a replace gives the order asked). */

/* Within the room reserved: never allocates. */
static void list_insert(struct tl_peer_ctrl *pc, const struct tl_prefix *p, size_t at)
{
	struct tl_prefix *a = pc->cfg.allowed_ips;

	memmove(&a[at + 1], &a[at], (pc->cfg.n_allowed_ips - at) * sizeof(*a));
	a[at] = *p;
	pc->cfg.n_allowed_ips++;
}

static void list_del_at(struct tl_peer_ctrl *pc, size_t i)
{
	struct tl_prefix *a = pc->cfg.allowed_ips;

	memmove(&a[i], &a[i + 1], (--pc->cfg.n_allowed_ips - i) * sizeof(*a));
}

/* Its position, or SIZE_MAX (from the end: an undo finds the last one added at once). */
static size_t list_find(const struct tl_peer_ctrl *pc, const struct tl_prefix *p)
{
	for (size_t i = pc->cfg.n_allowed_ips; i-- > 0;)
		if (tl_prefix_eq(&pc->cfg.allowed_ips[i], p))
			return i;
	return SIZE_MAX;
}

/* ---- the copies ----------------------------------------------------------------------------- */

static int table_set(struct tl_table *t, const struct tl_prefix *p, uint32_t id)
{
	return id == TL_ROUTE_NONE ? tl_table_del(t, p->ip.family, p->ip.addr, p->len)
				   : tl_table_set(t, p->ip.family, p->ip.addr, p->len, id);
}

/* The spare's table of one family built whole, at the given size, from every peer's list
 * (what is published plus the log). The old one goes first: only the published copy and this
 * one are ever in memory. On failure the spare is stale. */
static int build(struct tl_device *dev, int family, const struct tl_table_size *size)
{
	struct tl_aips *a = dev->aips;
	struct tl_peer_ctrl *pc;

	a->builds++;
	if (tl_table_family_new(a->spare, family, size, dev->table_gen++) != 0)
		goto fail;
	TAILQ_FOREACH(pc, &dev->peers, link)
		for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++)
			if (pc->cfg.allowed_ips[i].ip.family == family &&
			    table_set(a->spare, &pc->cfg.allowed_ips[i], pc->dp->id) != 0)
				goto fail;
	return 0;
fail:
	a->spare_stale = true;
	return -1;
}

static int spare_ready(struct tl_device *dev)
{
	struct tl_aips *a = dev->aips;

	if (!a->spare_stale)
		return 0;
	if (build(dev, AF_INET, &a->size) != 0 || build(dev, AF_INET6, &a->size) != 0)
		return -1;
	a->spare_stale = false;
	return 0;
}

/* The spare's table of the family that did not fit, with twice the room for what ran out
 * (prefixes, or groups when the prefixes still had room); the published copy follows at the
 * next publish. */
static int spare_grow(struct tl_device *dev, int family)
{
	struct tl_aips *a = dev->aips;
	struct tl_table_size size = a->size;

	if (family == AF_INET && a->spare->n[0] + 1 >= size.routes4)
		size.routes4 *= 2;
	else if (family == AF_INET)
		size.tbl8_4 *= 2;
	else if (a->spare->n[1] + 1 >= size.rules6)
		size.rules6 *= 2;
	else
		size.tbl8_6 *= 2;
	if (build(dev, family, &size) != 0) {
		tl_log_err("routing table: cannot grow to %u IPv4 / %u IPv6 prefixes (out of memory)", size.routes4,
			   size.rules6);
		return -1;
	}
	tl_log_info("routing table: grown to %u IPv4 / %u IPv6 prefixes, %u / %u groups", size.routes4, size.rules6,
		    size.tbl8_4, size.tbl8_6);
	a->size = size;
	return 0;
}

static int log_reserve(struct tl_aips *a, size_t more)
{
	size_t cap = a->cap_log ? a->cap_log : 64;
	struct aips_change *l;

	if (a->n_log + more <= a->cap_log)
		return 0;
	while (cap < a->n_log + more)
		cap *= 2;
	l = realloc(a->log, cap * sizeof(*l));
	if (!l)
		return ENOMEM;
	a->log = l;
	a->cap_log = cap;
	return 0;
}

/* The log emptied: a publish or an abort is done with it. */
static void log_clear(struct tl_aips *a)
{
	for (size_t i = 0; i < a->n_log; i++)
		free(a->log[i].saved);
	a->n_log = 0;
}

/* ---- changes -------------------------------------------------------------------------------- */

struct tl_peer_ctrl *tl_aips_owner(struct tl_device *dev, const struct tl_prefix *p, const struct tl_peer_ctrl *self)
{
	struct tl_aips *a = dev->aips;
	/* A stale spare comes after a failure that emptied the log: the published copy is right. */
	struct tl_table *t = a->spare_stale ? live(dev) : a->spare;
	struct tl_peer_ctrl *o = peer_of(dev, tl_table_get(t, p->ip.family, p->ip.addr, p->len));

	return o == self ? NULL : o;
}

int tl_aips_take(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *p)
{
	struct tl_aips *a = dev->aips;
	size_t pos = 0;
	uint32_t was;
	int r;

	if (test_failure() || spare_ready(dev) != 0)
		return ENOMEM;
	was = tl_table_get(a->spare, p->ip.family, p->ip.addr, p->len);
	if (was == pc->dp->id)
		return 0;
	if (log_reserve(a, 1) != 0 || list_reserve(pc, 1) != 0)
		return ENOMEM;
	r = tl_table_set(a->spare, p->ip.family, p->ip.addr, p->len, pc->dp->id);
	for (int tries = 0; r == -ENOSPC && tries < 2 && spare_grow(dev, p->ip.family) == 0; tries++)
		r = tl_table_set(a->spare, p->ip.family, p->ip.addr, p->len, pc->dp->id);
	if (r != 0)
		return r == -EINVAL ? EINVAL : ENOMEM;
	if (was != TL_ROUTE_NONE && (pos = list_find(peer_of(dev, was), p)) != SIZE_MAX) {
		list_del_at(peer_of(dev, was), pos);
		tl_stats_touch(dev, peer_of(dev, was));
	}
	tl_stats_touch(dev, pc);
	list_insert(pc, p, pc->cfg.n_allowed_ips);
	a->log[a->n_log++] = (struct aips_change){ .p = *p, .was = was, .now = pc->dp->id, .pos = (uint32_t)pos };
	return 0;
}

/* The i-th prefix of pc out of the spare and logged (room in the log reserved); the caller
 * takes it out of the list. */
static void drop_log(struct tl_aips *a, struct tl_peer_ctrl *pc, size_t i)
{
	struct tl_prefix p = pc->cfg.allowed_ips[i];

	tl_table_del(a->spare, p.ip.family, p.ip.addr, p.len);
	a->log[a->n_log++] = (struct aips_change){ .p = p, .was = pc->dp->id, .now = TL_ROUTE_NONE, .pos = (uint32_t)i };
}

int tl_aips_clear(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	struct tl_aips *a = dev->aips;

	tl_stats_touch(dev, pc);                /* a peer being removed is cleared first */
	if (!pc->cfg.n_allowed_ips)
		return 0;
	if (test_failure() || spare_ready(dev) != 0 || log_reserve(a, pc->cfg.n_allowed_ips) != 0)
		return ENOMEM;
	while (pc->cfg.n_allowed_ips) {
		drop_log(a, pc, pc->cfg.n_allowed_ips - 1);
		pc->cfg.n_allowed_ips--;
	}
	return 0;
}

/* A prefix of the list a replace asks for, and where it first comes in it. */
struct kept {
	struct tl_prefix p;
	size_t at;
};

static int kept_cmp(const void *x, const void *y)
{
	const struct kept *a = x, *b = y;
	int c = tl_prefix_cmp(&a->p, &b->p);

	return c ? c : (a->at > b->at) - (a->at < b->at);
}

static int kept_at_cmp(const void *x, const void *y)
{
	const struct kept *a = x, *b = y;

	return (a->at > b->at) - (a->at < b->at);
}

int tl_aips_keep_only(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *keep, size_t n)
{
	struct tl_aips *a = dev->aips;
	size_t nl = pc->cfg.n_allowed_ips, u = 0, w = 0;
	struct kept *sorted, *order;
	struct tl_prefix *saved;
	bool in_order = true;

	if (!n)
		return tl_aips_clear(dev, pc);
	if (nl <= n && n == 1)
		return 0;                      /* it has taken the one it keeps: nothing else */
	sorted = malloc(n * sizeof(*sorted));
	order = malloc(nl * sizeof(*order));
	saved = malloc(nl * sizeof(*saved));
	if (test_failure() || !sorted || !order || !saved || spare_ready(dev) != 0 || log_reserve(a, nl + 1) != 0) {
		free(sorted);
		free(order);
		free(saved);
		return ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = (struct kept){ .p = keep[i], .at = i };
	qsort(sorted, n, sizeof(*sorted), kept_cmp);
	for (size_t i = 0; i < n; i++)         /* each prefix once, where it first comes */
		if (!u || tl_prefix_cmp(&sorted[u - 1].p, &sorted[i].p))
			sorted[u++] = sorted[i];
	/* The others out, logged from the last (an undo puts each back where it was); the list
	 * closed up in one pass. */
	for (size_t i = nl; i-- > 0;) {
		struct kept k = { .p = pc->cfg.allowed_ips[i] };
		const struct kept *f = bsearch(&k, sorted, u, sizeof(*sorted), tl_prefix_cmp);

		order[i] = (struct kept){ .p = k.p, .at = f ? f->at : SIZE_MAX };
		if (!f)
			drop_log(a, pc, i);
	}
	for (size_t i = 0; i < nl; i++)
		if (order[i].at != SIZE_MAX) {
			in_order &= !w || order[w - 1].at < order[i].at;
			order[w++] = order[i];
		}
	for (size_t i = 0; i < w; i++)
		pc->cfg.allowed_ips[i] = order[i].p;
	pc->cfg.n_allowed_ips = w;
	if (!in_order) {                       /* in the order asked, as a replace gives it */
		memcpy(saved, pc->cfg.allowed_ips, w * sizeof(*saved));
		qsort(order, w, sizeof(*order), kept_at_cmp);
		for (size_t i = 0; i < w; i++)
			pc->cfg.allowed_ips[i] = order[i].p;
		a->log[a->n_log++] = (struct aips_change){ .was = pc->dp->id, .now = pc->dp->id, .saved = saved,
							   .n_saved = (uint32_t)w };
		saved = NULL;
	}
	tl_stats_touch(dev, pc);
	free(sorted);
	free(order);
	free(saved);
	return 0;
}

/* ---- sinks: host routes, LAN steering ------------------------------------------------------- */

static void sink(struct tl_device *dev, const struct tl_prefix *p, uint32_t was, uint32_t now)
{
	if (now == TL_ROUTE_NONE) {
		if (dev->dp.host_mode)
			tl_host_route(dev, p, false);
		tl_port_steer(dev, p, 0, false);
		return;
	}
	if (was == TL_ROUTE_NONE && dev->dp.host_mode)
		tl_host_route(dev, p, true);
	tl_port_steer(dev, p, now, true);
}

/* Log positions ordered by prefix, then by position. */
static const struct aips_change *g_sort_log;

static int pos_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = tl_prefix_cmp(&g_sort_log[x].p, &g_sort_log[y].p);

	return c ? c : (x > y) - (x < y);
}

/* What changed for each prefix over the whole log (a prefix dropped and taken back by the
 * same peer changes nothing); without memory to sort, change by change, which ends the same. */
static void sinks_follow(struct tl_device *dev)
{
	struct tl_aips *a = dev->aips;
	uint32_t *pos = malloc(a->n_log * sizeof(*pos));
	size_t i, j, n = 0;

	if (!pos) {
		for (i = 0; i < a->n_log; i++)
			if (!a->log[i].saved)
				sink(dev, &a->log[i].p, a->log[i].was, a->log[i].now);
		return;
	}
	for (i = 0; i < a->n_log; i++)
		if (!a->log[i].saved)          /* a list put in order moves no prefix */
			pos[n++] = (uint32_t)i;
	g_sort_log = a->log;
	qsort(pos, n, sizeof(*pos), pos_cmp);
	for (i = 0; i < n; i = j) {
		const struct aips_change *first = &a->log[pos[i]];

		for (j = i + 1; j < n && !tl_prefix_cmp(&a->log[pos[j]].p, &first->p); j++)
			;
		if (first->was != a->log[pos[j - 1]].now)
			sink(dev, &first->p, first->was, a->log[pos[j - 1]].now);
	}
	free(pos);
}

void tl_aips_sinks_start(struct tl_device *dev)
{
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &dev->peers, link)
		for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++)
			sink(dev, &pc->cfg.allowed_ips[i], TL_ROUTE_NONE, pc->dp->id);
	dev->aips->sinks = true;
}

/* ---- publish, abort ------------------------------------------------------------------------- */

static bool family_differs(const struct tl_table_size *a, const struct tl_table_size *b, int family)
{
	return family == AF_INET ? a->routes4 != b->routes4 || a->tbl8_4 != b->tbl8_4
				 : a->rules6 != b->rules6 || a->tbl8_6 != b->tbl8_6;
}

static int table_publish(struct tl_device *dev)
{
	struct tl_aips *a = dev->aips;
	struct tl_table *old;
	bool again[2];

	if (!a->n_log)
		return 0;
	if (a->spare_stale && spare_ready(dev) != 0) {     /* not after a failure handled as such */
		tl_log_err("routing table: cannot be built (out of memory): the change is undone");
		tl_aips_abort(dev);
		return -1;
	}
	old = atomic_exchange_explicit(&dev->dp.table, a->spare, memory_order_acq_rel);
	rte_rcu_qsbr_synchronize(dev->dp.qsbr, RTE_QSBR_THRID_INVALID);
	/* No worker reads the old copy now: it takes the same changes and becomes the spare; a
	 * family whose table grew meanwhile is built again at the new size. */
	a->spare = old;
	again[0] = family_differs(&old->size, &a->size, AF_INET);
	again[1] = family_differs(&old->size, &a->size, AF_INET6);
	for (size_t i = 0; i < a->n_log; i++) {
		int v6 = a->log[i].p.ip.family == AF_INET6;

		if (!a->log[i].saved && !again[v6] && table_set(old, &a->log[i].p, a->log[i].now) != 0)
			again[v6] = true;
	}
	if ((again[0] && build(dev, AF_INET, &a->size) != 0) || (again[1] && build(dev, AF_INET6, &a->size) != 0))
		tl_log_err("routing table: the spare copy cannot be built (out of memory); the next change tries again");
	if (a->sinks)
		sinks_follow(dev);
	log_clear(a);
	return 0;
}

int tl_aips_publish(struct tl_device *dev)
{
	int rc = table_publish(dev);

	tl_stats_publish(dev);         /* what the observers read: what is now committed */
	return rc;
}

void tl_aips_abort(struct tl_device *dev)
{
	struct tl_aips *a = dev->aips;

	for (size_t i = a->n_log; i-- > 0;) {
		const struct aips_change *c = &a->log[i];
		struct tl_peer_ctrl *now = peer_of(dev, c->now), *was = peer_of(dev, c->was);
		size_t at;

		/* Backwards, every list is as it was at that step: the room is there, and a prefix
		 * goes back where it was. */
		if (c->saved) {
			if (now)
				memcpy(now->cfg.allowed_ips, c->saved, c->n_saved * sizeof(*c->saved));
			continue;
		}
		if (now && (at = list_find(now, &c->p)) != SIZE_MAX)
			list_del_at(now, at);
		if (was)
			list_insert(was, &c->p, RTE_MIN((size_t)c->pos, (size_t)was->cfg.n_allowed_ips));
		if (!a->spare_stale && table_set(a->spare, &c->p, c->was) != 0)
			a->spare_stale = true;
	}
	log_clear(a);
}

/* ---- the device's ----------------------------------------------------------------------------- */

int tl_aips_init(struct tl_device *dev)
{
	struct tl_aips *a = calloc(1, sizeof(*a));
	size_t n4 = 0, n6 = 0;
	struct tl_table *t;

	if (!a || tl_stats_init(dev) != 0) {
		free(a);
		return -1;
	}
	dev->aips = a;
	for (size_t i = 0; i < dev->cfg->n_peers; i++)
		for (size_t j = 0; j < dev->cfg->peers[i].n_allowed_ips; j++)
			dev->cfg->peers[i].allowed_ips[j].ip.family == AF_INET ? n4++ : n6++;
	a->size = tl_table_size_for(n4, n6);
	t = tl_table_new(&a->size, dev->table_gen++);
	a->spare = tl_table_new(&a->size, dev->table_gen++);
	a->builds = 4;
	if (!t || !a->spare) {
		tl_table_free(t);
		return -1;
	}
	atomic_store(&dev->dp.table, t);
	return 0;
}

void tl_aips_fini(struct tl_device *dev)
{
	tl_stats_fini(dev);
	if (!dev->aips)
		return;
	tl_table_free(dev->aips->spare);
	log_clear(dev->aips);
	free(dev->aips->log);
	free(dev->aips);
	dev->aips = NULL;
}

uint64_t tl_aips_builds(struct tl_device *dev)
{
	return dev->aips->builds;
}
