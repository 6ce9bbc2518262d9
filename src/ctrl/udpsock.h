/* The listen port as kernel UDP sockets on the WAN interface: they hold the port (no
 * other program takes it, no "port unreachable" goes out), and they receive what the XDP
 * program leaves to the kernel for the port: IP fragments, which the kernel reassembles.
 * Those datagrams join the dataplane through worker 0's slow-path ring. */
#ifndef TL_UDPSOCK_H
#define TL_UDPSOCK_H

#include <stdint.h>

struct tl_device;

int tl_udpsock_open(struct tl_device *dev, char *err, size_t errlen);
void tl_udpsock_close(struct tl_device *dev);
/* A listen-port change: binds the sockets of port into fds (not yet the device's; 0, or
 * -errno and nothing left open), then the device's are replaced by them (the datagrams
 * still waiting in the old ones are lost with them). */
int tl_udpsock_bind(struct tl_device *dev, uint16_t port, int fds[2]);
void tl_udpsock_replace(struct tl_device *dev, const int fds[2]);
/* Receives what is waiting (bounded); returns the number of datagrams taken. The sockets
 * are in the control loop (dev->loop), which calls it when they are readable; while the
 * slow-path ring is full they are left out (dev->udp_blocked) and tl_udpsock_resume, from
 * the loop's ticks, takes them back once the worker made room. */
unsigned tl_udpsock_poll(struct tl_device *dev);
void tl_udpsock_resume(struct tl_device *dev);

#endif
