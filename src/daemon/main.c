/* tunlessd: the daemon. Loads the configuration (nothing starts on a bad one), brings up
 * EAL, the ports and the workers, then runs the control plane on the main lcore until
 * SIGINT/SIGTERM, and takes everything down again: workers, ports (which detaches the XDP
 * programs), the host-mode veth, key material. */
#include <getopt.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "ctrl/aips.h"
#include "ctrl/device.h"
#include "ctrl/eal.h"
#include "ctrl/handshake.h"
#include "ctrl/hostmode.h"
#include "ctrl/lanmirror.h"
#include "ctrl/wanaddr.h"
#include "ctrl/log.h"
#include "ctrl/neigh.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/ports.h"
#include "ctrl/ratelimit.h"
#include "ctrl/send.h"
#include "ctrl/stats.h"
#include "ctrl/timers.h"
#include "ctrl/udpsock.h"
#include "daemon/ctlapi.h"
#include "daemon/loop.h"
#include "daemon/metrics.h"
#include "daemon/notify.h"
#include "daemon/telemetry.h"
#include "daemon/uapi.h"
#include "dataplane/route.h"
#include "kernel/netlink.h"

static volatile sig_atomic_t g_stop, g_reload;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
	tl_loop_wake();
}

/* SIGHUP: the control API's reload of the configuration file, from the control loop. */
static void on_sighup(int sig)
{
	(void)sig;
	g_reload = 1;
	tl_loop_wake();
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tunlessd -c CONFIG.yaml [-v]\n"
		   "  -c, --config FILE   configuration (see tunless.yaml(5))\n"
		   "  -v, --verbose       debug logging\n"
		   "  -t, --check         validate the configuration and exit\n"
		   "  -V, --version       print the version and exit\n"
		   "  -h, --help          this text\n");
}

static void dp_params(struct tl_device *dev)
{
	const struct tl_config *c = dev->cfg;
	struct tl_dp *dp = &dev->dp;

	dp->n_workers = c->workers;
	dp->n_queues = c->workers;   /* until the ports say how many they have (tl_ports_setup) */
	atomic_init(&dp->listen_port, c->listen_port);
	dp->mtu = c->mtu;
	dp->host_mode = c->mode == TL_MODE_HOST;
	dp->limits.rekey_after_time_ns = (uint64_t)(c->timers.rekey_after_time * 1e9);
	dp->limits.reject_after_time_ns = (uint64_t)(c->timers.reject_after_time * 1e9);
	dp->limits.rekey_after_messages = c->timers.rekey_after_messages;
	dp->limits.reject_after_messages = c->timers.reject_after_messages;
	for (int role = 0; role < TL_PORT_MAX; role++) {
		const struct tl_cfg_port *p = role == TL_PORT_WAN ? &c->wan : &c->lan;

		/* Host mode has no lan section: its queue toward the host runs at defaults. */
		dp->aqm_init[role] = p->present ? p->aqm : tl_aqm_params_default();
		dp->shaper_init[role] = p->present ? p->shaper : (struct tl_shaper_params){ 0 };
		dp->queue_cap[role] = tl_aqm_capacity(&dp->aqm_init[role]);
	}
}

/* The configuration's peers through the write model, as one change. */
static int peers_load(struct tl_device *dev)
{
	size_t n = dev->cfg->n_peers;
	struct tl_peer_op *ops = calloc(n ? n : 1, sizeof(*ops));
	int err;

	if (!ops)
		return -1;
	for (size_t i = 0; i < n; i++)
		tl_peer_op_add(&ops[i], &dev->cfg->peers[i]);
	err = tl_peer_ops_apply(dev, ops, n, NULL, false);
	tl_wipe(ops, n * sizeof(*ops));
	free(ops);
	return err ? -1 : 0;
}

static int workers_init(struct tl_device *dev)
{
	unsigned lcore, w = 0;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (w == dev->dp.n_workers)
			break;
		if (tl_worker_init(&dev->workers[w], w, &dev->dp) != 0)
			return -1;
		for (int p = 0; p < TL_PORT_MAX && w < dev->dp.n_queues; p++)
			if (dev->ports[p].started) {
				dev->workers[w].wake_fd[p] = tl_port_wake_fd(dev, p, (uint16_t)w, 0);
				dev->workers[w].wake_fd2[p] = tl_port_wake_fd(dev, p, (uint16_t)w, 1);
			}
		dev->worker_lcores[w++] = lcore;
	}
	if (w != dev->dp.n_workers) {
		tl_log_err("EAL gave %u worker lcores, %u needed", w, dev->dp.n_workers);
		return -1;
	}
	return 0;
}

/* After the first routing table is published: a worker never sees a NULL table. */
static int workers_launch(struct tl_device *dev)
{
	for (unsigned w = 0; w < dev->dp.n_workers; w++)
		if (rte_eal_remote_launch(tl_worker_main, &dev->workers[w], dev->worker_lcores[w]) != 0)
			return -1;
	return 0;
}

static void device_down(struct tl_device *dev)
{
	tl_telemetry_down();      /* no telemetry command reads what is torn down below */
	tl_uapi_close(dev);
	tl_ctlapi_close(dev);
	tl_metrics_close(dev);
	dev->dp.stop = true;
	for (unsigned w = 0; w < dev->dp.n_workers; w++)
		if (dev->workers[w].aead)
			tl_worker_kick(&dev->workers[w]);
	rte_eal_mp_wait_lcore();
	tl_peers_destroy_all(dev);          /* keys wiped; no grace period without workers */
	for (unsigned w = 0; w < dev->dp.n_workers; w++)
		if (dev->workers[w].aead)
			tl_worker_fini(&dev->workers[w]);
	tl_udpsock_close(dev);
	tl_ports_teardown(dev);
	if (dev->dp.host_mode)
		tl_host_teardown(dev);
	tl_lanmirror_close(dev);
	tl_wanaddr_close(dev);
	tl_device_objects_free(dev);
	tl_identity_clear(&dev->id);
}

