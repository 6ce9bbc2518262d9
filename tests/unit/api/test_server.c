/* Unit tests for the request server (src/api/server.c) on its event loop (src/common/evloop.c),
 * over real sockets: a line protocol (a request ends with '\n', "quit" closes) on an abstract
 * Unix socket. Pipelined requests answered in order across small reads and a growing buffer,
 * a request over the limit refused, what is left at the client's end given to at_eof, an idle
 * client closed by the tick, the slots (refused when full, or the quietest evicted), one
 * request per connection with a half-close, a state per connection. No timing: the loop is run until the client has
 * its bytes, a bounded number of rounds. */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/server.h"
#include "common/evloop.h"
#include "check.h"

#define ROUNDS 200        /* loop rounds of at most 50 ms before a client gives up */

static size_t line_end(const char *in, size_t len, size_t from)
{
	const char *nl = memchr(in + from, '\n', len - from);

	return nl ? (size_t)(nl - in) + 1 : 0;
}

static enum tl_server_next line_answer(void *ctx, char *req, size_t len, struct tl_buf *out)
{
	(void)ctx;
	if (len == 5 && !memcmp(req, "quit\n", 5)) {
		tl_buf_printf(out, "bye\n");
		return TL_SERVER_CLOSE;
	}
	tl_buf_printf(out, "got:%.*s", (int)len, req);
	return TL_SERVER_MORE;
}

static void line_at_eof(void *ctx, char *in, size_t len, struct tl_buf *out)
{
	(void)ctx;
	if (len)
		tl_buf_printf(out, "eof:%.*s\n", (int)len, in);
}

static void line_refuse(void *ctx, bool oom, struct tl_buf *out)
{
	(void)ctx;
	tl_buf_printf(out, "%s\n", oom ? "oom" : "refused");
}

static const struct tl_server_ops line_ops = {
	.name = "line", .request_end = line_end, .answer = line_answer, .at_eof = line_at_eof,
	.refuse = line_refuse, .max_request = 32, .first_buffer = 8, .read_chunk = 4,
	.idle_ns = 60000000000ull, .accepts_per_event = 1,
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct sockaddr_un addr_of(const char *tag, socklen_t *len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	/* abstract: nothing on the file system to clean up */
	snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "tl-test-server-%d-%s", (int)getpid(), tag);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
	return a;
}

static int listen_on(const char *tag)
{
	socklen_t len;
	struct sockaddr_un a = addr_of(tag, &len);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 64) != 0) {
		perror("listen");
		exit(2);
	}
	return fd;
}

static int dial(const char *tag)
{
	socklen_t len;
	struct sockaddr_un a = addr_of(tag, &len);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) != 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static void say(int fd, const char *text)
{
	if (send(fd, text, strlen(text), MSG_NOSIGNAL) != (ssize_t)strlen(text)) {
		perror("send");
		exit(2);
	}
}

/* Runs the loop until the client has want bytes (and, with eof, its end), or ROUNDS rounds.
 * What it read is in got (NUL-terminated); returns whether the server closed. */
static bool pump(struct tl_evloop *l, int fd, size_t want, bool eof, char *got, size_t cap)
{
	size_t n = 0;
	bool closed = false;

	got[0] = '\0';
	for (int r = 0; r < ROUNDS && !closed && (n < want || eof); r++) {
		ssize_t k;

		tl_evloop_run(l, 50);
		while ((k = recv(fd, got + n, cap - 1 - n, MSG_DONTWAIT)) > 0)
			n += (size_t)k;
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			closed = true;       /* the end, or a reset (closed with our bytes unread) */
		got[n] = '\0';
	}
	return closed;
}

/* A few rounds for the server to accept what is pending. */
static void settle(struct tl_evloop *l)
{
	for (int r = 0; r < 5; r++)
		tl_evloop_run(l, 10);
}

static void expect(struct tl_evloop *l, int fd, const char *what, const char *want, bool closes)
{
	char got[256];
	bool closed = pump(l, fd, strlen(want), closes, got, sizeof(got));

	CHECK(!strcmp(got, want), "%s: got '%s', want '%s'", what, got, want);
	CHECK(closed == closes, "%s: the server %s the connection", what, closed ? "closed" : "kept");
}

static void test_requests(struct tl_evloop *l)
{
	int fd = dial("a");

	say(fd, "a\nbb\nccc");
	expect(l, fd, "two pipelined requests and part of a third", "got:a\ngot:bb\n", false);
	say(fd, "cccccccccccc\n");   /* the buffer grows past first_buffer */
	expect(l, fd, "the third completed", "got:ccccccccccccccc\n", false);
	say(fd, "quit\n");
	expect(l, fd, "quit", "bye\n", true);
	close(fd);

	fd = dial("a");
	say(fd, "0123456789012345678901234567890123456789");
	expect(l, fd, "40 bytes without a line end (limit 32)", "refused\n", true);
	close(fd);

	fd = dial("a");
	say(fd, "x\ntail");
	shutdown(fd, SHUT_WR);
	expect(l, fd, "the client's end with a partial request", "got:x\neof:tail\n", true);
	close(fd);
}

