/* LAN/host steering: IP packets whose destination is routed into the tunnel (the
 * tl_routes4/tl_routes6 tries, or everything with TL_CFG_REDIRECT_ALL) go to the AF_XDP
 * socket; ARP, neighbour discovery and non-IP stay with the kernel. One program per
 * object: the net_af_xdp PMD loads the first program it finds. */
#include "tl_maps.h"
#include "tl_lan_decide.h"

SEC("xdp")
int tl_lan_steer(struct xdp_md *ctx)
{
	struct tl_cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	const struct tl_bpf_cfg *cfg = tl_cfg_get();
	__be16 proto = tl_parse_eth(&c);

	if (!tl_lan_decide(&c, proto, cfg ? cfg->flags : 0))
		return tl_pass();
	return tl_steer(ctx);
}

char _license[] SEC("license") = "Dual MIT/GPL";
