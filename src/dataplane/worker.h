/* A worker lcore as the control plane sees it: start, stop, wake, the snapshots of its
 * egress queues and their live parameters, and per-port conservation. A worker below
 * dp->n_queues owns RX/TX queue pair `queue` of every port; every worker seals and opens
 * packets for the owners (crypt.h). Workers back off when idle. */
#ifndef TL_WORKER_H
#define TL_WORKER_H

#include "dataplane/balance.h"
#include "dataplane/lcore.h"

/* Copies the latest snapshot of worker w's egress queue of port role. Any thread. */
void tl_worker_queue_read(struct tl_worker *w, int role, struct tl_queue_snapshot *s);

/* The rules an egress queue's new parameters must meet on this dataplane (aqm or sh NULL: not
 * checked): their own ranges, and an AQM holding no more than the port buffers were sized
 * for at start (dp->queue_cap). NULL, or "<field>: <rule>". Any thread; no side effect. */
const char *tl_queue_check(const struct tl_dp *dp, int role, const struct tl_aqm_params *aqm,
			   const struct tl_shaper_params *sh);

/* Live parameter change of one egress queue, applied by the worker between bursts with
 * queued packets kept (aqm or sh may be NULL: unchanged). Control thread only; waits for
 * the worker (at most about a millisecond when it is idle). NULL on success, else
 * "<field>: <rule>" and nothing changed. */
const char *tl_worker_queue_set(struct tl_worker *w, int role, const struct tl_aqm_params *aqm,
				const struct tl_shaper_params *sh);

int tl_worker_init(struct tl_worker *w, unsigned id, struct tl_dp *dp);
void tl_worker_fini(struct tl_worker *w);
int tl_worker_main(void *arg);    /* rte_eal_remote_launch entry */

/* One round of tl_worker_main's loop at time w->now_ns (the caller stamps it): control
 * plane frames, finished crypto jobs, both egress queues, the slow path and both RX ports
 * (queue owners), crypto jobs (every worker), then a quiescent state report (the calling
 * thread must be registered and online in dp->qsbr as w->id). Returns the packets
 * handled; 0 = idle round. Only the worker's own thread. */
unsigned tl_worker_round(struct tl_worker *w);

/* Publishes the queue snapshots now (the owner thread, or any thread while the worker
 * does not run), so that tl_conservation sees the latest counters. */
void tl_worker_snapshot(struct tl_worker *w);

#endif
