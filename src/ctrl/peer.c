/* Peers: the registry (public key -> peer, peer ids, the dataplane's id -> peer map),
 * creation, removal, endpoints. Nothing here costs more than the peer in question: a hub's
 * hundred thousand peers are found by hash, and a removed peer's id is reused. Their allowed
 * IPs and the routing table built from them: aips.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_jhash.h>
#include <rte_malloc.h>

#include "ctrl/aips.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/send.h"
#include "ctrl/session.h"
#include "ctrl/timers.h"

#define TL_PEER_KEYS_MIN 1024

/* ---- the registry -------------------------------------------------------------------------- */

int tl_peers_init(struct tl_device *dev)
{
	char name[RTE_HASH_NAMESIZE];

	TAILQ_INIT(&dev->active);
	dev->peer_keys_cap = TL_PEER_KEYS_MIN;
	snprintf(name, sizeof(name), "tl_peers%" PRIu64, dev->dp.name_gen++);
	dev->peer_keys = tl_dp_hash_new(name, dev->peer_keys_cap, TL_KEY_LEN, false);
	return dev->peer_keys ? 0 : -1;
}

void tl_peers_fini(struct tl_device *dev)
{
	rte_hash_free(dev->peer_keys);
	free(dev->free_ids);
	dev->peer_keys = NULL;
	dev->free_ids = NULL;
	dev->n_free_ids = dev->cap_free_ids = dev->next_id = 0;
}

struct tl_peer_ctrl *tl_peer_find(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN])
{
	uint32_t key[TL_KEY_LEN / 4];   /* rte_jhash reads the key as 32-bit words: aligned */
	void *pc;

	memcpy(key, pub, TL_KEY_LEN);
	return rte_hash_lookup_data(dev->peer_keys, key, &pc) >= 0 ? pc : NULL;
}

static int key_add(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	if (tl_dp_hash_crowded(dev->peer_keys, dev->peer_keys_cap) &&
	    tl_dp_hash_double(&dev->peer_keys, &dev->peer_keys_cap, "tl_peers", &dev->dp.name_gen, TL_KEY_LEN) != 0)
		return -1;
	return rte_hash_add_key_data(dev->peer_keys, pc->cfg.public_key, pc) == 0 ? 0 : -1;
}

/* A free id, with its slot in the dataplane's map; UINT32_MAX when none (out of memory, or
 * TL_MAX_PEERS taken). */
static uint32_t id_take(struct tl_device *dev)
{
	uint32_t id;

	if (dev->n_free_ids)
		return dev->free_ids[--dev->n_free_ids];
	if (dev->next_id >= TL_MAX_PEERS || tl_dp_peers_reserve(&dev->dp, dev->next_id) != 0)
		return UINT32_MAX;
	id = dev->next_id++;
	return id;
}

/* The id's slot is already clear and no worker holds the peer. */
static void id_give(struct tl_device *dev, uint32_t id)
{
	uint32_t *ids;

	if (dev->n_free_ids == dev->cap_free_ids) {
		uint32_t cap = dev->cap_free_ids ? 2 * dev->cap_free_ids : 256;

		ids = realloc(dev->free_ids, cap * sizeof(*ids));
		if (!ids)
			return;   /* the id is lost for this run: a few bytes, never a wrong peer */
		dev->free_ids = ids;
		dev->cap_free_ids = cap;
	}
	dev->free_ids[dev->n_free_ids++] = id;
}

static void slot_set(struct tl_device *dev, uint32_t id, struct tl_peer *p)
{
	struct tl_peer_map *m = atomic_load(&dev->dp.peers);

	atomic_store_explicit(&m->slot[id], p, memory_order_release);
}

/* ---- one peer ------------------------------------------------------------------------------- */

void tl_peer_set_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			  const uint8_t *mac)
{
	tl_peer_learn_endpoint(dev, pc, sa, mac, NULL);
}

void tl_peer_learn_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			    const uint8_t *mac, const uint8_t *local)
{
	struct tl_peer *p = pc->dp;

	if (!mac && dev->dp.port[TL_PORT_WAN].fixed_peer_mac)
		mac = dev->dp.port[TL_PORT_WAN].peer_mac;      /* a udp port: the kernel routes */
	rte_seqlock_write_lock(&p->ep_lock);
	p->ep.family = sa->ip.family;
	memcpy(p->ep.ip, sa->ip.addr, sizeof(p->ep.ip));
	p->ep.port = sa->port;
	p->ep.mac_valid = mac != NULL;
	if (mac)
		memcpy(p->ep.mac, mac, 6);
	p->ep.has_local = local != NULL;
	memset(p->ep.local, 0, sizeof(p->ep.local));
	if (local)
		memcpy(p->ep.local, local, sa->ip.family == AF_INET ? 4 : 16);
	rte_seqlock_write_unlock(&p->ep_lock);
	if (!mac)
		pc->ep_resolve_ns = 0;   /* resolve at once */
	tl_timers_wake(dev, pc);         /* a resolution, a persistent keepalive */
}

struct tl_peer_ctrl *tl_peer_new(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN], const struct tl_identity *id)
{
	struct tl_peer_ctrl *pc = calloc(1, sizeof(*pc));
	uint32_t pid;

