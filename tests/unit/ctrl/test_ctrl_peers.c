/* Peer removal never frees what the published routing table still references: when the
 * change cannot be made (out of memory), the removal is refused as a whole (the peer, its
 * sessions and the published table stay as they were) and the caller (UAPI set, control
 * API) reports the error. Peers are cheap: many load without a DPDK memzone each, and one
 * change to one of them moves its routes only, never the whole table. Checked under ASan in
 * the sanitizer build. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <rte_memzone.h>

#include "check.h"
#include "common/key.h"
#include "ctrl/aips.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/send.h"
#include "ctrl_harness.h"
#include "daemon/ctlapi.h"
#include "daemon/uapi.h"
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
	CHECK(tl_route_peer(&h->dev.dp, t, AF_INET, s->pc->cfg.allowed_ips[0].ip.addr) == s->dp,
	      "the published table still routes to the peer");
	CHECK(atomic_load(&s->dp->current) == s->current, "session kept");
	CHECK(rte_hash_lookup_data(h->dev.dp.index_table, &s->current->local_index, &kp) >= 0 && kp == s->current,
	      "session still found by index");
	CHECK(tl_ch_index_refs(h, s->pc) == s->refs, "indices kept");
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
	uint8_t addr[4];
	uint32_t id;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = peer_with_session(&h, &r, 1);
	other = tl_ch_peer_add(&h, &r2, 2);
	if (!pc || !other)
		goto out;
	state_take(&h, pc, &s);
	id = pc->dp->id;
	memcpy(addr, pc->cfg.allowed_ips[0].ip.addr, 4);
	tl_aips_test_failures = 1;
	CHECK(tl_peer_remove(&h.dev, pc) == -1, "removal refused");
	CHECK(tl_aips_test_failures == 0, "the removal tried to change the routes");
	state_check(&h, r.id.pub, &s);
	CHECK(atomic_load(&h.dev.dp.table) == s.table, "the same table stays published");
	/* The dataplane still works with it: a worker round over the published table. */
	tl_ch_worker_round(&h);
	CHECK(tl_peer_remove(&h.dev, pc) == 0, "removal once a table can be built");
	CHECK(tl_peer_find(&h.dev, r.id.pub) == NULL && h.dev.n_peers == 1, "peer gone");
	CHECK(tl_dp_peer(&h.dev.dp, id) == NULL, "its slot is clear");
	CHECK(tl_route_lookup(atomic_load(&h.dev.dp.table), AF_INET, addr) == TL_ROUTE_NONE,
	      "table no longer routes to it");
	CHECK(tl_route_peer(&h.dev.dp, atomic_load(&h.dev.dp.table), AF_INET, other->cfg.allowed_ips[0].ip.addr) ==
		      other->dp, "other peer still routed");
out:
	tl_aips_test_failures = 0;
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
	tl_aips_test_failures = 1;
	CHECK(tl_uapi_set(&h.dev, body) == ENOMEM, "UAPI remove reports ENOMEM");
	state_check(&h, r.id.pub, &s);
	snprintf(body, sizeof(body), "replace_peers=true\n");
	tl_aips_test_failures = 1;
	CHECK(tl_uapi_set(&h.dev, body) == ENOMEM, "UAPI replace_peers reports ENOMEM");
	state_check(&h, r.id.pub, &s);
	snprintf(body, sizeof(body), "public_key=%s\nremove=true\n", hex);
	CHECK(tl_uapi_set(&h.dev, body) == 0, "UAPI remove once a table can be built");
	CHECK(tl_peer_find(&h.dev, r.id.pub) == NULL, "peer gone");
out:
	tl_aips_test_failures = 0;
	tl_ch_teardown(&h);
}

/* The control API's peer_add and peer_remove when the routing table cannot be built: the
 * error says nothing changed, and nothing did. */
