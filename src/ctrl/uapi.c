/* WireGuard UAPI socket: clients, request framing and the get=1 reply. A request is
 * "get=1" or "set=1" followed by key=value lines and ended by a blank line; the reply is
 * key=value lines ending with "errno=N" and a blank line, N being 0 or a negative errno value
 * as wireguard-go answers and `wg` expects (it prints strerror(-N)). The control loop calls
 * tl_uapi_poll on every iteration: nothing here blocks, and each call does bounded work. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/stats.h"
#include "ctrl/uapi.h"
#include "ctrl/unixsock.h"

#define UAPI_MAX_CLIENTS 16
#define UAPI_READ_CHUNK 65536           /* per client per poll */
#define UAPI_IN_MIN 4096                /* a client's input buffer at first; it grows by doubling */
#define UAPI_IDLE_NS (10ull * TL_NS)    /* a client that stalls this long is closed */

struct uapi_client {
	int fd;                         /* -1 = free slot */
	char *in;                       /* in_cap bytes, at most TL_UAPI_MAX_REQUEST + 1 */
	size_t in_len, in_cap;
	size_t scanned;                 /* in[0..scanned) holds no blank line */
	struct tl_buf out;
	size_t out_off;
	bool closing;                   /* close once the reply is written */
	uint64_t active_ns;
};

struct tl_uapi {
	struct tl_unixsock sock;
	struct uapi_client c[UAPI_MAX_CLIENTS];
};

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

/* ---- clients ------------------------------------------------------------------------------- */

/* Everything a client held is wiped, the whole input buffer included: a pipelined request
 * (a private key) can sit anywhere in it. */
static void client_wipe(struct uapi_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->in)
		explicit_bzero(c->in, c->in_cap);
	tl_buf_free(&c->out);
}

/* Room for more input: the buffer doubles, up to TL_UAPI_MAX_REQUEST + 1 bytes. The old
 * one is wiped before it is freed (a request in it may carry a private key). 0, or -1 at
 * the limit or out of memory. */
static int client_grow(struct uapi_client *c)
{
	size_t cap = c->in_cap * 2;
	char *p;

	if (c->in_cap > TL_UAPI_MAX_REQUEST)
		return -1;
	cap = cap > TL_UAPI_MAX_REQUEST + 1 ? TL_UAPI_MAX_REQUEST + 1 : cap;
	p = calloc(1, cap);
	if (!p)
		return -1;
	memcpy(p, c->in, c->in_len);
	explicit_bzero(c->in, c->in_cap);
	free(c->in);
	c->in = p;
	c->in_cap = cap;
	return 0;
}

