/* Handshake messages on the control plane: received from the workers through the
 * handshake ring in batches, computed on the handshake threads and the control thread,
 * consumed in order (Noise, cookies, load), answered through send.c. */
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_malloc.h>

#include "common/parfor.h"
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
	unsigned reserve;            /* control TX room owed to the batch's later messages */
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

/* The endpoint becomes the source of the authenticated message, and the address it was
 * sent to our source toward it; the frame's source MAC is the way back (unknown: resolved
 * by the control plane). */
static void learn_endpoint(struct rx_ctx *c, struct tl_peer_ctrl *pc)
{
	struct tl_sockaddr sa = { .ip.family = c->o.family, .port = c->o.src_port };

	memcpy(sa.ip.addr, c->o.src_ip, c->o.family == AF_INET ? 4 : 16);
	tl_peer_learn_endpoint(c->dev, pc, &sa, src_mac_known(c) ? c->o.src_mac : NULL, c->o.dst_ip);
	atomic_store_explicit(&pc->dp->last_rx_auth_ns, c->now, memory_order_relaxed);
}

/* Every handshake message handed to the control plane ends either consumed or under
 * exactly one drop reason. An initiation or a response comes here with its first pass done
 * (the job: see hs_batch_run). */
static void rx_initiation(struct rx_ctx *c, const struct tl_msg_initiation *msg, struct tl_noise_job *j)
{
	struct tl_device *dev = c->dev;
	struct tl_msg_response resp;
	struct tl_peer_ctrl *pc;
	uint32_t idx;

	if (tl_noise_check_initiation(j, c->now) != TL_NOISE_OK) {
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	pc = hs_owner(j->hs);
	learn_endpoint(c, pc);
	/* An initiation of ours may be outstanding (both sides started at once): this
	 * handshake replaces it, and so does its index. */
	tl_index_drop_handshake(dev, pc);
	idx = tl_index_new(dev, pc, true);
	if (!idx || tl_noise_commit_initiation(j, msg, idx, c->now, &resp) != TL_NOISE_OK ||
	    tl_session_install(dev, pc, &j->keys, c->now) != 0) {
		tl_index_free(dev, idx);
		pc->hs.local_index = 0;
		tl_handshake_clear(&pc->hs);
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	dev->handshakes_received++;
	dev->cnt.consumed++;
	tl_log_debug("peer %u: handshake initiation accepted, responding", pc->dp->id);
	pc->hs_last_sent_ns = c->now;
	tl_send_frame(dev, pc, &resp, sizeof(resp), c->now);
}

static void rx_response(struct rx_ctx *c, const struct tl_msg_response *msg, struct tl_noise_job *j)
{
	struct tl_device *dev = c->dev;
	struct tl_peer_ctrl *pc;

	if (tl_noise_commit_response(j, msg, lookup_index, c) != TL_NOISE_OK) {
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	pc = hs_owner(j->hs);
	if (tl_session_install(dev, pc, &j->keys, c->now) != 0) {
		tl_index_drop_handshake(dev, pc);    /* the handshake is over: so is its index */
		hs_drop(dev, TL_DROP_handshake_failed);
		return;
	}
	learn_endpoint(c, pc);
	pc->hs_first_attempt_ns = 0;
	dev->handshakes_received++;
	dev->cnt.consumed++;
	tl_log_debug("peer %u: handshake complete (initiator)", pc->dp->id);
	/* The responder waits for data on the new session: give it some, in the room this
	 * message was given (at least one frame), not in the room of the messages after it. */
	if (atomic_load_explicit(&pc->dp->n_staged, memory_order_relaxed))
		tl_staged_flush(dev, pc, c->now, c->reserve);
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
	/* One message, one reason: bad_mac2, whether or not the cookie reply has a way back
	 * (a source MAC to send it to). */
	hs_drop(c->dev, TL_DROP_bad_mac2);
	if (src_mac_known(c))
		tl_send_cookie_reply(c->dev, &c->o, msg, len, sender, c->now);
	return false;
}

/* A message of a batch: where it came from, and its first pass. */
struct hs_msg {
	struct rte_mbuf *m;
	struct rx_ctx c;
	const uint8_t *msg;
	uint32_t type;
	bool answer;                 /* an initiation or response to compute (its MACs passed) */
	struct tl_noise_job job;
};

struct hs_batch {
	struct tl_device *dev;
	struct hs_msg msg[TL_BURST];
};

/* Before the first pass, in order: the frame, our key, the MACs (and a cookie reply under
 * load), all cheap. false: the message is finished (dropped or answered with a cookie). */
static bool hs_screen(struct hs_msg *h)
{
	struct tl_device *dev = h->c.dev;
	const struct tl_outer *o = tl_hs_outer(h->m);

	/* the worker parsed the outer headers and typed the message: never from a worker */
	if (!o || h->m->data_len < 4u) {
		hs_drop(dev, TL_DROP_malformed);
		return false;
	}
	h->c.o = *o;
	h->msg = rte_pktmbuf_mtod(h->m, const uint8_t *);
	h->type = rte_le_to_cpu_32(tl_load32(h->msg));
	if (!dev->id.has_key) {
		hs_drop(dev, TL_DROP_handshake_failed);
		return false;
	}
	if (h->type == TL_MSG_INITIATION) {
		const struct tl_msg_initiation *init = (const void *)h->msg;

		return h->answer = macs_ok(&h->c, h->msg, sizeof(*init), init->sender);
	}
	if (h->type == TL_MSG_RESPONSE) {
		const struct tl_msg_response *resp = (const void *)h->msg;

		return h->answer = macs_ok(&h->c, h->msg, sizeof(*resp), resp->sender);
	}
	return true;                 /* a cookie reply: taken in the second pass */
}

/* The first pass of one message, on any thread of the pool: it reads the peers (nothing
 * changes them meanwhile: the control thread waits for the pass) and writes its job. */
static void hs_first_pass(void *arg, size_t i)
{
	struct hs_batch *b = arg;
	struct hs_msg *h = &b->msg[i];

	if (!h->answer)
		return;
	if (h->type == TL_MSG_INITIATION)
		tl_noise_answer_initiation(&h->job, (const void *)h->msg, &b->dev->id, lookup_static, &h->c);
	else
		tl_noise_answer_response(&h->job, (const void *)h->msg, &b->dev->id, lookup_index, &h->c);
}

/* The second pass, in the order the messages came: what depends on the peers as they are
 * now, and every change to them. */
static void hs_second_pass(struct hs_msg *h)
{
	if (h->type == TL_MSG_INITIATION)
		rx_initiation(&h->c, (const void *)h->msg, &h->job);
	else if (h->type == TL_MSG_RESPONSE)
		rx_response(&h->c, (const void *)h->msg, &h->job);
	else
		rx_cookie(&h->c, (const void *)h->msg);
}

/* A batch of messages: screened in order, computed on the handshake pool (the CPUs the
 * daemon may use), finished in order. */
static void hs_batch_run(struct tl_device *dev, struct rte_mbuf **m, unsigned n, uint64_t now)
{
	struct hs_batch b = { .dev = dev };
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		struct hs_msg *h = &b.msg[k];

		h->m = m[i];
		h->c = (struct rx_ctx){ .dev = dev, .now = now };
		h->answer = false;
		if (hs_screen(h))
			k++;
		else
			rte_pktmbuf_free(m[i]);
	}
	tl_parfor_run(dev->hs_pool, k, hs_first_pass, &b);
	for (unsigned i = 0; i < k; i++) {
		b.msg[i].c.reserve = k - 1 - i;
		hs_second_pass(&b.msg[i]);
		tl_noise_job_wipe(&b.msg[i].job);
		rte_pktmbuf_free(b.msg[i].m);
	}
}

void tl_handshake_rx(struct tl_device *dev, struct rte_mbuf *m, uint64_t now)
{
	hs_batch_run(dev, &m, 1, now);
}

/* A message makes at most one frame (a response or a cookie reply; a response to our
 * initiation also sends staged packets, in the room left beyond what the messages after it
 * are owed), put on worker 0's control TX ring: take no more than it has room for. The rest waits in the handshake ring,
 * which is what makes the control plane go under load, and the workers count what does not
 * fit there (handshake_overload), rather than the control plane dropping its answers. */
unsigned tl_handshake_poll(struct tl_device *dev, uint64_t now)
{
	struct rte_mbuf *msgs[TL_BURST];
	unsigned room = RTE_MIN(tl_send_room(dev), (unsigned)TL_BURST);
	unsigned n = rte_ring_sc_dequeue_burst(dev->dp.hs_ring, (void **)msgs, room, NULL);

	if (n)
		hs_batch_run(dev, msgs, n, now);
	return n;
}
