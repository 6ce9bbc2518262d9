/* A device change (devchange.c): the one door through which a request changes the device,
 * whichever front-end built it (UAPI set, the control API's set and peer operations, a
 * reload by the control API or SIGHUP). A change is the listen port, the private key, the
 * peers (peer_ops.h) and the egress queues' parameters, all or any of them, applied whole or
 * not at all: every part is prepared first (checked, and what can fail done so that it can
 * be undone), then every part committed. Control thread. */
#ifndef TL_CTRL_DEVCHANGE_H
#define TL_CTRL_DEVCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config_diff.h"
#include "config/peer_op.h"
#include "ctrl/device.h"

struct tl_dev_change {
	bool has_port;
	uint16_t listen_port;
	const uint8_t *priv;                        /* the new private key, NULL: unchanged */
	bool replace_peers;                         /* every peer not in ops goes */
	const struct tl_peer_op *ops;               /* applied in order after replace_peers */
	size_t n_ops;
	bool has_aqm[TL_PORT_MAX], has_shaper[TL_PORT_MAX];
	struct tl_aqm_params aqm[TL_PORT_MAX];      /* a port's queue on every worker */
	struct tl_shaper_params shaper[TL_PORT_MAX];
};

/* The part that refused a change. */
enum tl_dev_part {
	TL_DEV_PART_PORT = 1,                       /* the listen port could not be bound */
	TL_DEV_PART_QUEUE,                          /* a queue's parameters break a rule */
	TL_DEV_PART_PEERS,                          /* the peers: out of memory */
};

struct tl_dev_refusal {
	enum tl_dev_part part;
	int role;                                   /* QUEUE: the port whose queue */
	bool shaper;                                /* QUEUE: a rule of the shaper (else the AQM's) */
	const char *why;                            /* QUEUE: "<field>: <rule>" */
};

/* Applies c whole: 0; or an errno value, the part that refused it in *r, and nothing
 * changed. The order: the queue parameters are checked against this dataplane
 * (tl_queue_check, the rules a worker applies), the new listen port is bound beside the old
 * one, the peer operations are prepared; then the workers take the queue parameters (a
 * worker may still refuse a change of flows: then those that took it get their old ones
 * back); then the port moves and the peers are committed, steps that cannot fail. ops and
 * priv are only read. */
int tl_dev_change(struct tl_device *dev, const struct tl_dev_change *c, struct tl_dev_refusal *r);

/* The parameters in force on a port's queue (worker 0's; every worker has the same). */
void tl_dev_queue_current(struct tl_device *dev, int role, struct tl_aqm_params *aqm, struct tl_shaper_params *sh);

/* What a reload to nc changes: d, the difference between the configuration that runs (the
 * daemon's, with the live peers, private key, listen port and queue parameters) and nc;
 * and c, the device change that makes it (its ops are d's: free d after applying c).
 * 0, or -1 when out of memory (d is then empty). Whether the difference can be applied at
 * all (d->restart_key) is the caller's to check. */
int tl_dev_reload_change(struct tl_device *dev, const struct tl_config *nc, struct tl_config_diff *d,
			 struct tl_dev_change *c);

#endif
