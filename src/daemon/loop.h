/* The control lcore's one event loop (loop.c): an epoll set (common/evloop.h) over the
 * request servers, the listen port's kernel UDP sockets, the rtnetlink subscription, a
 * timerfd for the ticks and an eventfd the workers kick (tl_dp_kick_ctrl). It sleeps until
 * one of them has something: an idle daemon wakes TL_TICK_IDLE_NS apart. */
#ifndef TL_DAEMON_LOOP_H
#define TL_DAEMON_LOOP_H

#include <signal.h>

#include "ctrl/device.h"

/* Ticks: every 5 ms while the tunnel carries traffic (the timers' arming follows the workers'
 * stamps that closely) or something waits for the control plane (slow-path datagrams held
 * back, a LAN route table to build); every 100 ms otherwise. */
#define TL_TICK_BUSY_NS (5ull * 1000000ull)
#define TL_TICK_IDLE_NS (100ull * 1000000ull)

/* Creates the loop (dev->loop) before anything registers with it. 0, or -1 with err. */
int tl_loop_open(struct tl_device *dev, char *err, size_t errlen);
/* Runs until *stop; *reload (SIGHUP) reloads the configuration file. */
void tl_loop_run(struct tl_device *dev, volatile sig_atomic_t *stop, volatile sig_atomic_t *reload);
/* Wakes the loop from a signal handler (async-signal-safe). */
void tl_loop_wake(void);
/* After everything registered is gone. Safe if never opened. */
void tl_loop_close(struct tl_device *dev);

#endif
