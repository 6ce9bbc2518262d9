/* A device change, prepared whole, then committed whole (devchange.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/devchange.h"
#include "ctrl/log.h"
#include "ctrl/peer_ops.h"
#include "ctrl/ports.h"
#include "dataplane/worker.h"

/* ---- the egress queues -------------------------------------------------------------------- */

static bool queue_part(const struct tl_dev_change *c, int role)
{
	return c->has_aqm[role] || c->has_shaper[role];
}

/* Prepare: the parameters meet every rule of this dataplane (those tl_worker_queue_set and
 * the worker check again). */
static int queues_check(struct tl_device *dev, const struct tl_dev_change *c, struct tl_dev_refusal *r)
{
	for (int role = 0; role < TL_PORT_MAX; role++) {
		const char *why;

		if (!queue_part(c, role))
			continue;
		if (!dev->dp.n_workers) {
			*r = (struct tl_dev_refusal){ TL_DEV_PART_QUEUE, role, false, "port: runs no queue" };
			return EINVAL;
		}
		if (c->has_aqm[role] && (why = tl_queue_check(&dev->dp, role, &c->aqm[role], NULL)) != NULL) {
			*r = (struct tl_dev_refusal){ TL_DEV_PART_QUEUE, role, false, why };
			return EINVAL;
		}
		if (c->has_shaper[role] && (why = tl_queue_check(&dev->dp, role, NULL, &c->shaper[role])) != NULL) {
			*r = (struct tl_dev_refusal){ TL_DEV_PART_QUEUE, role, true, why };
			return EINVAL;
		}
	}
	return 0;
}

/* The queue parameters each worker had, to give back. */
struct queues_old {
	struct tl_aqm_params aqm[TL_PORT_MAX][TL_MAX_WORKERS];
	struct tl_shaper_params sh[TL_PORT_MAX][TL_MAX_WORKERS];
};

static void queues_undo(struct tl_device *dev, const struct tl_dev_change *c, const struct queues_old *o,
			int upto_role, unsigned upto_worker)
{
	for (int role = 0; role <= upto_role && role < TL_PORT_MAX; role++) {
		unsigned n = role < upto_role ? dev->dp.n_workers : upto_worker;

		if (!queue_part(c, role))
			continue;
		for (unsigned i = 0; i < n; i++) {
			const char *why = tl_worker_queue_set(&dev->workers[i], role,
							      c->has_aqm[role] ? &o->aqm[role][i] : NULL,
							      c->has_shaper[role] ? &o->sh[role][i] : NULL);

			if (why)
				tl_log_err("%s queue of worker %u keeps the refused change's parameters: %s",
					   tl_port_names[role], i, why);
		}
	}
}

/* The workers take the parameters: the one step a worker may still refuse (a change of
 * flows while its queue holds packets, or no memory for the flows); then those that took
 * them get their old ones back. */
static int queues_apply(struct tl_device *dev, const struct tl_dev_change *c, struct tl_dev_refusal *r)
{
	struct queues_old *o = NULL;
	struct tl_queue_snapshot *s;

	if (!queue_part(c, TL_PORT_WAN) && !queue_part(c, TL_PORT_LAN))
		return 0;
	o = malloc(sizeof(*o));
	s = malloc(sizeof(*s));
	if (!o || !s) {
		free(o);
		free(s);
		*r = (struct tl_dev_refusal){ TL_DEV_PART_QUEUE, TL_PORT_WAN, false, "out of memory" };
		return ENOMEM;
	}
	for (int role = 0; role < TL_PORT_MAX; role++)
		for (unsigned i = 0; queue_part(c, role) && i < dev->dp.n_workers; i++) {
			tl_worker_queue_read(&dev->workers[i], role, s);
			o->aqm[role][i] = s->params;
			o->sh[role][i] = s->shaper;
		}
	free(s);
	for (int role = 0; role < TL_PORT_MAX; role++)
		for (unsigned i = 0; queue_part(c, role) && i < dev->dp.n_workers; i++) {
			const char *why = tl_worker_queue_set(&dev->workers[i], role, c->has_aqm[role] ? &c->aqm[role] : NULL,
							      c->has_shaper[role] ? &c->shaper[role] : NULL);

			if (!why)
				continue;
			tl_log_info("%s queue of worker %u refused the change: %s", tl_port_names[role], i, why);
			queues_undo(dev, c, o, role, i);
			free(o);
			*r = (struct tl_dev_refusal){ TL_DEV_PART_QUEUE, role, false, why };
			return EINVAL;
		}
	free(o);
	return 0;
}

