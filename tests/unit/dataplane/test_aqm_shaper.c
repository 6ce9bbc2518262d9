/* The egress shaper's virtual clock (src/dataplane/shaper.c) under a fake clock: the rate
 * delivered while a queue stays backlogged and the clock is read only every 5 ms (a worker
 * that is off the CPU between its rounds), the bounded catch-up after a long stall and its
 * counter, the burst after idle, and one rate for two queues sharing a port. */
#include <stdio.h>
#include <stdlib.h>

#include "dataplane/shaper.h"
#include "tap.h"

#define MS 1000000ull
#define T0 (1000 * MS)
#define FRAME 1494u                     /* + TL_WIRE_OVERHEAD = 1518 bytes on the wire */
#define WIRE (FRAME + TL_WIRE_OVERHEAD)


/* One round of a queue that always has frames waiting: sends while the shaper allows.
 * Returns the bytes on the wire sent. */
static uint64_t round_backlogged(struct tl_shaper *s, uint64_t now)
{
	uint64_t bytes = 0;

	tl_shaper_backlog(s, true, now);
	while (tl_shaper_open(s, now)) {
		tl_shaper_charge(s, FRAME);
		bytes += WIRE;
	}
	return bytes;
}

static struct tl_shaper make(struct tl_shaper_port *port, uint64_t rate, uint32_t burst)
{
	struct tl_shaper s;
	struct tl_shaper_params p = { .rate_bps = rate, .burst_bytes = burst };

	tl_shaper_init(&s, port);
	tl_shaper_set(&s, &p, T0);
	return s;
}

/* R = 100 Mbit/s, 1 ms bucket, rounds every 5 ms for 10 s: over the last 9 s the queue
 * gets R * 9 s within one frame. */
static void test_jumps(uint64_t rate, uint64_t step)
{
	struct tl_shaper_port port = { 0 };
	struct tl_shaper s = make(&port, rate, 0);
	uint64_t now = T0, bytes = 0, want = rate / 8 * 9;
	char what[120], why[160];

	for (; now < T0 + 1000 * MS; now += step)
		round_backlogged(&s, now);
	for (; now < T0 + 10000 * MS; now += step)
		bytes += round_backlogged(&s, now);
	snprintf(what, sizeof(what), "rate %llu bit/s, rounds every %llu us: R over 9 s within one frame",
		 (unsigned long long)rate, (unsigned long long)(step / 1000));
	snprintf(why, sizeof(why), "%llu bytes, want %llu +- %u (%.1f %% of R)", (unsigned long long)bytes,
		 (unsigned long long)want, WIRE, 100.0 * (double)bytes / (double)want);
	check(bytes + WIRE >= want && bytes <= want + WIRE, what, why);
}

/* A 100 ms stall while backlogged: the next round catches up at most the debt bound
 * (20 ms at R) back to back, and the time given up beyond it is counted. */
static void test_stall(void)
{
	struct tl_shaper_port port = { 0 };
	struct tl_shaper s = make(&port, 100000000, 0);
	uint64_t now = T0, bytes, debt = 100000000 / 8 / 1000 * 20;
	char why[160];

	for (; now < T0 + 100 * MS; now += 100000)
		round_backlogged(&s, now);
	now += 100 * MS;
	bytes = round_backlogged(&s, now);
	snprintf(why, sizeof(why), "%llu bytes at once (bound %llu), lost %llu ns", (unsigned long long)bytes,
		 (unsigned long long)debt, (unsigned long long)s.lost_ns);
	check(bytes >= debt && bytes <= debt + 2 * WIRE && s.lost_ns >= 79 * MS && s.lost_ns <= 81 * MS,
	      "a 100 ms stall: catch-up bounded to 20 ms at R, the other 80 ms counted as lost", why);
}

/* After the queue was empty for a second, it may send one bucket (1 ms at R) at once, not
 * the debt bound. */
static void test_idle_burst(void)
{
	struct tl_shaper_port port = { 0 };
	struct tl_shaper s = make(&port, 100000000, 0);
	uint64_t now = T0, bytes, bucket = tl_shaper_burst(&(struct tl_shaper_params){ .rate_bps = 100000000 });
	char why[160];

	for (; now < T0 + 100 * MS; now += 100000)
		round_backlogged(&s, now);
	tl_shaper_backlog(&s, false, now);
	now += 1000 * MS;
	bytes = round_backlogged(&s, now);
	snprintf(why, sizeof(why), "%llu bytes at once, bucket %llu, lost %llu ns", (unsigned long long)bytes,
		 (unsigned long long)bucket, (unsigned long long)s.lost_ns);
	check(bytes >= bucket && bytes <= bucket + 2 * WIRE && s.lost_ns == 0 && s.idle_starts == 1,
	      "after idle: one bucket at once, nothing counted lost", why);
}

/* Two queues of one port (two workers), both backlogged, their rounds 5 ms apart and
 * interleaved: together R within a frame; one of them idle does not reset the clock of
 * the other's backlog. */
static void test_shared(void)
{
	struct tl_shaper_port port = { 0 };
	struct tl_shaper a = make(&port, 50000000, 0), b = make(&port, 50000000, 0);
	uint64_t now = T0, bytes = 0, want = 50000000 / 8 * 9;
	char why[160];

	for (; now < T0 + 1000 * MS; now += 2500000) {
		round_backlogged(&a, now);
		now += 2500000;
		round_backlogged(&b, now);
	}
	for (; now < T0 + 10000 * MS; now += 2500000) {
		bytes += round_backlogged(&a, now);
		now += 2500000;
		tl_shaper_backlog(&b, (now / MS) % 20 != 0, now);   /* b empties now and then */
		if ((now / MS) % 20)
			bytes += round_backlogged(&b, now);
	}
	snprintf(why, sizeof(why), "%llu bytes, want %llu +- %u", (unsigned long long)bytes,
		 (unsigned long long)want, WIRE);
	check(bytes + WIRE >= want && bytes <= want + WIRE, "two queues of one port: one rate R between them", why);
}

int main(void)
{
	test_jumps(100000000, 5 * MS);
	test_jumps(50000000, 5 * MS);
	test_jumps(10000000, 5 * MS);
	test_jumps(1000000000, 5 * MS);
	test_stall();
	test_idle_burst();
	test_shared();
	return tap_report();
}
