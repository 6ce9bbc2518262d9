/* Worker-pipeline harness (see pipeline.h): EAL, a dataplane with net_ring ports, peers,
 * routes and keypairs with known keys, frame crafting as a peer would send, and the
 * counters a test asserts on. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "crypto/messages.h"
#include "crypto/primitives.h"
#include "dataplane/bufsize.h"
#include "dataplane/packet.h"
#include "dataplane/dpdk_compat.h"
#include "dataplane/runtime.h"
#include "pipeline.h"
#include "test_eal.h"

const uint8_t TL_PL_WAN_MAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 };
const uint8_t TL_PL_LAN_MAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x01 };
const uint8_t TL_PL_HOST_MAC[6] = { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x02 };
const uint8_t TL_PL_WAN_IP4[4] = { 192, 0, 2, 1 };
const uint8_t TL_PL_WAN_IP6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t LAN_IP4[4] = { 10, 99, 0, 1 };
static const uint8_t LAN_IP6[16] = { 0xfd, 0x00, 0x00, 0x99, [15] = 1 };

static unsigned setups;                  /* makes DPDK object names unique */

int tl_pl_eal_init(const char *argv0)
{
	return tl_test_eal_init(argv0, "tl_pl");
}

void tl_pl_eal_fini(void)
{
	tl_test_eal_fini();
}

/* The harness owns its keypairs (freed at teardown), so the index table frees nothing. */
static void reclaim_none(void *arg, void *key_data)
{
	(void)arg;
	(void)key_data;
}

static void ports_info(struct tl_dp *dp, const struct tl_pl_opts *o)
{
	struct tl_port_info *wan = &dp->port[TL_PORT_WAN], *lan = &dp->port[TL_PORT_LAN];

	memcpy(wan->mac, TL_PL_WAN_MAC, 6);
	memcpy(wan->ip4, TL_PL_WAN_IP4, 4);
	memcpy(wan->ip6, TL_PL_WAN_IP6, 16);
	wan->has_ip4 = !o->no_ip4;
	wan->has_ip6 = !o->no_ip6;
	memcpy(lan->mac, TL_PL_LAN_MAC, 6);
	memcpy(lan->ip4, LAN_IP4, 4);
	memcpy(lan->ip6, LAN_IP6, 16);
	lan->has_ip4 = lan->has_ip6 = true;
	memcpy(lan->peer_mac, TL_PL_HOST_MAC, 6);
	lan->fixed_peer_mac = true;
}

static void dp_init(struct tl_dp *dp, const struct tl_pl_opts *o)
{
	dp->n_workers = o->workers > 1 ? RTE_MIN(o->workers, (unsigned)TL_PL_MAX_WORKERS) : 1;
	dp->n_queues = 1;
	dp->listen_port = TL_PL_LISTEN_PORT;
	dp->mtu = o->mtu ? o->mtu : TL_PL_MTU;
	dp->host_mode = true;
	dp->limits = (struct tl_dp_limits){
		.rekey_after_time_ns = 120ull * 1000000000ull,
		.reject_after_time_ns = 180ull * 1000000000ull,
		.rekey_after_messages = 1ull << 60,
		.reject_after_messages = UINT64_MAX - (1ull << 13),
	};
	ports_info(dp, o);
	for (int role = 0; role < TL_PORT_MAX; role++) {
		dp->aqm_init[role] = tl_aqm_params_default();
		if (o->aqm_limit)
			dp->aqm_init[role].limit = o->aqm_limit;
		dp->queue_cap[role] = tl_aqm_capacity(&dp->aqm_init[role]);
	}
}

static int port_create(struct tl_pl *pl, int role)
{
	char name[32];
	int id;

	snprintf(name, sizeof(name), "net_ring_pl%u%s", setups, role == TL_PORT_WAN ? "wan" : "lan");
	id = tl_test_ring_port(name, TL_PL_RING_SIZE, pl->pool, &pl->rx[role], &pl->tx[role]);
	if (id < 0)
		return -1;
	pl->dp.port[role].port_id = (uint16_t)id;
	pl->port_up[role] = true;
	return 0;
}

