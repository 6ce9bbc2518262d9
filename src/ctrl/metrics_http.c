/* Prometheus text over HTTP/1.0 and 1.1: GET (or HEAD) /metrics. A plain TCP listener
 * served from the control loop: every call does bounded work, a request is at most
 * TL_METRICS_MAX_REQUEST bytes, each connection carries one request and is closed after
 * the response (Connection: close), a client that stalls is closed. */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "ctrl/device.h"
#include "ctrl/httpreq.h"
#include "ctrl/log.h"
#include "ctrl/metrics.h"
#include "ctrl/unixsock.h"
#include "ctrl/metrics_priv.h"

#define P tl_buf_printf

/* ---- HTTP ---------------------------------------------------------------------------------- */

static int respond(struct tl_buf *out, int code, const char *minor, const char *ctype, const char *body,
		   size_t body_len, bool head)
{
	P(out, "HTTP/1.%s %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
	  minor, code, tl_http_status_text(code), ctype, body_len, code == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!head && body_len)
		P(out, "%.*s", (int)body_len, body);
	return code;
}

static int respond_error(struct tl_buf *out, int code, const char *minor, const char *why)
{
	char body[160];
	int n = snprintf(body, sizeof(body), "%d %s: %s\n", code, tl_http_status_text(code), why);

	return respond(out, code, minor, "text/plain; charset=utf-8", body, (size_t)n, false);
}

int tl_metrics_http(struct tl_device *dev, const char *req, size_t len, struct tl_buf *out)
{
	struct tl_http_req r;
	const char *why = NULL, *minor;
	int code = tl_http_parse(req, len, &r, &why);

	minor = r.minor == 0 ? "0" : "1";
	if (code)
		return respond_error(out, code, minor, why);
	if (strcmp(r.method, "GET") && strcmp(r.method, "HEAD"))
		return respond_error(out, 405, minor, "only GET and HEAD");
	if (strcmp(r.path, "/metrics"))
		return respond_error(out, 404, minor, "the metrics are at /metrics");
	{
		struct tl_buf body = { 0 };

		tl_metrics_render(dev, &body);
		if (body.oom) {
			free(body.p);
			return respond_error(out, 500, minor, "out of memory");
		}
		code = respond(out, 200, minor, "text/plain; version=0.0.4; charset=utf-8", body.p, body.len,
			       !strcmp(r.method, "HEAD"));
		free(body.p);
	}
	return code;
}

/* ---- clients ------------------------------------------------------------------------------- */

static void client_close(struct metrics_client *c)
{
	if (c->state == CL_FREE)
		return;
	close(c->fd);
	free(c->out.p);
	memset(&c->out, 0, sizeof(c->out));
	c->fd = -1;
	c->state = CL_FREE;
	c->in_len = c->out_off = 0;
}

/* End of the header section in the input: the empty line (CRLF CRLF or LF LF). */
static bool request_complete(const struct metrics_client *c)
{
	return memmem(c->in, c->in_len, "\r\n\r\n", 4) || memmem(c->in, c->in_len, "\n\n", 2);
}

static void client_answer(struct tl_device *dev, struct tl_metrics *m, struct metrics_client *c, int code)
{
	if (code) {    /* an error found before the request was parsed */
		char body[96];
		int n = snprintf(body, sizeof(body), "%d %s\n", code, tl_http_status_text(code));

		P(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
			   "Connection: close\r\n\r\n%s", code, tl_http_status_text(code), n, body);
	} else {
		code = tl_metrics_http(dev, c->in, c->in_len, &c->out);
	}
	if (c->out.oom) {    /* nothing sensible can be sent */
		client_close(c);
		return;
	}
	m->requests++;
	if (code >= 400)
		m->errors++;
	c->state = CL_WRITING;
}

/* Returns 1 on progress, 0 if none, -1 if the client is to be closed. */
static int client_read(struct tl_device *dev, struct tl_metrics *m, struct metrics_client *c)
{
	char sink[1024];
	ssize_t n;

	if (c->state == CL_LINGER) {    /* discard what the client still sends until it closes */
		n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return -1;
		return n > 0;
	}
	if (c->state != CL_READING)
		return 0;
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	if (n == 0) {        /* the client finished sending: answer what came, if anything */
		if (!c->in_len)
			return -1;
		client_answer(dev, m, c, 0);
		return 1;
	}
	c->in_len += (size_t)n;
	if (request_complete(c))
		client_answer(dev, m, c, 0);
	else if (c->in_len == sizeof(c->in))
		client_answer(dev, m, c, 431);
	return 1;
}

