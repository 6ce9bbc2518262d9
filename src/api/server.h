/* One request server for every local protocol (the WireGuard UAPI, the YAML control API, the
 * Prometheus HTTP endpoint): a listening socket, a bounded set of connection slots, request
 * framing and answering through the protocol's handler, replies written as the socket takes
 * them, idle clients closed. Driven by the event loop (common/evloop.h): nothing here
 * blocks. No device, no DPDK: the handlers get the context they were given. */
#ifndef TL_API_SERVER_H
#define TL_API_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/addr.h"
#include "common/buf.h"
#include "common/evloop.h"

#define TL_SERVER_MAX_CLIENTS 16

/* What answer and refuse return: keep the connection for more requests, or close it once
 * the reply is written. */
enum tl_server_next { TL_SERVER_MORE, TL_SERVER_CLOSE };

struct tl_server_ops {
	const char *name;                  /* for log lines: "uapi", "ctlapi", "metrics" */
	/* Length of the first complete request in in[0..len), its terminator included, or 0;
	 * in[0..from) is known to hold none (a terminator may straddle from). */
	size_t (*request_end)(const char *in, size_t len, size_t from);
	/* One request: req[0..len) (writable; req[len] is a NUL the server keeps); the reply is
	 * appended to out. */
	enum tl_server_next (*answer)(void *ctx, char *req, size_t len, struct tl_buf *out);
	/* The client stopped sending with in[0..len) left over (len may be 0): what to say, if
	 * anything. NULL: nothing. */
	void (*at_eof)(void *ctx, char *in, size_t len, struct tl_buf *out);
	/* Input grew to max_request bytes without a complete request (or the buffer could not
	 * grow: oom): the refusal. The connection closes after it. */
	void (*refuse)(void *ctx, bool oom, struct tl_buf *out);
	/* A protocol that keeps state per connection (a request read in pieces): conn_open makes
	 * it at accept from the server's ctx (NULL: no memory, the client is refused) and it is
	 * the ctx of answer, at_eof and refuse for that connection; conn_close frees it (and
	 * wipes what it held) when the connection closes. NULL: every connection gets ctx. */
	void *(*conn_open)(void *ctx);
	void (*conn_close)(void *conn);
	size_t max_request;                /* bytes */
	size_t first_buffer;               /* input buffer at first; it doubles up to max_request + 1 */
	size_t read_chunk;                 /* at most this much per read */
	uint64_t idle_ns;                  /* a client that makes no progress this long is closed */
	/* One request per connection (HTTP): after the reply the server half-closes and drains
	 * what the client still sends, for at most linger_ns. */
	bool one_request;
	uint64_t linger_ns;
	/* Every slot taken: close the client that has been quiet longest instead of refusing
	 * the new one (a scraper must not be locked out by idle connections). */
	bool evict_quietest;
	unsigned accepts_per_event;
};

enum tl_server_state { TL_SC_FREE, TL_SC_READING, TL_SC_WRITING, TL_SC_LINGER };

struct tl_server_client {
	struct tl_evitem item;
	struct tl_server *srv;
	enum tl_server_state state;
	char *in;                          /* in_cap bytes; wiped before it is freed */
	size_t in_len, in_cap, scanned;
	struct tl_buf out;
	size_t out_off;
	bool closing;                      /* close (or linger) once the reply is written */
	uint64_t active_ns;                /* last progress */
	void *conn;                        /* conn_open's state, or NULL */
};

struct tl_server {
	const struct tl_server_ops *ops;
	void *ctx;
	struct tl_evloop *loop;
	struct tl_evitem listener;         /* item.fd: the listening socket (the server closes it) */
	struct tl_server_client c[TL_SERVER_MAX_CLIENTS];
};

/* A non-blocking TCP listening socket on a (IPv6: v6 only), SO_REUSEADDR; -1 (errno). */
int tl_server_listen_tcp(const struct tl_sockaddr *a, int backlog);
/* Serves on the listening socket fd (non-blocking), which the server owns from now on, even
 * on failure. 0, or -1 (errno). */
int tl_server_start(struct tl_server *s, const struct tl_server_ops *ops, void *ctx, struct tl_evloop *loop, int fd);
/* Closes the clients that stalled (idle_ns, linger_ns). From the loop's tick. */
void tl_server_tick(struct tl_server *s, uint64_t now_ns);
/* Closes every client (their buffers wiped) and the listening socket. Safe if not started. */
void tl_server_stop(struct tl_server *s);

/* For tests: a client of ops fed text as if received, chunk bytes at a time (0: all at
 * once), its complete requests answered (the replies appended to reply if not NULL), then
 * closed; *seen gets its input buffer as the close left it (*seen_len bytes, the caller
 * frees it). 0, or -1 out of memory. */
int tl_server_feed(const struct tl_server_ops *ops, void *ctx, const char *text, size_t len, size_t chunk,
		   char **seen, size_t *seen_len, struct tl_buf *reply);

#endif