static int setup(struct tl_pl *pl, const struct tl_pl_opts *opts)
{
	static const struct tl_pl_opts none;
	char name[32];

	dp_init(&pl->dp, opts ? opts : &none);
	if (tl_dp_create(&pl->dp, reclaim_none) != 0) {
		printf("tl_dp_create: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	snprintf(name, sizeof(name), "pl%u_pool", setups);
	pl->pool = rte_pktmbuf_pool_create(name, 8191, 0, 0, tl_buf_data_room(pl->dp.mtu, 0), (int)rte_socket_id());
	if (!pl->pool || port_create(pl, TL_PORT_WAN) != 0 || port_create(pl, TL_PORT_LAN) != 0) {
		printf("harness ports: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	if (tl_pl_routes_publish(pl) != 0) {
		printf("harness table: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	pl->worker_up = true;           /* tl_worker_fini undoes a partial tl_worker_init */
	if (tl_worker_init(&pl->w, 0, &pl->dp) != 0) {
		printf("harness worker: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	rte_rcu_qsbr_thread_register(pl->dp.qsbr, 0);
	rte_rcu_qsbr_thread_online(pl->dp.qsbr, 0);
	pl->online = true;
	for (unsigned i = 1; i < pl->dp.n_workers; i++) {
		pl->n_xw = i;            /* tl_worker_fini undoes a partial tl_worker_init */
		if (tl_worker_init(&pl->xw[i - 1], i, &pl->dp) != 0) {
			printf("harness crypto worker %u: %s\n", i, rte_strerror(rte_errno));
			return -1;
		}
	}
	return 0;
}

int tl_pl_setup(struct tl_pl *pl, const struct tl_pl_opts *opts)
{
	memset(pl, 0, sizeof(*pl));
	setups++;
	if (setup(pl, opts) == 0)
		return 0;
	tl_pl_teardown(pl);
	return -1;
}

void tl_pl_teardown(struct tl_pl *pl)
{
	if (pl->online) {
		rte_rcu_qsbr_thread_offline(pl->dp.qsbr, 0);
		rte_rcu_qsbr_thread_unregister(pl->dp.qsbr, 0);
	}
	for (unsigned i = 0; i < pl->n_xw; i++)
		tl_worker_fini(&pl->xw[i]);
	if (pl->worker_up)
		tl_worker_fini(&pl->w);
	for (int role = 0; role < TL_PORT_MAX; role++)
		tl_test_ring_port_free(pl->port_up[role] ? pl->dp.port[role].port_id : -1, pl->rx[role], pl->tx[role]);
	tl_dp_free(&pl->dp);             /* and what the stage ring holds */
	for (unsigned i = 0; i < TL_PL_MAX_PEERS; i++)
		rte_free(pl->peers[i]);
	for (unsigned i = 0; i < pl->n_kps; i++)
		rte_free(pl->kps[i]);
	rte_mempool_free(pl->pool);
	memset(pl, 0, sizeof(*pl));
}

struct tl_peer *tl_pl_peer_add(struct tl_pl *pl, uint32_t id, const struct tl_endpoint *ep)
{
	struct tl_peer *p;

	if (id >= TL_PL_MAX_PEERS || pl->peers[id] || tl_dp_peers_reserve(&pl->dp, id) != 0)
		return NULL;
	p = rte_zmalloc("tl_pl_peer", sizeof(*p), RTE_CACHE_LINE_SIZE);
	if (!p)
		return NULL;
	p->id = id;
	rte_seqlock_init(&p->ep_lock);
	if (ep)
		p->ep = *ep;
	pl->peers[id] = p;
	atomic_store(&atomic_load(&pl->dp.peers)->slot[id], p);
	return p;
}

int tl_pl_route_add(struct tl_pl *pl, int family, const void *addr, uint8_t len, uint32_t peer_id)
{
	struct tl_route_entry *e;

	if (pl->n_routes >= TL_PL_MAX_ROUTES)
		return -1;
	e = &pl->routes[pl->n_routes++];
	memset(e, 0, sizeof(*e));
	e->family = family;
	memcpy(e->addr, addr, family == AF_INET ? 4 : 16);
	e->len = len;
	e->peer_id = peer_id;
	return 0;
}

int tl_pl_routes_publish(struct tl_pl *pl)
{
	struct tl_table *t = tl_table_build(pl->routes, pl->n_routes, ((uint64_t)setups << 32) | ++pl->table_gen);

	if (!t)
		return -1;
	/* The worker runs on this thread, between rounds: the old table is unused now. */
	tl_table_free(atomic_exchange(&pl->dp.table, t));
	return 0;
}

void tl_pl_key(uint8_t key[32], uint32_t local_index, char which)
{
	for (unsigned i = 0; i < 32; i++)
		key[i] = (uint8_t)(local_index * 31u + i * 7u + (uint8_t)which);
}

struct tl_keypair *tl_pl_keypair_add(struct tl_pl *pl, struct tl_peer *peer, uint32_t local_index,
				     uint32_t remote_index)
{
	struct tl_keypair *kp;

	if (pl->n_kps >= TL_PL_MAX_KEYPAIRS)
		return NULL;
	kp = rte_zmalloc("tl_pl_kp", sizeof(*kp), RTE_CACHE_LINE_SIZE);
	if (!kp)
		return NULL;
	tl_pl_key(kp->send_key, local_index, 's');
	tl_pl_key(kp->recv_key, local_index, 'r');
	kp->local_index = local_index;
	kp->remote_index = remote_index;
	kp->birth_ns = pl->w.now_ns;
	kp->initiator = true;
	kp->peer = peer;
	atomic_init(&kp->send_counter, 0);
	rte_spinlock_init(&kp->replay_lock);
	tl_replay_init(&kp->replay);
	if (rte_hash_add_key_data(pl->dp.index_table, &kp->local_index, kp) != 0) {
		rte_free(kp);
		return NULL;
	}
	pl->kps[pl->n_kps++] = kp;
	atomic_store(&peer->current, kp);
	return kp;
}

/* ---- frames ---------------------------------------------------------------------------- */

uint16_t tl_pl_ip(uint8_t *buf, int family, const void *src, const void *dst, uint16_t len, uint32_t seed)
{
	uint16_t l3 = family == AF_INET ? 20 : 40;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(buf + l3);

	if (len < l3 + 8)
		return 0;
	memset(buf, 0, l3 + 8);
	for (uint16_t i = l3 + 8; i < len; i++)
		buf[i] = (uint8_t)(seed * 13u + i);
	udp->src_port = rte_cpu_to_be_16(40000);
	udp->dst_port = rte_cpu_to_be_16(9);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - l3));
	if (family == AF_INET) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)buf;

		ip->version_ihl = 0x45;
		ip->total_length = rte_cpu_to_be_16(len);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		memcpy(&ip->src_addr, src, 4);
		memcpy(&ip->dst_addr, dst, 4);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)buf;

		ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(len - l3));
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(TL_IP6_ADDR(ip->src_addr), src, 16);
		memcpy(TL_IP6_ADDR(ip->dst_addr), dst, 16);
		udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
	}
	return len;
}

static struct rte_mbuf *frame_new(struct tl_pl *pl, uint16_t len, uint8_t **data)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pl->pool);

	if (!m)
		return NULL;
	*data = (uint8_t *)rte_pktmbuf_append(m, len);
	if (!*data) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

