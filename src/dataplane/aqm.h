/* Egress AQM: flow-hashed DRR with CoDel's drop law per flow and ECN marking (RFC 8290
 * over RFC 8289), the law's count decaying below target instead of restarting (COBALT), no
 * second mark while a flow's sojourn falls or within an interval of the last (a classic
 * ECN sender answers one mark per round trip), a
 * shallow CE step for ECT(1) packets (L4S, RFC 9331), target and interval from the path's
 * rtt and the shaped rate, a TCP flow's target raised to flow_rtt_pct of its own round trip
 * (dataplane/flowrtt.h): the only place of the dataplane that drops because of load
 * (docs/design.md §4).
 *
 * One instance per (egress port, worker), owned by that worker: no locks, no atomics.
 * Every call, tl_aqm_set_params included, must come from the owning thread (or while it
 * is stopped). Packets are single-segment mbufs whose IP header starts at l3_offset (0 on
 * the WAN side before encryption, 14 on the LAN side). Time is the caller's, in ns.
 *
 * Params in user units (tl_aqm_params) -> config in ns (inside) -> runtime state. */
#ifndef TL_AQM_H
#define TL_AQM_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dataplane/qparams.h"

#define TL_AQM_DROP_BATCH    64u          /* packets dropped at most per overlimit batch */

/* Histograms: log2 buckets cut in 8 linear steps (relative error <= 1/8). Values below 8
 * have a bucket each; values from 2^TL_AQM_HIST_LOG2_MAX go to the last. */
#define TL_AQM_HIST_LOG2_MAX 36
#define TL_AQM_HIST_BUCKETS  (8 * (TL_AQM_HIST_LOG2_MAX - 2))

static inline unsigned tl_aqm_hist_index(uint64_t v)
{
	unsigned e;

	if (v < 8)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	if (e >= TL_AQM_HIST_LOG2_MAX)
		return TL_AQM_HIST_BUCKETS - 1;
	return 8u * (e - 2u) + (unsigned)((v >> (e - 3u)) & 7u);
}

/* The DRR's two classes of delivered packets (RFC 8290 §4.2): those it served from the
 * new-flows list (sparse: their flow had been idle for a round of the old list, or is
 * within its first quantum since) and those it served from the old list (bulk). */
enum tl_aqm_class { TL_AQM_SPARSE, TL_AQM_BULK, TL_AQM_CLASSES };
#define TL_AQM_ALL TL_AQM_CLASSES      /* both classes, for the readers below */

/* Per class. A packet's "bytes served ahead" are the bytes the queue served (from any flow)
 * between the packet's arrival and its own service: a measure of flow isolation that does
 * not depend on how fast the port drains. A sparse packet's is bounded by the DRR whatever
 * the bulk backlog (docs/metrics.md); a bulk packet's is at least its own flow's backlog
 * ahead of it, as in a FIFO. A packet given back (tl_aqm_requeue_head) and handed out again
 * is counted once, when the DRR served it; dropped packets are not served. */
struct tl_aqm_class_stats {
	uint64_t sojourn_max_ns;
	uint64_t ahead_max_bytes;
	uint64_t sojourn_hist[TL_AQM_HIST_BUCKETS];   /* ns */
	uint64_t ahead_hist[TL_AQM_HIST_BUCKETS];     /* bytes */
};

struct tl_aqm_stats {
	uint64_t enqueued;         /* packets offered to tl_aqm_enqueue */
	uint64_t dequeued;         /* handed out and not given back */
	uint64_t requeued;         /* given back by tl_aqm_requeue_head (cumulative) */
	uint64_t drops_codel;      /* non-ECT packets dropped by CoDel (TL_DROP_aqm_codel) */
	uint64_t drops_overlimit;  /* dropped from the fattest flow (TL_DROP_aqm_overlimit) */
	uint64_t ecn_marks;        /* packets marked CE instead of dropped (the L4S step's included) */
	uint64_t l4s_marks;        /* ECT(1) packets marked CE at the L4S step (l4s_us) */
	uint64_t rtt_held;         /* above the target, below their flow's (flow_rtt_pct): passed */
	uint64_t backlog_pkts;     /* invariant: enqueued = dequeued + drops + backlog_pkts */
	uint64_t backlog_bytes;    /* packet bytes queued */
	uint64_t memory_bytes;     /* mbuf buffer bytes queued (against memory_limit) */
	uint64_t sojourn_max_ns;   /* of both classes (filled by tl_aqm_stats_get) */
	uint64_t served_bytes;     /* bytes the DRR served: the clock "bytes served ahead" reads */
	uint64_t new_flows_count;  /* flows that became active (went on the new list) */
	uint64_t overlimit_events; /* batches dropped from the fattest flow */
	uint64_t target_ns;        /* the drop law's target and interval in force (from rtt_us */
	uint64_t interval_ns;      /* or target_us/interval_us, and the shaped rate) */
	uint64_t byte_limit;       /* packet bytes: 4 intervals at the shaped rate, >= 4 MiB; 0 = none */
	uint64_t quantum;          /* the DRR quantum in force: quantum_fast (when larger) while not
	                            * shaped below TL_AQM_FAST_RATE, else quantum */
	uint32_t flows_new;        /* flows on the new list now */
	uint32_t flows_old;        /* flows on the old list now */
	struct tl_aqm_class_stats cls[TL_AQM_CLASSES]; /* of delivered packets */
};

