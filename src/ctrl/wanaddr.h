/* The WAN interface's addresses, followed as they change: every address of the interface is
 * ours (wanaddr.c). Control thread only. */
#ifndef TL_CTRL_WANADDR_H
#define TL_CTRL_WANADDR_H

#include <stddef.h>

struct tl_device;

/* Subscribes to the kernel's address notifications, reads the WAN interface's addresses and
 * publishes them to the workers (before they start). -1 and err on failure. */
int tl_wanaddr_open(struct tl_device *dev, char *err, size_t errlen);
/* Reads what changed and publishes the new set (the control loop calls it when the
 * subscription socket is readable). Returns the number of notifications read. */
unsigned tl_wanaddr_poll(struct tl_device *dev);
/* After the workers stopped: the published set freed, the subscription closed. */
void tl_wanaddr_close(struct tl_device *dev);

#endif
