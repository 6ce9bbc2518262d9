/* systemd integration (sd_notify): readiness, reload on SIGHUP, the watchdog. Each call does
 * nothing when the daemon does not run under a service manager (no NOTIFY_SOCKET). */
#ifndef TL_CTRL_NOTIFY_H
#define TL_CTRL_NOTIFY_H

#include <stdint.h>

struct tl_device;

/* Reads WATCHDOG_USEC (pings are sent at half of it). */
void tl_notify_init(void);
/* READY=1 with a STATUS= line: call once the dataplane is up. */
void tl_notify_ready(struct tl_device *dev);
void tl_notify_stopping(void);
/* The control API's reload of the configuration file, between RELOADING=1 and READY=1. */
void tl_notify_reload(struct tl_device *dev);
/* From the control loop: WATCHDOG=1 when due, and only if every worker made progress (ran a
 * poll round) since the last ping. */
void tl_notify_tick(struct tl_device *dev, uint64_t now_ns);

#endif
