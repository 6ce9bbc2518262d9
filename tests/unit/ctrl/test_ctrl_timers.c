/* WireGuard's timers on the control plane, driven by the event stamps the workers leave
 * (written here by the test, as a worker would) on a virtual clock ticked every 5 ms:
 * a keepalive KEEPALIVE_TIMEOUT after the first unanswered data received, repeated while
 * data keeps arriving; a new initiation KEEPALIVE_TIMEOUT + REKEY_TIMEOUT after the first
 * unanswered data sent, even while more data is being sent; neither when traffic is
 * answered; and no initiation within REKEY_TIMEOUT of a handshake response we sent. Also:
 * packets staged for a session leave from the control plane with their inner ECN outside. */
#include <netinet/in.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "check.h"
#include "ctrl/send.h"
#include "ctrl_harness.h"
#include "dataplane/packet.h"

#define MS 1000000ull
#define S (1000 * MS)
#define TICK (5 * MS)
#define WORKER_LAG (50 * 1000ull)       /* a worker's clock: its burst started a bit earlier */

struct sent {
	unsigned keepalives, initiations;
	uint64_t first_keepalive, first_initiation;   /* h->now when seen, 0 = none */
};

/* Takes every frame the control plane sent to r and counts keepalives and initiations. */
static void drain(struct tl_ch *h, const struct tl_ch_remote *r, struct sent *s)
{
	struct rte_mbuf *m;
	struct tl_outer o;

	while (rte_ring_dequeue(h->dev.workers[0].ctrl_tx, (void **)&m) == 0) {
		if (tl_pkt_parse_outer(m, &r->at, r->port, &o) == TL_DROP_MAX && m->data_len >= 4) {
			uint32_t type = tl_load32(rte_pktmbuf_mtod(m, void *));

			if (type == TL_MSG_DATA && m->data_len == sizeof(struct tl_msg_data) + TL_AEAD_TAG_LEN) {
				if (!s->keepalives++)
					s->first_keepalive = h->now;
			} else if (type == TL_MSG_INITIATION) {
				if (!s->initiations++)
					s->first_initiation = h->now;
			}
		}
		rte_pktmbuf_free(m);
	}
}

/* We initiate, the peer answers: our session is current (a keepalive went out with it). */
static bool session(struct tl_ch *h, struct tl_ch_remote *r, struct tl_peer_ctrl *pc)
{
	struct tl_msg_initiation ours;
	struct tl_msg_response resp;

	if (tl_handshake_initiate(&h->dev, pc, h->now) != 0 ||
	    tl_ch_take(h, r, TL_MSG_INITIATION, &ours, sizeof(ours)) != (int)sizeof(ours) ||
	    tl_ch_remote_respond(h, r, &ours, &resp) != 0)
		return false;
	h->now += MS;
	tl_ch_deliver(h, r, &resp, sizeof(resp));
	tl_ch_discard(h);
	h->now += TICK;
	tl_ch_tick(h);
	return atomic_load(&pc->dp->current) != NULL;
}

static void worker_stamp(_Atomic uint64_t *a, uint64_t now)
{
	atomic_store(a, now - WORKER_LAG);
}

enum flow { RX_ONLY, TX_ONLY, RX_ANSWERED, TX_ANSWERED };

/* dur of traffic, one packet every 100 ms, ticking every 5 ms; what was sent lands in s. */
static void run(struct tl_ch *h, struct tl_ch_remote *r, struct tl_peer_ctrl *pc, enum flow f,
		uint64_t dur, struct sent *s)
{
	struct tl_peer *p = pc->dp;
	uint64_t end = h->now + dur, next = h->now + TICK;

	while (h->now < end) {
		h->now += TICK;
		if (h->now >= next) {
			next += 100 * MS;
			if (f == RX_ONLY || f == RX_ANSWERED) {
				worker_stamp(&p->last_rx_auth_ns, h->now);
				worker_stamp(&p->last_rx_data_ns, h->now);
			} else {
				worker_stamp(&p->last_tx_any_ns, h->now);
				worker_stamp(&p->last_tx_data_ns, h->now);
			}
		} else if (h->now == next - 50 * MS && (f == RX_ANSWERED || f == TX_ANSWERED)) {
			if (f == RX_ANSWERED) {
				worker_stamp(&p->last_tx_any_ns, h->now);
				worker_stamp(&p->last_tx_data_ns, h->now);
			} else {
				worker_stamp(&p->last_rx_auth_ns, h->now);
				worker_stamp(&p->last_rx_data_ns, h->now);
			}
		}
		tl_ch_tick(h);
		drain(h, r, s);
	}
}

