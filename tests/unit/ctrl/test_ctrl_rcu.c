/* Retiring many keypairs costs one RCU grace period, not one each. A hub of 10 000 peers with
 * a session each, worker 0 on its own thread, online and reporting a quiescent state once a
 * round (every millisecond, as a worker under load does), so that no grace period is free:
 * replacing every peer (replace_peers, as `wg setconf` does), a private-key change (every
 * peer's sessions dropped) and a timer tick that finds its keypairs expired each begin a
 * handful of grace periods, counted on the RCU state (its token), whatever the number of
 * keypairs they retire. Every retired keypair is wiped and freed, and only after its grace
 * period: the worker, looking each index up every round, never finds one wiped. */
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/session.h"
#include "ctrl_harness.h"

#define N 10000u
/* Grace periods a request may begin besides its keypairs' batch: the routing table's publish,
 * the peer map's growth (new peers' ids beside the old ones), the removal of peers. */
#define REQUEST_GP 3u

static uint64_t reclaimed, reclaimed_wiped;

static void on_reclaim(const struct tl_keypair *kp)
{
	reclaimed++;
	reclaimed_wiped += tl_is_zero(kp, sizeof(*kp));
}

/* N peer additions, keys numbered from base, one /32 each. */
static struct tl_peer_op *ops_new(uint32_t base, struct tl_prefix **pf)
{
	struct tl_peer_op *ops = calloc(N, sizeof(*ops));

	*pf = calloc(N, sizeof(**pf));
	if (!ops || !*pf) {
		free(ops);
		free(*pf);
		return NULL;
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t k = base + i;

		memset(ops[i].pub, 0x6b, TL_KEY_LEN);
		memcpy(ops[i].pub, &k, sizeof(k));
		(*pf)[i].ip.family = AF_INET;
		(*pf)[i].len = 32;
		(*pf)[i].ip.addr[0] = 10;
		(*pf)[i].ip.addr[1] = (uint8_t)(128 + (k >> 16));
		(*pf)[i].ip.addr[2] = (uint8_t)(k >> 8);
		(*pf)[i].ip.addr[3] = (uint8_t)k;
		ops[i].aips = &(*pf)[i];
		ops[i].n_aips = 1;
		ops[i].replace_aips = true;
	}
	return ops;
}

/* N peers by one request, then a session each (as a completed handshake installs it): the
 * sessions' indices in idx. */
static bool hub(struct tl_ch *h, uint32_t *idx)
{
	struct tl_prefix *pf;
	struct tl_peer_op *ops = ops_new(0, &pf);
	struct tl_peer_ctrl *pc;
	uint32_t n = 0;
	bool ok = ops && tl_peer_ops_apply(&h->dev, ops, N, NULL, false) == 0;

	free(ops);
	free(pf);
	TAILQ_FOREACH(pc, &h->dev.peers, link) {
		struct tl_session_keys k = { .initiator = true, .remote_index = tl_random_u32() };

		if (!ok || n == N)
			return false;
		tl_random(k.send, sizeof(k.send));
		tl_random(k.recv, sizeof(k.recv));
		k.local_index = tl_index_new(&h->dev, pc, true);
		ok = k.local_index && tl_session_install(&h->dev, pc, &k, h->now) == 0;
		tl_wipe(&k, sizeof(k));
		idx[n++] = atomic_load(&pc->dp->current) ? atomic_load(&pc->dp->current)->local_index : 0;
	}
	return ok && n == N;
}

static bool setup(struct tl_ch *h, uint32_t *idx)
{
	if (tl_ch_setup(h) != 0 || !hub(h, idx) || tl_ch_worker_start(h, idx, N) != 0)
		return false;
	reclaimed = reclaimed_wiped = 0;
	return true;
}

/* Ticks until every session's keypair is reclaimed (a tick polls the retirement); at most
 * 10 s, a bound that is no part of the check. */
static void tick_until_reclaimed(struct tl_ch *h)
{
	const struct timespec ms = { .tv_nsec = 1000000 };

	for (int i = 0; i < 10000 && reclaimed < N; i++) {
		tl_ch_tick(h);
		nanosleep(&ms, NULL);
	}
}

