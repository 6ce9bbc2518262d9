/* LAN -> WAN, in packet order: classification (cryptokey routing on the inner destination,
 * checks, MTU: fragments or ICMP errors) into the WAN egress queue || nonce and outer
 * headers when the queue releases the packet (so that the AQM sees inner headers and only
 * packets that will be sent use nonces), or staged for a handshake -> a crypto job, sealed
 * by any worker (crypt.c) || the owner finishes its jobs in order -> the WAN port; frames
 * of the control plane go out ahead of the queue. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_ip_frag.h>
#include <rte_ring_peek_zc.h>

#include "crypto/messages.h"
#include "dataplane/packet.h"
#include "dataplane/encap.h"
#include "dataplane/queue.h"
#include "dataplane/port.h"
#include "dataplane/route.h"

/* Fragments of one packet at most: a LAN frame fills one buffer, of at most 2 KiB or the MTU's
 * frame (bufsize.h): 4 at the smallest MTU, 2 above about 1 950. */
#define TL_MAX_FRAGMENTS 8
/* Bytes put in front of an inner packet at most: Ethernet, IPv6, UDP and message headers. */
#define TL_OUTER_MAX (TL_ETH_LEN + 40 + 8 + (int)sizeof(struct tl_msg_data))

static struct tl_peer *route_lookup(struct tl_dp *dp, const struct tl_table *t, const struct tl_inner *in)
{
	return tl_route_peer(dp, t, in->family, in->dst);
}

/* What a crypto job seals in a frame encap_frame built. */
struct tl_seal {
	uint64_t counter;
	uint16_t off, len;                /* plaintext (padded) from data start; the tag follows */
	bool v6;                          /* outer IPv6: its UDP checksum comes after sealing */
};

/* Builds the frame around the IP packet the mbuf holds, all but the sealing: padding and
 * room for the tag, the message header with the next nonce, the outer headers; counts it
 * in the peer's stamps and statistics. TL_DROP_MAX and *s, or a drop reason. */
static enum tl_drop encap_frame(struct tl_dp *dp, struct tl_peer *peer, struct tl_keypair *kp, struct rte_mbuf *m,
				uint8_t ecn, uint64_t now_ns, struct tl_seal *s)
{
	uint32_t len = m->data_len, padded = RTE_ALIGN_CEIL(len, TL_PADDING_MULTIPLE);
	struct tl_msg_data *hdr;
	struct tl_endpoint ep;
	uint64_t ctr;
	uint8_t *tail;

	if (padded > dp->mtu)
		padded = RTE_MAX(len, (uint32_t)dp->mtu);
	tl_endpoint_read(peer, &ep);
	if (!ep.family || !tl_pkt_wan_has_family(&dp->port[TL_PORT_WAN], ep.family))
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
	hdr = (struct tl_msg_data *)rte_pktmbuf_prepend(m, sizeof(*hdr));
	if (!hdr)
		return TL_DROP_oversized;
	hdr->type = rte_cpu_to_le_32(TL_MSG_DATA);
	hdr->receiver = kp->remote_index;
	hdr->counter = rte_cpu_to_le_64(ctr);
	if (tl_pkt_push_outer_nocsum(m, &dp->port[TL_PORT_WAN], &ep, tl_dp_listen_port(dp), ecn) != 0)
		return TL_DROP_oversized;
	s->counter = ctr;
	s->len = (uint16_t)padded;
	s->off = (uint16_t)(m->data_len - padded - TL_AEAD_TAG_LEN);
	s->v6 = ep.family == AF_INET6;
	atomic_fetch_add_explicit(&peer->stats.tx_bytes, m->data_len, memory_order_relaxed);
	atomic_fetch_add_explicit(&peer->stats.tx_packets, 1, memory_order_relaxed);
	atomic_store_explicit(&peer->last_tx_any_ns, now_ns, memory_order_relaxed);
	if (len)
		atomic_store_explicit(&peer->last_tx_data_ns, now_ns, memory_order_relaxed);
	if ((kp->initiator && tl_age_ns(now_ns, kp->birth_ns) >= dp->limits.rekey_after_time_ns) ||
	    ctr >= dp->limits.rekey_after_messages)
		tl_peer_want_handshake(dp, peer);
	return TL_DROP_MAX;
}

