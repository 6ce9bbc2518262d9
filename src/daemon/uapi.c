/* WireGuard UAPI: the protocol over the request server (api/server.h). A request is "get=1"
 * or "set=1" followed by key=value lines and ended by a blank line; the reply is key=value
 * lines ending with "errno=N" and a blank line, N being 0 or a negative errno value as
 * wireguard-go answers and `wg` expects (it prints strerror(-N)). Requests are read as a
 * stream of lines, as wireguard-go does, so that none is too large (a hub's `wg setconf` is
 * megabytes): a connection holds one line and what a set=1 parsed so far (api/uapi_parse.c),
 * each line parsed as it comes and wiped. The parsed set=1 is checked and applied as a whole
 * at its blank line, so that a bad line anywhere changes nothing; then the listen port, the
 * private key and the peer operations are one device change (ctrl/devchange.h), as the
 * control API's requests and a reload are: a port in use or no memory for the peers changes
 * nothing either. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/server.h"
#include "api/unixsock.h"
#include "ctrl/devchange.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/stats.h"
#include "daemon/uapi.h"

/* ---- get=1 ------------------------------------------------------------------------------- */

static void get_key(struct tl_buf *b, const char *name, const uint8_t key[TL_KEY_LEN])
{
	char hex[65];

	tl_key_to_hex(hex, key);
	tl_buf_printf(b, "%s=%s\n", name, hex);
	explicit_bzero(hex, sizeof(hex));
}

/* A peer as `wg show` reads it: its preshared key from the configuration (this is the
 * control thread, which owns the peers; the read model holds no secret), the rest from the
 * read model's published view (the values show, telemetry and the metrics report). */
static void get_peer(struct tl_device *dev, struct tl_buf *b, const struct tl_stats_peer *s)
{
	static const uint8_t zero[TL_KEY_LEN];
	struct tl_peer_ctrl *pc;
	uint8_t pub[TL_KEY_LEN];

	if (tl_key_from_base64(pub, s->public_key) != 0 || !(pc = tl_peer_find(dev, pub)))
		return;
	get_key(b, "public_key", pub);
	get_key(b, "preshared_key", pc->cfg.has_psk ? pc->cfg.psk : zero);
	tl_buf_printf(b, "protocol_version=1\n");
	if (s->endpoint[0])
		tl_buf_printf(b, "endpoint=%s\n", s->endpoint);
	tl_buf_printf(b, "last_handshake_time_sec=%" PRIu64 "\nlast_handshake_time_nsec=%" PRIu64 "\n",
		      (uint64_t)(s->last_handshake_ns / TL_NS), (uint64_t)(s->last_handshake_ns % TL_NS));
	tl_buf_printf(b, "tx_bytes=%" PRIu64 "\nrx_bytes=%" PRIu64 "\n", s->tx_bytes, s->rx_bytes);
	tl_buf_printf(b, "persistent_keepalive_interval=%" PRIu64 "\n", s->persistent_keepalive);
	for (const char *p = s->allowed_ips; p && *p;) {
		size_t n = strcspn(p, ",");

		tl_buf_printf(b, "allowed_ip=%.*s\n", (int)n, p);
		p += n + (p[n] == ',');
	}
	b->oom |= !s->allowed_ips;
}

static void uapi_get(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_stats_view *view = tl_stats_view_get(dev);
	size_t total = tl_stats_view_peers(view);
	struct tl_stats_peer chunk[64];

	if (dev->id.has_key)
		get_key(b, "private_key", dev->id.priv);
	tl_buf_printf(b, "listen_port=%u\nfwmark=0\n", (unsigned)tl_dp_listen_port(&dev->dp));
	for (size_t at = 0; at < total; at += sizeof(chunk) / sizeof(chunk[0])) {
		size_t got = tl_stats_view_read(dev, view, at, sizeof(chunk) / sizeof(chunk[0]), chunk, &b->oom);

		for (size_t i = 0; i < got; i++) {
			get_peer(dev, b, &chunk[i]);
			tl_stats_peer_free(&chunk[i]);
		}
	}
	tl_stats_view_put(view);
}

/* ---- set=1 -------------------------------------------------------------------------------- */

static bool dev_has_peer(void *ctx, const uint8_t pub[TL_KEY_LEN])
{
	return tl_peer_find(ctx, pub) != NULL;
}

