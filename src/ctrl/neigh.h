/* Next-hop MACs of peers' endpoints on the WAN (neigh.c). */
#ifndef TL_CTRL_NEIGH_H
#define TL_CTRL_NEIGH_H

#include "ctrl/device.h"

/* The peer's endpoint has no next-hop MAC yet. */
bool tl_neigh_endpoint_resolving(struct tl_peer_ctrl *pc);
/* Looks the MAC of the peer's endpoint up when it is due (the timers' tick of the peer). */
void tl_neigh_resolve_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
/* A static `neighbours:` entry of the configuration for ip on the port: true and mac (if
 * not NULL). */
bool tl_neigh_static(const struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6]);
int tl_neigh_lookup(struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6], bool ask);

#endif
