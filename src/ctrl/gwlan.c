/* A gateway's LAN port of the packet kind. The LAN interface keeps its addresses, ARP,
 * neighbour discovery and the gateway's own traffic; a tc ingress program on it makes the
 * LAN's steering decision (bpf/tl_lan_decide.h, the one the af_xdp port's XDP program makes)
 * and redirects each packet routed into the tunnel out of <name>-lan, the kernel's end of a
 * veth pair: the packet arrives on <name>-dp, where the port's AF_PACKET socket reads it,
 * a GRO super-packet whole (the port splits it, afpacket.c). Frames the port sends on
 * <name>-dp arrive at <name>-lan, whose tc ingress program redirects them out of the LAN
 * interface as they are: the port writes the LAN interface's MAC as their source and the
 * next hop's from the LAN's neighbours (lanmirror.c) as their destination. One decision per
 * packet, and the kernel never routes a copy of a steered packet.
 * The pair is made as host mode's (hostmode.c): one queue, the MTU of the LAN interface,
 * the kernel end with the offloads a virtio-net header carries (the rest is done by the
 * kernel before the packet reaches the socket), no IPv6 on either end (neither answers
 * anything), RPS on the port's end for each flow's order. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ctrl/device.h"
#include "ctrl/gwlan.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "kernel/iface.h"
#include "kernel/netlink.h"
#include "kernel/tc.h"

int tl_gwlan_setup(struct tl_device *dev, char *err, size_t errlen)
{
	const char *lan = dev->cfg->lan.iface;
	int lan_mtu = 0, r;

	snprintf(dev->host_if, sizeof(dev->host_if), "%.11s-lan", dev->cfg->name);
	snprintf(dev->dp_if, sizeof(dev->dp_if), "%.11s-dp", dev->cfg->name);
	if (tl_nl_link_delete(dev->nl, dev->host_if) == 0)   /* its tc program goes with it */
		tl_log_info("lan: removed %s left over from an earlier run", dev->host_if);
	r = tl_nl_link_info(dev->nl, lan, NULL, NULL, &lan_mtu);
	if (r != 0) {
		snprintf(err, errlen, "ports.lan.iface: no interface '%s' (%s)", lan, strerror(-r));
		dev->host_if[0] = 0;
		return -1;
	}
	if (lan_mtu < (int)dev->cfg->mtu)
		lan_mtu = (int)dev->cfg->mtu;
	r = tl_nl_veth_create(dev->nl, dev->host_if, dev->dp_if, 1);
	if (r == 0)
		r = tl_nl_link_set(dev->nl, dev->dp_if, 1, lan_mtu, 1);
	if (r == 0)
		r = tl_nl_link_set(dev->nl, dev->host_if, -1, lan_mtu, 1);
	if (r == 0)
		r = tl_iface_virtio_offloads(dev->host_if);
	if (r == 0)
		r = tl_iface_ipv6_off(dev->dp_if);
	if (r == 0)
		r = tl_iface_ipv6_off(dev->host_if);
	if (r == 0)
		r = tl_nl_link_set(dev->nl, dev->host_if, 1, 0, -1);
	if (r != 0) {
		snprintf(err, errlen, "lan: cannot set up %s/%s: %s", dev->host_if, dev->dp_if, strerror(-r));
		tl_gwlan_teardown(dev);
		return -1;
	}
	/* The LAN interface's packets come in on the CPUs that received them, several for one
	 * flow where its sender sends from several (or without NAPI): the flow's CPU by RPS, as
	 * host mode's (hostmode.c). */
	r = tl_iface_rps_set(dev->dp_if, &dev->cpus);
	if (r != 0)
		tl_log_warn("lan: cannot set receive packet steering on %s (%s): TCP segments may reach the "
			    "dataplane out of order", dev->dp_if, strerror(-r));
	return 0;
}

/* The LAN port's own addresses stay with the kernel whatever the peers route (as the af_xdp
 * port's, ports.c). */
static void local_route(void *arg, int family, const uint8_t *addr)
{
	tl_xdp_route_add(arg, family, addr, family == AF_INET ? 32 : 128, TL_XDP_ROUTE_LOCAL);
}

int tl_gwlan_start(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_port_ctl *pc = &dev->ports[TL_PORT_LAN];
	struct tl_port_info *pi = &dev->dp.port[TL_PORT_LAN];
	const char *lan = dev->cfg->lan.iface;
	int lan_ifindex = (int)if_nametoindex(lan), pair_ifindex = (int)if_nametoindex(dev->host_if), r;

	if (!lan_ifindex || !pair_ifindex) {
		snprintf(err, errlen, "lan: no interface '%s'", !lan_ifindex ? lan : dev->host_if);
		return -1;
	}
	/* the port is the LAN interface for the neighbours, the ICMP errors and the counters */
	pc->ifindex = lan_ifindex;
	snprintf(pc->iface, sizeof(pc->iface), "%s", lan);
	if (tl_iface_mac(lan, pi->mac) != 0) {
		snprintf(err, errlen, "lan: cannot read the MAC address of %s", lan);
		return -1;
	}
	tl_iface_addrs(lan, tl_port_source_addr, pi);
	/* an af_xdp LAN port's program left by a crash would run before ours */
	if (tl_xdp_detach(lan_ifindex) > 0)
		tl_log_info("lan: removed a tunless XDP program left over on %s", lan);
	r = tl_tc_clear_leftover(lan_ifindex, err, errlen);
	if (r < 0)
		return -1;
	if (r == 1)
		tl_log_info("lan: removed a tunless tc program left over on %s", lan);
	pc->tc = calloc(1, sizeof(*pc->tc));
	if (!pc->tc) {
		snprintf(err, errlen, "lan: out of memory");
		return -1;
	}
	if (tl_tc_open(pc->tc, lan_ifindex, pair_ifindex, err, errlen) != 0) {
		free(pc->tc);
		pc->tc = NULL;
		return -1;
	}
	tl_iface_addrs(lan, local_route, &pc->tc->maps);
	tl_log_info("lan: %s's packets routed into the tunnel are steered through %s/%s (tc)", lan, dev->host_if,
		    dev->dp_if);
	return 0;
}

struct tl_xdp_maps *tl_gwlan_maps(struct tl_device *dev)
{
	struct tl_tc *t = dev->ports[TL_PORT_LAN].tc;

	return t ? &t->maps : NULL;
}

int tl_gwlan_stats(struct tl_device *dev, uint64_t *out)
{
	struct tl_tc *t = dev->ports[TL_PORT_LAN].tc;

	return t && tl_tc_stats(t, out) == 0 ? 0 : -1;
}

void tl_gwlan_teardown(struct tl_device *dev)
{
	struct tl_port_ctl *pc = &dev->ports[TL_PORT_LAN];

	if (pc->tc) {
		tl_tc_close(pc->tc);
		free(pc->tc);
		pc->tc = NULL;
	}
	if (dev->host_if[0])
		tl_nl_link_delete(dev->nl, dev->host_if);   /* takes the peer end along */
	dev->host_if[0] = dev->dp_if[0] = 0;
}
