/* systemd integration (sd_notify): readiness, reload on SIGHUP, the watchdog, a status line.
 * Each call does nothing visible when the daemon does not run under a service manager (no
 * NOTIFY_SOCKET). */
#ifndef TL_DAEMON_NOTIFY_H
#define TL_DAEMON_NOTIFY_H

#include <stdint.h>

struct tl_device;

/* The STATUS= line is refreshed this often once the daemon is ready. */
#define TL_NOTIFY_STATUS_NS (5ull * 1000000000ull)

/* Reads WATCHDOG_USEC (pings are sent at half of it). */
void tl_notify_init(void);
/* Call once the dataplane is set up and the workers are launched. READY=1 itself is sent by
 * tl_notify_tick, at the first control-loop round that finds every worker has run a poll
 * round (its queues are read: a packet sent from then on is taken), with STATUS=. From here
 * the watchdog is also fed at the progress points of the control thread's long steps
 * (dev->progress: a request over a hub's peers takes seconds and reaches no tick meanwhile),
 * with the same rule as from a tick. */
void tl_notify_ready(struct tl_device *dev);
void tl_notify_stopping(void);
/* The control API's reload of the configuration file, between RELOADING=1 and READY=1 (READY=1
 * also when the reload is refused: the daemon runs on, with its previous configuration; the
 * refusal is logged as one error line with the field and the reason). Before READY=1 was
 * sent the reload is applied without either message. */
void tl_notify_reload(struct tl_device *dev);
/* From the control loop: READY=1 when due (above); from then on (systemd starts the watchdog
 * once start-up completed) WATCHDOG=1 when due, and only if every worker made progress (ran a
 * poll round) since the last ping (and the control thread: it pings from here and from the
 * progress points only); every TL_NOTIFY_STATUS_NS a
 * STATUS= line with the peers (how many have a session) and the tunnel's throughput over
 * that interval. */
void tl_notify_tick(struct tl_device *dev, uint64_t now_ns);

#endif
