/* Frame parsing and building for the fast path (packet.h). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "dataplane/csum.h"
#include "dataplane/dpdk_compat.h"
#include "dataplane/packet.h"

/* After the structure is known to be sound: the destination (not_for_us), then the IPv4
 * header checksum (bad_checksum), so that nothing of a frame that is not ours or whose
 * addresses were damaged on the way reaches roaming or the handshake code. The UDP
 * checksum (a pass over the whole datagram) is left to tl_pkt_outer_udp_check, which the
 * caller runs where the outer headers matter. A checksum the port verified already (mbuf
 * RX flags) is not computed again. */
static bool ip4_cksum_ok(const struct rte_mbuf *m, const struct rte_ipv4_hdr *ip)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;

	if (f == RTE_MBUF_F_RX_IP_CKSUM_GOOD || f == RTE_MBUF_F_RX_IP_CKSUM_NONE)
		return true;                      /* NONE: header verified, field not filled in */
	if (f == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return false;
	return rte_ipv4_cksum(ip) == 0;          /* a valid header sums to all ones */
}

static bool udp_cksum_ok(const struct rte_mbuf *m, int family, const void *ip, const struct rte_udp_hdr *udp)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	if (family == AF_INET && udp->dgram_cksum == 0)
		return true;                      /* IPv4: no checksum computed by the sender */
	if (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD || f == RTE_MBUF_F_RX_L4_CKSUM_NONE)
		return true;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD || udp->dgram_cksum == 0)
		return false;                     /* IPv6 requires one (RFC 8200 8.1) */
	if (family == AF_INET ? rte_ipv4_udptcp_cksum_verify(ip, udp) == 0 : rte_ipv6_udptcp_cksum_verify(ip, udp) == 0)
		return true;
	/* A kernel sender on this host with checksum offload (a peer behind a veth) leaves
	 * only the pseudo-header sum for the device to finish: the datagram crossed no wire. */
	return udp->dgram_cksum == (family == AF_INET ? rte_ipv4_phdr_cksum(ip, 0) : rte_ipv6_phdr_cksum(ip, 0));
}

/* ---- the WAN's addresses ------------------------------------------------------------------ */

static const struct tl_addrset *wan_addrs(const struct tl_port_info *wan)
{
	return atomic_load_explicit(&wan->addrs, memory_order_acquire);
}

/* Binary search of n sorted addresses of len bytes each. */
static bool addr_in(const uint8_t *base, uint32_t n, size_t len, const uint8_t *addr)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = memcmp(base + (size_t)mid * len, addr, len);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool tl_pkt_wan_local(const struct tl_port_info *wan, int family, const uint8_t *addr)
{
	const struct tl_addrset *s = wan_addrs(wan);

	if (s)
		return family == AF_INET ? addr_in((const uint8_t *)s->a4, s->n4, 4, addr)
					 : addr_in((const uint8_t *)s->a6, s->n6, 16, addr);
	if (family == AF_INET)
		return wan->has_ip4 && memcmp(addr, wan->ip4, 4) == 0;
	return wan->has_ip6 && memcmp(addr, wan->ip6, 16) == 0;
}

bool tl_pkt_wan_has_family(const struct tl_port_info *wan, int family)
{
	const struct tl_addrset *s = wan_addrs(wan);

	if (s)
		return (family == AF_INET ? s->n4 : s->n6) > 0;
	return family == AF_INET ? wan->has_ip4 : wan->has_ip6;
}

bool tl_pkt_wan_source(const struct tl_port_info *wan, const struct tl_endpoint *ep, uint8_t src[16])
{
	const struct tl_addrset *s = wan_addrs(wan);
	size_t alen = ep->family == AF_INET ? 4 : 16;

	memset(src, 0, 16);
	if (!tl_pkt_wan_has_family(wan, ep->family))
		return false;
	if (ep->has_local && tl_pkt_wan_local(wan, ep->family, ep->local))
		memcpy(src, ep->local, alen);
	else if (wan->src_by_kernel)
		;       /* the kernel picks, by route */
	else if (!s)
		memcpy(src, ep->family == AF_INET ? wan->ip4 : wan->ip6, alen);
	else
		memcpy(src, ep->family == AF_INET ? s->first4 : s->first6, alen);
	return true;
}

