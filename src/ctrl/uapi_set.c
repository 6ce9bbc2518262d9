/* UAPI set=1: the request is parsed and checked as a whole into a list of operations
 * first (uapi_parse.c), so that a bad line changes nothing; then the operations are applied
 * in order, the routing table is published once, and the kernel routes (host mode) and the
 * LAN XDP steering of allowed IPs that appeared or disappeared are brought in line. The
 * applying half (tl_peer_ops_apply) is shared with the control API (ctlapi_ops.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/device.h"
#include "ctrl/hostmode.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/ports.h"
#include "ctrl/session.h"
#include "ctrl/uapi.h"

/* ---- applying --------------------------------------------------------------------------- */

/* Our public key after the request: a peer with it is ignored, as WireGuard does. */
static void own_public_key(struct tl_device *dev, const uint8_t *priv, uint8_t pub[TL_KEY_LEN])
{
	struct tl_identity id;

	if (!priv) {
		memcpy(pub, dev->id.pub, TL_KEY_LEN);
		return;
	}
	tl_identity_set(&id, priv);
	memcpy(pub, id.pub, TL_KEY_LEN);
	tl_identity_clear(&id);
}

/* A new handshake state for the peer (new identity): sessions are gone, the greatest
 * timestamp seen from the peer is kept (replay protection). */
static void peer_reinit(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	uint8_t ts[TL_TIMESTAMP_LEN];

	if (pc->hs.local_index && pc->hs.state != TL_HS_ZEROED)
		tl_index_free(dev, pc->hs.local_index);
	memcpy(ts, pc->hs.latest_timestamp, sizeof(ts));
	tl_handshake_init(&pc->hs, &dev->id, pc->cfg.public_key, pc->cfg.has_psk ? pc->cfg.psk : NULL);
	memcpy(pc->hs.latest_timestamp, ts, sizeof(ts));
	pc->hs_first_attempt_ns = 0;
	tl_session_clear_all(dev, pc);
}

static void apply_private_key(struct tl_device *dev, const uint8_t priv[TL_KEY_LEN])
{
	struct tl_peer_ctrl *pc;

	if (dev->id.has_key && !memcmp(dev->id.priv, priv, TL_KEY_LEN))
		return;
	pthread_mutex_lock(&dev->lock);     /* telemetry reads our public key */
	tl_identity_set(&dev->id, priv);
	pthread_mutex_unlock(&dev->lock);
	memcpy(dev->cfg->private_key, priv, TL_KEY_LEN);
	TAILQ_FOREACH(pc, &dev->peers, link)
		peer_reinit(dev, pc);
	tl_log_info("uapi: private key changed, every peer needs a new handshake");
}

static int remove_all_peers(struct tl_device *dev)
{
	struct tl_peer_ctrl *pc;

	while ((pc = TAILQ_FIRST(&dev->peers)))
		if (tl_peer_remove(dev, pc) != 0)
			return ENOMEM;
	return 0;
}

static void aip_del_at(struct tl_peer_ctrl *pc, size_t i)
{
	pc->cfg.allowed_ips[i] = pc->cfg.allowed_ips[--pc->cfg.n_allowed_ips];
}

/* An allowed IP belongs to one peer: taking it moves it away from any other. */
static int aip_take(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *p)
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

static bool endpoint_is(struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa)
{
	struct tl_endpoint ep;

	tl_endpoint_read(pc->dp, &ep);
	return ep.family == sa->ip.family && ep.port == sa->port && !memcmp(ep.ip, sa->ip.addr, 16);
}

static void peer_update(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_peer_op *op)
{
	if (op->has_psk) {
		pc->cfg.has_psk = !tl_is_zero(op->psk, TL_KEY_LEN);
		memcpy(pc->cfg.psk, op->psk, TL_KEY_LEN);
		memcpy(pc->hs.psk, op->psk, TL_KEY_LEN);   /* next handshake; sessions stay */
	}
	if (op->has_endpoint) {
		pc->cfg.has_endpoint = true;
		pc->cfg.endpoint = op->endpoint;
		if (!endpoint_is(pc, &op->endpoint))    /* keep a resolved next hop */
			tl_peer_set_endpoint(dev, pc, &op->endpoint, NULL);
	}
	if (op->has_keepalive)
		pc->cfg.persistent_keepalive = op->keepalive;
	if (op->has_name) {
		pthread_mutex_lock(&dev->lock);     /* telemetry reads the label */
		snprintf(pc->cfg.name, sizeof(pc->cfg.name), "%s", op->name);
		pthread_mutex_unlock(&dev->lock);
	}
}

