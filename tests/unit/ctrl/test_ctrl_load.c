/* The control plane under a handshake flood: every initiation without a valid mac2 is
 * answered with a cookie reply, and the control plane answers no faster than worker 0 sends
 * (its control TX ring is bounded): while that ring is full the messages wait in the
 * handshake ring, whose overflow the workers count (handshake_overload) before they hand a
 * message over. Nothing is dropped because the control TX ring is full (ctrl_backlog).
 *
 * Many handshakes at once: a batch computed on the handshake threads ends as the same
 * messages taken one at a time on the control thread alone. */
#include "common/parfor.h"
#include "check.h"
#include "ctrl/handshake.h"
#include "ctrl/send.h"
#include "ctrl_harness.h"

#define FLOOD 1000u
#define MS 1000000ull

static void test_flood_waits_for_ctrl_tx(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_msg_initiation init;
	struct rte_ring *ctrl_tx, *hs_ring;
	unsigned queued = 0, cap, replies = 0, rounds = 0;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	ctrl_tx = h.dev.workers[0].ctrl_tx;
	hs_ring = h.dev.dp.hs_ring;
	cap = rte_ring_get_capacity(ctrl_tx);
	CHECK(tl_ch_peer_add(&h, &r, 9) != NULL, "peer added");
	CHECK(tl_ch_remote_initiation(&h, &r, &init) == 0, "an initiation");
	for (unsigned i = 0; i < FLOOD; i++) {
		struct rte_mbuf *m = tl_ch_hs_msg(&h, &r, &init, sizeof(init));

		if (m && rte_ring_enqueue(hs_ring, m) == 0)
			queued++;
		else
			rte_pktmbuf_free(m);
	}
	CHECK(queued == FLOOD, "%u of %u messages in the handshake ring", queued, FLOOD);
	CHECK(FLOOD >= rte_ring_get_capacity(hs_ring) / 8 && FLOOD > cap, "the flood is a load and exceeds the control TX ring");

	/* Worker 0 does not run: the control plane stops once its TX ring is full. */
	while (tl_handshake_poll(&h.dev, h.now) && ++rounds < 10 * FLOOD)
		;
	CHECK(h.dev.cnt.drops[TL_DROP_ctrl_backlog] == 0, "no ctrl_backlog drop (got %lu)",
	      (unsigned long)h.dev.cnt.drops[TL_DROP_ctrl_backlog]);
	CHECK(rte_ring_count(ctrl_tx) == cap, "control TX ring full (%u of %u)", rte_ring_count(ctrl_tx), cap);
	CHECK(rte_ring_count(hs_ring) == FLOOD - cap, "the rest waits in the handshake ring (%u, expected %u)",
	      rte_ring_count(hs_ring), FLOOD - cap);
	CHECK(h.dev.cookies_sent == cap, "a cookie reply per message handled (%lu)", (unsigned long)h.dev.cookies_sent);

	/* Worker 0 sends; the control plane goes on where it stopped. */
	rounds = 0;
	while ((rte_ring_count(hs_ring) || rte_ring_count(ctrl_tx)) && ++rounds < 10 * FLOOD) {
		replies += tl_ch_discard(&h);
		while (tl_handshake_poll(&h.dev, h.now))
			;
	}
	CHECK(replies == FLOOD, "every message got its cookie reply (%u of %u)", replies, FLOOD);
	CHECK(h.dev.cnt.drops[TL_DROP_bad_mac2] == FLOOD, "each counted as bad_mac2 (%lu)",
	      (unsigned long)h.dev.cnt.drops[TL_DROP_bad_mac2]);
	CHECK(h.dev.cnt.drops[TL_DROP_ctrl_backlog] == 0, "still no ctrl_backlog drop");
	tl_ch_teardown(&h);
}

/* The same flood from a sender whose MAC the frames do not carry (datagrams the kernel
 * reassembled without knowing the sender's neighbour): no cookie reply has a way back. Each
 * message is one drop under one reason (bad_mac2), and nothing is sent. */