static void eth_fill(uint8_t *h, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)h;

	memcpy(&eth->dst_addr, dst, 6);
	memcpy(&eth->src_addr, src, 6);
	eth->ether_type = rte_cpu_to_be_16(type);
}

struct rte_mbuf *tl_pl_lan_frame(struct tl_pl *pl, const uint8_t *ip, uint16_t len)
{
	uint8_t *d;
	struct rte_mbuf *m = frame_new(pl, (uint16_t)(TL_ETH_LEN + len), &d);

	if (!m)
		return NULL;
	eth_fill(d, TL_PL_LAN_MAC, TL_PL_HOST_MAC, (ip[0] >> 4) == 6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	memcpy(d + TL_ETH_LEN, ip, len);
	return m;
}

/* Outer IPv4 header of a WAN frame, checksums valid (the UDP one only if asked). */
static void outer4(uint8_t *h, const struct tl_endpoint *ep, uint16_t ulen, const struct tl_pl_wire *wi)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)h;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->type_of_service = wi->ecn;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + ulen));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	memcpy(&ip->src_addr, ep->ip, 4);
	memcpy(&ip->dst_addr, wi->dst_ip ? wi->dst_ip : TL_PL_WAN_IP4, 4);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(ep->port);
	udp->dst_port = rte_cpu_to_be_16(wi->dst_port ? wi->dst_port : TL_PL_LISTEN_PORT);
	udp->dgram_len = rte_cpu_to_be_16(ulen);
	udp->dgram_cksum = 0;
	if (wi->udp_cksum)
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
}

