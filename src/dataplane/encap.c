/* LAN -> WAN: cryptokey routing on the inner destination, then the WAN egress queue;
 * encryption and outer headers when the queue releases the packet, so that the AQM sees
 * inner headers and only packets that will be sent use nonces. */
#include <string.h>
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_ip.h>

#include "crypto/messages.h"
#include "dataplane/packet.h"
#include "dataplane/route.h"
#include "dataplane/worker.h"

static struct tl_peer *route_lookup(const struct tl_table *t, const struct tl_inner *in)
{
	uint32_t id = tl_route_lookup(t, in->family, in->dst);

	return id < TL_MAX_PEERS ? t->peers[id] : NULL;
}

enum tl_drop tl_encap_one(struct tl_dp *dp, struct tl_dp_aead *aead, struct tl_peer *peer,
			  struct tl_keypair *kp, struct rte_mbuf *m, uint8_t ecn, uint64_t now_ns)
{
	uint32_t len = m->data_len, padded = RTE_ALIGN_CEIL(len, TL_PADDING_MULTIPLE);
	struct tl_msg_data *hdr;
	struct tl_endpoint ep;
	uint64_t ctr;
	uint8_t *tail;

	if (padded > dp->mtu)
		padded = RTE_MAX(len, (uint32_t)dp->mtu);
	tl_endpoint_read(peer, &ep);
	if (!ep.family || (ep.family == AF_INET && !dp->port[TL_PORT_WAN].has_ip4) ||
	    (ep.family == AF_INET6 && !dp->port[TL_PORT_WAN].has_ip6))
		return TL_DROP_no_endpoint;
	if (!ep.mac_valid)
		return TL_DROP_no_neighbour;
	ctr = atomic_fetch_add_explicit(&kp->send_counter, 1, memory_order_relaxed);
	if (ctr >= dp->limits.reject_after_messages)
		return TL_DROP_key_expired;
	tail = (uint8_t *)rte_pktmbuf_append(m, padded - len + TL_AEAD_TAG_LEN);
	if (!tail)
		return TL_DROP_oversized;
	memset(tail, 0, padded - len);
	tl_dp_aead_seal(aead, kp->send_key, ctr, rte_pktmbuf_mtod(m, uint8_t *), padded, tail + padded - len);
	hdr = (struct tl_msg_data *)rte_pktmbuf_prepend(m, sizeof(*hdr));
	if (!hdr)
		return TL_DROP_oversized;
	hdr->type = rte_cpu_to_le_32(TL_MSG_DATA);
	hdr->receiver = kp->remote_index;
	hdr->counter = rte_cpu_to_le_64(ctr);
	if (tl_pkt_push_outer(m, &dp->port[TL_PORT_WAN], &ep, dp->listen_port, ecn) != 0)
		return TL_DROP_oversized;
	atomic_fetch_add_explicit(&peer->stats.tx_bytes, m->data_len, memory_order_relaxed);
	atomic_fetch_add_explicit(&peer->stats.tx_packets, 1, memory_order_relaxed);
	atomic_store_explicit(&peer->last_tx_any_ns, now_ns, memory_order_relaxed);
	if (len)
		atomic_store_explicit(&peer->last_tx_data_ns, now_ns, memory_order_relaxed);
	if (kp->initiator && now_ns - kp->birth_ns >= dp->limits.rekey_after_time_ns)
		atomic_store_explicit(&peer->want_handshake, true, memory_order_relaxed);
	if (ctr >= dp->limits.rekey_after_messages)
		atomic_store_explicit(&peer->want_handshake, true, memory_order_relaxed);
	return TL_DROP_MAX;
}

/* Parks a packet while the peer has no session (want_handshake) or while the MAC of its
 * endpoint's next hop is being resolved, as a copy in the staging pool (port RX buffers
 * never wait on the control plane): oldest out when the peer's queue is full. The control
 * plane sends them once both are there. */
