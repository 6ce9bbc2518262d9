/* WAN steering: only UDP to our listen port at one of the WAN interface's own addresses goes
 * to the AF_XDP socket; ARP, ND, SSH, other UDP, ICMP, IP fragments and whatever the kernel
 * forwards (UDP to the listen port of another host, routed through this gateway) stay with
 * the kernel. One program per object: the net_af_xdp PMD loads the first program it finds. */
#include "tl_maps.h"
#include "tl_parse.h"

/* The WAN interface's own addresses, written by the control plane as they change
 * (src/ctrl/wanaddr.c through src/kernel/xdp.c: IPv4, and IPv6 but link-local). Until an
 * address is there, datagrams to it pass to the kernel (its UDP socket on the listen port
 * hands them to the dataplane's slow path). */
#define TL_WAN_ADDRS_MAX 4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TL_WAN_ADDRS_MAX);
	__type(key, __u32);              /* network order */
	__type(value, __u8);
} tl_wan_addr4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TL_WAN_ADDRS_MAX);
	__type(key, struct in6_addr);
	__type(value, __u8);
} tl_wan_addr6 SEC(".maps");

/* Destination port of a UDP header at the cursor (host order), 0 if truncated. */
static __always_inline __u16 tl_udp_dport(struct tl_cursor *c)
{
	struct udphdr *udp = tl_pull(c, sizeof(*udp));

	return udp ? bpf_ntohs(udp->dest) : 0;
}

/* 1 if an unfragmented IPv4 datagram goes to UDP port at one of our addresses. */
static __always_inline int tl_wan_match4(struct tl_cursor *c, __u16 port)
{
	struct iphdr *ip = tl_parse_ip4(c);
	__u32 dst;

	if (!ip || ip->protocol != IPPROTO_UDP || tl_ip4_is_fragment(ip))
		return 0;
	dst = ip->daddr;
	return tl_udp_dport(c) == port && bpf_map_lookup_elem(&tl_wan_addr4, &dst) != NULL;
}

/* 1 if an extension-free IPv6 datagram goes to UDP port at one of our addresses. */
static __always_inline int tl_wan_match6(struct tl_cursor *c, __u16 port)
{
	struct ipv6hdr *ip6 = tl_parse_ip6(c);
	struct in6_addr dst;

	if (!ip6 || ip6->nexthdr != IPPROTO_UDP)
		return 0;
	__builtin_memcpy(&dst, &ip6->daddr, sizeof(dst));
	return tl_udp_dport(c) == port && bpf_map_lookup_elem(&tl_wan_addr6, &dst) != NULL;
}

SEC("xdp")
int tl_wan_steer(struct xdp_md *ctx)
{
	struct tl_cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	const struct tl_bpf_cfg *cfg = tl_cfg_get();
	__be16 proto = tl_parse_eth(&c);
	int steer = 0;

	if (!cfg || cfg->listen_port == 0)
		return tl_pass();
	if (proto == bpf_htons(ETH_P_IP))
		steer = tl_wan_match4(&c, cfg->listen_port);
	else if (proto == bpf_htons(ETH_P_IPV6))
		steer = tl_wan_match6(&c, cfg->listen_port);
	return steer ? tl_steer(ctx) : tl_pass();
}

char _license[] SEC("license") = "Dual MIT/GPL";
