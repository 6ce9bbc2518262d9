/* Host mode: the veth pair and the host end's addresses and routes (hostmode.c). */
#ifndef TL_CTRL_HOSTMODE_H
#define TL_CTRL_HOSTMODE_H

#include "ctrl/device.h"

int tl_host_setup(struct tl_device *dev, char *err, size_t errlen);
int tl_host_route(struct tl_device *dev, const struct tl_prefix *p, bool add);
void tl_host_teardown(struct tl_device *dev);

#endif
