/* The listen port's kernel UDP sockets: open, close, and the reading of what the kernel
 * reassembled into frames for worker 0's slow-path ring (see udpsock.h). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
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

#define TL_UDPSOCK_BUDGET 64

static int sock_open(struct tl_device *dev, int family, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int one = 1, fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev->cfg->wan.iface, (socklen_t)strlen(dev->cfg->wan.iface)) < 0)
		goto fail;
	if (tl_udpsock_ovfl_enable(fd) < 0)
		goto fail;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		goto fail;
	return fd;
fail:
	one = -errno;
	close(fd);
	return one;
}

int tl_udpsock_bind(struct tl_device *dev, uint16_t port, int fds[2])
{
	fds[0] = fds[1] = -1;
	for (int i = 0; i < 2; i++) {
		int fd = sock_open(dev, i ? AF_INET6 : AF_INET, port);

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

int tl_udpsock_open(struct tl_device *dev, char *err, size_t errlen)
{
	int r;

	dev->udp_fd[0] = dev->udp_fd[1] = -1;
	if (!dev->ports[TL_PORT_WAN].af_xdp)
		return 0;
	r = tl_udpsock_bind(dev, tl_dp_listen_port(&dev->dp), dev->udp_fd);
	if (r < 0) {
		snprintf(err, errlen, "listen_port: cannot bind UDP %u on %s: %s", tl_dp_listen_port(&dev->dp),
			 dev->cfg->wan.iface, strerror(-r));
		return -1;
	}
	return 0;
}

void tl_udpsock_close(struct tl_device *dev)
{
	for (int i = 0; i < 2; i++)
		if (dev->udp_fd[i] >= 0)
			close(dev->udp_fd[i]);
	dev->udp_fd[0] = dev->udp_fd[1] = -1;
}

void tl_udpsock_replace(struct tl_device *dev, const int fds[2])
{
	tl_udpsock_close(dev);
	dev->udp_fd[0] = fds[0];
	dev->udp_fd[1] = fds[1];
	dev->udp_ovfl[0] = dev->udp_ovfl[1] = 0;
}

/* Rebuilds the frame the datagram would have been on the wire, so that the dataplane
 * treats it like any other. */
static struct rte_mbuf *frame_of(struct tl_device *dev, const struct sockaddr_storage *src,
				 const uint8_t *data, size_t len)
{
	const struct tl_port_info *wan = &dev->dp.port[TL_PORT_WAN];
	struct tl_endpoint ep = { .family = src->ss_family, .mac_valid = true };
	struct tl_port_info back = *wan;
	struct rte_mbuf *m;

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
	if (src->ss_family == AF_INET)
		memcpy(ep.ip, wan->ip4, 4);
	else
		memcpy(ep.ip, wan->ip6, 16);
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

int tl_udpsock_ovfl_enable(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
}

ssize_t tl_udpsock_recv(int fd, void *buf, size_t len, struct sockaddr_storage *src, uint32_t *ovfl_seen,
			uint64_t *dropped)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_name = src, .msg_namelen = sizeof(*src),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);

	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		uint32_t total;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL)
			continue;
		memcpy(&total, CMSG_DATA(c), sizeof(total));
		*dropped += (uint32_t)(total - *ovfl_seen);   /* the kernel's count wraps at 2^32 */
		*ovfl_seen = total;
	}
	return n;
}

static unsigned poll_fd(struct tl_device *dev, int i)
{
	static uint8_t buf[65536];
	struct sockaddr_storage src;
	struct rte_ring *slow_rx = dev->workers[0].slow_rx;
	unsigned n = 0;

	/* A full slow-path ring stops the reading: datagrams wait in the socket buffer until
	 * the worker made room (we are the ring's only producer, so the enqueue then fits). */
	while (n < TL_UDPSOCK_BUDGET && !rte_ring_full(slow_rx)) {
		ssize_t len = tl_udpsock_recv(dev->udp_fd[i], buf, sizeof(buf), &src, &dev->udp_ovfl[i],
					      &dev->cnt.drops[TL_DROP_kernel_socket_overflow]);
		struct rte_mbuf *m;

		if (len < 0)
			break;
		n++;
		dev->cnt.slowpath_read++;
		m = frame_of(dev, &src, buf, (size_t)len);
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

unsigned tl_udpsock_poll(struct tl_device *dev)
{
	unsigned n = 0;

	for (int i = 0; i < 2; i++)
		if (dev->udp_fd[i] >= 0)
			n += poll_fd(dev, i);
	return n;
}
