/* Host mode, the TUN replacement: a veth pair whose host end carries the tunnel addresses,
 * MTU and the routes to the peers' allowed IPs (what wg-quick does for wg0), and whose
 * other end is the dataplane's LAN port (AF_PACKET or AF_XDP). The host end is NOARP: the
 * kernel sends straight to it without ARP/ND, like a point-to-point device. */
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl/device.h"
#include "ctrl/hostmode.h"
#include "ctrl/log.h"
#include "kernel/netlink.h"

/* AF_XDP: frames reach the dataplane through XDP as they are, so the kernel must finish
 * checksums itself instead of leaving them to a NIC that does not exist. */
static int ethtool_ioctl(const char *ifname, void *data);

static int tx_checksum_off(const char *ifname)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_STXCSUM, .data = 0 };

	return ethtool_ioctl(ifname, &ev);
}

static int ethtool_ioctl(const char *ifname, void *data)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = data;
	r = ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* With the packet port the host keeps its offloads, but only those a virtio-net header
 * carries and the port splits: TCP segmentation and the TCP/UDP checksum. Every other
 * segmentation (UDP, SCTP, tunnels, fraglists) and the SCTP CRC are done by the host's
 * kernel before the frame leaves. */
static bool host_feature_off(const char *name)
{
	static const char *const keep[] = { "tx-tcp-segmentation", "tx-tcp-ecn-segmentation",
					    "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation" };

	if (!strcmp(name, "tx-checksum-sctp") || !strcmp(name, "tx-scatter-gather-fraglist"))
		return true;
	if (strncmp(name, "tx-", 3) || !strstr(name, "segmentation"))
		return false;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strcmp(name, keep[i]))
			return false;
	return true;
}

static int host_features(const char *ifname)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t len;
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_FEATURES } };
	struct ethtool_gstrings *names = NULL;
	struct ethtool_sfeatures *set = NULL;
	uint32_t n, words;
	int r = ethtool_ioctl(ifname, &info);

	if (r != 0 || !info.hdr.sset_mask)
		return r ? r : -EOPNOTSUPP;
	n = info.len;
	words = (n + 31) / 32;
	names = calloc(1, sizeof(*names) + (size_t)n * ETH_GSTRING_LEN);
	set = calloc(1, sizeof(*set) + words * sizeof(set->features[0]));
	if (!names || !set) {
		r = -ENOMEM;
		goto out;
	}
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_FEATURES;
	names->len = n;
	r = ethtool_ioctl(ifname, names);
	if (r != 0)
		goto out;
	set->cmd = ETHTOOL_SFEATURES;
	set->size = words;
	for (uint32_t i = 0; i < n; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, names->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = 0;
		if (host_feature_off(name))
			set->features[i / 32].valid |= 1u << (i % 32);   /* requested: off */
	}
	r = ethtool_ioctl(ifname, set);
	r = r < 0 ? r : 0;      /* > 0: some were fixed or changed others; nothing to do about it */
out:
	free(names);
	free(set);
	return r;
}

/* The dataplane end needs no IPv6 of its own: it would answer the host's neighbour and
 * router messages that the packet port reads too. */
static int ipv6_off(const char *ifname)
{
	char path[96];
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;   /* no IPv6 in this kernel */
	if (write(fd, "1", 1) != 1)
		r = -errno;
	close(fd);
	return r;
}

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
		r = dev->cfg->lan.driver == TL_DRIVER_PACKET ? host_features(dev->host_if) : tx_checksum_off(dev->host_if);
	if (r == 0 && dev->cfg->lan.driver == TL_DRIVER_PACKET)
		r = ipv6_off(dev->dp_if);
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

/* One allowed IP's route through the host end (UAPI changes). */
int tl_host_route(struct tl_device *dev, const struct tl_prefix *p, bool add)
{
	int ifindex = (int)if_nametoindex(dev->host_if), r;

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
