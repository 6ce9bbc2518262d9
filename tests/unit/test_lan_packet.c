/* The worker's LAN egress on a real `packet` port (AF_PACKET on a veth pair in a network
 * namespace of the test's own), fed by the pipeline harness: decrypted packets leave the
 * LAN port, and the egress queue's tx_packets and tx_bytes count exactly what the kernel
 * took, when the port refuses a frame in the middle of a burst (too big for the veth: the
 * kernel's send error, dropped as kernel_send_failed). Needs CAP_NET_ADMIN and CAP_SYS_ADMIN. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "dataplane/afpacket.h"
#include "pipeline.h"

static const struct tl_endpoint PEER4 = {
	.family = AF_INET, .ip = { 203, 0, 113, 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
static const uint8_t PEER_NET4[4] = { 10, 1, 0, 0 };
static const uint8_t PEER_HOST4[4] = { 10, 1, 0, 5 };
static const uint8_t LAN_HOST4[4] = { 10, 99, 0, 20 };

/* Three inner packets of 600, 1300 and 700 bytes through the veth of MTU 1000: the first
 * and the last leave, the middle one is refused by the kernel. */
static void test_refused_in_burst(struct tl_pl *pl, struct tl_keypair *kp)
{
	static const uint16_t lens[3] = { 600, 1300, 700 };
	const struct tl_egress *e = &pl->w.eg[TL_PORT_LAN];
	uint8_t ip[1400];
	uint64_t want_bytes = 0;

	for (unsigned i = 0; i < 3; i++) {
		uint16_t len = tl_pl_ip(ip, AF_INET, PEER_HOST4, LAN_HOST4, lens[i], i + 1);

		if (i != 1)
			want_bytes += TL_ETH_LEN + len;
		tl_pl_inject(pl, TL_PORT_WAN, tl_pl_wan_data(pl, &PEER4, kp, i, ip, len, NULL));
	}
	tl_pl_run(pl);
	CHECK(e->tx_packets == 2 && pl->w.cnt.tx[TL_PORT_LAN] == 2, "2 frames sent (egress %" PRIu64 ", port %" PRIu64 ")",
	      e->tx_packets, pl->w.cnt.tx[TL_PORT_LAN]);
	CHECK(e->tx_bytes == want_bytes, "tx_bytes counts the 2 frames sent: %" PRIu64 " (want %" PRIu64 ")", e->tx_bytes,
	      want_bytes);
	CHECK(tl_pl_drops_only(pl, TL_DROP_kernel_send_failed, 1), "the refused frame: one kernel_send_failed");
}

int main(int argc, char **argv)
{
	struct tl_pl pl;
	struct tl_afp *afp = NULL;
	struct tl_peer *peer;
	struct tl_keypair *kp = NULL;
	char err[256] = "";

	(void)argc;
	if (unshare(CLONE_NEWNET) != 0) {
		printf("FAIL: unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
		return 1;
	}
	if (system("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && "
		   "ip link add va mtu 1000 type veth peer name vb mtu 1000 && ip link set va up && ip link set vb up") != 0) {
		printf("FAIL: cannot make the veth pair\n");
		return 1;
	}
	if (tl_pl_eal_init(argv[0]) != 0 || tl_pl_setup(&pl, NULL) != 0)
		return 1;
	peer = tl_pl_peer_add(&pl, 0, &PEER4);
	if (peer && tl_pl_route_add(&pl, AF_INET, PEER_NET4, 16, 0) == 0 && tl_pl_routes_publish(&pl) == 0)
		kp = tl_pl_keypair_add(&pl, peer, 0x1001, 0x2001);
	afp = tl_afp_open(&(struct tl_afp_cfg){ .iface = "vb", .queues = 1, .pools = &pl.pool }, err, sizeof(err));
	CHECK(kp && afp, "fixture: peer, keypair, packet port on vb (%s)", err);
	if (kp && afp) {
		pl.dp.port[TL_PORT_LAN].afp = afp;        /* the LAN port's frames go to the veth */
		test_refused_in_burst(&pl, kp);
		pl.dp.port[TL_PORT_LAN].afp = NULL;
	}
	tl_afp_close(afp);
	tl_pl_teardown(&pl);
	tl_pl_eal_fini();
	return check_report();
}