static void stage_for(struct tl_worker *w, struct tl_peer *peer, struct rte_mbuf *m, bool want_handshake)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(m, w->dp->stage_pool, 0, UINT32_MAX), *old;

	rte_pktmbuf_free(m);
	if (want_handshake)
		atomic_store_explicit(&peer->want_handshake, true, memory_order_release);
	if (!c) {
		w->cnt.drops[TL_DROP_no_session_staged_overflow]++;
		w->cnt.deq_drops[TL_PORT_WAN]++;
		return;
	}
	while (rte_ring_enqueue(peer->staged, c) != 0) {
		if (rte_ring_dequeue(peer->staged, (void **)&old) == 0)
			tl_drop_pkt(&w->cnt, old, TL_DROP_no_session_staged_overflow);
	}
	w->cnt.staged++;
}

static void stage(struct tl_worker *w, struct tl_peer *peer, struct rte_mbuf *m)
{
	stage_for(w, peer, m, true);
}

/* A known endpoint whose next-hop MAC is not resolved yet (just set by UAPI or the control
 * API, or not answered yet). */
static bool endpoint_resolving(struct tl_peer *peer)
{
	struct tl_endpoint ep;

	tl_endpoint_read(peer, &ep);
	return ep.family && !ep.mac_valid;
}

static void too_big(struct tl_worker *w, struct rte_mbuf *m)
{
	/* The packet is dropped; its buffer becomes the ICMP error, a packet of our own. */
	w->cnt.drops[TL_DROP_frag_needed]++;
	w->cnt.rx_drops[TL_PORT_LAN]++;
	if (tl_pkt_make_too_big(m, &w->dp->port[TL_PORT_LAN], w->dp->mtu) != 0) {
		rte_pktmbuf_free(m);
		return;
	}
	w->cnt.icmp_errors++;
	tl_egress_enqueue(w, TL_PORT_LAN, m);
}

static void encap_one(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct tl_inner in;
	enum tl_drop r;

	if (m->nb_segs != 1 || m->data_len < TL_ETH_LEN)
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_malformed);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_not_ip);
	r = tl_pkt_parse_inner((const uint8_t *)(eth + 1), m->data_len - TL_ETH_LEN, &in);
	if (r != TL_DROP_MAX)
		return tl_drop_rx(w, TL_PORT_LAN, m, r);
	if (in.len > w->dp->mtu)
		return too_big(w, m);
	if (!route_lookup(t, &in))
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_no_route);
	rte_pktmbuf_adj(m, TL_ETH_LEN);
	rte_pktmbuf_trim(m, m->data_len - in.len);
	tl_egress_enqueue(w, TL_PORT_WAN, m);
}

void tl_encap_burst(struct tl_worker *w, struct rte_mbuf **pkts, unsigned n)
{
	const struct tl_table *t = atomic_load_explicit(&w->dp->table, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		encap_one(w, t, pkts[i]);
}

/* The peer is looked up again: allowed IPs may have changed, or the peer gone, while the
 * packet was queued. The ECN field is read now, after the AQM may have marked CE, and
 * copied to the outer header (RFC 6040 normal mode). */
bool tl_encap_dequeued(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m)
{
	struct tl_keypair *kp;
	struct tl_peer *peer;
	struct tl_inner in;
	enum tl_drop r;

	r = tl_pkt_parse_inner(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &in);
	if (r != TL_DROP_MAX) {
		tl_drop_deq(w, TL_PORT_WAN, m, r);
		return false;
	}
	peer = route_lookup(t, &in);
	if (!peer) {
		tl_drop_deq(w, TL_PORT_WAN, m, TL_DROP_no_route);
		return false;
	}
	kp = atomic_load_explicit(&peer->current, memory_order_acquire);
	if (!tl_keypair_can_send(w->dp, kp, w->now_ns)) {
		stage(w, peer, m);
		return false;
	}
	if (endpoint_resolving(peer)) {
		stage_for(w, peer, m, false);
		return false;
	}
	r = tl_encap_one(w->dp, w->aead, peer, kp, m, in.ecn, w->now_ns);
	if (r == TL_DROP_key_expired) {
		stage(w, peer, m);
		return false;
	}
	if (r != TL_DROP_MAX) {
		tl_drop_deq(w, TL_PORT_WAN, m, r);
		return false;
	}
	return true;
}
