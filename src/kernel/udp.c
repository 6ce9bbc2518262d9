/* Kernel UDP sockets with the kernel's drop count (udp.h). */
#include "kernel/udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int tl_udp_open(int family, uint16_t port, const char *iface)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int one = 1, fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (family == AF_INET ? setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0
			      : setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) < 0)
		goto fail;
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, iface, (socklen_t)strlen(iface)) < 0)
		goto fail;
	if (tl_udp_ovfl_enable(fd) < 0)
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

int tl_udp_ovfl_enable(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
}

ssize_t tl_udp_recv(int fd, void *buf, size_t len, struct sockaddr_storage *src, uint32_t *ovfl_seen,
			uint64_t *dropped)
{
	return tl_udp_recv_to(fd, buf, len, src, NULL, ovfl_seen, dropped);
}

ssize_t tl_udp_recv_to(int fd, void *buf, size_t len, struct sockaddr_storage *src, uint8_t *dst,
		       uint32_t *ovfl_seen, uint64_t *dropped)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct in6_pktinfo))];
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
	if (dst)
		memset(dst, 0, 16);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		uint32_t total;

		if (dst && c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(dst, &pi.ipi_addr, 4);
		} else if (dst && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(dst, &pi.ipi6_addr, 16);
		}
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL)
			continue;
		memcpy(&total, CMSG_DATA(c), sizeof(total));
		*dropped += (uint32_t)(total - *ovfl_seen);   /* the kernel's count wraps at 2^32 */
		*ovfl_seen = total;
	}
	return n;
}
