/* A run-to-completion worker: owns RX/TX queue `queue` of every port, its egress queues
 * and its counters. Workers back off when idle. */
#ifndef TL_WORKER_H
#define TL_WORKER_H

#include <time.h>

#include "crypto/primitives.h"
#include "dataplane/aqm.h"
#include "dataplane/dp.h"
#include "dataplane/lanfib.h"

#define TL_CTRL_TX_SIZE 512

/* What the control plane sees of one egress queue (worker, port): a copy the worker
 * publishes every TL_QUEUE_SNAP_NS and whenever parameters change. */
struct tl_worker;

#define TL_QUEUE_SNAP_NS 10000000ull

struct tl_queue_snapshot {
	struct tl_aqm_stats aqm;           /* counters, backlog, sojourn histogram */
	struct tl_aqm_params params;
	struct tl_shaper_params shaper;
	uint64_t tx_packets, tx_bytes;     /* frames the port took from this queue */
	uint64_t backpressure;             /* rounds the port took fewer than offered */
	uint64_t shaper_waits;             /* rounds the shaper held packets back */
	uint64_t stamp_ns;                 /* CLOCK_MONOTONIC when taken */
};

/* Copies the latest snapshot of worker w's egress queue of port role. Any thread. */
void tl_worker_queue_read(struct tl_worker *w, int role, struct tl_queue_snapshot *s);

/* Live parameter change of one egress queue, applied by the worker between bursts with
 * queued packets kept (aqm or sh may be NULL: unchanged). Control thread only; waits for
 * the worker (at most about a millisecond when it is idle). NULL on success, else
 * "<field>: <rule>" and nothing changed. */
const char *tl_worker_queue_set(struct tl_worker *w, int role, const struct tl_aqm_params *aqm,
				const struct tl_shaper_params *sh);

/* One egress queue: the AQM, the shaper in front of the port, and what the control plane
 * sees of them. Owned by its worker; the control plane only reads the snapshot (seqlock)
 * and posts parameter changes through the mailbox (req_*, then req_gen). */
