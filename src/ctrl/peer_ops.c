/* The write model (peer_ops.h): a list of peer operations applied to the device, whichever
 * front-end built it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parfor.h"
#include "ctrl/aips.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/session.h"
#include "ctrl/stats.h"
#include "ctrl/timers.h"

/* A new handshake state for the peer (new identity): sessions are gone, the greatest
 * timestamp seen from the peer is kept (replay protection). */
static void peer_reinit(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	uint8_t ts[TL_TIMESTAMP_LEN];

	tl_index_drop_handshake(dev, pc);
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
	TAILQ_FOREACH(pc, &dev->peers, link) {
		if (!pc->fresh)             /* made for the new key already */
			peer_reinit(dev, pc);
		tl_device_progress(dev);    /* an X25519 each: seconds on a hub */
	}
	tl_log_info("private key changed, every peer needs a new handshake");
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
	if (op->has_keepalive) {
		pc->cfg.persistent_keepalive = op->keepalive;
		tl_timers_wake(dev, pc);
	}
	if (op->has_name) {
		pthread_mutex_lock(&dev->lock);     /* telemetry reads the label */
		snprintf(pc->cfg.name, sizeof(pc->cfg.name), "%s", op->name);
		pthread_mutex_unlock(&dev->lock);
	}
}

/* A request being applied: everything that can fail is done first and can be undone (peers
 * created, peers taken out of the key registry, allowed IPs moved in the lists and the spare
 * routing table); what cannot fail follows once all of it succeeded. */
struct txn {
	struct tl_device *dev;
	struct tl_identity id;             /* the key new peers are made for */
	struct tl_peer_ctrl **op_pc;       /* the peer each operation changes, or NULL */
	struct tl_peer_ctrl **fresh, **doomed;
	size_t n_fresh, n_doomed, cap_fresh, cap_doomed;
};

static int push(struct tl_peer_ctrl ***arr, size_t *n, size_t *cap, struct tl_peer_ctrl *pc)
{
	struct tl_peer_ctrl **a = *arr;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;

		a = realloc(*arr, c * sizeof(*a));
		if (!a)
			return ENOMEM;
		*arr = a;
		*cap = c;
	}
	a[(*n)++] = pc;
	return 0;
}

static int doom(struct txn *t, struct tl_peer_ctrl *pc)
{
	int err = push(&t->doomed, &t->n_doomed, &t->cap_doomed, pc);

	tl_device_progress(t->dev);

	if (!err)
		err = tl_aips_clear(t->dev, pc);
	if (err) {
		if (t->n_doomed && t->doomed[t->n_doomed - 1] == pc)
			t->n_doomed--;
		return err;
	}
	tl_peer_unregister(t->dev, pc);
	pc->doomed = true;
	return 0;
}

static int prepare_op(struct txn *t, size_t i, const struct tl_peer_op *op)
{
	struct tl_device *dev = t->dev;
	struct tl_peer_ctrl *pc = tl_peer_find(dev, op->pub);
	int err = 0;

	tl_device_progress(dev);
	if (!memcmp(op->pub, t->id.pub, TL_KEY_LEN))
		return 0;
	if (op->remove)
		return pc ? doom(t, pc) : 0;
	if (!pc && op->update_only)
		return 0;
	if (!pc) {
		if (push(&t->fresh, &t->n_fresh, &t->cap_fresh, NULL) != 0)
			return ENOMEM;
		pc = tl_peer_new(dev, op->pub, NULL);        /* handshake state: hs_init_one at commit */
		if (!pc) {
			t->n_fresh--;
			return ENOMEM;
		}
		pc->fresh = true;
		t->fresh[t->n_fresh - 1] = pc;
	}
	t->op_pc[i] = pc;
	for (size_t k = 0; !err && k < op->n_aips; k++)
		err = tl_aips_take(dev, pc, &op->aips[k]);
	if (!err && op->replace_aips)
		err = tl_aips_keep_only(dev, pc, op->aips, op->n_aips);
	return err;
}

/* The doomed peers that existed before the request (a peer it created and removed again is
 * in the fresh list as well). */
static size_t doomed_old(struct txn *t)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n_doomed; i++)
		if (!t->doomed[i]->fresh)
			t->doomed[k++] = t->doomed[i];
	return k;
}

