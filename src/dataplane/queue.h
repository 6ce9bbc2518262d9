/* One egress queue of a queue owner (queue.c): the AQM in front of a TX queue, the port's
 * shaper shared by the port's queues, the parameter mailbox and the snapshots the control
 * plane reads. The AQM decides what is dropped; the shaper decides when; what the port does
 * not take waits (at the head of the LAN queue, or in its crypto job on the WAN) for the
 * next round: no tail drop, no loss. A leaf: the directions' tails (encap.c toward the WAN,
 * decap.c toward the LAN) dequeue and send; packets enter with tl_egress_enqueue (lcore.h). */
#ifndef TL_QUEUE_H
#define TL_QUEUE_H

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

/* Publishes the queue snapshots now (the owner thread, or any thread while the worker
 * does not run), so that tl_conservation sees the latest counters. */
void tl_worker_snapshot(struct tl_worker *w);

int tl_queue_init(struct tl_worker *w, int role);

/* Mailbox and snapshots, every round. */
void tl_queue_housekeeping(struct tl_worker *w);
bool tl_queue_requests_pending(struct tl_worker *w);

/* The shaper holds packets back: time until the earliest send slot, else 0. */
uint64_t tl_queue_shaper_wait_ns(const struct tl_worker *w);

/* ---- for the tails that dequeue: the shaper's budget ---------------------------------------- */

/* A frame goes to the port: charged to the shaper; refunded if the port refused it. */
static inline void tl_queue_charge(struct tl_egress *e, const struct rte_mbuf *m)
{
	tl_shaper_charge(&e->sh, m->pkt_len);
}

static inline void tl_queue_refund(struct tl_egress *e, const struct rte_mbuf *m)
{
	tl_shaper_refund(&e->sh, m->pkt_len);
}

/* The shaper lets a frame go now. */
static inline bool tl_queue_open(struct tl_egress *e, uint64_t now)
{
	return tl_shaper_open(&e->sh, now);
}

/* After a dequeue of n: counts a round the shaper held packets back. */
static inline void tl_queue_note_wait(struct tl_worker *w, struct tl_egress *e, unsigned n)
{
	if (n < TL_BURST && tl_shaper_on(&e->sh) && tl_aqm_backlog(e->aqm) && !tl_queue_open(e, w->now_ns))
		e->shaper_waits++;
}

#endif