static enum tl_drop parse_outer4(struct rte_mbuf *m, const struct tl_port_info *wan, struct tl_outer *o,
				 uint16_t *l3len)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, TL_ETH_LEN);
	uint16_t ihl, tot;

	if (m->data_len < TL_ETH_LEN + sizeof(*ip))
		return TL_DROP_malformed;
	ihl = (ip->version_ihl & 0xf) * 4;
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < 20 || tot < ihl + 8 || tot > m->data_len - TL_ETH_LEN)
		return TL_DROP_malformed;
	if (ip->next_proto_id != IPPROTO_UDP || (rte_be_to_cpu_16(ip->fragment_offset) & 0x3fff))
		return TL_DROP_malformed;
	if (!tl_pkt_wan_local(wan, AF_INET, (const uint8_t *)&ip->dst_addr))
		return TL_DROP_not_for_us;
	if (!ip4_cksum_ok(m, ip))
		return TL_DROP_bad_checksum;
	o->family = AF_INET;
	memcpy(o->src_ip, &ip->src_addr, 4);
	memset(o->dst_ip, 0, sizeof(o->dst_ip));
	memcpy(o->dst_ip, &ip->dst_addr, 4);
	o->ecn = ip->type_of_service & 3;
	rte_pktmbuf_trim(m, m->data_len - TL_ETH_LEN - tot);
	*l3len = ihl;
	return TL_DROP_MAX;
}

static enum tl_drop parse_outer6(struct rte_mbuf *m, const struct tl_port_info *wan, struct tl_outer *o,
				 uint16_t *l3len)
{
	const struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, TL_ETH_LEN);
	uint16_t plen;

	if (m->data_len < TL_ETH_LEN + sizeof(*ip) + 8)
		return TL_DROP_malformed;
	plen = rte_be_to_cpu_16(ip->payload_len);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 || ip->proto != IPPROTO_UDP ||
	    plen < 8 || plen > m->data_len - TL_ETH_LEN - sizeof(*ip))
		return TL_DROP_malformed;
	if (!tl_pkt_wan_local(wan, AF_INET6, TL_IP6_ADDR(ip->dst_addr)))
		return TL_DROP_not_for_us;
	o->family = AF_INET6;
	memcpy(o->src_ip, TL_IP6_ADDR(ip->src_addr), 16);
	memcpy(o->dst_ip, TL_IP6_ADDR(ip->dst_addr), 16);
	o->ecn = (rte_be_to_cpu_32(ip->vtc_flow) >> 20) & 3;
	rte_pktmbuf_trim(m, m->data_len - TL_ETH_LEN - sizeof(*ip) - plen);
	*l3len = sizeof(*ip);
	return TL_DROP_MAX;
}

enum tl_drop tl_pkt_parse_outer(struct rte_mbuf *m, const struct tl_port_info *wan, uint16_t listen_port,
				struct tl_outer *o)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	const struct rte_udp_hdr *udp;
	enum tl_drop r;
	uint16_t l3len = 0, ulen;

	if (m->nb_segs != 1 || m->data_len < TL_ETH_LEN)
		return TL_DROP_malformed;
	if (memcmp(&eth->dst_addr, wan->mac, 6) != 0)
		return TL_DROP_not_for_us;
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		r = parse_outer4(m, wan, o, &l3len);
	else if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		r = parse_outer6(m, wan, o, &l3len);
	else
		return TL_DROP_not_ip;
	if (r != TL_DROP_MAX)
		return r;
	udp = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, TL_ETH_LEN + l3len);
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (rte_be_to_cpu_16(udp->dst_port) != listen_port || ulen < 8 ||
	    ulen != m->data_len - TL_ETH_LEN - l3len)
		return TL_DROP_malformed;
	memcpy(o->src_mac, &eth->src_addr, 6);
	o->src_port = rte_be_to_cpu_16(udp->src_port);
	o->hdr_len = (uint16_t)(TL_ETH_LEN + l3len + 8);
	rte_pktmbuf_adj(m, o->hdr_len);
	return TL_DROP_MAX;
}

