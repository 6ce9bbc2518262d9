/* Peers: the registry, creation, removal, lookup, endpoints (peer.c). */
#ifndef TL_CTRL_PEER_H
#define TL_CTRL_PEER_H

#include "ctrl/device.h"

/* The registry (public keys, ids), made and freed with the device's objects. 0 or -1. */
int tl_peers_init(struct tl_device *dev);
void tl_peers_fini(struct tl_device *dev);

struct tl_peer_ctrl *tl_peer_find(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN]);
void tl_peer_set_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			  const uint8_t *mac);
/* The same from an authenticated packet, with the address of ours it was sent to (local,
 * NULL: unknown), the source of what goes back. A set endpoint forgets that address. */
void tl_peer_learn_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			    const uint8_t *mac, const uint8_t *local);

/* The simple forms, one peer at a time. tl_peer_add creates the peer as cfg says, its
 * allowed IPs among the routing changes tl_aips_publish publishes; 0, or -1 when the key is
 * taken or out of memory (then every unpublished change is undone). tl_peer_remove takes the
 * peer out of the published table and frees it; 0, or -1 out of memory (nothing changed). */
int tl_peer_add(struct tl_device *dev, const struct tl_cfg_peer *cfg);
int tl_peer_remove(struct tl_device *dev, struct tl_peer_ctrl *pc);

/* Building blocks of the write model (peer_ops.c).
 * tl_peer_new: a peer with this key (not taken) and nothing else, found by tl_peer_find, its
 *   handshake state made for identity id (NULL: the caller makes it, tl_handshake_init,
 *   before anything else reads it); no route leads to it. NULL out of memory.
 * tl_peer_unregister / tl_peer_reregister: out of (back into) the key registry, so that a
 *   request may remove a peer and create another with the same key; reregister of a key
 *   just unregistered does not fail in practice (-1 if it does).
 * tl_peer_discard: a peer no route ever led to, freed at once.
 * tl_peers_destroy: peers whose routes are out of the published table: their slots,
 *   sessions and indices go, after one grace period their staged packets are dropped and they
 *   are freed.
 * tl_peers_destroy_all: every peer, once the workers have stopped (no grace period). */
struct tl_peer_ctrl *tl_peer_new(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN], const struct tl_identity *id);
void tl_peer_unregister(struct tl_device *dev, struct tl_peer_ctrl *pc);
int tl_peer_reregister(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_peer_discard(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_peers_destroy(struct tl_device *dev, struct tl_peer_ctrl *const *pcs, size_t n);
void tl_peers_destroy_all(struct tl_device *dev);

#endif
