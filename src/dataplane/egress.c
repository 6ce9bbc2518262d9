/* Egress: each queue owner's egress queues, in front of its TX queues. The AQM decides
 * what is dropped; the shaper, one token bucket per port shared by the port's queues,
 * decides when; what the port does not take waits (at the head of the LAN queue, or in its
 * crypto job on the WAN) for the next round: no tail drop, no loss. WAN packets are
 * readied for sealing here and leave when their job is finished, in order. */
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_ring_peek_zc.h>

#include "dataplane/afpacket.h"
#include "dataplane/egress.h"
#include "dataplane/encap.h"
#include "dataplane/udpport.h"

/* ---- shaper: the port's virtual clock (shaper.c), the queue's view of it ---------------- */

static void shaper_set(struct tl_worker *w, struct tl_egress *e, const struct tl_shaper_params *sp)
{
	e->shaper = *sp;
	tl_shaper_set(&e->sh, sp, w->now_ns);
	tl_aqm_set_rate(e->aqm, sp->rate_bps);
}

static inline void shaper_charge(struct tl_egress *e, const struct rte_mbuf *m)
{
	tl_shaper_charge(&e->sh, m->pkt_len);
}

static inline void shaper_refund(struct tl_egress *e, const struct rte_mbuf *m)
{
	tl_shaper_refund(&e->sh, m->pkt_len);
}

static inline bool shaper_open(struct tl_egress *e, uint64_t now)
{
	return tl_shaper_open(&e->sh, now);
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

bool tl_egress_requests_pending(struct tl_worker *w)
{
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (request_posted(&w->eg[role]))
			return true;
	return false;
}

void tl_egress_housekeeping(struct tl_worker *w)
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

int tl_egress_init(struct tl_worker *w, int role)
{
	struct tl_egress *e = &w->eg[role];
	char name[32];

	snprintf(name, sizeof(name), "aqm_w%u_%s", w->id, role == TL_PORT_WAN ? "wan" : "lan");
	e->port_id = w->dp->port[role].port_id;
	e->params = w->dp->aqm_init[role];
	tl_shaper_init(&e->sh, &w->dp->shaper_port[role]);
	e->aqm = tl_aqm_create(name, &e->params, role == TL_PORT_WAN ? 0 : RTE_ETHER_HDR_LEN, (int)rte_socket_id());
	if (!e->aqm)
		return -1;
	tl_aqm_attach_drops(e->aqm, w->cnt.drops);
	shaper_set(w, e, &w->dp->shaper_init[role]);
	rte_seqlock_init(&e->snap_lock);
	snapshot_publish(w, e);
	return 0;
}

/* ---- to the ports -------------------------------------------------------------------------- */

/* Sends n (at most a burst) frames on the WAN port and returns how many it took. A `udp`
 * port may refuse some of them (the kernel's send error: no route, too big): those are
 * dropped here as kernel_send_failed, as packets a queue released (queued) or as frames of
 * the control plane; *lost says how many and *lost_bytes their bytes. */
static unsigned wan_tx(struct tl_worker *w, struct rte_mbuf **m, unsigned n, bool queued, unsigned *lost,
		       uint64_t *lost_bytes)
{
	struct tl_udpport *u = w->dp->port[TL_PORT_WAN].udp;
	struct rte_mbuf *failed[TL_BURST];
	uint16_t nf = 0, sent;

	*lost = 0;
	*lost_bytes = 0;
	if (!u)
		return rte_eth_tx_burst(w->eg[TL_PORT_WAN].port_id, w->queue, m, (uint16_t)n);
	sent = tl_udpport_tx(u, w->queue, m, (uint16_t)n, failed, &nf);
	for (unsigned i = 0; i < nf; i++) {
		*lost_bytes += failed[i]->pkt_len;
		if (queued)
			tl_drop_deq(w, TL_PORT_WAN, failed[i], TL_DROP_kernel_send_failed);
		else
			tl_drop_pkt(&w->cnt, failed[i], TL_DROP_kernel_send_failed);
	}
	*lost = nf;
	return sent;
}

/* Frames built by the control plane (handshakes, keepalives, staged packets) go out ahead
 * of the queues; what the port refuses stays in the ring. They use the shaper's budget. */
unsigned tl_egress_ctrl_flush(struct tl_worker *w)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	struct rte_ring_zc_data zc;
	struct rte_mbuf **m;
	unsigned n, sent, lost;
	uint64_t lost_bytes;

	n = rte_ring_dequeue_zc_burst_start(w->ctrl_tx, TL_BURST, &zc, NULL);
	if (n == 0)
		return 0;
	m = (struct rte_mbuf **)zc.ptr1;          /* the contiguous part; the rest next round */
	for (unsigned i = 0; i < zc.n1; i++)
		shaper_charge(e, m[i]);
	sent = wan_tx(w, m, zc.n1, false, &lost, &lost_bytes);
	for (unsigned i = sent; i < zc.n1; i++)
		shaper_refund(e, m[i]);
	rte_ring_dequeue_zc_finish(w->ctrl_tx, sent);
	w->cnt.from_ctrl += sent;
	w->cnt.tx[TL_PORT_WAN] += sent - lost;
	return sent;
}

