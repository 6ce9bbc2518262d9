/* Next-hop MAC addresses from the kernel's neighbour table: for peers' endpoints on the
 * WAN port, and for inner destinations on the LAN port in gateway mode. Static entries in
 * the configuration take precedence. Unresolved addresses get a managed kernel entry (the
 * kernel keeps resolving it) and are tried again shortly. */
#include <sys/socket.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/netlink.h"

#define TL_RESOLVE_RETRY_NS (100ull * 1000000ull)

static bool static_neighbour(struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6])
{
	size_t alen = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < dev->cfg->n_neighbours; i++) {
		const struct tl_cfg_neighbour *n = &dev->cfg->neighbours[i];

		if (n->ip.family == family && (n->on_wan == (role == TL_PORT_WAN)) && !memcmp(n->ip.addr, ip, alen)) {
			memcpy(mac, n->mac, 6);
			return true;
		}
	}
	return false;
}

/* 0 and mac when known; -1 when not (yet). With ask, an unresolved next hop is handed to
 * the kernel to resolve. */
int tl_neigh_lookup(struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6], bool ask)
{
	int oif = 0, has_gw = 0, r;
	uint8_t gw[16];
	const uint8_t *hop = ip;

	if (static_neighbour(dev, role, family, ip, mac))
		return 0;
	if (!dev->nl || tl_nl_route_get(dev->nl, family, ip, &oif, &has_gw, gw) != 0)
		return -1;
	if (oif != dev->ports[role].ifindex)
		oif = dev->ports[role].ifindex;   /* the port decides, whatever the main table says */
	if (has_gw) {
		hop = gw;
		if (static_neighbour(dev, role, family, gw, mac))
			return 0;
	}
	r = tl_nl_neigh_get(dev->nl, oif, family, hop, mac);
	if (r == 1)
		return 0;
	if (ask)
		tl_nl_neigh_resolve(dev->nl, oif, family, hop);
	return -1;
}

void tl_neigh_resolve_endpoints(struct tl_device *dev, uint64_t now)
{
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &dev->peers, link) {
		struct tl_endpoint ep;
		uint8_t mac[6];

		tl_endpoint_read(pc->dp, &ep);
		if (!ep.family || ep.mac_valid || now < pc->ep_resolve_ns)
			continue;
		if (tl_neigh_lookup(dev, TL_PORT_WAN, ep.family, ep.ip, mac, true) != 0) {
			pc->ep_resolve_ns = now + TL_RESOLVE_RETRY_NS;
			continue;
		}
		rte_seqlock_write_lock(&pc->dp->ep_lock);
		if (pc->dp->ep.family == ep.family && !memcmp(pc->dp->ep.ip, ep.ip, 16)) {
			memcpy(pc->dp->ep.mac, mac, 6);
			pc->dp->ep.mac_valid = true;
		}
		rte_seqlock_write_unlock(&pc->dp->ep_lock);
		/* an initiation that found no next hop was dropped: resend it now, not after
		 * REKEY_TIMEOUT (handshake_retry sees it due) */
		if (pc->hs.state == TL_HS_CREATED_INITIATION)
			pc->hs_last_sent_ns = 0;
		/* a handshake may have been waiting for the way out */
		if (rte_ring_count(pc->dp->staged))
			atomic_store(&pc->dp->want_handshake, true);
	}
}

/* LAN next hops being resolved by the kernel: polled until they resolve (or for
 * TL_PENDING_NS), so that the packet after the one that missed finds its MAC. Only the
 * control thread touches this. */
#define TL_PENDING_MAX 64
#define TL_PENDING_NS (3000ull * 1000000ull)
#define TL_PENDING_POLL_NS (2ull * 1000000ull)

static struct {
	struct tl_neigh_key key;
	uint64_t until;
} g_pending[TL_PENDING_MAX];
static unsigned g_n_pending;
static uint64_t g_pending_next_ns;

static void pending_add(const struct tl_neigh_key *key, uint64_t now)
{
	for (unsigned i = 0; i < g_n_pending; i++)
		if (!memcmp(&g_pending[i].key, key, sizeof(*key)))
			return;
	if (g_n_pending == TL_PENDING_MAX)
		return;   /* the next packet to it asks again */
	g_pending[g_n_pending].key = *key;
	g_pending[g_n_pending++].until = now + TL_PENDING_NS;
}

static void pending_poll(struct tl_device *dev, uint64_t now)
{
	uint8_t mac[6];

	if (!g_n_pending || now < g_pending_next_ns)
		return;
	g_pending_next_ns = now + TL_PENDING_POLL_NS;
	for (unsigned i = 0; i < g_n_pending;) {
		const struct tl_neigh_key *key = &g_pending[i].key;
		bool ok = tl_neigh_lookup(dev, TL_PORT_LAN, key->family, key->ip, mac, false) == 0;

		if (ok)
			rte_hash_add_key_data(dev->dp.neigh_table, key, (void *)tl_mac_pack(mac));
		if (ok || now >= g_pending[i].until)
			g_pending[i] = g_pending[--g_n_pending];
		else
			i++;
	}
}

/* Cached LAN next hops are checked against the kernel's table now and then, so that a
 * host that changed its MAC address is followed. An entry the kernel lost keeps its last
 * MAC and gets a resolution request. */
#define TL_REFRESH_NS (5ull * 1000000000ull)

void tl_neigh_refresh(struct tl_device *dev, uint64_t now)
{
	static uint64_t next_ns;
	const void *key;
	void *data;
	uint32_t it = 0;
	uint8_t mac[6], old[6];

	if (now < next_ns)
		return;
	next_ns = now + TL_REFRESH_NS;
	while (rte_hash_iterate(dev->dp.neigh_table, &key, &data, &it) >= 0) {
		const struct tl_neigh_key *k = key;

		if (tl_neigh_lookup(dev, TL_PORT_LAN, k->family, k->ip, mac, true) != 0)
			continue;
		tl_mac_unpack(old, (uintptr_t)data);
		if (memcmp(old, mac, 6))
			rte_hash_add_key_data(dev->dp.neigh_table, k, (void *)tl_mac_pack(mac));
	}
}

/* LAN next hops the workers asked for (gateway mode). */
void tl_neigh_serve_requests(struct tl_device *dev)
{
	struct tl_neigh_key key;
	uint8_t mac[6];
	uint64_t now = tl_now_ns();

	while (rte_ring_sc_dequeue_elem(dev->dp.neigh_req, &key, sizeof(key)) == 0) {
		if (rte_hash_lookup(dev->dp.neigh_table, &key) >= 0)
			continue;
		if (tl_neigh_lookup(dev, TL_PORT_LAN, key.family, key.ip, mac, true) == 0)
			rte_hash_add_key_data(dev->dp.neigh_table, &key, (void *)tl_mac_pack(mac));
		else
			pending_add(&key, now);
	}
	pending_poll(dev, now);
}
