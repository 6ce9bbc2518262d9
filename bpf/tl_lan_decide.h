/* The LAN's steering decision, shared by the XDP program (tl_lan.bpf.c, af_xdp LAN ports)
 * and the tc program (tl_lan_tc.bpf.c, a gateway's packet LAN port): IP packets whose
 * destination is routed into the tunnel (the tl_routes4/tl_routes6 tries, or everything with
 * TL_CFG_REDIRECT_ALL) are steered to tunless; ARP, neighbour discovery, non-IP and the
 * port's own addresses stay with the kernel. Each object has its own tries, filled by the
 * control plane (src/kernel/xdp.c, src/kernel/tc.c). */
#ifndef TL_BPF_LAN_DECIDE_H
#define TL_BPF_LAN_DECIDE_H

#include "tl_parse.h"

#ifndef TL_CFG_REDIRECT_ALL
#define TL_CFG_REDIRECT_ALL 1u   /* steer every IP packet (host mode); mirrors tl_maps.h */
#endif

/* A hub's allowed IPs, a million and more (no preallocation: memory is taken per prefix). */
#define TL_ROUTES_MAX (1 << 21)
/* Route value of the LAN port's own addresses: they stay with the kernel even when a peer
 * routes everything (0.0.0.0/0, ::/0). Mirrored by TL_XDP_ROUTE_LOCAL in src/kernel/xdp.h. */
#define TL_ROUTE_LOCAL 0xffffffffu

struct tl_route4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct tl_route6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, TL_ROUTES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tl_route4_key);
	__type(value, __u32);
} tl_routes4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, TL_ROUTES_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tl_route6_key);
	__type(value, __u32);
} tl_routes6 SEC(".maps");

static __always_inline int tl_route_steers(const __u32 *value)
{
	return value && *value != TL_ROUTE_LOCAL;
}

static __always_inline int tl_lan_match4(struct tl_cursor *c)
{
	struct iphdr *ip = tl_parse_ip4(c);
	struct tl_route4_key key = { .prefixlen = 32 };

	if (!ip)
		return 0;
	__builtin_memcpy(key.addr, &ip->daddr, sizeof(key.addr));
	return tl_route_steers(bpf_map_lookup_elem(&tl_routes4, &key));
}

/* ICMPv6 router/neighbour solicitation/advertisement and redirect (133-137). */
static __always_inline int tl_is_nd(struct tl_cursor *c, const struct ipv6hdr *ip6)
{
	struct icmp6hdr *icmp;

	if (ip6->nexthdr != IPPROTO_ICMPV6)
		return 0;
	icmp = tl_pull(c, sizeof(*icmp));
	if (!icmp)
		return 0;
	return icmp->icmp6_type >= 133 && icmp->icmp6_type <= 137;
}

static __always_inline int tl_lan_match6(const struct ipv6hdr *ip6)
{
	struct tl_route6_key key = { .prefixlen = 128 };

	__builtin_memcpy(key.addr, &ip6->daddr, sizeof(key.addr));
	return tl_route_steers(bpf_map_lookup_elem(&tl_routes6, &key));
}

/* 1 to steer, 0 to pass. */
static __always_inline int tl_lan_decide(struct tl_cursor *c, __be16 proto, __u32 flags)
{
	int all = (flags & TL_CFG_REDIRECT_ALL) != 0;

	if (proto == bpf_htons(ETH_P_IP))
		return all || tl_lan_match4(c);
	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = tl_parse_ip6(c);

		if (!ip6 || tl_is_nd(c, ip6))
			return 0;
		return all || tl_lan_match6(ip6);
	}
	return 0;
}

#endif
