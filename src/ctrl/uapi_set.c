/* UAPI set=1: the request is parsed and checked as a whole into a list of peer operations
 * first (uapi_parse.c), so that a bad line changes nothing; the listen port moves first (a
 * port in use changes nothing either); then the write model applies the operations
 * (peer_ops.c), as it does for the control API and a reload. */
#include <string.h>

#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/ports.h"
#include "ctrl/uapi.h"

static bool dev_has_peer(void *ctx, const uint8_t pub[TL_KEY_LEN])
{
	return tl_peer_find(ctx, pub) != NULL;
}

int tl_uapi_set(struct tl_device *dev, char *body)
{
	struct tl_uapi_set_req r = { 0 };
	struct tl_uapi_set_view v = { .listen_port = tl_dp_listen_port(&dev->dp), .n_peers = dev->n_peers,
				       .max_peers = TL_MAX_PEERS, .has_peer = dev_has_peer, .ctx = dev };
	int err = tl_uapi_set_parse(&r, body);

	if (!err)
		err = tl_uapi_set_check(&r, &v);
	if (!err && r.has_port)
		err = tl_listen_port_set(dev, r.port);      /* first: if the port is taken, nothing changes */
	if (!err)
		err = tl_peer_ops_apply(dev, r.peers, r.n_peers, r.has_priv ? r.priv : NULL, r.replace_peers);
	else
		tl_log_info("uapi: set rejected (%s), nothing changed", strerror(err));
	tl_uapi_set_req_free(&r);
	return err;
}