struct tl_aqm;

/* Allocates on socket (SOCKET_ID_ANY allowed) with rte_zmalloc. l3_offset is 0 or 14.
 * Registers the mbuf dynamic field on first use. NULL with rte_errno set on failure. */
struct tl_aqm *tl_aqm_create(const char *name, const struct tl_aqm_params *p, unsigned l3_offset,
			     int socket);

/* Frees the instance and every packet it still holds (not counted as drops). */
void tl_aqm_free(struct tl_aqm *q);

/* Live change, queued packets kept. Lowering the limits drops from the fattest flows at
 * once. Changing `flows` needs an empty queue. NULL on success or an error message. */
const char *tl_aqm_set_params(struct tl_aqm *q, const struct tl_aqm_params *p);

/* The rate the queue is shaped to (bit/s, 0 = none): floors the target at two frame times,
 * limits the packet bytes queued to 4 intervals at rate (at least 4 MiB) and picks the
 * quantum (quantum_fast unshaped or from TL_AQM_FAST_RATE up). Lowering
 * the limit drops from the fattest flows at once. */
void tl_aqm_set_rate(struct tl_aqm *q, uint64_t rate_bps);

/* The flows' round trips (dataplane/flowrtt.h, shared with the receive path that ends the
 * samples): the queue starts samples of its TCP flows and judges each against flow_rtt_pct
 * of its round trip where that is longer than the target. NULL: every flow gets the target. */
struct tl_flowrtt;
void tl_aqm_attach_flowrtt(struct tl_aqm *q, struct tl_flowrtt *t);

/* Also count AQM drops in this per-worker array of TL_DROP_MAX counters (may be NULL). */
void tl_aqm_attach_drops(struct tl_aqm *q, uint64_t *drops);

/* Takes the packet. Over a hard limit, drops a batch from the head of the fattest flow,
 * which may be the packet's own. Returns 1 if the arriving packet itself was dropped. */
int tl_aqm_enqueue(struct tl_aqm *q, struct rte_mbuf *m, uint64_t now_ns);

/* Up to n packets in DRR order, after CoDel (dropped packets are freed and counted here).
 * Packets given back by tl_aqm_requeue_head come first. */
unsigned tl_aqm_dequeue_burst(struct tl_aqm *q, struct rte_mbuf **out, unsigned n, uint64_t now_ns);

/* Gives back packets of the last dequeue the port did not take, in the order they were
 * dequeued (typically out + sent, n - sent). They are handed out again first, exactly in
 * this order, ahead of everything else, and are not judged by CoDel again (they may have
 * been encrypted meanwhile). O(n). */
void tl_aqm_requeue_head(struct tl_aqm *q, struct rte_mbuf **pkts, unsigned n);

/* Packets given back and not yet handed out again: the next dequeue returns them first,
 * so out[0 .. min(n, tl_aqm_requeued_pending(q))) are packets the caller has seen. */
unsigned tl_aqm_requeued_pending(const struct tl_aqm *q);

void tl_aqm_stats_get(const struct tl_aqm *q, struct tl_aqm_stats *s);

/* The histograms' readers (aqm_hist.c). cls is TL_AQM_SPARSE, TL_AQM_BULK or TL_AQM_ALL. */
/* Packets the DRR served (delivered) of the class. */
uint64_t tl_aqm_served(const struct tl_aqm_stats *s, unsigned cls);
/* Sojourn time (ns) / bytes served ahead below which a fraction p of the class's delivered
 * packets fall (upper edge of its bucket), 0 when none was delivered. */
uint64_t tl_aqm_sojourn_quantile(const struct tl_aqm_stats *s, unsigned cls, double p);
uint64_t tl_aqm_ahead_quantile(const struct tl_aqm_stats *s, unsigned cls, double p);
/* The histograms as Prometheus and telemetry export them: bounds 2^k and 1.5 * 2^k for
 * k = 10..32, then 2^33 (ns for the sojourn, bytes for the bytes ahead); each is an edge of
 * the histogram's own buckets, so the cumulative counts are exact (a bound B counts the
 * packets whose value is below B). */
#define TL_AQM_HIST_BOUNDS 47
uint64_t tl_aqm_hist_bound(unsigned i);
/* Packets of the class below tl_aqm_hist_bound(i), for every i, and the total (+Inf). */
uint64_t tl_aqm_sojourn_cumulative(const struct tl_aqm_stats *s, unsigned cls, uint64_t cum[TL_AQM_HIST_BOUNDS]);
uint64_t tl_aqm_ahead_cumulative(const struct tl_aqm_stats *s, unsigned cls, uint64_t cum[TL_AQM_HIST_BOUNDS]);
/* Sum of the sojourn times in seconds / of the bytes ahead, estimated from the bucket
 * midpoints (within 1/16). */
double tl_aqm_sojourn_sum_seconds(const struct tl_aqm_stats *s, unsigned cls);
double tl_aqm_ahead_sum_bytes(const struct tl_aqm_stats *s, unsigned cls);

/* The flow bucket a packet hashes to (tests, debugging). */
uint32_t tl_aqm_classify(const struct tl_aqm *q, const struct rte_mbuf *m);

/* Packets queued (given back ones included): 0 means nothing to send. */
uint64_t tl_aqm_backlog(const struct tl_aqm *q);

#endif
