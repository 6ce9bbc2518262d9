/* The write model (peer_ops.h): a list of peer operations applied to the device, whichever
 * front-end built it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctrl/aips.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/session.h"

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
	tl_log_info("private key changed, every peer needs a new handshake");
}

static int remove_all_peers(struct tl_device *dev)
{
	struct tl_peer_ctrl *pc;

	while ((pc = TAILQ_FIRST(&dev->peers)))
		if (tl_peer_remove(dev, pc) != 0)
			return ENOMEM;
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
		err = tl_aips_take(dev, pc, &op->aips[i]);
	return err;
}

int tl_peer_ops_apply(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, const uint8_t *priv,
		      bool replace_peers)
{
	struct tl_aips_list before;
	uint8_t own[TL_KEY_LEN];
	int err = 0;

	if (tl_aips_list(dev, &before) != 0)
		return ENOMEM;
	own_public_key(dev, priv, own);
	if (priv)
		apply_private_key(dev, priv);
	if (replace_peers)
		err = remove_all_peers(dev);
	for (size_t i = 0; !err && i < n; i++)
		err = apply_peer(dev, &ops[i], own);
	if (tl_aips_publish(dev) != 0 && !err)
		err = ENOMEM;
	tl_aips_sync(dev, &before);
	tl_aips_list_free(&before);
	if (err)
		tl_log_err("peers: %s; applied in part", strerror(err));
	return err;
}
