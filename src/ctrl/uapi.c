/* WireGuard UAPI: the protocol over the request server (api/server.h). A request is "get=1"
 * or "set=1" followed by key=value lines and ended by a blank line; the reply is key=value
 * lines ending with "errno=N" and a blank line, N being 0 or a negative errno value as
 * wireguard-go answers and `wg` expects (it prints strerror(-N)). set=1 is parsed and checked
 * as a whole first (api/uapi_parse.c), so that a bad line changes nothing; the listen port
 * moves first (a port in use changes nothing either); then the write model applies the peer
 * operations (peer_ops.c), as it does for the control API and a reload. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/server.h"
#include "api/unixsock.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/ports.h"
#include "ctrl/stats.h"
#include "ctrl/uapi.h"

/* ---- get=1 ------------------------------------------------------------------------------- */

static void get_key(struct tl_buf *b, const char *name, const uint8_t key[TL_KEY_LEN])
{
	char hex[65];

	tl_key_to_hex(hex, key);
	tl_buf_printf(b, "%s=%s\n", name, hex);
	explicit_bzero(hex, sizeof(hex));
}

/* A peer as `wg show` reads it: its keys from the configuration, the rest from the read
 * model (the values show, telemetry and the metrics report). */
static void get_peer(struct tl_device *dev, struct tl_buf *b, struct tl_peer_ctrl *pc)
{
	static const uint8_t zero[TL_KEY_LEN];
	struct tl_stats_peer s;

	tl_stats_peer(dev, pc, &s);
	get_key(b, "public_key", pc->cfg.public_key);
	get_key(b, "preshared_key", pc->cfg.has_psk ? pc->cfg.psk : zero);
	tl_buf_printf(b, "protocol_version=1\n");
	if (s.endpoint[0])
		tl_buf_printf(b, "endpoint=%s\n", s.endpoint);
	tl_buf_printf(b, "last_handshake_time_sec=%" PRIu64 "\nlast_handshake_time_nsec=%" PRIu64 "\n",
		      (uint64_t)(s.last_handshake_ns / TL_NS), (uint64_t)(s.last_handshake_ns % TL_NS));
	tl_buf_printf(b, "tx_bytes=%" PRIu64 "\nrx_bytes=%" PRIu64 "\n", s.tx_bytes, s.rx_bytes);
	tl_buf_printf(b, "persistent_keepalive_interval=%" PRIu64 "\n", s.persistent_keepalive);
	for (const char *p = s.allowed_ips; p && *p;) {
		size_t n = strcspn(p, ",");

		tl_buf_printf(b, "allowed_ip=%.*s\n", (int)n, p);
		p += n + (p[n] == ',');
	}
	b->oom |= !s.allowed_ips;
	tl_stats_peer_free(&s);
}

static void uapi_get(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_peer_ctrl *pc;

	if (dev->id.has_key)
		get_key(b, "private_key", dev->id.priv);
	tl_buf_printf(b, "listen_port=%u\nfwmark=0\n", (unsigned)tl_dp_listen_port(&dev->dp));
	TAILQ_FOREACH(pc, &dev->peers, link)
		get_peer(dev, b, pc);
}

/* ---- set=1 -------------------------------------------------------------------------------- */

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

/* ---- requests ------------------------------------------------------------------------------ */

void tl_uapi_request(struct tl_device *dev, char *req, struct tl_buf *out)
{
	char *nl = strchr(req, '\n');
	char *body = nl ? nl + 1 : req + strlen(req);
	int err = EINVAL;

	if (nl)
		*nl = '\0';
	if (!strcmp(req, "get=1") && !*body) {
		uapi_get(dev, out);
		err = 0;
	} else if (!strcmp(req, "set=1")) {
		err = tl_uapi_set(dev, body);
	}
	if (out->oom) {               /* never a truncated reply: an error instead */
		tl_buf_free(out);
		err = ENOMEM;
	}
	tl_buf_printf(out, "errno=%d\n\n", -err);
}

/* ---- the protocol over the request server -------------------------------------------------- */

static enum tl_server_next uapi_answer(void *ctx, char *req, size_t len, struct tl_buf *out)
{
	req[len - 2] = '\0';             /* the text up to, not including, the blank line */
	tl_uapi_request(ctx, req, out);
	return TL_SERVER_MORE;
}

static void uapi_refuse(void *ctx, bool oom, struct tl_buf *out)
{
	(void)ctx;
	if (oom)
		tl_log_info("uapi: no memory for a larger request, closing");
	else
		tl_log_info("uapi: request over %u bytes without its blank line, closing", TL_UAPI_MAX_REQUEST);
	tl_buf_printf(out, "errno=%d\n\n", oom ? -ENOMEM : -EINVAL);
}

static const struct tl_server_ops uapi_ops = {
	.name = "uapi",
	.request_end = tl_uapi_request_end,
	.answer = uapi_answer,
	.refuse = uapi_refuse,
	.max_request = TL_UAPI_MAX_REQUEST,
	.first_buffer = 4096,
	.read_chunk = 65536,
	.idle_ns = 10ull * TL_NS,
	.accepts_per_event = 1,
};

int tl_uapi_test_client(struct tl_device *dev, const char *text, size_t len, size_t chunk, char **seen,
			size_t *seen_len, struct tl_buf *reply)
{
	return tl_server_feed(&uapi_ops, dev, text, len, chunk, seen, seen_len, reply);
}

int tl_uapi_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_unix_server *u = calloc(1, sizeof(*u));

	if (!u || tl_unix_server_open(u, "uapi", TL_UAPI_DIR, dev->cfg->name, &uapi_ops, dev, dev->loop, err, errlen) != 0) {
		if (!u)
			snprintf(err, errlen, "uapi: %s", strerror(ENOMEM));
		free(u);
		return -1;
	}
	dev->uapi = u;
	dev->servers[TL_SERVER_UAPI] = &u->srv;
	tl_log_info("uapi: listening on %s", u->sock.path);
	return 0;
}

void tl_uapi_close(struct tl_device *dev)
{
	if (!dev->uapi)
		return;
	tl_unix_server_close(dev->uapi);
	free(dev->uapi);
	dev->uapi = NULL;
	dev->servers[TL_SERVER_UAPI] = NULL;
}