enum tl_drop tl_pkt_outer_udp_check(const struct rte_mbuf *m, const struct tl_outer *o)
{
	const uint8_t *eth = rte_pktmbuf_mtod(m, const uint8_t *) - o->hdr_len;
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(eth + o->hdr_len - 8);

	return udp_cksum_ok(m, o->family, eth + TL_ETH_LEN, udp) ? TL_DROP_MAX : TL_DROP_bad_checksum;
}

enum tl_drop tl_pkt_parse_inner(const uint8_t *p, uint32_t avail, struct tl_inner *in)
{
	if (avail < 20)
		return TL_DROP_malformed;
	if ((p[0] >> 4) == 4) {
		const struct rte_ipv4_hdr *ip = (const void *)p;
		uint16_t ihl = (ip->version_ihl & 0xf) * 4;

		in->len = rte_be_to_cpu_16(ip->total_length);
		if (ihl < 20 || in->len < ihl || in->len > avail)
			return TL_DROP_malformed;
		in->family = AF_INET;
		in->src = (const uint8_t *)&ip->src_addr;
		in->dst = (const uint8_t *)&ip->dst_addr;
		in->ecn = ip->type_of_service & 3;
		return TL_DROP_MAX;
	}
	if ((p[0] >> 4) == 6 && avail >= 40) {
		const struct rte_ipv6_hdr *ip = (const void *)p;
		uint32_t len = 40u + rte_be_to_cpu_16(ip->payload_len);   /* up to 65575: no wrap */

		if (len > avail || len > UINT16_MAX)
			return TL_DROP_malformed;
		in->len = (uint16_t)len;
		in->family = AF_INET6;
		in->src = TL_IP6_ADDR(ip->src_addr);
		in->dst = TL_IP6_ADDR(ip->dst_addr);
		in->ecn = (rte_be_to_cpu_32(ip->vtc_flow) >> 20) & 3;
		return TL_DROP_MAX;
	}
	return TL_DROP_malformed;
}

/* A kernel sender with checksum offload (CHECKSUM_PARTIAL, e.g. on a veth) leaves in the
 * TCP/UDP checksum field only the folded pseudo-header sum, for the device to finish;
 * through XDP the frame reaches us so. Such a field is completed here, anything else is
 * left alone. A complete checksum that happens to equal the pseudo-header sum is rewritten
 * to itself: the completion needs no verification first. */
static bool csum_partial(uint16_t field, uint16_t phdr, bool udp)
{
	return field == phdr && !(udp && field == 0);
}