enum tl_drop tl_encap_one(struct tl_dp *dp, struct tl_dp_aead *aead, struct tl_peer *peer,
			  struct tl_keypair *kp, struct rte_mbuf *m, uint8_t ecn, uint64_t now_ns)
{
	struct tl_seal s;
	enum tl_drop r = encap_frame(dp, peer, kp, m, ecn, now_ns, &s);
	uint8_t *p;
	size_t head, tail;

	if (r != TL_DROP_MAX)
		return r;
	p = rte_pktmbuf_mtod_offset(m, uint8_t *, s.off);
	tl_pkt_room(m, p, s.len, &head, &tail);
	if (tl_dp_aead_seal(aead, kp->send_key, s.counter, p, s.len, p + s.len, head, tail) != 0)
		return TL_DROP_encrypt_failed;   /* the buffer may hold plaintext: never sent */
	if (s.v6)
		tl_pkt_outer_csum(m);
	return TL_DROP_MAX;
}

/* Parks a packet while the peer has no session (want_handshake) or while the MAC of its
 * endpoint's next hop is being resolved, as a copy in the staging pool (port RX buffers
 * never wait on the control plane), and behind packets parked before it. The copy goes to
 * the control plane through the stage ring, which has room for the whole pool; the control
 * plane keeps the peer's latest staged_packets and sends them, in order, once both are
 * there. A peer whose endpoint is unknown cannot be reached: nothing is parked for it (as
 * the kernel refuses to send to such a peer). */
static void stage_for(struct tl_worker *w, struct tl_peer *peer, struct rte_mbuf *m, bool want_handshake)
{
	struct tl_staged s = { .peer = peer };

	if (!tl_peer_has_endpoint(peer))
		return tl_drop_deq(w, TL_PORT_WAN, m, TL_DROP_no_endpoint);
	s.m = rte_pktmbuf_copy(m, w->dp->stage_pool, 0, UINT32_MAX);
	rte_pktmbuf_free(m);
	if (want_handshake)
		tl_peer_want_handshake(w->dp, peer);
	if (!s.m) {
		w->cnt.drops[TL_DROP_no_session_staged_overflow]++;
		w->cnt.deq_drops[TL_PORT_WAN]++;
		return;
	}
	atomic_fetch_add_explicit(&peer->n_staged, 1, memory_order_relaxed);
	w->cnt.staged++;
	if (rte_ring_mp_enqueue_elem(w->dp->stage_ring, &s, sizeof(s)) != 0) {   /* never: see above */
		atomic_fetch_sub_explicit(&peer->n_staged, 1, memory_order_relaxed);
		w->cnt.staged_drops++;
		tl_drop_pkt(&w->cnt, s.m, TL_DROP_no_session_staged_overflow);
		return;
	}
	tl_dp_kick_ctrl(w->dp);         /* the control plane takes it from the stage ring */
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

/* A token for an ICMP error from the worker's bucket (refilled on the worker's clock). */
static bool icmp_token(struct tl_worker *w)
{
	uint64_t elapsed = w->now_ns - w->icmp_tb_ns, add;

	if (elapsed >= (uint64_t)TL_ICMP_BURST * 1000000000ull / TL_ICMP_RATE) {
		w->icmp_tokens = TL_ICMP_BURST;
		w->icmp_tb_ns = w->now_ns;
	} else {
		add = elapsed * TL_ICMP_RATE / 1000000000ull;
		w->icmp_tokens = (uint32_t)RTE_MIN((uint64_t)TL_ICMP_BURST, w->icmp_tokens + add);
		w->icmp_tb_ns += add * 1000000000ull / TL_ICMP_RATE;
	}
	if (!w->icmp_tokens)
		return false;
	w->icmp_tokens--;
	return true;
}

/* A packet above the MTU that may not be fragmented (IPv4 with DF, IPv6) is dropped; its
 * buffer becomes the ICMP error, a packet of our own, unless the rules or the rate
 * forbid one. */
static void too_big(struct tl_worker *w, struct rte_mbuf *m, const struct tl_inner *in)
{
	if (!tl_pkt_icmp_error_allowed(m, in))
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_icmp_suppressed);
	if (!icmp_token(w))
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_icmp_ratelimited);
	w->cnt.drops[TL_DROP_frag_needed]++;
	w->cnt.rx_drops[TL_PORT_LAN]++;
	if (tl_pkt_make_too_big(m, &w->dp->port[TL_PORT_LAN], w->dp->mtu) != 0) {
		rte_pktmbuf_free(m);
		return;
	}
	w->cnt.icmp_errors++;
	tl_egress_enqueue(w, TL_PORT_LAN, m);
}