static void client_close(struct uapi_client *c)
{
	if (c->fd < 0)
		return;
	client_wipe(c);
	free(c->in);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Drops the first used bytes of the input: what follows moves to the front and the tail it
 * vacated is wiped, so that no copy of a request stays behind. */
static void client_consume(struct uapi_client *c, size_t used)
{
	memmove(c->in, c->in + used, c->in_len - used);
	explicit_bzero(c->in + c->in_len - used, used);
	c->in_len -= used;
	c->scanned = 0;
}

/* Answers every complete request in the input buffer; an overlong one gets EINVAL and the
 * connection is closed after the reply. */
static void client_process(struct tl_device *dev, struct uapi_client *c)
{
	char *end;
	size_t from = c->scanned ? c->scanned - 1 : 0;   /* a blank line may straddle reads */

	while (!c->closing && (end = memmem(c->in + from, c->in_len - from, "\n\n", 2))) {
		size_t used = (size_t)(end - c->in) + 2;

		*end = '\0';
		tl_uapi_request(dev, c->in, &c->out);
		client_consume(c, used);
		from = 0;
	}
	c->scanned = c->in_len;
	if (!c->closing && c->in_len >= TL_UAPI_MAX_REQUEST) {
		tl_log_info("uapi: request over %u bytes without its blank line, closing", TL_UAPI_MAX_REQUEST);
		tl_buf_printf(&c->out, "errno=%d\n\n", -EINVAL);
		c->closing = true;
	}
}

/* Returns 1 if bytes came in, 0 if none, -1 if the client is gone. */
static int client_read(struct tl_device *dev, struct uapi_client *c)
{
	size_t room;
	ssize_t n;

	if (c->closing || c->out.len > c->out_off)
		return 0;          /* one reply at a time: the client reads before sending more */
	if (c->in_len + 1 >= c->in_cap && client_grow(c) != 0) {
		tl_log_info("uapi: no memory for a request of %zu bytes, closing", c->in_len);
		tl_buf_printf(&c->out, "errno=%d\n\n", -ENOMEM);
		c->closing = true;
		return 0;
	}
	room = c->in_cap - 1 - c->in_len;
	n = recv(c->fd, c->in + c->in_len, room < UAPI_READ_CHUNK ? room : UAPI_READ_CHUNK, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return -1;
	if (n < 0)
		return 0;
	c->in_len += (size_t)n;
	client_process(dev, c);
	return 1;
}

static int client_write(struct uapi_client *c)
{
	int r = tl_sock_send(c->fd, c->out.p, c->out.len, &c->out_off);

	if (r > 0 && c->out_off == c->out.len) {
		tl_buf_free(&c->out);
		c->out_off = 0;
	}
	return r;
}

static unsigned client_poll(struct tl_device *dev, struct uapi_client *c, uint64_t now)
{
	int r = client_read(dev, c), w;

	w = r < 0 ? -1 : client_write(c);
	if (r < 0 || w < 0 || (c->closing && !c->out.len) || now - c->active_ns > UAPI_IDLE_NS) {
		client_close(c);
		return 1;
	}
	if (r > 0 || w > 0)
		c->active_ns = now;
	return (unsigned)(r > 0) + (unsigned)(w > 0);
}

static struct uapi_client *client_slot(struct tl_uapi *u)
{
	for (int i = 0; i < UAPI_MAX_CLIENTS; i++)
		if (u->c[i].fd < 0)
			return &u->c[i];
	return NULL;
}

/* Takes at most one new connection per call; a client beyond the limit is closed at once. */
static unsigned uapi_accept(struct tl_uapi *u, uint64_t now)
{
	struct uapi_client *c;
	int fd = tl_unixsock_accept(&u->sock);

	if (fd < 0)
		return 0;
	c = client_slot(u);
	if (c) {
		c->in = calloc(1, UAPI_IN_MIN);
		c->in_cap = UAPI_IN_MIN;
	}
	if (!c || !c->in) {
		tl_log_info("uapi: too many clients, refusing one");
		close(fd);
		return 1;
	}
	c->fd = fd;
	c->active_ns = now;
	return 1;
}

unsigned tl_uapi_poll(struct tl_device *dev)
{
	struct tl_uapi *u = dev->uapi;
	uint64_t now;
	unsigned n;

	if (!u)
		return 0;
	now = tl_now_ns();
	n = uapi_accept(u, now);
	for (int i = 0; i < UAPI_MAX_CLIENTS; i++)
		if (u->c[i].fd >= 0)
			n += client_poll(dev, &u->c[i], now);
	return n;
}

int tl_uapi_test_client(struct tl_device *dev, const char *text, size_t len, size_t chunk, char **seen,
			size_t *seen_len, struct tl_buf *reply)
{
	struct uapi_client c = { .fd = -1, .in_cap = UAPI_IN_MIN };
	size_t off = 0;

	if (len > TL_UAPI_MAX_REQUEST || !(c.in = calloc(1, c.in_cap)))
		return -1;
	chunk = chunk ? chunk : len;
	while (off < len && !c.closing) {   /* as client_read takes it in */
		size_t n = len - off < chunk ? len - off : chunk;

		while (c.in_cap - 1 - c.in_len < n)
			if (client_grow(&c) != 0) {
				client_wipe(&c);
				free(c.in);
				return -1;
			}
		memcpy(c.in + c.in_len, text + off, n);
		c.in_len += n;
		off += n;
		client_process(dev, &c);
	}
	if (reply && c.out.len)
		tl_buf_printf(reply, "%.*s", (int)c.out.len, c.out.p);
	client_wipe(&c);
	*seen = c.in;
	*seen_len = c.in_cap;
	return 0;
}

/* ---- the socket ------------------------------------------------------------------------------ */

int tl_uapi_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_uapi *u = calloc(1, sizeof(*u));

	if (!u) {
		snprintf(err, errlen, "uapi: %s", strerror(ENOMEM));
		return -1;
	}
	for (int i = 0; i < UAPI_MAX_CLIENTS; i++)
		u->c[i].fd = -1;
	if (tl_unixsock_open(&u->sock, "uapi", TL_UAPI_DIR, dev->cfg->name, UAPI_MAX_CLIENTS, err, errlen) != 0) {
		free(u);
		return -1;
	}
	dev->uapi = u;
	tl_log_info("uapi: listening on %s", u->sock.path);
	return 0;
}

void tl_uapi_close(struct tl_device *dev)
{
	struct tl_uapi *u = dev->uapi;

	if (!u)
		return;
	for (int i = 0; i < UAPI_MAX_CLIENTS; i++)
		client_close(&u->c[i]);
	tl_unixsock_close(&u->sock);
	free(u);
	dev->uapi = NULL;
}
