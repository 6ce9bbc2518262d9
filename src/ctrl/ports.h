/* The ports: set-up, counters, wake-up sockets, the listen port (ports.c). */
#ifndef TL_CTRL_PORTS_H
#define TL_CTRL_PORTS_H

#include "ctrl/device.h"

struct rte_eth_stats;
int tl_ports_setup(struct tl_device *dev, char *err, size_t errlen);
void tl_ports_teardown(struct tl_device *dev);
unsigned tl_ports_memory_mb(const struct tl_device *dev);   /* RX pools, for the EAL -m */
/* A port's counters as rte_eth_stats, whatever its kind. 0, or -1 if it is not running. */
int tl_port_stats(const struct tl_device *dev, int role, struct rte_eth_stats *st);
/* The sockets a worker owning queue of port role polls when idle (which: 0, 1), or -1. */
int tl_port_wake_fd(const struct tl_device *dev, int role, uint16_t queue, int which);
/* Moves the listen port at run time: the kernel's UDP sockets are bound to the new port
 * first (so a port in use changes nothing), then the WAN XDP steering, then the port the
 * workers accept and send from. 0, or an errno value (EINVAL: port 0; EADDRINUSE, ...)
 * with a log line and nothing changed. Control thread. */
int tl_listen_port_set(struct tl_device *dev, uint16_t port);

#endif
