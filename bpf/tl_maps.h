/* Maps shared by the tunless XDP programs, and the layout the control plane writes.
 * Userspace mirrors struct tl_bpf_cfg and the stats indexes in src/kernel/xdp.c. */
#ifndef TL_BPF_MAPS_H
#define TL_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define TL_XSKS_MAX 256          /* queue indexes the socket map can hold */
#define TL_CFG_REDIRECT_ALL 1u   /* tl_cfg.flags: steer every IP packet (host mode) */

enum tl_bpf_stat {
	TL_STAT_REDIRECTED = 0,  /* handed to the AF_XDP socket */
	TL_STAT_PASSED = 1,      /* left to the kernel on purpose */
	TL_STAT_NO_SOCKET = 2,   /* meant for the socket, but its slot was empty: passed */
	TL_STAT_MAX
};

struct tl_bpf_cfg {
	__u16 listen_port;       /* host order; 0 = steer nothing (WAN) */
	__u16 pad;
	__u32 flags;             /* TL_CFG_* */
};

/* net_af_xdp fills this with one socket per queue; the name is fixed by the PMD. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, TL_XSKS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tl_bpf_cfg);
} tl_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TL_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} tl_stats SEC(".maps");

static __always_inline void tl_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&tl_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline const struct tl_bpf_cfg *tl_cfg_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&tl_cfg, &zero);
}

/* Passes the packet to the kernel, counted. */
static __always_inline int tl_pass(void)
{
	tl_count(TL_STAT_PASSED);
	return XDP_PASS;
}

/* Steers into this queue's socket; an empty slot falls back to XDP_PASS so that
 * traffic is never black-holed while no socket is bound. */
static __always_inline int tl_steer(const struct xdp_md *ctx)
{
	int act = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);

	tl_count(act == XDP_REDIRECT ? TL_STAT_REDIRECTED : TL_STAT_NO_SOCKET);
	return act;
}

#endif
