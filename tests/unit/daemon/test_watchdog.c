/* The systemd watchdog during a long request (src/daemon/notify.c, tl_device.progress): a
 * request over 10 000 peers reaches no control-loop tick while it runs, and still feeds the
 * watchdog (WATCHDOG=1) from the progress points of its work while the worker runs; a control
 * thread stuck inside a request (here on the device lock, as behind a telemetry reader that
 * never lets go) feeds nothing while the worker runs on. A fake service manager (an AF_UNIX
 * datagram socket named by NOTIFY_SOCKET, read on a thread) with WATCHDOG_USEC at 10 ms:
 * pings due every 5 ms. Worker 0 runs on its own thread (tl_ch_worker_start); the clock is the real one,
 * as in the daemon. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "ctrl/peer_ops.h"
#include "ctrl_harness.h"
#include "daemon/notify.h"
#include "dataplane/lcore.h"

#define N 10000u
#define INTERVAL_NS 5000000ull            /* half of WATCHDOG_USEC */

static int g_fd = -1;
static char g_dir[] = "/tmp/tunless-watchdog.XXXXXX";
/* The service manager's side, on a thread of its own as systemd reads at once (a full socket
 * would block the sender): WATCHDOG=1 and READY=1 datagrams counted. */
static _Atomic unsigned g_pings, g_ready;
static atomic_bool g_stop;

static void *manager(void *arg)
{
	char buf[4096];
	ssize_t n;

	(void)arg;
	while (!atomic_load(&g_stop)) {
		n = recv(g_fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = 0;
		if (strstr(buf, "WATCHDOG=1"))
			atomic_fetch_add(&g_pings, 1);
		if (strstr(buf, "READY=1"))
			atomic_fetch_add(&g_ready, 1);
	}
	return NULL;
}

static void sleep_ms(unsigned ms)
{
	const struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

static int listen_notify(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_usec = 10000 };

	if (!mkdtemp(g_dir))
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", g_dir);
	g_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (g_fd < 0 || bind(g_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	setsockopt(g_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	setenv("WATCHDOG_USEC", "10000", 1);
	unsetenv("WATCHDOG_PID");
	return 0;
}

/* N peer additions, keys numbered from base. */
static struct tl_peer_op *ops_new(uint32_t base, uint32_t n)
{
	struct tl_peer_op *ops = calloc(n, sizeof(*ops));

	for (uint32_t i = 0; ops && i < n; i++) {
		uint32_t k = base + i;

		memset(ops[i].pub, 0x77, TL_KEY_LEN);
		memcpy(ops[i].pub, &k, sizeof(k));
	}
	return ops;
}

/* READY=1 once the worker ran a round, from ticks as the control loop makes them. */
static bool ready(struct tl_ch *h)
{
	for (int i = 0; i < 10000; i++) {
		tl_notify_tick(&h->dev, tl_now_ns());
		if (atomic_load(&g_ready))
			return true;
		sleep_ms(1);
	}
	return false;
}

static void test_long_request(struct tl_ch *h)
{
	struct tl_peer_op *ops = ops_new(0, N);
	uint64_t t0, t1;
	unsigned n;
	int r;

	sleep_ms(20);
	n = atomic_load(&g_pings);
	t0 = tl_now_ns();
	r = ops ? tl_peer_ops_apply(&h->dev, ops, N, NULL, false) : -1;
	t1 = tl_now_ns();
	sleep_ms(20);                               /* the manager read what was sent */
	n = atomic_load(&g_pings) - n;
	printf("a request adding %u peers: %.0f ms, %u WATCHDOG=1 meanwhile (due every 5 ms)\n", N,
	       (double)(t1 - t0) / 1e6, n);
	CHECK(r == 0, "long request: applied");
	CHECK(t1 - t0 >= 5 * INTERVAL_NS, "long request: took %.1f ms, more than 5 intervals", (double)(t1 - t0) / 1e6);
	CHECK(n >= 2, "long request: the watchdog fed while it ran: %u WATCHDOG=1 over %.0f ms", n,
	      (double)(t1 - t0) / 1e6);
	free(ops);
}

/* ---- a control thread stuck ------------------------------------------------------------- */

struct stuck {
	struct tl_ch *h;
	struct tl_peer_op *op;
	atomic_int tid;
	atomic_bool done;
	int result;
};

static void *request_thread(void *arg)
{
	struct stuck *s = arg;

	atomic_store(&s->tid, (int)gettid());
	s->result = tl_peer_ops_apply(&s->h->dev, s->op, 1, NULL, false);
	atomic_store(&s->done, true);
	return NULL;
}

/* The thread's scheduler state (/proc/self/task/<tid>/stat): 'S' while it waits on a lock. */
static char task_state(int tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	char state = '?';

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
		state = p[2];
	if (f)
		fclose(f);
	return state;
}

static void test_stuck(struct tl_ch *h)
{
	struct stuck s = { .h = h, .op = ops_new(N, 1) };
	pthread_t th;
	uint64_t rounds;
	bool asleep = false;
	unsigned n;

	pthread_mutex_lock(&h->dev.lock);          /* held, as by a reader that never lets go */
	if (!s.op || pthread_create(&th, NULL, request_thread, &s) != 0) {
		pthread_mutex_unlock(&h->dev.lock);
		CHECK(0, "stuck: request thread");
		free(s.op);
		return;
	}
	/* Until the request waits on the lock (at most 10 s). */
	for (int i = 0; i < 10000 && !asleep; i++) {
		sleep_ms(1);
		asleep = atomic_load(&s.tid) && task_state(atomic_load(&s.tid)) == 'S';
	}
	CHECK(asleep && !atomic_load(&s.done), "stuck: the request waits on the device lock");
	sleep_ms(20);
	n = atomic_load(&g_pings);
	rounds = tl_ch_worker_rounds(h);
	sleep_ms(100);                              /* 20 intervals */
	n = atomic_load(&g_pings) - n;
	CHECK(tl_ch_worker_rounds(h) > rounds, "stuck: the worker ran meanwhile");
	CHECK(!atomic_load(&s.done), "stuck: the request is still waiting");
	CHECK(n == 0, "stuck: no WATCHDOG=1 while the control thread is stuck (got %u)", n);
	pthread_mutex_unlock(&h->dev.lock);
	pthread_join(th, NULL);
	CHECK(s.result == 0, "stuck: the request applied once the lock was free");
	free(s.op);
}

int main(int argc, char **argv)
{
	struct tl_ch h;
	pthread_t mgr;
	char path[128];

	(void)argc;
	if (listen_notify() != 0 || tl_ch_eal_init(argv[0]) != 0 || tl_ch_setup(&h) != 0) {
		printf("FAIL setup\n");
		return 1;
	}
	if (pthread_create(&mgr, NULL, manager, NULL) != 0) {
		printf("FAIL manager thread\n");
		return 1;
	}
	tl_notify_init();
	tl_notify_ready(&h.dev);
	CHECK(tl_ch_worker_start(&h, NULL, 0) == 0, "worker thread");
	CHECK(ready(&h), "READY=1 once the worker runs");
	test_long_request(&h);
	test_stuck(&h);
	tl_ch_worker_stop(&h);
	tl_ch_teardown(&h);
	tl_ch_eal_fini();
	atomic_store(&g_stop, true);
	pthread_join(mgr, NULL);
	close(g_fd);
	snprintf(path, sizeof(path), "%s/notify", g_dir);
	unlink(path);
	rmdir(g_dir);
	return check_report();
}
