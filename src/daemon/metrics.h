/* Prometheus text exposition (format 0.0.4) over HTTP on `metrics.listen` (loopback by
 * default): GET /metrics, served by the request server (api/server.h) from the control loop:
 * bounded request size, one request per connection. The values come from the read model
 * (stats.h). Names and labels: docs/metrics.md. */
#ifndef TL_METRICS_H
#define TL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct tl_device;

#define TL_METRICS_MAX_REQUEST 8192   /* bytes of request line and headers */

/* Opens the listener if the configuration has `metrics`; 0 and nothing opened if not.
 * On failure (address in use, ...) -1 with a message in err. */
int tl_metrics_open(struct tl_device *dev, char *err, size_t errlen);
/* Closes every client and the listener. Safe if never opened. */
void tl_metrics_close(struct tl_device *dev);

/* The whole exposition, appended to out (out->oom set if memory ran out). Control thread. */
void tl_metrics_render(struct tl_device *dev, struct tl_buf *out);

/* One HTTP request (request line and headers, up to and including the empty line, or fewer
 * bytes if the client stopped early). Appends the complete response to out and returns its
 * status code. Control thread. */
int tl_metrics_http(struct tl_device *dev, const char *req, size_t len, struct tl_buf *out);

#endif
