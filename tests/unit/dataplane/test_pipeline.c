/* The worker pipeline end to end on net_ring ports (pipeline.h): LAN -> WAN encryption
 * and WAN -> LAN decryption and delivery, the per-reason drops of bad data messages,
 * handshake messages handed to the control plane, packets queued behind staged ones, and the
 * per-port balance after each; a short read of the WAN port ends the round's reads. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "check.h"
#include "crypto/messages.h"
#include "pipeline.h"


/* The peer: where it sends from, and the inner networks behind it. Hosts on our LAN are
 * 10.99.0.0/24 and fd00:99::/64. */
static const uint8_t ELSEWHERE4[4] = { 172, 16, 0, 1 };

static bool endpoint_is(struct tl_peer *p, const struct tl_endpoint *want)
{
	struct tl_endpoint ep;

	tl_endpoint_read(p, &ep);
	return ep.family == want->family && ep.port == want->port && !memcmp(ep.ip, want->ip, 16) &&
	       !memcmp(ep.mac, want->mac, 6);
}

/* An inner packet from a LAN host to the peer's network, out of the WAN port, opened again
 * as the peer would: the same bytes, zero padding, counter 0. */
static void test_lan_to_wan(const struct tl_endpoint *ep, int inner)
{
	struct tl_pl_fixture f;
	uint8_t ip[1400], out[1500];
	struct rte_mbuf *m[4];
	const char *why = "";
	uint64_t ctr = 99;
	uint16_t len;
	int n, plen = -1;

	if (tl_pl_fixture_up(&f, ep) != 0) {
		CHECK(0, "lan_to_wan: setup");
		return;
	}
	len = inner == AF_INET ? tl_pl_ip(ip, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, 1001, 1)
			       : tl_pl_ip(ip, AF_INET6, TL_PL_LAN_HOST6, TL_PL_PEER_HOST6, 1001, 1);
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	n = (int)tl_pl_collect(&f.pl, TL_PORT_WAN, m, 4);
	CHECK(n == 1, "lan_to_wan: %d frames on the WAN port, expected 1", n);
	if (n == 1) {
		plen = tl_pl_open_data(&f.pl, m[0], ep, f.kp, &ctr, out, sizeof(out), &why);
		CHECK(plen == (int)RTE_ALIGN_CEIL(len, 16), "lan_to_wan: opened %d bytes (%s)", plen, why);
		CHECK(plen >= len && !memcmp(out, ip, len), "lan_to_wan: decrypted packet differs");
		CHECK(plen >= len && tl_is_zero(out + len, (size_t)plen - len), "lan_to_wan: padding not zero");
		CHECK(ctr == 0, "lan_to_wan: counter %" PRIu64 ", expected 0", ctr);
		rte_pktmbuf_free(m[0]);
	}
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "lan_to_wan: drops");
	CHECK(f.pl.w.cnt.tx[TL_PORT_WAN] == 1 && f.pl.w.cnt.rx[TL_PORT_LAN] == 1, "lan_to_wan: port counters");
	CHECK(!atomic_load(&f.peer->want_handshake), "lan_to_wan: asked for a handshake");
	CHECK(tl_pl_balanced(&f.pl), "lan_to_wan: balance");
	tl_pl_fixture_down(&f);
}

