/* The difference between two configurations (config_diff.h) and the peer operations that
 * make one peer another (peer_op.h). */
#include "config/config_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- peer operations ------------------------------------------------------------------------ */

void tl_peer_op_add(struct tl_peer_op *op, const struct tl_cfg_peer *f)
{
	memset(op, 0, sizeof(*op));
	memcpy(op->pub, f->public_key, TL_KEY_LEN);
	op->has_psk = f->has_psk;
	memcpy(op->psk, f->psk, TL_KEY_LEN);
	op->has_endpoint = f->has_endpoint;
	op->endpoint = f->endpoint;
	op->has_keepalive = true;
	op->keepalive = f->persistent_keepalive;
	op->has_name = f->name[0] != 0;
	snprintf(op->name, sizeof(op->name), "%s", f->name);
	op->replace_aips = true;
	op->aips = f->allowed_ips;
	op->n_aips = f->n_allowed_ips;
}

static bool prefix_in(const struct tl_prefix *p, const struct tl_prefix *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (tl_prefix_eq(p, &set[i]))
			return true;
	return false;
}

/* The same allowed IPs, in any order. */
static bool aips_eq(const struct tl_cfg_peer *a, const struct tl_cfg_peer *b)
{
	if (a->n_allowed_ips != b->n_allowed_ips)
		return false;
	for (size_t i = 0; i < a->n_allowed_ips; i++)
		if (!prefix_in(&a->allowed_ips[i], b->allowed_ips, b->n_allowed_ips))
			return false;
	return true;
}

bool tl_peer_op_update(struct tl_peer_op *op, const struct tl_cfg_peer *c, const struct tl_cfg_peer *f)
{
	static const uint8_t zero[TL_KEY_LEN];

	memset(op, 0, sizeof(*op));
	memcpy(op->pub, f->public_key, TL_KEY_LEN);
	op->update_only = true;
	if (c->has_psk != f->has_psk || (f->has_psk && memcmp(c->psk, f->psk, TL_KEY_LEN))) {
		op->has_psk = true;
		memcpy(op->psk, f->has_psk ? f->psk : zero, TL_KEY_LEN);
	}
	if (f->has_endpoint && (!c->has_endpoint || !tl_sockaddr_eq(&c->endpoint, &f->endpoint))) {
		op->has_endpoint = true;
		op->endpoint = f->endpoint;
	}
	if (c->persistent_keepalive != f->persistent_keepalive) {
		op->has_keepalive = true;
		op->keepalive = f->persistent_keepalive;
	}
	if (strcmp(c->name, f->name)) {
		op->has_name = true;
		snprintf(op->name, sizeof(op->name), "%s", f->name);
	}
	if (!aips_eq(c, f)) {
		op->replace_aips = true;
		op->aips = f->allowed_ips;
		op->n_aips = f->n_allowed_ips;
	}
	return op->has_psk || op->has_endpoint || op->has_keepalive || op->has_name || op->replace_aips;
}

/* ---- keys that need a restart --------------------------------------------------------------- */

static bool port_static_eq(const struct tl_cfg_port *a, const struct tl_cfg_port *b)
{
	return a->present == b->present && !strcmp(a->iface, b->iface) && a->driver == b->driver &&
	       !strcmp(a->devargs, b->devargs) && a->queues == b->queues && a->zero_copy == b->zero_copy;
}

static bool neighbours_eq(const struct tl_config *a, const struct tl_config *b)
{
	if (a->n_neighbours != b->n_neighbours)
		return false;
	for (size_t i = 0; i < a->n_neighbours; i++)
		if (!tl_ip_eq(&a->neighbours[i].ip, &b->neighbours[i].ip) ||
		    memcmp(a->neighbours[i].mac, b->neighbours[i].mac, 6) ||
		    a->neighbours[i].on_wan != b->neighbours[i].on_wan)
			return false;
	return true;
}

static bool timers_eq(const struct tl_cfg_timers *a, const struct tl_cfg_timers *b)
{
	return a->rekey_after_time == b->rekey_after_time && a->reject_after_time == b->reject_after_time &&
	       a->rekey_attempt_time == b->rekey_attempt_time && a->rekey_timeout == b->rekey_timeout &&
	       a->keepalive_timeout == b->keepalive_timeout && a->rekey_after_messages == b->rekey_after_messages &&
	       a->reject_after_messages == b->reject_after_messages;
}

static bool eal_eq(const struct tl_config *a, const struct tl_config *b)
{
	if (a->n_eal_args != b->n_eal_args)
		return false;
	for (size_t i = 0; i < a->n_eal_args; i++)
		if (strcmp(a->eal_args[i], b->eal_args[i]))
			return false;
	return true;
}

static bool addresses_eq(const struct tl_config *a, const struct tl_config *b)
{
	if (a->n_addresses != b->n_addresses)
		return false;
	for (size_t i = 0; i < a->n_addresses; i++)
		if (!tl_prefix_eq(&a->addresses[i], &b->addresses[i]))
			return false;
	return true;
}