static void test_ctlapi_reports(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct peer_state s;
	struct tl_buf out = { 0 };
	uint8_t pub[TL_KEY_LEN], priv[TL_KEY_LEN];
	char req[256], b64[45];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = peer_with_session(&h, &r, 4);
	if (!pc)
		goto out;
	state_take(&h, pc, &s);
	tl_x25519_generate(priv);
	tl_x25519_public(pub, priv);
	tl_key_to_base64(b64, pub);
	snprintf(req, sizeof(req), "op: peer_add\nargs: {public_key: %s, allowed_ips: [10.200.0.0/24]}\n...\n", b64);
	tl_aips_test_failures = 1;
	tl_ctlapi_request(&h.dev, req, strlen(req), &out);
	CHECK(out.p && strstr(out.p, "status: error") && strstr(out.p, "nothing changed"),
	      "peer_add refused, nothing changed: %s", out.p ? out.p : "(no reply)");
	CHECK(tl_peer_find(&h.dev, pub) == NULL, "no such peer");
	tl_buf_free(&out);
	tl_key_to_base64(b64, r.id.pub);
	snprintf(req, sizeof(req), "op: peer_remove\nargs: {public_key: %s}\n...\n", b64);
	tl_aips_test_failures = 1;
	tl_ctlapi_request(&h.dev, req, strlen(req), &out);
	CHECK(out.p && strstr(out.p, "status: error") && strstr(out.p, "nothing changed"),
	      "peer_remove refused, nothing changed: %s", out.p ? out.p : "(no reply)");
	state_check(&h, r.id.pub, &s);
	tl_buf_free(&out);
out:
	tl_aips_test_failures = 0;
	tl_ch_teardown(&h);
}

/* A set=1 through a UAPI client, read as a stream: 3 new peers and then a bad line are
 * refused whole (none of the 3 exists); a set of 840 000 lines (35 MiB, beyond what one
 * request could be before: 32 MiB) is parsed and applied. */
static void test_uapi_stream(void)
{
	struct tl_buf reply = { 0 }, text = { 0 };
	char *seen = NULL, hex[65];
	size_t seen_len = 0;
	uint8_t key[TL_KEY_LEN];
	struct tl_ch h;
	bool absent = true;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	tl_buf_printf(&text, "set=1\n");
	for (uint32_t i = 0; i < 3; i++) {
		memset(key, 0x77, sizeof(key));
		memcpy(key, &i, sizeof(i));
		tl_key_to_hex(hex, key);
		tl_buf_printf(&text, "public_key=%s\nallowed_ip=10.50.0.%u/32\n", hex, i);
	}
	tl_buf_printf(&text, "allowed_ip=10.50.0.99/33\n\n");
	CHECK(!text.oom && tl_uapi_test_client(&h.dev, text.p, text.len, 7, &seen, &seen_len, &reply) == 0,
	      "client ran");
	CHECK(reply.p && !strcmp(reply.p, "errno=-22\n\n"), "a bad last line: EINVAL");
	for (uint32_t i = 0; i < 3; i++) {
		memset(key, 0x77, sizeof(key));
		memcpy(key, &i, sizeof(i));
		absent &= tl_peer_find(&h.dev, key) == NULL;
	}
	CHECK(absent && h.dev.n_peers == 0, "none of the 3 peers before it exists");
	free(seen);
	tl_buf_free(&reply);
	tl_buf_free(&text);

	tl_buf_printf(&text, "set=1\n");
	for (uint32_t i = 0; i < 420000; i++) {
		memset(key, 0x33, sizeof(key));
		memcpy(key, &i, sizeof(i));
		tl_key_to_hex(hex, key);
		tl_buf_printf(&text, "public_key=%s\nremove=true\n", hex);
	}
	tl_buf_printf(&text, "\n");
	CHECK(!text.oom && text.len > (35u << 20), "a request of %zu bytes", text.len);
	CHECK(tl_uapi_test_client(&h.dev, text.p, text.len, 65536, &seen, &seen_len, &reply) == 0 && reply.p &&
		      !strcmp(reply.p, "errno=0\n\n"), "%zu bytes of set=1 in 64 KiB reads: applied", text.len);
	free(seen);
	tl_buf_free(&reply);
	tl_buf_free(&text);
	tl_ch_teardown(&h);
}

/* replace_allowed_ips with one prefix listed three times: the peer keeps that prefix alone
 * (it had two others before). */
static void test_replace_repeated(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	char body[512], hex[65];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 7);
	if (!pc)
		goto out;
	tl_key_to_hex(hex, r.id.pub);
	snprintf(body, sizeof(body), "public_key=%s\nallowed_ip=10.60.0.1/32\n", hex);
	CHECK(tl_uapi_set(&h.dev, body) == 0 && pc->cfg.n_allowed_ips == 2, "two allowed IPs");
	snprintf(body, sizeof(body),
		 "public_key=%s\nreplace_allowed_ips=true\nallowed_ip=10.60.0.9/32\nallowed_ip=10.60.0.9/32\n"
		 "allowed_ip=10.60.0.9/32\n", hex);
	CHECK(tl_uapi_set(&h.dev, body) == 0, "replaced");
	CHECK(pc->cfg.n_allowed_ips == 1 && pc->cfg.allowed_ips[0].ip.addr[3] == 9,
	      "only the repeated one left (%zu)", pc->cfg.n_allowed_ips);
