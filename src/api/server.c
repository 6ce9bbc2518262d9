/* The request server (server.h): connection slots, framing, replies, timeouts. A client's
 * input is wiped whenever it is consumed, moved or freed: UAPI and control API requests may
 * carry private and preshared keys. */
#include "api/server.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- a client's input ---------------------------------------------------------------------- */

static int client_alloc(struct tl_server_client *c, const struct tl_server_ops *ops, void *ctx)
{
	c->in_cap = ops->first_buffer < ops->max_request + 1 ? ops->first_buffer : ops->max_request + 1;
	c->in = calloc(1, c->in_cap);
	c->in_len = c->scanned = c->out_off = 0;
	c->closing = false;
	memset(&c->out, 0, sizeof(c->out));
	c->conn = c->in && ops->conn_open ? ops->conn_open(ctx) : NULL;
	if (c->in && (c->conn || !ops->conn_open))
		return 0;
	free(c->in);
	c->in = NULL;
	return -1;
}

/* The input buffer wiped (it held requests, keys among them), then freed, or handed to
 * *keep (tl_server_feed shows it to tests as every client leaves it). */
static void client_free_in(struct tl_server_client *c, char **keep)
{
	if (c->in)
		explicit_bzero(c->in, c->in_cap);
	if (keep)
		*keep = c->in;
	else
		free(c->in);
	c->in = NULL;
}

/* What a client holds, wiped and freed: its input, its reply, its connection state. */
static void client_free(struct tl_server_client *c, const struct tl_server_ops *ops)
{
	client_free_in(c, NULL);
	tl_buf_free(&c->out);
	if (c->conn)
		ops->conn_close(c->conn);
	c->conn = NULL;
	c->in_len = c->in_cap = 0;
}

/* The ctx a client's requests are answered with. */
static void *client_ctx(const struct tl_server_client *c, void *ctx)
{
	return c->conn ? c->conn : ctx;
}

/* Room for more input: the buffer doubles, up to max_request + 1 bytes; the old one is
 * wiped before it is freed. 0, or -1 at the limit or out of memory. */
