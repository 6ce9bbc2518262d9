/* WAN -> LAN, in packet order: WireGuard datagrams parsed, typed and looked up by index;
 * handshake messages go to the control plane as copies; data messages go into a crypto
 * job, opened by any worker (crypt.c) || finished here in arrival order (replay, roaming,
 * source check, ECN) -> the next-hop hold (gateway mode) -> the LAN egress queue ||
 * released by the queue -> the LAN port. */
#include <string.h>
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_ip.h>

#include "crypto/messages.h"
#include "dataplane/packet.h"
#include "dataplane/route.h"
#include "dataplane/decap.h"
#include "dataplane/flowrtt.h"
#include "dataplane/lanfib.h"
#include "dataplane/port.h"
#include "dataplane/queue.h"

static enum tl_drop check_type(const struct rte_mbuf *m, uint32_t *type)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (m->data_len < 4)
		return TL_DROP_malformed;
	*type = rte_le_to_cpu_32(tl_load32(p));
	switch (*type) {
	case TL_MSG_INITIATION:
		return m->data_len == sizeof(struct tl_msg_initiation) ? TL_DROP_MAX : TL_DROP_malformed;
	case TL_MSG_RESPONSE:
		return m->data_len == sizeof(struct tl_msg_response) ? TL_DROP_MAX : TL_DROP_malformed;
	case TL_MSG_COOKIE:
		return m->data_len == sizeof(struct tl_msg_cookie) ? TL_DROP_MAX : TL_DROP_malformed;
	case TL_MSG_DATA:
		return m->data_len >= TL_MSG_DATA_MIN ? TL_DROP_MAX : TL_DROP_malformed;
	default:
		return TL_DROP_unknown_type;
	}
}

/* Handshake messages go to the control plane as copies in its own pool: port RX buffers
 * never wait on the control plane, so a handshake flood cannot starve the port of
 * buffers. The copy is the WireGuard message alone; its outer headers go beside it as
 * parsed here (source address, port and MAC: where to answer) in the copy's private area
 * (tl_hs_outer). */
static void to_ctrl(struct tl_worker *w, struct rte_mbuf *m, const struct tl_outer *o)
{
	struct rte_mbuf *c;

	c = rte_pktmbuf_copy(m, w->dp->hs_pool, 0, UINT32_MAX);
	rte_pktmbuf_free(m);
	if (!c) {
		w->cnt.drops[TL_DROP_handshake_overload]++;
		w->cnt.rx_drops[TL_PORT_WAN]++;
		return;
	}
	*tl_hs_outer(c) = *o;
	if (rte_ring_mp_enqueue(w->dp->hs_ring, c) != 0)
		return tl_drop_rx(w, TL_PORT_WAN, c, TL_DROP_handshake_overload);
	w->cnt.to_ctrl++;
	tl_dp_kick_ctrl(w->dp);
}

static struct tl_keypair *index_lookup(struct tl_dp *dp, uint32_t index)
{
	void *data;

	if (rte_hash_lookup_data(tl_dp_index(dp), &index, &data) < 0)
		return NULL;
	return data;
}

static bool same_endpoint(const struct tl_endpoint *ep, const struct tl_outer *o, bool mac_known)
{
	size_t alen = o->family == AF_INET ? 4 : 16;

	if (ep->family != o->family || ep->port != o->src_port || memcmp(ep->ip, o->src_ip, alen))
		return false;
	return !mac_known || (ep->mac_valid && !memcmp(ep->mac, o->src_mac, 6));
}

/* Roaming: the endpoint becomes the source of the latest authenticated packet, and its
 * destination the source of what we send back (as the kernel replies from the address the
 * peer wrote to). The frame's source MAC is the next hop back; an all-zero one (a datagram
 * the kernel reassembled, whose sender's MAC the neighbour table did not know) keeps the MAC
 * of an unchanged endpoint, and leaves a new endpoint's to the control plane's resolution. */
static bool src_mac_known(const struct tl_outer *o)
{
	return !rte_is_zero_ether_addr((const struct rte_ether_addr *)o->src_mac);
}

static void roam(struct tl_peer *peer, const struct tl_outer *o)
{
	bool keep_mac;

	rte_seqlock_write_lock(&peer->ep_lock);
	keep_mac = !src_mac_known(o) && same_endpoint(&peer->ep, o, false);   /* only our address changed */
	peer->ep.family = o->family;
	memset(peer->ep.ip, 0, sizeof(peer->ep.ip));
	memcpy(peer->ep.ip, o->src_ip, o->family == AF_INET ? 4 : 16);
	peer->ep.port = o->src_port;
	if (!keep_mac) {
		memcpy(peer->ep.mac, o->src_mac, 6);
		peer->ep.mac_valid = src_mac_known(o);
	}
	memcpy(peer->ep.local, o->dst_ip, sizeof(peer->ep.local));
	peer->ep.has_local = true;
	rte_seqlock_write_unlock(&peer->ep_lock);
}

