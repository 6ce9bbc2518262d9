/* What a reload changes: the difference between the configuration that runs and the one in
 * the file, as a pure function of the two (no device). The running one is the daemon's
 * configuration with its live peers, private key, listen port and queue parameters. */
#ifndef TL_CONFIG_DIFF_H
#define TL_CONFIG_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "config/peer_op.h"

struct tl_config_diff {
	/* The first key whose change needs a restart, or NULL: then nothing else is filled. */
	const char *restart_key;
	/* Peer operations: removes, then updates, then adds (their allowed IPs point into the
	 * new configuration). */
	struct tl_peer_op *ops;
	size_t n_ops, n_remove, n_update, n_add;
	bool queue_wan, queue_lan;         /* the port is in the new file and its AQM or shaper differs */
	bool listen_port;                  /* listen_port differs */
};

/* Fills d (zeroed first). 0, or -1 when out of memory (nothing to free then). */
int tl_config_diff(const struct tl_config *old, const struct tl_config *new, struct tl_config_diff *d);
/* Frees and wipes (preshared keys) the operations. */
void tl_config_diff_free(struct tl_config_diff *d);

#endif
