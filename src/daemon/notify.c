/* systemd integration: see notify.h. */
#include "daemon/notify.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "daemon/ctlapi.h"

static uint64_t g_wd_interval_ns;      /* 0: no watchdog */
static uint64_t g_wd_last_ns;
static uint64_t g_wd_polls[TL_MAX_WORKERS];
static bool g_wd_stalled;
static bool g_ready_pending, g_ready;
static uint64_t g_status_ns, g_status_rx, g_status_tx;   /* last STATUS=: time, byte totals */

void tl_notify_init(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
		g_wd_interval_ns = usec * 1000ull / 2;
}

static void watchdog_tick(struct tl_device *dev, uint64_t now_ns);

/* A point a long step of the control thread passes (tl_device_progress): the watchdog is fed
 * as from a tick. A control thread stuck anywhere else feeds nothing. */
static void progress(struct tl_device *dev)
{
	if (g_ready && g_wd_interval_ns)
		watchdog_tick(dev, tl_now_ns());
}

void tl_notify_ready(struct tl_device *dev)
{
	g_ready_pending = true;
	dev->progress = progress;
}

void tl_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

static uint64_t worker_polls(const struct tl_device *dev, unsigned w)
{
	return tl_cnt_read(&dev->workers[w].cnt.busy_polls) + tl_cnt_read(&dev->workers[w].cnt.idle_polls);
}

/* Every worker has run at least one poll round. */
static bool workers_polling(const struct tl_device *dev)
{
	for (unsigned w = 0; w < dev->dp.n_workers && w < TL_MAX_WORKERS; w++)
		if (!worker_polls(dev, w))
			return false;
	return true;
}

static void tunnel_bytes(struct tl_device *dev, uint64_t *rx, uint64_t *tx, unsigned *sessions)
{
	const struct tl_peer_ctrl *pc;

	*rx = *tx = 0;
	*sessions = 0;
	TAILQ_FOREACH(pc, &dev->peers, link) {
		*rx += atomic_load_explicit(&pc->dp->stats.rx_bytes, memory_order_relaxed);
		*tx += atomic_load_explicit(&pc->dp->stats.tx_bytes, memory_order_relaxed);
		*sessions += atomic_load_explicit(&pc->dp->current, memory_order_relaxed) != NULL;
	}
}

/* bits/s with a unit: "0 bit/s", "12.5 kbit/s", "1.20 Gbit/s" */
static void fmt_rate(char *out, size_t n, double bps)
{
	if (bps < 1e3)
		snprintf(out, n, "%.0f bit/s", bps);
	else if (bps < 1e6)
		snprintf(out, n, "%.1f kbit/s", bps / 1e3);
	else if (bps < 1e9)
		snprintf(out, n, "%.1f Mbit/s", bps / 1e6);
	else
		snprintf(out, n, "%.2f Gbit/s", bps / 1e9);
}

/* "up: host mode, UDP 51820, 2 peer(s), 1 with a session, 1 worker(s); tunnel rx 1.2 Mbit/s,
 * tx 80.0 kbit/s over 5 s; 123456 B received, 7890 B sent" (no rates in the first one) */
static void send_status(struct tl_device *dev, uint64_t now, const char *prefix)
{
	uint64_t rx, tx, dt = now - g_status_ns;
	unsigned sessions;
	char rates[96] = "", rrx[32], rtx[32];

	tunnel_bytes(dev, &rx, &tx, &sessions);
	if (dt) {
		fmt_rate(rrx, sizeof(rrx), (double)(rx - g_status_rx) * 8e9 / (double)dt);
		fmt_rate(rtx, sizeof(rtx), (double)(tx - g_status_tx) * 8e9 / (double)dt);
		snprintf(rates, sizeof(rates), "tunnel rx %s, tx %s over %.0f s; ", rrx, rtx, (double)dt / 1e9);
	}
	sd_notifyf(0, "%sSTATUS=up: %s mode, UDP %u, %" PRIu32 " peer(s), %u with a session, %u worker(s); "
		      "%s%" PRIu64 " B received, %" PRIu64 " B sent",
		   prefix, dev->dp.host_mode ? "host" : "gateway", tl_dp_listen_port(&dev->dp), dev->n_peers,
		   sessions, dev->dp.n_workers, rates, rx, tx);
	g_status_ns = now;
	g_status_rx = rx;
	g_status_tx = tx;
}