static bool setup(struct tl_ch *h, struct tl_ch_remote *r, struct tl_peer_ctrl **pc, uint8_t host)
{
	if (tl_ch_setup(h) != 0)
		return false;
	*pc = tl_ch_peer_add(h, r, host);
	return *pc && session(h, r, *pc);
}

/* A one-way stream towards us: keepalives 10 s after its first packet, then every 10 s. */
static void test_keepalive_one_way(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct sent s = { 0 };
	uint64_t start;

	CHECK(setup(&h, &r, &pc, 1), "setup and session");
	start = h.now;
	run(&h, &r, pc, RX_ONLY, 35 * S, &s);
	CHECK(s.keepalives == 3, "35 s of one-way data received: %u keepalives, want 3", s.keepalives);
	CHECK(s.first_keepalive >= start + 10 * S && s.first_keepalive <= start + 10 * S + 3 * TICK,
	      "first keepalive %.3f s after the first data, want 10 s",
	      (double)(s.first_keepalive - start) / S);
	CHECK(s.initiations == 0, "no initiation while only receiving (%u)", s.initiations);
	tl_ch_teardown(&h);
}

/* Answered traffic needs no keepalive and no new handshake. */
static void test_answered(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct sent s = { 0 };

	CHECK(setup(&h, &r, &pc, 2), "setup and session");
	run(&h, &r, pc, RX_ANSWERED, 35 * S, &s);
	run(&h, &r, pc, TX_ANSWERED, 35 * S, &s);
	CHECK(s.keepalives == 0, "answered traffic: %u keepalives, want 0", s.keepalives);
	CHECK(s.initiations == 0, "answered traffic: %u initiations, want 0", s.initiations);
	tl_ch_teardown(&h);
}

/* We keep sending to a peer that answers nothing: an initiation 15 s after the first
 * unanswered packet, although packets keep going out. */
static void test_new_handshake_unanswered(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct sent s = { 0 };
	uint64_t start;

	CHECK(setup(&h, &r, &pc, 3), "setup and session");
	start = h.now;
	run(&h, &r, pc, TX_ONLY, 20 * S, &s);
	CHECK(s.initiations >= 1, "20 s of unanswered data sent: an initiation (%u)", s.initiations);
	CHECK(s.first_initiation >= start + 15 * S && s.first_initiation <= start + 15 * S + 3 * TICK,
	      "first initiation %.3f s after the first unanswered data, want 15 s",
	      (double)(s.first_initiation - start) / S);
	tl_ch_teardown(&h);
}

/* The peer initiated, we responded; our host sends before the peer's first data arrives
 * (the worker stages it and wants a handshake): no initiation of ours within
 * REKEY_TIMEOUT of the response; the peer's data confirms the session and none is due. */
static void test_responder_waits(bool confirmed)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_msg_initiation init;
	struct tl_msg_response resp;
	struct sent s = { 0 };
	uint64_t responded;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 4);
	CHECK(pc && tl_ch_remote_initiation(&h, &r, &init) == 0, "peer initiates");
	if (!pc)
		goto out;
	tl_ch_deliver(&h, &r, &init, sizeof(init));
	responded = h.now;
	CHECK(tl_ch_take(&h, &r, TL_MSG_RESPONSE, &resp, sizeof(resp)) == (int)sizeof(resp), "we respond");
	atomic_store(&pc->dp->want_handshake, true);
	for (unsigned i = 0; i < 20; i++) {
		h.now += TICK;
		tl_ch_tick(&h);
		drain(&h, &r, &s);
	}
	CHECK(s.initiations == 0, "%u initiations within 100 ms of our response, want 0", s.initiations);
	if (confirmed)
		atomic_store(&pc->dp->next_confirmed, true);
	while (h.now < responded + 8 * S) {
		h.now += TICK;
		tl_ch_tick(&h);
		drain(&h, &r, &s);
	}
	if (confirmed) {
		CHECK(atomic_load(&pc->dp->current) != NULL, "the peer's data confirmed the session");
		CHECK(s.initiations == 0, "confirmed: %u initiations, want 0", s.initiations);
	} else {
		CHECK(s.initiations == 1, "unconfirmed: %u initiations in 8 s, want 1", s.initiations);
		CHECK(s.first_initiation >= responded + 5 * S && s.first_initiation <= responded + 5 * S + 2 * TICK,
		      "unconfirmed: initiation %.3f s after the response, want REKEY_TIMEOUT (5 s)",
		      (double)(s.first_initiation - responded) / S);
	}
