/* Retired session keys are wiped within a bounded time: a keypair that expires, belongs to a
 * removed peer or to the identity before a private-key change is wiped (and freed) within a
 * few control-plane ticks, with nothing else happening on the index table; the AEAD key
 * copies of the control plane and of the workers go with it, also when a worker runs a round
 * in the middle of the retirement with a message for the retiring keypair. */
#include "check.h"
#include "crypto/messages.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/send.h"
#include "ctrl/session.h"
#include "ctrl_harness.h"
#include "daemon/uapi.h"

#define MS 1000000ull
#define TICKS 3                        /* the bound: control-plane ticks after retirement */

static const struct tl_keypair *watched;
static bool seen, seen_wiped;

static void on_reclaim(const struct tl_keypair *kp)
{
	if (kp != watched)
		return;
	seen = true;
	seen_wiped = tl_is_zero(kp, sizeof(*kp));
}

static void watch(const struct tl_keypair *kp)
{
	watched = kp;
	seen = seen_wiped = false;
}

/* Ticks (5 ms apart, as the daemon's) until the watched keypair is reclaimed, at most TICKS. */
static bool reclaimed_within_ticks(struct tl_ch *h)
{
	for (unsigned i = 0; i < TICKS && !seen; i++) {
		h->now += 5 * MS;
		tl_ch_tick(h);
	}
	return seen && seen_wiped;
}

/* We initiate, the peer answers, our session is current (and a keepalive went out with it). */
static struct tl_keypair *session(struct tl_ch *h, struct tl_ch_remote *r, struct tl_peer_ctrl *pc)
{
	struct tl_msg_initiation ours;
	struct tl_msg_response resp;

	CHECK(tl_handshake_initiate(&h->dev, pc, h->now) == 0, "initiation sent");
	CHECK(tl_ch_take(h, r, TL_MSG_INITIATION, &ours, sizeof(ours)) == (int)sizeof(ours), "on the wire");
	CHECK(tl_ch_remote_respond(h, r, &ours, &resp) == 0, "peer responds");
	h->now += MS;
	tl_ch_deliver(h, r, &resp, sizeof(resp));
	tl_ch_discard(h);
	return atomic_load(&pc->dp->current);
}

/* A worker that used the keys: its AEAD context caches them. */
static void worker_uses(struct tl_ch *h, const struct tl_keypair *kp)
{
	uint8_t buf[64] = { 0 }, tag[TL_AEAD_TAG_LEN];

	tl_dp_aead_seal(h->dev.workers[0].aead, kp->send_key, 0, buf, sizeof(buf), tag, 0, 0);
}

static void test_expired(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_keypair *kp;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 1);
	kp = pc ? session(&h, &r, pc) : NULL;
	CHECK(kp != NULL, "session");
	if (!kp)
		goto out;
	watch(kp);
	h.now += 180 * TL_NS;                        /* REJECT_AFTER_TIME */
	CHECK(reclaimed_within_ticks(&h), "expired keypair wiped within %u ticks (seen %d, wiped %d)", TICKS,
	      seen, seen_wiped);
	CHECK(atomic_load(&pc->dp->current) == NULL, "no current session");
	CHECK(!tl_dp_aead_keyed(h.dev.aead), "control plane's AEAD forgot the key");
out:
	tl_ch_teardown(&h);
}

static void test_removed(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_keypair *kp;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 2);
	kp = pc ? session(&h, &r, pc) : NULL;
	CHECK(kp != NULL, "session");
	if (!kp)
		goto out;
	worker_uses(&h, kp);
	CHECK(tl_dp_aead_keyed(h.dev.workers[0].aead), "worker caches the key");
	watch(kp);
	CHECK(tl_peer_remove(&h.dev, pc) == 0, "peer removed");
	CHECK(reclaimed_within_ticks(&h), "removed peer's keypair wiped within %u ticks", TICKS);
	tl_ch_worker_round(&h);
	CHECK(!tl_dp_aead_keyed(h.dev.workers[0].aead), "worker forgot the key after one round");
out:
	tl_ch_teardown(&h);
}