static void rollback(struct txn *t)
{
	size_t n = doomed_old(t);

	tl_aips_abort(t->dev);
	for (size_t i = 0; i < t->n_fresh; i++)
		tl_peer_discard(t->dev, t->fresh[i]);
	for (size_t i = 0; i < n; i++) {
		t->doomed[i]->doomed = false;
		if (tl_peer_reregister(t->dev, t->doomed[i]) != 0)
			tl_log_err("peer %u: cannot be found by its key any more (out of memory)", t->doomed[i]->dp->id);
	}
}

/* The handshake state of every peer the request created: an X25519 each (DH of our key and
 * theirs, precomputed as the kernel does), 45 us on this machine, so a hub's 100 000 new peers
 * share it out over the handshake threads. Nothing else runs meanwhile: the control thread
 * takes its share and waits, and no worker can reach a peer that is not published. It goes
 * in slices of HS_SLICE peers, with a progress point (the watchdog) after each. */
#define HS_SLICE 1024

struct hs_slice {
	struct txn *t;
	size_t base;
};

static void hs_init_one(void *arg, size_t i)
{
	const struct hs_slice *s = arg;
	struct tl_peer_ctrl *pc = s->t->fresh[s->base + i];

	tl_handshake_init(&pc->hs, &s->t->id, pc->cfg.public_key, NULL);
}

static void commit(struct txn *t, const struct tl_peer_op *ops, size_t n, const uint8_t *priv)
{
	struct tl_device *dev = t->dev;
	size_t n_old;

	for (size_t at = 0; at < t->n_fresh; at += HS_SLICE) {
		struct hs_slice s = { .t = t, .base = at };

		tl_parfor_run(dev->hs_pool, t->n_fresh - at < HS_SLICE ? t->n_fresh - at : HS_SLICE, hs_init_one, &s);
		tl_device_progress(dev);
	}
	if (priv)
		apply_private_key(dev, priv);
	for (size_t i = 0; i < n; i++) {
		if (t->op_pc[i] && !t->op_pc[i]->doomed) {
			peer_update(dev, t->op_pc[i], &ops[i]);
			tl_stats_touch(dev, t->op_pc[i]);   /* the read model's next publish */
		}
		tl_device_progress(dev);
	}
	tl_aips_publish(dev);
	n_old = doomed_old(t);
	for (size_t i = 0; i < t->n_fresh; i++) {
		if (t->fresh[i]->doomed)
			tl_peer_discard(dev, t->fresh[i]);   /* no published route ever led to it */
		else
			t->fresh[i]->fresh = false;
	}
	tl_peers_destroy(dev, t->doomed, n_old);
}

struct tl_peer_txn {
	struct txn t;
	const struct tl_peer_op *ops;
	size_t n;
	const uint8_t *priv;
};

static void txn_free(struct tl_peer_txn *x)
{
	tl_identity_clear(&x->t.id);
	free(x->t.op_pc);
	free(x->t.fresh);
	free(x->t.doomed);
	free(x);
}

int tl_peer_ops_prepare(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, const uint8_t *priv,
			bool replace_peers, struct tl_peer_txn **out)
{
	struct tl_peer_txn *x = calloc(1, sizeof(*x));
	struct tl_peer_ctrl *pc;
	int err = 0;

	*out = NULL;
	if (!x || !(x->t.op_pc = calloc(n ? n : 1, sizeof(*x->t.op_pc)))) {
		free(x);
		return ENOMEM;
	}
	x->t.dev = dev;
	x->ops = ops;
	x->n = n;
	x->priv = priv;
	if (priv)
		tl_identity_set(&x->t.id, priv);
	else
		x->t.id = dev->id;
	if (replace_peers)
		TAILQ_FOREACH(pc, &dev->peers, link)
			if (!pc->doomed && (err = doom(&x->t, pc)) != 0)
				break;
	for (size_t i = 0; !err && i < n; i++)
		err = prepare_op(&x->t, i, &ops[i]);
	if (err) {
		rollback(&x->t);
		tl_log_err("peers: %s; nothing changed", strerror(err));
		txn_free(x);
		return err;
	}
	*out = x;
	return 0;
}

void tl_peer_ops_commit(struct tl_peer_txn *x)
{
	commit(&x->t, x->ops, x->n, x->priv);
	txn_free(x);
}

void tl_peer_ops_abort(struct tl_peer_txn *x)
{
	rollback(&x->t);
	txn_free(x);
}

int tl_peer_ops_apply(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, const uint8_t *priv,
		      bool replace_peers)
{
	struct tl_peer_txn *x;
	int err = tl_peer_ops_prepare(dev, ops, n, priv, replace_peers, &x);

	if (!err)
		tl_peer_ops_commit(x);
	return err;
}