static void finish(struct tl_ch *h, const char *what)
{
	uint64_t wiped = tl_ch_worker_stop(h);

	CHECK(reclaimed == N && reclaimed_wiped == N, "%s: retired keypairs wiped and freed: %llu of %u (%llu wiped)",
	      what, (unsigned long long)reclaimed, N, (unsigned long long)reclaimed_wiped);
	CHECK(rte_hash_count(tl_dp_index(&h->dev.dp)) == 0, "%s: the index table's slots are free again (%d taken)",
	      what, rte_hash_count(tl_dp_index(&h->dev.dp)));
	CHECK(wiped == 0, "%s: the worker found %llu keypairs wiped before their grace period ended", what,
	      (unsigned long long)wiped);
	tl_ch_teardown(h);
}

static void test_replace(uint32_t *idx)
{
	struct tl_ch h;
	struct tl_prefix *pf;
	struct tl_peer_op *ops = ops_new(N, &pf);
	uint64_t g0, rounds0;

	CHECK(ops && setup(&h, idx), "replace: %u peers with a session each", N);
	g0 = tl_ch_grace_periods(&h);
	rounds0 = tl_ch_worker_rounds(&h);
	CHECK(ops && tl_peer_ops_apply(&h.dev, ops, N, NULL, true) == 0, "replace: applied");
	printf("replace %u peers with sessions: %llu grace periods\n", N,
	       (unsigned long long)(tl_ch_grace_periods(&h) - g0));
	CHECK(tl_ch_grace_periods(&h) - g0 <= REQUEST_GP,
	      "replace: replacing %u peers with sessions began %llu grace periods (at most %u, whatever the number)",
	      N, (unsigned long long)(tl_ch_grace_periods(&h) - g0), REQUEST_GP);
	CHECK(tl_ch_worker_rounds(&h) > rounds0, "replace: the worker ran meanwhile (grace periods waited for it)");
	CHECK(h.dev.n_peers == N, "replace: %u peers after (%u)", N, h.dev.n_peers);
	free(ops);
	free(pf);
	finish(&h, "replace");
}

static void test_private_key(uint32_t *idx)
{
	struct tl_ch h;
	uint8_t priv[TL_KEY_LEN];
	uint64_t g0;

	CHECK(setup(&h, idx), "private key: %u peers with a session each", N);
	tl_random(priv, sizeof(priv));
	g0 = tl_ch_grace_periods(&h);
	CHECK(tl_peer_ops_apply(&h.dev, NULL, 0, priv, false) == 0, "private key: changed");
	tick_until_reclaimed(&h);
	printf("private key change, %u peers with sessions: %llu grace periods\n", N,
	       (unsigned long long)(tl_ch_grace_periods(&h) - g0));
	/* the routing table's publish, and the batch */
	CHECK(tl_ch_grace_periods(&h) - g0 <= 2,
	      "private key: dropping %u peers' sessions began %llu grace periods (at most 2, whatever the number)", N,
	      (unsigned long long)(tl_ch_grace_periods(&h) - g0));
	finish(&h, "private key");
}

static void test_expiry(uint32_t *idx)
{
	struct tl_ch h;
	struct tl_peer_ctrl *pc;
	uint64_t g0;
	uint32_t expired = 0;

	CHECK(setup(&h, idx), "expiry: %u peers with a session each", N);
	h.now += 180 * TL_NS;                  /* REJECT_AFTER_TIME: every session expired */
	g0 = tl_ch_grace_periods(&h);
	tl_ch_tick(&h);
	TAILQ_FOREACH(pc, &h.dev.peers, link)
		expired += atomic_load(&pc->dp->current) == NULL;
	printf("one tick, %u keypairs expired: %llu grace periods\n", expired,
	       (unsigned long long)(tl_ch_grace_periods(&h) - g0));
	CHECK(expired >= 2048, "expiry: one tick retired %u keypairs (its budget: 2048 peers)", expired);
	CHECK(tl_ch_grace_periods(&h) - g0 <= 1, "expiry: one tick retiring %u keypairs began %llu grace periods (at most 1)",
	      expired, (unsigned long long)(tl_ch_grace_periods(&h) - g0));
	tick_until_reclaimed(&h);
	finish(&h, "expiry");
}

int main(int argc, char **argv)
{
	uint32_t *idx = calloc(N, sizeof(*idx));

	(void)argc;
	if (!idx || tl_ch_eal_init(argv[0]) != 0)
		return 1;
	tl_keypair_reclaim_test_hook = on_reclaim;
	test_replace(idx);
	test_private_key(idx);
	test_expiry(idx);
	tl_ch_eal_fini();
	free(idx);
	return check_report();
}
