/* A worker lcore as the control plane sees it: start, stop, wake, the snapshots of its
 * egress queues and their live parameters, and per-port conservation. A worker below
 * dp->n_queues owns RX/TX queue pair `queue` of every port; every worker seals and opens
 * packets for the owners (crypt.h). Workers back off when idle. */
#ifndef TL_WORKER_H
#define TL_WORKER_H

#include "dataplane/balance.h"
#include "dataplane/lcore.h"
#include "dataplane/queue.h"

int tl_worker_init(struct tl_worker *w, unsigned id, struct tl_dp *dp);
void tl_worker_fini(struct tl_worker *w);
int tl_worker_main(void *arg);    /* rte_eal_remote_launch entry */

/* One round of tl_worker_main's loop at time w->now_ns (the caller stamps it): control
 * plane frames, finished crypto jobs, both egress queues, the slow path and both RX ports
 * (queue owners), crypto jobs (every worker), then a quiescent state report (the calling
 * thread must be registered and online in dp->qsbr as w->id). Returns the packets
 * handled; 0 = idle round. Only the worker's own thread. */
unsigned tl_worker_round(struct tl_worker *w);

/* The egress queues of w, toward port role: what their AQM and the port's shaper release
 * goes on (WAN packets into crypto jobs, LAN frames to the port), a few bursts at most.
 * Returns packets taken. The owner's thread. */
unsigned tl_worker_flush(struct tl_worker *w, int role);

#endif
