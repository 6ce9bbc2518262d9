/* The control plane at hub scale, without a network (docs/results/peers.md): a device as the
 * daemon builds it (tests/unit/harness/ctrl_harness.h), driven through the write model.
 *
 *   tl-ctrl-peers-bench load N [AIPS]   N peers with AIPS /32 each (default 1) in 10.128.0.0/9
 *                                       by one request; one more added and removed; all
 *                                       replaced (replace_peers); a session each; all
 *                                       replaced again; 200 timer ticks; teardown. Worker 0
 *                                       runs on a thread, online in the RCU state and
 *                                       reporting once a millisecond (tl_ch_worker_start), so
 *                                       that grace periods cost what they do under load
 *   tl-ctrl-peers-bench handshakes N [T]  N distinct initiators' initiations through the
 *                                       handshake ring, consumed and answered by the control
 *                                       thread's poll (tl_handshake_poll, batches of up to 32)
 *                                       with T handshake threads beside it (default as the
 *                                       daemon's auto: every CPU but one)
 *
 * Prints one line per step: seconds (or ms), the routing table's whole builds, RSS, the RCU
 * grace periods a replace began. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>

#include "common/parfor.h"
#include "crypto/primitives.h"
#include "ctrl/aips.h"
#include "ctrl/handshake.h"
#include "ctrl/peer_ops.h"
#include "ctrl/session.h"
#include "ctrl_harness.h"
#include "dataplane/runtime.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

/* A session on every peer, as a completed handshake installs it. */
static int sessions(struct tl_ch *h)
{
	struct tl_peer_ctrl *pc;

	TAILQ_FOREACH(pc, &h->dev.peers, link) {
		struct tl_session_keys k = { .initiator = true, .remote_index = tl_random_u32() };
		int r;

		tl_random(k.send, sizeof(k.send));
		tl_random(k.recv, sizeof(k.recv));
		k.local_index = tl_index_new(&h->dev, pc, true);
		r = k.local_index ? tl_session_install(&h->dev, pc, &k, h->now) : -1;
		tl_wipe(&k, sizeof(k));
		if (r)
			return 1;
	}
	return 0;
}

static int load(struct tl_ch *h, uint32_t n, uint32_t per)
{
	struct tl_peer_op *ops = calloc(n + 1, sizeof(*ops));
	struct tl_prefix *pf = calloc((size_t)(n + 1) * per, sizeof(*pf));
	long rss0 = rss_kb();
	double t0;
	int r;

	if (!ops || !pf)
		return 1;
	for (uint32_t i = 0; i <= n; i++) {
		memset(ops[i].pub, 0x5a, TL_KEY_LEN);
		memcpy(ops[i].pub, &i, sizeof(i));
		for (uint32_t j = 0; j < per; j++) {
			uint32_t k = i * per + j;
			struct tl_prefix *q = &pf[k];

			q->ip.family = AF_INET;
			q->len = 32;
			q->ip.addr[0] = 10;
			q->ip.addr[1] = (uint8_t)(128 + (k >> 16));
			q->ip.addr[2] = (uint8_t)(k >> 8);
			q->ip.addr[3] = (uint8_t)k;
		}
		ops[i].aips = &pf[(size_t)i * per];
		ops[i].n_aips = per;
		ops[i].replace_aips = true;
	}
	t0 = now();
	r = tl_peer_ops_apply(&h->dev, ops, n, NULL, false);
	printf("load %u peers with %u /32 each: %s, %.3f s, RSS +%ld kB\n", n, per, r ? "failed" : "ok", now() - t0,
	       rss_kb() - rss0);
	uint64_t builds = tl_aips_builds(&h->dev);
	t0 = now();
	r = tl_peer_ops_apply(&h->dev, &ops[n], 1, NULL, false);
	printf("add one: %s, %.3f ms\n", r ? "failed" : "ok", (now() - t0) * 1e3);
	ops[n].remove = true;
	t0 = now();
	r = tl_peer_ops_apply(&h->dev, &ops[n], 1, NULL, false);
	printf("remove it: %s, %.3f ms\n", r ? "failed" : "ok", (now() - t0) * 1e3);
	printf("routing table copies built whole by the add and the remove: %llu\n",
	       (unsigned long long)(tl_aips_builds(&h->dev) - builds));
	ops[n].remove = false;
	uint64_t gp = tl_ch_grace_periods(h);
	t0 = now();
	r = tl_peer_ops_apply(&h->dev, ops, n + 1, NULL, true);
	printf("replace all %u: %s, %.3f s, %llu grace periods\n", n + 1, r ? "failed" : "ok", now() - t0,
	       (unsigned long long)(tl_ch_grace_periods(h) - gp));
	t0 = now();
	if (!r)
		r = sessions(h);
	printf("a session each: %s, %.3f s\n", r ? "failed" : "ok", now() - t0);
	for (uint32_t i = 0; i <= n; i++)
		ops[i].pub[TL_KEY_LEN - 1] ^= 1;         /* other keys */
	gp = tl_ch_grace_periods(h);
	t0 = now();
	if (!r)
		r = tl_peer_ops_apply(&h->dev, ops, n + 1, NULL, true);
	printf("replace all %u with a session each: %s, %.3f s, %llu grace periods\n", n + 1, r ? "failed" : "ok",
	       now() - t0, (unsigned long long)(tl_ch_grace_periods(h) - gp));
	t0 = now();
	for (int k = 0; k < 200; k++)
		tl_ch_tick(h);
	printf("200 timer ticks: %.3f ms\n", (now() - t0) * 1e3);
	free(ops);
	free(pf);
	return r;
}

