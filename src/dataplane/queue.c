/* One egress queue of a queue owner (queue.h): the AQM in front, the port's shared shaper,
 * the parameter mailbox and the snapshots the control plane reads. A leaf: the directions'
 * tails (encap.c, decap.c) dequeue from it and send. */
#include <stdio.h>
#include <unistd.h>

#include <rte_ether.h>

#include "dataplane/queue.h"

/* ---- shaper: the port's virtual clock (shaper.c), the queue's view of it ---------------- */

static void shaper_set(struct tl_worker *w, struct tl_egress *e, const struct tl_shaper_params *sp)
{
	e->shaper = *sp;
	tl_shaper_set(&e->sh, sp, w->now_ns);
	tl_aqm_set_rate(e->aqm, sp->rate_bps);
}

/* ---- snapshots and the parameter mailbox ------------------------------------------------- */

static void snapshot_publish(struct tl_worker *w, struct tl_egress *e)
{
	rte_seqlock_write_lock(&e->snap_lock);
	tl_aqm_stats_get(e->aqm, &e->snap.aqm);
	e->snap.params = e->params;
	e->snap.shaper = e->shaper;
	e->snap.tx_packets = e->tx_packets;
	e->snap.tx_bytes = e->tx_bytes;
	e->snap.backpressure = e->backpressure;
	e->snap.shaper_waits = e->shaper_waits;
	e->snap.shaper_lost_ns = e->sh.lost_ns;
	e->snap.stamp_ns = w->now_ns;
	rte_seqlock_write_unlock(&e->snap_lock);
	e->snap_ns = w->now_ns;
}

void tl_worker_queue_read(struct tl_worker *w, int role, struct tl_queue_snapshot *s)
{
	struct tl_egress *e = &w->eg[role];
	uint32_t sn;

	do {
		sn = rte_seqlock_read_begin(&e->snap_lock);
		*s = e->snap;
	} while (rte_seqlock_read_retry(&e->snap_lock, sn));
}

const char *tl_queue_check(const struct tl_dp *dp, int role, const struct tl_aqm_params *aqm,
			   const struct tl_shaper_params *sh)
{
	const char *err = aqm ? tl_aqm_params_check(aqm) : NULL;

	if (!err && sh)
		err = tl_shaper_params_check(sh);
	if (!err && aqm && tl_aqm_capacity(aqm) > dp->queue_cap[role])
		err = "limit: holds more packets than the port buffers were sized for at start "
		      "(limit and memory_limit of the start configuration; restart to raise them)";
	return err;
}

/* A parameter change waits in the mailbox (acquire: its fields are visible). */
static inline bool request_posted(struct tl_egress *e)
{
	return atomic_load_explicit(&e->req_gen, memory_order_acquire) !=
	       atomic_load_explicit(&e->done_gen, memory_order_relaxed);
}

/* Applies the posted request (owner thread, or any thread while the worker is stopped). */
static void queue_apply(struct tl_worker *w, int role)
{
	struct tl_egress *e = &w->eg[role];
	uint32_t gen = atomic_load_explicit(&e->req_gen, memory_order_acquire);
	const char *err = tl_queue_check(w->dp, role, e->req_has_aqm ? &e->req_aqm : NULL,
				      e->req_has_shaper ? &e->req_shaper : NULL);

	if (!err && e->req_has_aqm) {
		err = tl_aqm_set_params(e->aqm, &e->req_aqm);
		if (!err)
			e->params = e->req_aqm;
	}
	if (!err && e->req_has_shaper)
		shaper_set(w, e, &e->req_shaper);
	e->req_err = err;
	snapshot_publish(w, e);
	atomic_store_explicit(&e->done_gen, gen, memory_order_release);
}

const char *tl_worker_queue_set(struct tl_worker *w, int role, const struct tl_aqm_params *aqm,
				const struct tl_shaper_params *sh)
{
	struct tl_egress *e = &w->eg[role];
	const char *err = tl_queue_check(w->dp, role, aqm, sh);
	uint32_t gen;

	if (err)
		return err;
	e->req_has_aqm = aqm != NULL;
	e->req_has_shaper = sh != NULL;
	if (aqm)
		e->req_aqm = *aqm;
	if (sh)
		e->req_shaper = *sh;
	gen = atomic_load_explicit(&e->req_gen, memory_order_relaxed) + 1;
	atomic_store_explicit(&e->req_gen, gen, memory_order_release);
	tl_worker_kick(w);
	while (atomic_load_explicit(&e->done_gen, memory_order_acquire) != gen) {
		if (!atomic_load_explicit(&w->running, memory_order_acquire)) {
			w->now_ns = tl_now_ns();
			queue_apply(w, role);
			break;
		}
		usleep(50);
	}
	return e->req_err;
}

bool tl_queue_requests_pending(struct tl_worker *w)
{
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (request_posted(&w->eg[role]))
			return true;
	return false;
}

void tl_queue_housekeeping(struct tl_worker *w)
{
	for (int role = 0; role < TL_PORT_MAX; role++) {
		struct tl_egress *e = &w->eg[role];

		if (request_posted(e))
			queue_apply(w, role);
		else if (w->now_ns - e->snap_ns >= TL_QUEUE_SNAP_NS)
			snapshot_publish(w, e);
	}
}

void tl_worker_snapshot(struct tl_worker *w)
{
	for (int role = 0; role < TL_PORT_MAX; role++)
		snapshot_publish(w, &w->eg[role]);
}

int tl_queue_init(struct tl_worker *w, int role)
{
	struct tl_egress *e = &w->eg[role];
	char name[32];

	snprintf(name, sizeof(name), "aqm_w%u_%s", w->id, role == TL_PORT_WAN ? "wan" : "lan");
	e->params = w->dp->aqm_init[role];
	tl_shaper_init(&e->sh, &w->dp->shaper_port[role]);
	e->aqm = tl_aqm_create(name, &e->params, role == TL_PORT_WAN ? 0 : RTE_ETHER_HDR_LEN, (int)rte_socket_id());
	if (!e->aqm)
		return -1;
	tl_aqm_attach_drops(e->aqm, w->cnt.drops);
	if (role == TL_PORT_WAN)
		tl_aqm_attach_flowrtt(e->aqm, w->dp->flowrtt);
	shaper_set(w, e, &w->dp->shaper_init[role]);
	rte_seqlock_init(&e->snap_lock);
	snapshot_publish(w, e);
	return 0;
}

uint64_t tl_queue_shaper_wait_ns(const struct tl_worker *w)
{
	uint64_t wait = 0;

	for (int role = 0; role < TL_PORT_MAX; role++) {
		const struct tl_egress *e = &w->eg[role];
		uint64_t d = tl_shaper_wait(&e->sh, w->now_ns);

		if (d && tl_aqm_backlog(e->aqm))
			wait = wait ? RTE_MIN(wait, d) : d;
	}
	return wait;
}