/* An IPv4 packet above the MTU without DF leaves as fragments of at most the MTU (the
 * payload of all but the last a multiple of 8 bytes), copied into buffers of the
 * packet's own pool; each is an inner packet of the WAN queue. */
static void fragment(struct tl_worker *w, struct rte_mbuf *m, const struct tl_inner *in)
{
	struct rte_mbuf *frags[TL_MAX_FRAGMENTS];
	uint16_t hlen, mtu;
	int32_t n;

	rte_pktmbuf_adj(m, TL_ETH_LEN);
	rte_pktmbuf_trim(m, m->data_len - in->len);
	hlen = (rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *)->version_ihl & 0xf) * 4;
	mtu = hlen + RTE_ALIGN_FLOOR(w->dp->mtu - hlen, 8);
	n = rte_ipv4_fragment_copy_nonseg_packet(m, frags, RTE_DIM(frags), mtu, m->pool);
	if (n <= 0)
		return tl_drop_rx(w, TL_PORT_LAN, m, n == -ENOMEM ? TL_DROP_nomem : TL_DROP_oversized);
	rte_pktmbuf_free(m);
	w->cnt.fragmented++;
	w->cnt.fragments += (uint64_t)n;
	for (int32_t i = 0; i < n; i++) {
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(frags[i], struct rte_ipv4_hdr *);

		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		tl_egress_enqueue(w, TL_PORT_WAN, frags[i]);
	}
}

static void encap_one(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	uint8_t *ip = (uint8_t *)(uintptr_t)(eth + 1);
	struct tl_inner in;
	enum tl_drop r;

	if (m->nb_segs != 1 || m->data_len < TL_ETH_LEN)
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_malformed);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_not_ip);
	r = tl_pkt_parse_inner(ip, m->data_len - TL_ETH_LEN, &in);
	if (r != TL_DROP_MAX)
		return tl_drop_rx(w, TL_PORT_LAN, m, r);
	if (!route_lookup(w->dp, t, &in))
		return tl_drop_rx(w, TL_PORT_LAN, m, TL_DROP_no_route);
	if (tl_pkt_l4_csum_complete(ip, &in))
		w->cnt.csum_completed++;
	if (in.len > w->dp->mtu) {
		if (in.family == AF_INET && tl_pkt_ip4_may_fragment(ip))
			return fragment(w, m, &in);
		return too_big(w, m, &in);
	}
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

unsigned tl_encap_rx(struct tl_worker *w, unsigned *asked)
{
	struct rte_mbuf *pkts[TL_BURST];
	uint16_t n = tl_port_rx(&w->dp->port[TL_PORT_LAN], w->queue, pkts, TL_BURST);

	*asked = TL_BURST;
	w->cnt.rx[TL_PORT_LAN] += n;
	tl_encap_burst(w, pkts, n);
	return n;
}

/* The peer is looked up again: allowed IPs may have changed, or the peer gone, while the
 * packet was queued. The ECN field is read now, after the AQM may have marked CE, and
 * copied to the outer header (RFC 6040 normal mode). */