out:
	tl_ch_teardown(&h);
}

/* A worker asked for a rekey while our initiation was under way (it still sent with the
 * old session): once the new session is current, that wish is stale and no further
 * handshake follows. */
static void test_stale_rekey_wish(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct sent s = { 0 };
	uint64_t end;

	CHECK(setup(&h, &r, &pc, 6), "setup and session");
	atomic_store(&pc->dp->want_handshake, true);
	for (end = h.now + 8 * S; h.now < end;) {
		h.now += TICK;
		tl_ch_tick(&h);
		drain(&h, &r, &s);
	}
	CHECK(s.initiations == 0, "stale wish with a fresh session: %u initiations in 8 s, want 0", s.initiations);
	tl_ch_teardown(&h);
}

/* A staged inner IPv4 packet with ECN codepoint ecn, from our host to the peer's network, as a
 * worker stages it (the stage ring). */
static bool stage_ip4(struct tl_ch *h, struct tl_peer_ctrl *pc, uint8_t ecn)
{
	struct tl_staged s = { .peer = pc->dp };
	static const uint8_t hdr[28] = { 0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0,
					 10, 99, 0, 20, 10, 5, 0, 1, 0x30, 0x39, 0x30, 0x39, 0, 8, 0, 0 };
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->dev.dp.stage_pool);
	uint8_t *p = m ? (uint8_t *)rte_pktmbuf_append(m, sizeof(hdr)) : NULL;

	if (!p) {
		rte_pktmbuf_free(m);
		return false;
	}
	memcpy(p, hdr, sizeof(hdr));
	p[1] = ecn;
	s.m = m;
	atomic_fetch_add(&pc->dp->n_staged, 1);
	return rte_ring_enqueue_elem(h->dev.dp.stage_ring, &s, sizeof(s)) == 0;
}

/* The outer ECN of the data messages the control plane sent to r, in order (-1: none). */
static int outer_ecn(struct tl_ch *h, const struct tl_ch_remote *r)
{
	struct rte_mbuf *m = NULL;
	struct tl_outer o;
	int ecn = -1;

	while (ecn < 0 && rte_ring_dequeue(h->dev.workers[0].ctrl_tx, (void **)&m) == 0) {
		uint8_t tos = rte_pktmbuf_mtod_offset(m, const uint8_t *, TL_ETH_LEN)[1];

		if (tl_pkt_parse_outer(m, &r->at, r->port, &o) == TL_DROP_MAX &&
		    tl_load32(rte_pktmbuf_mtod(m, void *)) == TL_MSG_DATA)
			ecn = tos & 3;
		rte_pktmbuf_free(m);
	}
	return ecn;
}

static void test_staged_ecn(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	int e[3];

	CHECK(setup(&h, &r, &pc, 5), "setup and session");
	CHECK(stage_ip4(&h, pc, 2) && stage_ip4(&h, pc, 1) && stage_ip4(&h, pc, 0), "packets staged");
	CHECK(tl_staged_poll(&h.dev) == 3 && atomic_load(&pc->dp->n_staged) == 3, "taken by the control plane");
	tl_staged_flush(&h.dev, pc, h.now, 0);
	for (int i = 0; i < 3; i++)
		e[i] = outer_ecn(&h, &r);
	CHECK(e[0] == 2 && e[1] == 1 && e[2] == 0, "staged packets ECT(0), ECT(1), Not-ECT left with outer ECN %d, %d, %d",
	      e[0], e[1], e[2]);
	CHECK(atomic_load(&pc->dp->n_staged) == 0 && pc->staged == NULL, "none left, the peer's queue freed");
	tl_ch_teardown(&h);
}