static void test_flood_no_way_back(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_msg_initiation init;
	uint64_t total = 0;
	unsigned queued = 0, rounds = 0;

	CHECK(tl_ch_setup(&h) == 0, "no way back: setup");
	CHECK(tl_ch_peer_add(&h, &r, 10) != NULL, "no way back: peer added");
	CHECK(tl_ch_remote_initiation(&h, &r, &init) == 0, "no way back: an initiation");
	memset(r.at.mac, 0, sizeof(r.at.mac));
	for (unsigned i = 0; i < FLOOD; i++) {
		struct rte_mbuf *m = tl_ch_hs_msg(&h, &r, &init, sizeof(init));

		if (m && rte_ring_enqueue(h.dev.dp.hs_ring, m) == 0)
			queued++;
		else
			rte_pktmbuf_free(m);
	}
	CHECK(queued >= rte_ring_get_capacity(h.dev.dp.hs_ring) / 8, "no way back: %u messages, a load", queued);
	while (tl_handshake_poll(&h.dev, h.now) && ++rounds < 10 * FLOOD)
		;
	for (unsigned k = 0; k < TL_DROP_MAX; k++)
		total += h.dev.cnt.drops[k];
	CHECK(h.dev.cnt.drops[TL_DROP_bad_mac2] == queued, "no way back: bad_mac2 %lu of %u",
	      (unsigned long)h.dev.cnt.drops[TL_DROP_bad_mac2], queued);
	CHECK(total == queued, "no way back: %lu drops for %u messages, want one each", (unsigned long)total, queued);
	CHECK(h.dev.cnt.hs_drops == queued && h.dev.cookies_sent == 0 && tl_ch_discard(&h) == 0,
	      "no way back: %lu handshake drops, nothing sent", (unsigned long)h.dev.cnt.hs_drops);
	tl_ch_teardown(&h);
}

/* ---- a batch on several threads against one message at a time on one -------------------- */

#define DISTINCT 30u
#define REMOTES (DISTINCT + 8u)

struct outcome {
	uint64_t consumed, received, drops[TL_DROP_MAX];
	uint64_t handshakes[REMOTES];
	unsigned completed;              /* remotes that took our response */
};

/* Our initiation to r, its response (as the remote's message). */
static int our_initiation_answered(struct tl_ch *h, struct tl_ch_remote *r, struct tl_peer_ctrl *pc,
				   struct tl_msg_response *resp)
{
	struct tl_msg_initiation ours;

	if (tl_handshake_initiate(&h->dev, pc, h->now) != 0 ||
	    tl_ch_take(h, r, TL_MSG_INITIATION, &ours, sizeof(ours)) != (int)sizeof(ours))
		return -1;
	return tl_ch_remote_respond(h, r, &ours, resp);
}

static void enqueue(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len, unsigned *n)
{
	struct rte_mbuf *m = tl_ch_hs_msg(h, r, msg, len);

	if (m && rte_ring_enqueue(h->dev.dp.hs_ring, m) == 0)
		(*n)++;
	else
		rte_pktmbuf_free(m);
}

/* Our retry of an initiation to the peer of replaced: made when the control plane sends
 * its first frame of the batch (after the batch's first pass, before the second reaches
 * that peer's response). */
static struct {
	struct tl_ch *h;
	struct tl_peer_ctrl *pc;
	bool done;
} replaced;

static void retry_mid_batch(struct tl_device *dev)
{
	if (replaced.done)
		return;
	replaced.done = true;
	CHECK(tl_handshake_initiate(dev, replaced.pc, replaced.h->now) == 0, "retry mid-batch sent");
}

/* 30 distinct initiators; one of them again (a replay), another twice within 20 ms (a
 * flood); one with a broken static key behind a valid mac1; 4 responses to our initiations;
 * a peer whose initiation comes before its response to ours (that response then answers a
 * handshake which is gone); a response to our initiation whose handshake our retry replaces
 * within the batch (the response answers the handshake the first pass read, no longer
 * ours); a cookie reply. */