static void shaper_note_wait(struct tl_worker *w, struct tl_egress *e, unsigned n)
{
	if (n < TL_BURST && tl_shaper_on(&e->sh) && tl_aqm_backlog(e->aqm) && !shaper_open(e, w->now_ns))
		e->shaper_waits++;
}

/* WAN: up to a burst the AQM releases and the shaper allows, readied for sealing into the
 * open encapsulation job, which is submitted. Without a free job the queue waits. */
static unsigned wan_take(struct tl_worker *w)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	const struct tl_table *t = atomic_load_explicit(&w->dp->table, memory_order_acquire);
	struct tl_crypt_job *j = tl_crypt_open(w, TL_DIR_ENCAP);
	struct rte_mbuf *m[TL_BURST];
	unsigned taken = 0, got;

	while (j && j->n < TL_BURST && shaper_open(e, w->now_ns)) {
		/* Without a shaper a whole burst at once; with one, packet by packet. */
		got = tl_aqm_dequeue_burst(e->aqm, m, tl_shaper_on(&e->sh) ? 1 : TL_BURST - j->n, w->now_ns);
		if (got == 0)
			break;
		taken += got;
		for (unsigned i = 0; i < got; i++) {
			unsigned before = j->n;

			tl_encap_prepare(w, t, m[i], j);
			if (j->n > before)
				shaper_charge(e, j->m[before]);
		}
		if (!tl_shaper_on(&e->sh))
			break;
	}
	if (tl_crypt_submit(w, TL_DIR_ENCAP))
		tl_encap_finish(w);
	shaper_note_wait(w, e, taken);
	return taken;
}

bool tl_egress_send_job(struct tl_worker *w, struct tl_crypt_job *j)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	uint32_t len[TL_BURST];
	unsigned k = 0, sent, lost, n;
	uint64_t lost_bytes;

	if (!j->checked) {
		/* A failed seal may have left plaintext in the buffer: never sent. */
		for (unsigned i = 0; i < j->n; i++) {
			if (j->p[i].ok) {
				j->m[k++] = j->m[i];
				continue;
			}
			w->cnt.inflight[TL_DIR_ENCAP]--;
			tl_drop_deq(w, TL_PORT_WAN, j->m[i], TL_DROP_encrypt_failed);
		}
		j->n = (uint16_t)k;
		j->checked = true;
	}
	if (j->next == j->n)
		return true;
	n = (unsigned)(j->n - j->next);
	for (unsigned i = 0; i < n; i++)          /* the port frees what it sends */
		len[i] = j->m[j->next + i]->pkt_len;
	sent = wan_tx(w, j->m + j->next, n, true, &lost, &lost_bytes);
	for (unsigned i = 0; i < sent; i++)
		e->tx_bytes += len[i];
	e->tx_bytes -= lost_bytes;               /* refused: not transmitted */
	e->tx_packets += sent - lost;
	w->cnt.tx[TL_PORT_WAN] += sent - lost;
	w->cnt.inflight[TL_DIR_ENCAP] -= sent;
	j->next = (uint16_t)(j->next + sent);
	if (j->next < j->n) {
		e->backpressure++;
		w->cnt.backpressure[TL_PORT_WAN]++;
		return false;
	}
	return true;
}