static bool l4_csum_complete4(struct rte_ipv4_hdr *ip, uint16_t len)
{
	uint16_t ihl = (ip->version_ihl & 0xf) * 4, off;
	uint8_t *l4 = (uint8_t *)ip + ihl;
	bool udp = ip->next_proto_id == IPPROTO_UDP;
	uint16_t field;

	if (rte_be_to_cpu_16(ip->fragment_offset) & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return false;
	if (udp)
		off = offsetof(struct rte_udp_hdr, dgram_cksum);
	else if (ip->next_proto_id == IPPROTO_TCP)
		off = offsetof(struct rte_tcp_hdr, cksum);
	else
		return false;
	if (len < ihl + (udp ? sizeof(struct rte_udp_hdr) : sizeof(struct rte_tcp_hdr)))
		return false;
	memcpy(&field, l4 + off, 2);
	if (!csum_partial(field, rte_ipv4_phdr_cksum(ip, 0), udp))
		return false;
	memset(l4 + off, 0, 2);
	field = tl_csum_ipv4_l4(ip, l4);
	memcpy(l4 + off, &field, 2);
	return true;
}

static bool l4_csum_complete6(struct rte_ipv6_hdr *ip, uint16_t len)
{
	uint8_t *l4 = (uint8_t *)(ip + 1);
	bool udp = ip->proto == IPPROTO_UDP;
	uint16_t field, off;

	if (udp)
		off = offsetof(struct rte_udp_hdr, dgram_cksum);
	else if (ip->proto == IPPROTO_TCP)
		off = offsetof(struct rte_tcp_hdr, cksum);
	else
		return false;
	if (len < sizeof(*ip) + (udp ? sizeof(struct rte_udp_hdr) : sizeof(struct rte_tcp_hdr)))
		return false;
	memcpy(&field, l4 + off, 2);
	if (!csum_partial(field, rte_ipv6_phdr_cksum(ip, 0), false))
		return false;
	memset(l4 + off, 0, 2);
	field = tl_csum_ipv6_l4(ip, l4);
	memcpy(l4 + off, &field, 2);
	return true;
}

bool tl_pkt_l4_csum_complete(uint8_t *p, const struct tl_inner *in)
{
	if (in->family == AF_INET)
		return l4_csum_complete4((struct rte_ipv4_hdr *)p, in->len);
	return l4_csum_complete6((struct rte_ipv6_hdr *)p, in->len);
}

static void fill_eth(struct rte_ether_hdr *eth, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(&eth->dst_addr, dst, 6);
	memcpy(&eth->src_addr, src, 6);
	eth->ether_type = rte_cpu_to_be_16(type);
}

static void fill_udp(struct rte_udp_hdr *udp, uint16_t sport, uint16_t dport, uint16_t len)
{
	udp->src_port = rte_cpu_to_be_16(sport);
	udp->dst_port = rte_cpu_to_be_16(dport);
	udp->dgram_len = rte_cpu_to_be_16(len);
	udp->dgram_cksum = 0;
}

static int push_outer(struct rte_mbuf *m, const struct tl_port_info *wan, const struct tl_endpoint *ep,
		      uint16_t src_port, uint8_t ecn, bool csum)
{
	uint16_t ulen = m->data_len + 8;
	uint8_t *h, src[16];

	tl_pkt_wan_source(wan, ep, src);
	if (ep->family == AF_INET) {
		struct rte_ipv4_hdr *ip;

		h = (uint8_t *)rte_pktmbuf_prepend(m, TL_OUTER4_LEN);
		if (!h)
			return -1;
		ip = (struct rte_ipv4_hdr *)(h + TL_ETH_LEN);
		fill_eth((void *)h, ep->mac, wan->mac, RTE_ETHER_TYPE_IPV4);
		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = 0x45;
		ip->type_of_service = ecn;
		ip->total_length = rte_cpu_to_be_16(20 + ulen);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		memcpy(&ip->src_addr, src, 4);
		memcpy(&ip->dst_addr, ep->ip, 4);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		fill_udp((void *)(ip + 1), src_port, ep->port, ulen);
	} else {
		struct rte_ipv6_hdr *ip;
		struct rte_udp_hdr *udp;

		h = (uint8_t *)rte_pktmbuf_prepend(m, TL_OUTER6_LEN);
		if (!h)
			return -1;
		ip = (struct rte_ipv6_hdr *)(h + TL_ETH_LEN);
		fill_eth((void *)h, ep->mac, wan->mac, RTE_ETHER_TYPE_IPV6);
		ip->vtc_flow = rte_cpu_to_be_32((6u << 28) | ((uint32_t)ecn << 20));
		ip->payload_len = rte_cpu_to_be_16(ulen);
		ip->proto = IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(TL_IP6_ADDR(ip->src_addr), src, 16);
		memcpy(TL_IP6_ADDR(ip->dst_addr), ep->ip, 16);
		udp = (struct rte_udp_hdr *)(ip + 1);
		fill_udp(udp, src_port, ep->port, ulen);
		if (csum)
			udp->dgram_cksum = tl_csum_ipv6_l4(ip, udp);
	}
	return 0;
}

int tl_pkt_push_outer(struct rte_mbuf *m, const struct tl_port_info *wan, const struct tl_endpoint *ep,
		      uint16_t src_port, uint8_t ecn)
{
	return push_outer(m, wan, ep, src_port, ecn, true);
}

int tl_pkt_push_outer_nocsum(struct rte_mbuf *m, const struct tl_port_info *wan, const struct tl_endpoint *ep,
			     uint16_t src_port, uint8_t ecn)
{
	return push_outer(m, wan, ep, src_port, ecn, false);
}

void tl_pkt_outer_csum(struct rte_mbuf *m)
{
	struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, TL_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	udp->dgram_cksum = 0;
	udp->dgram_cksum = tl_csum_ipv6_l4(ip, udp);
}

int tl_pkt_push_eth(struct rte_mbuf *m, const uint8_t dst[6], const uint8_t src[6], int family)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, TL_ETH_LEN);

	if (!eth)
		return -1;
	fill_eth(eth, dst, src, family == AF_INET ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6);
	return 0;
}

