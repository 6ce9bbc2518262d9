/* WAN -> LAN (decap.c): classification of WireGuard datagrams into crypto jobs, the
 * in-order finish of opened packets through the next-hop hold into the LAN egress queue,
 * and what that queue releases to the LAN port. */
#ifndef TL_DECAP_H
#define TL_DECAP_H

#include "dataplane/crypt.h"

/* Reads WAN frames (src NULL: from the port's queue of the worker; else from that ring, the
 * slow path's datagrams) into the open decapsulation job, at most the room it has, which
 * is submitted, and finishes what is done; none when every job is in flight (the frames
 * wait in the port's ring). Returns the frames read; *asked (may be NULL) is how many it
 * asked for, 0 when no job was free: fewer than asked means the source is empty. */
unsigned tl_decap_rx(struct tl_worker *w, struct rte_ring *src, unsigned *asked);

/* WAN frames received by the worker's queue (or reassembled by the kernel): handshake
 * messages go to the control plane, data messages into the open decapsulation job, which
 * must have room for all n; anything else is a counted drop. The caller submits the job. */
void tl_decap_burst(struct tl_worker *w, struct tl_crypt_job *j, struct rte_mbuf **pkts, unsigned n);

/* The owner's done decapsulation jobs, in submission order, each all of it: authentication
 * result, the keypair looked up again, the replay window, the source check, roaming, then
 * the LAN. Returns the packets finished. */
unsigned tl_decap_finish(struct tl_worker *w);

/* Gateway mode: tl_hold_poll releases (in order, once the next hop's MAC is known) or gives
 * up (after TL_HOLD_NS, as no_neighbour) packets held for a next hop, every round;
 * tl_hold_free frees them at shutdown. */
void tl_hold_poll(struct tl_worker *w);
void tl_hold_free(struct tl_worker *w);

/* One burst of at most max (<= TL_PORT_TX_MAX) frames the LAN queue's AQM and the shaper
 * release, to the LAN port; what it does not take returns to the head of the queue, in
 * order. Returns how many were offered. */
unsigned tl_decap_lan_send(struct tl_worker *w, unsigned max);

#endif