/* A data message from the peer is decrypted and leaves the LAN port to the host MAC. */
static void test_wan_to_lan(const struct tl_endpoint *ep, int inner)
{
	struct tl_pl_fixture f;
	uint8_t ip[1400];
	struct rte_mbuf *m[4];
	uint16_t len;
	int n;

	if (tl_pl_fixture_up(&f, ep) != 0) {
		CHECK(0, "wan_to_lan: setup");
		return;
	}
	len = inner == AF_INET ? tl_pl_ip(ip, AF_INET, TL_PL_PEER_HOST4, TL_PL_LAN_HOST4, 777, 2)
			       : tl_pl_ip(ip, AF_INET6, TL_PL_PEER_HOST6, TL_PL_LAN_HOST6, 777, 2);
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, ep, f.kp, 0, ip, len, NULL));
	tl_pl_run(&f.pl);
	n = (int)tl_pl_collect(&f.pl, TL_PORT_LAN, m, 4);
	CHECK(n == 1, "wan_to_lan: %d frames on the LAN port, expected 1", n);
	if (n == 1) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m[0], const struct rte_ether_hdr *);

		CHECK(m[0]->data_len == TL_ETH_LEN + len, "wan_to_lan: frame of %u bytes, expected %u",
		      m[0]->data_len, TL_ETH_LEN + len);
		CHECK(!memcmp(&eth->dst_addr, TL_PL_HOST_MAC, 6) && !memcmp(&eth->src_addr, TL_PL_LAN_MAC, 6),
		      "wan_to_lan: Ethernet addresses");
		CHECK(m[0]->data_len >= TL_ETH_LEN + len && !memcmp(eth + 1, ip, len), "wan_to_lan: packet differs");
		rte_pktmbuf_free(m[0]);
	}
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "wan_to_lan: drops");
	CHECK(endpoint_is(f.peer, ep), "wan_to_lan: endpoint changed");
	CHECK(atomic_load(&f.peer->stats.rx_packets) == 1, "wan_to_lan: peer rx_packets");
	CHECK(tl_pl_balanced(&f.pl), "wan_to_lan: balance");
	tl_pl_fixture_down(&f);
}

/* Bad data messages: each is dropped under its own reason, nothing reaches the LAN port,
 * and the WAN port's balance stays exact. */
enum bad_kind { BAD_RECEIVER, BAD_TAG, BAD_REPLAY, BAD_SOURCE };

static void test_bad_data(enum bad_kind kind, enum tl_drop want, const char *name)
{
	struct tl_pl_fixture f;
	struct tl_keypair stranger;
	uint8_t ip[512];
	struct rte_mbuf *m[4], *bad = NULL;
	uint16_t len;
	unsigned good = 0, n;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "%s: setup", name);
		return;
	}
	len = tl_pl_ip(ip, AF_INET, TL_PL_PEER_HOST4, TL_PL_LAN_HOST4, 200, 3);
	switch (kind) {
	case BAD_RECEIVER:
		stranger = *f.kp;
		stranger.local_index = 0x7777;
		bad = tl_pl_wan_data(&f.pl, &TL_PL_PEER4, &stranger, 0, ip, len, NULL);
		break;
	case BAD_TAG:
		bad = tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, 0, ip, len, NULL);
		*rte_pktmbuf_mtod_offset(bad, uint8_t *, bad->data_len - 1) ^= 1;
		break;
	case BAD_REPLAY:
		tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, 5, ip, len, NULL));
		good = 1;
		bad = tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, 5, ip, len, NULL);
		break;
	case BAD_SOURCE:
		len = tl_pl_ip(ip, AF_INET, ELSEWHERE4, TL_PL_LAN_HOST4, 200, 3);
		bad = tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, 0, ip, len, NULL);
		break;
	}
	tl_pl_inject(&f.pl, TL_PORT_WAN, bad);
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, 4);
	CHECK(n == good, "%s: %u frames delivered, expected %u", name, n, good);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(tl_pl_drops_only(&f.pl, want, 1), "%s: drops", name);
	CHECK(f.pl.w.cnt.rx_drops[TL_PORT_WAN] == 1, "%s: rx_drops[WAN] = %" PRIu64, name,
	      f.pl.w.cnt.rx_drops[TL_PORT_WAN]);
	CHECK(tl_pl_balanced(&f.pl), "%s: balance", name);
	tl_pl_fixture_down(&f);
}

/* A LAN packet to a destination no peer claims. */
static void test_no_route(void)
{
	struct tl_pl_fixture f;
	uint8_t ip[512];
	uint16_t len;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "no_route: setup");
		return;
	}
	len = tl_pl_ip(ip, AF_INET, TL_PL_LAN_HOST4, ELSEWHERE4, 300, 4);
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, ip, len));
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.tx[TL_PORT_WAN]) == 0, "no_route: a frame was sent");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_no_route, 1), "no_route: drops");
	CHECK(f.pl.w.cnt.rx_drops[TL_PORT_LAN] == 1, "no_route: rx_drops[LAN]");
	CHECK(tl_pl_balanced(&f.pl), "no_route: balance");
	tl_pl_fixture_down(&f);
}

