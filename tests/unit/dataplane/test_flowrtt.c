/* The flows' round-trip table (dataplane/flowrtt.c): samples from TCP timestamps, the
 * window's minimum, forgetting, slots that two flows hash to, stale samples, IPv6, and
 * every kind of segment it must ignore (no timestamp, malformed options, truncated headers,
 * fragments, pure acknowledgements), then a random sequence of segments of eight flows
 * against a naive reference that keeps each flow apart. */
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "check.h"
#include "dataplane/flowrtt.h"
#include "test_eal.h"

#define MS 1000000ull
#define S (1000 * MS)
#define T0 (100 * S)

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_ACK 0x10

struct flow {
	bool v6;
	uint8_t a[16], b[16];     /* a sends data to b */
	uint16_t pa, pb;
};

struct opt {
	bool ts;
	uint32_t tsval, tsecr;
	const uint8_t *raw;        /* options instead of NOP NOP TS */
	unsigned raw_len;
};

/* A segment of f into p (room for 2048 bytes): from a (data) or from b (reply). Its length. */
static unsigned seg(uint8_t *p, const struct flow *f, bool reply, uint8_t flags, unsigned payload,
		    const struct opt *o)
{
	unsigned l3 = f->v6 ? 40 : 20, optlen = o->raw ? o->raw_len : o->ts ? 12 : 0, l4 = 20 + optlen;
	unsigned len = l3 + l4 + payload;
	const uint8_t *src = reply ? f->b : f->a, *dst = reply ? f->a : f->b;
	uint16_t sp = reply ? f->pb : f->pa, dp = reply ? f->pa : f->pb;
	uint8_t *t = p + l3;

	memset(p, 0, len);
	if (f->v6) {
		p[0] = 0x60;
		p[4] = (uint8_t)((len - 40) >> 8);
		p[5] = (uint8_t)(len - 40);
		p[6] = 6;
		p[7] = 64;
		memcpy(p + 8, src, 16);
		memcpy(p + 24, dst, 16);
	} else {
		p[0] = 0x45;
		p[2] = (uint8_t)(len >> 8);
		p[3] = (uint8_t)len;
		p[8] = 64;
		p[9] = 6;
		memcpy(p + 12, src, 4);
		memcpy(p + 16, dst, 4);
	}
	t[0] = (uint8_t)(sp >> 8);
	t[1] = (uint8_t)sp;
	t[2] = (uint8_t)(dp >> 8);
	t[3] = (uint8_t)dp;
	t[12] = (uint8_t)((l4 / 4) << 4);
	t[13] = flags;
	if (o->raw) {
		memcpy(t + 20, o->raw, o->raw_len);
	} else if (o->ts) {
		t[20] = t[21] = 1;
		t[22] = 8;
		t[23] = 10;
		for (int i = 0; i < 4; i++) {
			t[24 + i] = (uint8_t)(o->tsval >> (24 - 8 * i));
			t[28 + i] = (uint8_t)(o->tsecr >> (24 - 8 * i));
		}
	}
	return len;
}

static uint8_t buf[2048];

static void sent(struct tl_flowrtt *t, const struct flow *f, uint32_t tsval, uint64_t now)
{
	struct opt o = { .ts = true, .tsval = tsval };

	tl_flowrtt_sent(t, buf, seg(buf, f, false, F_ACK, 1000, &o), now);
}

static uint64_t ack(struct tl_flowrtt *t, const struct flow *f, uint32_t tsecr, uint64_t now)
{
	struct opt o = { .ts = true, .tsval = 7, .tsecr = tsecr };

	return tl_flowrtt_ack(t, buf, seg(buf, f, true, F_ACK, 0, &o), now);
}

static uint64_t get(const struct tl_flowrtt *t, const struct flow *f, uint64_t now)
{
	struct opt o = { .ts = true };

	return tl_flowrtt_get(t, buf, seg(buf, f, false, F_ACK, 1000, &o), now);
}

static struct flow flow4(uint8_t last, uint16_t port)
{
	struct flow f = { .pa = port, .pb = 443 };

	memcpy(f.a, (uint8_t[]){ 10, 0, 0, last }, 4);
	memcpy(f.b, (uint8_t[]){ 10, 9, 0, 1 }, 4);
	return f;
}

