/* The one write model (peer_ops.c): every front-end (UAPI set, the control API's peer
 * operations, a reload) changes peers by handing a list of tl_peer_op to tl_peer_ops_apply,
 * after its own checks. Control thread. */
#ifndef TL_CTRL_PEER_OPS_H
#define TL_CTRL_PEER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/peer_op.h"
#include "ctrl/device.h"

/* Applies the private key (priv NULL = unchanged), replace_peers, then ops in order; a peer
 * with our own public key is ignored. Publishes the table once and syncs host routes and the
 * LAN XDP steering. The caller has checked everything: the only failure left is running out
 * of memory (ENOMEM), and then nothing has changed (the request is rolled back whole). */
int tl_peer_ops_apply(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, const uint8_t *priv,
		      bool replace_peers);

/* tl_peer_ops_apply in two steps, for a change of which the peers are one part (devchange.h):
 * prepare does everything that can fail and can be undone (*txn on success: 0; else ENOMEM
 * and nothing changed); then exactly one of commit (cannot fail) or abort (nothing changed).
 * ops and priv stay the caller's and must live until then; nothing else may change the
 * peers in between. */
struct tl_peer_txn;
int tl_peer_ops_prepare(struct tl_device *dev, const struct tl_peer_op *ops, size_t n, const uint8_t *priv,
			bool replace_peers, struct tl_peer_txn **txn);
void tl_peer_ops_commit(struct tl_peer_txn *txn);
void tl_peer_ops_abort(struct tl_peer_txn *txn);

#endif