/* A handshake initiation goes to the control plane as a copy of the message alone, with
 * the outer headers the worker parsed beside it (tl_hs_outer). */
static void test_handshake_to_ctrl(void)
{
	struct tl_pl_fixture f;
	uint8_t msg[sizeof(struct tl_msg_initiation)];
	struct rte_mbuf *c = NULL;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "handshake: setup");
		return;
	}
	memset(msg, 0x5a, sizeof(msg));
	msg[0] = TL_MSG_INITIATION;
	msg[1] = msg[2] = msg[3] = 0;
	tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_frame(&f.pl, &TL_PL_PEER4, msg, sizeof(msg), NULL));
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.dp.hs_ring) == 1, "handshake: %u on hs_ring", rte_ring_count(f.pl.dp.hs_ring));
	if (rte_ring_dequeue(f.pl.dp.hs_ring, (void **)&c) == 0) {
		const struct tl_outer *o = tl_hs_outer(c);

		CHECK(c->pkt_len == sizeof(msg), "handshake: copy of %u bytes, expected %zu", c->pkt_len, sizeof(msg));
		CHECK(c->data_len == sizeof(msg) && !memcmp(rte_pktmbuf_mtod(c, uint8_t *), msg, sizeof(msg)),
		      "handshake: copy is not the message");
		CHECK(o && o->hdr_len == TL_OUTER4_LEN && o->family == AF_INET && o->src_port == TL_PL_PEER4.port &&
		      !memcmp(o->src_ip, TL_PL_PEER4.ip, 4) && !memcmp(o->src_mac, TL_PL_PEER4.mac, 6),
		      "handshake: the parsed outer headers are not beside the copy");
		rte_pktmbuf_free(c);
	}
	CHECK(f.pl.w.cnt.to_ctrl == 1, "handshake: to_ctrl");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "handshake: drops");
	CHECK(tl_pl_balanced(&f.pl), "handshake: balance");
	tl_pl_fixture_down(&f);
}

/* A packet staged while the peer had no session is still waiting when the session comes:
 * the peer's next packet queues behind it (no handshake wanted for it), so both leave in
 * their order. */
static void test_staged_order(void)
{
	uint8_t a[256], b[256];
	uint16_t la = tl_pl_ip(a, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, 200, 21);
	uint16_t lb = tl_pl_ip(b, AF_INET, TL_PL_LAN_HOST4, TL_PL_PEER_HOST4, 200, 22);
	struct tl_staged st[2] = { { 0 } };
	struct rte_mbuf *m[2] = { NULL, NULL };
	struct tl_pl_fixture f;
	unsigned n, sent;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "staged order: setup");
		return;
	}
	atomic_store(&f.peer->current, NULL);
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, a, la));
	tl_pl_run(&f.pl);
	CHECK(rte_ring_count(f.pl.dp.stage_ring) == 1 && atomic_load(&f.peer->n_staged) == 1,
	      "staged order: first packet staged without a session");
	atomic_store(&f.peer->current, f.kp);
	atomic_store(&f.peer->want_handshake, false);
	tl_pl_inject(&f.pl, TL_PORT_LAN, tl_pl_lan_frame(&f.pl, b, lb));
	tl_pl_run(&f.pl);
	sent = rte_ring_count(f.pl.tx[TL_PORT_WAN]);
	CHECK(sent == 0, "staged order: %u frames sent past the staged packet", sent);
	CHECK(!atomic_load(&f.peer->want_handshake), "staged order: asked for a handshake with a session");
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "staged order: drops");
	CHECK(tl_pl_balanced(&f.pl), "staged order: balance");
	n = rte_ring_dequeue_burst_elem(f.pl.dp.stage_ring, st, sizeof(st[0]), 2, NULL);
	CHECK(n == 2 && st[0].peer == f.peer && st[1].peer == f.peer && atomic_load(&f.peer->n_staged) == 2,
	      "staged order: %u packets staged for the peer, expected 2", n);
	m[0] = st[0].m;
	m[1] = st[1].m;
	CHECK(n == 2 && m[0]->data_len == la && !memcmp(rte_pktmbuf_mtod(m[0], void *), a, la) &&
	      m[1]->data_len == lb && !memcmp(rte_pktmbuf_mtod(m[1], void *), b, lb),
	      "staged order: staged packets differ or are out of order");
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	tl_pl_discard(&f.pl);
	tl_pl_fixture_down(&f);
}

