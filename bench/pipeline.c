/* The dataplane with the kernel taken out: one tunnel through the real worker code (queue
 * owner, crypto stage, in-order finish, egress queues) over DPDK net_ring ports, with W
 * workers (worker 0 owns the ports on this thread, workers 1.. take crypto jobs on their own
 * threads), and the raw one-core ChaCha20-Poly1305 rate of the same AEAD in the same run.
 *
 * Each case pre-builds its input (decap: data messages sealed by the peer with counters
 * 0..N-1; encap: LAN frames to the peer's allowed IPs), then times from the first frame put
 * into the RX ring to the last one taken from the TX ring. At most WINDOW frames are inside
 * the dataplane at a time (a closed loop, so that the egress queue stays below the AQM's
 * target and nothing is dropped). Frames are copied into mbufs 4096 at a time between
 * timed stretches (as a NIC's DMA would not cost the worker); putting them into the RX ring,
 * taking them from the TX ring, checking and freeing them are timed. Every case checks that all N came out, in order (decap: the inner IPv4 ids; encap:
 * the WireGuard counters), with no drop; a case that fails exits non-zero.
 *
 * Beside the wall-clock rate each case reports its rate over the owner thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), and the raw AEAD is timed on CPU time too: on a machine whose
 * cores are shared, the CPU-time ratio of W = 1 to the raw AEAD does not move with the
 * time the scheduler gives other tasks (with W > 1 the owner's CPU time is not the case's
 * cost, so only W = 1 has it in the table).
 *
 * With TL_BENCH_PERF_CTL and TL_BENCH_PERF_ACK naming the FIFOs of
 * `perf record -D -1 --control fifo:CTL,ACK`, perf samples only the timed stretches (the
 * input built outside them is not in the profile).
 *
 *   tl-pipeline-bench [--packets N] [--sizes 64,512,1420] [--workers 1,2,...] [--dirs encap,decap] [--json]
 *
 * Built with the unit tests' pipeline harness (tests/unit/harness/pipeline.h); run by bench/pipeline.sh. */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "crypto/messages.h"
#include "crypto/primitives.h"
#include "dataplane/crypt.h"
#include "pipeline.h"

#define LOCAL_INDEX 0x1001
#define REMOTE_INDEX 0x2001
#define WINDOW 1024            /* frames in the dataplane at most (sent, not yet out) */
#define CHUNK 4096             /* frames copied into mbufs ahead of a timed stretch */
#define MAX_CASES 64