/* Both sides rekey at once: our initiator session is about to reach REJECT_AFTER_TIME -
 * KEEPALIVE - REKEY_TIMEOUT (the receive-rekey timer) when the peer's initiation arrives and
 * we respond. The timer expires on the next tick, in the same second: no initiation of
 * ours follows the response within REKEY_TIMEOUT (as the kernel limits every initiation
 * that is not a retry), and one does once it has passed (the peer's data did not come). */
static void test_rekey_waits_after_response(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_msg_initiation init;
	struct tl_msg_response resp;
	struct tl_keypair *kp;
	struct sent s = { 0 };
	uint64_t responded;

	CHECK(setup(&h, &r, &pc, 7), "rekey after response: setup and session");
	kp = atomic_load(&pc->dp->current);
	if (!kp)
		goto out;
	h.now += TICK;
	worker_stamp(&pc->dp->last_rx_auth_ns, h.now);
	worker_stamp(&pc->dp->last_rx_data_ns, h.now);
	tl_ch_tick(&h);
	h.now = kp->birth_ns + (180 - 10 - 5) * S - TICK;
	tl_ch_tick(&h);
	drain(&h, &r, &s);
	CHECK(s.initiations == 0, "rekey after response: %u initiations before the receive-rekey time", s.initiations);
	CHECK(tl_ch_remote_initiation(&h, &r, &init) == 0, "rekey after response: peer initiates");
	tl_ch_deliver(&h, &r, &init, sizeof(init));
	responded = h.now;
	CHECK(tl_ch_take(&h, &r, TL_MSG_RESPONSE, &resp, sizeof(resp)) == (int)sizeof(resp), "rekey after response: we respond");
	while (h.now + TICK < responded + 5 * S) {
		h.now += TICK;
		tl_ch_tick(&h);
		drain(&h, &r, &s);
	}
	CHECK(s.initiations == 0, "rekey after response: %u initiations within REKEY_TIMEOUT of our response, want 0",
	      s.initiations);
	for (unsigned i = 0; i < 4; i++) {
		h.now += TICK;
		tl_ch_tick(&h);
		drain(&h, &r, &s);
	}
	CHECK(s.initiations == 1 && s.first_initiation >= responded + 5 * S,
	      "rekey after response: %u initiations once REKEY_TIMEOUT passed, want 1", s.initiations);
out:
	tl_ch_teardown(&h);
}

/* Persistent keepalive every 25 s: a worker's stamp of data sent may be later than the
 * tick's clock (its burst read the clock after the tick did). Data just sent needs no
 * keepalive: none goes out on that tick, nor within the interval after the data. */
static void test_persistent_keepalive_later_stamp(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct sent s = { 0 };
	uint64_t sent_at;

	CHECK(setup(&h, &r, &pc, 8), "persistent keepalive: setup and session");
	pc->cfg.persistent_keepalive = 25;
	h.now += 30 * S;
	tl_ch_tick(&h);
	drain(&h, &r, &s);
	CHECK(s.keepalives == 1, "persistent keepalive: %u after 30 s of silence, want 1", s.keepalives);
	h.now += 30 * S;
	sent_at = h.now + WORKER_LAG;
	atomic_store(&pc->dp->last_tx_any_ns, sent_at);
	atomic_store(&pc->dp->last_tx_data_ns, sent_at);
	s = (struct sent){ 0 };
	for (unsigned i = 0; i < 20; i++) {
		tl_ch_tick(&h);
		drain(&h, &r, &s);
		h.now += TICK;
	}
	CHECK(s.keepalives == 0, "persistent keepalive: %u right after data stamped later than the tick, want 0",
	      s.keepalives);
	tl_ch_teardown(&h);
}

/* ---- staged packets and a worker sending at the same time ------------------------------- */

static struct {
	struct tl_ch *h;
	unsigned calls, at;              /* the worker runs at call number at */
} race;