out:
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

#define MANY 20000u

/* Peer i of many: a key of its own and 10.200.0.0/16 + i as its one allowed IP. */
static void many_peer(struct tl_cfg_peer *cfg, struct tl_prefix *pf, uint32_t i)
{
	memset(cfg, 0, sizeof(*cfg));
	memset(pf, 0, sizeof(*pf));
	memset(cfg->public_key, 0x5a, sizeof(cfg->public_key));
	memcpy(cfg->public_key, &i, sizeof(i));
	pf->ip.family = AF_INET;
	pf->len = 32;
	pf->ip.addr[0] = 10;
	pf->ip.addr[1] = (uint8_t)(200 + (i >> 16));
	pf->ip.addr[2] = (uint8_t)(i >> 8);
	pf->ip.addr[3] = (uint8_t)i;
	cfg->allowed_ips = pf;
	cfg->n_allowed_ips = 1;
}

static uint32_t routed_many(struct tl_ch *h, uint32_t n)
{
	struct tl_table *t = atomic_load(&h->dev.dp.table);
	uint32_t routed = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct tl_cfg_peer cfg;
		struct tl_prefix pf;
		struct tl_peer *p;

		many_peer(&cfg, &pf, i);
		p = tl_route_peer(&h->dev.dp, t, AF_INET, pf.ip.addr);
		routed += p && !memcmp(((struct tl_peer_ctrl *)p->ctrl)->cfg.public_key, cfg.public_key, TL_KEY_LEN);
	}
	return routed;
}

/* A peer takes no DPDK memzone (there are RTE_MAX_MEMZONE of them, 2560, for the whole
 * process): the device holds MANY peers, each routed. Then one peer added and one removed
 * through the write model change the routes of that peer only: no copy of the table is
 * built, the published copy is the other one, every other peer still routes. */
static void test_many_peers(void)
{
	struct tl_ch h;
	struct tl_cfg_peer cfg;
	struct tl_prefix pf;
	struct tl_peer_op op;
	struct tl_table *t0;
	unsigned before, added = 0;
	uint64_t builds;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	before = memzones();
	for (uint32_t i = 0; i < MANY; i++) {
		many_peer(&cfg, &pf, i);
		if (tl_peer_add(&h.dev, &cfg) != 0)
			break;
		added++;
	}
	CHECK(added == MANY, "%u of %u peers added", added, MANY);
	CHECK(tl_aips_publish(&h.dev) == 0, "table of %u peers published", added);
	CHECK(memzones() == before, "no memzone per peer (%u before, %u after)", before, memzones());
	CHECK(routed_many(&h, added) == added, "every peer's address routes to it (%u of %u)", routed_many(&h, added),
	      added);

	builds = tl_aips_builds(&h.dev);
	t0 = atomic_load(&h.dev.dp.table);
	many_peer(&cfg, &pf, MANY);
	tl_peer_op_add(&op, &cfg);
	CHECK(tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) == 0, "one more peer");
	CHECK(tl_aips_builds(&h.dev) == builds, "no table built for it (%" PRIu64 " builds, were %" PRIu64 ")",
	      tl_aips_builds(&h.dev), builds);
	CHECK(atomic_load(&h.dev.dp.table) != t0, "the other copy published");
	CHECK(routed_many(&h, MANY + 1) == MANY + 1, "it routes, and so do the %u others", MANY);
	memset(&op, 0, sizeof(op));
	memcpy(op.pub, cfg.public_key, TL_KEY_LEN);
	op.remove = true;
	CHECK(tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) == 0, "removed again");
	CHECK(tl_aips_builds(&h.dev) == builds, "no table built for the removal");
	CHECK(atomic_load(&h.dev.dp.table) == t0, "the first copy published again");
	CHECK(routed_many(&h, MANY) == MANY && tl_route_lookup(t0, AF_INET, pf.ip.addr) == TL_ROUTE_NONE,
	      "its address has no route, every other peer's has");
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
	test_ctlapi_reports();
	test_uapi_stream();
	test_replace_repeated();
	test_many_peers();
	tl_ch_eal_fini();
	return check_report();
}
