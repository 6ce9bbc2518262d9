/* Kernel UDP sockets as the listen port's slow path uses them (src/ctrl/udpsock.c): bound to
 * an interface and a port, and read with the kernel's count of what it dropped for them. No
 * DPDK, no device. */
#ifndef TL_KERNEL_UDP_H
#define TL_KERNEL_UDP_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* A non-blocking socket of family bound to port on iface (IPv6: v6 only), SO_RXQ_OVFL and
 * the destination of each datagram (IP_PKTINFO / IPV6_RECVPKTINFO) on.
 * The fd, or -errno. */
int tl_udp_open(int family, uint16_t port, const char *iface);
/* Datagrams the kernel drops on the socket (receive buffer full) are counted through
 * SO_RXQ_OVFL: every datagram received carries the socket's running drop count, so drops
 * are counted when the next datagram is read. They happened before tunless received the
 * datagrams: counted under kernel_socket_overflow, never part of a port's rx. */
int tl_udp_ovfl_enable(int fd);
/* One datagram from fd into buf (recvmsg, non-blocking): its length or -1 (errno). The
 * drops since *ovfl_seen (the last running count read) are added to *dropped. */
ssize_t tl_udp_recv(int fd, void *buf, size_t len, struct sockaddr_storage *src, uint32_t *ovfl_seen,
		    uint64_t *dropped);
/* The same, and the address it was sent to into dst (16 bytes; all zero if the kernel did
 * not say: IP_PKTINFO / IPV6_RECVPKTINFO, on in sockets of tl_udp_open). */
ssize_t tl_udp_recv_to(int fd, void *buf, size_t len, struct sockaddr_storage *src, uint8_t *dst,
		       uint32_t *ovfl_seen, uint64_t *dropped);

#endif
