/* What one worker lcore owns, shared by the files that run on it (worker.c, encap.c,
 * decap.c, crypt.c, queue.c): the worker, its egress queues, its crypto jobs, next-hop
 * holds and counters, and the per-packet helpers they all use. The control plane's view
 * of a worker is worker.h. */
#ifndef TL_LCORE_H
#define TL_LCORE_H

#include <time.h>

#include "crypto/primitives.h"
#include "dataplane/aqm.h"
#include "dataplane/dp.h"
#include "dataplane/shaper.h"

#define TL_CTRL_TX_SIZE 512

/* Bursts per port and round, each way: RX rings are drained and queues flushed, within
 * reason for fairness between the ports. */
#define TL_RX_ROUNDS 8

/* ICMP error rate of a worker, as the kernel's net.ipv4.icmp_msgs_per_sec/_burst. */
#define TL_ICMP_RATE 1000
#define TL_ICMP_BURST 50

#define TL_QUEUE_SNAP_NS 10000000ull

/* What the control plane sees of one egress queue (worker, port): a copy the worker
 * publishes every TL_QUEUE_SNAP_NS and whenever parameters change. */
struct tl_queue_snapshot {
	struct tl_aqm_stats aqm;           /* counters, backlog, sojourn histogram */
	struct tl_aqm_params params;
	struct tl_shaper_params shaper;
	uint64_t tx_packets, tx_bytes;     /* frames the port took from this queue */
	uint64_t backpressure;             /* rounds the port took fewer than offered */
	uint64_t shaper_waits;             /* rounds the shaper held packets back */
	uint64_t shaper_lost_ns;           /* sending time the shaper's catch-up bound gave up */
	uint64_t stamp_ns;                 /* CLOCK_MONOTONIC when taken */
};

/* One egress queue: the AQM, the shaper in front of the port, and what the control plane
 * sees of them. Owned by its worker; the control plane only reads the snapshot (seqlock)
 * and posts parameter changes through the mailbox (req_*, then req_gen). The shaper's
 * clock belongs to the port (dp->shaper_port, shaper.h), shared by the port's egress
 * queues: one rate whatever the number of workers. */
struct tl_egress {
	struct tl_aqm *aqm;
	struct tl_aqm_params params;
	struct tl_shaper_params shaper;
	struct tl_shaper sh;               /* this queue's view of the port's clock */
	uint64_t tx_packets, tx_bytes, backpressure, shaper_waits;
	uint64_t snap_ns;
	rte_seqlock_t snap_lock;
	struct tl_queue_snapshot snap;
	_Atomic uint32_t req_gen, done_gen;
	bool req_has_aqm, req_has_shaper;
	struct tl_aqm_params req_aqm;
	struct tl_shaper_params req_shaper;
	const char *req_err;
};

/* Held packets of one unresolved next hop (gateway mode, per worker, decap.c): at most
 * TL_HOLD_PKTS per next hop and TL_HOLD_HOPS next hops per worker; they leave in order when
 * the MAC appears, or after TL_HOLD_NS as no_neighbour. The control plane is asked once per
 * held next hop. */
#define TL_HOLD_HOPS 16
#define TL_HOLD_PKTS 8
#define TL_HOLD_NS (3000ull * 1000000ull)

struct tl_hold {
	struct tl_neigh_key key;
	uint64_t until;
	bool asked;                      /* the request reached the control plane */
	uint16_t n;
	struct rte_mbuf *m[TL_HOLD_PKTS];
};

struct tl_crypt_job;