void tl_dev_queue_current(struct tl_device *dev, int role, struct tl_aqm_params *aqm, struct tl_shaper_params *sh)
{
	struct tl_queue_snapshot *s = malloc(sizeof(*s));

	*aqm = tl_aqm_params_default();
	*sh = (struct tl_shaper_params){ 0 };
	if (!s || !dev->dp.n_workers) {
		free(s);
		return;
	}
	tl_worker_queue_read(&dev->workers[0], role, s);
	*aqm = s->params;
	*sh = s->shaper;
	free(s);
}

/* ---- the change ------------------------------------------------------------------------- */

int tl_dev_change(struct tl_device *dev, const struct tl_dev_change *c, struct tl_dev_refusal *r)
{
	struct tl_port_move *move = NULL;
	struct tl_peer_txn *peers = NULL;
	bool peers_part = c->priv || c->replace_peers || c->n_ops;
	int err;

	memset(r, 0, sizeof(*r));
	/* prepare: each part checked, and bound or built aside */
	err = queues_check(dev, c, r);
	if (!err && c->has_port) {
		move = malloc(sizeof(*move));
		err = move ? tl_listen_port_prepare(dev, c->listen_port, move) : ENOMEM;
		if (err) {
			free(move);
			move = NULL;
			r->part = TL_DEV_PART_PORT;
		}
	}
	if (!err && peers_part && (err = tl_peer_ops_prepare(dev, c->ops, c->n_ops, c->priv, c->replace_peers, &peers)))
		r->part = TL_DEV_PART_PEERS;
	if (!err)
		err = queues_apply(dev, c, r);
	if (err) {
		if (peers)
			tl_peer_ops_abort(peers);
		if (move)
			tl_listen_port_abort(dev, move);
		free(move);
		tl_log_info("device change refused (%s): nothing changed", strerror(err));
		return err;
	}
	/* commit: nothing here fails */
	if (move)
		tl_listen_port_commit(dev, move);
	if (peers)
		tl_peer_ops_commit(peers);
	free(move);
	return 0;
}

/* ---- a reload's change -------------------------------------------------------------------- */

/* The configuration that runs: the daemon's, with what changed since it was loaded. Its
 * peers are borrowed from the live ones; free the array only. */
static int running_config(struct tl_device *dev, struct tl_config *rc)
{
	struct tl_peer_ctrl *pc;
	size_t i = 0;

	*rc = *dev->cfg;
	rc->peers = calloc(dev->n_peers + 1, sizeof(*rc->peers));
	if (!rc->peers)
		return -1;
	TAILQ_FOREACH(pc, &dev->peers, link)
		rc->peers[i++] = pc->cfg;
	rc->n_peers = i;
	memcpy(rc->private_key, dev->id.priv, TL_KEY_LEN);
	rc->listen_port = tl_dp_listen_port(&dev->dp);
	rc->mtu = dev->dp.mtu;
	if (dev->ports[TL_PORT_WAN].started)
		tl_dev_queue_current(dev, TL_PORT_WAN, &rc->wan.aqm, &rc->wan.shaper);
	if (dev->ports[TL_PORT_LAN].started)
		tl_dev_queue_current(dev, TL_PORT_LAN, &rc->lan.aqm, &rc->lan.shaper);
	return 0;
}

int tl_dev_reload_change(struct tl_device *dev, const struct tl_config *nc, struct tl_config_diff *d,
			 struct tl_dev_change *c)
{
	struct tl_config run;
	int rc;

	memset(d, 0, sizeof(*d));
	memset(c, 0, sizeof(*c));
	if (running_config(dev, &run) < 0)
		return -1;
	rc = tl_config_diff(&run, nc, d);
	free(run.peers);
	tl_wipe(run.private_key, sizeof(run.private_key));
	if (rc < 0)
		return -1;
	c->has_port = d->listen_port;
	c->listen_port = nc->listen_port;
	c->ops = d->ops;
	c->n_ops = d->n_ops;
	for (int role = 0; role < TL_PORT_MAX; role++) {
		const struct tl_cfg_port *np = role == TL_PORT_WAN ? &nc->wan : &nc->lan;
		bool changed = role == TL_PORT_WAN ? d->queue_wan : d->queue_lan;

		if (!changed || !dev->ports[role].started || !dev->dp.n_workers)
			continue;
		c->has_aqm[role] = c->has_shaper[role] = true;
		c->aqm[role] = np->aqm;
		c->shaper[role] = np->shaper;
	}
	return 0;
}