static void outer6(uint8_t *h, const struct tl_endpoint *ep, uint16_t ulen, const struct tl_pl_wire *wi)
{
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)h;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->vtc_flow = rte_cpu_to_be_32((6u << 28) | ((uint32_t)wi->ecn << 20));
	ip->payload_len = rte_cpu_to_be_16(ulen);
	ip->proto = IPPROTO_UDP;
	ip->hop_limits = 64;
	memcpy(TL_IP6_ADDR(ip->src_addr), ep->ip, 16);
	memcpy(TL_IP6_ADDR(ip->dst_addr), wi->dst_ip ? wi->dst_ip : TL_PL_WAN_IP6, 16);
	udp->src_port = rte_cpu_to_be_16(ep->port);
	udp->dst_port = rte_cpu_to_be_16(wi->dst_port ? wi->dst_port : TL_PL_LISTEN_PORT);
	udp->dgram_len = rte_cpu_to_be_16(ulen);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
}

/* A WAN frame with room for a UDP payload of len bytes at *payload; headers are filled
 * by wan_finish once the payload is in place. */
static struct rte_mbuf *wan_alloc(struct tl_pl *pl, const struct tl_endpoint *ep, uint16_t len,
				  const struct tl_pl_wire *wi, uint8_t **payload)
{
	uint16_t l3 = ep->family == AF_INET ? 20 : 40;
	uint8_t *d;
	struct rte_mbuf *m = frame_new(pl, (uint16_t)(TL_ETH_LEN + l3 + 8 + len + wi->trailer), &d);

	if (!m)
		return NULL;
	*payload = d + TL_ETH_LEN + l3 + 8;
	memset(*payload + len, 0xee, wi->trailer);
	return m;
}

static void wan_finish(struct rte_mbuf *m, const struct tl_endpoint *ep, uint16_t len, const struct tl_pl_wire *wi)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);

	eth_fill(d, wi->dst_mac ? wi->dst_mac : TL_PL_WAN_MAC, ep->mac,
		 ep->family == AF_INET ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6);
	if (ep->family == AF_INET)
		outer4(d + TL_ETH_LEN, ep, (uint16_t)(8 + len), wi);
	else
		outer6(d + TL_ETH_LEN, ep, (uint16_t)(8 + len), wi);
}

struct rte_mbuf *tl_pl_wan_frame(struct tl_pl *pl, const struct tl_endpoint *ep, const void *msg,
				 uint16_t len, const struct tl_pl_wire *wire)
{
	static const struct tl_pl_wire plain;
	const struct tl_pl_wire *wi = wire ? wire : &plain;
	uint8_t *payload;
	struct rte_mbuf *m = wan_alloc(pl, ep, len, wi, &payload);

	if (!m)
		return NULL;
	memcpy(payload, msg, len);
	wan_finish(m, ep, len, wi);
	return m;
}

