/* The listen port's kernel UDP sockets: open, close, and the reading of what the kernel
 * reassembled into frames for worker 0's slow-path ring (see udpsock.h). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/neigh.h"
#include "ctrl/udpsock.h"
#include "dataplane/packet.h"
#include "kernel/udp.h"

#define TL_UDPSOCK_BUDGET 64

int tl_udpsock_bind(struct tl_device *dev, uint16_t port, int fds[2])
{
	fds[0] = fds[1] = -1;
	for (int i = 0; i < 2; i++) {
		int fd = tl_udp_open(i ? AF_INET6 : AF_INET, port, dev->cfg->wan.iface);

		if (fd == -EAFNOSUPPORT)
			continue;
		if (fd < 0) {
			if (fds[0] >= 0)
				close(fds[0]);
			fds[0] = -1;
			return fd;
		}
		fds[i] = fd;
	}
	return 0;
}

static void udp_event(void *arg, uint32_t events);

/* The sockets in the control loop: read when a datagram waits. */
static void watch(struct tl_device *dev)
{
	for (int i = 0; dev->loop && i < 2; i++)
		if (dev->udp_fd[i] >= 0)
			tl_evloop_add(dev->loop, &dev->udp_item[i], dev->udp_fd[i], EPOLLIN, udp_event, dev);
	dev->udp_blocked = false;
}

int tl_udpsock_open(struct tl_device *dev, char *err, size_t errlen)
{
	int r;

	dev->udp_fd[0] = dev->udp_fd[1] = -1;
	dev->udp_item[0].fd = dev->udp_item[1].fd = -1;
	if (!dev->ports[TL_PORT_WAN].af_xdp)
		return 0;
	r = tl_udpsock_bind(dev, tl_dp_listen_port(&dev->dp), dev->udp_fd);
	if (r < 0) {
		snprintf(err, errlen, "listen_port: cannot bind UDP %u on %s: %s", tl_dp_listen_port(&dev->dp),
			 dev->cfg->wan.iface, strerror(-r));
		return -1;
	}
	watch(dev);
	return 0;
}

void tl_udpsock_close(struct tl_device *dev)
{
	for (int i = 0; i < 2; i++) {
		if (dev->loop)
			tl_evloop_del(dev->loop, &dev->udp_item[i]);
		if (dev->udp_fd[i] >= 0)
			close(dev->udp_fd[i]);
	}
	dev->udp_fd[0] = dev->udp_fd[1] = -1;
}

void tl_udpsock_replace(struct tl_device *dev, const int fds[2])
{
	tl_udpsock_close(dev);
	dev->udp_fd[0] = fds[0];
	dev->udp_fd[1] = fds[1];
	dev->udp_ovfl[0] = dev->udp_ovfl[1] = 0;
	watch(dev);
}

/* Rebuilds the frame the datagram would have been on the wire, so that the dataplane
 * treats it like any other. */
