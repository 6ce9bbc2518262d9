/* The worker paces a shaped queue by sleeping to its next send slot, not by yielding: the
 * real worker loop (tl_worker_main) on its own thread, the pipeline's ports (pipeline.h),
 * the LAN queue shaped to 20 Mbit/s (a 1438-byte frame every 575 us) and 1000 packets from
 * the peer waiting in it. While they leave, the worker's thread is seen asleep (state S in
 * /proc/self/task/<tid>/stat); a thread that yields stays runnable (R). Every packet
 * arrives, in order, and the worker counts its sleeps. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_ether.h>

#include "check.h"
#include "dataplane/worker.h"
#include "pipeline.h"

#define N_PKTS 1000
#define RATE 20000000ull

static const struct tl_endpoint PEER4 = {
	.family = AF_INET, .ip = { 203, 0, 113, 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
static const uint8_t PEER_NET4[4] = { 10, 1, 0, 0 };
static const uint8_t PEER_HOST4[4] = { 10, 1, 0, 5 };
static const uint8_t LAN_HOST4[4] = { 10, 99, 0, 20 };

struct runner {
	struct tl_worker *w;
	_Atomic pid_t tid;
};

static void *run_worker(void *arg)
{
	struct runner *r = arg;

	atomic_store(&r->tid, (pid_t)syscall(SYS_gettid));
	tl_worker_main(r->w);
	return NULL;
}

/* The scheduler state of thread tid ('R', 'S', ...), or 0. */
static char thread_state(pid_t tid)
{
	char path[64], line[256], *paren;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	paren = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return paren && paren[1] == ' ' ? paren[2] : 0;
}

static void test_pacing_sleeps(void)
{
	struct tl_pl pl;
	struct tl_peer *peer;
	struct tl_keypair *kp = NULL;
	struct tl_shaper_params sh = { .rate_bps = RATE };
	struct tl_aqm_params aqm = tl_aqm_params_default();
	struct runner r = { .w = &pl.w };
	struct timespec pause = { 0, 200000 };
	struct rte_mbuf *m[256];
	unsigned asleep = 0, samples = 0, got = 0, in_order = 0, n;
	pthread_t th;
	const char *err;

	if (tl_pl_setup(&pl, NULL) != 0) {
		CHECK(0, "pacing: setup");
		return;
	}
	peer = tl_pl_peer_add(&pl, 0, &PEER4);
	if (peer && tl_pl_route_add(&pl, AF_INET, PEER_NET4, 16, 0) == 0 && tl_pl_routes_publish(&pl) == 0)
		kp = tl_pl_keypair_add(&pl, peer, 0x1001, 0x2001);
	aqm.target_us = 2000000;   /* the 0.6 s the queue holds is not to be dropped here */
	aqm.interval_us = 4000000;
	err = tl_worker_queue_set(&pl.w, TL_PORT_LAN, &aqm, &sh);
	if (!kp || err) {
		CHECK(0, "pacing: peer, keypair, shaper (%s)", err ? err : "");
		tl_pl_teardown(&pl);
		return;
	}
	for (uint32_t i = 0; i < N_PKTS; i++) {
		uint8_t ip[1400];
		uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, sizeof(ip), i);

		tl_pl_inject(&pl, TL_PORT_WAN, tl_pl_wan_data(&pl, &PEER4, kp, i, ip, len, NULL));
	}
	rte_rcu_qsbr_thread_offline(pl.dp.qsbr, 0);   /* the worker's thread takes id 0 */
	pthread_create(&th, NULL, run_worker, &r);
	while (!atomic_load(&r.tid))
		nanosleep(&pause, NULL);
	/* Sample the worker's state while the queue drains (about 0.6 s at the rate). */
	while (rte_ring_count(pl.tx[TL_PORT_LAN]) < N_PKTS && samples < 100000) {
		asleep += thread_state(atomic_load(&r.tid)) == 'S';
		samples++;
		nanosleep(&pause, NULL);
	}
	pl.dp.stop = true;
	pthread_join(th, NULL);
	pl.online = false;                             /* tl_worker_main unregistered id 0 */
	while ((n = tl_pl_collect(&pl, TL_PORT_LAN, m, RTE_DIM(m))) > 0) {
		for (unsigned i = 0; i < n; i++) {
			uint8_t ip[1400];

			tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, sizeof(ip), got + i);
			in_order += m[i]->data_len == RTE_ETHER_HDR_LEN + sizeof(ip) &&
				    !memcmp(rte_pktmbuf_mtod_offset(m[i], uint8_t *, RTE_ETHER_HDR_LEN), ip, sizeof(ip));
			rte_pktmbuf_free(m[i]);
		}
		got += n;
	}
	CHECK(got == N_PKTS && in_order == N_PKTS, "pacing: %u of %u delivered, %u in order", got, N_PKTS, in_order);
	CHECK(asleep > 0, "pacing: the worker seen asleep in %u of %u looks while the shaper held its queue back",
	      asleep, samples);
	CHECK(pl.w.cnt.shaper_sleeps > 0, "pacing: shaper_sleeps %" PRIu64, pl.w.cnt.shaper_sleeps);
	tl_pl_teardown(&pl);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	test_pacing_sleeps();
	tl_pl_eal_fini();
	return check_report();
}
