/* The worker loop: drain egress queues into the ports (what a port does not take stays
 * queued), then receive only as much as the downstream queues can hold. Nothing is freed
 * because something downstream is full: a full egress queue stops the receive side and
 * the backlog stays in the port's own RX ring. */
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_ring_peek_zc.h>

#include "dataplane/worker.h"

/* Idle backoff, by time since the last work: spin briefly; then yield the CPU (to the
 * applications and other instances sharing it) without arming a timer, which is costly
 * in a VM; after 2 ms, sleep 50 us growing to 1 ms per round. An idle worker wakes about
 * a thousand times a second and a packet arriving then waits at most 1 ms. */
#define TL_IDLE_SPIN_NS 20000ull
#define TL_IDLE_YIELD_NS 2000000ull
#define TL_IDLE_SLEEP_MIN_US 50
#define TL_IDLE_SLEEP_MAX_US 1000

static struct rte_ring *ring_create(const char *what, unsigned id, unsigned size, unsigned flags)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "w%u_%s", id, what);
	return rte_ring_create(name, size, (int)rte_socket_id(), flags);
}

int tl_worker_init(struct tl_worker *w, unsigned id, struct tl_dp *dp)
{
	const unsigned spsc = RING_F_SP_ENQ | RING_F_SC_DEQ;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->queue = (uint16_t)id;
	w->dp = dp;
	w->aead = tl_dp_aead_new();
	w->egress[TL_PORT_WAN] = ring_create("wan", id, TL_EGRESS_SIZE, spsc);
	w->egress[TL_PORT_LAN] = ring_create("lan", id, TL_EGRESS_SIZE, spsc);
	w->ctrl_tx = ring_create("ctl", id, TL_CTRL_TX_SIZE, spsc);
	w->slow_rx = ring_create("slw", id, TL_CTRL_TX_SIZE, spsc);
	if (!w->aead || !w->egress[TL_PORT_WAN] || !w->egress[TL_PORT_LAN] || !w->ctrl_tx || !w->slow_rx)
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
	for (int p = 0; p < TL_PORT_MAX; p++) {
		ring_drain_free(w->egress[p]);
		rte_ring_free(w->egress[p]);
	}
	ring_drain_free(w->ctrl_tx);
	rte_ring_free(w->ctrl_tx);
	ring_drain_free(w->slow_rx);
	rte_ring_free(w->slow_rx);
	tl_dp_aead_free(w->aead);
	memset(w, 0, sizeof(*w));
}

/* Offers the head of the egress queue to the port; what it takes leaves the queue. */
static unsigned egress_flush(struct tl_worker *w, int role)
{
	struct rte_ring_zc_data zc;
	uint16_t port = w->dp->port[role].port_id;
	unsigned n, sent;

	n = rte_ring_dequeue_zc_burst_start(w->egress[role], TL_BURST, &zc, NULL);
	if (n == 0)
		return 0;
	sent = rte_eth_tx_burst(port, w->queue, (struct rte_mbuf **)zc.ptr1, (uint16_t)zc.n1);
	if (sent == zc.n1 && n > zc.n1)
		sent += rte_eth_tx_burst(port, w->queue, (struct rte_mbuf **)zc.ptr2, (uint16_t)(n - zc.n1));
	rte_ring_dequeue_zc_finish(w->egress[role], sent);
	w->cnt.tx[role] += sent;
	if (sent < n)
		w->cnt.backpressure[role]++;
	return sent;
}

/* Frames built by the control plane (handshakes, keepalives, staged packets) join the WAN
 * egress queue as far as it has room. */
static unsigned ctrl_tx_move(struct tl_worker *w)
{
	struct rte_mbuf *m[TL_BURST];
	unsigned room = rte_ring_free_count(w->egress[TL_PORT_WAN]);
	unsigned n = rte_ring_sc_dequeue_burst(w->ctrl_tx, (void **)m, RTE_MIN(room, (unsigned)TL_BURST), NULL);

	if (n) {
		rte_ring_sp_enqueue_bulk(w->egress[TL_PORT_WAN], (void **)m, n, NULL);
		w->cnt.from_ctrl += n;
	}
	return n;
}

/* WAN datagrams the kernel reassembled go through the same decapsulation. */
static unsigned slow_rx_move(struct tl_worker *w)
{
	struct rte_mbuf *m[TL_BURST];
	unsigned room = rte_ring_free_count(w->egress[TL_PORT_LAN]);
	unsigned n = rte_ring_sc_dequeue_burst(w->slow_rx, (void **)m, RTE_MIN(room, (unsigned)TL_BURST), NULL);

	if (n)
		tl_decap_burst(w, m, n);
	return n;
}

static unsigned rx_room(const struct tl_worker *w, int role)
{
	unsigned room = rte_ring_free_count(w->egress[role]);

	return RTE_MIN(room, (unsigned)TL_BURST);
}

static unsigned poll_port(struct tl_worker *w, int in_role, int out_role)
{
	struct rte_mbuf *pkts[TL_BURST];
	unsigned room = rx_room(w, out_role);
	uint16_t n;

	if (room == 0) {
		w->cnt.backpressure[out_role]++;
		return 0;
	}
	n = rte_eth_rx_burst(w->dp->port[in_role].port_id, w->queue, pkts, (uint16_t)room);
	if (n == 0)
		return 0;
	w->cnt.rx[in_role] += n;
	if (in_role == TL_PORT_WAN)
		tl_decap_burst(w, pkts, n);
	else
		tl_encap_burst(w, pkts, n);
	return n;
}

static void idle(struct tl_worker *w)
{
	uint64_t idle_ns = w->now_ns - w->last_work_ns;
	uint32_t us;

	w->cnt.idle_polls++;
	if (idle_ns < TL_IDLE_SPIN_NS) {
		rte_pause();
		return;
	}
	if (idle_ns < TL_IDLE_YIELD_NS) {
		sched_yield();
		return;
	}
	us = (uint32_t)RTE_MIN((idle_ns - TL_IDLE_YIELD_NS) / 20000 + TL_IDLE_SLEEP_MIN_US,
			       (uint64_t)TL_IDLE_SLEEP_MAX_US);
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	rte_delay_us_sleep(us);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
}

int tl_worker_main(void *arg)
{
	struct tl_worker *w = arg;
	unsigned work;

	prctl(PR_SET_TIMERSLACK, 1UL);
	rte_rcu_qsbr_thread_register(w->dp->qsbr, w->id);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
	while (!w->dp->stop) {
		w->now_ns = tl_now_ns();
		work = egress_flush(w, TL_PORT_WAN) + egress_flush(w, TL_PORT_LAN);
		work += ctrl_tx_move(w);
		work += slow_rx_move(w);
		work += poll_port(w, TL_PORT_WAN, TL_PORT_LAN);
		work += poll_port(w, TL_PORT_LAN, TL_PORT_WAN);
		rte_rcu_qsbr_quiescent(w->dp->qsbr, w->id);
		if (work) {
			w->last_work_ns = w->now_ns;
			w->cnt.busy_polls++;
		} else {
			idle(w);
		}
	}
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	rte_rcu_qsbr_thread_unregister(w->dp->qsbr, w->id);
	return 0;
}
