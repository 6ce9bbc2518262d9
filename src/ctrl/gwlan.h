/* A gateway's LAN port of the packet kind (gwlan.c): the veth pair tunless reads and writes
 * through, and the tc programs that steer the LAN interface's packets into it and tunless's
 * frames out of the LAN interface. */
#ifndef TL_CTRL_GWLAN_H
#define TL_CTRL_GWLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ctrl/device.h"

/* Before the port opens: the pair <name>-lan (the kernel's end) / <name>-dp (the port's),
 * left-overs of an earlier run removed. Names in dev->host_if and dev->dp_if. */
int tl_gwlan_setup(struct tl_device *dev, char *err, size_t errlen);
/* Once the port's socket is open on dev->dp_if: the port takes the LAN interface's index,
 * MAC and addresses, and the tc programs start steering. */
int tl_gwlan_start(struct tl_device *dev, char *err, size_t errlen);
/* The tc programs' route tries (kernel/xdp.h), or NULL when they are not running. */
struct tl_xdp_maps *tl_gwlan_maps(struct tl_device *dev);
/* The tc programs' counters, out[TL_TC_STAT_*] (kernel/tc.h); -1 when not running. */
int tl_gwlan_stats(struct tl_device *dev, uint64_t *out);
/* On stop: the tc programs detached, the pair deleted. */
void tl_gwlan_teardown(struct tl_device *dev);

#endif
