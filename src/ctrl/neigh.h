/* Next-hop MACs of peers' endpoints on the WAN (neigh.c). */
#ifndef TL_CTRL_NEIGH_H
#define TL_CTRL_NEIGH_H

#include "ctrl/device.h"

void tl_neigh_resolve_endpoints(struct tl_device *dev, uint64_t now);
int tl_neigh_lookup(struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6], bool ask);

#endif