static int client_grow(struct tl_server_client *c, const struct tl_server_ops *ops)
{
	size_t cap = c->in_cap * 2;
	char *p;

	if (c->in_cap > ops->max_request)
		return -1;
	cap = cap > ops->max_request + 1 ? ops->max_request + 1 : cap;
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

/* Drops the first used bytes: what follows moves to the front, the vacated tail is wiped. */
static void client_consume(struct tl_server_client *c, size_t used)
{
	memmove(c->in, c->in + used, c->in_len - used);
	explicit_bzero(c->in + c->in_len - used, used);
	c->in_len -= used;
	c->scanned = 0;
}

/* Answers every complete request in the input (the answered ones are dropped at once at the
 * end: a buffer of many short requests is moved once, not once per request); at the end of
 * the input what is left goes to at_eof; input that outgrows the limit is refused. */
static void client_process(struct tl_server_client *c, const struct tl_server_ops *ops, void *ctx, bool eof)
{
	size_t used, off = 0;

	ctx = client_ctx(c, ctx);
	while (!c->closing && (used = ops->request_end(c->in + off, c->in_len - off, off ? 0 : c->scanned))) {
		char *req = c->in + off;
		char keep = req[used];

		req[used] = '\0';
		if (ops->answer(ctx, req, used, &c->out) == TL_SERVER_CLOSE || ops->one_request)
			c->closing = true;
		req[used] = keep;
		off += used;
	}
	if (off)
		client_consume(c, off);
	c->scanned = c->in_len;
	if (!c->closing && eof) {
		if (ops->at_eof)
			ops->at_eof(ctx, c->in, c->in_len, &c->out);
		c->closing = true;
	}
	if (!c->closing && c->in_len >= ops->max_request) {
		ops->refuse(ctx, false, &c->out);
		c->closing = true;
	}
	if (c->closing) {
		explicit_bzero(c->in, c->in_len);
		c->in_len = 0;
	}
}

/* ---- connections ------------------------------------------------------------------------------ */

static void client_close(struct tl_server_client *c)
{
	if (c->state == TL_SC_FREE)
		return;
	if (c->item.fd >= 0) {
		int fd = c->item.fd;

		tl_evloop_del(c->srv->loop, &c->item);
		close(fd);
	}
	client_free(c, c->srv->ops);
	c->state = TL_SC_FREE;
}

static bool out_pending(const struct tl_server_client *c)
{
	return c->out.len > c->out_off;
}

/* Returns 1 on progress, 0 if the socket is full, -1 if the client is gone. */
static int client_write(struct tl_server_client *c)
{
	ssize_t n;

	if (c->out.oom)
		return -1;      /* nothing sensible can be sent */
	if (!out_pending(c))
		return 0;
	n = send(c->item.fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	c->out_off += (size_t)n;
	if (c->out_off == c->out.len) {
		tl_buf_free(&c->out);
		c->out_off = 0;
	}
	return 1;
}

/* Reads what came; returns 1 on progress, 0 if nothing, -1 if the client is gone. */
static int client_read(struct tl_server_client *c)
{
	const struct tl_server_ops *ops = c->srv->ops;
	size_t room;
	ssize_t n;

	if (c->state == TL_SC_LINGER) {    /* discard what the client still sends until it closes */
		char sink[1024];

		n = recv(c->item.fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return -1;
		return n > 0;
	}
	if (c->closing || out_pending(c))
		return 0;          /* one reply at a time: the client reads before sending more */
	if (c->in_len + 1 >= c->in_cap && client_grow(c, ops) != 0) {
		ops->refuse(client_ctx(c, c->srv->ctx), true, &c->out);
		c->closing = true;
		return 1;
	}
	room = c->in_cap - 1 - c->in_len;
	n = recv(c->item.fd, c->in + c->in_len, room < ops->read_chunk ? room : ops->read_chunk, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	c->in_len += (size_t)n;
	c->in[c->in_len] = '\0';
	client_process(c, ops, c->srv->ctx, n == 0);
	if (n == 0 && c->state == TL_SC_READING && !out_pending(c))
		return -1;         /* nothing left to say to a client that is gone */
	return 1;
}

/* After the reply of the last request: close, or half-close and drain (one_request). */
static int client_finish(struct tl_server_client *c)
{
	if (!c->closing || out_pending(c) || c->state == TL_SC_LINGER)
		return 0;
	if (!c->srv->ops->one_request)
		return -1;
	shutdown(c->item.fd, SHUT_WR);     /* closing with unread input would reset the connection */
	c->state = TL_SC_LINGER;
	return 0;
}

static void client_event(void *arg, uint32_t events)
{
	struct tl_server_client *c = arg;
	int r = 0, w;

	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		r = client_read(c);
	w = r < 0 ? -1 : client_write(c);
	if (r > 0 || w > 0)
		c->active_ns = now_ns();
	if (r < 0 || w < 0 || client_finish(c) < 0) {
		client_close(c);
		return;
	}
	if (c->state != TL_SC_LINGER)
		c->state = out_pending(c) ? TL_SC_WRITING : TL_SC_READING;
	tl_evloop_mod(c->srv->loop, &c->item, out_pending(c) ? EPOLLOUT : EPOLLIN);
}

/* A free slot, or (evict_quietest) the slot of the client quiet longest, closed. */
static struct tl_server_client *client_slot(struct tl_server *s)
{
	struct tl_server_client *old = NULL;

	for (int i = 0; i < TL_SERVER_MAX_CLIENTS; i++) {
		struct tl_server_client *c = &s->c[i];

		if (c->state == TL_SC_FREE)
			return c;
		if (c->state != TL_SC_WRITING && (!old || c->active_ns < old->active_ns))
			old = c;
	}
	if (!s->ops->evict_quietest || !old)
		return NULL;
	client_close(old);
	return old;
}

static void accept_event(void *arg, uint32_t events)
{
	struct tl_server *s = arg;

	(void)events;
	for (unsigned k = 0; k < s->ops->accepts_per_event; k++) {
		int fd = accept4(s->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct tl_server_client *c;

		if (fd < 0)
			break;
		c = client_slot(s);
		if (!c || client_alloc(c, s->ops, s->ctx) != 0 || tl_evloop_add(s->loop, &c->item, fd, EPOLLIN, client_event, c) != 0) {
			if (c)
				client_free(c, s->ops);
			close(fd);         /* every slot busy (or no memory): refused at once */
			continue;
		}
		c->srv = s;
		c->state = TL_SC_READING;
		c->active_ns = now_ns();
	}
}

int tl_server_listen_tcp(const struct tl_sockaddr *a, int backlog)
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
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, backlog) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int tl_server_start(struct tl_server *s, const struct tl_server_ops *ops, void *ctx, struct tl_evloop *loop, int fd)
{
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->ctx = ctx;
	s->loop = loop;
	s->listener.fd = -1;
	for (int i = 0; i < TL_SERVER_MAX_CLIENTS; i++) {
		s->c[i].item.fd = -1;
		s->c[i].srv = s;
	}
	if (tl_evloop_add(loop, &s->listener, fd, EPOLLIN, accept_event, s) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return 0;
}

void tl_server_tick(struct tl_server *s, uint64_t now)
{
	for (int i = 0; s->ops && i < TL_SERVER_MAX_CLIENTS; i++) {
		struct tl_server_client *c = &s->c[i];
		uint64_t limit = c->state == TL_SC_LINGER ? s->ops->linger_ns : s->ops->idle_ns;

		if (c->state != TL_SC_FREE && now - c->active_ns > limit)
			client_close(c);
	}
}

void tl_server_stop(struct tl_server *s)
{
	int fd = s->listener.fd;

	if (!s->ops)
		return;
	for (int i = 0; i < TL_SERVER_MAX_CLIENTS; i++)
		client_close(&s->c[i]);
	if (fd >= 0) {
		tl_evloop_del(s->loop, &s->listener);
		close(fd);
	}
	s->ops = NULL;
}

int tl_server_feed(const struct tl_server_ops *ops, void *ctx, const char *text, size_t len, size_t chunk,
		   char **seen, size_t *seen_len, struct tl_buf *reply)
{
	struct tl_server_client c = { .item.fd = -1 };
	size_t off = 0;

	if (client_alloc(&c, ops, ctx) != 0)
		return -1;
	chunk = chunk ? chunk : len;
	while (off < len && !c.closing) {   /* as client_read takes it in */
		size_t n = len - off < chunk ? len - off : chunk, room;

		if (c.in_len + 1 >= c.in_cap && client_grow(&c, ops) != 0) {
			ops->refuse(client_ctx(&c, ctx), true, &c.out);
			break;
		}
		room = c.in_cap - 1 - c.in_len;
		n = n < room ? n : room;
		memcpy(c.in + c.in_len, text + off, n);
		c.in_len += n;
		c.in[c.in_len] = '\0';
		off += n;
		client_process(&c, ops, ctx, false);
	}
	if (reply && c.out.len)
		tl_buf_add(reply, c.out.p, c.out.len);
	*seen_len = c.in_cap;
	client_free_in(&c, seen);           /* as every client leaves it, handed out */
	client_free(&c, ops);
	return 0;
}
