/* The control plane's handshake indices: every index a handshake allocates is freed or
 * handed to a session, none outlives its peer, and a message addressed to an index that is
 * gone is counted as a failed handshake (checked under ASan in the sanitizer build). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_hash.h>
#include <rte_malloc.h>

#include "check.h"
#include "ctrl/peer.h"
#include "ctrl/send.h"
#include "ctrl/session.h"
#include "ctrl_harness.h"

#define MS 1000000ull
#define FILL_MAX (64 * TL_MAX_PEERS)

static uint64_t hs_failed(struct tl_ch *h)
{
	return h->dev.cnt.drops[TL_DROP_handshake_failed];
}

/* We initiate, and the peer's initiation crosses ours: we answer it as responder. *ours is
 * our initiation, still outstanding at the peer. */
static struct tl_peer_ctrl *crossed(struct tl_ch *h, struct tl_ch_remote *r, struct tl_msg_initiation *ours)
{
	struct tl_peer_ctrl *pc = tl_ch_peer_add(h, r, 7);
	struct tl_msg_initiation theirs;
	struct tl_msg_response resp;

	CHECK(pc != NULL, "peer added");
	if (!pc)
		return NULL;
	CHECK(tl_handshake_initiate(&h->dev, pc, h->now) == 0, "initiation sent");
	CHECK(tl_ch_take(h, r, TL_MSG_INITIATION, ours, sizeof(*ours)) == (int)sizeof(*ours), "our initiation on the wire");
	CHECK(pc->hs.state == TL_HS_CREATED_INITIATION, "initiation outstanding");
	h->now += MS;
	CHECK(tl_ch_remote_initiation(h, r, &theirs) == 0, "peer's initiation");
	tl_ch_deliver(h, r, &theirs, sizeof(theirs));
	CHECK(tl_ch_take(h, r, TL_MSG_RESPONSE, &resp, sizeof(resp)) == (int)sizeof(resp), "we respond");
	CHECK(atomic_load(&pc->dp->next) != NULL, "responder session waits in next");
	return pc;
}

/* The outstanding initiation's index is released when the crossing initiation is answered;
 * after the peer is removed, its late response and a cookie reply to that index find
 * nothing. */
static void test_crossed_then_removed(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_msg_initiation ours;
	struct tl_msg_response late;
	struct tl_msg_cookie cookie;
	struct tl_peer_ctrl *pc;
	uint64_t before;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = crossed(&h, &r, &ours);
	if (!pc)
		goto out;
	CHECK(tl_ch_index_stale(&h) == 0, "%u handshake index(es) no handshake names", tl_ch_index_stale(&h));
	CHECK(tl_index_find(&h.dev, ours.sender) == NULL, "index of the superseded initiation freed");
	CHECK(tl_ch_index_refs(&h, pc) == 1, "one index left (the session's), got %u", tl_ch_index_refs(&h, pc));
	CHECK(tl_ch_remote_respond(&h, &r, &ours, &late) == 0, "peer answers our initiation");
	tl_ch_remote_cookie(&h, &r, &ours, sizeof(ours), ours.sender, &cookie);

	CHECK(tl_peer_remove(&h.dev, pc) == 0, "peer removed");
	CHECK(tl_ch_index_refs(&h, pc) == 0, "%u index(es) of the removed peer left", tl_ch_index_refs(&h, pc));
	CHECK(tl_ch_index_orphans(&h) == 0, "no index without a peer");
	before = hs_failed(&h);
	h.now += MS;
	tl_ch_deliver(&h, &r, &late, sizeof(late));
	tl_ch_deliver(&h, &r, &cookie, sizeof(cookie));
	CHECK(hs_failed(&h) == before + 2, "late response and cookie reply: handshake_failed %llu -> %llu",
	      (unsigned long long)before, (unsigned long long)hs_failed(&h));
	CHECK(tl_ch_discard(&h) == 0, "nothing sent for them");
out:
	tl_ch_teardown(&h);
}

