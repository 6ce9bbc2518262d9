/* The crypto stage with several workers (pipeline.h, worker 0 owning the ports and
 * crypto-only workers): a peer's packets leave in arrival order whichever worker sealed or
 * opened them and in whatever order the jobs were done; the replay window stays exact
 * when a later job is opened first; a keypair retired while its packets are being opened
 * is never touched again and its key does not stay in a worker's AEAD context; the owner
 * stops reading when every job is in flight and loses nothing; and real threads taking jobs concurrently keep every packet, in order, counted. */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_malloc.h>

#include "check.h"
#include "dataplane/crypt.h"
#include "dataplane/decap.h"
#include "dataplane/encap.h"
#include "dataplane/queue.h"
#include "pipeline.h"

#define LOCAL_INDEX 0x1001
#define REMOTE_INDEX 0x2001
#define INNER_LEN 200

static const struct tl_endpoint PEER4 = {
	.family = AF_INET, .ip = { 203, 0, 113, 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
static const struct tl_endpoint PEER6 = {
	.family = AF_INET6, .ip = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
static const uint8_t PEER_NET4[4] = { 10, 1, 0, 0 };
static const uint8_t PEER_HOST4[4] = { 10, 1, 0, 5 };
static const uint8_t LAN_HOST4[4] = { 10, 99, 0, 20 };

struct fixture {
	struct tl_pl pl;
	struct tl_peer *peer;
	struct tl_keypair *kp;
	const struct tl_endpoint *ep;
};

static int fixture_up(struct fixture *f, const struct tl_endpoint *ep, unsigned workers)
{
	struct tl_pl_opts o = { .workers = workers };

	f->ep = ep;
	if (tl_pl_setup(&f->pl, &o) != 0)
		return -1;
	f->peer = tl_pl_peer_add(&f->pl, 0, ep);
	f->kp = NULL;
	if (f->peer && tl_pl_route_add(&f->pl, AF_INET, PEER_NET4, 16, 0) == 0 && tl_pl_routes_publish(&f->pl) == 0)
		f->kp = tl_pl_keypair_add(&f->pl, f->peer, LOCAL_INDEX, REMOTE_INDEX);
	if (f->peer && f->kp)
		return 0;
	tl_pl_teardown(&f->pl);
	return -1;
}

/* Inner packet number seq: its bytes depend on seq, so order is checked by content. */
static uint16_t inner(uint8_t *ip, bool to_lan, uint32_t seq)
{
	return to_lan ? tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, INNER_LEN, seq)
		      : tl_pl_ip(ip, AF_INET, LAN_HOST4, PEER_HOST4, INNER_LEN, seq);
}

/* A frame the LAN port sent is inner packet seq. */
static bool lan_frame_is(const struct rte_mbuf *m, uint32_t seq)
{
	uint8_t ip[INNER_LEN];
	uint16_t len = inner(ip, true, seq);

	return m->data_len == TL_ETH_LEN + len && !memcmp(rte_pktmbuf_mtod_offset(m, const uint8_t *, TL_ETH_LEN), ip, len);
}

/* A frame the WAN port sent opens to inner packet seq under counter seq. */
static bool wan_frame_is(struct fixture *f, const struct rte_mbuf *m, uint32_t seq)
{
	uint8_t ip[INNER_LEN], out[1500];
	uint16_t len = inner(ip, false, seq);
	const char *why = "";
	uint64_t ctr = UINT64_MAX;
	int plen = tl_pl_open_data(&f->pl, m, f->ep, f->kp, &ctr, out, sizeof(out), &why);

	return plen >= len && !memcmp(out, ip, len) && ctr == seq;
}

static void inject_wan(struct fixture *f, uint32_t ctr, uint32_t seq)
{
	uint8_t ip[INNER_LEN];
	uint16_t len = inner(ip, true, seq);

	tl_pl_inject(&f->pl, TL_PORT_WAN, tl_pl_wan_data(&f->pl, f->ep, f->kp, ctr, ip, len, NULL));
}

static void inject_lan(struct fixture *f, uint32_t seq)
{
	uint8_t ip[INNER_LEN];
	uint16_t len = inner(ip, false, seq);

	tl_pl_inject(&f->pl, TL_PORT_LAN, tl_pl_lan_frame(&f->pl, ip, len));
}

static struct tl_crypt_job *steal_job(struct fixture *f)
{
	struct tl_crypt_job *j = NULL;

	return rte_ring_mc_dequeue(f->pl.dp.crypto_ring, (void **)&j) == 0 ? j : NULL;
}

/* What the owner's round does with its WAN port, without running any job: one burst into
 * the open job, submitted. Returns the frames read; 0 also when no job is free. */
static unsigned owner_read_wan(struct fixture *f)
{
	struct tl_crypt_job *j = tl_crypt_open(&f->pl.w, TL_DIR_DECAP);
	struct rte_mbuf *pk[TL_JOB_MAX];
	uint16_t k;

	if (!j)
		return 0;
	k = rte_eth_rx_burst(f->pl.dp.port[TL_PORT_WAN].port_id, 0, pk, (uint16_t)(TL_JOB_MAX - j->n));
	f->pl.w.cnt.rx[TL_PORT_WAN] += k;
	tl_decap_burst(&f->pl.w, j, pk, k);
	tl_crypt_submit(&f->pl.w, TL_DIR_DECAP);
	return k;
}

static void give_back(struct fixture *f, struct tl_crypt_job *j)
{
	if (j)
		rte_ring_mp_enqueue(f->pl.dp.crypto_ring, j);
}

/* Two decapsulation jobs (J = TL_JOB_MAX packets each), the second opened first by another
 * worker: nothing leaves until the first is done, then both in arrival order. The second job
 * repeats eight counters of the first: the first's packets are the ones accepted, as in
 * arrival order. */
static void test_decap_order(void)
{
	enum { J = TL_JOB_MAX };
	struct rte_mbuf *m[2 * J];
	struct tl_crypt_job *first;
	struct fixture f;
	unsigned n, ok = 0;

	if (fixture_up(&f, &PEER4, 2) != 0) {
		CHECK(0, "decap order: setup");
		return;
	}
	for (uint32_t i = 0; i < J; i++)
		inject_wan(&f, i, i);
	for (uint32_t i = 0; i < 8; i++)
		inject_wan(&f, i, 1000 + i);              /* replays of counters 0..7 */
	for (uint32_t i = J; i < 2 * J - 8; i++)
		inject_wan(&f, i, i);
	CHECK(owner_read_wan(&f) == J && owner_read_wan(&f) == J, "decap order: jobs not read");
	CHECK(rte_ring_count(f.pl.dp.crypto_ring) == 2, "decap order: %u jobs waiting, expected 2",
	      rte_ring_count(f.pl.dp.crypto_ring));
	first = steal_job(&f);
	CHECK(tl_crypt_work(&f.pl.xw[0], 1) == J, "decap order: second job not run");
	CHECK(tl_decap_finish(&f.pl.w) == 0, "decap order: finished ahead of the first job");
	CHECK(f.pl.w.cnt.inflight[TL_DIR_DECAP] == 2 * J, "decap order: inflight %" PRIu64,
	      f.pl.w.cnt.inflight[TL_DIR_DECAP]);
	CHECK(tl_pl_balanced(&f.pl), "decap order: balance with jobs in flight");
	give_back(&f, first);
	CHECK(tl_crypt_work(&f.pl.xw[0], 1) == J, "decap order: first job not run");
	CHECK(tl_decap_finish(&f.pl.w) == 2 * J, "decap order: not all finished");
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, RTE_DIM(m));
	CHECK(n == 2 * J - 8, "decap order: %u frames on the LAN port, expected %u", n, 2 * J - 8);
	for (unsigned i = 0; i < n && i < 2 * J - 8; i++)
		ok += lan_frame_is(m[i], i);
	CHECK(ok == 2 * J - 8, "decap order: %u of %u frames in place", ok, 2 * J - 8);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_replay, 8), "decap order: drops");
	CHECK(f.pl.xw[0].cnt.crypto_pkts == 2 * J && f.pl.w.cnt.crypto_pkts == 0,
	      "decap order: crypto by the wrong worker (%" PRIu64 " / %" PRIu64 ")", f.pl.xw[0].cnt.crypto_pkts,
	      f.pl.w.cnt.crypto_pkts);
	CHECK(tl_pl_balanced(&f.pl), "decap order: balance");
	tl_pl_teardown(&f.pl);
}