static const char *restart_key(const struct tl_config *oc, const struct tl_config *nc)
{
	if (strcmp(nc->name, oc->name))
		return "name";
	if (nc->mode != oc->mode)
		return "mode";
	if (memcmp(nc->private_key, oc->private_key, TL_KEY_LEN))
		return "private_key";
	if (nc->mtu != oc->mtu)
		return "mtu";
	if (!addresses_eq(nc, oc))
		return "addresses";
	if (nc->workers != oc->workers)
		return "workers";
	if (nc->handshake_threads != oc->handshake_threads)
		return "handshake_threads";
	if (nc->staged_packets != oc->staged_packets)
		return "staged_packets";
	if (!port_static_eq(&nc->wan, &oc->wan))
		return "ports.wan";
	if (!port_static_eq(&nc->lan, &oc->lan))
		return "ports.lan";
	if (!neighbours_eq(nc, oc))
		return "neighbours";
	if (!timers_eq(&nc->timers, &oc->timers))
		return "timers";
	if (!eal_eq(nc, oc))
		return "eal";
	if (nc->metrics.enabled != oc->metrics.enabled || !tl_sockaddr_eq(&nc->metrics.listen, &oc->metrics.listen) ||
	    nc->metrics.peer_series_max != oc->metrics.peer_series_max)
		return "metrics";
	return NULL;
}

/* ---- the difference ------------------------------------------------------------------------- */

/* A configuration's peers sorted by public key: a reload of a hub's 100 000 peers matches
 * them in n log n, not n^2. */
struct key_index {
	const struct tl_cfg_peer **p;
	size_t n;
};

static int key_cmp(const void *a, const void *b)
{
	return memcmp((*(const struct tl_cfg_peer *const *)a)->public_key,
		      (*(const struct tl_cfg_peer *const *)b)->public_key, TL_KEY_LEN);
}

static int index_make(struct key_index *x, const struct tl_config *c)
{
	x->n = c->n_peers;
	x->p = calloc(x->n ? x->n : 1, sizeof(*x->p));
	if (!x->p)
		return -1;
	for (size_t i = 0; i < x->n; i++)
		x->p[i] = &c->peers[i];
	qsort(x->p, x->n, sizeof(*x->p), key_cmp);
	return 0;
}

static const struct tl_cfg_peer *peer_find(const struct key_index *x, const uint8_t pub[TL_KEY_LEN])
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(x->p[mid]->public_key, pub, TL_KEY_LEN);

		if (!c)
			return x->p[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool queue_changed(const struct tl_cfg_port *o, const struct tl_cfg_port *n)
{
	const struct tl_aqm_params *a = &o->aqm, *b = &n->aqm;

	if (!n->present)
		return false;
	return a->target_us != b->target_us || a->interval_us != b->interval_us || a->quantum != b->quantum ||
	       a->flows != b->flows || a->limit != b->limit || a->memory_limit != b->memory_limit ||
	       a->ecn != b->ecn || a->rtt_us != b->rtt_us || a->l4s_us != b->l4s_us ||
	       a->flow_rtt_pct != b->flow_rtt_pct || a->quantum_fast != b->quantum_fast || o->shaper.rate_bps != n->shaper.rate_bps ||
	       o->shaper.burst_bytes != n->shaper.burst_bytes;
}

int tl_config_diff(const struct tl_config *oc, const struct tl_config *nc, struct tl_config_diff *d)
{
	struct key_index ox = { 0 }, nx = { 0 };

	memset(d, 0, sizeof(*d));
	d->restart_key = restart_key(oc, nc);
	if (d->restart_key)
		return 0;
	d->ops = calloc(oc->n_peers + nc->n_peers + 1, sizeof(*d->ops));
	if (!d->ops || index_make(&ox, oc) != 0 || index_make(&nx, nc) != 0) {
		free(ox.p);
		free(d->ops);
		d->ops = NULL;
		return -1;
	}
	for (size_t i = 0; i < oc->n_peers; i++)
		if (!peer_find(&nx, oc->peers[i].public_key)) {
			struct tl_peer_op *op = &d->ops[d->n_ops++];

			memcpy(op->pub, oc->peers[i].public_key, TL_KEY_LEN);
			op->remove = true;
			d->n_remove++;
		}
	for (size_t i = 0; i < oc->n_peers; i++) {
		const struct tl_cfg_peer *f = peer_find(&nx, oc->peers[i].public_key);

		if (f && tl_peer_op_update(&d->ops[d->n_ops], &oc->peers[i], f)) {
			d->n_ops++;
			d->n_update++;
		}
	}
	for (size_t i = 0; i < nc->n_peers; i++)
		if (!peer_find(&ox, nc->peers[i].public_key)) {
			tl_peer_op_add(&d->ops[d->n_ops++], &nc->peers[i]);
			d->n_add++;
		}
	d->queue_wan = queue_changed(&oc->wan, &nc->wan);
	d->queue_lan = queue_changed(&oc->lan, &nc->lan);
	d->listen_port = oc->listen_port != nc->listen_port;
	free(ox.p);
	free(nx.p);
	return 0;
}

void tl_config_diff_free(struct tl_config_diff *d)
{
	if (d->ops)
		explicit_bzero(d->ops, (d->n_ops + 1) * sizeof(*d->ops));
	free(d->ops);
	memset(d, 0, sizeof(*d));
}
