/* The worker loop: the round's order, idle and blocking. It knows each direction's entry
 * points (encap.c: LAN -> WAN, decap.c: WAN -> LAN) and the port interface (port.h), no
 * port kind and no step of a direction. A queue owner, every round: frames of the control
 * plane go out first; finished crypto jobs leave in order (WAN frames to the port,
 * decrypted packets toward the LAN queue); each egress queue offers what its AQM and the
 * port's shaper release (WAN packets into crypto jobs, LAN frames to the port); then the
 * RX rings are read, LAN frames into the WAN queue and WAN frames into crypto jobs. Every
 * worker, owner or not, then seals and opens waiting jobs. So the AQM, not a ring, decides
 * what is dropped when a link is overloaded, and a peer's packets keep their order
 * whichever worker did their crypto. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "dataplane/decap.h"
#include "dataplane/encap.h"
#include "dataplane/port.h"
#include "dataplane/worker.h"

/* Idle backoff, by time since the last work: spin briefly (TL_IDLE_SPIN_NS). At the end
 * of the spin a queue owner whose ports all have sockets to wait on (AF_XDP, udp, packet)
 * and that has nothing queued or in flight blocks in poll() on those sockets and its
 * eventfd, so that the kernel, the control plane or a submitting worker wakes it
 * (TL_IDLE_BLOCK_MS bounds how late a stop request is seen). Yielding through a stream's
 * gaps instead cost the CPUs it shares more than the wake-ups do: a gateway that was not
 * the bottleneck yielded 88 000 times and read its sockets empty 300 000 times a second
 * (docs/results/2026-11-27-fraglist.md). Otherwise yield the CPU (to the applications and
 * other instances sharing it) without arming a timer, which is costly in a VM; after 2 ms
 * block as above when the worker can (one that owns no port: on its eventfd), or sleep
 * 50 us growing to 1 ms per round (ports without sockets: DPDK's). A queue held back by the
 * shaper is not idle: the worker spins through a gap shorter than TL_SHAPER_SPIN_NS and
 * otherwise sleeps to the next send slot (shaper_sleep), never yields. An owner waiting
 * for its crypto jobs only spins and yields. */
#define TL_IDLE_SPIN_NS 50000ull
#define TL_IDLE_BLOCK_MS 10
#define TL_IDLE_YIELD_NS 2000000ull
#define TL_IDLE_SLEEP_MIN_US 50
#define TL_IDLE_SLEEP_MAX_US 1000
#define TL_SHAPER_SPIN_NS 50000ull   /* a shaped gap shorter than this is spun through */

/* Crypto jobs a worker runs per round: an owner returns to its ports in between. */
#define TL_CRYPT_ROUND_JOBS 8

static struct rte_ring *ring_create(const char *what, unsigned id, unsigned size, unsigned flags)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "w%u_%s", id, what);
	return rte_ring_create(name, size, (int)rte_socket_id(), flags);
}

/* ---- setup -------------------------------------------------------------------------------- */