static bool source_allowed(const struct tl_table *t, const struct tl_peer *peer, const struct tl_inner *in)
{
	return tl_route_lookup(t, in->family, in->src) == peer->id;
}

/* RFC 6040 decapsulation (4.2): an outer CE reaches an ECN-capable inner packet, an outer
 * ECT(1) makes an inner ECT(0) ECT(1), an inner not-ECT packet stays not-ECT. False: the
 * inner packet is not-ECT and the outer CE, to be dropped. */
static bool ecn_decap(uint8_t *ip, const struct tl_inner *in, uint8_t outer_ecn)
{
	uint8_t ecn;

	if (in->ecn == 0)
		return outer_ecn != 3;
	if (outer_ecn == 3 && in->ecn != 3)
		ecn = 3;
	else if (outer_ecn == 1 && in->ecn == 2)
		ecn = 1;
	else
		return true;
	if (in->family == AF_INET) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		h->type_of_service = (uint8_t)((h->type_of_service & ~3u) | ecn);
		h->hdr_checksum = 0;
		h->hdr_checksum = rte_ipv4_cksum(h);
	} else {
		ip[1] = (uint8_t)((ip[1] & ~0x30u) | (unsigned)ecn << 4);
	}
	return true;
}

static void lan_output(struct tl_worker *w, struct rte_mbuf *m, int family, const uint8_t *dst);

/* TL_DROP_MAX: m went on toward the LAN (queued, held or dropped there); else the reason
 * to drop it for. */
static enum tl_drop deliver(struct tl_worker *w, const struct tl_table *t, struct tl_peer *peer,
			    struct rte_mbuf *m, uint8_t outer_ecn)
{
	struct tl_inner in;
	enum tl_drop r;

	r = tl_pkt_parse_inner(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &in);
	if (r != TL_DROP_MAX)
		return r;
	if (!source_allowed(t, peer, &in))
		return TL_DROP_src_not_allowed;
	rte_pktmbuf_trim(m, m->data_len - in.len);
	if (!ecn_decap(rte_pktmbuf_mtod(m, uint8_t *), &in, outer_ecn))
		return TL_DROP_ecn_ce_not_ect;
	if (tl_flowrtt_active(w->dp->flowrtt, w->now_ns))
		tl_flowrtt_ack(w->dp->flowrtt, rte_pktmbuf_mtod(m, const uint8_t *), in.len, w->now_ns);
	lan_output(w, m, in.family, in.dst);
	return TL_DROP_MAX;
}

/* A data message from another source than the peer's endpoint would move it: its outer
 * headers must then be intact (UDP checksum, checked before decryption changes the
 * payload). From the endpoint itself the AEAD tag covers all that is used; one sent to
 * another address of ours (*relocal) only changes our source toward the peer, an address
 * the parser found ours. */
static bool moves_endpoint(struct tl_peer *peer, const struct tl_outer *o, bool *relocal)
{
	struct tl_endpoint cur;

	tl_endpoint_read(peer, &cur);
	*relocal = !cur.has_local || memcmp(cur.local, o->dst_ip, o->family == AF_INET ? 4 : 16) != 0;
	return !same_endpoint(&cur, o, src_mac_known(o));
}

/* A data message: its keypair, the checks that need the untouched frame, then a copy of
 * the key into the job.
 *
 * Roaming is decided when the packet is finished, in arrival order: the endpoint becomes
 * the source of the latest authenticated packet. Whether a packet may set it is known
 * here, before decryption: one from another source than the endpoint needs its UDP
 * checksum (dropped without it). While such a packet is in flight on this owner, the
 * endpoint may have moved by the time a packet from the old source is finished: its
 * checksum is checked too, and without it the packet is still delivered (the tag covers
 * what is used) but moves nothing. */
