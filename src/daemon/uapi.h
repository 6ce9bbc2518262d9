/* WireGuard's cross-platform UAPI on /var/run/wireguard/<name>.sock, so that the stock `wg`
 * tool (show, showconf, set, setconf, syncconf) manages tunless like any userspace
 * WireGuard. Served by the request server (api/server.h) from the control loop. */
#ifndef TL_UAPI_H
#define TL_UAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/uapi_parse.h"
#include "common/buf.h"

struct tl_device;

#define TL_UAPI_DIR "/var/run/wireguard"

/* Creates the socket. Fails (message in err) if another live daemon answers on it; a
 * stale socket file left by a dead one is replaced. */
int tl_uapi_open(struct tl_device *dev, char *err, size_t errlen);
/* Closes every client and the socket, removes the socket file. Safe if never opened. */
void tl_uapi_close(struct tl_device *dev);

/* For tests: a client fed text as if received, chunk bytes at a time (0: all at once), its
 * complete requests answered (the replies appended to reply if not NULL), then closed; *seen
 * gets its input buffer (one line: TL_UAPI_LINE_MAX) as the close left it (*seen_len bytes,
 * the caller frees it). 0, or -1 out of memory. */
int tl_uapi_test_client(struct tl_device *dev, const char *text, size_t len, size_t chunk, char **seen,
			size_t *seen_len, struct tl_buf *reply);
/* The body of a set=1 request (lines after "set=1"). Returns 0 or an errno value; on an
 * error nothing has been changed. Parses and checks (api/uapi_parse.h), then applies. */
int tl_uapi_set(struct tl_device *dev, char *body);
/* A parsed set=1 checked (tl_uapi_set_check) and applied as a whole; r is freed. 0 or an
 * errno value (then nothing changed). */
int tl_uapi_set_apply(struct tl_device *dev, struct tl_uapi_set_req *r);

#endif
