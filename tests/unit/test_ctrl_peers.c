/* Peer removal never frees what the published routing table still references: when the
 * table without the peer cannot be built, the removal is refused as a whole (the peer, its
 * sessions and the published table stay as they were) and the caller (UAPI set, control
 * API) reports the error. Checked under ASan in the sanitizer build. */
#include <errno.h>
#include <stdio.h>

#include <rte_memzone.h>

#include "check.h"
#include "ctrl/aips.h"
#include "ctrl/peer.h"
#include "ctrl/send.h"
#include "ctrl/uapi.h"
#include "ctrl_harness.h"
#include "dataplane/route.h"

#define MS 1000000ull

/* What a failed removal must leave untouched. */
struct peer_state {
	struct tl_peer_ctrl *pc;
	struct tl_peer *dp;
	struct tl_table *table;
	struct tl_keypair *current;
	uint32_t n_peers;
	unsigned refs;
};

static void state_take(struct tl_ch *h, struct tl_peer_ctrl *pc, struct peer_state *s)
{
	s->pc = pc;
	s->dp = pc->dp;
	s->table = atomic_load(&h->dev.dp.table);
	s->current = atomic_load(&pc->dp->current);
	s->n_peers = h->dev.n_peers;
	s->refs = tl_ch_index_refs(h, pc);
}

static void state_check(struct tl_ch *h, const uint8_t pub[TL_KEY_LEN], const struct peer_state *s)
{
	struct tl_table *t = atomic_load(&h->dev.dp.table);
	void *kp = NULL;

	CHECK(tl_peer_find(&h->dev, pub) == s->pc, "peer still there");
	if (tl_peer_find(&h->dev, pub) != s->pc)
		return;                         /* and freed: nothing more to look at */
	CHECK(s->pc->dp == s->dp, "its dataplane half kept");
	CHECK(h->dev.n_peers == s->n_peers, "peer count unchanged");
	CHECK(t->peers[s->dp->id] == s->dp, "the published table still routes to the peer");
	CHECK(atomic_load(&s->dp->current) == s->current, "session kept");
	CHECK(rte_hash_lookup_data(h->dev.dp.index_table, &s->current->local_index, &kp) >= 0 && kp == s->current,
	      "session still found by index");
	CHECK(tl_ch_index_refs(h, s->pc) == s->refs, "indices kept");
	CHECK(rte_ring_free_count(s->dp->staged) > 0, "staged ring usable");
}

static struct tl_peer_ctrl *peer_with_session(struct tl_ch *h, struct tl_ch_remote *r, uint8_t host)
{
	struct tl_peer_ctrl *pc = tl_ch_peer_add(h, r, host);
	struct tl_msg_initiation ours;
	struct tl_msg_response resp;

	CHECK(pc != NULL, "peer added");
	if (!pc)
		return NULL;
	CHECK(tl_handshake_initiate(&h->dev, pc, h->now) == 0, "initiation sent");
	CHECK(tl_ch_take(h, r, TL_MSG_INITIATION, &ours, sizeof(ours)) == (int)sizeof(ours), "on the wire");
	CHECK(tl_ch_remote_respond(h, r, &ours, &resp) == 0, "peer responds");
	h->now += MS;
	tl_ch_deliver(h, r, &resp, sizeof(resp));
	tl_ch_discard(h);
	CHECK(atomic_load(&pc->dp->current) != NULL, "session");
	return atomic_load(&pc->dp->current) ? pc : NULL;
}

static void test_remove_refused(void)
{
	struct tl_ch h;
	struct tl_ch_remote r, r2;
	struct tl_peer_ctrl *pc, *other;
	struct peer_state s;
	uint32_t id;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = peer_with_session(&h, &r, 1);
	other = tl_ch_peer_add(&h, &r2, 2);
	if (!pc || !other)
		goto out;
	state_take(&h, pc, &s);
	id = pc->dp->id;
	tl_table_build_test_failures = 1;
	CHECK(tl_peer_remove(&h.dev, pc) == -1, "removal refused");
	CHECK(tl_table_build_test_failures == 0, "the removal tried to build a table");
	state_check(&h, r.id.pub, &s);
	CHECK(atomic_load(&h.dev.dp.table) == s.table, "the same table stays published");
	/* The dataplane still works with it: a worker round over the published table. */
	tl_ch_worker_round(&h);
	CHECK(tl_peer_remove(&h.dev, pc) == 0, "removal once a table can be built");
	CHECK(tl_peer_find(&h.dev, r.id.pub) == NULL && h.dev.n_peers == 1, "peer gone");
	CHECK(atomic_load(&h.dev.dp.table)->peers[id] == NULL, "table no longer routes to it");
	CHECK(atomic_load(&h.dev.dp.table)->peers[other->dp->id] == other->dp, "other peer still routed");
out:
	tl_table_build_test_failures = 0;
	tl_ch_teardown(&h);
}

