/* The worker loop. Every round: frames of the control plane go out first; then each
 * egress queue (AQM + shaper) offers what it releases to its port, and whatever the port
 * does not take goes back to the head of the queue for the next round (no tail drop, no
 * loss); then the RX rings are drained into the egress queues, so that the AQM, not the
 * NIC or a ring, decides what is dropped when a link is overloaded. */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_ring_peek_zc.h>

#include "dataplane/packet.h"
#include "dataplane/worker.h"

/* Idle backoff, by time since the last work: spin briefly; then yield the CPU (to the
 * applications and other instances sharing it) without arming a timer, which is costly
 * in a VM. After 2 ms: when every port of the worker is an AF_XDP socket and its queues
 * are empty, block in poll() on those sockets and the control plane's eventfd, so that
 * the kernel wakes us when a frame arrives (TL_IDLE_BLOCK_MS bounds how late a stop
 * request is seen); otherwise sleep 50 us growing to 1 ms per round. Blocking earlier,
 * instead of yielding, costs throughput when the CPUs are shared: each wake-up waits for
 * the scheduler. A queue held back by the shaper is not idle: the worker sleeps only
 * until the next send slot. */
#define TL_IDLE_SPIN_NS 20000ull
#define TL_IDLE_BLOCK_MS 10
#define TL_IDLE_YIELD_NS 2000000ull
#define TL_IDLE_SLEEP_MIN_US 50
#define TL_IDLE_SLEEP_MAX_US 1000

/* Bursts per port and round, each way: RX rings are drained and queues flushed, within
 * reason for fairness between the ports. */
#define TL_RX_ROUNDS 8

static struct rte_ring *ring_create(const char *what, unsigned id, unsigned size, unsigned flags)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "w%u_%s", id, what);
	return rte_ring_create(name, size, (int)rte_socket_id(), flags);
}

/* ---- shaper: a token bucket kept as the virtual time of the next send slot ---------------- */

static void shaper_set(struct tl_egress *e, const struct tl_shaper_params *sp, unsigned n_workers)
{
	uint64_t rate = sp->rate_bps / n_workers;   /* each worker shapes its share */

	e->shaper = *sp;
	if (!sp->rate_bps || !rate) {
		e->ns_per_byte_q20 = 0;
		return;
	}
	e->ns_per_byte_q20 = (uint64_t)(((unsigned __int128)8000000000ull << 20) / rate);
	e->burst_ns = (uint64_t)(((unsigned __int128)tl_shaper_burst(sp) * e->ns_per_byte_q20) >> 20);
	e->next_ns = 0;
}

static inline uint64_t wire_cost(const struct tl_egress *e, const struct rte_mbuf *m)
{
	return (uint64_t)(((unsigned __int128)(m->pkt_len + TL_WIRE_OVERHEAD) * e->ns_per_byte_q20) >> 20);
}