struct tl_worker {
	unsigned id;
	uint16_t queue;                          /* the port queue pair it owns, if owner */
	bool owner;                              /* id < dp->n_queues */
	struct tl_dp *dp;
	struct tl_dp_aead *aead;
	struct tl_egress eg[TL_PORT_MAX];        /* the only queues of the worker */
	struct rte_ring *ctrl_tx;                /* frames built by the control plane (SP/SC) */
	struct rte_ring *slow_rx;                /* WAN frames that came through the kernel (SP/SC) */
	/* Queue owners (crypt.c): this worker's crypto jobs per direction: all of them,
	 * the free ones, the ones in flight in submission order (SP/SC, the owner only; NULL
	 * on a worker that owns no queue) and the one being filled. */
	struct tl_crypt_job *jobs[TL_DIR_MAX];
	struct rte_ring *jobs_free[TL_DIR_MAX];
	struct rte_ring *jobs_order[TL_DIR_MAX];
	struct tl_crypt_job *job_open[TL_DIR_MAX];
	struct tl_counters cnt;
	/* ICMP errors this worker may still send: a token bucket (TL_ICMP_RATE per second,
	 * TL_ICMP_BURST deep), refilled at icmp_tb_ns. */
	uint64_t icmp_tb_ns;
	uint32_t icmp_tokens;
	uint64_t now_ns;
	uint64_t last_work_ns;
	uint64_t key_gen;                        /* dp->key_gen the AEAD context was last cleared at */
	unsigned roams_inflight;                 /* owner: decap packets in flight from another source
						  * than their peer's endpoint (decap.c) */
	_Atomic bool running;
	/* Event-driven idle: the AF_XDP socket of this worker's queue on each port (-1: the
	 * port has none, so the worker never blocks) and an eventfd the control plane and
	 * other workers write after giving it work while it is blocked in poll(). */
	int wake_fd[TL_PORT_MAX];
	int wake_fd2[TL_PORT_MAX];        /* a second socket of the port (udp: IPv6), or -1 */
	int kick_fd;
	atomic_bool blocked;
	/* Decrypted packets waiting for the MAC of their LAN next hop (decap.c). */
	struct tl_hold hold[TL_HOLD_HOPS];
	unsigned n_hold;
};

/* Packets one queue with these parameters may hold: its packet limit, or fewer if its
 * memory limit binds first (port buffers are default-sized mbufs). */
static inline uint32_t tl_aqm_capacity(const struct tl_aqm_params *p)
{
	uint64_t by_mem = p->memory_limit / (RTE_MBUF_DEFAULT_BUF_SIZE + sizeof(struct rte_mbuf));

	return (uint32_t)RTE_MIN((uint64_t)p->limit, by_mem);
}

static inline uint64_t tl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void tl_drop_pkt(struct tl_counters *c, struct rte_mbuf *m, enum tl_drop why)
{
	c->drops[why]++;
	rte_pktmbuf_free(m);
}

/* A drop of a packet received on port role, before it reached a queue. */
static inline void tl_drop_rx(struct tl_worker *w, int role, struct rte_mbuf *m, enum tl_drop why)
{
	w->cnt.rx_drops[role]++;
	tl_drop_pkt(&w->cnt, m, why);
}

/* A drop of a packet the queue of port role released. */
static inline void tl_drop_deq(struct tl_worker *w, int role, struct rte_mbuf *m, enum tl_drop why)
{
	w->cnt.deq_drops[role]++;
	tl_drop_pkt(&w->cnt, m, why);
}

static inline void tl_egress_enqueue(struct tl_worker *w, int role, struct rte_mbuf *m)
{
	tl_aqm_enqueue(w->eg[role].aqm, m, w->now_ns);
}

/* Keypair usable for sending now? */
static inline bool tl_keypair_can_send(const struct tl_dp *dp, const struct tl_keypair *kp, uint64_t now)
{
	return kp && tl_age_ns(now, kp->birth_ns) < dp->limits.reject_after_time_ns &&
	       atomic_load_explicit(&kp->send_counter, memory_order_relaxed) < dp->limits.reject_after_messages;
}

/* Wakes w if it is blocked in poll() (worker.c idle_block). Call after giving it work. */
static inline void tl_worker_kick(struct tl_worker *w)
{
	static const uint64_t one = 1;

	/* Pairs with the fence in idle_block(): either the worker sees the new work before
	 * it blocks, or we see it blocked and wake it. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->blocked, memory_order_relaxed) && write(w->kick_fd, &one, sizeof(one)) < 0) {
		/* Only a saturated counter fails, and then the worker is being woken anyway. */
	}
}

#endif
