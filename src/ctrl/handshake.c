/* Handshake messages on the control plane: received from the workers through the
 * handshake ring, consumed (Noise, cookies, load), answered through send.c. */
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_malloc.h>

#include "ctrl/device.h"
#include "ctrl/handshake.h"
#include "ctrl/log.h"
#include "ctrl/peer.h"
#include "ctrl/ratelimit.h"
#include "ctrl/send.h"
#include "ctrl/session.h"
#include "dataplane/encap.h"
#include "dataplane/packet.h"

#define TL_UNDER_LOAD_HOLD_NS TL_NS

/* A handshake message the workers handed over, dropped here. */
static void hs_drop(struct tl_device *dev, enum tl_drop why)
{
	dev->cnt.drops[why]++;
	dev->cnt.hs_drops++;
}

struct rx_ctx {
	struct tl_device *dev;
	struct tl_outer o;
	uint64_t now;
};

static struct tl_handshake *lookup_static(void *arg, const uint8_t pub[TL_KEY_LEN])
{
	struct tl_peer_ctrl *pc = tl_peer_find(((struct rx_ctx *)arg)->dev, pub);

	return pc ? &pc->hs : NULL;
}

static struct tl_handshake *lookup_index(void *arg, uint32_t index)
{
	struct tl_index_ref *ref = tl_index_find(((struct rx_ctx *)arg)->dev, index);

	return ref && ref->is_handshake ? &ref->pc->hs : NULL;
}

static struct tl_peer_ctrl *hs_owner(struct tl_handshake *hs)
{
	return (struct tl_peer_ctrl *)((char *)hs - offsetof(struct tl_peer_ctrl, hs));
}

/* A datagram the kernel reassembled carries an all-zero source MAC when the neighbour
 * table did not know its sender. */
static bool src_mac_known(const struct rx_ctx *c)
{
	return !rte_is_zero_ether_addr((const struct rte_ether_addr *)c->o.src_mac);
}

/* The endpoint becomes the source of the authenticated message; the frame's source MAC
 * is the way back (unknown: resolved by the control plane). */
static void learn_endpoint(struct rx_ctx *c, struct tl_peer_ctrl *pc)
{
	struct tl_sockaddr sa = { .ip.family = c->o.family, .port = c->o.src_port };

	memcpy(sa.ip.addr, c->o.src_ip, c->o.family == AF_INET ? 4 : 16);
	tl_peer_set_endpoint(c->dev, pc, &sa, src_mac_known(c) ? c->o.src_mac : NULL);
	atomic_store_explicit(&pc->dp->last_rx_auth_ns, c->now, memory_order_relaxed);
}

static int derive_and_install(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct tl_session_keys k;
	int r = tl_noise_derive_session(&pc->hs, &k);

	if (r == TL_NOISE_OK)
		r = tl_session_install(dev, pc, &k, now);
	tl_wipe(&k, sizeof(k));
	return r;
}

/* Every handshake message handed to the control plane ends either consumed or under
 * exactly one drop reason. */
