/* WireGuard UAPI socket: clients, request framing and the get=1 reply. A request is
 * "get=1" or "set=1" followed by key=value lines and ended by a blank line; the reply is
 * key=value lines ending with "errno=N" and a blank line. The control loop calls
 * tl_uapi_poll on every iteration: nothing here blocks, and each call does bounded work. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/uapi.h"

#define UAPI_MAX_CLIENTS 16
#define UAPI_READ_CHUNK 16384           /* per client per poll */
#define UAPI_IDLE_NS (10ull * TL_NS)    /* a client that stalls this long is closed */

struct uapi_client {
	int fd;                         /* -1 = free slot */
	char *in;                       /* TL_UAPI_MAX_REQUEST + 1 bytes */
	size_t in_len;
	struct tl_uapi_buf out;
	size_t out_off;
	bool closing;                   /* close once the reply is written */
	uint64_t active_ns;
};

struct tl_uapi {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t st_dev;                   /* the socket file we created, to remove only ours */
	ino_t st_ino;
	struct uapi_client c[UAPI_MAX_CLIENTS];
};

/* ---- reply buffer ------------------------------------------------------------------------ */

void tl_uapi_printf(struct tl_uapi_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? 2 * b->cap : 1024) + (size_t)n;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static void buf_free(struct tl_uapi_buf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->cap);   /* get replies carry the private key */
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- get=1 ------------------------------------------------------------------------------- */

static void get_key(struct tl_uapi_buf *b, const char *name, const uint8_t key[TL_KEY_LEN])
{
	char hex[65];

	tl_key_to_hex(hex, key);
	tl_uapi_printf(b, "%s=%s\n", name, hex);
	explicit_bzero(hex, sizeof(hex));
}

static void get_endpoint(struct tl_uapi_buf *b, struct tl_peer_ctrl *pc)
{
	struct tl_sockaddr sa = { 0 };
	struct tl_endpoint ep;
	char text[64];

	tl_endpoint_read(pc->dp, &ep);
	if (!ep.family || !ep.port)
		return;
	sa.ip.family = ep.family;
	memcpy(sa.ip.addr, ep.ip, sizeof(sa.ip.addr));
	sa.port = ep.port;
	tl_sockaddr_format(text, sizeof(text), &sa);
	tl_uapi_printf(b, "endpoint=%s\n", text);
}

static void get_peer(struct tl_uapi_buf *b, struct tl_peer_ctrl *pc)
{
	static const uint8_t zero[TL_KEY_LEN];
	uint64_t hs = pc->last_handshake_unix_ns;
	char text[64];

	get_key(b, "public_key", pc->cfg.public_key);
	get_key(b, "preshared_key", pc->cfg.has_psk ? pc->cfg.psk : zero);
	tl_uapi_printf(b, "protocol_version=1\n");
	get_endpoint(b, pc);
	tl_uapi_printf(b, "last_handshake_time_sec=%" PRIu64 "\nlast_handshake_time_nsec=%" PRIu64 "\n",
		       (uint64_t)(hs / TL_NS), (uint64_t)(hs % TL_NS));
	tl_uapi_printf(b, "tx_bytes=%" PRIu64 "\nrx_bytes=%" PRIu64 "\n",
		       atomic_load_explicit(&pc->dp->stats.tx_bytes, memory_order_relaxed),
		       atomic_load_explicit(&pc->dp->stats.rx_bytes, memory_order_relaxed));
	tl_uapi_printf(b, "persistent_keepalive_interval=%u\n", (unsigned)pc->cfg.persistent_keepalive);
	for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++) {
		tl_prefix_format(text, sizeof(text), &pc->cfg.allowed_ips[i]);
		tl_uapi_printf(b, "allowed_ip=%s\n", text);
	}
}

static void uapi_get(struct tl_device *dev, struct tl_uapi_buf *b)
{
	struct tl_peer_ctrl *pc;

	if (dev->id.has_key)
		get_key(b, "private_key", dev->id.priv);
	tl_uapi_printf(b, "listen_port=%u\nfwmark=0\n", (unsigned)dev->dp.listen_port);
	TAILQ_FOREACH(pc, &dev->peers, link)
		get_peer(b, pc);
}

/* ---- requests ------------------------------------------------------------------------------ */

void tl_uapi_request(struct tl_device *dev, char *req, struct tl_uapi_buf *out)
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
		buf_free(out);
		err = ENOMEM;
	}
	tl_uapi_printf(out, "errno=%d\n\n", err);
}

/* ---- clients ------------------------------------------------------------------------------- */