static void encap_prepare(struct tl_worker *w, const struct tl_table *t, struct rte_mbuf *m, struct tl_crypt_job *j)
{
	struct tl_keypair *kp;
	struct tl_peer *peer;
	struct tl_crypt_pkt *p;
	struct tl_inner in;
	struct tl_seal s;
	enum tl_drop r;

	r = tl_pkt_parse_inner(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &in);
	if (r != TL_DROP_MAX)
		return tl_drop_deq(w, TL_PORT_WAN, m, r);
	peer = route_lookup(w->dp, t, &in);
	if (!peer)
		return tl_drop_deq(w, TL_PORT_WAN, m, TL_DROP_no_route);
	kp = atomic_load_explicit(&peer->current, memory_order_acquire);
	if (!tl_keypair_can_send(w->dp, kp, w->now_ns))
		return stage(w, peer, m);
	/* behind packets already staged: they leave first, in their order */
	if (atomic_load_explicit(&peer->n_staged, memory_order_acquire) || endpoint_resolving(peer))
		return stage_for(w, peer, m, false);
	r = encap_frame(w->dp, peer, kp, m, in.ecn, w->now_ns, &s);
	if (r == TL_DROP_key_expired)
		return stage(w, peer, m);
	if (r != TL_DROP_MAX)
		return tl_drop_deq(w, TL_PORT_WAN, m, r);
	p = tl_crypt_add(j, m, kp, kp->send_key, s.counter, s.off, s.len);
	p->v6_csum = s.v6;
}

/* ---- the WAN queue released it: nonce and headers, sealed by any worker, sent in order ---- */

/* The lines a packet's encapsulation writes: the headroom the outer headers go into (from
 * the IPv6 header's start to the message header's end), last touched when the buffer was
 * made, and the line the padding and the tag go into, past the packet's end. Asked for
 * ENCAP_PREFETCH packets ahead of their turn: a store that misses holds every later one. */
#define ENCAP_PREFETCH 4

static inline void encap_prefetch(struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);

	rte_prefetch0_write(p - TL_OUTER_MAX);
	rte_prefetch0_write(p - 1);
	rte_prefetch0_write(p + m->data_len);
}

/* Up to a job's packets the WAN queue's AQM releases and the shaper allows, readied for sealing
 * into the open encapsulation job, which is submitted. Without a free job the queue waits. */
unsigned tl_encap_take(struct tl_worker *w)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	const struct tl_table *t = atomic_load_explicit(&w->dp->table, memory_order_acquire);
	struct tl_crypt_job *j = tl_crypt_open(w, TL_DIR_ENCAP);
	struct rte_mbuf *m[TL_JOB_MAX];
	unsigned taken = 0, got;

	while (j && j->n < TL_JOB_MAX && tl_queue_open(e, w->now_ns)) {
		/* Without a shaper a whole job at once; with one, packet by packet. */
		got = tl_aqm_dequeue_burst(e->aqm, m, tl_shaper_on(&e->sh) ? 1 : TL_JOB_MAX - j->n, w->now_ns);
		if (got == 0)
			break;
		taken += got;
		for (unsigned i = 0; i < got && i < ENCAP_PREFETCH; i++)
			encap_prefetch(m[i]);
		for (unsigned i = 0; i < got; i++) {
			unsigned before = j->n;

			if (i + ENCAP_PREFETCH < got)
				encap_prefetch(m[i + ENCAP_PREFETCH]);
			encap_prepare(w, t, m[i], j);
			if (j->n > before)
				tl_queue_charge(e, j->m[before]);
		}
		if (!tl_shaper_on(&e->sh))
			break;
	}
	if (tl_crypt_submit(w, TL_DIR_ENCAP))
		tl_encap_finish(w);
	tl_queue_note_wait(w, e, taken);
	return taken;
}

/* Sends n (at most the port's tx_burst_max) frames on the WAN port and returns how many it
 * took. A socket port may refuse some of them (the kernel's send error: no route, too big):
 * those are dropped here as kernel_send_failed, as packets a queue released (queued) or as
 * frames of the control plane; *lost says how many and *lost_bytes their bytes. */