static void test_private_key_change(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_keypair *kp;
	uint8_t priv[TL_KEY_LEN];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 3);
	kp = pc ? session(&h, &r, pc) : NULL;
	CHECK(kp != NULL, "session");
	if (!kp)
		goto out;
	worker_uses(&h, kp);
	watch(kp);
	tl_random(priv, sizeof(priv));
	CHECK(tl_peer_ops_apply(&h.dev, NULL, 0, priv, false) == 0, "private key changed");
	CHECK(reclaimed_within_ticks(&h), "keypair of the old identity wiped within %u ticks", TICKS);
	CHECK(atomic_load(&pc->dp->current) == NULL, "no session left");
	tl_ch_worker_round(&h);
	CHECK(!tl_dp_aead_keyed(h.dev.workers[0].aead), "worker forgot the key after one round");
	CHECK(!tl_dp_aead_keyed(h.dev.aead), "control plane's AEAD forgot the key");
out:
	tl_ch_teardown(&h);
}

/* A new initiation waits REKEY_TIMEOUT (5 s) after the last handshake message. */
#define REKEY_GAP (5 * TL_NS + 20 * MS)

/* A rekey pushes the oldest keypair out of the peer's slots: it goes too. */
static void test_rekey(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_keypair *first;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 4);
	first = pc ? session(&h, &r, pc) : NULL;
	CHECK(first != NULL, "session");
	if (!first)
		goto out;
	watch(first);
	h.now += REKEY_GAP;
	CHECK(session(&h, &r, pc) != NULL, "second session");
	CHECK(atomic_load(&pc->dp->previous) == first, "first session is previous");
	h.now += REKEY_GAP;
	CHECK(session(&h, &r, pc) != NULL, "third session");
	CHECK(reclaimed_within_ticks(&h), "keypair pushed out by rekeys wiped within %u ticks", TICKS);
out:
	tl_ch_teardown(&h);
}

/* A worker round in the middle of a retirement, with a data message for the retiring keypair
 * waiting on the WAN port: the round must not take the key into the worker's AEAD context
 * under the generation the retirement ends with, or nothing would make it forget the key. */
static struct tl_ch *race_h;
static const struct tl_ch_remote *race_r;
static bool race_keyed;

/* A keepalive from r to our keypair index, waiting on the WAN port. */
static bool keepalive_in(struct tl_ch *h, const struct tl_ch_remote *r, uint32_t index, uint64_t counter)
{
	uint8_t msg[sizeof(struct tl_msg_data) + TL_AEAD_TAG_LEN];
	struct tl_msg_data hdr = { .type = TL_MSG_DATA, .receiver = index, .counter = counter };
	struct rte_mbuf *m;

	memcpy(msg, &hdr, sizeof(hdr));
	tl_aead_seal(msg + sizeof(hdr), NULL, 0, counter, NULL, 0, r->keys.send);
	m = tl_ch_frame(h, r, msg, sizeof(msg));
	if (!m || rte_ring_enqueue(h->rx[TL_PORT_WAN], m) != 0) {
		rte_pktmbuf_free(m);
		return false;
	}
	return true;
}

static void round_mid_retire(uint32_t index)
{
	tl_keypair_retire_test_hook = NULL;
	if (!keepalive_in(race_h, race_r, index, 1))
		return;
	tl_ch_worker_round(race_h);
	race_keyed = tl_dp_aead_keyed(race_h->dev.workers[0].aead);
}

static void test_retire_race(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_keypair *kp;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 5);
	kp = pc ? session(&h, &r, pc) : NULL;
	CHECK(kp != NULL, "session");
	if (!kp)
		goto out;
	/* The session carries a message: the worker opens it (and its decapsulation job is
	 * finished, none left open). */
	CHECK(keepalive_in(&h, &r, kp->local_index, 0), "keepalive sent");
	tl_ch_worker_round(&h);
	CHECK(h.dev.workers[0].cnt.consumed == 1, "the worker opened the keepalive");
	race_h = &h;
	race_r = &r;
	race_keyed = false;
	tl_keypair_retire_test_hook = round_mid_retire;
	CHECK(tl_peer_remove(&h.dev, pc) == 0, "peer removed");
	CHECK(tl_keypair_retire_test_hook == NULL, "a worker round ran in the middle of the retirement");
	tl_keypair_retire_test_hook = NULL;
	tl_ch_worker_round(&h);
	CHECK(!tl_dp_aead_keyed(h.dev.workers[0].aead),
	      "the worker forgot the retired key at the next round (after the round in the middle: %d)", race_keyed);
out:
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	tl_keypair_reclaim_test_hook = on_reclaim;
	test_expired();
	test_removed();
	test_private_key_change();
	test_rekey();
	test_retire_race();
	tl_ch_eal_fini();
	return check_report();
}