/* A packet from our host to the peer's network arrives on the LAN port: inner IPv4/UDP
 * 10.99.0.20 -> 10.<host>.0.1, len bytes. */
static bool lan_packet(struct tl_ch *h, uint8_t host, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->pool);
	uint8_t *p = m ? (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(TL_ETH_LEN + len)) : NULL;
	struct rte_ipv4_hdr *ip;

	if (!p) {
		rte_pktmbuf_free(m);
		return false;
	}
	memset(p, 0, TL_ETH_LEN + len);
	p[12] = 0x08;                                         /* IPv4 */
	ip = (struct rte_ipv4_hdr *)(p + TL_ETH_LEN);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16(len);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(RTE_IPV4(10, 99, 0, 20));
	ip->dst_addr = rte_cpu_to_be_32(RTE_IPV4(10, host, 0, 1));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	((struct rte_udp_hdr *)(ip + 1))->dgram_len = rte_cpu_to_be_16(len - 20);
	return rte_ring_enqueue(h->rx[TL_PORT_LAN], m) == 0;
}

static void worker_until_idle(struct tl_ch *h)
{
	for (unsigned i = 0; i < 100 && tl_ch_worker_round(h); i++)
		;
}

/* Worker 0, just as the control plane puts the last staged frame on its ring, takes a new
 * packet of the peer from the LAN and sends what it has. */
static void worker_races(struct tl_device *dev)
{
	(void)dev;
	if (++race.calls != race.at)
		return;
	CHECK(lan_packet(race.h, 9, 100), "race: a new packet arrives");
	worker_until_idle(race.h);
}

/* Packets staged before the session, then a new one while the control plane sends them:
 * they leave in the order they came (the new one last), each with a greater counter. */
static void test_staged_flush_order(void)
{
	enum { N = 5 };
	struct rte_mbuf *m = NULL;
	struct tl_ch h;
	struct tl_ch_remote r;
	struct tl_peer_ctrl *pc;
	struct tl_outer o;
	uint64_t last = 0;
	unsigned n = 0, big_at = 0;
	bool ordered = true, ok = true;

	CHECK(setup(&h, &r, &pc, 9), "race: setup and session");
	for (unsigned i = 0; i < N; i++)
		ok &= stage_ip4(&h, pc, 0);
	CHECK(ok && tl_staged_poll(&h.dev) == N, "race: %u packets staged", N);
	race.h = &h;
	race.calls = 0;
	race.at = N;
	tl_send_enqueue_test_hook = worker_races;
	tl_staged_flush(&h.dev, pc, h.now, 0);
	tl_send_enqueue_test_hook = NULL;
	tl_staged_poll(&h.dev);
	tl_staged_flush(&h.dev, pc, h.now, 0);
	worker_until_idle(&h);
	while (rte_ring_dequeue(h.tx[TL_PORT_WAN], (void **)&m) == 0) {
		if (tl_pkt_parse_outer(m, &r.at, r.port, &o) == TL_DROP_MAX &&
		    tl_load32(rte_pktmbuf_mtod(m, void *)) == TL_MSG_DATA) {
			const struct tl_msg_data *d = rte_pktmbuf_mtod(m, const struct tl_msg_data *);
			uint64_t ctr = rte_le_to_cpu_64(d->counter);

			ordered &= n == 0 || ctr > last;
			last = ctr;
			if (m->data_len > 100)
				big_at = n + 1;
			n++;
		}
		rte_pktmbuf_free(m);
	}
	CHECK(n == N + 1, "race: %u data messages on the wire, want %u", n, N + 1);
	CHECK(big_at == N + 1 && ordered, "race: the new packet left %u of %u (want last), counters %s", big_at, n,
	      ordered ? "ascending" : "out of order");
	CHECK(atomic_load(&pc->dp->n_staged) == 0, "race: nothing left staged");
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_keepalive_one_way();
	test_answered();
	test_new_handshake_unanswered();
	test_responder_waits(true);
	test_responder_waits(false);
	test_staged_ecn();
	test_stale_rekey_wish();
	test_rekey_waits_after_response();
	test_persistent_keepalive_later_stamp();
	test_staged_flush_order();
	tl_ch_eal_fini();
	return check_report();
}