static int apply_peer(struct tl_device *dev, const struct tl_peer_op *op, const uint8_t own[TL_KEY_LEN])
{
	struct tl_peer_ctrl *pc = tl_peer_find(dev, op->pub);
	int err = 0;

	if (!memcmp(op->pub, own, TL_KEY_LEN))
		return 0;
	if (op->remove)
		return pc && tl_peer_remove(dev, pc) != 0 ? ENOMEM : 0;
	if (!pc && op->update_only)
		return 0;
	if (!pc) {
		struct tl_cfg_peer cfg = { 0 };

		memcpy(cfg.public_key, op->pub, TL_KEY_LEN);
		if (tl_peer_add(dev, &cfg) != 0 || !(pc = tl_peer_find(dev, op->pub)))
			return ENOMEM;
	}
	peer_update(dev, pc, op);
	if (op->replace_aips)
		pc->cfg.n_allowed_ips = 0;
	for (size_t i = 0; !err && i < op->n_aips; i++)
		err = aip_take(dev, pc, &op->aips[i]);
	return err;
}

/* ---- allowed IPs that appeared or disappeared: kernel routes, LAN XDP steering ------------ */

struct prefix_list {
	struct tl_prefix *p;
	size_t n;
};

static int prefix_cmp(const void *a, const void *b)
{
	const struct tl_prefix *x = a, *y = b;

	if (x->ip.family != y->ip.family)
		return x->ip.family - y->ip.family;
	if (x->len != y->len)
		return x->len - y->len;
	return memcmp(x->ip.addr, y->ip.addr, 16);
}

static int prefixes_of(struct tl_device *dev, struct prefix_list *l)
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

static bool prefix_in(const struct prefix_list *l, const struct tl_prefix *p)
{
	return bsearch(p, l->p, l->n, sizeof(*l->p), prefix_cmp) != NULL;
}

static void prefix_gone(struct tl_device *dev, const struct tl_prefix *p)
{
	struct tl_port_ctl *lan = &dev->ports[TL_PORT_LAN];

	if (dev->dp.host_mode)
		tl_host_route(dev, p, false);
	if (lan->af_xdp && lan->maps.routes4_fd >= 0)
		tl_xdp_route_del(&lan->maps, p->ip.family, p->ip.addr, p->len);
}

static void routes_sync(struct tl_device *dev, const struct prefix_list *before)
{
	struct prefix_list after;

	if (prefixes_of(dev, &after) != 0) {
		tl_log_err("uapi: out of memory while updating routes");
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

int tl_peer_ops_apply(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, const uint8_t *priv,
		      bool replace_peers)
{
	struct prefix_list before;
	uint8_t own[TL_KEY_LEN];
	int err = 0;

	if (prefixes_of(dev, &before) != 0)
		return ENOMEM;
	own_public_key(dev, priv, own);
	if (priv)
		apply_private_key(dev, priv);
	if (replace_peers)
		err = remove_all_peers(dev);
	for (size_t i = 0; !err && i < n; i++)
		err = apply_peer(dev, &ops[i], own);
	if (tl_table_publish(dev) != 0 && !err)
		err = ENOMEM;
	routes_sync(dev, &before);
	free(before.p);
	if (err)
		tl_log_err("peers: %s; applied in part", strerror(err));
	return err;
}

static bool dev_has_peer(void *ctx, const uint8_t pub[TL_KEY_LEN])
{
	return tl_peer_find(ctx, pub) != NULL;
}

int tl_uapi_set(struct tl_device *dev, char *body)
{
	struct tl_uapi_set_req r = { 0 };
	struct tl_uapi_set_view v = { .listen_port = tl_dp_listen_port(&dev->dp), .n_peers = dev->n_peers,
				       .max_peers = TL_MAX_PEERS, .has_peer = dev_has_peer, .ctx = dev };
	int err = tl_uapi_set_parse(&r, body);

	if (!err)
		err = tl_uapi_set_check(&r, &v);
	if (!err && r.has_port)
		err = tl_listen_port_set(dev, r.port);      /* first: if the port is taken, nothing changes */
	if (!err)
		err = tl_peer_ops_apply(dev, r.peers, r.n_peers, r.has_priv ? r.priv : NULL, r.replace_peers);
	else
		tl_log_info("uapi: set rejected (%s), nothing changed", strerror(err));
	tl_uapi_set_req_free(&r);
	return err;
}
