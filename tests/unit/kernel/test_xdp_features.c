/* The XDP features query (src/kernel/xdp_features.c) against the running kernel, in a network
 * namespace of the test's own: a veth offers native XDP but no zero-copy AF_XDP (so host
 * mode's WAN on it is the udp kind), a missing interface is an error. Needs root. */

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel/xdp_features.h"

int main(void)
{
	uint64_t f = 0;
	int r;

	if (unshare(CLONE_NEWNET) != 0 || system("ip link add va type veth peer name vb") != 0) {
		printf("FAIL: a veth pair in a namespace of our own: %s\n", strerror(errno));
		return 1;
	}
	r = tl_xdp_features("va", &f);
	CHECK(r == 0, "the kernel tells va's XDP features (%d)", r);
	CHECK((f & TL_XDP_ACT_BASIC) && !(f & TL_XDP_ACT_XSK_ZEROCOPY), "a veth: native XDP, no zero-copy (%#lx)",
	      (unsigned long)f);
	CHECK(!tl_xdp_zero_copy("va"), "so no zero-copy");
	CHECK(tl_xdp_features("nosuch0", &f) == -ENODEV && !tl_xdp_zero_copy("nosuch0"), "no interface: -ENODEV");
	return check_report();
}
