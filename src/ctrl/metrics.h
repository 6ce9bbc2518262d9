/* Prometheus text exposition (format 0.0.4) over HTTP on `metrics.listen` (loopback by
 * default): GET /metrics. Served from the control loop like the UAPI socket: non-blocking,
 * bounded work per poll, bounded request size, one request per connection. Also the
 * helpers that the DPDK telemetry commands share with it, so both report the same sums.
 * Names and labels: docs/metrics.md. */
#ifndef TL_METRICS_H
#define TL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "dataplane/dp.h"
#include "dataplane/worker.h"

struct tl_device;

#define TL_METRICS_MAX_REQUEST 8192   /* bytes of request line and headers */

/* Opens the listener if the configuration has `metrics`; 0 and nothing opened if not.
 * On failure (address in use, ...) -1 with a message in err. */
int tl_metrics_open(struct tl_device *dev, char *err, size_t errlen);
/* Accepts, reads, answers. Returns how much happened (0 = idle). */
unsigned tl_metrics_poll(struct tl_device *dev);
/* Closes every client and the listener. Safe if never opened. */
void tl_metrics_close(struct tl_device *dev);

/* The whole exposition, appended to out (out->oom set if memory ran out). Control thread. */
void tl_metrics_render(struct tl_device *dev, struct tl_buf *out);

/* One HTTP request (request line and headers, up to and including the empty line, or fewer
 * bytes if the client stopped early). Appends the complete response to out and returns its
 * status code. Control thread. */
int tl_metrics_http(struct tl_device *dev, const char *req, size_t len, struct tl_buf *out);

/* ---- shared with telemetry.c (any thread: counters are read, never written) ---------------- */

/* Counters of every worker and of the control plane, summed. */
void tl_metrics_counters_sum(const struct tl_device *dev, struct tl_counters *sum);
/* Drops by reason as reported everywhere (metrics, telemetry, control API): the summed
 * counters plus each port's ethdev imissed under tl_metrics_missed_reason. */
void tl_metrics_drops(const struct tl_device *dev, uint64_t drops[TL_DROP_MAX]);
/* What a port's imissed counts: xsk_ring_full on an AF_XDP port (its socket's RX ring was
 * full), nic_rx_missed on a NIC PMD port (the NIC's RX ring was full). */
enum tl_drop tl_metrics_missed_reason(const struct tl_device *dev, int role);

/* Sojourn histogram bounds (ns) shared by Prometheus and telemetry: 2^k and 1.5 * 2^k for
 * k = 10..32, then 2^33; each is an edge of the AQM's own histogram, so the cumulative
 * counts are exact (a bound B counts the packets that waited less than B ns). */
#define TL_METRICS_SOJOURN_BOUNDS 47
uint64_t tl_metrics_sojourn_bound(unsigned i);
/* Sum of the sojourn times in seconds, estimated from the histogram's bucket midpoints. */
double tl_metrics_sojourn_sum_seconds(const struct tl_aqm_stats *s);
/* Packets delivered with a sojourn below tl_metrics_sojourn_bound(i), for every i, and the
 * total (the +Inf bucket). */
uint64_t tl_metrics_sojourn_cumulative(const struct tl_aqm_stats *s, uint64_t cum[TL_METRICS_SOJOURN_BOUNDS]);

extern const char *const tl_metrics_port_names[TL_PORT_MAX];   /* "wan", "lan" */
extern const char *const tl_metrics_dir_names[TL_DIR_MAX];     /* "encap", "decap" */

/* A worker's part in the crypto stage: whether it owns queue pairs; jobs and packets it
 * sealed or opened (for any owner); an owner's packets in jobs now, rounds it found no free
 * job (backpressure) and jobs in its FIFO (submitted, not yet finished), per direction. */
struct tl_crypto_view {
	bool owner;
	uint64_t jobs, pkts;
	uint64_t inflight[TL_DIR_MAX], full[TL_DIR_MAX];
	unsigned fifo[TL_DIR_MAX];
};
void tl_metrics_crypto_view(const struct tl_device *dev, unsigned w, struct tl_crypto_view *v);
/* Jobs waiting in the shared crypto ring for a worker, and the ring's capacity. */
unsigned tl_metrics_crypto_ring(const struct tl_device *dev, unsigned *capacity);

#endif