static unsigned wan_tx(struct tl_worker *w, struct rte_mbuf **m, unsigned n, bool queued, unsigned *lost,
		       uint64_t *lost_bytes)
{
	struct rte_mbuf *failed[TL_PORT_TX_MAX];
	uint16_t nf = 0, sent;

	*lost_bytes = 0;
	sent = tl_port_tx(&w->dp->port[TL_PORT_WAN], w->queue, m, (uint16_t)n, failed, &nf);
	for (unsigned i = 0; i < nf; i++) {
		*lost_bytes += failed[i]->pkt_len;
		if (queued)
			tl_drop_deq(w, TL_PORT_WAN, failed[i], TL_DROP_kernel_send_failed);
		else
			tl_drop_pkt(&w->cnt, failed[i], TL_DROP_kernel_send_failed);
	}
	*lost = nf;
	return sent;
}

/* Transmits a done job from where it stopped (failed seals dropped first). true when all
 * of it is gone; false: the port refused some, the rest waits. */
static bool send_job(struct tl_worker *w, struct tl_crypt_job *j)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	unsigned k = 0, max = tl_port_tx_burst_max(&w->dp->port[TL_PORT_WAN]);

	if (!j->checked) {
		/* A failed seal may have left plaintext in the buffer: never sent. */
		for (unsigned i = 0; i < j->n; i++) {
			if (j->p[i].ok) {
				j->m[k++] = j->m[i];
				continue;
			}
			w->cnt.inflight[TL_DIR_ENCAP]--;
			tl_drop_deq(w, TL_PORT_WAN, j->m[i], TL_DROP_encrypt_failed);
		}
		j->n = (uint16_t)k;
		j->checked = true;
	}
	/* In pieces of what the port takes at once (a udp port: the whole job, one GSO send). */
	while (j->next < j->n) {
		unsigned n = RTE_MIN((unsigned)(j->n - j->next), max), sent, lost;
		uint32_t len[TL_PORT_TX_MAX];
		uint64_t lost_bytes;

		for (unsigned i = 0; i < n; i++)          /* the port frees what it sends */
			len[i] = j->m[j->next + i]->pkt_len;
		sent = wan_tx(w, j->m + j->next, n, true, &lost, &lost_bytes);
		for (unsigned i = 0; i < sent; i++)
			e->tx_bytes += len[i];
		e->tx_bytes -= lost_bytes;               /* refused: not transmitted */
		e->tx_packets += sent - lost;
		w->cnt.tx[TL_PORT_WAN] += sent - lost;
		w->cnt.inflight[TL_DIR_ENCAP] -= sent;
		j->next = (uint16_t)(j->next + sent);
		if (sent < n) {
			e->backpressure++;
			w->cnt.backpressure[TL_PORT_WAN]++;
			return false;
		}
	}
	return true;
}

unsigned tl_encap_finish(struct tl_worker *w)
{
	struct tl_crypt_job *j;
	unsigned total = 0, before;
	bool whole;

	while ((j = tl_crypt_done_head(w, TL_DIR_ENCAP))) {
		before = j->next;
		whole = send_job(w, j);
		total += (unsigned)(j->next - before);
		if (!whole)
			break;
		tl_crypt_release(w, j);
	}
	return total;
}

/* Frames built by the control plane (handshakes, keepalives, staged packets) go out ahead
 * of the queues; what the port refuses stays in the ring. They use the shaper's budget. */
unsigned tl_encap_ctrl_flush(struct tl_worker *w)
{
	struct tl_egress *e = &w->eg[TL_PORT_WAN];
	struct rte_ring_zc_data zc;
	struct rte_mbuf **m;
	unsigned n, sent, lost;
	uint64_t lost_bytes;

	n = rte_ring_dequeue_zc_burst_start(w->ctrl_tx, TL_BURST, &zc, NULL);
	if (n == 0)
		return 0;
	m = (struct rte_mbuf **)zc.ptr1;          /* the contiguous part; the rest next round */
	for (unsigned i = 0; i < zc.n1; i++)
		tl_queue_charge(e, m[i]);
	sent = wan_tx(w, m, zc.n1, false, &lost, &lost_bytes);
	for (unsigned i = sent; i < zc.n1; i++)
		tl_queue_refund(e, m[i]);
	rte_ring_dequeue_zc_finish(w->ctrl_tx, sent);
	w->cnt.from_ctrl += sent;
	w->cnt.tx[TL_PORT_WAN] += sent - lost;
	return sent;
}