static struct rte_mbuf *frame_of(struct tl_device *dev, const struct sockaddr_storage *src, const uint8_t dst[16],
				 const uint8_t *data, size_t len)
{
	const struct tl_port_info *wan = &dev->dp.port[TL_PORT_WAN];
	struct tl_endpoint ep = { .family = src->ss_family, .mac_valid = true };
	struct tl_port_info back = *wan;
	struct rte_mbuf *m;

	atomic_store_explicit(&back.addrs, NULL, memory_order_relaxed);   /* the fixed addresses below */
	back.has_ip4 = back.has_ip6 = true;

	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)src;

		memcpy(ep.ip, &a->sin_addr, 4);
		ep.port = ntohs(a->sin_port);
	} else {
		const struct sockaddr_in6 *a = (const void *)src;

		memcpy(ep.ip, &a->sin6_addr, 16);
		ep.port = ntohs(a->sin6_port);
	}
	/* The link-layer source of a reassembled datagram is gone: the neighbour table's
	 * entry stands in for it, else an all-zero MAC says "unknown" and the dataplane
	 * leaves the next hop to the control plane's resolution, which the kernel starts now
	 * (the datagram is not lost). */
	if (tl_neigh_lookup(dev, TL_PORT_WAN, ep.family, ep.ip, ep.mac, true) != 0)
		memset(ep.mac, 0, sizeof(ep.mac));
	m = rte_pktmbuf_alloc(dev->dp.ctrl_pool);
	if (!m || len > rte_pktmbuf_tailroom(m) || !rte_pktmbuf_append(m, (uint16_t)len)) {
		dev->cnt.drops[m ? TL_DROP_oversized : TL_DROP_nomem]++;
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy(rte_pktmbuf_mtod(m, void *), data, len);
	/* Outer headers as sent by the peer: its address is the source, ours the destination;
	 * tl_pkt_push_outer builds them from our side, so swap roles through a mirrored port. */
	memcpy(back.mac, ep.mac, 6);
	memcpy(ep.mac, wan->mac, 6);
	memcpy(back.ip4, ep.ip, 4);
	memcpy(back.ip6, ep.ip, 16);
	memcpy(ep.ip, dst, 16);           /* the address of ours it was sent to */
	{
		uint16_t peer_port = ep.port;

		ep.port = tl_dp_listen_port(&dev->dp);
		if (tl_pkt_push_outer(m, &back, &ep, peer_port, 0) != 0) {
			tl_drop_pkt(&dev->cnt, m, TL_DROP_oversized);
			return NULL;
		}
	}
	return m;
}

static unsigned poll_fd(struct tl_device *dev, int i)
{
	static uint8_t buf[65536];
	struct sockaddr_storage src;
	uint8_t dst[16];
	struct rte_ring *slow_rx = dev->workers[0].slow_rx;
	unsigned n = 0;

	/* A full slow-path ring stops the reading: datagrams wait in the socket buffer until
	 * the worker made room (we are the ring's only producer, so the enqueue then fits);
	 * meanwhile the loop does not watch the sockets (tl_udpsock_resume). */
	if (rte_ring_full(slow_rx) && !dev->udp_blocked) {
		for (int k = 0; dev->loop && k < 2; k++)
			tl_evloop_mod(dev->loop, &dev->udp_item[k], 0);
		dev->udp_blocked = true;
	}
	while (n < TL_UDPSOCK_BUDGET && !rte_ring_full(slow_rx)) {
		ssize_t len = tl_udp_recv_to(dev->udp_fd[i], buf, sizeof(buf), &src, dst, &dev->udp_ovfl[i],
					      &dev->cnt.drops[TL_DROP_kernel_socket_overflow]);
		struct rte_mbuf *m;

		if (len < 0)
			break;
		n++;
		dev->cnt.slowpath_read++;
		m = frame_of(dev, &src, dst, buf, (size_t)len);
		if (!m) {
			dev->cnt.slowpath_drops++;      /* frame_of counted why */
		} else if (rte_ring_sp_enqueue(slow_rx, m) != 0) {
			dev->cnt.slowpath_drops++;
			tl_drop_pkt(&dev->cnt, m, TL_DROP_ctrl_backlog);
		}
	}
	if (n)
		tl_worker_kick(&dev->workers[0]);
	return n;
}

static void udp_event(void *arg, uint32_t events)
{
	struct tl_device *dev = arg;

	(void)events;
	tl_udpsock_poll(dev);
}

unsigned tl_udpsock_poll(struct tl_device *dev)
{
	unsigned n = 0;

	for (int i = 0; i < 2; i++)
		if (dev->udp_fd[i] >= 0)
			n += poll_fd(dev, i);
	return n;
}

void tl_udpsock_resume(struct tl_device *dev)
{
	if (!dev->udp_blocked || rte_ring_full(dev->workers[0].slow_rx))
		return;
	for (int k = 0; dev->loop && k < 2; k++)
		tl_evloop_mod(dev->loop, &dev->udp_item[k], EPOLLIN);
	dev->udp_blocked = false;
	tl_udpsock_poll(dev);
}
