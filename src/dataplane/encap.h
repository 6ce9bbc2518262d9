/* LAN -> WAN (encap.c): classification of LAN frames into the WAN egress queue, and the
 * readying of the packets that queue releases into crypto jobs, and their sending in order. */
#ifndef TL_ENCAP_H
#define TL_ENCAP_H

#include "dataplane/crypt.h"

/* Reads a burst of LAN frames from the port's queue of the worker into tl_encap_burst.
 * Returns the frames read; *asked is how many it asked for. */
unsigned tl_encap_rx(struct tl_worker *w, unsigned *asked);

/* LAN frames received by the worker's queue: cryptokey routing on the inner destination,
 * checks, fragmentation or ICMP errors, then the WAN egress queue. Each packet goes into a
 * queue or a counted drop. */
void tl_encap_burst(struct tl_worker *w, struct rte_mbuf **pkts, unsigned n);

/* Releases what the WAN queue's AQM and the shaper allow, up to a burst: each inner packet
 * looked up again, given its nonce, padding and headers and added to the open job to be
 * sealed (or staged for a handshake, or dropped, counted); the job is submitted and what
 * is done is sent. Without a free job the queue waits. Returns packets taken. */
unsigned tl_encap_take(struct tl_worker *w);

/* The owner's done encapsulation jobs, in submission order, to the WAN port: what the port
 * refuses stays in its job (the jobs behind it wait) for the next call. Returns the
 * packets sent. */
unsigned tl_encap_finish(struct tl_worker *w);

/* Frames built by the control plane (handshakes, keepalives, staged packets) go out
 * ahead of the queues, with the shaper's budget; what the port refuses stays in the ring.
 * Returns frames sent. */
unsigned tl_encap_ctrl_flush(struct tl_worker *w);

/* Encrypts the IP packet the mbuf holds (data starts at the IP header) for peer with the
 * keypair at once, and prepends the outer headers: the control plane's path (staged
 * packets, keepalives). Returns TL_DROP_MAX on success or a drop reason. */
enum tl_drop tl_encap_one(struct tl_dp *dp, struct tl_dp_aead *aead, struct tl_peer *peer,
			  struct tl_keypair *kp, struct rte_mbuf *m, uint8_t ecn, uint64_t now_ns);

#endif
