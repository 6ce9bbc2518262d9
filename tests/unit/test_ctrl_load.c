/* The control plane under a handshake flood: every initiation without a valid mac2 is
 * answered with a cookie reply, and the control plane answers no faster than worker 0 sends
 * (its control TX ring is bounded): while that ring is full the messages wait in the
 * handshake ring, whose overflow the workers count (handshake_overload) before they hand a
 * message over. Nothing is dropped because the control TX ring is full (ctrl_backlog). */
#include "check.h"
#include "ctrl/handshake.h"
#include "ctrl_harness.h"

#define FLOOD 1000u

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
		struct rte_mbuf *m = tl_ch_frame(&h, &r, &init, sizeof(init));

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

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_flood_waits_for_ctrl_tx();
	tl_ch_eal_fini();
	return check_report();
}
