/* What metrics.c (the exposition) and metrics_http.c (its HTTP server) share. */
#ifndef TL_CTRL_METRICS_PRIV_H
#define TL_CTRL_METRICS_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "ctrl/device.h"
#include "ctrl/metrics.h"
#include "dataplane/lcore.h"

#define METRICS_MAX_CLIENTS 16
#define METRICS_ACCEPT_PER_POLL 4
#define METRICS_IDLE_NS (10ull * TL_NS)     /* no progress this long: closed */
#define METRICS_LINGER_NS (2ull * TL_NS)    /* draining after the response at most this long */

enum client_state { CL_FREE, CL_READING, CL_WRITING, CL_LINGER };

struct metrics_client {
	int fd;
	enum client_state state;
	char in[TL_METRICS_MAX_REQUEST];
	size_t in_len;
	struct tl_buf out;
	size_t out_off;
	uint64_t active_ns;                /* last progress */
};

struct tl_metrics {
	int fd;
	struct metrics_client c[METRICS_MAX_CLIENTS];
	struct tl_queue_snapshot snap[TL_PORT_MAX * TL_MAX_WORKERS];   /* scratch: the owners' queues */
	uint64_t requests, errors;         /* served, answered with 4xx/5xx */
};

#endif