static const struct tl_endpoint PEER = {
	.family = AF_INET, .ip = { 203, 0, 113, 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
static const uint8_t PEER_NET4[4] = { 10, 1, 0, 0 };
static const uint8_t PEER_HOST4[4] = { 10, 1, 0, 5 };
static const uint8_t LAN_HOST4[4] = { 10, 99, 0, 20 };

struct result {
	int dir;
	unsigned size, workers;
	double mpps, gbps;
	double cpu_gbps;       /* over the owner thread's CPU time */
	double owner_share;    /* of the packets sealed or opened, the owner's part */
};

struct store {
	uint8_t *buf;
	uint16_t *len;
	size_t stride;
	unsigned n;
};

struct crypto_thread {
	struct tl_worker *w;
	_Atomic bool *stop;
};

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static double cpu_s(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* perf's control FIFOs (see the top), or NULL. */
static FILE *perf_ctl, *perf_ack;

static void perf_open(void)
{
	const char *ctl = getenv("TL_BENCH_PERF_CTL"), *ack = getenv("TL_BENCH_PERF_ACK");

	if (!ctl || !ack)
		return;
	perf_ctl = fopen(ctl, "w");
	perf_ack = fopen(ack, "r");
	if (!perf_ctl || !perf_ack) {
		perror("tl-pipeline-bench: perf control FIFOs");
		exit(1);
	}
}

/* Sampling on or off; waits for perf's answer. */
static void perf_set(bool on)
{
	char ack[16];

	if (!perf_ctl)
		return;
	fputs(on ? "enable\n" : "disable\n", perf_ctl);
	fflush(perf_ctl);
	if (!fgets(ack, sizeof(ack), perf_ack)) {
		fprintf(stderr, "tl-pipeline-bench: perf control: no answer\n");
		exit(1);
	}
}

static void *crypto_loop(void *arg)
{
	struct crypto_thread *c = arg;

	while (!atomic_load_explicit(c->stop, memory_order_relaxed))
		if (!tl_crypt_work(c->w, 4))
			sched_yield();
	return NULL;
}

/* Inner IPv4/UDP packet of size bytes, its IP id the low 16 bits of seq. */
static uint16_t inner(uint8_t *ip, bool to_lan, unsigned size, uint32_t seq)
{
	struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;
	uint16_t len = to_lan ? tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, (uint16_t)size, seq)
			      : tl_pl_ip(ip, AF_INET, LAN_HOST4, PEER_HOST4, (uint16_t)size, seq);

	h->packet_id = rte_cpu_to_be_16((uint16_t)seq);
	h->hdr_checksum = 0;
	h->hdr_checksum = rte_ipv4_cksum(h);
	return len;
}

static int store_build(struct tl_pl *pl, struct tl_keypair *kp, int dir, unsigned size, unsigned n, struct store *s)
{
	uint8_t ip[2048];

	s->stride = size + 128;
	s->n = n;
	s->buf = malloc(s->stride * n);
	s->len = malloc(sizeof(*s->len) * n);
	if (!s->buf || !s->len)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint16_t len = inner(ip, dir == TL_DIR_DECAP, size, i);
		struct rte_mbuf *m = dir == TL_DIR_DECAP ? tl_pl_wan_data(pl, &PEER, kp, i, ip, len, NULL)
						       : tl_pl_lan_frame(pl, ip, len);

		if (!m || m->data_len > s->stride)
			return -1;
		memcpy(s->buf + s->stride * i, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);
		s->len[i] = m->data_len;
		rte_pktmbuf_free(m);
	}
	return 0;
}

static void store_free(struct store *s)
{
	free(s->buf);
	free(s->len);
}

/* The IP id of a frame the LAN port sent (decap), or the counter of a data message the WAN
 * port sent (encap); UINT64_MAX if the frame is not what it should be. */
static uint64_t frame_seq(const struct rte_mbuf *m, int dir)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (dir == TL_DIR_DECAP) {
		if (m->data_len < TL_ETH_LEN + 20)
			return UINT64_MAX;
		return rte_be_to_cpu_16(((const struct rte_ipv4_hdr *)(p + TL_ETH_LEN))->packet_id);
	}
	if (m->data_len < TL_ETH_LEN + 28 + sizeof(struct tl_msg_data))
		return UINT64_MAX;
	return rte_le_to_cpu_64(((const struct tl_msg_data *)(p + TL_ETH_LEN + 28))->counter);
}

