/* Host mode, the TUN replacement: a veth pair whose host end carries the tunnel addresses,
 * MTU and the routes to the peers' allowed IPs (what wg-quick does for wg0), and whose
 * other end is the dataplane's LAN port (AF_PACKET or AF_XDP). The host end is NOARP: the
 * kernel sends straight to it without ARP/ND, like a point-to-point device. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl/device.h"
#include "ctrl/hostmode.h"
#include "ctrl/log.h"
#include "kernel/iface.h"
#include "kernel/netlink.h"

static int host_addresses(struct tl_device *dev, int ifindex)
{
	for (size_t i = 0; i < dev->cfg->n_addresses; i++) {
		const struct tl_prefix *a = &dev->cfg->addresses[i];
		int r = tl_nl_addr_add(dev->nl, ifindex, a->ip.family, a->ip.addr, a->len);

		if (r != 0)
			return r;
	}
	return 0;
}

/* With the packet port the dataplane's end has no XDP program and no GRO, so the host end's
 * transmit hands each frame to it through netif_rx, into the backlog of the CPU that sent
 * it. A TCP sender transmits from its application's CPU and from the CPU that took an ACK:
 * one flow's frames land in two backlogs and reach the port out of order. (The AF_XDP port's
 * XDP program makes the veth take every frame through its one NAPI ring, in order.) RPS on
 * the dataplane's end makes netif_rx pick the backlog by the flow's hash instead. Over every
 * CPU the daemon may run on (dev->cpus, its affinity when the device came up), not one: TCP
 * needs the order of each flow, which one CPU per flow keeps, and the flows' receive work
 * stays spread as it was; one CPU would serialise every flow for an order between flows that
 * nothing needs. The daemon's CPUs rather than every online one: that receive work feeds the
 * daemon's packet socket, and a daemon started on some CPUs (taskset, systemd's CPUAffinity)
 * keeps its work there and off the CPUs set apart for others. (A flow changes CPU only when its
 * hash changes: the kernel draws a new one for a TCP socket whose path looks broken, after a
 * retransmission timeout for one.) */
static void dp_steer(const struct tl_device *dev)
{
	int r = tl_iface_rps_set(dev->dp_if, &dev->cpus);

	if (r != 0)
		tl_log_warn("host: cannot set receive packet steering on %s (%s%s): the host's TCP "
			    "segments may reach the dataplane out of order",
			    dev->dp_if, strerror(-r), r == -ENOENT ? ", a kernel without CONFIG_RPS?" :
			    CPU_COUNT(&dev->cpus) == 0 ? ", no CPU in the daemon's affinity" : "");
}

int tl_host_setup(struct tl_device *dev, char *err, size_t errlen)
{
	int ifindex, r, mtu = dev->cfg->mtu;
	uint8_t mac[6];

	snprintf(dev->host_if, sizeof(dev->host_if), "%s", dev->cfg->name);
	snprintf(dev->dp_if, sizeof(dev->dp_if), "%.11s-dp", dev->cfg->name);
	if (tl_nl_link_delete(dev->nl, dev->host_if) == 0)
		tl_log_info("host: removed %s left over from an earlier run", dev->host_if);
	/* One queue pair: net_af_xdp (DPDK 22.11) opens one AF_XDP socket on a veth, and a frame
	 * the host sent on a second TX queue would arrive on an RX queue without a socket, where
	 * the XDP program can only pass it to the kernel. The crypto is spread over every
	 * worker behind that one queue. */
	r = tl_nl_veth_create(dev->nl, dev->host_if, dev->dp_if, 1);
	if (r == 0)
		r = tl_nl_link_set(dev->nl, dev->dp_if, 1, mtu, -1);
	if (r == 0)
		r = tl_nl_link_set(dev->nl, dev->host_if, -1, mtu, 1);
	if (r == 0)
		r = dev->cfg->lan.driver == TL_DRIVER_PACKET ? tl_iface_virtio_offloads(dev->host_if) : tl_iface_tx_csum_off(dev->host_if);
	if (r == 0 && dev->cfg->lan.driver == TL_DRIVER_PACKET)
		r = tl_iface_ipv6_off(dev->dp_if);
	if (r == 0 && dev->cfg->lan.driver == TL_DRIVER_PACKET)
		dp_steer(dev);
	if (r == 0)
		r = tl_nl_link_info(dev->nl, dev->host_if, &ifindex, mac, NULL);
	if (r == 0)
		r = host_addresses(dev, ifindex);
	if (r == 0)
		r = tl_nl_link_set(dev->nl, dev->host_if, 1, 0, -1);
	if (r != 0) {
		snprintf(err, errlen, "host: cannot set up %s/%s: %s", dev->host_if, dev->dp_if, strerror(-r));
		return -1;
	}
	dev->host_ifindex = ifindex;
	memcpy(dev->dp.port[TL_PORT_LAN].peer_mac, mac, 6);
	dev->dp.port[TL_PORT_LAN].fixed_peer_mac = true;
	for (size_t i = 0; i < dev->cfg->n_addresses; i++) {
		struct tl_port_info *pi = &dev->dp.port[TL_PORT_LAN];
		const struct tl_prefix *a = &dev->cfg->addresses[i];

		if (a->ip.family == AF_INET && !pi->has_ip4) {
			memcpy(pi->ip4, a->ip.addr, 4);
			pi->has_ip4 = true;
		} else if (a->ip.family == AF_INET6 && !pi->has_ip6) {
			memcpy(pi->ip6, a->ip.addr, 16);
			pi->has_ip6 = true;
		}
	}
	return 0;
}

/* One allowed IP's route through the host end (as the allowed IPs change: aips.c), through
 * its index from the setup: a hub's 100 000 routes are not 100 000 interface lookups. */
int tl_host_route(struct tl_device *dev, const struct tl_prefix *p, bool add)
{
	int ifindex = dev->host_ifindex, r;

	if (!ifindex)
		return -1;
	r = add ? tl_nl_route_add(dev->nl, ifindex, p->ip.family, p->ip.addr, p->len)
		: tl_nl_route_del(dev->nl, ifindex, p->ip.family, p->ip.addr, p->len);
	if (r != 0 && add)
		tl_log_err("host: route for an allowed IP: %s", strerror(-r));
	return r;
}

void tl_host_teardown(struct tl_device *dev)
{
	if (dev->host_if[0])
		tl_nl_link_delete(dev->nl, dev->host_if);   /* takes the routes and the peer end along */
	dev->host_if[0] = 0;
}