static int handshakes(struct tl_ch *h, uint32_t n, unsigned threads)
{
	struct tl_ch_remote *r = calloc(n, sizeof(*r));
	struct tl_msg_initiation *init = calloc(n, sizeof(*init));
	uint64_t before = h->dev.handshakes_received;
	uint32_t next = 0;
	double t0;

	if (!r || !init)
		return 1;
	tl_parfor_free(h->dev.hs_pool);
	h->dev.hs_pool = tl_parfor_new(threads, &h->dev.cpus);
	if (!h->dev.hs_pool)
		return 1;
	for (uint32_t i = 0; i < n; i++) {
		if (!tl_ch_peer_add(h, &r[i], (uint8_t)(i % 250 + 1)) || tl_ch_remote_initiation(h, &r[i], &init[i]))
			return 1;
	}
	t0 = now();
	/* The workers' side: the ring filled as far as it goes (under the under-load mark, so
	 * that no mac2 is asked for: these are the handshakes of a restart, not a flood). */
	while (next < n || rte_ring_count(h->dev.dp.hs_ring)) {
		while (next < n && rte_ring_count(h->dev.dp.hs_ring) < rte_ring_get_capacity(h->dev.dp.hs_ring) / 16) {
			struct rte_mbuf *m = tl_ch_hs_msg(h, &r[next], &init[next], sizeof(init[next]));

			if (m && rte_ring_enqueue(h->dev.dp.hs_ring, m) != 0)
				rte_pktmbuf_free(m);
			next++;
		}
		tl_handshake_poll(&h->dev, h->now);
		tl_ch_discard(h);
	}
	printf("%u initiations consumed and answered: %llu completed, %.0f per second (control thread + %u "
	       "handshake threads)\n", n, (unsigned long long)(h->dev.handshakes_received - before),
	       (double)(h->dev.handshakes_received - before) / (now() - t0), tl_parfor_helpers(h->dev.hs_pool));
	free(r);
	free(init);
	return 0;
}

int main(int argc, char **argv)
{
	char prefix[64], dir[4096];
	char *eal[] = { argv[0], "--no-huge", "-m", "3072", "--no-pci", "--no-shconf", "--no-telemetry",
			"--file-prefix", prefix, "--log-level", "lib.eal:error", NULL };
	struct tl_ch h;
	double t0;
	int rc;

	if (argc < 3 || (strcmp(argv[1], "load") && strcmp(argv[1], "handshakes"))) {
		fprintf(stderr, "usage: %s load N [AIPS] | handshakes N [THREADS]\n", argv[0]);
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "tl_ctrl_peers_%d", (int)getpid());
	tl_ch_save_cpus();
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0 || tl_crypto_init() != 0)
		return 1;
	tl_runtime_dir_save(dir, sizeof(dir));
	if (tl_ch_setup(&h) != 0)
		return 1;
	if (!strcmp(argv[1], "load")) {
		rc = tl_ch_worker_start(&h, NULL, 0) ? 1
						      : load(&h, (uint32_t)atoi(argv[2]), argc > 3 ? (uint32_t)atoi(argv[3]) : 1);
		tl_ch_worker_stop(&h);
	} else
		rc = handshakes(&h, (uint32_t)atoi(argv[2]),
				argc > 3 ? (unsigned)atoi(argv[3]) : (unsigned)CPU_COUNT(&h.dev.cpus) - 1);
	t0 = now();
	tl_ch_teardown(&h);
	printf("teardown (every peer wiped and freed): %.3f s\n", now() - t0);
	rte_eal_cleanup();
	tl_runtime_dir_remove(dir);
	return rc;
}