static void scenario(struct tl_ch *h, bool batched, struct outcome *o)
{
	static struct tl_ch_remote r[REMOTES];
	struct tl_peer_ctrl *pc[REMOTES];
	struct tl_msg_initiation init[REMOTES], again;
	struct tl_msg_response resp[REMOTES];
	struct tl_msg_cookie cookie;
	struct tl_msg_initiation first;
	struct tl_msg_response late;
	bool late_ok;
	struct rte_mbuf *m = NULL;
	unsigned queued = 0, want = 0;

	memset(o, 0, sizeof(*o));
	for (unsigned i = 0; i < REMOTES; i++)
		pc[i] = tl_ch_peer_add(h, &r[i], (uint8_t)(i + 1));
	for (unsigned i = 0; i < REMOTES; i++)
		if (!pc[i])
			return;
	/* sent 6 s ago: its retry is due */
	late_ok = tl_handshake_initiate(&h->dev, pc[37], h->now - 6 * TL_NS) == 0 &&
		  tl_ch_take(h, &r[37], TL_MSG_INITIATION, &first, sizeof(first)) == (int)sizeof(first) &&
		  tl_ch_remote_respond(h, &r[37], &first, &late) == 0;
	for (unsigned i = 0; i < DISTINCT; i++, want++) {
		if (tl_ch_remote_initiation(h, &r[i], &init[i]) == 0)
			enqueue(h, &r[i], &init[i], sizeof(init[i]), &queued);
		if (i == 0 && late_ok)                  /* in the first batch, after a response of ours */
			enqueue(h, &r[37], &late, sizeof(late), &queued);
	}
	want++;
	enqueue(h, &r[0], &init[0], sizeof(init[0]), &queued);                 /* replay */
	if (tl_ch_remote_initiation(h, &r[1], &again) == 0)                    /* flood */
		enqueue(h, &r[1], &again, sizeof(again), &queued);
	if (tl_ch_remote_initiation(h, &r[30], &init[30]) == 0) {            /* broken static */
		init[30].static_enc[5] ^= 0x40;
		tl_cookie_add_macs(&init[30], sizeof(init[30]), &r[30].hs, h->now);
		enqueue(h, &r[30], &init[30], sizeof(init[30]), &queued);
	}
	want += 3;
	for (unsigned i = 31; i < 35; i++, want++)
		if (our_initiation_answered(h, &r[i], pc[i], &resp[i]) == 0)
			enqueue(h, &r[i], &resp[i], sizeof(resp[i]), &queued);
	if (our_initiation_answered(h, &r[35], pc[35], &resp[35]) == 0 &&
	    tl_ch_remote_initiation(h, &r[35], &init[35]) == 0) {
		enqueue(h, &r[35], &init[35], sizeof(init[35]), &queued);
		enqueue(h, &r[35], &resp[35], sizeof(resp[35]), &queued);
	}
	want += 2;
	if (tl_handshake_initiate(&h->dev, pc[36], h->now) == 0 &&
	    tl_ch_take(h, &r[36], TL_MSG_INITIATION, &init[36], sizeof(init[36])) > 0) {
		tl_ch_remote_cookie(h, &r[36], &init[36], sizeof(init[36]), init[36].sender, &cookie);
		enqueue(h, &r[36], &cookie, sizeof(cookie), &queued);
	}
	want++;
	tl_ch_discard(h);
	CHECK(queued == want, "%u of %u messages queued", queued, want);

	replaced.h = h;
	replaced.pc = pc[37];
	replaced.done = false;
	tl_send_enqueue_test_hook = retry_mid_batch;
	if (batched) {
		while (tl_handshake_poll(&h->dev, h->now))
			;
	} else {
		while (rte_ring_dequeue(h->dev.dp.hs_ring, (void **)&m) == 0)
			tl_handshake_rx(&h->dev, m, h->now);
	}
	tl_send_enqueue_test_hook = NULL;
	CHECK(replaced.done && pc[37]->hs.state == TL_HS_CREATED_INITIATION && pc[37]->hs.local_index != late.receiver,
	      "the retry replaced the handshake the response answers");
	for (unsigned i = 0; i < DISTINCT; i++) {
		struct tl_msg_response ours;

		if (tl_ch_take(h, &r[i], TL_MSG_RESPONSE, &ours, sizeof(ours)) == (int)sizeof(ours) &&
		    tl_ch_remote_complete(h, &r[i], &ours) == 0)
			o->completed++;
	}
	tl_ch_discard(h);
	o->consumed = h->dev.cnt.consumed;
	o->received = h->dev.handshakes_received;
	memcpy(o->drops, h->dev.cnt.drops, sizeof(o->drops));
	for (unsigned i = 0; i < REMOTES; i++)
		o->handshakes[i] = pc[i]->handshakes;
}

