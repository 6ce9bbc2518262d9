/* The control lcore's event loop (loop.h). Each wake-up takes the handshake messages, the
 * parked packets and the next-hop requests the workers left (their kick brought it here, or a
 * tick did); reclaims the keypairs retired earlier whose grace period is over and starts one
 * grace period for those retired since, never waiting for it; then sleeps in epoll until a
 * socket, the tick timer or a kick has something. Before it sleeps it says
 * so (dp.ctrl_sleeping) and looks once more at the kick count, so that a worker's kick is
 * never lost: either the worker sees it asleep and writes the eventfd, or the loop sees the
 * new count and does not sleep. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "api/server.h"
#include "ctrl/handshake.h"
#include "ctrl/lanmirror.h"
#include "ctrl/log.h"
#include "ctrl/ratelimit.h"
#include "ctrl/send.h"
#include "ctrl/stats.h"
#include "ctrl/timers.h"
#include "ctrl/udpsock.h"
#include "daemon/loop.h"
#include "daemon/notify.h"

struct tl_ctrl_loop {
	struct tl_evloop ev;
	struct tl_evitem timer, kick;
	bool ticked;                       /* the timer fired since the last tick */
	uint64_t period_ns;                /* the timer's period now */
	uint64_t last_second_ns;
	unsigned seen_kicks;
};

static struct tl_ctrl_loop g_loop = { .ev.epfd = -1, .timer.fd = -1, .kick.fd = -1 };
static int g_kick_fd = -1;             /* for signal handlers */

void tl_loop_wake(void)
{
	static const uint64_t one = 1;

	if (g_kick_fd >= 0 && write(g_kick_fd, &one, sizeof(one)) < 0) {
		/* saturated: the loop is being woken anyway */
	}
}

static void drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing to drain */
	}
}

static void timer_event(void *arg, uint32_t events)
{
	struct tl_ctrl_loop *l = arg;

	(void)events;
	drain(l->timer.fd);
	l->ticked = true;
}

static void kick_event(void *arg, uint32_t events)
{
	struct tl_ctrl_loop *l = arg;

	(void)events;
	drain(l->kick.fd);
}

static void timer_set(struct tl_ctrl_loop *l, uint64_t period)
{
	struct itimerspec its = {
		.it_interval = { .tv_sec = (time_t)(period / TL_NS), .tv_nsec = (long)(period % TL_NS) },
		.it_value = { .tv_sec = (time_t)(period / TL_NS), .tv_nsec = (long)(period % TL_NS) },
	};

	if (period == l->period_ns)
		return;
	l->period_ns = period;
	if (timerfd_settime(l->timer.fd, 0, &its, NULL) != 0)
		tl_log_err("control loop: timerfd: %s", strerror(errno));
}

int tl_loop_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_ctrl_loop *l = &g_loop;
	int tfd = -1, kfd = -1;

	if (tl_evloop_open(&l->ev) != 0 ||
	    (tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0 ||
	    (kfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    tl_evloop_add(&l->ev, &l->timer, tfd, EPOLLIN, timer_event, l) != 0 ||
	    tl_evloop_add(&l->ev, &l->kick, kfd, EPOLLIN, kick_event, l) != 0) {
		snprintf(err, errlen, "control loop: %s", strerror(errno));
		if (tfd >= 0)
			close(tfd);
		if (kfd >= 0)
			close(kfd);
		tl_evloop_close(&l->ev);
		return -1;
	}
	l->period_ns = 0;
	timer_set(l, TL_TICK_IDLE_NS);
	g_kick_fd = kfd;
	dev->dp.ctrl_kick_fd = kfd;
	dev->loop = &l->ev;
	return 0;
}

/* Once a second: housekeeping, the worker load, clients that stalled. */
static void second(struct tl_device *dev, uint64_t now)
{
	tl_ratelimit_gc(dev->ratelimit, now);
	tl_stats_tick(dev, now);
	for (int i = 0; i < TL_SERVER_MAX; i++)
		if (dev->servers[i])
			tl_server_tick(dev->servers[i], now);
}

/* The timers (with the endpoints to resolve), what waited on a tick; the next tick's period. */
static void tick(struct tl_device *dev, struct tl_ctrl_loop *l, uint64_t now)
{
	bool busy;

	busy = tl_timers_run(dev, now);
	tl_udpsock_resume(dev);
	tl_notify_tick(dev, now);
	if (now - l->last_second_ns >= TL_NS) {
		l->last_second_ns = now;
		second(dev, now);
	}
	busy |= dev->udp_blocked || tl_lanmirror_pending(dev);
	timer_set(l, busy ? TL_TICK_BUSY_NS : TL_TICK_IDLE_NS);
}

/* Work the workers left that a sleep would leave waiting. Handshake messages wait for room
 * on the control TX ring: without room the loop ticks fast until worker 0 made some. */
static bool work_waiting(struct tl_device *dev, struct tl_ctrl_loop *l)
{
	if (rte_ring_count(dev->dp.hs_ring) > 0) {
		if (tl_send_room(dev) > 0)
			return true;
		timer_set(l, TL_TICK_BUSY_NS);
	}
	return atomic_load_explicit(&dev->dp.ctrl_kicks, memory_order_relaxed) != l->seen_kicks ||
	       (dev->lanmirror && rte_ring_count(dev->dp.neigh_req) > 0);
}

void tl_loop_run(struct tl_device *dev, volatile sig_atomic_t *stop, volatile sig_atomic_t *reload)
{
	struct tl_ctrl_loop *l = &g_loop;

	while (!*stop) {
		uint64_t now = tl_now_ns();
		unsigned kicks = atomic_load_explicit(&dev->dp.ctrl_kicks, memory_order_relaxed);
		int timeout = 0;
		bool retiring;

		tl_handshake_poll(dev, now);
		tl_staged_poll(dev);         /* packets parked for a session or a next hop */
		if (kicks != l->seen_kicks || l->ticked || tl_lanmirror_pending(dev))
			tl_lanmirror_poll(dev, now);   /* next-hop requests come with a kick */
		if (*reload) {
			*reload = 0;
			tl_notify_reload(dev);
		}
		/* a kick may carry a peer's wish (want_handshake, next_confirmed): the timers see it */
		if (l->ticked || kicks != l->seen_kicks) {
			l->ticked = false;
			l->seen_kicks = kicks;
			tick(dev, l, now);
		}
		/* What this round retired (sessions replaced, peers removed by a request) waits
		 * for one grace period; the loop looks again in a millisecond until it is over. */
		retiring = tl_dp_retire_poll(&dev->dp);
		atomic_store_explicit(&dev->dp.ctrl_sleeping, true, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);    /* pairs with tl_dp_kick_ctrl */
		if (!work_waiting(dev, l) && !*stop && !*reload)
			timeout = retiring ? 1 : -1;
		if (tl_evloop_run(&l->ev, timeout) < 0 && errno != EINTR)
			tl_log_err("control loop: epoll: %s", strerror(errno));
		atomic_store_explicit(&dev->dp.ctrl_sleeping, false, memory_order_relaxed);
	}
}

void tl_loop_close(struct tl_device *dev)
{
	struct tl_ctrl_loop *l = &g_loop;

	for (struct tl_evitem *it = &l->timer; it; it = it == &l->timer ? &l->kick : NULL) {
		int fd = it->fd;

		tl_evloop_del(&l->ev, it);
		if (fd >= 0)
			close(fd);
	}
	g_kick_fd = -1;
	dev->dp.ctrl_kick_fd = -1;
	tl_evloop_close(&l->ev);
	dev->loop = NULL;
}
