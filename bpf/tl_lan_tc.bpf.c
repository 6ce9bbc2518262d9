/* A gateway's LAN port of the packet kind: tc programs that move the packets routed into
 * the tunnel between the LAN interface and the veth pair whose other end tunless reads with
 * an AF_PACKET socket (src/kernel/tc.c attaches them, src/ctrl/gwlan.c makes the pair).
 *   tl_lan_tc_in, ingress of the LAN interface: the LAN's decision (tl_lan_decide.h); a
 *     steered packet is redirected out of the pair's kernel end (it arrives on tunless's end,
 *     a GRO super-packet whole), the rest goes on to the kernel's stack untouched.
 *   tl_lan_tc_out, ingress of the pair's kernel end: every frame tunless sent is redirected
 *     out of the LAN interface as it is (tunless wrote the LAN's MAC addresses).
 * One decision per packet and no copy: the kernel never sees a steered packet. */
#include <linux/pkt_cls.h>

#include "tl_lan_decide.h"

/* Mirrors enum tl_tc_stat in src/kernel/tc.h. */
enum tl_tc_stat {
	TL_TC_STEERED = 0,       /* LAN -> tunless: redirected to the pair */
	TL_TC_PASSED = 1,        /* LAN -> kernel: not routed into the tunnel */
	TL_TC_SENT = 2,          /* tunless -> LAN: redirected to the LAN interface */
	TL_TC_NO_TARGET = 3,     /* no target interface set (or the redirect refused): LAN -> kernel, tunless -> dropped */
	TL_TC_STAT_MAX
};

/* Mirrors struct tl_tc_cfg_value in src/kernel/tc.c: where each program redirects to. */
struct tl_tc_cfg {
	__u32 to_pair;           /* ifindex of the pair's kernel end */
	__u32 to_lan;            /* ifindex of the LAN interface */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tl_tc_cfg);
} tl_tc_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TL_TC_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} tl_tc_stats SEC(".maps");

/* Ethernet, IPv6 and an ICMPv6 header: what the decision reads, in the linear part. */
#define TL_TC_PULL (14 + 40 + 8)

static __always_inline void tl_tc_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&tl_tc_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline const struct tl_tc_cfg *tl_tc_cfg_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&tl_tc_cfg, &zero);
}

/* Redirects out of ifindex, counted under ok; TC_ACT_SHOT-free: an unset target or a refused
 * redirect is counted and gets fallback. */
static __always_inline int tl_tc_redirect(__u32 ifindex, __u32 ok, int fallback)
{
	if (ifindex && bpf_redirect(ifindex, 0) == TC_ACT_REDIRECT) {
		tl_tc_count(ok);
		return TC_ACT_REDIRECT;
	}
	tl_tc_count(TL_TC_NO_TARGET);
	return fallback;
}

SEC("tc")
int tl_lan_tc_in(struct __sk_buff *skb)
{
	const struct tl_tc_cfg *cfg = tl_tc_cfg_get();
	struct tl_cursor c;
	__be16 proto;

	if (skb->len >= TL_TC_PULL)
		bpf_skb_pull_data(skb, TL_TC_PULL);
	c.pos = (void *)(long)skb->data;
	c.end = (void *)(long)skb->data_end;
	proto = tl_parse_eth(&c);
	if (!cfg || !tl_lan_decide(&c, proto, 0)) {
		tl_tc_count(TL_TC_PASSED);
		return TC_ACT_OK;
	}
	/* without a pair to send to, the kernel has it, as the XDP program passes without a socket */
	return tl_tc_redirect(cfg->to_pair, TL_TC_STEERED, TC_ACT_OK);
}

SEC("tc")
int tl_lan_tc_out(struct __sk_buff *skb)
{
	const struct tl_tc_cfg *cfg = tl_tc_cfg_get();

	return tl_tc_redirect(cfg ? cfg->to_lan : 0, TL_TC_SENT, TC_ACT_SHOT);
}

char _license[] SEC("license") = "Dual MIT/GPL";