bool tl_pkt_ip4_may_fragment(const uint8_t *p)
{
	const struct rte_ipv4_hdr *ip = (const void *)p;

	return !(rte_be_to_cpu_16(ip->fragment_offset) & RTE_IPV4_HDR_DF_FLAG);
}

/* An address that names no single host as a source: unspecified, loopback, multicast,
 * limited broadcast, reserved (IPv4 240/4). */
static bool ip4_src_bad(const uint8_t a[4])
{
	return a[0] == 0 || a[0] == 127 || a[0] >= 224;
}

static bool ip4_error_allowed(const uint8_t *p, uint16_t len)
{
	const struct rte_ipv4_hdr *ip = (const void *)p;
	const uint8_t *dst = (const uint8_t *)&ip->dst_addr;
	uint16_t ihl = (ip->version_ihl & 0xf) * 4;

	if (rte_be_to_cpu_16(ip->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK)
		return false;                 /* not the first fragment */
	if (ip4_src_bad((const uint8_t *)&ip->src_addr) || (dst[0] >= 224 && dst[0] < 240) ||
	    ip->dst_addr == RTE_BE32(0xffffffff))
		return false;
	if (ip->next_proto_id == IPPROTO_ICMP && len > ihl) {
		uint8_t type = p[ihl];

		/* errors: unreachable, source quench, redirect, time exceeded, parameter problem */
		return !(type == 3 || type == 4 || type == 5 || type == 11 || type == 12);
	}
	return true;
}

static bool ip6_error_allowed(const uint8_t *p, uint16_t len)
{
	const struct rte_ipv6_hdr *ip = (const void *)p;
	static const uint8_t unspecified[16];

	/* Packet Too Big goes to a multicast destination too (RFC 4443 2.4(e.3)); not to
	 * a source that names no single host. */
	if (TL_IP6_ADDR(ip->src_addr)[0] == 0xff || !memcmp(TL_IP6_ADDR(ip->src_addr), unspecified, 16))
		return false;
	if (ip->proto == IPPROTO_ICMPV6 && len > sizeof(*ip))
		return p[sizeof(*ip)] >= 128; /* types below 128 are errors */
	return true;
}

bool tl_pkt_icmp_error_allowed(const struct rte_mbuf *m, const struct tl_inner *in)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const uint8_t *p = (const uint8_t *)(eth + 1);

	if (in->family == AF_INET)
		return !rte_is_multicast_ether_addr(&eth->dst_addr) && ip4_error_allowed(p, in->len);
	return ip6_error_allowed(p, in->len);
}

/* ICMP errors quote as much of the offending packet as fits in a minimum-MTU datagram. */
#define TL_ICMP4_QUOTE (576 - 20 - 8)
#define TL_ICMP6_QUOTE (1280 - 40 - 8)

