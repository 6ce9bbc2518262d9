/* What the control plane sends, through worker 0's control TX ring: handshake initiations,
 * responses and cookie replies, keepalives, and staged packets once a session exists. */
#include <sys/socket.h>

#include <rte_malloc.h>

#include "ctrl/log.h"
#include "ctrl/send.h"
#include "ctrl/session.h"
#include "ctrl/timers.h"
#include "dataplane/encap.h"
#include "dataplane/packet.h"

static struct tl_worker *ctrl_worker(struct tl_device *dev)
{
	return &dev->workers[0];
}

void (*tl_send_enqueue_test_hook)(struct tl_device *dev);

/* Every frame put on the control TX ring is counted (built): the worker sends it (from_ctrl)
 * or it is still in the ring. */
static int frame_enqueue(struct tl_device *dev, struct rte_mbuf *m)
{
	if (tl_send_enqueue_test_hook)
		tl_send_enqueue_test_hook(dev);
	if (rte_ring_sp_enqueue(ctrl_worker(dev)->ctrl_tx, m) != 0) {
		tl_drop_pkt(&dev->cnt, m, TL_DROP_ctrl_backlog);
		return -1;
	}
	dev->cnt.built++;
	tl_worker_kick(ctrl_worker(dev));
	return 0;
}

int tl_send_frame(struct tl_device *dev, struct tl_peer_ctrl *pc, const void *msg, size_t len, uint64_t now)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->dp.ctrl_pool);
	struct tl_endpoint ep;
	void *p;

	if (!m) {
		dev->cnt.drops[TL_DROP_nomem]++;
		return -1;
	}
	tl_endpoint_read(pc->dp, &ep);
	/* No address of the endpoint's family on the WAN: no way to it, as no endpoint. */
	if (!ep.family || !tl_pkt_wan_has_family(&dev->dp.port[TL_PORT_WAN], ep.family))
		ep.family = 0;
	if (!ep.family || !ep.mac_valid) {
		tl_drop_pkt(&dev->cnt, m, ep.family ? TL_DROP_no_neighbour : TL_DROP_no_endpoint);
		return -1;
	}
	p = rte_pktmbuf_append(m, (uint16_t)len);
	memcpy(p, msg, len);
	if (tl_pkt_push_outer(m, &dev->dp.port[TL_PORT_WAN], &ep, tl_dp_listen_port(&dev->dp), 0) != 0) {
		tl_drop_pkt(&dev->cnt, m, TL_DROP_oversized);
		return -1;
	}
	atomic_store_explicit(&pc->dp->last_tx_any_ns, now, memory_order_relaxed);
	return frame_enqueue(dev, m);
}

/* Encrypts and sends an inner packet (or an empty one: keepalive); its ECN field is
 * copied to the outer header. */
static int send_data(struct tl_device *dev, struct tl_peer_ctrl *pc, struct tl_keypair *kp,
		     struct rte_mbuf *m, uint64_t now)
{
	struct tl_inner in = { .ecn = 0 };
	enum tl_drop r;

	if (m->data_len && tl_pkt_parse_inner(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &in) != TL_DROP_MAX)
		in.ecn = 0;
	r = tl_encap_one(&dev->dp, dev->aead, pc->dp, kp, m, in.ecn, now);

	if (r != TL_DROP_MAX) {
		tl_drop_pkt(&dev->cnt, m, r);
		return -1;
	}
	return frame_enqueue(dev, m);
}

void tl_send_keepalive(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct tl_keypair *kp = atomic_load(&pc->dp->current);
	struct rte_mbuf *m;

	if (!tl_keypair_can_send(&dev->dp, kp, now)) {
		tl_handshake_initiate(dev, pc, now);
		return;
	}
	m = rte_pktmbuf_alloc(dev->dp.ctrl_pool);
	if (!m) {
		dev->cnt.drops[TL_DROP_nomem]++;
		return;
	}
	if (send_data(dev, pc, kp, m, now) == 0)
		pc->last_keepalive_sent_ns = now;
}

/* ---- staged packets: the workers' stage ring, each peer's queue ---------------------------- */

/* A staged packet has left the peer's queue. A worker sends the peer's new packets itself
 * only once none is staged (encap.c): a packet sent from here counts until its frame is on
 * the control TX ring (release: the frame before the count), so nothing newer passes it. */
static void staged_out(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	atomic_fetch_sub_explicit(&pc->dp->n_staged, 1, memory_order_release);
	dev->staged_queued--;
}

/* The peer's queue of staged_packets, made when the first packet is staged for it. */
static struct rte_ring *staged_queue(struct tl_device *dev, struct tl_peer_ctrl *pc)
{
	unsigned count = (unsigned)dev->cfg->staged_packets;
	struct rte_ring *r;

	if (pc->staged)
		return pc->staged;
	r = rte_malloc("tl_staged", rte_ring_get_memsize(rte_align32pow2(count + 1)), RTE_CACHE_LINE_SIZE);
	if (r && rte_ring_init(r, "tl_staged", count, RING_F_EXACT_SZ | RING_F_SP_ENQ | RING_F_SC_DEQ) != 0) {
		rte_free(r);
		r = NULL;
	}
	pc->staged = r;
	return r;
}

static void staged_queue_free(struct tl_peer_ctrl *pc)
{
	rte_free(pc->staged);
	pc->staged = NULL;
}

/* A packet a worker staged joins the peer's queue, whose oldest packet leaves when it is
 * full (as the kernel keeps the latest MAX_STAGED_PACKETS). */
