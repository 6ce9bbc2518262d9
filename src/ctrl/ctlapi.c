/* YAML control API socket: clients and request framing (the operations are in
 * ctlapi_ops.c). A request is one YAML document ended by a line "..." or by the client
 * shutting down its writing side; the reply is one document from "---" to "...". The control
 * loop calls tl_ctlapi_poll on every iteration: nothing here blocks, and each call does
 * bounded work (one new connection, at most CTL_READ_CHUNK bytes read per client). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl/ctlapi.h"
#include "ctrl/device.h"
#include "ctrl/log.h"

#define CTL_READ_CHUNK 16384            /* per client per poll */
#define CTL_IDLE_NS (10ull * TL_NS)     /* a client that stalls this long is closed */

/* ---- framing -------------------------------------------------------------------------------- */

/* Length of the first request in p (up to and including its "..." line), 0 if incomplete. */
static size_t request_end(const char *p, size_t len)
{
	for (size_t i = 0; i + 3 <= len; i++) {
		size_t j = i + 3;

		if ((i && p[i - 1] != '\n') || memcmp(p + i, "...", 3))
			continue;
		if (j < len && p[j] == '\r')
			j++;
		if (j < len && p[j] == '\n')
			return j + 1;
	}
	return 0;
}

static bool blank(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}

static void client_refuse(struct tl_ctl_client *c, const char *why)
{
	tl_log_info("ctlapi: %s, closing the connection", why);
	tl_api_error_reply(&c->out, NULL, "(request)", why);
	c->closing = true;
}

static void client_request(struct tl_device *dev, struct tl_ctl_client *c, const char *text, size_t len)
{
	if (memchr(text, '\0', len))
		client_refuse(c, "request contains a NUL byte (a request is YAML text)");
	else
		tl_ctlapi_request(dev, text, len, &c->out);
}

/* Answers every complete request in the input buffer; at end of input what is left is the
 * last request; a request that outgrows the limit is refused. */
static void client_process(struct tl_device *dev, struct tl_ctl_client *c)
{
	size_t used;

	while (!c->closing && (used = request_end(c->in, c->in_len))) {
		client_request(dev, c, c->in, used);
		explicit_bzero(c->in, used);     /* requests may carry preshared keys */
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
	}
	if (!c->closing && c->eof) {
		if (!blank(c->in, c->in_len))
			client_request(dev, c, c->in, c->in_len);
		c->closing = true;
	}
	if (!c->closing && c->in_len >= TL_CTL_MAX_REQUEST)
		client_refuse(c, "request larger than 65536 bytes (a request ends with a line '...')");
	if (c->closing) {
		explicit_bzero(c->in, c->in_len);
		c->in_len = 0;
	}
}

/* ---- clients ------------------------------------------------------------------------------ */

static void client_close(struct tl_ctl_client *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	if (c->in)
		explicit_bzero(c->in, TL_CTL_MAX_REQUEST + 1);
	free(c->in);
	tl_buf_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static ssize_t client_recv(struct tl_ctl_client *c, void *buf, size_t len)
{
	ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return -2;
	if (n == 0)
		c->eof = true;
	return n;
}

/* Returns 1 if something came in (or the client half-closed), 0 if nothing, -1 if gone. */
static int client_read(struct tl_device *dev, struct tl_ctl_client *c)
{
	ssize_t n;

	if (c->closing || c->eof || c->out.len > c->out_off)
		return 0;          /* one reply at a time: the client reads before sending more */
	n = client_recv(c, c->in + c->in_len, TL_CTL_MAX_REQUEST - c->in_len < CTL_READ_CHUNK ?
				  TL_CTL_MAX_REQUEST - c->in_len : CTL_READ_CHUNK);
	if (n == -2)
		return 0;
	if (n < 0)
		return -1;
	c->in_len += (size_t)n;
	client_process(dev, c);
	return 1;
}

static int client_write(struct tl_ctl_client *c)
{
	int r = tl_sock_send(c->fd, c->out.p, c->out.len, &c->out_off);

	if (r > 0 && c->out_off == c->out.len) {
		tl_buf_free(&c->out);
		c->out_off = 0;
	}
	return r;
}

static bool client_done(const struct tl_ctl_client *c)
{
	return c->closing && !c->out.len;
}

static unsigned client_poll(struct tl_device *dev, struct tl_ctl_client *c, uint64_t now)
{
	int r = client_read(dev, c), w;

	w = r < 0 ? -1 : client_write(c);
	if (r < 0 || w < 0 || client_done(c) || now - c->active_ns > CTL_IDLE_NS) {
		client_close(c);
		return 1;
	}
	if (r > 0 || w > 0)
		c->active_ns = now;
	return (unsigned)(r > 0) + (unsigned)(w > 0);
}

static struct tl_ctl_client *client_slot(struct tl_ctlapi *a)
{
	for (int i = 0; i < TL_CTL_MAX_CLIENTS; i++)
		if (a->c[i].fd < 0)
			return &a->c[i];
	return NULL;
}

/* Takes at most one new connection per call; a client beyond the limit is closed at once. */
static unsigned ctl_accept(struct tl_ctlapi *a, uint64_t now)
{
	struct tl_ctl_client *c;
	int fd = tl_unixsock_accept(&a->sock);

	if (fd < 0)
		return 0;
	c = client_slot(a);
	if (c)
		c->in = malloc(TL_CTL_MAX_REQUEST + 1);
	if (!c || !c->in) {
		tl_log_info("ctlapi: too many clients, refusing one");
		close(fd);
		return 1;
	}
	c->fd = fd;
	c->active_ns = now;
	return 1;
}

unsigned tl_ctlapi_poll(struct tl_device *dev)
{
	struct tl_ctlapi *a = dev->ctlapi;
	uint64_t now;
	unsigned n;

	if (!a)
		return 0;
	now = tl_now_ns();
	n = ctl_accept(a, now);
	for (int i = 0; i < TL_CTL_MAX_CLIENTS; i++)
		if (a->c[i].fd >= 0)
			n += client_poll(dev, &a->c[i], now);
	return n;
}

/* ---- the socket ------------------------------------------------------------------------------ */

int tl_ctlapi_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_ctlapi *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, errlen, "ctlapi: %s", strerror(ENOMEM));
		return -1;
	}
	for (int i = 0; i < TL_CTL_MAX_CLIENTS; i++)
		a->c[i].fd = -1;
	a->spec = tl_api_spec_builtin(err, errlen);
	if (!a->spec ||
	    tl_unixsock_open(&a->sock, "ctlapi", TL_CTL_DIR, dev->cfg->name, TL_CTL_MAX_CLIENTS, err, errlen) != 0) {
		free(a);
		return -1;
	}
	dev->ctlapi = a;
	tl_log_info("ctlapi: listening on %s", a->sock.path);
	return 0;
}

void tl_ctlapi_close(struct tl_device *dev)
{
	struct tl_ctlapi *a = dev->ctlapi;

	if (!a)
		return;
	for (int i = 0; i < TL_CTL_MAX_CLIENTS; i++)
		client_close(&a->c[i]);
	tl_unixsock_close(&a->sock);
	free(a);
	dev->ctlapi = NULL;
}
