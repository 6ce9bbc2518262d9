/* WireGuard's timers, derived from the workers' event stamps (timers.c). */
#ifndef TL_CTRL_TIMERS_H
#define TL_CTRL_TIMERS_H

#include "ctrl/device.h"

/* One tick: the active peers' timers (at most a budget of them; the rest at the next runs),
 * and a slice of every peer by id, for any that has something going on unnoticed. True if
 * a ticked peer's traffic stamps moved or active peers wait for the next run (the loop then
 * ticks fast). */
bool tl_timers_run(struct tl_device *dev, uint64_t now);
/* The peer has something going on (a handshake, a session, staged packets, a persistent
 * keepalive, an endpoint to resolve): its timers run from the next tick. */
void tl_timers_wake(struct tl_device *dev, struct tl_peer_ctrl *pc);
/* The peer leaves the active list (it is being freed). */
void tl_timers_forget(struct tl_device *dev, struct tl_peer_ctrl *pc);

#endif
