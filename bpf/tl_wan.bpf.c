/* WAN steering: only UDP to our listen port goes to the AF_XDP socket; ARP, ND, SSH,
 * other UDP, ICMP and IP fragments stay with the kernel. One program per object: the
 * net_af_xdp PMD loads the first program it finds. */
#include "tl_maps.h"
#include "tl_parse.h"

/* Destination port of a UDP header at the cursor, 0 if truncated. */
static __always_inline __u16 tl_udp_dport(struct tl_cursor *c)
{
	struct udphdr *udp = tl_pull(c, sizeof(*udp));

	return udp ? bpf_ntohs(udp->dest) : 0;
}

/* Destination UDP port of an unfragmented IPv4 or extension-free IPv6 packet, else 0. */
static __always_inline __u16 tl_wan_dport(struct tl_cursor *c, __be16 proto)
{
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = tl_parse_ip4(c);

		if (!ip || ip->protocol != IPPROTO_UDP || tl_ip4_is_fragment(ip))
			return 0;
		return tl_udp_dport(c);
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = tl_parse_ip6(c);

		if (!ip6 || ip6->nexthdr != IPPROTO_UDP)
			return 0;
		return tl_udp_dport(c);
	}
	return 0;
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
	__u16 dport;

	if (!cfg || cfg->listen_port == 0)
		return tl_pass();
	dport = tl_wan_dport(&c, proto);
	if (dport == 0 || dport != cfg->listen_port)
		return tl_pass();
	return tl_steer(ctx);
}

char _license[] SEC("license") = "Dual MIT/GPL";