static void data_in(struct tl_worker *w, struct tl_crypt_job *j, struct rte_mbuf *m, const struct tl_outer *o)
{
	struct tl_msg_data *hdr = rte_pktmbuf_mtod(m, struct tl_msg_data *);
	uint32_t clen = m->data_len - sizeof(*hdr) - TL_AEAD_TAG_LEN;
	uint64_t ctr = rte_le_to_cpu_64(hdr->counter);
	struct tl_keypair *kp = index_lookup(w->dp, hdr->receiver);
	struct tl_crypt_pkt *p;
	bool moved, relocal, outer_ok = false;

	if (!kp)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_unknown_receiver);
	moved = moves_endpoint(kp->peer, o, &relocal);
	if (moved || w->roams_inflight)
		outer_ok = tl_pkt_outer_udp_check(m, o) == TL_DROP_MAX;
	if (moved && !outer_ok)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_bad_checksum);
	if (tl_age_ns(w->now_ns, kp->birth_ns) >= w->dp->limits.reject_after_time_ns ||
	    ctr >= w->dp->limits.reject_after_messages)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_key_expired);
	p = tl_crypt_add(j, m, kp, kp->recv_key, ctr, sizeof(*hdr), (uint16_t)clen);
	p->moved = moved;
	p->outer_ok = outer_ok;
	w->roams_inflight += moved;
	p->kp = kp;
	p->kp_birth = kp->birth_ns;
	p->o = *o;
}

static void decap_one(struct tl_worker *w, struct tl_crypt_job *j, struct rte_mbuf *m)
{
	struct tl_outer o;
	uint32_t type;
	enum tl_drop r;

	r = tl_pkt_parse_outer(m, &w->dp->port[TL_PORT_WAN], tl_dp_listen_port(w->dp), &o);
	if (r != TL_DROP_MAX)
		return tl_drop_rx(w, TL_PORT_WAN, m, r);
	r = check_type(m, &type);
	if (r != TL_DROP_MAX)
		return tl_drop_rx(w, TL_PORT_WAN, m, r);
	if (type == TL_MSG_DATA)
		return data_in(w, j, m, &o);
	r = tl_pkt_outer_udp_check(m, &o);
	if (r != TL_DROP_MAX)
		return tl_drop_rx(w, TL_PORT_WAN, m, r);
	to_ctrl(w, m, &o);
}

void tl_decap_burst(struct tl_worker *w, struct tl_crypt_job *j, struct rte_mbuf **pkts, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		decap_one(w, j, pkts[i]);
}

unsigned tl_decap_rx(struct tl_worker *w, struct rte_ring *src, unsigned *asked)
{
	struct rte_mbuf *pkts[TL_JOB_MAX];
	struct tl_crypt_job *j;
	unsigned n, want;

	if (asked)
		*asked = 0;
	if (src && rte_ring_empty(src))
		return 0;
	j = tl_crypt_open(w, TL_DIR_DECAP);
	if (!j)
		return 0;
	want = TL_JOB_MAX - j->n;
	if (asked)
		*asked = want;
	if (src) {
		n = rte_ring_sc_dequeue_burst(src, (void **)pkts, want, NULL);
		w->cnt.slowpath_rx += n;
	} else {
		n = tl_port_rx(&w->dp->port[TL_PORT_WAN], w->queue, pkts, (uint16_t)want);
		w->cnt.rx[TL_PORT_WAN] += n;
	}
	if (n) {
		tl_decap_burst(w, j, pkts, n);
		if (tl_crypt_submit(w, TL_DIR_DECAP))
			tl_decap_finish(w);
	}
	return n;
}

/* The keypair may have retired while the packet was being opened: it is looked up again
 * and must be the very one whose key opened it. */
static struct tl_keypair *still_current(struct tl_worker *w, const struct tl_crypt_pkt *p, uint32_t index)
{
	struct tl_keypair *kp = index_lookup(w->dp, index);

	return kp && kp == p->kp && kp->birth_ns == p->kp_birth ? kp : NULL;
}

