/* Kernel socket overflow counting on the listen port's UDP sockets: a real UDP socket on
 * the loopback with a small receive buffer is sent more than it holds; reading it with
 * tl_udp_recv must count exactly the datagrams the kernel dropped (its own count, read
 * with SO_MEMINFO), and received + counted must equal sent. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "kernel/udp.h"
#include "dataplane/dp.h"

#define SENT 400
#define DGRAM 1000

static uint32_t kernel_drops(int fd)
{
	uint32_t mem[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof(mem);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0)
		return UINT32_MAX;
	return mem[SK_MEMINFO_DROPS];
}

/* Reads everything waiting; returns the number of datagrams. */
static unsigned drain(int fd, uint32_t *seen, struct tl_counters *cnt)
{
	static uint8_t buf[65536];
	struct sockaddr_storage src;
	unsigned n = 0;

	while (tl_udp_recv(fd, buf, sizeof(buf), &src, seen,
			       &cnt->drops[TL_DROP_kernel_socket_overflow]) >= 0)
		n++;
	CHECK(errno == EAGAIN || errno == EWOULDBLOCK, "drain ends on EAGAIN, not %s", strerror(errno));
	return n;
}

int main(void)
{
	static struct tl_counters cnt;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0), small = 4096;
	uint8_t payload[DGRAM] = { 0 };
	uint32_t seen = 0;
	unsigned got, sent = 0;

	CHECK(rx >= 0 && tx >= 0, "sockets: %s", strerror(errno));
	CHECK(setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0, "SO_RCVBUF");
	CHECK(tl_udp_ovfl_enable(rx) == 0, "SO_RXQ_OVFL: %s", strerror(errno));
	CHECK(bind(rx, (struct sockaddr *)&a, sizeof(a)) == 0, "bind: %s", strerror(errno));
	CHECK(getsockname(rx, (struct sockaddr *)&a, &alen) == 0, "getsockname");
	for (int i = 0; i < SENT; i++)
		sent += sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&a, sizeof(a)) == DGRAM;
	CHECK(sent == SENT, "sent %u of %d", sent, SENT);
	got = drain(rx, &seen, &cnt);
	CHECK(kernel_drops(rx) > 0, "the kernel dropped nothing (buffer not small enough?)");
	CHECK(got > 0 && got < SENT, "received %u of %u", got, sent);
	/* The drops after the last queued datagram show with the next one. */
	sent += sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&a, sizeof(a)) == DGRAM;
	got += drain(rx, &seen, &cnt);
	CHECK(cnt.drops[TL_DROP_kernel_socket_overflow] == kernel_drops(rx),
	      "counted %lu, the kernel dropped %u", (unsigned long)cnt.drops[TL_DROP_kernel_socket_overflow],
	      kernel_drops(rx));
	CHECK(got + cnt.drops[TL_DROP_kernel_socket_overflow] == sent, "received %u + counted %lu != sent %u", got,
	      (unsigned long)cnt.drops[TL_DROP_kernel_socket_overflow], sent);
	printf("sent %u, received %u, kernel_socket_overflow %lu\n", sent, got,
	       (unsigned long)cnt.drops[TL_DROP_kernel_socket_overflow]);
	close(rx);
	close(tx);
	return check_report();
}
