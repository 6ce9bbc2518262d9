/* The YAML control API on /run/tunless/<name>.sock (spec: src/api/ctlapi.yaml). Served from
 * the control loop like the WireGuard UAPI: non-blocking, bounded work per call. */
#ifndef TL_CTLAPI_H
#define TL_CTLAPI_H

#include <stdbool.h>
#include <stddef.h>

#include "api/request.h"
#include "api/yamlw.h"
#include "ctrl/unixsock.h"
#include "dataplane/dp.h"

struct tl_device;

#define TL_CTL_MAX_CLIENTS 16

struct tl_ctl_client {
	int fd;                         /* -1 = free slot */
	char *in;                       /* TL_CTL_MAX_REQUEST + 1 bytes */
	size_t in_len;
	struct tl_buf out;
	size_t out_off;
	bool eof;                       /* the client shut down its writing side */
	bool closing;                   /* close once the reply is written */
	uint64_t active_ns;
};

struct tl_ctlapi {
	struct tl_unixsock sock;
	const struct tl_api_spec *spec;
	struct tl_ctl_client c[TL_CTL_MAX_CLIENTS];
};

/* Loads the embedded spec and creates the socket. Fails (message in err) if another live
 * daemon answers on it; a stale socket file left by a dead one is replaced. */
int tl_ctlapi_open(struct tl_device *dev, char *err, size_t errlen);
/* Accepts, reads, answers. Returns how much happened. */
unsigned tl_ctlapi_poll(struct tl_device *dev);
/* Closes every client and the socket, removes the socket file. Safe if never opened. */
void tl_ctlapi_close(struct tl_device *dev);

/* One request (its text, terminator line included or not): validated against the spec, then
 * executed; the whole reply document is appended to out. ctlapi_ops.c */
void tl_ctlapi_request(struct tl_device *dev, const char *text, size_t len, struct tl_buf *out);
/* The show operation (ctlapi_show.c); its reply goes to w. */
int tl_ctlapi_op_show(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e);
/* AQM and shaper parameters as show writes them (also in set's reply). */
void tl_ctlapi_show_aqm(struct tl_yaml_writer *w, const struct tl_aqm_params *p);
void tl_ctlapi_show_shaper(struct tl_yaml_writer *w, const struct tl_shaper_params *p);

#endif
