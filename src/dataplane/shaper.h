/* The egress shaper: a virtual clock per port, shared by the port's egress queues (one per
 * worker), so the port sends at one rate whatever the number of workers.
 *
 * The clock is the virtual time of the port's next send slot; each frame sent moves it on
 * by the frame's time on the wire at the rate (its length plus TL_WIRE_OVERHEAD). A queue
 * may send while the slot is not in the future. The bucket depth (burst) bounds what a
 * port that was idle may send at once: when a queue of an idle port gets packets, the
 * clock is moved up to now - burst if it was further behind. While any queue of the port
 * is backlogged the clock keeps its debt: a round that comes late (the worker was not on
 * a CPU) finds the slot in the past and sends back to back until the clock has caught up,
 * so the rate delivered over any stretch of backlog is the rate, whatever the scheduling
 * gaps. The catch-up is bounded (debt: at most max(burst, TL_SHAPER_DEBT_NS) behind now);
 * sending time the bound gives up is counted (lost_ns).
 *
 * tl_shaper_port is shared (atomics, relaxed: the clock is a counter, lost races only
 * retry); tl_shaper is a queue's view of it, owned by the queue's worker. No DPDK. */
#ifndef TL_SHAPER_H
#define TL_SHAPER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataplane/qparams.h"

#define TL_SHAPER_DEBT_NS 20000000ull   /* catch-up bound while backlogged: 20 ms */

struct tl_shaper_port {
	_Atomic uint64_t next_ns;          /* virtual time of the next send slot (CLOCK_MONOTONIC) */
	_Atomic uint32_t busy;             /* queues of the port that have packets waiting */
};

struct tl_shaper {
	struct tl_shaper_port *port;
	uint64_t ns_per_byte_q20;          /* cost of a byte, ns << 20; 0 = no shaper */
	uint64_t burst_ns;                 /* bucket depth as time at rate */
	uint64_t debt_ns;                  /* catch-up bound while backlogged */
	uint64_t lost_ns;                  /* sending time the catch-up bound gave up (counter) */
	uint64_t idle_starts;              /* times this queue found its port idle and reset the clock */
	bool busy;                         /* this queue counts in port->busy */
};

void tl_shaper_init(struct tl_shaper *s, struct tl_shaper_port *port);

/* New parameters (rate 0: off); the port's clock restarts at now - burst. */
void tl_shaper_set(struct tl_shaper *s, const struct tl_shaper_params *p, uint64_t now);

static inline bool tl_shaper_on(const struct tl_shaper *s)
{
	return s->ns_per_byte_q20 != 0;
}

/* Time on the wire of a frame of len bytes (without TL_WIRE_OVERHEAD), in ns. */
static inline uint64_t tl_shaper_cost(const struct tl_shaper *s, uint32_t len)
{
	return (uint64_t)(((unsigned __int128)(len + TL_WIRE_OVERHEAD) * s->ns_per_byte_q20) >> 20);
}

/* A frame of len bytes goes out (charge) or was not taken after all (refund). */
static inline void tl_shaper_charge(struct tl_shaper *s, uint32_t len)
{
	if (s->ns_per_byte_q20)
		atomic_fetch_add_explicit(&s->port->next_ns, tl_shaper_cost(s, len), memory_order_relaxed);
}

static inline void tl_shaper_refund(struct tl_shaper *s, uint32_t len)
{
	if (s->ns_per_byte_q20)
		atomic_fetch_sub_explicit(&s->port->next_ns, tl_shaper_cost(s, len), memory_order_relaxed);
}

/* Whether the queue has packets waiting, each round before it sends: the port's clock
 * carries its debt while any of its queues is backlogged, and only a queue that finds
 * the whole port idle moves the clock up to now - burst. */
void tl_shaper_backlog(struct tl_shaper *s, bool waiting, uint64_t now);

/* May the queue send a frame now? */
bool tl_shaper_open(struct tl_shaper *s, uint64_t now);

/* Time until the next send slot (0: now, or no shaper). */
uint64_t tl_shaper_wait(const struct tl_shaper *s, uint64_t now);

#endif
