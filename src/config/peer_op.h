/* One change to one peer: what every front-end builds (a UAPI set=1 per public_key line,
 * the control API's peer_add/peer_update/peer_remove, a reload's difference) and the one
 * write model applies (src/ctrl/peer_ops.c). Plain data, no device. */
#ifndef TL_CONFIG_PEER_OP_H
#define TL_CONFIG_PEER_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* Applied in this order: remove; create unless update_only; psk, endpoint, keepalive, name;
 * replace_aips empties the list; aips are taken (moved away from any other peer that has
 * them). aips points into the builder's own storage. */
struct tl_peer_op {
	uint8_t pub[TL_KEY_LEN];
	bool remove, update_only, replace_aips;
	bool has_psk, has_endpoint, has_keepalive, has_name;
	uint8_t psk[TL_KEY_LEN];           /* all-zero = no PSK */
	struct tl_sockaddr endpoint;
	uint16_t keepalive;
	char name[32];
	struct tl_prefix *aips;
	size_t n_aips, cap_aips;
};

/* The operation that creates the peer f as configured. */
void tl_peer_op_add(struct tl_peer_op *op, const struct tl_cfg_peer *f);
/* The update that brings the peer live to f (an endpoint f does not name is kept); false,
 * and nothing to do, when they agree. */
bool tl_peer_op_update(struct tl_peer_op *op, const struct tl_cfg_peer *live, const struct tl_cfg_peer *f);

#endif