static void test_idle(struct tl_evloop *l, struct tl_server *s)
{
	int fd = dial("a");
	char got[64];

	say(fd, "slow");
	settle(l);
	tl_server_tick(s, mono_ns());
	CHECK(!pump(l, fd, 0, false, got, sizeof(got)), "a client quiet less than idle_ns is kept");
	tl_server_tick(s, mono_ns() + 120000000000ull);
	CHECK(pump(l, fd, 0, true, got, sizeof(got)) && !got[0], "a client quiet over idle_ns is closed, silently");
	close(fd);
}

/* Every slot taken: the next client is refused at once, or (evict_quietest) the client quiet
 * longest makes room. */
static void test_slots(struct tl_evloop *l, bool evict)
{
	const char *tag = evict ? "evict" : "full";
	struct tl_server_ops ops = line_ops;
	struct tl_server s;
	int fds[TL_SERVER_MAX_CLIENTS], extra;
	char got[64];

	ops.evict_quietest = evict;
	CHECK(tl_server_start(&s, &ops, NULL, l, listen_on(tag)) == 0, "%s: server started", tag);
	for (int i = 0; i < TL_SERVER_MAX_CLIENTS; i++) {
		fds[i] = dial(tag);
		settle(l);
		if (i > 0) {            /* every client but the first makes progress later */
			say(fds[i], "hi\n");
			pump(l, fds[i], 7, false, got, sizeof(got));
		}
	}
	extra = dial(tag);
	say(extra, "new\n");
	if (evict) {
		expect(l, extra, "evict: a client beyond the slots", "got:new\n", false);
		CHECK(pump(l, fds[0], 0, true, got, sizeof(got)), "evict: the quietest client was closed");
		say(fds[1], "still\n");
		expect(l, fds[1], "evict: another client kept", "got:still\n", false);
	} else {
		expect(l, extra, "full: a client beyond the slots", "", true);
		say(fds[0], "still\n");
		expect(l, fds[0], "full: the first client kept", "got:still\n", false);
	}
	close(extra);
	for (int i = 0; i < TL_SERVER_MAX_CLIENTS; i++)
		close(fds[i]);
	tl_server_stop(&s);
}

/* One request per connection (HTTP): the reply, then the server's half of the connection
 * closes; what the client still sends is drained until linger_ns. */
static void test_one_request(struct tl_evloop *l)
{
	struct tl_server_ops ops = line_ops;
	struct tl_server s;
	char got[64];
	int fd;

	ops.one_request = true;
	ops.linger_ns = 1000000000ull;
	CHECK(tl_server_start(&s, &ops, NULL, l, listen_on("one")) == 0, "one: server started");
	fd = dial("one");
	say(fd, "a\nb\n");
	expect(l, fd, "one request per connection", "got:a\n", true);
	say(fd, "more\n");            /* drained, not answered */
	settle(l);
	tl_server_tick(&s, mono_ns() + 2000000000ull);
	settle(l);
	/* closed with unread bytes, the socket would have been reset */
	CHECK(recv(fd, got, sizeof(got), MSG_DONTWAIT) == 0, "one: closed after linger_ns, without a reset (%s)",
	      strerror(errno));
	close(fd);
	tl_server_stop(&s);
}

/* A protocol with state per connection (conn_open, conn_close): each connection counts its
 * own lines; the state is made at accept, answers get it, and it is freed at close. */
struct counter {
	int *open;                    /* the test's count of live states */
	unsigned lines;
};

static void *count_open(void *ctx)
{
	struct counter *k = calloc(1, sizeof(*k));

	if (k) {
		k->open = ctx;
		++*k->open;
	}
	return k;
}

static void count_close(void *conn)
{
	struct counter *k = conn;

	--*k->open;
	free(k);
}

static enum tl_server_next count_answer(void *conn, char *req, size_t len, struct tl_buf *out)
{
	struct counter *k = conn;

	(void)req;
	(void)len;
	tl_buf_printf(out, "%u\n", ++k->lines);
	return TL_SERVER_MORE;
}

static void test_conn_state(struct tl_evloop *l)
{
	struct tl_server_ops ops = line_ops;
	struct tl_server s;
	int open = 0, a, b;

	ops.answer = count_answer;
	ops.conn_open = count_open;
	ops.conn_close = count_close;
	CHECK(tl_server_start(&s, &ops, &open, l, listen_on("conn")) == 0, "conn: server started");
	a = dial("conn");
	b = dial("conn");
	say(a, "x\ny\n");
	expect(l, a, "conn: two lines on the first connection", "1\n2\n", false);
	say(b, "z\n");
	expect(l, b, "conn: the second connection counts its own", "1\n", false);
	say(a, "w\n");
	expect(l, a, "conn: the first goes on", "3\n", false);
	CHECK(open == 2, "conn: a state per connection (%d)", open);
	close(a);
	settle(l);
	CHECK(open == 1, "conn: a closed connection's state is freed (%d left)", open);
	tl_server_stop(&s);
	CHECK(open == 0, "conn: stop frees the rest (%d left)", open);
	close(b);
}

int main(void)
{
	struct tl_evloop l;
	struct tl_server s;

	if (tl_evloop_open(&l) != 0) {
		perror("epoll");
		return 2;
	}
	CHECK(tl_server_start(&s, &line_ops, NULL, &l, listen_on("a")) == 0, "server started");
	test_requests(&l);
	test_idle(&l, &s);
	tl_server_stop(&s);
	test_slots(&l, false);
	test_slots(&l, true);
	test_one_request(&l);
	test_conn_state(&l);
	tl_evloop_close(&l);
	return check_report();
}