static void staged_take(struct tl_device *dev, struct tl_peer_ctrl *pc, struct rte_mbuf *m)
{
	struct rte_ring *q = staged_queue(dev, pc);
	struct rte_mbuf *old;

	tl_timers_wake(dev, pc);        /* a handshake to start, or the packets to send */
	dev->staged_queued++;
	if (!q) {
		staged_out(dev, pc);
		dev->cnt.staged_drops++;
		tl_drop_pkt(&dev->cnt, m, TL_DROP_nomem);
		return;
	}
	if (rte_ring_full(q) && rte_ring_sc_dequeue(q, (void **)&old) == 0) {
		staged_out(dev, pc);
		dev->cnt.staged_drops++;
		tl_drop_pkt(&dev->cnt, old, TL_DROP_no_session_staged_overflow);
	}
	rte_ring_sp_enqueue(q, m);
}

unsigned tl_staged_poll(struct tl_device *dev)
{
	struct tl_staged s[TL_BURST];
	unsigned n, total = 0;

	while ((n = rte_ring_sc_dequeue_burst_elem(dev->dp.stage_ring, s, sizeof(s[0]), TL_BURST, NULL)) > 0) {
		for (unsigned i = 0; i < n; i++)
			staged_take(dev, s[i].peer->ctrl, s[i].m);
		total += n;
	}
	return total;
}

void tl_staged_flush(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now, unsigned reserve)
{
	struct tl_keypair *kp = atomic_load(&pc->dp->current);
	struct rte_ring *tx = ctrl_worker(dev)->ctrl_tx;
	struct tl_endpoint ep;
	struct rte_mbuf *m;

	tl_endpoint_read(pc->dp, &ep);
	if (!pc->staged || (ep.family && !ep.mac_valid))
		return;   /* they wait for the next hop's MAC (tl_neigh_resolve_endpoint) */
	while (tl_keypair_can_send(&dev->dp, kp, now) && rte_ring_free_count(tx) > reserve &&
	       rte_ring_sc_dequeue(pc->staged, (void **)&m) == 0) {
		if (send_data(dev, pc, kp, m, now) == 0)
			dev->cnt.unstaged++;
		else
			dev->cnt.staged_drops++;      /* send_data counted why */
		staged_out(dev, pc);          /* after its frame is on the ring */
	}
	if (rte_ring_empty(pc->staged))
		staged_queue_free(pc);
}

void tl_staged_drop(struct tl_device *dev, struct tl_peer_ctrl *pc, enum tl_drop why)
{
	struct rte_mbuf *m;

	while (pc->staged && rte_ring_sc_dequeue(pc->staged, (void **)&m) == 0) {
		staged_out(dev, pc);
		dev->cnt.staged_drops++;
		tl_drop_pkt(&dev->cnt, m, why);
	}
	staged_queue_free(pc);
}

bool tl_handshake_recent(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	uint64_t age = tl_age_ns(now, pc->hs_last_sent_ns);

	if (!pc->hs_last_sent_ns)
		return false;
	if (pc->hs.state == TL_HS_CREATED_INITIATION)
		return age < pc->hs_retry_ns;
	return age < (uint64_t)(dev->cfg->timers.rekey_timeout * 1e9);
}

int tl_handshake_initiate(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct tl_msg_initiation msg;
	uint8_t ts[TL_TIMESTAMP_LEN];
	uint32_t idx;
	int r;

	tl_timers_wake(dev, pc);
	if (!dev->id.has_key || !tl_peer_has_endpoint(pc->dp))
		return -1;
	if (tl_handshake_recent(dev, pc, now))
		return 0;       /* rate limited, as the kernel limits every initiation */
	tl_index_drop_handshake(dev, pc);
	idx = tl_index_new(dev, pc, true);
	if (!idx)
		return -1;
	tl_tai64n_now(ts);
	r = tl_noise_create_initiation(&msg, &pc->hs, &dev->id, idx, ts, now);
	if (r != TL_NOISE_OK) {
		tl_index_free(dev, idx);
		return -1;
	}
	if (!pc->hs_first_attempt_ns)
		pc->hs_first_attempt_ns = now;
	pc->hs_last_sent_ns = now;
	pc->hs_retry_ns = (uint64_t)(dev->cfg->timers.rekey_timeout * 1e9) + tl_random_u32() % (333 * 1000000u);
	dev->handshakes_sent++;
	tl_log_debug("peer %u: sending handshake initiation", pc->dp->id);
	return tl_send_frame(dev, pc, &msg, sizeof(msg), now);
}

int tl_send_cookie_reply(struct tl_device *dev, const struct tl_outer *o, const void *msg, size_t len,
			 uint32_t sender, uint64_t now)
{
	size_t alen = o->family == AF_INET ? 4 : 16;
	struct tl_endpoint ep = { .family = o->family, .port = o->src_port, .mac_valid = true };
	struct tl_msg_cookie reply;
	struct rte_mbuf *m;

	tl_cookie_create_reply(&reply, &dev->cookies, msg, len, sender, o->src_ip, alen, o->src_port, now);
	memcpy(ep.ip, o->src_ip, alen);
	memcpy(ep.mac, o->src_mac, 6);
	memcpy(ep.local, o->dst_ip, alen);      /* from the address it wrote to */
	ep.has_local = true;
	m = rte_pktmbuf_alloc(dev->dp.ctrl_pool);
	if (!m)
		return -1;
	memcpy(rte_pktmbuf_append(m, sizeof(reply)), &reply, sizeof(reply));
	if (tl_pkt_push_outer(m, &dev->dp.port[TL_PORT_WAN], &ep, tl_dp_listen_port(&dev->dp), 0) != 0) {
		rte_pktmbuf_free(m);
		return -1;
	}
	if (frame_enqueue(dev, m) != 0)
		return -1;
	dev->cookies_sent++;
	return 0;
}

unsigned tl_send_room(struct tl_device *dev)
{
	return rte_ring_free_count(ctrl_worker(dev)->ctrl_tx);
}