struct tl_egress {
	struct tl_aqm *aqm;
	uint16_t port_id;
	struct tl_aqm_params params;
	struct tl_shaper_params shaper;
	uint64_t ns_per_byte_q20;          /* shaper cost of a byte, ns << 20; 0 = no shaper */
	uint64_t burst_ns;                 /* bucket depth as time at rate */
	uint64_t next_ns;                  /* virtual time of the next send slot */
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

struct tl_worker {
	unsigned id;
	uint16_t queue;
	struct tl_dp *dp;
	struct tl_dp_aead *aead;
	struct tl_egress eg[TL_PORT_MAX];        /* the only queues of the worker */
	struct rte_ring *ctrl_tx;                /* frames built by the control plane (SP/SC) */
	struct rte_ring *slow_rx;                /* WAN frames that came through the kernel (SP/SC) */
	/* Queue owners: this worker's crypto jobs in flight per direction, in submission order
	 * (SP/SC, the owner only; NULL on a worker that owns no queue). */
	struct rte_ring *jobs_order[TL_DIR_MAX];
	struct tl_counters cnt;
	/* ICMP errors this worker may still send: a token bucket (TL_ICMP_RATE per second,
	 * TL_ICMP_BURST deep), refilled at icmp_tb_ns. */
	uint64_t icmp_tb_ns;
	uint32_t icmp_tokens;
	uint64_t now_ns;
	uint64_t last_work_ns;
	uint64_t key_gen;                        /* dp->key_gen the AEAD context was last cleared at */
	_Atomic bool running;
	/* Event-driven idle: the AF_XDP socket of this worker's queue on each port (-1: the
	 * port has none, so the worker never blocks) and an eventfd the control plane writes
	 * after queueing work while the worker is blocked in poll(). */
	int wake_fd[TL_PORT_MAX];
	int kick_fd;
	atomic_bool blocked;
	/* Decrypted packets waiting for the MAC of their LAN next hop (lanfib.c). */
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

/* ICMP error rate of a worker, as the kernel's net.ipv4.icmp_msgs_per_sec/_burst. */
#define TL_ICMP_RATE 1000
#define TL_ICMP_BURST 50

/* Per-port conservation. Every packet received on a port, plus the ICMP errors tunless
 * generated toward that port's queue and the IPv4 fragments it made beyond the packets it
 * split, is exactly one of: transmitted by the queue its
 * packets go to (LAN -> WAN queue, WAN -> LAN queue), dropped under a named reason
 * (before the queue, in the AQM, or at dequeue), handed to the control plane (handshake
 * messages, keepalives, packets staged for a handshake), or still queued. Exact when the
 * dataplane is quiet; off by the packets in flight while it works. */
struct tl_port_balance {
	uint64_t rx;          /* received (WAN: + datagrams the kernel reassembled) */
	uint64_t generated;   /* ICMP errors tunless made (WAN entry: they join the LAN queue);
			       * LAN entry: the fragments made beyond the packets split */
	uint64_t tx;          /* data frames the destination queue transmitted */
	uint64_t drops;       /* every drop of these packets, any reason */
	uint64_t handed;      /* to the control plane */
	uint64_t queued;      /* in the destination queue now */
	int64_t balance;      /* rx + generated - tx - drops - handed - queued: 0 = exact */
};

/* Sums n workers' counters and queue snapshots (any thread). */
void tl_conservation(struct tl_worker *ws, unsigned n, struct tl_port_balance out[TL_PORT_MAX]);

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

int tl_worker_init(struct tl_worker *w, unsigned id, struct tl_dp *dp);

/* Call after giving w work from another thread (ctrl_tx, slow_rx, a queue parameter
 * request): wakes the worker if it is blocked in poll(). */
void tl_worker_kick(struct tl_worker *w);
void tl_worker_fini(struct tl_worker *w);
int tl_worker_main(void *arg);    /* rte_eal_remote_launch entry */

/* One round of tl_worker_main's loop at time w->now_ns (the caller stamps it): control
 * plane frames, both egress queues, the slow path and both RX ports, then a quiescent
 * state report (the calling thread must be registered and online in dp->qsbr as w->id).
 * Returns the packets handled; 0 = idle round. Only the worker's own thread. */
unsigned tl_worker_round(struct tl_worker *w);

/* Publishes the queue snapshots now (the owner thread, or any thread while the worker
 * does not run), so that tl_conservation sees the latest counters. */
void tl_worker_snapshot(struct tl_worker *w);

/* Fast-path stages (encap.c, decap.c): each consumes every packet it is given, into an
 * egress queue or into a counted drop. Nothing is refused for lack of room: the AQM is the
 * only place that drops because of load. */
void tl_encap_burst(struct tl_worker *w, struct rte_mbuf **pkts, unsigned n);
void tl_decap_burst(struct tl_worker *w, struct rte_mbuf **pkts, unsigned n);

/* Dequeue side of the WAN queue: encrypts a packet the AQM released (data at the inner IP
 * header) for the peer that owns its destination now. true: the frame is ready to send;
 * false: it was staged for a handshake or dropped (counted). */
bool tl_encap_dequeued(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m);

static inline void tl_egress_enqueue(struct tl_worker *w, int role, struct rte_mbuf *m)
{
	tl_aqm_enqueue(w->eg[role].aqm, m, w->now_ns);
}

/* lanfib.c: a decrypted IP packet (data at the IP header) toward dst on the LAN port:
 * framed for its next hop and queued, held while the next hop resolves, or dropped
 * (counted). tl_hold_poll releases or gives up held packets (every round); tl_hold_free
 * frees them at shutdown. */
void tl_lan_output(struct tl_worker *w, struct rte_mbuf *m, int family, const uint8_t *dst);
void tl_hold_poll(struct tl_worker *w);
void tl_hold_free(struct tl_worker *w);

/* Encrypts the IP packet the mbuf holds (data starts at the IP header) for peer with the
 * keypair, and prepends the outer headers. Shared with the control plane (staged packets,
 * keepalives). Returns TL_DROP_MAX on success or a drop reason. */
enum tl_drop tl_encap_one(struct tl_dp *dp, struct tl_dp_aead *aead, struct tl_peer *peer,
			  struct tl_keypair *kp, struct rte_mbuf *m, uint8_t ecn, uint64_t now_ns);

/* Keypair usable for sending now? */
static inline bool tl_keypair_can_send(const struct tl_dp *dp, const struct tl_keypair *kp, uint64_t now)
{
	return kp && tl_age_ns(now, kp->birth_ns) < dp->limits.reject_after_time_ns &&
	       atomic_load_explicit(&kp->send_counter, memory_order_relaxed) < dp->limits.reject_after_messages;
}

#endif