/* Two encapsulation jobs of the WAN queue (J = TL_JOB_MAX packets each), the second sealed
 * first: frames leave with counters 0..2J-1 in order, whichever worker sealed them (IPv4 and
 * IPv6 outer: the IPv6 UDP checksum is made after sealing). */
static void test_encap_order(const struct tl_endpoint *ep)
{
	enum { J = TL_JOB_MAX };
	struct rte_mbuf *m[2 * J];
	struct tl_crypt_job *a;
	struct fixture f;
	unsigned n, ok = 0;

	if (fixture_up(&f, ep, 3) != 0) {
		CHECK(0, "encap order: setup");
		return;
	}
	for (uint32_t i = 0; i < 2 * J; i++)
		inject_lan(&f, i);
	tl_worker_round(&f.pl.w);           /* LAN frames into the WAN queue; no job yet */
	CHECK(tl_aqm_backlog(f.pl.w.eg[TL_PORT_WAN].aqm) == 2 * J, "encap order: queue holds %" PRIu64,
	      tl_aqm_backlog(f.pl.w.eg[TL_PORT_WAN].aqm));
	CHECK(tl_worker_flush(&f.pl.w, TL_PORT_WAN) == 2 * J, "encap order: queue not released into jobs");
	a = steal_job(&f);
	CHECK(tl_crypt_work(&f.pl.xw[1], 1) == J, "encap order: second job not run");
	CHECK(tl_encap_finish(&f.pl.w) == 0, "encap order: sent ahead of the first job");
	CHECK(rte_ring_count(f.pl.tx[TL_PORT_WAN]) == 0, "encap order: frames on the wire early");
	give_back(&f, a);
	CHECK(tl_crypt_work(&f.pl.xw[0], 1) == J, "encap order: first job not run");
	CHECK(tl_encap_finish(&f.pl.w) == 2 * J, "encap order: not all sent");
	n = tl_pl_collect(&f.pl, TL_PORT_WAN, m, RTE_DIM(m));
	CHECK(n == 2 * J, "encap order: %u frames, expected %u", n, 2 * J);
	for (unsigned i = 0; i < n && i < 2 * J; i++)
		ok += wan_frame_is(&f, m[i], i);
	CHECK(ok == 2 * J, "encap order: %u of %u frames in order with their counter", ok, 2 * J);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "encap order: drops");
	CHECK(tl_pl_balanced(&f.pl), "encap order: balance");
	tl_pl_teardown(&f.pl);
}