static void test_batch_as_one_at_a_time(void)
{
	struct outcome one, batch;
	struct tl_ch h;
	uint64_t hs_failed;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	tl_parfor_free(h.dev.hs_pool);         /* the reference: the control thread alone */
	h.dev.hs_pool = NULL;
	scenario(&h, false, &one);
	tl_ch_teardown(&h);
	CHECK(tl_ch_setup(&h) == 0, "setup");
	CHECK(tl_parfor_helpers(h.dev.hs_pool) == TL_CH_HS_THREADS, "%u handshake threads",
	      tl_parfor_helpers(h.dev.hs_pool));
	scenario(&h, true, &batch);
	tl_ch_teardown(&h);

	hs_failed = batch.drops[TL_DROP_handshake_failed];
	CHECK(batch.consumed == DISTINCT + 1 + 4 + 1, "consumed %lu", (unsigned long)batch.consumed);
	CHECK(batch.received == DISTINCT + 1 + 4, "handshakes received %lu", (unsigned long)batch.received);
	CHECK(hs_failed == 5, "replay, flood, broken static, stale response, replaced handshake: handshake_failed %lu",
	      (unsigned long)hs_failed);
	/* all but the flooding remote, whose second initiation replaced its first */
	CHECK(batch.completed == DISTINCT - 1, "%u remotes took our response", batch.completed);
	CHECK(batch.handshakes[0] == 1 && batch.handshakes[1] == 1 && batch.handshakes[30] == 0 &&
	      batch.handshakes[35] == 1 && batch.handshakes[36] == 0 && batch.handshakes[37] == 0, "sessions per peer");
	CHECK(one.consumed == batch.consumed && one.received == batch.received && one.completed == batch.completed,
	      "one at a time: consumed %lu, received %lu, completed %u", (unsigned long)one.consumed,
	      (unsigned long)one.received, one.completed);
	CHECK(!memcmp(one.drops, batch.drops, sizeof(one.drops)), "the same drops by reason");
	CHECK(!memcmp(one.handshakes, batch.handshakes, sizeof(one.handshakes)), "the same sessions per peer");
}

/* ---- staged packets and the room the batch reserves -------------------------------------- */

#define STAGED_PEERS 4u
#define ANSWERED 28u

/* A staged inner IPv4 packet from our host to the peer's network, as a worker stages it. */
static bool stage(struct tl_ch *h, struct tl_peer_ctrl *pc)
{
	struct tl_staged s = { .peer = pc->dp };
	static const uint8_t hdr[28] = { 0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0,
					 10, 99, 0, 20, 10, 5, 0, 1, 0x30, 0x39, 0x30, 0x39, 0, 8, 0, 0 };
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->dev.dp.stage_pool);
	void *p = m ? rte_pktmbuf_append(m, sizeof(hdr)) : NULL;

	if (!p) {
		rte_pktmbuf_free(m);
		return false;
	}
	memcpy(p, hdr, sizeof(hdr));
	s.m = m;
	atomic_fetch_add(&pc->dp->n_staged, 1);
	return rte_ring_enqueue_elem(h->dev.dp.stage_ring, &s, sizeof(s)) == 0;
}

/* One batch: the responses to our initiations of 4 peers that each have 128 packets staged
 * (more, together, than the control TX ring holds), then 28 initiations of other peers.
 * The staged packets leave the room the batch reserved for the answers after them: every
 * initiation is answered, nothing is dropped as ctrl_backlog, and what waits is sent on
 * the following ticks. */