/* Without removal the late response is refused too, and the session stays as it was. */
static void test_crossed_late_response(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_msg_initiation ours;
	struct tl_msg_response late;
	struct tl_peer_ctrl *pc;
	struct tl_keypair *next;
	uint64_t before;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = crossed(&h, &r, &ours);
	if (!pc)
		goto out;
	next = atomic_load(&pc->dp->next);
	CHECK(tl_ch_remote_respond(&h, &r, &ours, &late) == 0, "peer answers our initiation");
	before = hs_failed(&h);
	h.now += MS;
	tl_ch_deliver(&h, &r, &late, sizeof(late));
	CHECK(hs_failed(&h) == before + 1, "late response counted as handshake_failed");
	CHECK(atomic_load(&pc->dp->next) == next && atomic_load(&pc->dp->current) == NULL, "sessions untouched");
	/* The peer's first data on the responder session completes our handshake attempt. */
	CHECK(pc->hs_first_attempt_ns != 0, "still trying before the session is confirmed");
	atomic_store(&pc->dp->next_confirmed, true);
	tl_ch_tick(&h);
	CHECK(atomic_load(&pc->dp->current) == next, "responder session confirmed");
	CHECK(pc->hs_first_attempt_ns == 0, "handshake attempt over once the responder session is confirmed");
	CHECK(tl_ch_index_stale(&h) == 0 && tl_ch_index_refs(&h, pc) == 1, "one index (the session's)");
out:
	tl_ch_teardown(&h);
}

/* A complete handshake with us as initiator. */
static void handshake_as_initiator(struct tl_ch *h, struct tl_ch_remote *r, struct tl_peer_ctrl *pc)
{
	struct tl_msg_initiation ours;
	struct tl_msg_response resp;

	CHECK(tl_handshake_initiate(&h->dev, pc, h->now) == 0, "initiation sent");
	CHECK(tl_ch_take(h, r, TL_MSG_INITIATION, &ours, sizeof(ours)) == (int)sizeof(ours), "on the wire");
	CHECK(tl_ch_remote_respond(h, r, &ours, &resp) == 0, "peer responds");
	h->now += MS;
	tl_ch_deliver(h, r, &resp, sizeof(resp));
	CHECK(atomic_load(&pc->dp->current) != NULL, "session current");
	tl_ch_discard(h);
}

/* 3 x REJECT_AFTER_TIME after the last session every key is forgotten, including the state
 * of an initiation just sent: its index goes with it. */
static void test_zero_keys_drops_index(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 9);
	if (!pc)
		goto out;
	handshake_as_initiator(&h, &r, pc);
	h.now += 3 * 180 * TL_NS + MS;
	atomic_store(&pc->dp->want_handshake, true);   /* a packet waits: initiate this tick */
	tl_ch_tick(&h);
	CHECK(pc->last_session_ns == 0, "keys zeroed");
	CHECK(tl_ch_index_stale(&h) == 0, "%u handshake index(es) left behind", tl_ch_index_stale(&h));
	CHECK(tl_ch_index_refs(&h, pc) <= 1, "%u indices of the peer", tl_ch_index_refs(&h, pc));
	tl_ch_discard(&h);
	h.now += 6 * TL_NS;                             /* the retry after REKEY_TIMEOUT */
	tl_ch_tick(&h);
	CHECK(tl_ch_index_stale(&h) == 0 && tl_ch_index_refs(&h, pc) == 1, "one outstanding initiation");
out:
	tl_ch_teardown(&h);
}

/* A full index table that cannot grow (out of memory): no handshake message goes out under
 * index 0, and nothing is installed under it. */
