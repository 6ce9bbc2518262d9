/* A program that is not ours (its name lacks the tl_ prefix): test_kernel.sh checks that
 * tl_xdp_clear_leftover refuses to remove it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int foreign_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";
