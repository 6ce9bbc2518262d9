/* An AF_XDP socket's copy-mode TX budget (XDP_MAX_TX_SKB_BUDGET, kernel/iface.c) against the
 * running kernel: taken within 32 .. the TX ring's size, refused with -EACCES outside it or
 * without a TX ring; and the budget the ports ask for fits the rings they open. A kernel
 * before 6.17 answers -ENOPROTOOPT: the test says so and skips (77). Needs root. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "kernel/iface.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

static int xsk(int tx_entries)
{
	int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd >= 0 && tx_entries && setsockopt(fd, SOL_XDP, XDP_TX_RING, &tx_entries, sizeof(tx_entries)) < 0) {
		printf("FAIL: an AF_XDP TX ring of %d: %s\n", tx_entries, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int main(void)
{
	int fd = xsk(64), bare = xsk(0), r;

	if (fd < 0 || bare < 0) {
		printf("FAIL: an AF_XDP socket: %s\n", strerror(errno));
		return 1;
	}
	r = tl_xsk_tx_budget(fd, 64);
	if (r == -ENOPROTOOPT) {
		printf("SKIP: the kernel has no XDP_MAX_TX_SKB_BUDGET (before Linux 6.17)\n");
		return 77;
	}
	CHECK(r == 0, "a budget of the ring's 64 is taken (%s)", strerror(-r));
	CHECK((r = tl_xsk_tx_budget(fd, TL_XSK_TX_BUDGET_MIN)) == 0, "the least, 32, is taken (%s)", strerror(-r));
	CHECK((r = tl_xsk_tx_budget(fd, 128)) == -EACCES, "above the ring's 64: -EACCES (%d)", r);
	CHECK((r = tl_xsk_tx_budget(fd, 16)) == -EACCES, "below 32: -EACCES (%d)", r);
	CHECK((r = tl_xsk_tx_budget(bare, 64)) == -EACCES, "no TX ring: -EACCES (%d)", r);
	close(fd);
	close(bare);
	return check_report();
}