int tl_worker_init(struct tl_worker *w, unsigned id, struct tl_dp *dp)
{
	const unsigned spsc = RING_F_SP_ENQ | RING_F_SC_DEQ;

	memset(w, 0, sizeof(*w));
	for (int p = 0; p < TL_PORT_MAX; p++)
		w->wake_fd[p] = w->wake_fd2[p] = -1;
	w->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->id = id;
	w->queue = (uint16_t)id;
	w->owner = id < dp->n_queues;
	w->dp = dp;
	w->icmp_tokens = TL_ICMP_BURST;
	w->now_ns = tl_now_ns();
	w->aead = tl_dp_aead_new();
	w->ctrl_tx = ring_create("ctl", id, TL_CTRL_TX_SIZE, spsc);
	w->slow_rx = ring_create("slw", id, TL_CTRL_TX_SIZE, spsc);
	if (!w->aead || !w->ctrl_tx || !w->slow_rx || w->kick_fd < 0)
		return -1;
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (tl_queue_init(w, role) != 0)
			return -1;
	if (w->owner && tl_crypt_owner_init(w) != 0)
		return -1;
	if (id < TL_MAX_WORKERS)
		dp->worker[id] = w;
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
	if (w->dp && w->id < TL_MAX_WORKERS && w->dp->worker[w->id] == w)
		w->dp->worker[w->id] = NULL;
	tl_crypt_owner_fini(w);
	tl_hold_free(w);
	for (int p = 0; p < TL_PORT_MAX; p++) {
		tl_shaper_backlog(&w->eg[p].sh, false, 0);   /* no longer counts in the port's backlog */
		tl_aqm_free(w->eg[p].aqm);
	}
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

/* ---- receive ------------------------------------------------------------------------------ */

static unsigned poll_port(struct tl_worker *w, int role)
{
	unsigned total = 0, n, asked;

	for (int r = 0; r < TL_RX_ROUNDS; r++) {
		n = role == TL_PORT_WAN ? tl_decap_rx(w, NULL, &asked) : tl_encap_rx(w, &asked);
		total += n;
		if (n == 0 || n < asked)   /* the port is empty, or no job is free */
			break;
	}
	return total;
}

/* ---- the egress queues ------------------------------------------------------------------- */

unsigned tl_worker_flush(struct tl_worker *w, int role)
{
	unsigned total = 0, n, max = role == TL_PORT_WAN ? TL_JOB_MAX : tl_port_tx_burst_max(&w->dp->port[TL_PORT_LAN]);

	tl_shaper_backlog(&w->eg[role].sh, tl_aqm_backlog(w->eg[role].aqm) != 0, w->now_ns);
	for (int r = 0; r < TL_RX_ROUNDS && tl_aqm_backlog(w->eg[role].aqm); r++) {
		n = role == TL_PORT_WAN ? tl_encap_take(w) : tl_decap_lan_send(w, max);
		total += n;
		if (n < max)
			break;
	}
	return total;
}

/* ---- idle --------------------------------------------------------------------------------- */

static bool can_block(const struct tl_worker *w)
{
	if (!w->owner)
		return true;
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (w->wake_fd[role] < 0 || tl_aqm_backlog(w->eg[role].aqm))
			return false;
	for (int role = 0; role < TL_PORT_MAX; role++)
		if (tl_port_rx_pending(&w->dp->port[role], w->queue))
			return false;   /* read from the sockets, not handed out yet */
	return !tl_crypt_busy(w);
}

static bool work_waiting(struct tl_worker *w)
{
	return !rte_ring_empty(w->ctrl_tx) || !rte_ring_empty(w->slow_rx) || tl_queue_requests_pending(w) ||
	       !rte_ring_empty(w->dp->crypto_ring) || w->dp->stop;
}

/* The worker's sockets to wait on for input (a queue owner's ports), and its eventfd last;
 * returns how many. */
static int idle_fds(const struct tl_worker *w, struct pollfd *pfd)
{
	int n = 0;

	for (int role = 0; w->owner && role < TL_PORT_MAX; role++) {
		const struct tl_port_info *p = &w->dp->port[role];

		if (tl_port_live_fds(p)) {   /* its sockets change when the listen port moves */
			for (int f = 0; f < 2; f++) {
				int fd = tl_port_fd(p, w->queue, f);

				if (fd >= 0)
					pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
			}
			continue;
		}
		pfd[n++] = (struct pollfd){ .fd = w->wake_fd[role], .events = POLLIN };
		if (w->wake_fd2[role] >= 0)
			pfd[n++] = (struct pollfd){ .fd = w->wake_fd2[role], .events = POLLIN };
	}
	pfd[n++] = (struct pollfd){ .fd = w->kick_fd, .events = POLLIN };
	return n;
}

/* A socket port took no more at its last send: its socket, to wait for POLLOUT on, or -1. */
static int out_full_fd(const struct tl_worker *w)
{
	int fd = tl_port_tx_full_fd(&w->dp->port[TL_PORT_WAN], w->queue);

	return fd >= 0 ? fd : tl_port_tx_full_fd(&w->dp->port[TL_PORT_LAN], w->queue);
}

/* Waits (at most 1 ms) until the full socket takes more, input arrives or the worker is
 * kicked, instead of yielding in a loop while the kernel drains it. */
static void idle_wait_out(struct tl_worker *w, int out_fd)
{
	struct pollfd pfd[2 * TL_PORT_MAX + 2];
	int n = idle_fds(w, pfd), kick = n - 1;
	uint64_t v;

	pfd[n++] = (struct pollfd){ .fd = out_fd, .events = POLLOUT };
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	if (poll(pfd, (nfds_t)n, 1) > 0)
		w->cnt.wakeups++;
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
	if ((pfd[kick].revents & POLLIN) && read(w->kick_fd, &v, sizeof(v)) < 0) {
		/* consumed by another round already */
	}
}

static void idle_block(struct tl_worker *w)
{
	struct pollfd pfd[2 * TL_PORT_MAX + 1];
	uint64_t v;
	int n = idle_fds(w, pfd);

	atomic_store_explicit(&w->blocked, true, memory_order_relaxed);
	atomic_fetch_add_explicit(&w->dp->n_blocked, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (!work_waiting(w)) {
		rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
		if (poll(pfd, (nfds_t)n, TL_IDLE_BLOCK_MS) > 0)
			w->cnt.wakeups++;
		rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
	}
	atomic_fetch_sub_explicit(&w->dp->n_blocked, 1, memory_order_relaxed);
	atomic_store_explicit(&w->blocked, false, memory_order_relaxed);
	if ((pfd[n - 1].revents & POLLIN) && read(w->kick_fd, &v, sizeof(v)) < 0) {
		/* Another round consumed the kick already: nothing to reset. */
	}
}

/* The shaper holds packets back for wait ns: spin through a short gap; sleep to the slot
 * (an absolute CLOCK_MONOTONIC deadline, timer slack 1 ns) through a longer one, at most
 * TL_IDLE_SLEEP_MAX_US so that input and stop requests are seen. Never a yield: with a
 * runnable task beside it, a yield gives up the CPU for a slice or a tick (ms), and the
 * shaper's clock, which keeps its debt, then sends the late frames back to back. */
static void shaper_sleep(struct tl_worker *w, uint64_t wait)
{
	uint64_t until;
	struct timespec ts;

	if (wait < TL_SHAPER_SPIN_NS) {
		rte_pause();
		return;
	}
	until = w->now_ns + RTE_MIN(wait, TL_IDLE_SLEEP_MAX_US * 1000ull);
	ts.tv_sec = (time_t)(until / 1000000000ull);
	ts.tv_nsec = (long)(until % 1000000000ull);
	w->cnt.shaper_sleeps++;
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
}

static void idle(struct tl_worker *w)
{
	uint64_t idle_ns = w->now_ns - w->last_work_ns, wait = tl_queue_shaper_wait_ns(w);
	uint32_t us;
	int out_fd;

	w->cnt.idle_polls++;
	if (wait) {
		shaper_sleep(w, wait);
		return;
	}
	if (idle_ns < TL_IDLE_SPIN_NS) {
		rte_pause();
		return;
	}
	if (w->owner && (out_fd = out_full_fd(w)) >= 0) {
		idle_wait_out(w, out_fd);
		return;
	}
	if (w->owner && can_block(w)) {   /* the spin is over */
		idle_block(w);
		return;
	}
	if (idle_ns < TL_IDLE_YIELD_NS || (w->owner && tl_crypt_busy(w))) {
		sched_yield();
		return;
	}
	if (can_block(w)) {
		idle_block(w);
		return;
	}
	us = (uint32_t)RTE_MIN((idle_ns - TL_IDLE_YIELD_NS) / 20000 + TL_IDLE_SLEEP_MIN_US,
			       (uint64_t)TL_IDLE_SLEEP_MAX_US);
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->id);
	rte_delay_us_sleep(us);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->id);
}

