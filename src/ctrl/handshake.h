/* Handshake messages the workers hand to the control plane (handshake.c), as the kernel's
 * receive.c takes them: Noise, cookies, the load that makes mac2 necessary. */
#ifndef TL_CTRL_HANDSHAKE_H
#define TL_CTRL_HANDSHAKE_H

#include "ctrl/device.h"

/* One message (its outer headers still on); consumed or dropped under one reason. */
void tl_handshake_rx(struct tl_device *dev, struct rte_mbuf *m, uint64_t now);
/* Handles up to a burst (TL_BURST) of the messages waiting in the handshake ring, computed on
 * the device's handshake threads beside this one and finished here in their order; how many. */
unsigned tl_handshake_poll(struct tl_device *dev, uint64_t now);

#endif