static int client_write(struct metrics_client *c)
{
	int r;

	if (c->state != CL_WRITING)
		return 0;
	r = tl_sock_send(c->fd, c->out.p, c->out.len, &c->out_off);
	if (r > 0 && c->out_off == c->out.len) {
		/* half-close, then drain: closing with unread input would reset the connection
		 * and could destroy the response before the client read it */
		shutdown(c->fd, SHUT_WR);
		free(c->out.p);
		memset(&c->out, 0, sizeof(c->out));
		c->state = CL_LINGER;
	}
	return r;
}

static unsigned client_poll(struct tl_device *dev, struct tl_metrics *m, struct metrics_client *c, uint64_t now)
{
	int r = client_read(dev, m, c), w = r < 0 ? -1 : client_write(c);
	uint64_t limit = c->state == CL_LINGER ? METRICS_LINGER_NS : METRICS_IDLE_NS;

	if (r > 0 || w > 0)
		c->active_ns = now;
	if (r < 0 || w < 0 || now - c->active_ns > limit) {
		client_close(c);
		return 1;
	}
	return (unsigned)(r > 0) + (unsigned)(w > 0);
}

/* A free slot, or else the slot of the client that has been quiet longest, closed: idle
 * connections cannot lock a scraper out. */
static struct metrics_client *client_slot(struct tl_metrics *m)
{
	struct metrics_client *old = NULL;

	for (int i = 0; i < METRICS_MAX_CLIENTS; i++) {
		struct metrics_client *c = &m->c[i];

		if (c->state == CL_FREE)
			return c;
		if (c->state != CL_WRITING && (!old || c->active_ns < old->active_ns))
			old = c;
	}
	if (old) {
		tl_log_debug("metrics: %d clients, closing the quietest", METRICS_MAX_CLIENTS);
		client_close(old);
	}
	return old;
}

static unsigned metrics_accept(struct tl_metrics *m, uint64_t now)
{
	unsigned n = 0;

	for (int k = 0; k < METRICS_ACCEPT_PER_POLL; k++) {
		struct metrics_client *c;
		int fd = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			break;
		n++;
		c = client_slot(m);
		if (!c) {     /* every slot is sending a response */
			close(fd);
			continue;
		}
		c->fd = fd;
		c->state = CL_READING;
		c->in_len = c->out_off = 0;
		c->active_ns = now;
	}
	return n;
}

unsigned tl_metrics_poll(struct tl_device *dev)
{
	struct tl_metrics *m = dev->metrics;
	uint64_t now;
	unsigned n;

	if (!m)
		return 0;
	now = tl_now_ns();
	n = metrics_accept(m, now);
	for (int i = 0; i < METRICS_MAX_CLIENTS; i++)
		if (m->c[i].state != CL_FREE)
			n += client_poll(dev, m, &m->c[i], now);
	return n;
}

/* ---- listener ------------------------------------------------------------------------------ */

static int listen_on(const struct tl_sockaddr *a)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd, one = 1;

	if (a->ip.family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		memcpy(&s4->sin_addr, a->ip.addr, 4);
		sl = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		memcpy(&s6->sin6_addr, a->ip.addr, 16);
		sl = sizeof(*s6);
	}
	fd = socket(a->ip.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->ip.family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, METRICS_MAX_CLIENTS) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int tl_metrics_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_metrics *m;
	char where[64];

	if (!dev->cfg->metrics.enabled)
		return 0;
	tl_sockaddr_format(where, sizeof(where), &dev->cfg->metrics.listen);
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "metrics: %s", strerror(ENOMEM));
		return -1;
	}
	for (int i = 0; i < METRICS_MAX_CLIENTS; i++)
		m->c[i].fd = -1;
	m->fd = listen_on(&dev->cfg->metrics.listen);
	if (m->fd < 0) {
		snprintf(err, errlen, "metrics.listen: cannot listen on %s: %s", where, strerror(errno));
		free(m);
		return -1;
	}
	dev->metrics = m;
	tl_log_info("metrics: Prometheus text on http://%s/metrics", where);
	return 0;
}

void tl_metrics_close(struct tl_device *dev)
{
	struct tl_metrics *m = dev->metrics;

	if (!m)
		return;
	for (int i = 0; i < METRICS_MAX_CLIENTS; i++)
		client_close(&m->c[i]);
	close(m->fd);
	free(m);
	dev->metrics = NULL;
}
