/* A congested hop for test_nodrop.sh: marks CE on every ECN-capable IPv4 UDP datagram of
 * the WireGuard port (51820) it sees, like an AQM router between two gateways would. The
 * kernel in the lab has no ECN-marking qdisc, so the hop is this XDP program. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int ce_mark(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u16 old, new;
	__u32 sum;

	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(51820))
		return XDP_PASS;
	if ((ip->tos & 3) == 0 || (ip->tos & 3) == 3)
		return XDP_PASS;
	/* RFC 1624 incremental checksum update of the 16-bit word holding the TOS byte. */
	old = *(__u16 *)ip;
	ip->tos |= 3;
	new = *(__u16 *)ip;
	sum = (__u16)~ip->check;
	sum += (__u16)~old;
	sum += new;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = (__u16)~sum;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";
