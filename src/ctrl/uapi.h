/* WireGuard's cross-platform UAPI on /var/run/wireguard/<name>.sock, so that the stock `wg`
 * tool (show, showconf, set, setconf, syncconf) manages tunless like any userspace
 * WireGuard. Served from the control loop: non-blocking, bounded work per call. */
#ifndef TL_UAPI_H
#define TL_UAPI_H

#include <stdbool.h>
#include <stddef.h>

struct tl_device;

#define TL_UAPI_DIR "/var/run/wireguard"
#define TL_UAPI_MAX_REQUEST 65536   /* bytes up to the blank line ending a request */

/* Creates the socket. Fails (message in err) if another live daemon answers on it; a
 * stale socket file left by a dead one is replaced. */
int tl_uapi_open(struct tl_device *dev, char *err, size_t errlen);
/* Accepts, reads, answers. Returns how much happened (0 = idle). */
unsigned tl_uapi_poll(struct tl_device *dev);
/* Closes every client and the socket, removes the socket file. Safe if never opened. */
void tl_uapi_close(struct tl_device *dev);

/* Request handling without the socket (the fuzz harness uses it too). */
struct tl_uapi_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

void tl_uapi_printf(struct tl_uapi_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One request: its text up to (not including) the blank line, NUL-terminated and writable.
 * Appends the whole reply, "errno=N\n\n" included, to out. */
void tl_uapi_request(struct tl_device *dev, char *req, struct tl_uapi_buf *out);
/* The body of a set=1 request (lines after "set=1"). Returns 0 or an errno value; on an
 * error nothing has been changed. uapi_set.c */
int tl_uapi_set(struct tl_device *dev, char *body);

#endif
