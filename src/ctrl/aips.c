/* Allowed IPs owned in one place (aips.h): who owns a prefix, the routing table built from
 * every peer's prefixes and published to the workers, and the sinks that follow: host routes
 * (host mode) and the LAN XDP steering (ports.c). */
#include <errno.h>
#include <stdlib.h>

#include "ctrl/aips.h"
#include "ctrl/hostmode.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"

/* ---- ownership ----------------------------------------------------------------------------- */

struct tl_peer_ctrl *tl_aips_owner(struct tl_device *dev, const struct tl_prefix *p, const struct tl_peer_ctrl *self)
{
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &dev->peers, link)
		for (size_t i = 0; pc != self && i < pc->cfg.n_allowed_ips; i++)
			if (tl_prefix_eq(&pc->cfg.allowed_ips[i], p))
				return pc;
	return NULL;
}

static void aip_del_at(struct tl_peer_ctrl *pc, size_t i)
{
	pc->cfg.allowed_ips[i] = pc->cfg.allowed_ips[--pc->cfg.n_allowed_ips];
}

int tl_aips_take(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *p)
{
	struct tl_peer_ctrl *o;
	struct tl_prefix *a;

	TAILQ_FOREACH(o, &dev->peers, link)
		for (size_t i = 0; i < o->cfg.n_allowed_ips; i++)
			if (tl_prefix_eq(&o->cfg.allowed_ips[i], p)) {
				if (o == pc)
					return 0;
				aip_del_at(o, i);
				break;
			}
	a = realloc(pc->cfg.allowed_ips, (pc->cfg.n_allowed_ips + 1) * sizeof(*a));
	if (!a)
		return ENOMEM;
	a[pc->cfg.n_allowed_ips++] = *p;
	pc->cfg.allowed_ips = a;
	return 0;
}

/* ---- the routing table ------------------------------------------------------------------------ */

/* The routing entries of every peer but skip, for tl_table_build. */
static struct tl_route_entry *route_entries(struct tl_device *dev, const struct tl_peer_ctrl *skip, size_t *n)
{
	struct tl_route_entry *e;
	struct tl_peer_ctrl *pc;
	size_t total = 0, k = 0;

	TAILQ_FOREACH(pc, &dev->peers, link)
		if (pc != skip)
			total += pc->cfg.n_allowed_ips;
	e = calloc(total ? total : 1, sizeof(*e));
	if (!e)
		return NULL;
	TAILQ_FOREACH(pc, &dev->peers, link)
		for (size_t i = 0; pc != skip && i < pc->cfg.n_allowed_ips; i++, k++) {
			e[k].family = pc->cfg.allowed_ips[i].ip.family;
			memcpy(e[k].addr, pc->cfg.allowed_ips[i].ip.addr, 16);
			e[k].len = pc->cfg.allowed_ips[i].len;
			e[k].peer_id = pc->dp->id;
		}
	*n = total;
	return e;
}

unsigned tl_table_build_test_failures;

struct tl_table *tl_aips_table(struct tl_device *dev, const struct tl_peer_ctrl *skip)
{
	struct tl_route_entry *e;
	struct tl_peer_ctrl *pc;
	struct tl_table *t;
	size_t n = 0;

	if (tl_table_build_test_failures) {
		tl_table_build_test_failures--;
		return NULL;
	}
	e = route_entries(dev, skip, &n);
	if (!e)
		return NULL;
	t = tl_table_build(e, n, dev->table_gen++);
	free(e);
	if (t)
		TAILQ_FOREACH(pc, &dev->peers, link)
			if (pc != skip)
				t->peers[pc->dp->id] = pc->dp;
	return t;
}

/* The LAN port's XDP program steers exactly what the table routes. */
static void steer_all(struct tl_device *dev)
{
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &dev->peers, link)
		for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++)
			tl_port_steer(dev, &pc->cfg.allowed_ips[i], pc->dp->id, true);
}

void tl_aips_unsteer(struct tl_device *dev, const struct tl_peer_ctrl *pc)
{
	for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++)
		tl_port_steer(dev, &pc->cfg.allowed_ips[i], 0, false);
}

void tl_aips_swap(struct tl_device *dev, struct tl_table *t)
{
	struct tl_table *old = atomic_exchange_explicit(&dev->dp.table, t, memory_order_acq_rel);

	rte_rcu_qsbr_synchronize(dev->dp.qsbr, RTE_QSBR_THRID_INVALID);
	tl_table_free(old);
	steer_all(dev);
}

int tl_aips_publish(struct tl_device *dev)
{
	struct tl_table *t = tl_aips_table(dev, NULL);

	if (!t) {
		tl_log_err("cannot build the routing table (out of memory)");
		return -1;
	}
	tl_aips_swap(dev, t);
	return 0;
}

/* ---- allowed IPs that appeared or disappeared: host routes, LAN XDP steering --------------- */

static int prefix_cmp(const void *a, const void *b)
{
	const struct tl_prefix *x = a, *y = b;

	if (x->ip.family != y->ip.family)
		return x->ip.family - y->ip.family;
	if (x->len != y->len)
		return x->len - y->len;
	return memcmp(x->ip.addr, y->ip.addr, 16);
}

int tl_aips_list(struct tl_device *dev, struct tl_aips_list *l)
{
	struct tl_peer_ctrl *pc;
	size_t n = 0;

	TAILQ_FOREACH(pc, &dev->peers, link)
		n += pc->cfg.n_allowed_ips;
	l->p = calloc(n ? n : 1, sizeof(*l->p));
	l->n = 0;
	if (!l->p)
		return -1;
	TAILQ_FOREACH(pc, &dev->peers, link)
		for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++)
			l->p[l->n++] = pc->cfg.allowed_ips[i];
	qsort(l->p, l->n, sizeof(*l->p), prefix_cmp);
	return 0;
}

static bool prefix_in(const struct tl_aips_list *l, const struct tl_prefix *p)
{
	return bsearch(p, l->p, l->n, sizeof(*l->p), prefix_cmp) != NULL;
}

static void prefix_gone(struct tl_device *dev, const struct tl_prefix *p)
{
	if (dev->dp.host_mode)
		tl_host_route(dev, p, false);
	tl_port_steer(dev, p, 0, false);
}

void tl_aips_sync(struct tl_device *dev, const struct tl_aips_list *before)
{
	struct tl_aips_list after;

	if (tl_aips_list(dev, &after) != 0) {
		tl_log_err("allowed IPs: out of memory while updating host routes and steering");
		return;
	}
	for (size_t i = 0; i < before->n; i++)
		if (!prefix_in(&after, &before->p[i]))
			prefix_gone(dev, &before->p[i]);
	for (size_t i = 0; dev->dp.host_mode && i < after.n; i++)
		if (!prefix_in(before, &after.p[i]))
			tl_host_route(dev, &after.p[i], true);
	free(after.p);
}

void tl_aips_list_free(struct tl_aips_list *l)
{
	free(l->p);
	l->p = NULL;
	l->n = 0;
}
