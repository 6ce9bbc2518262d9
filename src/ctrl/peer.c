/* Peers: creation, removal, lookup, endpoints. Their allowed IPs and the routing table built
 * from them: aips.c. */
#include <stdio.h>
#include <stdlib.h>

#include <rte_malloc.h>

#include "ctrl/aips.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/send.h"
#include "ctrl/session.h"

static uint32_t peer_id_free(struct tl_device *dev)
{
	bool used[TL_MAX_PEERS] = { 0 };
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &dev->peers, link)
		used[pc->dp->id] = true;
	for (uint32_t i = 0; i < TL_MAX_PEERS; i++)
		if (!used[i])
			return i;
	return UINT32_MAX;
}

struct tl_peer_ctrl *tl_peer_find(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN])
{
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &dev->peers, link)
		if (!memcmp(pc->cfg.public_key, pub, TL_KEY_LEN))
			return pc;
	return NULL;
}

static struct tl_peer *peer_dp_new(struct tl_device *dev, uint32_t id)
{
	char name[RTE_RING_NAMESIZE];
	struct tl_peer *p = rte_zmalloc("tl_peer", sizeof(*p), RTE_CACHE_LINE_SIZE);
	uint32_t count;

	if (!p)
		return NULL;
	p->id = id;
	rte_seqlock_init(&p->ep_lock);
	/* The staged queue lives on the heap, not in a memzone of its own: a process has
	 * RTE_MAX_MEMZONE (2560) of those, far fewer than a hub has peers. */
	count = rte_align32pow2((uint32_t)dev->cfg->staged_packets + 1);
	snprintf(name, sizeof(name), "staged%u", id);
	p->staged = rte_zmalloc("tl_staged", (size_t)rte_ring_get_memsize(count), RTE_CACHE_LINE_SIZE);
	if (!p->staged || rte_ring_init(p->staged, name, count, 0) != 0) {
		rte_free(p->staged);
		rte_free(p);
		return NULL;
	}
	return p;
}

void tl_peer_set_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			  const uint8_t *mac)
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
	rte_seqlock_write_unlock(&p->ep_lock);
	if (!mac)
		pc->ep_resolve_ns = 0;   /* resolve at once */
}

static int copy_cfg(struct tl_cfg_peer *dst, const struct tl_cfg_peer *src)
{
	*dst = *src;
	dst->allowed_ips = NULL;
	if (src->n_allowed_ips) {
		dst->allowed_ips = calloc(src->n_allowed_ips, sizeof(*dst->allowed_ips));
		if (!dst->allowed_ips)
			return -1;
		memcpy(dst->allowed_ips, src->allowed_ips, src->n_allowed_ips * sizeof(*dst->allowed_ips));
	}
	return 0;
}

int tl_peer_add(struct tl_device *dev, const struct tl_cfg_peer *cfg)
{
	struct tl_peer_ctrl *pc;
	uint32_t id = peer_id_free(dev);

	if (id == UINT32_MAX || tl_peer_find(dev, cfg->public_key))
		return -1;
	pc = calloc(1, sizeof(*pc));
	if (!pc || copy_cfg(&pc->cfg, cfg) != 0) {
		free(pc);
		return -1;
	}
	pc->dp = peer_dp_new(dev, id);
	if (!pc->dp) {
		free(pc->cfg.allowed_ips);
		free(pc);
		return -1;
	}
	pc->dp->ctrl = pc;
	tl_handshake_init(&pc->hs, &dev->id, cfg->public_key, cfg->has_psk ? cfg->psk : NULL);
	if (cfg->has_endpoint)
		tl_peer_set_endpoint(dev, pc, &cfg->endpoint, NULL);
	pthread_mutex_lock(&dev->lock);
	TAILQ_INSERT_TAIL(&dev->peers, pc, link);
	dev->n_peers++;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/* The table without the peer is built first: if that fails, nothing changes. Once the
 * workers have stopped (dp.stop), nothing reads the table any more and none is built. */
int tl_peer_remove(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	struct tl_table *t = NULL;

	if (!dev->dp.stop) {
		t = tl_aips_table(dev, pc);
		if (!t) {
			tl_log_err("peer %u: not removed: cannot build the routing table without it (out of memory)",
				   pc->dp->id);
			return -1;
		}
	}
	tl_aips_unsteer(dev, pc);
	pthread_mutex_lock(&dev->lock);
	TAILQ_REMOVE(&dev->peers, pc, link);
	dev->n_peers--;
	pthread_mutex_unlock(&dev->lock);
	if (t)
		tl_aips_swap(dev, t);      /* no worker can find it after the grace period */
	tl_session_clear_all(dev, pc);
	tl_index_drop_peer(dev, pc);
	rte_rcu_qsbr_synchronize(dev->dp.qsbr, RTE_QSBR_THRID_INVALID);
	tl_staged_drop(dev, pc, TL_DROP_peer_removed);
	rte_free(pc->dp->staged);
	rte_free(pc->dp);
	tl_handshake_clear(&pc->hs);
	tl_wipe(&pc->hs, sizeof(pc->hs));
	tl_wipe(pc->cfg.psk, sizeof(pc->cfg.psk));
	free(pc->cfg.allowed_ips);
	free(pc);
	return 0;
}