static void test_sample(struct tl_flowrtt *t)
{
	struct flow f = flow4(1, 40000);

	CHECK(!tl_flowrtt_active(t, T0), "active: no sample started yet");
	sent(t, &f, 1000, T0);
	CHECK(tl_flowrtt_active(t, T0 + S), "active: a sample was started 1 s ago");
	CHECK(ack(t, &f, 999, T0 + 50 * MS) == 0, "sample: an echo older than the sample's TSval ends nothing");
	sent(t, &f, 1001, T0 + 10 * MS);   /* in flight already: not restarted */
	CHECK(ack(t, &f, 1000, T0 + 120 * MS) == 120 * MS, "sample: the echo of the TSval ends it (120 ms)");
	CHECK(get(t, &f, T0 + 130 * MS) == 120 * MS, "sample: the estimate is 120 ms, got %llu",
	      (unsigned long long)get(t, &f, T0 + 130 * MS));
	CHECK(ack(t, &f, 1000, T0 + 200 * MS) == 0, "sample: a second echo finds no sample");
	/* a larger sample within the window does not raise the minimum, a smaller one lowers it */
	sent(t, &f, 2000, T0 + S);
	CHECK(ack(t, &f, 2001, T0 + S + 150 * MS) == 150 * MS, "sample: a later echo than the TSval ends it too");
	CHECK(get(t, &f, T0 + 2 * S) == 120 * MS, "window: the minimum stays 120 ms");
	sent(t, &f, 3000, T0 + 3 * S);
	ack(t, &f, 3000, T0 + 3 * S + 110 * MS);
	CHECK(get(t, &f, T0 + 4 * S) == 110 * MS, "window: a smaller sample lowers it to 110 ms");
	/* after the window, any sample replaces it */
	sent(t, &f, 9000, T0 + 14 * S);
	ack(t, &f, 9000, T0 + 14 * S + 130 * MS);
	CHECK(get(t, &f, T0 + 15 * S) == 130 * MS, "window: 10 s later a larger sample (130 ms) replaces it");
	CHECK(get(t, &f, T0 + 14 * S + 130 * MS + TL_FLOWRTT_KEEP_NS + 1) == 0,
	      "keep: an estimate not refreshed for 60 s is forgotten");
	CHECK(!tl_flowrtt_active(t, T0 + 17 * S), "active: 2 s after the last start, no longer");
}

static void test_stale(struct tl_flowrtt *t)
{
	struct flow f = flow4(2, 40001);

	sent(t, &f, 5, T0);
	sent(t, &f, 6, T0 + S);      /* in flight: kept */
	sent(t, &f, 7, T0 + 3 * S);  /* 3 s unanswered: given up, this one starts */
	CHECK(ack(t, &f, 5, T0 + 3 * S + MS) == 0, "stale: the echo of a given-up sample ends nothing");
	CHECK(ack(t, &f, 7, T0 + 3 * S + 80 * MS) == 80 * MS, "stale: the new sample ends at its echo (80 ms)");
}

static void test_ipv6(struct tl_flowrtt *t)
{
	struct flow f = { .v6 = true, .pa = 5000, .pb = 22 };
	struct flow g;

	f.a[0] = 0xfd;
	f.a[15] = 1;
	f.b[0] = 0xfd;
	f.b[15] = 2;
	g = f;
	g.pa = 5001;
	sent(t, &f, 77, T0);
	CHECK(ack(t, &g, 77, T0 + 30 * MS) == 0, "ipv6: another flow's echo (other port) ends nothing");
	CHECK(ack(t, &f, 77, T0 + 30 * MS) == 30 * MS, "ipv6: the flow's echo ends its sample");
	CHECK(get(t, &f, T0 + 31 * MS) == 30 * MS && get(t, &g, T0 + 31 * MS) == 0,
	      "ipv6: the estimate is the flow's only");
}

