/* What XDP an interface's driver offers (the kernel's netdev netlink family). */
#ifndef TL_KERNEL_XDP_FEATURES_H
#define TL_KERNEL_XDP_FEATURES_H

#include <stdbool.h>
#include <stdint.h>

/* Bits of the features (enum netdev_xdp_act of include/uapi/linux/netdev.h). */
#define TL_XDP_ACT_BASIC 1
#define TL_XDP_ACT_XSK_ZEROCOPY 8

/* The XDP features of iface's driver. 0, -ENODEV (no such interface), -EOPNOTSUPP (the
 * kernel does not say: before Linux 6.3) or another -errno. */
int tl_xdp_features(const char *iface, uint64_t *features);

/* iface's driver can run AF_XDP sockets in zero-copy mode. False when the kernel does not
 * say (before Linux 6.3) or the interface does not exist. */
bool tl_xdp_zero_copy(const char *iface);

#endif