/* The keypair is deleted and freed while its packets wait to be opened: they are opened
 * with the job's copy of the key and dropped as expired when finished, and nothing reads
 * the freed keypair (ASan). A new keypair under the same index does not take them. */
static void test_retired_in_flight(void)
{
	uint32_t index = LOCAL_INDEX;
	struct fixture f;
	struct tl_keypair *old;

	if (fixture_up(&f, &PEER4, 2) != 0) {
		CHECK(0, "retired: setup");
		return;
	}
	for (uint32_t i = 0; i < 8; i++)
		inject_wan(&f, i, i);
	CHECK(owner_read_wan(&f) == 8, "retired: burst not read");
	old = f.kp;
	atomic_store(&f.peer->current, NULL);
	rte_rcu_qsbr_thread_offline(f.pl.dp.qsbr, 0);   /* the delete waits for a grace period */
	rte_hash_del_key(f.pl.dp.index_table, &index);
	rte_rcu_qsbr_thread_online(f.pl.dp.qsbr, 0);
	for (unsigned i = 0; i < f.pl.n_kps; i++)
		if (f.pl.kps[i] == old)
			f.pl.kps[i] = NULL;
	tl_wipe(old, sizeof(*old));
	rte_free(old);
	atomic_fetch_add(&f.pl.dp.key_gen, 1);   /* as the control plane does on a retirement */
	f.kp = tl_pl_keypair_add(&f.pl, f.peer, LOCAL_INDEX, REMOTE_INDEX + 1);
	CHECK(f.kp != NULL, "retired: new keypair");
	if (f.kp)
		f.kp->birth_ns += 1;     /* another keypair, even at the same address */
	CHECK(tl_crypt_work(&f.pl.xw[0], 4) == 8, "retired: job not run");
	CHECK(!tl_dp_aead_keyed(f.pl.xw[0].aead), "retired: the worker's AEAD context kept the retired key");
	CHECK(tl_decap_finish(&f.pl.w) == 8, "retired: job not finished");
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.tx[TL_PORT_LAN]) == 0, "retired: packets of a retired keypair delivered");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_key_expired, 8), "retired: drops");
	CHECK(f.kp && atomic_load(&f.peer->stats.rx_packets) == 0, "retired: counted as received");
	CHECK(tl_pl_balanced(&f.pl), "retired: balance");
	tl_pl_teardown(&f.pl);
}

