/* What the kernel tells of an interface, and of this process's AF_XDP sockets (iface.c). No
 * DPDK, no device. */
#ifndef TL_KERNEL_IFACE_H
#define TL_KERNEL_IFACE_H

#include <linux/if_xdp.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Queue pairs net_af_xdp opens on iface: its combined channels, 1 where it has none (veth,
 * most virtual NICs). */
unsigned tl_iface_channels(const char *iface);
/* RX queues the kernel has for iface (0: unknown). */
unsigned tl_iface_rx_queues(const char *iface);
/* Receive packet steering (RPS) over the CPUs of cpus on each RX queue of iface: a frame the
 * kernel takes through a CPU's backlog (netif_rx) goes to the backlog of the CPU its flow hash
 * picks, so one flow keeps its order whichever CPUs sent it. 0, -EINVAL (cpus is empty;
 * nothing written), -ENOENT (no such interface, or no rps_cpus: a kernel without CONFIG_RPS),
 * or other -errno. */
int tl_iface_rps_set(const char *iface, const cpu_set_t *cpus);
/* The CPUs of set as the hex mask rps_cpus takes, into mask[len]: 32-bit words, the highest
 * first, comma-separated, no leading zeros in the first ("3" for CPUs 0-1, "10f" for 0-3 and 8,
 * "1,00000000" for CPU 32). 0, -EINVAL (no CPU in set), -ENOSPC (len too small); mask is ""
 * after an error. TL_CPU_MASK_LEN holds any cpu_set_t's. */
#define TL_CPU_MASK_LEN (CPU_SETSIZE / 4 + CPU_SETSIZE / 32 + 1)
int tl_cpu_set_mask(const cpu_set_t *set, char *mask, size_t len);
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
