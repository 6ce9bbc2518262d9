/* sd_notify messages (src/daemon/notify.c) to a fake service manager: an AF_UNIX datagram
 * socket named by NOTIFY_SOCKET, with WATCHDOG_USEC set. On the control-plane harness (one
 * worker driven round by round, a virtual clock): READY=1 waits for the worker's first poll
 * round; WATCHDOG=1 only after READY=1 and only when the worker ran a round since the last
 * ping; STATUS= every 5 s with the peers, how many have a session and the tunnel's
 * throughput over the interval; STOPPING=1. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "ctrl_harness.h"
#include "daemon/notify.h"

#define MS 1000000ull

static int g_fd = -1;
static char g_dir[] = "/tmp/tunless-notify.XXXXXX";
static char g_msgs[16384];

/* Everything the daemon sent since the last call, datagrams separated by "|". */
static const char *take(void)
{
	size_t used = 0;
	ssize_t n;

	g_msgs[0] = 0;
	while (used < sizeof(g_msgs) - 2 &&
	       (n = recv(g_fd, g_msgs + used, sizeof(g_msgs) - used - 2, MSG_DONTWAIT)) > 0) {
		used += (size_t)n;
		g_msgs[used++] = '|';
		g_msgs[used] = 0;
	}
	return g_msgs;
}

static int listen_notify(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (!mkdtemp(g_dir))
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", g_dir);
	g_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (g_fd < 0 || bind(g_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	setenv("WATCHDOG_USEC", "1000000", 1);    /* pings due every 500 ms */
	unsetenv("WATCHDOG_PID");
	return 0;
}

int main(int argc, char **argv)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	const char *m;
	uint64_t t0;
	char path[128];

	(void)argc;
	if (listen_notify() != 0 || tl_ch_eal_init(argv[0]) != 0 || tl_ch_setup(&h) != 0) {
		printf("FAIL setup\n");
		return 1;
	}
	tl_notify_init();

	/* Launched, but the worker has not run a round: its queues are not read yet. */
	tl_notify_ready(&h.dev);
	for (int i = 0; i < 3; i++) {
		h.now += 600 * MS;
		tl_notify_tick(&h.dev, h.now);
	}
	m = take();
	CHECK(!*m, "nothing before the worker's first poll round (got [%s])", m);

	tl_ch_worker_round(&h);
	h.now += 1 * MS;
	t0 = h.now;
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(!strncmp(m, "READY=1\nSTATUS=up: ", 19), "READY=1 with STATUS= after the first round: [%s]", m);
	CHECK(strstr(m, ", 0 peer(s), 0 with a session, 1 worker(s); 0 B received, 0 B sent|") != NULL,
	      "first STATUS= names peers, sessions, workers and totals, no rate yet: [%s]", m);
	tl_ch_worker_round(&h);
	tl_notify_tick(&h.dev, h.now + 1 * MS);
	m = take();
	CHECK(!*m, "READY=1 is sent once (got [%s])", m);

	/* Watchdog: due every 500 ms from READY=1, only after progress. */
	h.now = t0 + 600 * MS;
	tl_ch_worker_round(&h);
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(!strcmp(m, "WATCHDOG=1|"), "WATCHDOG=1 after a worker round: [%s]", m);
	h.now = t0 + 1200 * MS;
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(!*m, "no WATCHDOG=1 when the worker made no progress (got [%s])", m);
	h.now = t0 + 1800 * MS;
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(!*m, "still none while it makes none (got [%s])", m);
	tl_ch_worker_round(&h);
	h.now = t0 + 2400 * MS;
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(!strcmp(m, "WATCHDOG=1|"), "WATCHDOG=1 again once it ran a round: [%s]", m);

	/* STATUS= 5 s after READY=1: 625000 B in and 62500 B out over 5 s. */
	pc = tl_ch_peer_add(&h, &r, 7);
	CHECK(pc != NULL, "peer added");
	if (pc) {
		atomic_fetch_add(&pc->dp->stats.rx_bytes, 625000);
		atomic_fetch_add(&pc->dp->stats.tx_bytes, 62500);
	}
	h.now = t0 + 4999 * MS;
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(!strstr(m, "STATUS="), "no STATUS= before 5 s (got [%s])", m);
	h.now = t0 + 5000 * MS;
	tl_ch_worker_round(&h);
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(strstr(m, "STATUS=up: ") && strstr(m, ", 1 peer(s), 0 with a session, 1 worker(s); tunnel rx 1.0 Mbit/s, "
						 "tx 100.0 kbit/s over 5 s; 625000 B received, 62500 B sent|"),
	      "STATUS= with the throughput of the last 5 s: [%s]", m);
	h.now = t0 + 10000 * MS;
	tl_ch_worker_round(&h);
	tl_notify_tick(&h.dev, h.now);
	m = take();
	CHECK(strstr(m, "tunnel rx 0 bit/s, tx 0 bit/s over 5 s; 625000 B received, 62500 B sent|") != NULL,
	      "the next STATUS= counts only its own interval: [%s]", m);

	tl_notify_stopping();
	m = take();
	CHECK(!strncmp(m, "STOPPING=1\n", 11), "STOPPING=1: [%s]", m);

	tl_ch_teardown(&h);
	tl_ch_eal_fini();
	close(g_fd);
	snprintf(path, sizeof(path), "%s/notify", g_dir);
	unlink(path);
	rmdir(g_dir);
	return check_report();
}
