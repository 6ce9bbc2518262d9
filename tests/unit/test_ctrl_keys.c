/* Retired session keys are wiped within a bounded time: a keypair that expires, belongs to a
 * removed peer or to the identity before a private-key change is wiped (and freed) within a
 * few control-plane ticks, with nothing else happening on the index table; the AEAD key
 * copies of the control plane and of the workers go with it. */
#include "check.h"
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

	tl_dp_aead_seal(h->dev.workers[0].aead, kp->send_key, 0, buf, sizeof(buf), tag);
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
	tl_ch_eal_fini();
	return check_report();
}