/* One case. 0 and *r filled, or -1 (reason printed). */
static int run_case(int dir, unsigned size, unsigned workers, unsigned n, struct result *r)
{
	struct tl_pl_opts o = { .workers = workers, .aqm_limit = 4 * WINDOW };
	struct crypto_thread ct[TL_PL_MAX_WORKERS];
	pthread_t th[TL_PL_MAX_WORKERS];
	_Atomic bool stop = false;
	struct tl_pl pl;
	struct tl_peer *peer;
	struct tl_keypair *kp = NULL;
	struct store s = { 0 };
	struct rte_mbuf *m[256];
	int in = dir == TL_DIR_DECAP ? TL_PORT_WAN : TL_PORT_LAN, out = in == TL_PORT_WAN ? TL_PORT_LAN : TL_PORT_WAN;
	unsigned sent = 0, got = 0, bad = 0, idle = 0, k;
	static struct rte_mbuf *chunk[CHUNK];
	double t0, c0, elapsed = 0, cpu = 0;
	int rc = -1;

	if (tl_pl_setup(&pl, &o) != 0)
		return -1;
	peer = tl_pl_peer_add(&pl, 0, &PEER);
	if (peer && tl_pl_route_add(&pl, AF_INET, PEER_NET4, 16, 0) == 0 && tl_pl_routes_publish(&pl) == 0)
		kp = tl_pl_keypair_add(&pl, peer, LOCAL_INDEX, REMOTE_INDEX);
	if (!kp || store_build(&pl, kp, dir, size, n, &s) != 0) {
		fprintf(stderr, "tl-pipeline-bench: setup of %s %u B failed\n", dir == TL_DIR_DECAP ? "decap" : "encap", size);
		goto out;
	}
	for (unsigned i = 0; i + 1 < workers; i++) {
		ct[i] = (struct crypto_thread){ &pl.xw[i], &stop };
		pthread_create(&th[i], NULL, crypto_loop, &ct[i]);
	}
	while (got < n && idle < 2000000) {
		/* The next chunk's frames, copied from the store outside the timed part (a NIC
		 * writes them by DMA); then timed until every one of them came out. */
		unsigned end = sent + CHUNK < n ? sent + CHUNK : n, built = 0;

		while (sent + built < end && (chunk[built] = rte_pktmbuf_alloc(pl.pool)) != NULL) {
			unsigned i = sent + built++;

			memcpy(rte_pktmbuf_append(chunk[built - 1], s.len[i]), s.buf + s.stride * i, s.len[i]);
		}
		end = sent + built;
		perf_set(true);
		c0 = cpu_s();
		t0 = now_s();
		for (unsigned c = 0; got < end && idle < 2000000;) {
			while (c < built && sent - got < WINDOW) {
				tl_pl_inject(&pl, in, chunk[c++]);
				sent++;
			}
			pl.w.now_ns = tl_now_ns();
			tl_worker_round(&pl.w);
			while ((k = tl_pl_collect(&pl, out, m, RTE_DIM(m))) > 0) {
				for (unsigned i = 0; i < k; i++) {
					bad += frame_seq(m[i], dir) != (dir == TL_DIR_DECAP ? ((got + i) & 0xffff) : got + i);
					rte_pktmbuf_free(m[i]);
				}
				got += k;
				idle = 0;
			}
			idle++;
		}
		elapsed += now_s() - t0;
		cpu += cpu_s() - c0;
		perf_set(false);
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i + 1 < workers; i++)
		pthread_join(th[i], NULL);
	if (got != n || bad || !tl_pl_drops_only(&pl, TL_DROP_MAX, 0)) {
		fprintf(stderr, "tl-pipeline-bench: %s %u B, %u workers: %u of %u out, %u out of order, %" PRIu64 " dropped\n",
			dir == TL_DIR_DECAP ? "decap" : "encap", size, workers, got, n, bad, tl_pl_drops_total(&pl));
		goto out;
	}
	*r = (struct result){ dir, size, workers, n / elapsed / 1e6, (double)n * size * 8 / elapsed / 1e9,
			      (double)n * size * 8 / cpu / 1e9, (double)pl.w.cnt.crypto_pkts / n };
	rc = 0;
out:
	store_free(&s);
	tl_pl_teardown(&pl);
	return rc;
}

/* The raw rate of the dataplane's AEAD on one core: seal size-byte messages in place for
 * 0.5 s. Returns ns per message, of wall-clock time, and *cpu_ns of the thread's CPU time.
 * With room around the message, as in a packet's buffer, the AEAD takes its one-pass path
 * (the dataplane's); without (whole), OpenSSL's own ChaCha20-Poly1305. */
static double aead_ns(unsigned size, bool whole, double *cpu_ns)
{
	struct tl_dp_aead *a = tl_dp_aead_new();
	uint8_t key[TL_KEY_LEN] = { 1 }, region[64 + 2048 + 64] = { 0 };
	uint8_t *buf = region + 64, *tag = buf + size;
	size_t head = whole ? 0 : 64, tail = whole ? 0 : sizeof(region) - 64 - size;
	uint64_t n = 0;
	double t0 = now_s(), c0 = cpu_s(), t;

	if (!a)
		return 0;
	do {
		for (int i = 0; i < 256; i++)
			tl_dp_aead_seal(a, key, n++, buf, size, tag, head, tail);
		t = now_s();
	} while (t - t0 < 0.5);
	*cpu_ns = (cpu_s() - c0) * 1e9 / (double)n;
	tl_dp_aead_free(a);
	return (t - t0) * 1e9 / (double)n;
}

static unsigned parse_list(const char *s, unsigned *v, unsigned max)
{
	unsigned n = 0;
	char *end;

	while (*s && n < max) {
		unsigned long x = strtoul(s, &end, 10);

		if (end == s || x == 0 || x > 65535)
			return 0;
		v[n++] = (unsigned)x;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return 0;
	}
	return n;
}