static void hex_key(char out[65], const uint8_t key[TL_KEY_LEN])
{
	tl_key_to_hex(out, key);
}

/* UAPI set: remove=true and replace_peers=true report the error; nothing changed. */
static void test_uapi_reports(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct peer_state s;
	char body[256], hex[65];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = peer_with_session(&h, &r, 3);
	if (!pc)
		goto out;
	state_take(&h, pc, &s);
	hex_key(hex, r.id.pub);
	snprintf(body, sizeof(body), "public_key=%s\nremove=true\n", hex);
	tl_table_build_test_failures = 1;
	CHECK(tl_uapi_set(&h.dev, body) == ENOMEM, "UAPI remove reports ENOMEM");
	state_check(&h, r.id.pub, &s);
	snprintf(body, sizeof(body), "replace_peers=true\n");
	tl_table_build_test_failures = 1;
	CHECK(tl_uapi_set(&h.dev, body) == ENOMEM, "UAPI replace_peers reports ENOMEM");
	state_check(&h, r.id.pub, &s);
	snprintf(body, sizeof(body), "public_key=%s\nremove=true\n", hex);
	CHECK(tl_uapi_set(&h.dev, body) == 0, "UAPI remove once a table can be built");
	CHECK(tl_peer_find(&h.dev, r.id.pub) == NULL, "peer gone");
out:
	tl_table_build_test_failures = 0;
	tl_ch_teardown(&h);
}

static void memzone_count(const struct rte_memzone *mz, void *arg)
{
	(void)mz;
	(*(unsigned *)arg)++;
}

static unsigned memzones(void)
{
	unsigned n = 0;

	rte_memzone_walk(memzone_count, &n);
	return n;
}

/* A peer takes no DPDK memzone (there are RTE_MAX_MEMZONE of them, 2560, for the whole
 * process): the device holds TL_MAX_PEERS peers, each routed, and removes them all. */
static void test_peers_take_no_memzone(void)
{
	struct tl_ch h;
	struct tl_prefix pf = { .ip = { .family = AF_INET }, .len = 32 };
	struct tl_cfg_peer cfg = { .allowed_ips = &pf, .n_allowed_ips = 1 };
	struct tl_table *t;
	unsigned before, added = 0, routed = 0;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	before = memzones();
	for (uint32_t i = 0; i < TL_MAX_PEERS; i++) {
		uint8_t a[4] = { 10, 200, (uint8_t)(i >> 8), (uint8_t)i };

		memset(cfg.public_key, 0x5a, sizeof(cfg.public_key));
		memcpy(cfg.public_key, &i, sizeof(i));
		memcpy(pf.ip.addr, a, 4);
		if (tl_peer_add(&h.dev, &cfg) != 0)
			break;
		added++;
	}
	CHECK(added == TL_MAX_PEERS, "%u of %u peers added", added, TL_MAX_PEERS);
	CHECK(memzones() == before, "no memzone per peer (%u before, %u after)", before, memzones());
	CHECK(tl_aips_publish(&h.dev) == 0, "table of %u peers published", added);
	t = atomic_load(&h.dev.dp.table);
	for (uint32_t i = 0; t && i < added; i++) {
		uint8_t a[4] = { 10, 200, (uint8_t)(i >> 8), (uint8_t)i };
		uint32_t id = tl_route_lookup(t, AF_INET, a);

		routed += id < TL_MAX_PEERS && t->peers[id] != NULL;
	}
	CHECK(routed == added, "every peer's address routes to it (%u of %u)", routed, added);
	tl_ch_teardown(&h);
	CHECK(memzones() <= before, "teardown left no memzone behind");
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_remove_refused();
	test_uapi_reports();
	test_peers_take_no_memzone();
	tl_ch_eal_fini();
	return check_report();
}