/* The value of "  key: " in a control API error reply, to the end of its line. */
static void reply_value(const char *reply, size_t len, const char *key, char *out, size_t n)
{
	char pat[32];
	const char *p, *end = reply + len;

	snprintf(pat, sizeof(pat), "\n  %s: ", key);
	snprintf(out, n, "?");
	for (p = reply; p && p < end; p = memchr(p + 1, '\n', (size_t)(end - p - 1))) {
		size_t l = strlen(pat);

		if ((size_t)(end - p) > l && !memcmp(p, pat, l)) {
			const char *v = p + l, *e = memchr(v, '\n', (size_t)(end - v));

			snprintf(out, n, "%.*s", (int)((e ? e : end) - v), v);
			return;
		}
	}
}

void tl_notify_reload(struct tl_device *dev)
{
	static const char req[] = "op: reload\n";
	struct tl_buf out = { 0 };
	struct timespec ts;
	bool notify = g_ready;

	if (notify) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
			   (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000ull,
			   dev->cfg->path);
	}
	tl_log_info("SIGHUP: reloading %s", dev->cfg->path);
	tl_ctlapi_request(dev, req, sizeof(req) - 1, &out);
	if (out.p && out.len >= 17 && !memcmp(out.p, "---\nstatus: error", 17)) {
		char field[128], msg[512];

		reply_value(out.p, out.len, "field", field, sizeof(field));
		reply_value(out.p, out.len, "message", msg, sizeof(msg));
		tl_log_err("SIGHUP: reload of %s refused, the running configuration is kept: %s: %s",
			   dev->cfg->path, field, msg);
		if (notify)
			sd_notifyf(0, "READY=1\nSTATUS=reload of %s refused (%s: %s); running the previous configuration",
				   dev->cfg->path, field, msg);
	} else if (notify) {
		sd_notifyf(0, "READY=1\nSTATUS=reloaded %s", dev->cfg->path);
	}
	tl_buf_free(&out);
}

static void watchdog_tick(struct tl_device *dev, uint64_t now_ns)
{
	bool progress = true;

	if (!g_ready || !g_wd_interval_ns || now_ns - g_wd_last_ns < g_wd_interval_ns)
		return;
	g_wd_last_ns = now_ns;
	for (unsigned w = 0; w < dev->dp.n_workers && w < TL_MAX_WORKERS; w++) {
		uint64_t polls = worker_polls(dev, w);

		if (polls == g_wd_polls[w])
			progress = false;
		g_wd_polls[w] = polls;
	}
	if (!progress) {
		if (!g_wd_stalled)
			tl_log_err("watchdog: a worker made no progress; not pinging the service manager");
		g_wd_stalled = true;
		return;
	}
	g_wd_stalled = false;
	sd_notify(0, "WATCHDOG=1");
}

void tl_notify_tick(struct tl_device *dev, uint64_t now_ns)
{
	if (g_ready_pending && workers_polling(dev)) {
		g_ready_pending = false;
		g_ready = true;
		g_status_ns = g_wd_last_ns = now_ns;   /* the watchdog runs from here (systemd.service(5)) */
		for (unsigned w = 0; w < dev->dp.n_workers && w < TL_MAX_WORKERS; w++)
			g_wd_polls[w] = worker_polls(dev, w);
		send_status(dev, now_ns, "READY=1\n");
		tl_log_debug("every worker polls its queues: READY=1");
	} else if (g_ready && now_ns - g_status_ns >= TL_NOTIFY_STATUS_NS) {
		send_status(dev, now_ns, "");
	}
	watchdog_tick(dev, now_ns);
}