int tl_uapi_set_apply(struct tl_device *dev, struct tl_uapi_set_req *r)
{
	struct tl_uapi_set_view v = { .listen_port = tl_dp_listen_port(&dev->dp), .n_peers = dev->n_peers,
				       .max_peers = TL_MAX_PEERS, .has_peer = dev_has_peer, .ctx = dev };
	struct tl_dev_change c = { .has_port = r->has_port, .listen_port = r->port,
				   .priv = r->has_priv ? r->priv : NULL, .replace_peers = r->replace_peers,
				   .ops = r->peers, .n_ops = r->n_peers };
	struct tl_dev_refusal why;
	int err = tl_uapi_set_check(r, &v);

	if (!err)
		err = tl_dev_change(dev, &c, &why);
	if (err)
		tl_log_info("uapi: set rejected (%s), nothing changed", strerror(err));
	tl_uapi_set_req_free(r);
	return err;
}

int tl_uapi_set(struct tl_device *dev, char *body)
{
	struct tl_uapi_set_req r = { 0 };
	int err = tl_uapi_set_parse(&r, body);

	if (err) {
		tl_log_info("uapi: set rejected (%s), nothing changed", strerror(err));
		tl_uapi_set_req_free(&r);
		return err;
	}
	return tl_uapi_set_apply(dev, &r);
}

/* ---- requests, read as a stream of lines ---------------------------------------------------- */

/* The request a client is sending: its first line says which; UAPI_BAD: not one we know. */
enum uapi_mode { UAPI_CMD, UAPI_GET, UAPI_SET, UAPI_BAD };

/* A connection's request so far: nothing of its text is kept, a set=1 line becomes part of
 * the parsed operations as it arrives (the server wipes the line). */
struct uapi_conn {
	struct tl_device *dev;
	enum uapi_mode mode;
	int err;                        /* the request's first error, 0 so far */
	bool line_long;                 /* pieces of a line over TL_UAPI_LINE_MAX came: refused */
	struct tl_uapi_set_req set;     /* set=1: the operations parsed so far */
};

static void *uapi_conn_open(void *ctx)
{
	struct uapi_conn *u = calloc(1, sizeof(*u));

	if (u)
		u->dev = ctx;
	return u;
}

static void uapi_conn_close(void *conn)
{
	struct uapi_conn *u = conn;

	tl_uapi_set_req_free(&u->set);     /* wiped: it may hold a private key */
	free(u);
}

/* The reply of a finished request: get=1's state or a set=1 applied (no error so far), then
 * errno=N. Never a truncated reply: out of memory is an error instead. */
static void request_end(struct uapi_conn *u, struct tl_buf *out)
{
	int err = u->err;

	if (!err && u->mode == UAPI_GET)
		uapi_get(u->dev, out);
	else if (!err && u->mode == UAPI_SET)
		err = tl_uapi_set_apply(u->dev, &u->set);
	else if (!err)
		err = EINVAL;                 /* an empty request, or an unknown operation */
	if (out->oom) {
		tl_buf_free(out);
		err = ENOMEM;
	}
	tl_buf_printf(out, "errno=%d\n\n", -err);
	tl_uapi_set_req_free(&u->set);
	u->mode = UAPI_CMD;
	u->err = 0;
}

/* One line of a request, or a piece of one too long (no newline at its end: refused, and the
 * rest of it skipped). A blank line ends the request. After an error the rest of the request
 * is read and skipped; the reply is the error. */
static enum tl_server_next uapi_answer(void *conn, char *req, size_t len, struct tl_buf *out)
{
	struct uapi_conn *u = conn;
	bool too_long = u->line_long;

	if (req[len - 1] != '\n') {
		u->line_long = true;
		return TL_SERVER_MORE;
	}
	req[len - 1] = '\0';
	u->line_long = false;
	if (too_long) {
		u->err = u->err ? u->err : EINVAL;
		u->mode = u->mode == UAPI_CMD ? UAPI_BAD : u->mode;
	} else if (!*req)
		request_end(u, out);
	else if (u->mode == UAPI_CMD)
		u->mode = !strcmp(req, "get=1") ? UAPI_GET : !strcmp(req, "set=1") ? UAPI_SET : UAPI_BAD;
	else if (u->mode == UAPI_GET && !u->err)
		u->err = EINVAL;              /* get=1 takes no arguments */
	else if (u->mode == UAPI_SET && !u->err)
		u->err = tl_uapi_set_parse_line(&u->set, req);
	return TL_SERVER_MORE;
}

static void uapi_refuse(void *conn, bool oom, struct tl_buf *out)
{
	(void)conn;
	(void)oom;                         /* only oom: a line is handed on in pieces, never over */
	tl_log_info("uapi: no memory for a client's line, closing");
	tl_buf_printf(out, "errno=%d\n\n", -ENOMEM);
}

static const struct tl_server_ops uapi_ops = {
	.name = "uapi",
	.request_end = tl_uapi_line_end,
	.answer = uapi_answer,
	.refuse = uapi_refuse,
	.conn_open = uapi_conn_open,
	.conn_close = uapi_conn_close,
	.max_request = TL_UAPI_LINE_MAX,
	.first_buffer = TL_UAPI_LINE_MAX,
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
