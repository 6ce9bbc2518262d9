/* Next-hop MAC addresses of peers' endpoints on the WAN port, from the kernel's route and
 * neighbour tables. Static entries in the configuration take precedence. Unresolved
 * addresses get a managed kernel entry (the kernel keeps resolving it) and are tried again
 * shortly. (LAN next hops in gateway mode: lanmirror.c.) */
#include <sys/socket.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/neigh.h"
#include "kernel/netlink.h"

#define TL_RESOLVE_RETRY_NS (100ull * 1000000ull)

bool tl_neigh_static(const struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6])
{
	size_t alen = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < dev->cfg->n_neighbours; i++) {
		const struct tl_cfg_neighbour *n = &dev->cfg->neighbours[i];

		if (n->ip.family == family && (n->on_wan == (role == TL_PORT_WAN)) && !memcmp(n->ip.addr, ip, alen)) {
			if (mac)
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

	if (tl_neigh_static(dev, role, family, ip, mac))
		return 0;
	if (!dev->nl || tl_nl_route_get(dev->nl, family, ip, &oif, &has_gw, gw) != 0)
		return -1;
	if (oif != dev->ports[role].ifindex)
		oif = dev->ports[role].ifindex;   /* the port decides, whatever the main table says */
	if (has_gw) {
		hop = gw;
		if (tl_neigh_static(dev, role, family, gw, mac))
			return 0;
	}
	r = tl_nl_neigh_get(dev->nl, oif, family, hop, mac);
	if (r == 1)
		return 0;
	if (ask)
		tl_nl_neigh_resolve(dev->nl, oif, family, hop);
	return -1;
}

bool tl_neigh_endpoint_resolving(struct tl_peer_ctrl *pc)
{
	struct tl_endpoint ep;

	tl_endpoint_read(pc->dp, &ep);
	return ep.family && !ep.mac_valid;
}

void tl_neigh_resolve_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct tl_endpoint ep;
	uint8_t mac[6];

	tl_endpoint_read(pc->dp, &ep);
	if (!ep.family || ep.mac_valid || now < pc->ep_resolve_ns)
		return;
	if (tl_neigh_lookup(dev, TL_PORT_WAN, ep.family, ep.ip, mac, true) != 0) {
		pc->ep_resolve_ns = now + TL_RESOLVE_RETRY_NS;
		return;
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
	/* Staged packets go out on this tick if a session is there; else a handshake may have
	 * been waiting for the way out. */
	if (atomic_load_explicit(&pc->dp->n_staged, memory_order_relaxed) &&
	    !tl_keypair_can_send(&dev->dp, atomic_load(&pc->dp->current), now))
		atomic_store(&pc->dp->want_handshake, true);
}