struct rte_mbuf *tl_pl_wan_data(struct tl_pl *pl, const struct tl_endpoint *ep, struct tl_keypair *kp,
				uint64_t ctr, const uint8_t *ip, uint16_t len, const struct tl_pl_wire *wire)
{
	static const struct tl_pl_wire plain;
	const struct tl_pl_wire *wi = wire ? wire : &plain;
	uint16_t padded = (uint16_t)RTE_ALIGN_CEIL(len, TL_PADDING_MULTIPLE);
	uint16_t mlen = (uint16_t)(sizeof(struct tl_msg_data) + padded + TL_AEAD_TAG_LEN);
	struct tl_msg_data *hdr;
	uint8_t *payload;
	struct rte_mbuf *m = wan_alloc(pl, ep, mlen, wi, &payload);

	if (!m)
		return NULL;
	hdr = (struct tl_msg_data *)payload;
	hdr->type = rte_cpu_to_le_32(TL_MSG_DATA);
	hdr->receiver = kp->local_index;
	hdr->counter = rte_cpu_to_le_64(ctr);
	memset(hdr->payload, 0, padded);
	if (len)
		memcpy(hdr->payload, ip, len);
	/* OpenSSL's own AEAD (no room given): the worker opens with the one-pass path */
	if (tl_dp_aead_seal(pl->w.aead, kp->recv_key, ctr, hdr->payload, padded, hdr->payload + padded, 0, 0) != 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	wan_finish(m, ep, mlen, wi);
	return m;
}

/* Outer headers of a frame we sent to ep: our MAC, address and port; returns the UDP
 * payload and its length, or NULL with *why. */
static const uint8_t *outer_check(const struct rte_mbuf *m, const struct tl_endpoint *ep, uint16_t *plen,
				  const char **why)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ether_hdr *eth = (const void *)d;
	uint16_t l3 = ep->family == AF_INET ? 20 : 40, ulen;
	const struct rte_udp_hdr *udp = (const void *)(d + TL_ETH_LEN + l3);

	*why = "frame shorter than its headers";
	if (m->data_len < TL_ETH_LEN + l3 + 8)
		return NULL;
	*why = "Ethernet addresses are not ours -> the endpoint's MAC";
	if (memcmp(&eth->src_addr, TL_PL_WAN_MAC, 6) || memcmp(&eth->dst_addr, ep->mac, 6))
		return NULL;
	*why = "outer IP addresses are not ours -> the endpoint's";
	if (ep->family == AF_INET) {
		const struct rte_ipv4_hdr *ip = (const void *)(d + TL_ETH_LEN);

		if (memcmp(&ip->src_addr, TL_PL_WAN_IP4, 4) || memcmp(&ip->dst_addr, ep->ip, 4))
			return NULL;
		*why = "outer IPv4 header checksum";
		if (rte_ipv4_cksum(ip) != 0)   /* sums to all ones over a valid header */
			return NULL;
	} else {
		const struct rte_ipv6_hdr *ip = (const void *)(d + TL_ETH_LEN);

		if (memcmp(TL_IP6_ADDR(ip->src_addr), TL_PL_WAN_IP6, 16) || memcmp(TL_IP6_ADDR(ip->dst_addr), ep->ip, 16))
			return NULL;
	}
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	*why = "UDP ports or length";
	if (rte_be_to_cpu_16(udp->src_port) != TL_PL_LISTEN_PORT || rte_be_to_cpu_16(udp->dst_port) != ep->port ||
	    ulen < 8 || ulen > m->data_len - TL_ETH_LEN - l3)
		return NULL;
	*plen = (uint16_t)(ulen - 8);
	return (const uint8_t *)(udp + 1);
}

int tl_pl_open_data(struct tl_pl *pl, const struct rte_mbuf *m, const struct tl_endpoint *ep,
		    const struct tl_keypair *kp, uint64_t *ctr, uint8_t *out, uint16_t max, const char **why)
{
	uint16_t plen, clen;
	const uint8_t *p = outer_check(m, ep, &plen, why);
	const struct tl_msg_data *hdr = (const void *)p;

	if (!p)
		return -1;
	*why = "not a data message for the peer's receiver index";
	if (plen < TL_MSG_DATA_MIN || rte_le_to_cpu_32(hdr->type) != TL_MSG_DATA || hdr->receiver != kp->remote_index)
		return -1;
	clen = (uint16_t)(plen - sizeof(*hdr) - TL_AEAD_TAG_LEN);
	*why = "plaintext larger than the buffer";
	if (clen > max)
		return -1;
	*ctr = rte_le_to_cpu_64(hdr->counter);
	memcpy(out, hdr->payload, clen);
	*why = "tag did not verify with the keypair's send key";
	if (tl_dp_aead_open(pl->w.aead, kp->send_key, *ctr, out, clen, hdr->payload + clen, 0, 0) != 0)
		return -1;
	return clen;
}

/* ---- running and looking -------------------------------------------------------------- */

void tl_pl_inject(struct tl_pl *pl, int role, struct rte_mbuf *m)
{
	if (m && rte_ring_enqueue(pl->rx[role], m) != 0)
		rte_pktmbuf_free(m);
}

unsigned tl_pl_run(struct tl_pl *pl)
{
	unsigned rounds = 0;

	while (rounds < 10000) {
		rounds++;
		if (tl_worker_round(&pl->w) == 0)
			break;
	}
	return rounds;
}

unsigned tl_pl_collect(struct tl_pl *pl, int role, struct rte_mbuf **out, unsigned max)
{
	return rte_ring_dequeue_burst(pl->tx[role], (void **)out, max, NULL);
}

