/* The YAML control API on /run/tunless/<name>.sock (spec: src/api/ctlapi.yaml), served by the
 * request server (api/server.h) from the control loop like the WireGuard UAPI. */
#ifndef TL_CTLAPI_H
#define TL_CTLAPI_H

#include <stdbool.h>
#include <stddef.h>

#include "api/request.h"
#include "api/server.h"
#include "api/unixsock.h"
#include "api/yamlw.h"
#include "dataplane/dp.h"

struct tl_device;

struct tl_ctlapi {
	struct tl_unix_server us;
	const struct tl_api_spec *spec;
};

/* Loads the embedded spec and creates the socket. Fails (message in err) if another live
 * daemon answers on it; a stale socket file left by a dead one is replaced. */
int tl_ctlapi_open(struct tl_device *dev, char *err, size_t errlen);
/* Closes every client and the socket, removes the socket file. Safe if never opened. */
void tl_ctlapi_close(struct tl_device *dev);

/* One request (its text, terminator line included or not): validated against the spec, then
 * executed; the whole reply document is appended to out. */
void tl_ctlapi_request(struct tl_device *dev, const char *text, size_t len, struct tl_buf *out);
/* The show operation (ctlapi_show.c); its reply goes to w. */
int tl_ctlapi_op_show(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e);

#endif
