/* The egress shaper's virtual clock (see shaper.h). */
#include "dataplane/shaper.h"

void tl_shaper_init(struct tl_shaper *s, struct tl_shaper_port *port)
{
	*s = (struct tl_shaper){ .port = port };
}

void tl_shaper_set(struct tl_shaper *s, const struct tl_shaper_params *p, uint64_t now)
{
	if (!p->rate_bps) {
		s->ns_per_byte_q20 = 0;
		return;
	}
	s->ns_per_byte_q20 = (uint64_t)(((unsigned __int128)8000000000ull << 20) / p->rate_bps);
	s->burst_ns = (uint64_t)(((unsigned __int128)tl_shaper_burst(p) * s->ns_per_byte_q20) >> 20);
	s->debt_ns = s->burst_ns > TL_SHAPER_DEBT_NS ? s->burst_ns : TL_SHAPER_DEBT_NS;
	atomic_store_explicit(&s->port->next_ns, now > s->burst_ns ? now - s->burst_ns : 0, memory_order_relaxed);
}

/* Moves the clock up to floor if it is behind it; the amount given up, 0 if none (or
 * another queue moved it first). */
static uint64_t clock_raise(struct tl_shaper *s, uint64_t floor)
{
	uint64_t next = atomic_load_explicit(&s->port->next_ns, memory_order_relaxed);

	while (next < floor)
		if (atomic_compare_exchange_weak_explicit(&s->port->next_ns, &next, floor, memory_order_relaxed,
							  memory_order_relaxed))
			return floor - next;
	return 0;
}

void tl_shaper_backlog(struct tl_shaper *s, bool waiting, uint64_t now)
{
	if (waiting == s->busy)
		return;
	s->busy = waiting;
	if (!waiting) {
		atomic_fetch_sub_explicit(&s->port->busy, 1, memory_order_relaxed);
		return;
	}
	if (atomic_fetch_add_explicit(&s->port->busy, 1, memory_order_relaxed) == 0 && s->ns_per_byte_q20 &&
	    now > s->burst_ns && clock_raise(s, now - s->burst_ns))
		s->idle_starts++;
}

bool tl_shaper_open(struct tl_shaper *s, uint64_t now)
{
	uint64_t floor;

	if (!s->ns_per_byte_q20)
		return true;
	floor = now > s->debt_ns ? now - s->debt_ns : 0;
	s->lost_ns += clock_raise(s, floor);
	return atomic_load_explicit(&s->port->next_ns, memory_order_relaxed) <= now;
}

uint64_t tl_shaper_wait(const struct tl_shaper *s, uint64_t now)
{
	uint64_t next;

	if (!s->ns_per_byte_q20)
		return 0;
	next = atomic_load_explicit(&s->port->next_ns, memory_order_relaxed);
	return next > now ? next - now : 0;
}
