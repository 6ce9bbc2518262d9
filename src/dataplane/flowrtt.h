/* Each TCP flow's round trip, measured passively from its timestamps (RFC 7323) where the
 * tunnel sees both directions in the clear: a data segment's TSval as it leaves an egress
 * queue, and the first acknowledgement from the peer whose TSecr echoes it (or a later
 * value). One sample in flight per flow; the estimate is the smallest sample of a 10 s
 * window, so the receiver's delayed acknowledgements and queues elsewhere on the path do
 * not inflate it, and the egress queue's own sojourn is not in it (the clock starts when the
 * segment leaves the queue). A sample can be short by the time the segments that share its
 * TSval (Linux ticks it each millisecond) took to leave the queue before it: about a
 * millisecond at the rate the sender sends. The AQM reads it to give a flow on a long path
 * the standing queue its window reductions need (qparams.h, flow_rtt_pct).
 *
 * One table per dataplane, shared by all workers: a slot per flow hash (direct-mapped; a
 * flow whose slot another flow holds goes unmeasured until that one's estimate ages out),
 * every field a relaxed or acquire/release atomic, so any worker may call any function. A
 * sample that two threads race for is taken by one of them (compare-and-swap).
 *
 * Packets are IP headers at l3 with avail bytes; anything that is not a TCP segment with a
 * well-formed timestamp option is ignored (IPv4 fragments, IPv6 with extension headers, TCP
 * without timestamps: those flows keep the queue's own target). */
#ifndef TL_FLOWRTT_H
#define TL_FLOWRTT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TL_FLOWRTT_SLOTS     65536u
#define TL_FLOWRTT_WINDOW_NS 10000000000ull   /* the minimum's window */
#define TL_FLOWRTT_KEEP_NS   60000000000ull   /* an estimate not refreshed this long is forgotten */
#define TL_FLOWRTT_STALE_NS  2000000000ull    /* a sample not answered this long is given up */

struct tl_flowrtt_slot {
	_Atomic uint64_t pending;   /* tag << 32 | TSval of the sample in flight; 0: none */
	_Atomic uint64_t sent_ns;   /* when that segment left the queue */
	_Atomic uint64_t rtt;       /* tag << 32 | the estimate in µs; 0: none */
	_Atomic uint64_t rtt_at;    /* when the estimate was taken */
};

struct tl_flowrtt {
	_Atomic uint64_t last_start_ns;   /* the last sample started (any flow) */
	uint32_t seed;
	/* On lines of their own: the receive path reads last_start_ns for every packet. */
	_Alignas(64) struct tl_flowrtt_slot slot[TL_FLOWRTT_SLOTS];
};

/* NULL with rte_errno set on failure. */
struct tl_flowrtt *tl_flowrtt_create(const char *name, int socket);
void tl_flowrtt_free(struct tl_flowrtt *t);

/* A packet of a flow leaves an egress queue toward the peer at now: a data segment (or SYN,
 * FIN) with a timestamp starts the flow's sample unless one is in flight. */
void tl_flowrtt_sent(struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail, uint64_t now);

/* Whether a sample may be in flight: a receive path skips tl_flowrtt_ack while none was
 * started for TL_FLOWRTT_STALE_NS (no egress queue has held a TCP flow's packets long enough
 * to want its round trip), so an idle table costs it one load. */
static inline bool tl_flowrtt_active(const struct tl_flowrtt *t, uint64_t now)
{
	uint64_t last;

	if (!t)
		return false;
	last = atomic_load_explicit(&t->last_start_ns, memory_order_relaxed);
	return last && (int64_t)(now - last) < (int64_t)TL_FLOWRTT_STALE_NS;
}

/* A packet from the peer at now: an acknowledgement whose TSecr reaches its flow's sample in
 * flight ends it. Returns the sample (ns), 0 when it took none. */
uint64_t tl_flowrtt_ack(struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail, uint64_t now);

/* The round trip (ns) of the flow the packet (toward the peer) belongs to, 0 when unknown. */
uint64_t tl_flowrtt_get(const struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail, uint64_t now);

/* The slot of the packet's flow (toward the peer), UINT32_MAX when it is not a TCP segment
 * the table reads (tests). */
uint32_t tl_flowrtt_slot(const struct tl_flowrtt *t, const uint8_t *l3, uint32_t avail);

#endif