/* May the queue send now? Refills the bucket up to its depth. */
static inline bool shaper_open(struct tl_egress *e, uint64_t now)
{
	if (!e->ns_per_byte_q20)
		return true;
	if (e->next_ns + e->burst_ns < now)
		e->next_ns = now - e->burst_ns;
	return e->next_ns <= now;
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

/* Rules that depend on this dataplane rather than on the parameters alone. */
static const char *queue_check(const struct tl_worker *w, int role, const struct tl_aqm_params *aqm,
			       const struct tl_shaper_params *sh)
{
	const char *err = aqm ? tl_aqm_params_check(aqm) : NULL;

	if (!err && sh)
		err = tl_shaper_params_check(sh);
	if (!err && aqm && tl_aqm_capacity(aqm) > w->dp->queue_cap[role])
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
	const char *err = queue_check(w, role, e->req_has_aqm ? &e->req_aqm : NULL,
				      e->req_has_shaper ? &e->req_shaper : NULL);

	if (!err && e->req_has_aqm) {
		err = tl_aqm_set_params(e->aqm, &e->req_aqm);
		if (!err)
			e->params = e->req_aqm;
	}
	if (!err && e->req_has_shaper)
		shaper_set(e, &e->req_shaper, w->dp->n_workers);
	e->req_err = err;
	snapshot_publish(w, e);
	atomic_store_explicit(&e->done_gen, gen, memory_order_release);
}

const char *tl_worker_queue_set(struct tl_worker *w, int role, const struct tl_aqm_params *aqm,
				const struct tl_shaper_params *sh)
{
	struct tl_egress *e = &w->eg[role];
	const char *err = queue_check(w, role, aqm, sh);
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

void tl_conservation(struct tl_worker *ws, unsigned n, struct tl_port_balance out[TL_PORT_MAX])
{
	memset(out, 0, sizeof(*out) * TL_PORT_MAX);
	for (unsigned i = 0; i < n; i++) {
		const struct tl_counters *c = &ws[i].cnt;
		struct tl_queue_snapshot q[TL_PORT_MAX];

		for (int role = 0; role < TL_PORT_MAX; role++)
			tl_worker_queue_read(&ws[i], role, &q[role]);
		/* LAN -> WAN queue */
		out[TL_PORT_LAN].rx += tl_cnt_read(&c->rx[TL_PORT_LAN]);
		out[TL_PORT_LAN].generated += tl_cnt_read(&c->fragments) - tl_cnt_read(&c->fragmented);
		out[TL_PORT_LAN].tx += q[TL_PORT_WAN].tx_packets;
		out[TL_PORT_LAN].drops += tl_cnt_read(&c->rx_drops[TL_PORT_LAN]) + tl_cnt_read(&c->deq_drops[TL_PORT_WAN]) +
					  q[TL_PORT_WAN].aqm.drops_codel + q[TL_PORT_WAN].aqm.drops_overlimit;
		out[TL_PORT_LAN].handed += tl_cnt_read(&c->staged);
		out[TL_PORT_LAN].queued += q[TL_PORT_WAN].aqm.backlog_pkts;
		/* WAN -> LAN queue */
		out[TL_PORT_WAN].rx += tl_cnt_read(&c->rx[TL_PORT_WAN]) + tl_cnt_read(&c->slowpath_rx);
		out[TL_PORT_WAN].generated += tl_cnt_read(&c->icmp_errors);
		out[TL_PORT_WAN].tx += q[TL_PORT_LAN].tx_packets;
		out[TL_PORT_WAN].drops += tl_cnt_read(&c->rx_drops[TL_PORT_WAN]) + tl_cnt_read(&c->deq_drops[TL_PORT_LAN]) +
					  q[TL_PORT_LAN].aqm.drops_codel + q[TL_PORT_LAN].aqm.drops_overlimit;
		out[TL_PORT_WAN].handed += tl_cnt_read(&c->to_ctrl) + tl_cnt_read(&c->consumed);
		out[TL_PORT_WAN].queued += q[TL_PORT_LAN].aqm.backlog_pkts + tl_cnt_read(&c->held);
	}
	for (int role = 0; role < TL_PORT_MAX; role++) {
		struct tl_port_balance *b = &out[role];

		b->balance = (int64_t)(b->rx + b->generated) - (int64_t)(b->tx + b->drops + b->handed + b->queued);
	}
}

/* ---- setup -------------------------------------------------------------------------------- */

static int egress_init(struct tl_worker *w, int role)
{
	struct tl_egress *e = &w->eg[role];
	char name[32];

	snprintf(name, sizeof(name), "aqm_w%u_%s", w->id, role == TL_PORT_WAN ? "wan" : "lan");
	e->port_id = w->dp->port[role].port_id;
	e->params = w->dp->aqm_init[role];
	e->aqm = tl_aqm_create(name, &e->params, role == TL_PORT_WAN ? 0 : RTE_ETHER_HDR_LEN, (int)rte_socket_id());
	if (!e->aqm)
		return -1;
	tl_aqm_attach_drops(e->aqm, w->cnt.drops);
	shaper_set(e, &w->dp->shaper_init[role], w->dp->n_workers);
	rte_seqlock_init(&e->snap_lock);
	snapshot_publish(w, e);
	return 0;
}

int tl_worker_init(struct tl_worker *w, unsigned id, struct tl_dp *dp)
{
	const unsigned spsc = RING_F_SP_ENQ | RING_F_SC_DEQ;

	memset(w, 0, sizeof(*w));
	for (int p = 0; p < TL_PORT_MAX; p++)
		w->wake_fd[p] = -1;
	w->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->id = id;
	w->queue = (uint16_t)id;
	w->dp = dp;
	w->icmp_tokens = TL_ICMP_BURST;
	w->now_ns = tl_now_ns();
	w->aead = tl_dp_aead_new();
	w->ctrl_tx = ring_create("ctl", id, TL_CTRL_TX_SIZE, spsc);
	w->slow_rx = ring_create("slw", id, TL_CTRL_TX_SIZE, spsc);
	if (!w->aead || !w->ctrl_tx || !w->slow_rx || w->kick_fd < 0)
		return -1;
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (egress_init(w, role) != 0)
			return -1;
	return 0;
}

static void ring_drain_free(struct rte_ring *r)
{
	struct rte_mbuf *m;

	while (r && rte_ring_dequeue(r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
}

void tl_worker_fini(struct tl_worker *w)
{
	tl_hold_free(w);
	for (int p = 0; p < TL_PORT_MAX; p++)
		tl_aqm_free(w->eg[p].aqm);
	ring_drain_free(w->ctrl_tx);
	rte_ring_free(w->ctrl_tx);
	ring_drain_free(w->slow_rx);
	rte_ring_free(w->slow_rx);
	tl_dp_aead_free(w->aead);
	if (w->kick_fd >= 0)
		close(w->kick_fd);
	memset(w, 0, sizeof(*w));
	w->kick_fd = -1;
}

/* ---- the round ---------------------------------------------------------------------------- */

/* Frames built by the control plane (handshakes, keepalives, staged packets) go out ahead
 * of the queues; what the port refuses stays in the ring. They use the shaper's budget. */
static unsigned ctrl_tx_flush(struct tl_worker *w)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	struct rte_ring_zc_data zc;
	struct rte_mbuf **m;
	unsigned n, sent;

	n = rte_ring_dequeue_zc_burst_start(w->ctrl_tx, TL_BURST, &zc, NULL);
	if (n == 0)
		return 0;
	m = (struct rte_mbuf **)zc.ptr1;          /* the contiguous part; the rest next round */
	for (unsigned i = 0; i < zc.n1 && e->ns_per_byte_q20; i++)
		e->next_ns += wire_cost(e, m[i]);
	sent = rte_eth_tx_burst(e->port_id, w->queue, m, (uint16_t)zc.n1);
	for (unsigned i = sent; i < zc.n1 && e->ns_per_byte_q20; i++)
		e->next_ns -= wire_cost(e, m[i]);
	rte_ring_dequeue_zc_finish(w->ctrl_tx, sent);
	w->cnt.from_ctrl += sent;
	w->cnt.tx[TL_PORT_WAN] += sent;
	return sent;
}

/* Takes up to TL_BURST packets the AQM releases and the shaper allows, readies them for
 * the wire (WAN: encryption) into out. Returns how many are ready. */
static unsigned egress_take(struct tl_worker *w, int role, struct rte_mbuf **out)
{
	struct tl_egress *e = &w->eg[role];
	const struct tl_table *t = atomic_load_explicit(&w->dp->table, memory_order_acquire);
	struct rte_mbuf *m[TL_BURST];
	unsigned n = 0, got, old, i;

	while (n < TL_BURST && shaper_open(e, w->now_ns)) {
		/* Without a shaper a whole burst at once; with one, packet by packet. */
		unsigned want = e->ns_per_byte_q20 ? 1 : TL_BURST - n;

		old = tl_aqm_requeued_pending(e->aqm);
		got = tl_aqm_dequeue_burst(e->aqm, m, want, w->now_ns);
		if (got == 0)
			break;
		for (i = 0; i < got; i++) {
			/* Packets given back earlier were readied already. */
			if (i >= old && role == TL_PORT_WAN && !tl_encap_dequeued(w, t, m[i]))
				continue;
			if (e->ns_per_byte_q20)
				e->next_ns += wire_cost(e, m[i]);
			out[n++] = m[i];
		}
		if (!e->ns_per_byte_q20)
			break;
	}
	if (n < TL_BURST && e->ns_per_byte_q20 && tl_aqm_backlog(e->aqm) && !shaper_open(e, w->now_ns))
		e->shaper_waits++;
	return n;
}

/* One burst to the port. Returns how many it took; *offered how many were offered. */
static unsigned egress_burst(struct tl_worker *w, int role, unsigned *offered)
{
	struct tl_egress *e = &w->eg[role];
	struct rte_mbuf *out[TL_BURST];
	unsigned n, sent;

	*offered = 0;
	if (!tl_aqm_backlog(e->aqm))
		return 0;
	n = egress_take(w, role, out);
	*offered = n;
	if (n == 0)
		return 0;
	sent = rte_eth_tx_burst(e->port_id, w->queue, out, (uint16_t)n);
	for (unsigned i = 0; i < sent; i++)
		e->tx_bytes += out[i]->pkt_len;
	e->tx_packets += sent;
	w->cnt.tx[role] += sent;
	if (sent < n) {
		/* The port is full: the rest waits at the head of the queue, in order. */
		for (unsigned i = sent; i < n && e->ns_per_byte_q20; i++)
			e->next_ns -= wire_cost(e, out[i]);
		tl_aqm_requeue_head(e->aqm, out + sent, n - sent);
		e->backpressure++;
		w->cnt.backpressure[role]++;
	}
	return sent;
}

static unsigned egress_flush(struct tl_worker *w, int role)
{
	unsigned total = 0, offered, sent;

	for (int r = 0; r < TL_RX_ROUNDS; r++) {
		sent = egress_burst(w, role, &offered);
		total += offered;
		if (offered < TL_BURST || sent < offered)
			break;
	}
	return total;
}

/* WAN datagrams the kernel reassembled go through the same decapsulation. */
static unsigned slow_rx_move(struct tl_worker *w)
{
	struct rte_mbuf *m[TL_BURST];
	unsigned n = rte_ring_sc_dequeue_burst(w->slow_rx, (void **)m, TL_BURST, NULL);

	if (n) {
		w->cnt.slowpath_rx += n;
		tl_decap_burst(w, m, n);
	}
	return n;
}

static unsigned poll_port(struct tl_worker *w, int in_role)
{
	struct rte_mbuf *pkts[TL_BURST];
	unsigned total = 0;
	uint16_t n;

	for (int r = 0; r < TL_RX_ROUNDS; r++) {
		n = rte_eth_rx_burst(w->dp->port[in_role].port_id, w->queue, pkts, TL_BURST);
		if (n == 0)
			break;
		w->cnt.rx[in_role] += n;
		if (in_role == TL_PORT_WAN)
			tl_decap_burst(w, pkts, n);
		else
			tl_encap_burst(w, pkts, n);
		total += n;
		if (n < TL_BURST)
			break;
	}
	return total;
}

/* The shaper holds packets back: time until the earliest send slot, else 0. */
static uint64_t shaper_wait_ns(const struct tl_worker *w)
{
	uint64_t wait = 0;

	for (int role = 0; role < TL_PORT_MAX; role++) {
		const struct tl_egress *e = &w->eg[role];

		if (e->ns_per_byte_q20 && tl_aqm_backlog(e->aqm) && e->next_ns > w->now_ns) {
			uint64_t d = e->next_ns - w->now_ns;

			wait = wait ? RTE_MIN(wait, d) : d;
		}
	}
	return wait;
}

void tl_worker_kick(struct tl_worker *w)
{
	static const uint64_t one = 1;

	/* Pairs with the fence in idle_block(): either the worker sees the new work before
	 * it blocks, or we see it blocked and wake it. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->blocked, memory_order_relaxed) && write(w->kick_fd, &one, sizeof(one)) < 0) {
		/* Only a saturated counter fails, and then the worker is being woken anyway. */
	}
}

static bool requests_pending(struct tl_worker *w)
{
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (request_posted(&w->eg[role]))
			return true;
	return false;
}

static bool can_block(const struct tl_worker *w)
{
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (w->wake_fd[role] < 0 || tl_aqm_backlog(w->eg[role].aqm))
			return false;
	return true;
}

static void idle_block(struct tl_worker *w)
{
	struct pollfd pfd[TL_PORT_MAX + 1];
	uint64_t v;
	int n = 0;

	for (int role = 0; role < TL_PORT_MAX; role++)
		pfd[n++] = (struct pollfd){ .fd = w->wake_fd[role], .events = POLLIN };
	pfd[n++] = (struct pollfd){ .fd = w->kick_fd, .events = POLLIN };
	atomic_store_explicit(&w->blocked, true, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (rte_ring_empty(w->ctrl_tx) && rte_ring_empty(w->slow_rx) && !requests_pending(w) && !w->dp->stop) {
		rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
		if (poll(pfd, (nfds_t)n, TL_IDLE_BLOCK_MS) > 0)
			w->cnt.wakeups++;
		rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
	}
	atomic_store_explicit(&w->blocked, false, memory_order_relaxed);
	if ((pfd[n - 1].revents & POLLIN) && read(w->kick_fd, &v, sizeof(v)) < 0) {
		/* Another round consumed the kick already: nothing to reset. */
	}
}

static void idle(struct tl_worker *w)
{
	uint64_t idle_ns = w->now_ns - w->last_work_ns, wait = shaper_wait_ns(w);
	uint32_t us;

	w->cnt.idle_polls++;
	if (idle_ns < TL_IDLE_SPIN_NS || (wait && wait < TL_IDLE_SPIN_NS)) {
		rte_pause();
		return;
	}
	if (idle_ns < TL_IDLE_YIELD_NS || (wait && wait < 2 * TL_IDLE_SLEEP_MIN_US * 1000ull)) {
		sched_yield();
		return;
	}
	if (!wait && can_block(w)) {
		idle_block(w);
		return;
	}
	us = (uint32_t)RTE_MIN((idle_ns - TL_IDLE_YIELD_NS) / 20000 + TL_IDLE_SLEEP_MIN_US,
			       (uint64_t)TL_IDLE_SLEEP_MAX_US);
	if (wait)
		us = (uint32_t)RTE_MIN((uint64_t)us, wait / 1000);
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	rte_delay_us_sleep(us);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
}

static void housekeeping(struct tl_worker *w)
{
	uint64_t gen = atomic_load_explicit(&w->dp->key_gen, memory_order_acquire);

	if (gen != w->key_gen) {
		w->key_gen = gen;
		tl_dp_aead_forget(w->aead);
	}
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

unsigned tl_worker_round(struct tl_worker *w)
{
	unsigned work;

	housekeeping(w);
	if (w->n_hold)
		tl_hold_poll(w);
	work = ctrl_tx_flush(w);
	work += egress_flush(w, TL_PORT_WAN) + egress_flush(w, TL_PORT_LAN);
	work += slow_rx_move(w);
	work += poll_port(w, TL_PORT_WAN);
	work += poll_port(w, TL_PORT_LAN);
	rte_rcu_qsbr_quiescent(w->dp->qsbr, w->id);
	return work;
}

int tl_worker_main(void *arg)
{
	struct tl_worker *w = arg;
	uint64_t prev = tl_now_ns();
	unsigned work;

	prctl(PR_SET_TIMERSLACK, 1UL);
	rte_rcu_qsbr_thread_register(w->dp->qsbr, w->id);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
	atomic_store_explicit(&w->running, true, memory_order_release);
	while (!w->dp->stop) {
		w->now_ns = tl_now_ns();
		w->cnt.loop_ns += w->now_ns - prev;
		prev = w->now_ns;
		work = tl_worker_round(w);
		if (work) {
			w->last_work_ns = w->now_ns;
			w->cnt.busy_polls++;
			w->cnt.busy_ns += tl_now_ns() - w->now_ns;
		} else {
			idle(w);
		}
	}
	w->now_ns = tl_now_ns();
	tl_worker_snapshot(w);
	atomic_store_explicit(&w->running, false, memory_order_release);
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	rte_rcu_qsbr_thread_unregister(w->dp->qsbr, w->id);
	return 0;
}