/* ---- the round ---------------------------------------------------------------------------- */

static void housekeeping(struct tl_worker *w)
{
	uint64_t gen = atomic_load_explicit(&w->dp->key_gen, memory_order_acquire);

	if (gen != w->key_gen) {
		w->key_gen = gen;
		tl_dp_aead_forget(w->aead);
	}
	tl_queue_housekeeping(w);
}

/* A queue owner's part of the round: its ports, queues and finished jobs. */
static unsigned owner_round(struct tl_worker *w)
{
	unsigned work;

	if (w->n_hold)
		tl_hold_poll(w);
	work = tl_encap_ctrl_flush(w);
	work += tl_encap_finish(w) + tl_decap_finish(w);
	work += tl_worker_flush(w, TL_PORT_WAN) + tl_worker_flush(w, TL_PORT_LAN);
	work += tl_decap_rx(w, w->slow_rx, NULL);
	work += poll_port(w, TL_PORT_WAN);
	work += poll_port(w, TL_PORT_LAN);
	return work;
}

unsigned tl_worker_round(struct tl_worker *w)
{
	unsigned work = 0;

	housekeeping(w);
	if (w->owner)
		work = owner_round(w);
	work += tl_crypt_work(w, TL_CRYPT_ROUND_JOBS);
	if (w->owner)   /* what this round sealed and opened leaves in it */
		work += tl_encap_finish(w) + tl_decap_finish(w);
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
