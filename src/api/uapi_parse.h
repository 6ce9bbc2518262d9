/* WireGuard UAPI set=1, first half: the body of a request parsed into peer operations and
 * checked against what the device holds, without the device (uapi_parse.c; the fuzz harness
 * drives both). A bad line or a failed check means nothing is applied. */
#ifndef TL_API_UAPI_PARSE_H
#define TL_API_UAPI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/peer_op.h"

/* Requests are read as a stream of lines, whatever their size: a client's input buffer holds
 * one line of up to this many bytes (the longest line `wg` sends is a preshared_key, 78
 * bytes; an allowed IPv6 prefix is 54). */
#define TL_UAPI_LINE_MAX 4096u
/* The framing on the socket: the first line of in[0..len) (its length, its newline
 * included), 0 if its newline has not come yet; in[0..from) holds none. A line that fills
 * TL_UAPI_LINE_MAX bytes without one is handed on in pieces of len bytes, without a
 * newline, for the reader to refuse and skip to its end. */
size_t tl_uapi_line_end(const char *in, size_t len, size_t from);

/* What one set=1 request may hold, checked line by line as it arrives (before its blank
 * line), so that its memory is bounded: distinct public keys (a device holds at most
 * TL_MAX_PEERS peers; a key named again is not another), public_key lines (a key may come
 * back), allowed_ip lines in all. */
#define TL_UAPI_MAX_KEYS ((size_t)TL_MAX_PEERS_CFG)
#define TL_UAPI_MAX_PEER_LINES (2 * TL_UAPI_MAX_KEYS)
#define TL_UAPI_MAX_AIPS (4 * TL_UAPI_MAX_KEYS)

struct tl_uapi_key_block;

/* A set=1 request parsed, not yet applied: the device keys, and one operation per
 * public_key line, in order. uapi_parse.c (no device, no DPDK: the fuzz harness uses it). */
struct tl_uapi_set_req {
	bool has_priv, has_port, replace_peers;
	uint8_t priv[TL_KEY_LEN];
	uint16_t port;
	struct tl_peer_op *peers;
	size_t n_peers, cap_peers;
	/* The bounds above, 0 for each: a test sets smaller ones. */
	size_t max_keys, max_peer_lines, max_aips;
	/* The distinct public keys named so far: a tsearch(3) tree over blocks of keys. */
	void *keys;
	struct tl_uapi_key_block *key_blocks;
	size_t n_keys, n_aips;
};

/* Where the parsed request's arrays come from and go (calloc and free by default; every
 * block handed back is wiped first). A test sets its own to look at each freed block; NULL
 * restores the default. Not thread-safe: set it before parsing. */
struct tl_uapi_alloc {
	void *(*alloc)(size_t size);             /* zeroed, or NULL */
	void (*release)(void *p, size_t size);   /* p: a block alloc returned, of that size */
};
void tl_uapi_set_alloc(const struct tl_uapi_alloc *a);

/* Parses the body of a set=1 request (NUL-terminated, written to) into r, which starts
 * zeroed. Returns 0 or an errno value (EINVAL: a line that is not a known key=value,
 * EOPNOTSUPP: an fwmark other than 0, ENOSPC: more distinct public keys than a device holds,
 * E2BIG: more public_key or allowed_ip lines than one request may hold, ENOMEM); r must be
 * freed either way. The bounds fail at the line that crosses them. */
int tl_uapi_set_parse(struct tl_uapi_set_req *r, char *body);
/* One line of that body (NUL-terminated, without its newline, written to). 0 or an errno. */
int tl_uapi_set_parse_line(struct tl_uapi_set_req *r, char *line);

/* What the checks need to know of the device. */
struct tl_uapi_set_view {
	uint16_t listen_port;
	size_t n_peers, max_peers;       /* peers now, at most (TL_MAX_PEERS) */
	bool (*has_peer)(void *ctx, const uint8_t pub[TL_KEY_LEN]);
	void *ctx;
};

/* Checks a parsed request against the device before anything is applied: listen port 0
 * (EINVAL), an all-zero private key (EINVAL), more than max_peers peers afterwards (ENOSPC;
 * a new key named by several operations is one new peer).
 * 0 if it can be applied (a port change may still fail: the port may be in use). */
int tl_uapi_set_check(const struct tl_uapi_set_req *r, const struct tl_uapi_set_view *v);

/* Frees and wipes (key material) a parsed request. */
void tl_uapi_set_req_free(struct tl_uapi_set_req *r);

#endif
