/* systemd integration: see notify.h. */
#include "ctrl/notify.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "ctrl/ctlapi.h"
#include "ctrl/device.h"
#include "ctrl/log.h"

static uint64_t g_wd_interval_ns;      /* 0: no watchdog */
static uint64_t g_wd_last_ns;
static uint64_t g_wd_polls[TL_MAX_WORKERS];
static bool g_wd_stalled;

void tl_notify_init(void)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
		g_wd_interval_ns = usec * 1000ull / 2;
}

void tl_notify_ready(struct tl_device *dev)
{
	sd_notifyf(0, "READY=1\nSTATUS=up: %s mode, UDP %u, %zu peer(s), %u worker(s)",
		   dev->dp.host_mode ? "host" : "gateway", tl_dp_listen_port(&dev->dp), dev->cfg->n_peers,
		   dev->dp.n_workers);
}

void tl_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

void tl_notify_reload(struct tl_device *dev)
{
	static const char req[] = "op: reload\n";
	struct tl_buf out = { 0 };
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
		   (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000ull, dev->cfg->path);
	tl_log_info("SIGHUP: reloading %s", dev->cfg->path);
	tl_ctlapi_request(dev, req, sizeof(req) - 1, &out);
	if (out.p && !strncmp(out.p, "status: error", 13)) {
		tl_log_err("SIGHUP: reload refused (the running configuration is kept):\n%.*s", (int)out.len, out.p);
		sd_notifyf(0, "READY=1\nSTATUS=reload of %s refused; running the previous configuration", dev->cfg->path);
	} else {
		sd_notifyf(0, "READY=1\nSTATUS=reloaded %s", dev->cfg->path);
	}
	tl_buf_free(&out);
}

void tl_notify_tick(struct tl_device *dev, uint64_t now_ns)
{
	bool progress = true;

	if (!g_wd_interval_ns || now_ns - g_wd_last_ns < g_wd_interval_ns)
		return;
	g_wd_last_ns = now_ns;
	for (unsigned w = 0; w < dev->dp.n_workers && w < TL_MAX_WORKERS; w++) {
		uint64_t polls = tl_cnt_read(&dev->workers[w].cnt.busy_polls) + tl_cnt_read(&dev->workers[w].cnt.idle_polls);

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