static void test_index_table_full(void)
{
	static struct tl_index_ref dummy;
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_msg_initiation theirs, out;
	struct tl_peer_ctrl *pc;
	uint32_t *filled = calloc(FILL_MAX, sizeof(*filled)), n = 0;
	uint64_t before;

	CHECK(tl_ch_setup(&h) == 0 && filled, "setup");
	pc = tl_ch_peer_add(&h, &r, 11);
	if (!pc || !filled)
		goto out;
	/* Until no slot is left anywhere: a random index then finds no room either. */
	for (uint32_t k = 0x40000000u, misses = 0; n < FILL_MAX && misses < 4096; k++) {
		if (rte_hash_add_key_data(h.dev.ctrl_index, &k, &dummy) != 0) {
			misses++;
			continue;
		}
		filled[n++] = k;
		misses = 0;
	}
	CHECK(n < FILL_MAX, "index table full after %u entries", n);
	tl_index_grow_test_failures = 1000;        /* and it cannot grow */
	CHECK(tl_handshake_initiate(&h.dev, pc, h.now) < 0, "no initiation without an index");
	CHECK(tl_ch_take(&h, &r, TL_MSG_INITIATION, &out, sizeof(out)) < 0, "nothing sent");
	CHECK(tl_ch_remote_initiation(&h, &r, &theirs) == 0, "peer's initiation");
	before = hs_failed(&h);
	tl_ch_deliver(&h, &r, &theirs, sizeof(theirs));
	CHECK(hs_failed(&h) == before + 1, "counted as handshake_failed");
	CHECK(tl_ch_discard(&h) == 0, "no response sent");
	CHECK(atomic_load(&pc->dp->next) == NULL && atomic_load(&pc->dp->current) == NULL, "no session");
	for (uint32_t i = 0; i < n; i++)
		rte_hash_del_key(h.dev.ctrl_index, &filled[i]);
out:
	tl_index_grow_test_failures = 0;
	free(filled);
	tl_ch_teardown(&h);
}

/* Our initiation is answered while the dataplane's index table is crowded and cannot grow
 * (the name of its next table is taken: its creation fails as out of memory would): the
 * session is not installed, the response counts as handshake_failed, and the handshake's
 * index goes with it instead of staying registered as a handshake nobody can complete. */
static void test_install_fails_drops_index(void)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash *blocker = NULL;
	struct tl_msg_initiation ours;
	struct tl_msg_response resp;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_ch h;
	uint32_t *filled = calloc(FILL_MAX, sizeof(*filled)), n = 0;
	uint64_t before;

	CHECK(tl_ch_setup(&h) == 0 && filled, "install fails: setup");
	pc = tl_ch_peer_add(&h, &r, 12);
	if (!pc || !filled)
		goto out;
	CHECK(tl_handshake_initiate(&h.dev, pc, h.now) == 0, "install fails: initiation sent");
	CHECK(tl_ch_take(&h, &r, TL_MSG_INITIATION, &ours, sizeof(ours)) == (int)sizeof(ours), "install fails: on the wire");
	CHECK(tl_ch_remote_respond(&h, &r, &ours, &resp) == 0, "install fails: peer responds");
	/* Entries until the next keypair needs a bigger table; each is a keypair-sized block the
	 * table's reclaim frees on delete. */
	for (uint32_t k = 0x50000000u; n < FILL_MAX && tl_dp_hash_crowded(tl_dp_index(&h.dev.dp), h.dev.dp.index_cap) == 0; k++) {
		void *kp = rte_zmalloc("tl_test_kp", sizeof(struct tl_keypair), 0);

		if (!kp || rte_hash_add_key_data(tl_dp_index(&h.dev.dp), &k, kp) != 0) {
			rte_free(kp);
			continue;
		}
		filled[n++] = k;
	}
	snprintf(name, sizeof(name), "tl_index%" PRIu64, h.dev.dp.name_gen);
	blocker = tl_dp_hash_new(name, 64, sizeof(uint32_t), false);
	CHECK(blocker != NULL, "install fails: next table's name taken");
	before = hs_failed(&h);
	h.now += MS;
	tl_ch_deliver(&h, &r, &resp, sizeof(resp));
	CHECK(hs_failed(&h) == before + 1, "install fails: counted as handshake_failed");
	CHECK(atomic_load(&pc->dp->current) == NULL, "install fails: no session");
	CHECK(tl_ch_index_stale(&h) == 0, "install fails: %u handshake index(es) no handshake names",
	      tl_ch_index_stale(&h));
	CHECK(tl_ch_index_refs(&h, pc) == 0, "install fails: %u index(es) of the peer left", tl_ch_index_refs(&h, pc));
	for (uint32_t i = 0; i < n; i++)
		rte_hash_del_key(tl_dp_index(&h.dev.dp), &filled[i]);
out:
	rte_hash_free(blocker);
	free(filled);
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_crossed_then_removed();
	test_crossed_late_response();
	test_zero_keys_drops_index();
	test_index_table_full();
	test_install_fails_drops_index();
	tl_ch_eal_fini();
	return check_report();
}
