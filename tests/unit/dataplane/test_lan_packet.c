/* The worker's egress on real socket ports in a network namespace of the test's own, fed by
 * the pipeline harness: decrypted packets leave a `packet` LAN port (AF_PACKET on a veth
 * pair), sealed ones a `udp` WAN port (on lo), and the egress queue's tx_packets and
 * tx_bytes count exactly what the kernel took when the port refuses a frame in the middle of
 * a burst (too big for the veth, no route to an endpoint: the kernel's send error, dropped as
 * kernel_send_failed). Needs CAP_NET_ADMIN and CAP_SYS_ADMIN. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "dataplane/afpacket.h"
#include "dataplane/udpport.h"
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

static const struct tl_endpoint PEER_LO = {
	.family = AF_INET, .ip = { 127, 0, 0, 1 }, .port = 40002,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x02 }, .mac_valid = true,
};
static const struct tl_endpoint PEER_FAR = {      /* broadcast: the kernel refuses (EACCES) */
	.family = AF_INET, .ip = { 255, 255, 255, 255 }, .port = 40003,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x03 }, .mac_valid = true,
};
static const uint8_t NET_LO4[4] = { 10, 2, 0, 0 }, HOST_LO4[4] = { 10, 2, 0, 5 };
static const uint8_t NET_FAR4[4] = { 10, 3, 0, 0 }, HOST_FAR4[4] = { 10, 3, 0, 5 };

/* A udp WAN port on lo; inner packets of 600, 700 and 800 bytes to a peer at 127.0.0.1, one
 * whose endpoint is the broadcast address (no SO_BROADCAST), and the first again: the kernel refuses the middle one,
 * and the WAN queue's tx_bytes counts the two frames it sent. */
static void test_wan_refused(void)
{
	static const uint16_t lens[3] = { 600, 700, 800 };
	struct tl_pl pl;
	struct tl_peer *lo, *far;
	struct tl_udpport *u = NULL;
	char err[256] = "";
	uint8_t ip[1000];
	uint64_t want_bytes = 0;
	const struct tl_egress *e;

	if (system("ip link set lo up") != 0 || tl_pl_setup(&pl, NULL) != 0) {
		CHECK(0, "wan refused: lo up, harness up");
		return;
	}
	e = &pl.w.eg[TL_PORT_WAN];
	lo = tl_pl_peer_add(&pl, 1, &PEER_LO);
	far = tl_pl_peer_add(&pl, 2, &PEER_FAR);
	if (lo && far && tl_pl_route_add(&pl, AF_INET, NET_LO4, 16, 1) == 0 &&
	    tl_pl_route_add(&pl, AF_INET, NET_FAR4, 16, 2) == 0 && tl_pl_routes_publish(&pl) == 0 &&
	    tl_pl_keypair_add(&pl, lo, 0x1002, 0x2002) && tl_pl_keypair_add(&pl, far, 0x1003, 0x2003))
		u = tl_udpport_open(&(struct tl_udpport_cfg){ .iface = "lo", .port = TL_PL_LISTEN_PORT, .queues = 1,
							  .v4 = true, .mac = TL_PL_WAN_MAC, .gw_mac = PEER_LO.mac,
							  .ip4 = TL_PL_WAN_IP4, .pools = &pl.pool },
				    err, sizeof(err));
	CHECK(u != NULL, "wan refused: peers, keypairs, udp port on lo (%s)", err);
	if (u) {
		pl.dp.port[TL_PORT_WAN].ops = &tl_udpport_ops;          /* as tl_port_open does */
		pl.dp.port[TL_PORT_WAN].priv = u;
		pl.dp.port[TL_PORT_WAN].src_by_kernel = true;
		for (unsigned i = 0; i < 3; i++) {
			uint16_t len = tl_pl_ip(ip, AF_INET, LAN_HOST4, i == 1 ? HOST_FAR4 : HOST_LO4, lens[i], i + 1);

			if (i != 1)   /* Ethernet, IPv4, UDP, data header, padded packet, tag */
				want_bytes += 14 + 20 + 8 + 16 + RTE_ALIGN_CEIL(len, 16) + 16;
			tl_pl_inject(&pl, TL_PORT_LAN, tl_pl_lan_frame(&pl, ip, len));
		}
		tl_pl_run(&pl);
		CHECK(e->tx_packets == 2 && pl.w.cnt.tx[TL_PORT_WAN] == 2,
		      "wan refused: 2 frames sent (egress %" PRIu64 ", port %" PRIu64 ")", e->tx_packets,
		      pl.w.cnt.tx[TL_PORT_WAN]);
		CHECK(e->tx_bytes == want_bytes, "wan refused: tx_bytes counts the 2 frames sent: %" PRIu64 " (want %" PRIu64
		      ")", e->tx_bytes, want_bytes);
		CHECK(tl_pl_drops_only(&pl, TL_DROP_kernel_send_failed, 1), "wan refused: one kernel_send_failed");
		pl.dp.port[TL_PORT_WAN].ops = NULL;
		pl.dp.port[TL_PORT_WAN].priv = NULL;
		pl.dp.port[TL_PORT_WAN].src_by_kernel = false;
	}
	tl_udpport_close(u);
	tl_pl_teardown(&pl);
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
		pl.dp.port[TL_PORT_LAN].ops = &tl_afp_ops;   /* the LAN port's frames go to the veth */
		pl.dp.port[TL_PORT_LAN].priv = afp;
		test_refused_in_burst(&pl, kp);
		pl.dp.port[TL_PORT_LAN].ops = NULL;
		pl.dp.port[TL_PORT_LAN].priv = NULL;
	}
	tl_afp_close(afp);
	tl_pl_teardown(&pl);
	test_wan_refused();
	tl_pl_eal_fini();
	return check_report();
}
