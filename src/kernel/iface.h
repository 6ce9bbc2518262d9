/* What the kernel tells of an interface, and of this process's AF_XDP sockets (iface.c). No
 * DPDK, no device. */
#ifndef TL_KERNEL_IFACE_H
#define TL_KERNEL_IFACE_H

#include <linux/if_xdp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Queue pairs net_af_xdp opens on iface: its combined channels, 1 where it has none (veth,
 * most virtual NICs). */
unsigned tl_iface_channels(const char *iface);
/* RX queues the kernel has for iface (0: unknown). */
unsigned tl_iface_rx_queues(const char *iface);
/* Receive packet steering (RPS) over every online CPU on each RX queue of iface: a frame
 * the kernel takes through a CPU's backlog (netif_rx) goes to the backlog of the CPU its flow
 * hash picks, so one flow keeps its order whichever CPUs sent it. 0, -ENOENT (no rps_cpus:
 * a kernel without CONFIG_RPS), or other -errno. */
int tl_iface_rps_all(const char *iface);
/* A CPU list as /sys/devices/system/cpu/online gives it ("0-3,8") as the hex mask rps_cpus
 * takes ("10f"; 32-bit groups, the highest first, comma-separated). 0, -EINVAL (not a
 * list, or a CPU >= TL_CPUS_MAX), -ENOSPC (len too small). */
#define TL_CPUS_MAX 8192
int tl_cpu_list_mask(const char *list, char *mask, size_t len);
/* The interface's MAC address. 0, or -errno. */
int tl_iface_mac(const char *iface, uint8_t mac[6]);
/* Calls fn for every IPv4 and IPv6 address of iface. */
void tl_iface_addrs(const char *iface, void (*fn)(void *arg, int family, const uint8_t *addr), void *arg);
/* Transmit checksum offload off (frames reach the dataplane through XDP as they are: the
 * kernel finishes checksums itself). 0, or -errno. */
int tl_iface_tx_csum_off(const char *ifname);
/* The host end of the packet port keeps only the offloads a virtio-net header carries (TCP
 * segmentation, TCP/UDP checksum); the host's kernel does every other one. 0, or -errno. */
int tl_iface_virtio_offloads(const char *ifname);
/* No IPv6 on ifname (the packet port's end would answer the host's neighbour and router
 * messages). 0 (also where the kernel has no IPv6), or -errno. */
int tl_iface_ipv6_off(const char *ifname);

/* AF_XDP sockets this process has open (net_af_xdp does not expose its sockets, and
 * getsockname() is not implemented for them): fds[fd] set for each, fd < TL_XSK_FD_MAX. */
#define TL_XSK_FD_MAX 4096
void tl_xsk_fds_scan(bool fds[TL_XSK_FD_MAX]);
/* The one socket in after[] that is not in before[], else -1. */
int tl_xsk_fd_new(const bool before[TL_XSK_FD_MAX], const bool after[TL_XSK_FD_MAX]);

/* XDP_MAX_TX_SKB_BUDGET (Linux 6.17, include/uapi/linux/if_xdp.h; older headers lack it): the
 * descriptors of an AF_XDP socket's TX ring one send() hands to the driver in copy mode (the
 * kernel's default is 32; the rest waits for the next send(), which net_af_xdp makes at once).
 * The kernel takes 32 .. the TX ring's size. */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif
#define TL_XSK_TX_BUDGET_MIN 32u
/* Sets the socket's budget. 0; -ENOPROTOOPT: a kernel before 6.17 (the default stays);
 * -EACCES: no TX ring, or budget outside 32 .. its size; other -errno (not an AF_XDP socket). */
int tl_xsk_tx_budget(int fd, unsigned budget);

#endif