/* Sends n (at most a burst) frames on the LAN port and returns how many it took; those
 * not taken are m[taken..n), in their order (a `packet` port may send frames of different
 * flows out of order, so the ones taken need not have been the first). A `packet` port may
 * refuse some (the kernel's send error): dropped here as kernel_send_failed; *lost says how
 * many and *lost_bytes their bytes. */
static unsigned lan_tx(struct tl_worker *w, struct rte_mbuf **m, unsigned n, unsigned *lost, uint64_t *lost_bytes)
{
	struct tl_afp *p = w->dp->port[TL_PORT_LAN].afp;
	struct rte_mbuf *failed[TL_AFP_TX_MAX];
	uint16_t nf = 0, sent;

	*lost = 0;
	*lost_bytes = 0;
	if (!p)
		return rte_eth_tx_burst(w->eg[TL_PORT_LAN].port_id, w->queue, m, (uint16_t)n);
	sent = tl_afp_tx(p, w->queue, m, (uint16_t)n, failed, &nf);
	for (unsigned i = 0; i < nf; i++) {
		*lost_bytes += failed[i]->pkt_len;
		tl_drop_deq(w, TL_PORT_LAN, failed[i], TL_DROP_kernel_send_failed);
	}
	*lost = nf;
	return sent;
}

/* Frames the LAN port takes in one burst: a packet port merges each TCP flow's frames of a
 * burst into GSO packets, so it takes more at once (with 8 flows, 32 frames made runs of
 * about 5 segments). */
static unsigned lan_burst_max(const struct tl_worker *w)
{
	return w->dp->port[TL_PORT_LAN].afp ? TL_AFP_TX_MAX : TL_BURST;
}

/* LAN: one burst to the port; what it does not take returns to the head of the queue, in
 * order. Returns how many were offered. */
static unsigned lan_burst(struct tl_worker *w)
{
	struct tl_egress *e = &w->eg[TL_PORT_LAN];
	struct rte_mbuf *out[TL_AFP_TX_MAX];
	uint64_t bytes = 0, lost_bytes;
	unsigned n = 0, got, sent, lost, max = lan_burst_max(w);

	while (n < max && shaper_open(e, w->now_ns)) {
		got = tl_aqm_dequeue_burst(e->aqm, out + n, tl_shaper_on(&e->sh) ? 1 : max - n, w->now_ns);
		if (got == 0)
			break;
		for (unsigned i = n; i < n + got; i++)
			shaper_charge(e, out[i]);
		n += got;
		if (!tl_shaper_on(&e->sh))
			break;
	}
	shaper_note_wait(w, e, n);
	if (n == 0)
		return 0;
	for (unsigned i = 0; i < n; i++)          /* the port frees what it sends */
		bytes += out[i]->pkt_len;
	sent = lan_tx(w, out, n, &lost, &lost_bytes);
	for (unsigned i = sent; i < n; i++)       /* not taken: still ours */
		bytes -= out[i]->pkt_len;
	e->tx_bytes += bytes - lost_bytes;
	e->tx_packets += sent - lost;
	w->cnt.tx[TL_PORT_LAN] += sent - lost;
	if (sent < n) {
		for (unsigned i = sent; i < n; i++)
			shaper_refund(e, out[i]);
		tl_aqm_requeue_head(e->aqm, out + sent, n - sent);
		e->backpressure++;
		w->cnt.backpressure[TL_PORT_LAN]++;
		return sent;
	}
	return n;
}

unsigned tl_egress_flush(struct tl_worker *w, int role)
{
	unsigned total = 0, n;

	tl_shaper_backlog(&w->eg[role].sh, tl_aqm_backlog(w->eg[role].aqm) != 0, w->now_ns);
	for (int r = 0; r < TL_RX_ROUNDS && tl_aqm_backlog(w->eg[role].aqm); r++) {
		n = role == TL_PORT_WAN ? wan_take(w) : lan_burst(w);
		total += n;
		if (n < (role == TL_PORT_WAN ? TL_BURST : lan_burst_max(w)))
			break;
	}
	return total;
}

uint64_t tl_egress_shaper_wait_ns(const struct tl_worker *w)
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