void tl_pl_discard(struct tl_pl *pl)
{
	struct rte_mbuf *m;

	for (int role = 0; role < TL_PORT_MAX; role++)
		while (rte_ring_dequeue(pl->tx[role], (void **)&m) == 0)
			rte_pktmbuf_free(m);
	while (rte_ring_dequeue(pl->dp.hs_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
}

uint64_t tl_pl_drops_total(const struct tl_pl *pl)
{
	uint64_t n = 0;

	for (int r = 0; r < TL_DROP_MAX; r++)
		n += pl->w.cnt.drops[r];
	return n;
}

bool tl_pl_drops_only(const struct tl_pl *pl, enum tl_drop r, uint64_t n)
{
	bool ok = true;

	for (int i = 0; i < TL_DROP_MAX; i++) {
		uint64_t want = i == (int)r ? n : 0;

		if (pl->w.cnt.drops[i] != want) {
			printf("  drops[%s] = %" PRIu64 ", expected %" PRIu64 "\n", tl_drop_names[i],
			       pl->w.cnt.drops[i], want);
			ok = false;
		}
	}
	return ok;
}

void tl_pl_balance(struct tl_pl *pl, struct tl_port_balance out[TL_PORT_MAX])
{
	tl_worker_snapshot(&pl->w);
	tl_conservation(&pl->w, 1, out);
}

bool tl_pl_balanced(struct tl_pl *pl)
{
	struct tl_port_balance b[TL_PORT_MAX];
	bool ok = true;

	tl_pl_balance(pl, b);
	for (int role = 0; role < TL_PORT_MAX; role++) {
		if (b[role].balance == 0)
			continue;
		printf("  %s balance %" PRId64 ": rx %" PRIu64 " generated %" PRIu64 " tx %" PRIu64 " drops %" PRIu64
		       " handed %" PRIu64 " queued %" PRIu64 "\n", role == TL_PORT_WAN ? "WAN" : "LAN",
		       b[role].balance, b[role].rx, b[role].generated, b[role].tx, b[role].drops, b[role].handed,
		       b[role].queued);
		ok = false;
	}
	return ok;
}

/* ---- the one-peer fixture ------------------------------------------------------------------ */

const struct tl_endpoint TL_PL_PEER4 = {
	.family = AF_INET, .ip = { 203, 0, 113, 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
const struct tl_endpoint TL_PL_PEER6 = {
	.family = AF_INET6, .ip = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 }, .port = 40001,
	.mac = { 0x02, 0x00, 0x00, 0x00, 0xc0, 0x01 }, .mac_valid = true,
};
const uint8_t TL_PL_PEER_NET4[4] = { 10, 1, 0, 0 };
const uint8_t TL_PL_PEER_HOST4[4] = { 10, 1, 0, 5 };
const uint8_t TL_PL_LAN_HOST4[4] = { 10, 99, 0, 20 };
const uint8_t TL_PL_PEER_NET6[16] = { 0xfd, 0x01 };
const uint8_t TL_PL_PEER_HOST6[16] = { 0xfd, 0x01, [15] = 5 };
const uint8_t TL_PL_LAN_HOST6[16] = { 0xfd, 0x00, 0x00, 0x99, [15] = 0x20 };

int tl_pl_fixture_up(struct tl_pl_fixture *f, const struct tl_endpoint *ep)
{
	f->ep = ep;
	if (tl_pl_setup(&f->pl, NULL) != 0)
		return -1;
	f->peer = tl_pl_peer_add(&f->pl, 0, ep);
	f->kp = NULL;
	if (f->peer && tl_pl_route_add(&f->pl, AF_INET, TL_PL_PEER_NET4, 16, 0) == 0 &&
	    tl_pl_route_add(&f->pl, AF_INET6, TL_PL_PEER_NET6, 64, 0) == 0 && tl_pl_routes_publish(&f->pl) == 0)
		f->kp = tl_pl_keypair_add(&f->pl, f->peer, TL_PL_LOCAL_INDEX, TL_PL_REMOTE_INDEX);
	if (f->peer && f->kp)
		return 0;
	tl_pl_teardown(&f->pl);
	return -1;
}

void tl_pl_fixture_down(struct tl_pl_fixture *f)
{
	tl_pl_teardown(&f->pl);
}
