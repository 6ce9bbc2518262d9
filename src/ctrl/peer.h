/* Peers: creation, removal, lookup, endpoints (peer.c). */
#ifndef TL_CTRL_PEER_H
#define TL_CTRL_PEER_H

#include "ctrl/device.h"

int tl_peer_add(struct tl_device *dev, const struct tl_cfg_peer *cfg);
/* 0, or -1 when the routing table without the peer cannot be built: then nothing changed. */
int tl_peer_remove(struct tl_device *dev, struct tl_peer_ctrl *pc);
struct tl_peer_ctrl *tl_peer_find(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN]);
void tl_peer_set_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			  const uint8_t *mac);

#endif