	if (!pc)
		return NULL;
	memcpy(pc->cfg.public_key, pub, TL_KEY_LEN);
	pc->dp = rte_zmalloc("tl_peer", sizeof(*pc->dp), RTE_CACHE_LINE_SIZE);
	if (!pc->dp || key_add(dev, pc) != 0)
		goto fail;
	pid = id_take(dev);
	if (pid == UINT32_MAX) {
		rte_hash_del_key(dev->peer_keys, pub);
		goto fail;
	}
	pc->dp->id = pid;
	pc->dp->ctrl = pc;
	rte_seqlock_init(&pc->dp->ep_lock);
	if (id)
		tl_handshake_init(&pc->hs, id, pub, NULL);
	slot_set(dev, pid, pc->dp);     /* no route leads to it yet */
	pthread_mutex_lock(&dev->lock);
	TAILQ_INSERT_TAIL(&dev->peers, pc, link);
	dev->n_peers++;
	pthread_mutex_unlock(&dev->lock);
	return pc;
fail:
	rte_free(pc->dp);
	free(pc);
	return NULL;
}

void tl_peer_unregister(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	rte_hash_del_key(dev->peer_keys, pc->cfg.public_key);
}

int tl_peer_reregister(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	return rte_hash_add_key_data(dev->peer_keys, pc->cfg.public_key, pc) == 0 ? 0 : -1;
}

/* What a peer holds, wiped and freed; the caller made sure nothing leads to it any more. */
static void peer_free(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	tl_timers_forget(dev, pc);
	pthread_mutex_lock(&dev->lock);
	TAILQ_REMOVE(&dev->peers, pc, link);
	dev->n_peers--;
	pthread_mutex_unlock(&dev->lock);
	id_give(dev, pc->dp->id);
	rte_free(pc->dp);
	tl_handshake_clear(&pc->hs);
	tl_wipe(&pc->hs, sizeof(pc->hs));
	tl_wipe(pc->cfg.psk, sizeof(pc->cfg.psk));
	free(pc->cfg.allowed_ips);
	free(pc);
}

void tl_peer_discard(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	slot_set(dev, pc->dp->id, NULL);   /* never routed: no worker saw it */
	rte_hash_del_key(dev->peer_keys, pc->cfg.public_key);
	peer_free(dev, pc);
}

void tl_peers_destroy(struct tl_device *dev, struct tl_peer_ctrl *const *pcs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tl_peer_ctrl *pc = pcs[i];

		if (!pc->doomed)
			tl_peer_unregister(dev, pc);
		slot_set(dev, pc->dp->id, NULL);
		tl_session_clear_all(dev, pc);
		tl_index_drop_peer(dev, pc);
		tl_device_progress(dev);
	}
	if (!n)
		return;
	/* After this no worker holds them: the routing table without them is published, their
	 * slots and keypairs are gone (one grace period for all of them, which wipes and frees
	 * their keypairs). What they staged meanwhile is in the stage ring. */
	tl_dp_synchronize(&dev->dp);
	tl_staged_poll(dev);
	for (size_t i = 0; i < n; i++) {
		tl_staged_drop(dev, pcs[i], TL_DROP_peer_removed);
		peer_free(dev, pcs[i]);
		tl_device_progress(dev);
	}
}

void tl_peers_destroy_all(struct tl_device *dev)
{
	struct tl_peer_ctrl *pc;

	tl_staged_poll(dev);
	while ((pc = TAILQ_FIRST(&dev->peers))) {
		slot_set(dev, pc->dp->id, NULL);
		tl_session_clear_all(dev, pc);
		tl_index_drop_peer(dev, pc);
		tl_staged_drop(dev, pc, TL_DROP_peer_removed);
		rte_hash_del_key(dev->peer_keys, pc->cfg.public_key);
		peer_free(dev, pc);
	}
	tl_dp_synchronize(&dev->dp);       /* their keypairs wiped and freed */
}

/* ---- the simple forms: one peer at a time -------------------------------------------------- */

int tl_peer_add(struct tl_device *dev, const struct tl_cfg_peer *cfg)
{
	struct tl_peer_ctrl *pc;

	if (tl_peer_find(dev, cfg->public_key))
		return -1;
	pc = tl_peer_new(dev, cfg->public_key, &dev->id);
	if (!pc)
		return -1;
	pc->cfg.has_psk = cfg->has_psk;
	memcpy(pc->cfg.psk, cfg->psk, TL_KEY_LEN);
	memcpy(pc->hs.psk, cfg->psk, TL_KEY_LEN);
	pc->cfg.persistent_keepalive = cfg->persistent_keepalive;
	memcpy(pc->cfg.name, cfg->name, sizeof(pc->cfg.name));
	if (cfg->has_endpoint) {
		pc->cfg.has_endpoint = true;
		pc->cfg.endpoint = cfg->endpoint;
		tl_peer_set_endpoint(dev, pc, &cfg->endpoint, NULL);
	}
	for (size_t i = 0; i < cfg->n_allowed_ips; i++)
		if (tl_aips_take(dev, pc, &cfg->allowed_ips[i]) != 0) {
			tl_aips_abort(dev);
			tl_peer_discard(dev, pc);
			return -1;
		}
	return 0;
}

int tl_peer_remove(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	if (tl_aips_clear(dev, pc) != 0) {
		tl_log_err("peer %u: not removed: out of memory", pc->dp->id);
		return -1;
	}
	tl_aips_publish(dev);
	tl_peers_destroy(dev, &pc, 1);
	return 0;
}