static void test_staged_flush_keeps_batch_room(void)
{
	static struct tl_ch_remote r[STAGED_PEERS + ANSWERED];
	struct tl_peer_ctrl *pc[STAGED_PEERS + ANSWERED];
	struct tl_msg_response resp[STAGED_PEERS];
	struct tl_msg_initiation init;
	unsigned staged = 0, queued = 0, answered = 0, n;
	struct tl_ch h;
	bool ok = true;

	CHECK(tl_ch_setup(&h) == 0, "staged flush: setup");
	for (unsigned i = 0; i < STAGED_PEERS + ANSWERED; i++)
		ok &= (pc[i] = tl_ch_peer_add(&h, &r[i], (uint8_t)(i + 1))) != NULL;
	CHECK(ok, "staged flush: peers added");
	if (!ok)
		goto out;
	for (unsigned i = 0; i < STAGED_PEERS; i++) {
		ok &= our_initiation_answered(&h, &r[i], pc[i], &resp[i]) == 0;
		for (unsigned k = 0; k < h.cfg.staged_packets; k++)
			staged += stage(&h, pc[i]);
	}
	CHECK(ok && staged == STAGED_PEERS * h.cfg.staged_packets, "staged flush: %u packets staged", staged);
	CHECK(staged > rte_ring_get_capacity(h.dev.workers[0].ctrl_tx), "staged flush: more than the control TX ring holds");
	CHECK(tl_staged_poll(&h.dev) == staged, "staged flush: taken by the control plane");
	tl_ch_discard(&h);
	for (unsigned i = 0; i < STAGED_PEERS; i++)
		enqueue(&h, &r[i], &resp[i], sizeof(resp[i]), &queued);
	for (unsigned i = STAGED_PEERS; i < STAGED_PEERS + ANSWERED; i++)
		if (tl_ch_remote_initiation(&h, &r[i], &init) == 0)
			enqueue(&h, &r[i], &init, sizeof(init), &queued);
	CHECK(queued == STAGED_PEERS + ANSWERED && queued <= TL_BURST, "staged flush: %u messages, one batch", queued);
	h.now += MS;
	CHECK(tl_handshake_poll(&h.dev, h.now) == queued, "staged flush: the batch taken whole");
	CHECK(h.dev.cnt.drops[TL_DROP_ctrl_backlog] == 0, "staged flush: %lu dropped as ctrl_backlog, want 0",
	      (unsigned long)h.dev.cnt.drops[TL_DROP_ctrl_backlog]);
	for (unsigned i = STAGED_PEERS; i < STAGED_PEERS + ANSWERED; i++) {
		struct tl_msg_response ours;

		answered += tl_ch_take(&h, &r[i], TL_MSG_RESPONSE, &ours, sizeof(ours)) == (int)sizeof(ours);
	}
	CHECK(answered == ANSWERED, "staged flush: %u of %u initiations answered", answered, ANSWERED);
	for (unsigned i = 0; i < 10; i++) {
		tl_ch_discard(&h);
		h.now += 5 * MS;
		tl_ch_tick(&h);
	}
	tl_ch_discard(&h);
	n = 0;
	for (unsigned i = 0; i < STAGED_PEERS; i++)
		n += (unsigned)atomic_load(&pc[i]->dp->n_staged);
	CHECK(n == 0 && h.dev.cnt.unstaged == staged && h.dev.cnt.staged_drops == 0,
	      "staged flush: %u still staged, %lu sent, %lu dropped", n, (unsigned long)h.dev.cnt.unstaged,
	      (unsigned long)h.dev.cnt.staged_drops);
	CHECK(h.dev.cnt.drops[TL_DROP_ctrl_backlog] == 0, "staged flush: none dropped as ctrl_backlog later");
out:
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_flood_waits_for_ctrl_tx();
	test_flood_no_way_back();
	test_batch_as_one_at_a_time();
	test_staged_flush_keeps_batch_room();
	tl_ch_eal_fini();
	return check_report();
}