static void finish_one(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m, const struct tl_crypt_pkt *p)
{
	struct tl_msg_data *hdr = rte_pktmbuf_mtod(m, struct tl_msg_data *);
	struct tl_keypair *kp;
	struct tl_peer *peer;
	enum tl_drop r;
	bool fresh, relocal;

	if (!p->ok)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_auth_failed);
	kp = still_current(w, p, hdr->receiver);
	if (!kp)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_key_expired);
	peer = kp->peer;
	rte_spinlock_lock(&kp->replay_lock);
	fresh = tl_replay_check(&kp->replay, p->counter, w->dp->limits.reject_after_messages);
	rte_spinlock_unlock(&kp->replay_lock);
	if (!fresh)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_replay);
	atomic_store_explicit(&peer->last_rx_auth_ns, w->now_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&peer->stats.rx_bytes, m->data_len, memory_order_relaxed);
	atomic_fetch_add_explicit(&peer->stats.rx_packets, 1, memory_order_relaxed);
	if (atomic_load_explicit(&peer->next, memory_order_relaxed) == kp &&
	    !atomic_exchange_explicit(&peer->next_confirmed, true, memory_order_acq_rel))
		tl_dp_kick_ctrl(w->dp);
	if (moves_endpoint(peer, &p->o, &relocal) ? p->outer_ok : relocal)
		roam(peer, &p->o);
	rte_pktmbuf_adj(m, sizeof(*hdr));
	rte_pktmbuf_trim(m, TL_AEAD_TAG_LEN);
	if (p->len == 0) {                    /* keepalive */
		w->cnt.consumed++;
		rte_pktmbuf_free(m);
		return;
	}
	atomic_store_explicit(&peer->last_rx_data_ns, w->now_ns, memory_order_relaxed);
	r = deliver(w, t, peer, m, p->o.ecn);
	if (r != TL_DROP_MAX)
		tl_drop_rx(w, TL_PORT_WAN, m, r);
}

/* A done job, all of it. */
static void finish_job(struct tl_worker *w, const struct tl_table *t, struct tl_crypt_job *j)
{
	for (; j->next < j->n; j->next++) {
		w->cnt.inflight[TL_DIR_DECAP]--;
		w->roams_inflight -= j->p[j->next].moved;
		finish_one(w, t, j->m[j->next], &j->p[j->next]);
	}
}

unsigned tl_decap_finish(struct tl_worker *w)
{
	const struct tl_table *t = atomic_load_explicit(&w->dp->table, memory_order_acquire);
	struct tl_crypt_job *j;
	unsigned total = 0;

	while ((j = tl_crypt_done_head(w, TL_DIR_DECAP))) {
		total += (unsigned)(j->n - j->next);
		finish_job(w, t, j);
		tl_crypt_release(w, j);
	}
	return total;
}

/* ---- LAN output: framed for the next hop and queued, held while the next hop resolves ---- */

static bool mac_of(struct tl_worker *w, const struct tl_neigh_key *k, uint8_t mac[6])
{
	void *data;

	if (rte_hash_lookup_data(w->dp->neigh_table, k, &data) < 0)
		return false;
	tl_mac_unpack(mac, (uintptr_t)data);
	return true;
}

static void send_lan(struct tl_worker *w, struct rte_mbuf *m, const uint8_t mac[6], int family)
{
	if (tl_pkt_push_eth(m, mac, w->dp->port[TL_PORT_LAN].mac, family) != 0)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_malformed);
	tl_egress_enqueue(w, TL_PORT_LAN, m);
}

static struct tl_hold *hold_find(struct tl_worker *w, const struct tl_neigh_key *k)
{
	for (unsigned i = 0; i < w->n_hold; i++)
		if (!memcmp(&w->hold[i].key, k, sizeof(*k)))
			return &w->hold[i];
	return NULL;
}

/* One request per held next hop; a full ring is retried by tl_hold_poll. */
static void hold_ask(struct tl_worker *w, struct tl_hold *h)
{
	h->asked = rte_ring_mp_enqueue_elem(w->dp->neigh_req, &h->key, sizeof(h->key)) == 0;
	if (h->asked)
		tl_dp_kick_ctrl(w->dp);
}

static void hold_add(struct tl_worker *w, struct tl_hold *h, const struct tl_neigh_key *k, struct rte_mbuf *m)
{
	if (!h) {
		if (w->n_hold == TL_HOLD_HOPS)
			return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_neigh_hold_overflow);
		h = &w->hold[w->n_hold++];
		h->key = *k;
		h->until = w->now_ns + TL_HOLD_NS;
		h->n = 0;
		hold_ask(w, h);
	}
	if (h->n == TL_HOLD_PKTS)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_neigh_hold_overflow);
	h->m[h->n++] = m;
	w->cnt.held++;
}

/* A decrypted IP packet (data at the IP header) toward dst on the LAN port: framed for its
 * next hop and queued, held while the next hop resolves, or dropped (counted). */
