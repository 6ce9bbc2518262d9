/* LAN -> WAN (encap.c): classification of LAN frames into the WAN egress queue, and the
 * readying of the packets that queue releases for the crypto stage. */
#ifndef TL_ENCAP_H
#define TL_ENCAP_H

#include "dataplane/crypt.h"

/* LAN frames received by the worker's queue: cryptokey routing on the inner destination,
 * checks, fragmentation or ICMP errors, then the WAN egress queue. Each packet goes into a
 * queue or a counted drop. */
void tl_encap_burst(struct tl_worker *w, struct rte_mbuf **pkts, unsigned n);

/* An inner packet the WAN queue released (data at the IP header): looked up again, given
 * its nonce, padding and headers and added to job j to be sealed; or staged for a
 * handshake, or dropped (counted). j has room. */
void tl_encap_prepare(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m, struct tl_crypt_job *j);

/* The owner's done encapsulation jobs, in submission order, to the WAN port: what the port
 * refuses stays in its job (the jobs behind it wait) for the next call. Returns the
 * packets sent. */
unsigned tl_encap_finish(struct tl_worker *w);

/* Encrypts the IP packet the mbuf holds (data starts at the IP header) for peer with the
 * keypair at once, and prepends the outer headers: the control plane's path (staged
 * packets, keepalives). Returns TL_DROP_MAX on success or a drop reason. */
enum tl_drop tl_encap_one(struct tl_dp *dp, struct tl_dp_aead *aead, struct tl_peer *peer,
			  struct tl_keypair *kp, struct rte_mbuf *m, uint8_t ecn, uint64_t now_ns);

#endif