static void rx_initiation(struct rx_ctx *c, const struct tl_msg_initiation *msg)
{
	struct tl_device *dev = c->dev;
	struct tl_handshake *hs;
	struct tl_msg_response resp;
	struct tl_peer_ctrl *pc;
	uint32_t idx;

	if (tl_noise_consume_initiation(msg, &dev->id, lookup_static, c, c->now, &hs) != TL_NOISE_OK) {
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	pc = hs_owner(hs);
	learn_endpoint(c, pc);
	/* An initiation of ours may be outstanding (both sides started at once): this
	 * handshake replaces it, and so does its index. */
	tl_index_drop_handshake(dev, pc);
	idx = tl_index_new(dev, pc, true);
	if (!idx || tl_noise_create_response(&resp, hs, idx, c->now) != TL_NOISE_OK ||
	    derive_and_install(dev, pc, c->now) != 0) {
		tl_index_free(dev, idx);
		pc->hs.local_index = 0;
		tl_handshake_clear(hs);
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	dev->handshakes_received++;
	dev->cnt.consumed++;
	tl_log_debug("peer %u: handshake initiation accepted, responding", pc->dp->id);
	pc->hs_last_sent_ns = c->now;
	tl_send_frame(dev, pc, &resp, sizeof(resp), c->now);
}

static void rx_response(struct rx_ctx *c, const struct tl_msg_response *msg)
{
	struct tl_device *dev = c->dev;
	struct tl_handshake *hs;
	struct tl_peer_ctrl *pc;

	if (tl_noise_consume_response(msg, &dev->id, lookup_index, c, &hs) != TL_NOISE_OK) {
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	pc = hs_owner(hs);
	if (derive_and_install(dev, pc, c->now) != 0) {
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	learn_endpoint(c, pc);
	pc->hs_first_attempt_ns = 0;
	dev->handshakes_received++;
	dev->cnt.consumed++;
	tl_log_debug("peer %u: handshake complete (initiator)", pc->dp->id);
	/* The responder waits for data on the new session: give it some. */
	if (atomic_load_explicit(&pc->dp->n_staged, memory_order_relaxed))
		tl_staged_flush(dev, pc, c->now);
	else
		tl_send_keepalive(dev, pc, c->now);
}

static void rx_cookie(struct rx_ctx *c, const struct tl_msg_cookie *msg)
{
	struct tl_index_ref *ref = tl_index_find(c->dev, msg->receiver);

	if (!ref || tl_cookie_consume_reply(msg, &ref->pc->hs, c->now) != 0)
		hs_drop(c->dev, TL_DROP_handshake_failed);
	else
		c->dev->cnt.consumed++;
}

static bool under_load(struct tl_device *dev, uint64_t now)
{
	if (rte_ring_count(dev->dp.hs_ring) >= rte_ring_get_capacity(dev->dp.hs_ring) / 8)
		dev->under_load_until_ns = now + TL_UNDER_LOAD_HOLD_NS;
	return now < dev->under_load_until_ns;
}

/* mac1 always; under load mac2 too, else the sender gets a cookie to retry with. */
static bool macs_ok(struct rx_ctx *c, const void *msg, size_t len, uint32_t sender)
{
	size_t alen = c->o.family == AF_INET ? 4 : 16;
	enum tl_mac_state st = tl_cookie_validate(&c->dev->cookies, msg, len, c->o.src_ip, alen,
						  c->o.src_port, c->now);

	if (st == TL_MAC_INVALID) {
		hs_drop(c->dev, TL_DROP_bad_mac1);
		return false;
	}
	if (!under_load(c->dev, c->now))
		return true;
	if (st == TL_MAC_VALID_COOKIE) {
		if (tl_ratelimit_allow(c->dev->ratelimit, c->o.family, c->o.src_ip, c->now))
			return true;
		hs_drop(c->dev, TL_DROP_handshake_ratelimited);
		return false;
	}
	hs_drop(c->dev, TL_DROP_bad_mac2);
	if (!src_mac_known(c)) {
		c->dev->cnt.drops[TL_DROP_no_neighbour]++;   /* the cookie reply has no way back */
		return false;
	}
	tl_send_cookie_reply(c->dev, &c->o, msg, len, sender, c->now);
	return false;
}

void tl_handshake_rx(struct tl_device *dev, struct rte_mbuf *m, uint64_t now)
{
	struct rx_ctx c = { .dev = dev, .now = now };
	const uint8_t *msg;
	uint32_t type;

	if (tl_pkt_parse_outer(m, &dev->dp.port[TL_PORT_WAN], tl_dp_listen_port(&dev->dp), &c.o) != TL_DROP_MAX) {
		dev->cnt.hs_drops++;
		return tl_drop_pkt(&dev->cnt, m, TL_DROP_malformed);
	}
	msg = rte_pktmbuf_mtod(m, const uint8_t *);
	type = rte_le_to_cpu_32(tl_load32(msg));
	if (!dev->id.has_key) {
		hs_drop(dev, TL_DROP_handshake_failed);
	} else if (type == TL_MSG_INITIATION) {
		const struct tl_msg_initiation *init = (const void *)msg;

		if (macs_ok(&c, msg, sizeof(*init), init->sender))
			rx_initiation(&c, init);
	} else if (type == TL_MSG_RESPONSE) {
		const struct tl_msg_response *resp = (const void *)msg;

		if (macs_ok(&c, msg, sizeof(*resp), resp->sender))
			rx_response(&c, resp);
	} else {
		rx_cookie(&c, (const void *)msg);
	}
	rte_pktmbuf_free(m);
}

/* A message makes at most one frame (a response or a cookie reply), put on worker 0's
 * control TX ring: take no more than it has room for. The rest waits in the handshake ring,
 * which is what makes the control plane go under load, and the workers count what does not
 * fit there (handshake_overload), rather than the control plane dropping its answers. */
unsigned tl_handshake_poll(struct tl_device *dev, uint64_t now)
{
	struct rte_mbuf *msgs[TL_BURST];
	unsigned room = RTE_MIN(tl_send_room(dev), (unsigned)TL_BURST);
	unsigned n = rte_ring_sc_dequeue_burst(dev->dp.hs_ring, (void **)msgs, room, NULL);

	for (unsigned i = 0; i < n; i++)
		tl_handshake_rx(dev, msgs[i], now);
	return n;
}
