/* Indices and keypairs: the control plane is the only writer of a peer's keypair slots
 * and of the index table (session.c). */
#ifndef TL_CTRL_SESSION_H
#define TL_CTRL_SESSION_H

#include "ctrl/device.h"

uint32_t tl_index_new(struct tl_device *dev, struct tl_peer_ctrl *pc, bool is_handshake);
void tl_index_free(struct tl_device *dev, uint32_t index);
void tl_index_drop_handshake(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_index_drop_peer(struct tl_device *dev, struct tl_peer_ctrl *pc);
struct tl_index_ref *tl_index_find(struct tl_device *dev, uint32_t index);
int tl_session_install(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_session_keys *k,
		       uint64_t now);
void tl_session_confirm(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_session_clear_all(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_session_expire(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
/* The index table's RCU reclaim callback: wipes and frees a retired keypair. */
void tl_keypair_reclaim(void *arg, void *key_data);
/* Unit tests only (NULL otherwise): sees each keypair after its wipe, before it is freed. */
extern void (*tl_keypair_reclaim_test_hook)(const struct tl_keypair *kp);
/* Unit tests only (NULL otherwise): called as a keypair retires, between the delete of its
 * index from the index table and the bump of key_gen that tells the workers. */
extern void (*tl_keypair_retire_test_hook)(uint32_t index);
/* Unit tests only (0 otherwise): the next this many growths of the control plane's index
 * table fail as if out of memory. */
extern unsigned tl_index_grow_test_failures;

#endif