/* Counts the reads of the port it is attached to. */
static uint16_t count_reads(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max,
			    void *arg)
{
	(void)port, (void)queue, (void)pkts, (void)max;
	(*(unsigned *)arg)++;
	return n;
}

/* A read of the WAN port that returned fewer frames than it asked for (40 data messages,
 * a job's room asked) found the port empty: the round reads it once, not again. */
static void test_wan_read_short(void)
{
	struct tl_pl_fixture f;
	const struct rte_eth_rxtx_callback *cb;
	uint8_t ip[1400];
	struct rte_mbuf *m[64];
	unsigned reads = 0, n;
	uint16_t len;

	if (tl_pl_fixture_up(&f, &TL_PL_PEER4) != 0) {
		CHECK(0, "wan_read_short: setup");
		return;
	}
	cb = rte_eth_add_rx_callback(f.pl.dp.port[TL_PORT_WAN].port_id, 0, count_reads, &reads);
	CHECK(cb != NULL, "wan_read_short: rx callback");
	len = tl_pl_ip(ip, AF_INET, TL_PL_PEER_HOST4, TL_PL_LAN_HOST4, 1000, 3);
	for (uint64_t c = 0; c < 40; c++)
		tl_pl_inject(&f.pl, TL_PORT_WAN, tl_pl_wan_data(&f.pl, &TL_PL_PEER4, f.kp, c, ip, len, NULL));
	tl_worker_round(&f.pl.w);
	CHECK(reads == 1, "wan_read_short: %u reads of the WAN port in the round that took 40 of %u asked, expected 1",
	      reads, TL_JOB_MAX);
	if (cb && rte_eth_remove_rx_callback(f.pl.dp.port[TL_PORT_WAN].port_id, 0, cb) == 0)
		rte_free((void *)(uintptr_t)cb);   /* removal leaves the memory to the caller */
	tl_pl_run(&f.pl);
	n = tl_pl_collect(&f.pl, TL_PORT_LAN, m, RTE_DIM(m));
	CHECK(n == 40, "wan_read_short: %u frames on the LAN port, expected 40", n);
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
	CHECK(tl_pl_drops_only(&f.pl, TL_DROP_MAX, 0), "wan_read_short: drops");
	CHECK(tl_pl_balanced(&f.pl), "wan_read_short: balance");
	tl_pl_fixture_down(&f);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_pl_eal_init(argv[0]) != 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	test_lan_to_wan(&TL_PL_PEER4, AF_INET);
	test_lan_to_wan(&TL_PL_PEER6, AF_INET6);
	test_lan_to_wan(&TL_PL_PEER4, AF_INET6);
	test_wan_to_lan(&TL_PL_PEER4, AF_INET);
	test_wan_to_lan(&TL_PL_PEER6, AF_INET6);
	test_bad_data(BAD_RECEIVER, TL_DROP_unknown_receiver, "unknown_receiver");
	test_bad_data(BAD_TAG, TL_DROP_auth_failed, "auth_failed");
	test_bad_data(BAD_REPLAY, TL_DROP_replay, "replay");
	test_bad_data(BAD_SOURCE, TL_DROP_src_not_allowed, "src_not_allowed");
	test_no_route();
	test_handshake_to_ctrl();
	test_staged_order();
	test_wan_read_short();
	tl_pl_eal_fini();
	return check_report();
}
