/* The listen port as kernel UDP sockets on the WAN interface: they hold the port (no
 * other program takes it, no "port unreachable" goes out), and they receive what the XDP
 * program leaves to the kernel for the port: IP fragments, which the kernel reassembles.
 * Those datagrams join the dataplane through worker 0's slow-path ring. */
#ifndef TL_UDPSOCK_H
#define TL_UDPSOCK_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct tl_device;

int tl_udpsock_open(struct tl_device *dev, char *err, size_t errlen);
void tl_udpsock_close(struct tl_device *dev);
/* A listen-port change: binds the sockets of port into fds (not yet the device's; 0, or
 * -errno and nothing left open), then the device's are replaced by them (the datagrams
 * still waiting in the old ones are lost with them). */
int tl_udpsock_bind(struct tl_device *dev, uint16_t port, int fds[2]);
void tl_udpsock_replace(struct tl_device *dev, const int fds[2]);
/* Datagrams the kernel drops on the socket (receive buffer full) are counted through
 * SO_RXQ_OVFL: every datagram received carries the socket's running drop count, so drops
 * are counted when the next datagram is read. They happened before tunless received the
 * datagrams: counted under kernel_socket_overflow, never part of a port's rx. */
int tl_udpsock_ovfl_enable(int fd);
/* One datagram from fd into buf (recvmsg, non-blocking): its length or -1 (errno). The
 * drops since *ovfl_seen (the last running count read) are added to *dropped. */
ssize_t tl_udpsock_recv(int fd, void *buf, size_t len, struct sockaddr_storage *src, uint32_t *ovfl_seen,
			uint64_t *dropped);
/* Receives what is waiting (bounded); returns the number of datagrams taken. */
unsigned tl_udpsock_poll(struct tl_device *dev);

#endif