/* What must start no sample and end none. */
static void test_ignored(struct tl_flowrtt *t)
{
	static const uint8_t zero_len[] = { 1, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t too_long[] = { 1, 1, 8, 14, 0, 0, 0, 1, 0, 0, 0, 0 };
	static const uint8_t short_ts[] = { 8, 6, 0, 0, 0, 1, 1, 1 };
	static const uint8_t eol_first[] = { 0, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0 };
	static const uint8_t last_byte[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8 };
	const uint8_t *raws[] = { zero_len, too_long, short_ts, eol_first, last_byte };
	unsigned raw_lens[] = { sizeof(zero_len), sizeof(too_long), sizeof(short_ts), sizeof(eol_first),
				sizeof(last_byte) };
	struct flow f = flow4(3, 40002);
	struct opt ts = { .ts = true, .tsval = 1 }, none = { 0 };
	unsigned len;
	uint64_t now = T0;

	for (unsigned i = 0; i < RTE_DIM(raws); i++) {
		struct opt o = { .raw = raws[i], .raw_len = raw_lens[i] };

		tl_flowrtt_sent(t, buf, seg(buf, &f, false, F_ACK, 1000, &o), now);
	}
	tl_flowrtt_sent(t, buf, seg(buf, &f, false, F_ACK, 1000, &none), now);   /* no options */
	tl_flowrtt_sent(t, buf, seg(buf, &f, false, F_ACK, 0, &ts), now);        /* pure ack */
	tl_flowrtt_sent(t, buf, seg(buf, &f, false, F_ACK | F_RST, 10, &ts), now);
	len = seg(buf, &f, false, F_ACK, 1000, &ts);
	buf[6] = 0x20;                                                            /* MF: a fragment */
	tl_flowrtt_sent(t, buf, len, now);
	len = seg(buf, &f, false, F_ACK, 1000, &ts);
	buf[9] = 17;                                                              /* UDP */
	tl_flowrtt_sent(t, buf, len, now);
	len = seg(buf, &f, false, F_ACK, 100, &ts);
	for (unsigned cut = 0; cut < len; cut++)                                  /* truncated */
		tl_flowrtt_sent(t, buf, cut, now);
	len = seg(buf, &f, false, F_ACK, 1000, &ts);
	buf[20 + 12] = 0x40;                                                      /* data offset 16 */
	tl_flowrtt_sent(t, buf, len, now);
	CHECK(ack(t, &f, 1, now + 10 * MS) == 0 && get(t, &f, now + 20 * MS) == 0,
	      "ignored: malformed options, no timestamp, pure ack, RST, fragment, UDP, truncated: no sample");

	/* SYN and FIN start one without payload; an echo without ACK or timestamp ends none */
	tl_flowrtt_sent(t, buf, seg(buf, &f, false, F_SYN, 0, &ts), now);
	CHECK(tl_flowrtt_ack(t, buf, seg(buf, &f, true, 0, 0, &(struct opt){ .ts = true, .tsecr = 1 }), now + MS) == 0,
	      "ignored: an echo without ACK ends nothing");
	CHECK(tl_flowrtt_ack(t, buf, seg(buf, &f, true, F_ACK, 0, &none), now + MS) == 0,
	      "ignored: an ack without timestamp ends nothing");
	len = seg(buf, &f, true, F_ACK, 0, &(struct opt){ .ts = true, .tsecr = 1 });
	for (unsigned cut = 0; cut < len; cut++)
		CHECK(tl_flowrtt_ack(t, buf, cut, now + MS) == 0, "ignored: an ack truncated to %u bytes", cut);
	CHECK(ack(t, &f, 1, now + 40 * MS) == 40 * MS, "syn: a SYN with a timestamp starts a sample");
	tl_flowrtt_sent(t, buf, seg(buf, &f, false, F_FIN | F_ACK, 0, &(struct opt){ .ts = true, .tsval = 9 }),
			now + S);
	CHECK(ack(t, &f, 9, now + S + 20 * MS) == 20 * MS, "fin: a FIN with a timestamp starts a sample");
}

static uint32_t slot(const struct tl_flowrtt *t, const struct flow *f)
{
	struct opt o = { .ts = true };

	return tl_flowrtt_slot(t, buf, seg(buf, f, false, F_ACK, 10, &o));
}

/* Two flows of one slot: the first keeps it while its estimate lives. */
static void test_collision(struct tl_flowrtt *t)
{
	struct flow f = flow4(4, 1), g;
	unsigned n = 0, len;

	do
		g = flow4((uint8_t)(5 + n / 60000), (uint16_t)(1 + n % 60000));
	while (slot(t, &g) != slot(t, &f) && ++n < 60000 * 200);
	CHECK(slot(t, &g) == slot(t, &f) && slot(t, &f) < TL_FLOWRTT_SLOTS, "collision: a flow of f's slot found");
	sent(t, &f, 1, T0);
	ack(t, &f, 1, T0 + 10 * MS);
	sent(t, &g, 1, T0 + 20 * MS);
	CHECK(ack(t, &g, 1, T0 + 30 * MS) == 0, "collision: the other flow starts no sample in f's slot");
	CHECK(get(t, &f, T0 + 40 * MS) == 10 * MS && get(t, &g, T0 + 40 * MS) == 0,
	      "collision: the slot's flow keeps its estimate, the other has none");
	sent(t, &g, 2, T0 + TL_FLOWRTT_KEEP_NS + 20 * MS);
	CHECK(ack(t, &g, 2, T0 + TL_FLOWRTT_KEEP_NS + 50 * MS) == 30 * MS &&
	      get(t, &g, T0 + TL_FLOWRTT_KEEP_NS + 60 * MS) == 30 * MS && get(t, &f, T0 + TL_FLOWRTT_KEEP_NS + 60 * MS) == 0,
	      "collision: once f's estimate is forgotten the other flow takes the slot");
	len = seg(buf, &f, false, F_ACK, 10, &(struct opt){ .ts = true });
	buf[9] = 17;
	CHECK(tl_flowrtt_slot(t, buf, len) == UINT32_MAX, "slot: none for a UDP packet");
}

/* ---- random segments of 8 flows against a reference that keeps each flow apart ---------- */

struct ref {
	bool pending;
	uint32_t tsval;
	uint64_t sent, est, at;
	bool has;
};

static void test_random(struct tl_flowrtt *t)
{
	struct flow f[8];
	struct ref r[8];
	uint64_t now = T0;
	unsigned bad = 0, samples = 0;

	memset(r, 0, sizeof(r));
	for (unsigned i = 0; i < 8; i++) {
		f[i] = flow4((uint8_t)(100 + i), (uint16_t)(50000 + i));
		for (unsigned j = 0; j < i; j++)
			CHECK(slot(t, &f[i]) != slot(t, &f[j]), "random: flows %u and %u share a slot", i, j);
	}
	srand(7);
	for (unsigned step = 0; step < 200000; step++) {
		unsigned i = (unsigned)rand() % 8, what = (unsigned)rand() % 3;
		uint32_t ts = (uint32_t)(now / MS) - (uint32_t)(rand() % 300);
		struct ref *x = &r[i];

		now += (uint64_t)(rand() % 2000) * 1000;
		if (what == 0) {
			sent(t, &f[i], (uint32_t)(now / MS), now);
			if (!x->pending || now - x->sent > TL_FLOWRTT_STALE_NS) {
				x->pending = true;
				x->tsval = (uint32_t)(now / MS);
				x->sent = now;
			}
		} else if (what == 1) {
			uint64_t got = ack(t, &f[i], ts, now), want = 0;

			if (x->pending && (int32_t)(ts - x->tsval) >= 0) {
				x->pending = false;
				want = now - x->sent <= TL_FLOWRTT_STALE_NS ? now - x->sent : 0;
				if (want) {
					uint64_t us = want / 1000;

					if (!x->has || us * 1000 <= x->est || now - x->at > TL_FLOWRTT_WINDOW_NS) {
						x->est = us * 1000;
						x->at = now;
						x->has = true;
					}
					samples++;
				}
			}
			bad += got != want;
		} else {
			uint64_t want = x->has && now - x->at <= TL_FLOWRTT_KEEP_NS ? x->est : 0;

			bad += get(t, &f[i], now) != want;
		}
	}
	CHECK(bad == 0 && samples > 1000, "random: 200000 segments of 8 flows as the reference: %u differ, %u samples",
	      bad, samples);
}

int main(int argc, char **argv)
{
	static void (*const tests[])(struct tl_flowrtt *) = { test_sample, test_stale, test_ipv6, test_ignored,
							      test_collision, test_random };
	struct tl_flowrtt *t;

	(void)argc;
	if (tl_test_eal_init(argv[0], "tl_flowrtt") != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	for (unsigned i = 0; i < RTE_DIM(tests); i++) {
		t = tl_flowrtt_create("test_flowrtt", SOCKET_ID_ANY);
		CHECK(t != NULL, "create");
		if (!t)
			break;
		tests[i](t);
		tl_flowrtt_free(t);
	}
	tl_test_eal_fini();
	return check_report();
}