/* Every job in flight (nobody runs them): the owner stops reading its WAN port, the frames
 * stay in the port's ring, and the backpressure is counted; they all arrive once the jobs
 * run. */
static void test_backpressure(void)
{
	unsigned cap, total;
	struct rte_mbuf *m[256];
	struct fixture f;
	unsigned got = 0, n, ok = 0;
	uint32_t sent = 0;

	if (fixture_up(&f, &PEER4, 2) != 0) {
		CHECK(0, "backpressure: setup");
		return;
	}
	cap = tl_crypt_inflight_max(&f.pl.dp) * TL_JOB_MAX;   /* every job full */
	total = cap + 100;
	while (sent < total) {
		inject_wan(&f, sent, sent);
		sent++;
	}
	/* the owner reads without running any job */
	while (owner_read_wan(&f))
		;
	CHECK(f.pl.w.cnt.crypto_full[TL_DIR_DECAP] > 0, "backpressure: not counted");
	CHECK(f.pl.w.cnt.inflight[TL_DIR_DECAP] == cap, "backpressure: %" PRIu64 " in flight, expected %u",
	      f.pl.w.cnt.inflight[TL_DIR_DECAP], cap);
	CHECK(rte_ring_count(f.pl.rx[TL_PORT_WAN]) == total - cap, "backpressure: %u left in the port ring, expected %u",
	      rte_ring_count(f.pl.rx[TL_PORT_WAN]), total - cap);
	CHECK(tl_pl_balanced(&f.pl), "backpressure: balance while stopped");
	while (got < total) {
		unsigned before = got;

		tl_crypt_work(&f.pl.xw[0], TL_JOBS_PER_OWNER);
		tl_pl_run(&f.pl);
		while ((n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, RTE_DIM(m))) > 0) {
			for (unsigned i = 0; i < n; i++) {
				ok += lan_frame_is(m[i], got + i);
				rte_pktmbuf_free(m[i]);
			}
			got += n;
		}
		if (got == before)
			break;
	}
	CHECK(got == total && ok == total, "backpressure: %u delivered (%u in order) of %u", got, ok, total);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "backpressure: drops");
	CHECK(tl_pl_balanced(&f.pl), "backpressure: balance");
	tl_pl_teardown(&f.pl);
}

/* ---- real threads ------------------------------------------------------------------------ */

/* A job the owner takes off the shared ring once half of each way is sent and gives back
 * after this many more rounds: a worker descheduled in the middle of a job on a loaded
 * machine holds it as long, and the owner has to wait for it, whatever its rounds find to
 * do meanwhile. */
#define STALL_ROUNDS 300000u

struct crypto_thread {
	struct tl_worker *w;
	_Atomic bool *stop;
};

static void *crypto_loop(void *arg)
{
	struct crypto_thread *c = arg;

	while (!atomic_load(c->stop))
		if (!tl_crypt_work(c->w, 4))
			sched_yield();
	return NULL;
}

/* Nothing left that could still arrive: all sent, nothing unread in the RX rings, nothing
 * in an egress queue, a crypto job or held (the balance's queued terms), the hold over. */
static bool threads_quiet(struct fixture *f, uint32_t sent_w, uint32_t sent_l, uint32_t total, bool stalled)
{
	struct tl_port_balance b[TL_PORT_MAX];

	if (sent_w < total || sent_l < total || !stalled || !rte_ring_empty(f->pl.rx[TL_PORT_WAN]) ||
	    !rte_ring_empty(f->pl.rx[TL_PORT_LAN]) || tl_crypt_busy(&f->pl.w))
		return false;
	tl_pl_balance(&f->pl, b);
	return b[TL_PORT_WAN].queued == 0 && b[TL_PORT_LAN].queued == 0;
}

/* The owner on this thread, two crypto-only workers on their own threads, traffic both
 * ways at once, one job held back for a long while: every packet arrives, in
 * order, and the balance closes. The loop ends when every packet arrived or nothing is
 * left in flight; the owner's clock stays where setup put it, so that the AQM's sojourn
 * times (CoDel drops) do not depend on how the machine schedules the threads. */
