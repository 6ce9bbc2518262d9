/* WireGuard's timers, derived from the workers' event stamps (timers.c). */
#ifndef TL_CTRL_TIMERS_H
#define TL_CTRL_TIMERS_H

#include "ctrl/device.h"

void tl_timers_run(struct tl_device *dev, uint64_t now);

#endif
