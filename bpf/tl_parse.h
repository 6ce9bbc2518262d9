/* Bounds-checked header parsing for the tunless XDP programs. */
#ifndef TL_BPF_PARSE_H
#define TL_BPF_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/icmpv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TL_IP_MF 0x2000
#define TL_IP_OFFSET 0x1fff

struct tl_cursor {
	void *pos;
	void *end;
};

/* Returns a pointer to the next len bytes and advances, or NULL if the packet is short. */
static __always_inline void *tl_pull(struct tl_cursor *c, __u32 len)
{
	void *p = c->pos;

	if (p + len > c->end)
		return NULL;
	c->pos = p + len;
	return p;
}

/* Ethernet header; returns the EtherType in network order, 0 if truncated. */
static __always_inline __be16 tl_parse_eth(struct tl_cursor *c)
{
	struct ethhdr *eth = tl_pull(c, sizeof(*eth));

	return eth ? eth->h_proto : 0;
}

/* IPv4 header including options; NULL if truncated or malformed. */
static __always_inline struct iphdr *tl_parse_ip4(struct tl_cursor *c)
{
	struct iphdr *ip = c->pos;
	__u32 hlen;

	if ((void *)(ip + 1) > c->end)
		return NULL;
	hlen = ip->ihl * 4;
	if (hlen < sizeof(*ip))
		return NULL;
	return tl_pull(c, hlen);
}

static __always_inline int tl_ip4_is_fragment(const struct iphdr *ip)
{
	return (ip->frag_off & bpf_htons(TL_IP_MF | TL_IP_OFFSET)) != 0;
}

static __always_inline struct ipv6hdr *tl_parse_ip6(struct tl_cursor *c)
{
	return tl_pull(c, sizeof(struct ipv6hdr));
}

#endif