static const struct result *find(const struct result *r, unsigned n, int dir, unsigned size, unsigned workers)
{
	for (unsigned i = 0; i < n; i++)
		if (r[i].dir == dir && r[i].size == size && r[i].workers == workers)
			return &r[i];
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned sizes[8] = { 64, 512, 1420 }, n_sizes = 3, workers[8], n_workers = 0, packets = 200000, n_res = 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	struct result res[MAX_CASES];
	bool json = false, dirs[TL_DIR_MAX] = { true, true };
	double aead, aead_cpu, aead_ns_cpu, aead_at[8], aead_cpu_at[8], ossl, ossl_cpu, ossl_ns_cpu;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--packets") && i + 1 < argc) {
			packets = (unsigned)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			n_sizes = parse_list(argv[++i], sizes, 8);
		} else if (!strcmp(argv[i], "--workers") && i + 1 < argc) {
			n_workers = parse_list(argv[++i], workers, 8);
		} else if (!strcmp(argv[i], "--dirs") && i + 1 < argc) {
			const char *d = argv[++i];

			dirs[TL_DIR_ENCAP] = strstr(d, "encap") != NULL;
			dirs[TL_DIR_DECAP] = strstr(d, "decap") != NULL;
		} else {
			fprintf(stderr, "usage: tl-pipeline-bench [--packets N] [--sizes 64,512,1420] [--workers 1,2,...] "
					"[--dirs encap,decap] [--json]\n");
			return 2;
		}
	}
	if (!n_workers) {
		workers[n_workers++] = 1;
		workers[n_workers++] = 2;
		if (cores > 2)
			workers[n_workers++] = (unsigned)(cores < TL_PL_MAX_WORKERS ? cores : TL_PL_MAX_WORKERS);
	}
	if (!n_sizes || packets < 1000 || (!dirs[TL_DIR_ENCAP] && !dirs[TL_DIR_DECAP])) {
		fprintf(stderr, "tl-pipeline-bench: --sizes needs sizes 64..1420, --packets at least 1000, --dirs encap and/or decap\n");
		return 2;
	}
	for (unsigned i = 0; i < n_sizes; i++)
		if (sizes[i] < 64 || sizes[i] > TL_PL_MTU) {
			fprintf(stderr, "tl-pipeline-bench: size %u is not in 64..%u\n", sizes[i], TL_PL_MTU);
			return 2;
		}
	for (unsigned i = 0; i < n_workers; i++)
		if (workers[i] > TL_PL_MAX_WORKERS) {
			fprintf(stderr, "tl-pipeline-bench: at most %u workers\n", TL_PL_MAX_WORKERS);
			return 2;
		}
	if (tl_pl_eal_init(argv[0]) != 0)
		return 1;
	/* The EAL pinned this thread to one CPU, and threads inherit it: let the owner and the
	 * crypto threads run on every CPU, as the daemon's lcores do. */
	{
		cpu_set_t all;

		CPU_ZERO(&all);
		for (long c = 0; c < cores && c < CPU_SETSIZE; c++)
			CPU_SET(c, &all);
		if (sched_setaffinity(0, sizeof(all), &all) != 0)
			perror("tl-pipeline-bench: sched_setaffinity");
	}
	aead = 1420 * 8 / aead_ns(1420, false, &aead_ns_cpu);
	aead_cpu = 1420 * 8 / aead_ns_cpu;
	ossl = 1420 * 8 / aead_ns(1420, true, &ossl_ns_cpu);
	ossl_cpu = 1420 * 8 / ossl_ns_cpu;
	for (unsigned i = 0; i < n_sizes; i++)
		aead_at[i] = aead_ns(sizes[i], false, &aead_cpu_at[i]);
	perf_open();
	for (int dir = 0; dir < TL_DIR_MAX && rc == 0; dir++)
		for (unsigned s = 0; s < n_sizes && rc == 0 && dirs[dir]; s++)
			for (unsigned w = 0; w < n_workers && rc == 0 && n_res < MAX_CASES; w++)
				if (run_case(dir, sizes[s], workers[w], packets, &res[n_res]) == 0)
					n_res++;
				else
					rc = 1;
	if (json) {
		printf("{\"aead_gbps_1420\": %.3f, \"aead_cpu_gbps_1420\": %.3f, \"openssl_aead_gbps_1420\": %.3f, "
		       "\"openssl_aead_cpu_gbps_1420\": %.3f, \"cores\": %ld, \"packets\": %u, \"results\": [",
		       aead, aead_cpu, ossl, ossl_cpu, cores, packets);
		for (unsigned i = 0; i < n_res; i++)
			printf("%s{\"dir\": \"%s\", \"size\": %u, \"workers\": %u, \"mpps\": %.4f, \"gbps\": %.4f, "
			       "\"owner_cpu_gbps\": %.4f, \"owner_crypto_share\": %.3f}", i ? ", " : "",
			       res[i].dir == TL_DIR_DECAP ? "decap" : "encap", res[i].size, res[i].workers, res[i].mpps,
			       res[i].gbps, res[i].cpu_gbps, res[i].owner_share);
		printf("], \"aead_ns_per_packet\": {");
		for (unsigned i = 0; i < n_sizes; i++)
			printf("%s\"%u\": %.1f", i ? ", " : "", sizes[i], aead_at[i]);
		printf("}, \"aead_cpu_ns_per_packet\": {");
		for (unsigned i = 0; i < n_sizes; i++)
			printf("%s\"%u\": %.1f", i ? ", " : "", sizes[i], aead_cpu_at[i]);
		printf("}}\n");
	} else {
		printf("raw ChaCha20-Poly1305 (one core, 1420 B): %.2f Gbit/s (%.2f over its CPU time); %ld cores; "
		       "%u packets per case\n", aead, aead_cpu, cores, packets);
		printf("OpenSSL's own ChaCha20-Poly1305 (one core, 1420 B): %.2f Gbit/s (%.2f over its CPU time)\n",
		       ossl, ossl_cpu);
		for (unsigned i = 0; i < n_sizes; i++)
			printf("raw AEAD, one core, %u B: %.1f ns per message (%.1f ns of CPU time)\n", sizes[i], aead_at[i],
			       aead_cpu_at[i]);
		printf("%-6s %6s %8s %9s %9s %12s %12s\n", "dir", "size", "workers", "Mpps", "Gbit/s", "CPU Gbit/s",
		       "owner's AEAD");
		for (unsigned i = 0; i < n_res; i++) {
			char cpu[16] = "-";

			if (res[i].workers == 1)
				snprintf(cpu, sizeof(cpu), "%.3f", res[i].cpu_gbps);
			printf("%-6s %6u %8u %9.3f %9.3f %12s %11.0f%%\n", res[i].dir == TL_DIR_DECAP ? "decap" : "encap",
			       res[i].size, res[i].workers, res[i].mpps, res[i].gbps, cpu, 100 * res[i].owner_share);
		}
		for (int dir = 0; dir < TL_DIR_MAX; dir++) {
			const struct result *w1 = find(res, n_res, dir, 1420, 1), *w2 = find(res, n_res, dir, 1420, 2);
			const char *d = dir == TL_DIR_DECAP ? "decap" : "encap";

			if (w1 && aead > 0)
				printf("%s 1420 B: W=1 / raw AEAD = %.2f (floor 0.80: %s); over CPU time %.2f (%s)\n", d,
				       w1->gbps / aead, w1->gbps >= 0.8 * aead ? "PASS" : "FAIL", w1->cpu_gbps / aead_cpu,
				       w1->cpu_gbps >= 0.8 * aead_cpu ? "PASS" : "FAIL");
			if (w1 && ossl > 0)
				printf("%s 1420 B: W=1 / OpenSSL's own AEAD = %.2f; over CPU time %.2f\n", d, w1->gbps / ossl,
				       w1->cpu_gbps / ossl_cpu);
			if (w1 && w2)
				printf("%s 1420 B: W=2 / W=1 = %.2f (floor 1.80: %s)\n", d, w2->gbps / w1->gbps,
				       w2->gbps >= 1.8 * w1->gbps ? "PASS" : "FAIL");
		}
	}
	tl_pl_eal_fini();
	return rc;
}
