/* DPDK telemetry commands under /tunless/... (telemetry.c). */
#ifndef TL_DAEMON_TELEMETRY_H
#define TL_DAEMON_TELEMETRY_H

#include "ctrl/device.h"

int tl_telemetry_register(struct tl_device *dev);
/* Closes the gate: waits for a command in progress; later ones answer an error without
 * touching the device. Call before tearing anything down. */
void tl_telemetry_down(void);

#endif