static void client_close(struct uapi_client *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	if (c->in)
		explicit_bzero(c->in, c->in_len);
	free(c->in);
	buf_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Answers every complete request in the input buffer; an overlong one gets EINVAL and the
 * connection is closed after the reply. */
static void client_process(struct tl_device *dev, struct uapi_client *c)
{
	char *end;

	while (!c->closing && (end = memmem(c->in, c->in_len, "\n\n", 2))) {
		size_t used = (size_t)(end - c->in) + 2;

		*end = '\0';
		tl_uapi_request(dev, c->in, &c->out);
		explicit_bzero(c->in, used);
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
	}
	if (!c->closing && c->in_len >= TL_UAPI_MAX_REQUEST) {
		tl_log_info("uapi: request over %u bytes without its blank line, closing", TL_UAPI_MAX_REQUEST);
		tl_uapi_printf(&c->out, "errno=%d\n\n", EINVAL);
		c->closing = true;
	}
}

/* Returns 1 if bytes came in, 0 if none, -1 if the client is gone. */
static int client_read(struct tl_device *dev, struct uapi_client *c)
{
	size_t room = TL_UAPI_MAX_REQUEST - c->in_len;
	ssize_t n;

	if (c->closing || c->out.len > c->out_off)
		return 0;          /* one reply at a time: the client reads before sending more */
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
	ssize_t n;

	if (c->out.len == c->out_off)
		return 0;
	n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	c->out_off += (size_t)n;
	if (c->out_off == c->out.len) {
		buf_free(&c->out);
		c->out_off = 0;
	}
	return 1;
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
	int fd = accept4(u->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return 0;
	c = client_slot(u);
	if (c)
		c->in = malloc(TL_UAPI_MAX_REQUEST + 1);
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

/* ---- the socket file ------------------------------------------------------------------------ */

static void sun_of(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", path);
}

/* 1 if a live process answers on path, 0 if not (a stale file is removed), -1 on error. */
static int socket_in_use(const char *path)
{
	struct sockaddr_un sun;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -1;
	sun_of(&sun, path);
	r = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (r == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	if (errno != ECONNREFUSED)
		return -1;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

static int socket_listen(struct tl_uapi *u)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int r;

	u->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0)
		return -1;
	sun_of(&sun, u->path);
	old = umask(0177);           /* the socket file is born 0600 */
	r = bind(u->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r < 0)
		return -1;
	if (stat(u->path, &st) < 0 || listen(u->fd, UAPI_MAX_CLIENTS) < 0) {
		r = errno;
		unlink(u->path);
		errno = r;
		return -1;
	}
	u->st_dev = st.st_dev;
	u->st_ino = st.st_ino;
	return 0;
}

static int uapi_path(struct tl_uapi *u, const char *name)
{
	int n = snprintf(u->path, sizeof(u->path), "%s/%s.sock", TL_UAPI_DIR, name);

	return n > 0 && (size_t)n < sizeof(u->path) ? 0 : -1;
}

int tl_uapi_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_uapi *u = calloc(1, sizeof(*u));
	int busy;

	if (!u || uapi_path(u, dev->cfg->name) != 0) {
		snprintf(err, errlen, "uapi: %s", u ? "instance name too long for a socket path" : strerror(ENOMEM));
		free(u);
		return -1;
	}
	u->fd = -1;
	for (int i = 0; i < UAPI_MAX_CLIENTS; i++)
		u->c[i].fd = -1;
	if (mkdir(TL_UAPI_DIR, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "uapi: cannot create %s: %s", TL_UAPI_DIR, strerror(errno));
		goto fail;
	}
	busy = socket_in_use(u->path);
	if (busy != 0) {
		snprintf(err, errlen, busy > 0 ? "uapi: %s: another daemon is serving '%s' (is it still running?)"
					  : "uapi: %s: cannot check or remove the old socket (%s)",
			 u->path, busy > 0 ? dev->cfg->name : strerror(errno));
		goto fail;
	}
	if (socket_listen(u) != 0) {
		snprintf(err, errlen, "uapi: cannot listen on %s: %s", u->path, strerror(errno));
		goto fail;
	}
	dev->uapi = u;
	tl_log_info("uapi: listening on %s", u->path);
	return 0;
fail:
	if (u->fd >= 0)
		close(u->fd);
	free(u);
	return -1;
}

void tl_uapi_close(struct tl_device *dev)
{
	struct tl_uapi *u = dev->uapi;
	struct stat st;

	if (!u)
		return;
	for (int i = 0; i < UAPI_MAX_CLIENTS; i++)
		client_close(&u->c[i]);
	if (stat(u->path, &st) == 0 && st.st_dev == u->st_dev && st.st_ino == u->st_ino)
		unlink(u->path);
	close(u->fd);
	free(u);
	dev->uapi = NULL;
}