static void test_threads(void)
{
	const uint32_t total = 6000;
	const uint64_t hang_ns = 60ull * 1000000000ull;   /* against a hang only */
	_Atomic bool stop = false;
	struct tl_crypt_job *held = NULL;
	uint64_t rounds = 0, held_from = 0;
	bool stalled = false;
	struct crypto_thread ct[2];
	pthread_t th[2];
	struct fixture f;
	uint32_t sent_w = 0, sent_l = 0, got_w = 0, got_l = 0, ok_w = 0, ok_l = 0;
	struct rte_mbuf *m[256];
	uint64_t last_ns = tl_now_ns();
	bool hang = false;
	unsigned n;

	if (fixture_up(&f, &PEER4, 3) != 0) {
		CHECK(0, "threads: setup");
		return;
	}
	for (int i = 0; i < 2; i++) {
		ct[i] = (struct crypto_thread){ &f.pl.xw[i], &stop };
		pthread_create(&th[i], NULL, crypto_loop, &ct[i]);
	}
	while (got_w < total || got_l < total) {
		while (sent_w < total && rte_ring_count(f.pl.rx[TL_PORT_WAN]) < 512)
			inject_wan(&f, sent_w, sent_w), sent_w++;
		while (sent_l < total && rte_ring_count(f.pl.rx[TL_PORT_LAN]) < 512)
			inject_lan(&f, sent_l), sent_l++;
		if (!stalled && !held && sent_w >= total / 2 && sent_l >= total / 2 && owner_read_wan(&f))
			held = steal_job(&f), held_from = rounds;
		if (held && rounds - held_from >= STALL_ROUNDS) {
			give_back(&f, held);
			held = NULL;
			stalled = true;
		}
		tl_worker_round(&f.pl.w);
		rounds++;
		while ((n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, RTE_DIM(m))) > 0) {
			for (unsigned i = 0; i < n; i++) {
				ok_l += lan_frame_is(m[i], got_l + i);
				rte_pktmbuf_free(m[i]);
			}
			got_l += n;
			last_ns = tl_now_ns();
		}
		while ((n = tl_pl_collect(&f.pl, TL_PORT_WAN, m, RTE_DIM(m))) > 0) {
			for (unsigned i = 0; i < n; i++) {
				ok_w += wan_frame_is(&f, m[i], got_w + i);
				rte_pktmbuf_free(m[i]);
			}
			got_w += n;
			last_ns = tl_now_ns();
		}
		if (threads_quiet(&f, sent_w, sent_l, total, stalled))
			break;
		if ((rounds & 0xfff) == 0 && tl_now_ns() - last_ns > hang_ns) {
			hang = true;
			break;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK(!hang, "threads: hang: nothing arrived for 60 s with %u + %u of %u sent, %u + %u arrived", sent_w,
	      sent_l, total, got_w, got_l);
	CHECK(stalled, "threads: no job was held");
	CHECK(got_l == total && ok_l == total, "threads: WAN->LAN %u delivered, %u in order, of %u", got_l, ok_l, total);
	CHECK(got_w == total && ok_w == total, "threads: LAN->WAN %u sent, %u in order, of %u", got_w, ok_w, total);
	CHECK(f.pl.xw[0].cnt.crypto_pkts + f.pl.xw[1].cnt.crypto_pkts + f.pl.w.cnt.crypto_pkts == 2 * total,
	      "threads: crypto packets %" PRIu64 " + %" PRIu64 " + %" PRIu64, f.pl.xw[0].cnt.crypto_pkts,
	      f.pl.xw[1].cnt.crypto_pkts, f.pl.w.cnt.crypto_pkts);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "threads: drops");
	CHECK(tl_pl_balanced(&f.pl), "threads: balance");
	printf("threads: crypto packets by worker: owner %" PRIu64 ", w1 %" PRIu64 ", w2 %" PRIu64 "\n",
	       f.pl.w.cnt.crypto_pkts, f.pl.xw[0].cnt.crypto_pkts, f.pl.xw[1].cnt.crypto_pkts);
	tl_pl_teardown(&f.pl);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	test_decap_order();
	test_encap_order(&PEER4);
	test_encap_order(&PEER6);
	test_retired_in_flight();
	test_backpressure();
	test_threads();
	tl_pl_eal_fini();
	return check_report();
}