static void lan_output(struct tl_worker *w, struct rte_mbuf *m, int family, const uint8_t *dst)
{
	const struct tl_port_info *lan = &w->dp->port[TL_PORT_LAN];
	const struct tl_lanfib *f;
	struct tl_neigh_key hop;
	struct tl_hold *h = NULL;
	uint8_t mac[6];

	if (lan->fixed_peer_mac)
		return send_lan(w, m, lan->peer_mac, family);
	f = atomic_load_explicit(&w->dp->lanfib, memory_order_acquire);
	if (tl_lanfib_next_hop(f, family, dst, &hop) != 0)
		return tl_drop_rx(w, TL_PORT_WAN, m, TL_DROP_lan_no_route);
	/* Behind packets already held for this next hop: order is kept. */
	if (w->n_hold)
		h = hold_find(w, &hop);
	if (!h && mac_of(w, &hop, mac))
		return send_lan(w, m, mac, family);
	hold_add(w, h, &hop, m);
}

static void hold_remove(struct tl_worker *w, unsigned i)
{
	w->cnt.held -= w->hold[i].n;
	w->hold[i] = w->hold[--w->n_hold];
}

void tl_hold_poll(struct tl_worker *w)
{
	uint8_t mac[6];

	for (unsigned i = 0; i < w->n_hold;) {
		struct tl_hold *h = &w->hold[i];

		if (mac_of(w, &h->key, mac)) {
			for (unsigned j = 0; j < h->n; j++)
				send_lan(w, h->m[j], mac, h->key.family);
		} else if (w->now_ns >= h->until) {
			for (unsigned j = 0; j < h->n; j++)
				tl_drop_rx(w, TL_PORT_WAN, h->m[j], TL_DROP_no_neighbour);
		} else {
			if (!h->asked)
				hold_ask(w, h);
			i++;
			continue;
		}
		hold_remove(w, i);
	}
}

void tl_hold_free(struct tl_worker *w)
{
	while (w->n_hold) {
		struct tl_hold *h = &w->hold[0];

		for (unsigned j = 0; j < h->n; j++)
			rte_pktmbuf_free(h->m[j]);
		hold_remove(w, 0);
	}
}

/* ---- the LAN queue released it: to the port ---------------------------------------------- */

/* Sends n (at most a burst) frames on the LAN port and returns how many it took; those
 * not taken are m[taken..n), in their order (a `packet` port may send frames of different
 * flows out of order, so the ones taken need not have been the first). A `packet` port may
 * refuse some (the kernel's send error): dropped here as kernel_send_failed; *lost says how
 * many and *lost_bytes their bytes. */
static unsigned lan_tx(struct tl_worker *w, struct rte_mbuf **m, unsigned n, unsigned *lost, uint64_t *lost_bytes)
{
	struct rte_mbuf *failed[TL_PORT_TX_MAX];
	uint16_t nf = 0, sent;

	*lost_bytes = 0;
	sent = tl_port_tx(&w->dp->port[TL_PORT_LAN], w->queue, m, (uint16_t)n, failed, &nf);
	for (unsigned i = 0; i < nf; i++) {
		*lost_bytes += failed[i]->pkt_len;
		tl_drop_deq(w, TL_PORT_LAN, failed[i], TL_DROP_kernel_send_failed);
	}
	*lost = nf;
	return sent;
}

unsigned tl_decap_lan_send(struct tl_worker *w, unsigned max)
{
	struct tl_egress *e = &w->eg[TL_PORT_LAN];
	struct rte_mbuf *out[TL_PORT_TX_MAX];
	uint64_t bytes = 0, lost_bytes;
	unsigned n = 0, got, sent, lost;

	while (n < max && tl_queue_open(e, w->now_ns)) {
		got = tl_aqm_dequeue_burst(e->aqm, out + n, tl_shaper_on(&e->sh) ? 1 : max - n, w->now_ns);
		if (got == 0)
			break;
		for (unsigned i = n; i < n + got; i++)
			tl_queue_charge(e, out[i]);
		n += got;
		if (!tl_shaper_on(&e->sh))
			break;
	}
	tl_queue_note_wait(w, e, n);
	if (n == 0)
		return 0;
	for (unsigned i = 0; i < n; i++)          /* the port frees what it sends */
		bytes += out[i]->pkt_len;
	sent = lan_tx(w, out, n, &lost, &lost_bytes);
	for (unsigned i = sent; i < n; i++)       /* not taken: still ours */
		bytes -= out[i]->pkt_len;
	e->tx_bytes += bytes - lost_bytes;
	e->tx_packets += sent - lost;
	w->cnt.tx[TL_PORT_LAN] += sent - lost;
	if (sent < n) {
		for (unsigned i = sent; i < n; i++)
			tl_queue_refund(e, out[i]);
		tl_aqm_requeue_head(e->aqm, out + sent, n - sent);
		e->backpressure++;
		w->cnt.backpressure[TL_PORT_LAN]++;
		return sent;
	}
	return n;
}
