/* WireGuard's cross-platform UAPI on /var/run/wireguard/<name>.sock, so that the stock `wg`
 * tool (show, showconf, set, setconf, syncconf) manages tunless like any userspace
 * WireGuard. Served from the control loop: non-blocking, bounded work per call. */
#ifndef TL_UAPI_H
#define TL_UAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "config/peer_op.h"

struct tl_device;

#define TL_UAPI_DIR "/var/run/wireguard"
/* Bytes up to the blank line ending a request: a client's input buffer starts small and
 * doubles up to this. 32 MiB is about 200 000 peers with a key and an allowed IP each. */
#define TL_UAPI_MAX_REQUEST (32u << 20)

/* Creates the socket. Fails (message in err) if another live daemon answers on it; a
 * stale socket file left by a dead one is replaced. */
int tl_uapi_open(struct tl_device *dev, char *err, size_t errlen);
/* Accepts, reads, answers. Returns how much happened (0 = idle). */
unsigned tl_uapi_poll(struct tl_device *dev);
/* Closes every client and the socket, removes the socket file. Safe if never opened. */
void tl_uapi_close(struct tl_device *dev);

/* One request: its text up to (not including) the blank line, NUL-terminated and writable.
 * Appends the whole reply, "errno=N\n\n" included (N: 0 or minus an errno value), to out. */
void tl_uapi_request(struct tl_device *dev, char *req, struct tl_buf *out);
/* For tests: a client fed text as if received, chunk bytes at a time (0: all at once; len
 * <= TL_UAPI_MAX_REQUEST), its complete requests answered (the replies appended to reply if
 * not NULL), then closed; *seen gets its input buffer as the close left it (*seen_len bytes,
 * the caller frees it). 0, or -1 out of memory. */
int tl_uapi_test_client(struct tl_device *dev, const char *text, size_t len, size_t chunk, char **seen,
			size_t *seen_len, struct tl_buf *reply);
/* The body of a set=1 request (lines after "set=1"). Returns 0 or an errno value; on an
 * error nothing has been changed. Parses and checks (below), then applies. uapi_set.c */
int tl_uapi_set(struct tl_device *dev, char *body);

/* A set=1 request parsed, not yet applied: the device keys, and one operation per
 * public_key line, in order. uapi_parse.c (no device, no DPDK: the fuzz harness uses it). */
struct tl_uapi_set_req {
	bool has_priv, has_port, replace_peers;
	uint8_t priv[TL_KEY_LEN];
	uint16_t port;
	struct tl_peer_op *peers;
	size_t n_peers, cap_peers;
};

/* Parses the body of a set=1 request (NUL-terminated, written to) into r, which starts
 * zeroed. Returns 0 or an errno value (EINVAL: a line that is not a known key=value,
 * EOPNOTSUPP: an fwmark other than 0, ENOMEM); r must be freed either way. */
int tl_uapi_set_parse(struct tl_uapi_set_req *r, char *body);

/* What the checks need to know of the device. */
struct tl_uapi_set_view {
	uint16_t listen_port;
	size_t n_peers, max_peers;       /* peers now, at most (TL_MAX_PEERS) */
	bool (*has_peer)(void *ctx, const uint8_t pub[TL_KEY_LEN]);
	void *ctx;
};

/* Checks a parsed request against the device before anything is applied: listen port 0
 * (EINVAL), an all-zero private key (EINVAL), more than max_peers peers afterwards (ENOSPC).
 * 0 if it can be applied (a port change may still fail: the port may be in use). */
int tl_uapi_set_check(const struct tl_uapi_set_req *r, const struct tl_uapi_set_view *v);

/* Frees and wipes (key material) a parsed request. */
void tl_uapi_set_req_free(struct tl_uapi_set_req *r);

#endif