/* A running instance of the same name answers on its telemetry socket; starting a second
 * one would tear down the first one's interfaces before anything else could refuse it. */
static bool instance_running(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/var/run/dpdk/tunless-%s/dpdk_telemetry.v2", name);
	live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return live;
}

static int device_up(struct tl_device *dev, const char *argv0)
{
	char err[512] = "";

	if (instance_running(dev->cfg->name)) {
		tl_log_err("an instance named '%s' is already running (names are unique per machine)",
			   dev->cfg->name);
		return -1;
	}
	dp_params(dev);
	/* The CPUs the daemon may run on, read once before EAL pins this thread to one: host
	 * mode's RPS (tl_host_setup), the lcores (tl_eal_start), the handshake threads. */
	CPU_ZERO(&dev->cpus);
	if (sched_getaffinity(0, sizeof(dev->cpus), &dev->cpus) != 0)
		tl_log_warn("cannot read the process's CPU affinity: %s", strerror(errno));
	if (dev->dp.host_mode && tl_host_setup(dev, err, sizeof(err)) != 0)
		goto fail;
	if (tl_eal_start(dev, argv0) != 0)
		return -1;
	if (tl_device_objects_create(dev) != 0) {
		snprintf(err, sizeof(err), "cannot allocate dataplane objects: %s", rte_strerror(rte_errno));
		goto fail;
	}
	if (tl_ports_setup(dev, err, sizeof(err)) != 0 || tl_wanaddr_open(dev, err, sizeof(err)) != 0)
		goto fail;
	if (tl_udpsock_open(dev, err, sizeof(err)) != 0)
		goto fail;
	if (workers_init(dev) != 0) {
		snprintf(err, sizeof(err), "cannot set up workers");
		goto fail;
	}
	if (peers_load(dev) != 0) {
		snprintf(err, sizeof(err), "cannot load peers");
		goto fail;
	}
	if (!dev->dp.host_mode && tl_lanmirror_open(dev, err, sizeof(err)) != 0)
		goto fail;
	if (workers_launch(dev) != 0) {
		snprintf(err, sizeof(err), "cannot start workers");
		goto fail;
	}
	tl_aips_sinks_start(dev);        /* host routes, LAN steering */
	if (tl_telemetry_register(dev) != 0)
		tl_log_err("telemetry commands not registered");
	if (tl_uapi_open(dev, err, sizeof(err)) != 0)
		goto fail;
	if (tl_ctlapi_open(dev, err, sizeof(err)) != 0)
		goto fail;
	if (tl_metrics_open(dev, err, sizeof(err)) != 0)
		goto fail;
	return 0;
fail:
	tl_log_err("%s", err);
	return -1;
}

/* Each warning of the loader on its own line of stderr. */
static void config_warnings(const struct tl_config *cfg)
{
	const char *p = cfg->warnings;

	while (*p) {
		size_t n = strcspn(p, "\n");

		tl_log_warn("%.*s", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* Up, the control loop until SIGINT/SIGTERM; 0, or 1 if something did not come up. */
static int run(struct tl_device *dev, const char *argv0)
{
	char err[1024];

	dev->nl = tl_nl_open();
	if (!dev->nl) {
		tl_log_err("rtnetlink: %s", strerror(errno));
		return 1;
	}
	if (tl_loop_open(dev, err, sizeof(err)) != 0) {
		tl_log_err("%s", err);
		return 1;
	}
	if (device_up(dev, argv0) != 0)
		return 1;
	dev->start_ns = tl_now_ns();
	tl_log_info("up: %s mode, listening on UDP %u, %zu peer(s), %u worker(s)", dev->dp.host_mode ? "host" : "gateway",
		    tl_dp_listen_port(&dev->dp), dev->cfg->n_peers, dev->dp.n_workers);
	fflush(stderr);
	tl_notify_ready(dev);
	tl_loop_run(dev, &g_stop, &g_reload);
	tl_log_info("stopping");
	tl_notify_stopping();
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "check", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct tl_device dev = { .udp_fd = { -1, -1 }, .udp_item = { { .fd = -1 }, { .fd = -1 } }, .dp.ctrl_kick_fd = -1 };
	const char *path = NULL;
	char err[1024];
	bool check = false;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "c:vtVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': path = optarg; break;
		case 'v': tl_log_verbose = 1; break;
		case 't': check = true; break;
		case 'V': printf("tunlessd %s\n", TL_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	if (tl_crypto_init() != 0) {
		tl_log_err("crypto library initialisation failed");
		return 1;
	}
	if (tl_config_load(path, &dev.cfg, err, sizeof(err)) != 0) {
		tl_log_bare(TL_LOG_ERR, "%s", err);
		return 2;
	}
	config_warnings(dev.cfg);
	if (check) {
		printf("%s: configuration OK\n", path);
		tl_config_free(dev.cfg);
		return 0;
	}
	tl_log_name = dev.cfg->name;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_sighup);
	tl_notify_init();
	signal(SIGPIPE, SIG_IGN);
	TAILQ_INIT(&dev.peers);
	pthread_mutex_init(&dev.lock, NULL);
	tl_identity_set(&dev.id, dev.cfg->private_key);
	tl_cookie_checker_init(&dev.cookies, &dev.id);
	rc = run(&dev, argv[0]);
	device_down(&dev);
	tl_loop_close(&dev);
	if (dev.nl)
		tl_nl_close(dev.nl);
	tl_config_free(dev.cfg);
	tl_eal_stop();
	return rc;
}