static int too_big4(struct rte_mbuf *m, const struct tl_port_info *lan, uint16_t mtu)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *orig = (struct rte_ipv4_hdr *)(eth + 1), *ip;
	struct rte_icmp_hdr *icmp;
	uint16_t quote = RTE_MIN((uint16_t)(m->data_len - TL_ETH_LEN), (uint16_t)TL_ICMP4_QUOTE);
	uint8_t src_mac[6], dst_ip[4];

	if (!lan->has_ip4)
		return -1;
	memcpy(src_mac, &eth->src_addr, 6);
	memcpy(dst_ip, &orig->src_addr, 4);
	rte_pktmbuf_trim(m, m->data_len - TL_ETH_LEN - quote);
	if (!rte_pktmbuf_prepend(m, 20 + 8))
		return -1;
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	fill_eth(eth, src_mac, lan->mac, RTE_ETHER_TYPE_IPV4);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	memset(ip, 0, 28);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16(28 + quote);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_ICMP;
	memcpy(&ip->src_addr, lan->ip4, 4);
	memcpy(&ip->dst_addr, dst_ip, 4);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	icmp = (struct rte_icmp_hdr *)(ip + 1);
	icmp->icmp_type = 3;                          /* destination unreachable */
	icmp->icmp_code = 4;                          /* fragmentation needed and DF set */
	icmp->icmp_seq_nb = rte_cpu_to_be_16(mtu);    /* next-hop MTU in the low 16 bits */
	icmp->icmp_cksum = ~tl_csum_raw(icmp, 8 + quote);
	return 0;
}

static int too_big6(struct rte_mbuf *m, const struct tl_port_info *lan, uint16_t mtu)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *orig = (struct rte_ipv6_hdr *)(eth + 1), *ip;
	uint8_t *icmp;
	uint16_t quote = RTE_MIN((uint16_t)(m->data_len - TL_ETH_LEN), (uint16_t)TL_ICMP6_QUOTE);
	uint8_t src_mac[6], dst_ip[16];
	uint32_t mtu32 = rte_cpu_to_be_32(mtu);

	if (!lan->has_ip6)
		return -1;
	memcpy(src_mac, &eth->src_addr, 6);
	memcpy(dst_ip, TL_IP6_ADDR(orig->src_addr), 16);
	rte_pktmbuf_trim(m, m->data_len - TL_ETH_LEN - quote);
	if (!rte_pktmbuf_prepend(m, 40 + 8))
		return -1;
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	fill_eth(eth, src_mac, lan->mac, RTE_ETHER_TYPE_IPV6);
	ip = (struct rte_ipv6_hdr *)(eth + 1);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(8 + quote);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 255;
	memcpy(TL_IP6_ADDR(ip->src_addr), lan->ip6, 16);
	memcpy(TL_IP6_ADDR(ip->dst_addr), dst_ip, 16);
	icmp = (uint8_t *)(ip + 1);
	icmp[0] = 2;                                  /* packet too big */
	icmp[1] = 0;
	icmp[2] = icmp[3] = 0;
	memcpy(icmp + 4, &mtu32, 4);
	{
		uint16_t ck = tl_csum_ipv6_l4(ip, icmp);

		memcpy(icmp + 2, &ck, sizeof(ck));
	}
	return 0;
}

int tl_pkt_make_too_big(struct rte_mbuf *m, const struct tl_port_info *lan, uint16_t mtu)
{
	/* The IP version decides, not the Ethernet type: a frame typed IPv4 that carries an
	 * IPv6 packet (or the other way round) gets the error of the packet's own family,
	 * addressed to its real source. */
	uint8_t version;

	if (m->data_len < TL_ETH_LEN + 20)
		return -1;
	version = *rte_pktmbuf_mtod_offset(m, const uint8_t *, TL_ETH_LEN) >> 4;
	if (version == 4)
		return too_big4(m, lan, mtu);
	if (version == 6 && m->data_len >= TL_ETH_LEN + 40)
		return too_big6(m, lan, mtu);
	return -1;
}
