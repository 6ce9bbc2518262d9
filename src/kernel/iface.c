/* Interfaces as the kernel tells them and as the dataplane needs them (iface.h): ethtool,
 * sysfs, getifaddrs, /proc. */
#include "kernel/iface.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* Queue pairs net_af_xdp opens on iface: one per combined channel, and one where the
 * interface has no combined channels (veth, most virtual NICs). */
unsigned tl_iface_channels(const char *iface)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };

	if (ethtool_ioctl(iface, &ch) == 0 && ch.max_combined > 0 && ch.combined_count > 0)
		return ch.combined_count;
	return 1;
}

/* RX queues the kernel has for iface (0: unknown). */
unsigned tl_iface_rx_queues(const char *iface)
{
	char path[128];
	DIR *d;
	struct dirent *e;
	unsigned n = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", iface);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "rx-", 3);
	closedir(d);
	return n;
}

/* Each 32-bit word from the one of the highest CPU down, built with CPU_ISSET (cpu_set_t's
 * own word size and order are glibc's). */
int tl_cpu_set_mask(const cpu_set_t *set, char *mask, size_t len)
{
	int top = CPU_SETSIZE - 1;
	size_t off = 0;

	while (top >= 0 && !CPU_ISSET(top, set))
		top--;
	if (len > 0)
		mask[0] = '\0';
	if (top < 0)
		return -EINVAL;
	if (len == 0)
		return -ENOSPC;
	for (int g = top / 32; g >= 0; g--) {
		uint32_t w = 0;
		int n;

		for (int b = 0; b < 32; b++)
			w |= (uint32_t)(CPU_ISSET(g * 32 + b, set) != 0) << b;
		n = snprintf(mask + off, len - off, g == top / 32 ? "%" PRIx32 : ",%08" PRIx32, w);
		if (n < 0 || (size_t)n >= len - off) {
			mask[0] = '\0';
			return -ENOSPC;
		}
		off += (size_t)n;
	}
	return 0;
}

int tl_iface_rps_set(const char *iface, const cpu_set_t *cpus)
{
	char mask[TL_CPU_MASK_LEN], path[320];   /* an interface's name is < IFNAMSIZ (16), d_name's 256 */
	struct dirent *e;
	DIR *d;
	int r = tl_cpu_set_mask(cpus, mask, sizeof(mask)), n = 0;

	if (r != 0)
		return r;
	snprintf(path, sizeof(path), "/sys/class/net/%.15s/queues", iface);
	d = opendir(path);
	if (!d)
		return -errno;
	while (r == 0 && (e = readdir(d))) {
		int fd;

		if (strncmp(e->d_name, "rx-", 3))
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%.15s/queues/%s/rps_cpus", iface, e->d_name);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, mask, strlen(mask)) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
		n++;
	}
	closedir(d);
	return r ? r : n ? 0 : -ENOENT;
}

int tl_iface_mac(const char *iface, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	r = ioctl(fd, SIOCGIFHWADDR, &ifr) == 0 ? 0 : -errno;
	if (!r)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return r;
}

/* Calls fn for every address of iface. */
void tl_iface_addrs(const char *iface, void (*fn)(void *arg, int family, const uint8_t *addr), void *arg)
{
	struct ifaddrs *ifa, *i;

	if (!iface[0] || getifaddrs(&ifa) != 0)
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, iface))
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			fn(arg, AF_INET, (const uint8_t *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			fn(arg, AF_INET6, (const uint8_t *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr);
		}
	}
	freeifaddrs(ifa);
}

/* Frames reach the dataplane through XDP as they are: the kernel must finish checksums
 * itself instead of leaving them to a NIC that does not exist. */
int tl_iface_tx_csum_off(const char *ifname)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_STXCSUM, .data = 0 };

	return ethtool_ioctl(ifname, &ev);
}

/* With the packet port the host keeps its offloads, but only those a virtio-net header
 * carries and the port splits: TCP segmentation and the TCP/UDP checksum. Every other
 * segmentation (UDP, SCTP, tunnels, fraglist GSO: "tx-gso-list") and the SCTP CRC are done
 * by the host's kernel before the frame leaves. Scatter-gather over a fragment list
 * ("tx-scatter-gather-fraglist") stays on: it is how a packet is stored, not a segmentation
 * (the socket's copy reads it whole), and many GRO super-packets have one (a stream of
 * MTU-sized frames merged on a LAN interface); without it the kernel splits each of them
 * again on the way to the port. */
static bool host_feature_off(const char *name)
{
	static const char *const keep[] = { "tx-tcp-segmentation", "tx-tcp-ecn-segmentation",
					    "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation" };

	if (!strcmp(name, "tx-checksum-sctp") || !strcmp(name, "tx-gso-list"))
		return true;
	if (strncmp(name, "tx-", 3) || !strstr(name, "segmentation"))
		return false;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strcmp(name, keep[i]))
			return false;
	return true;
}

int tl_iface_virtio_offloads(const char *ifname)
{
	/* The header and room for the one count it returns (a struct with a flexible array may
	 * be a union's member in C11, not a struct's). */
	union {
		struct ethtool_sset_info hdr;
		uint8_t room[sizeof(struct ethtool_sset_info) + sizeof(uint32_t)];
	} info = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_FEATURES } };
	struct ethtool_gstrings *names = NULL;
	struct ethtool_sfeatures *set = NULL;
	uint32_t n, words;
	int r = ethtool_ioctl(ifname, &info);

	if (r != 0 || !info.hdr.sset_mask)
		return r ? r : -EOPNOTSUPP;
	n = info.hdr.data[0];
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

int tl_iface_ipv6_off(const char *ifname)
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

/* Marks in fds[] every AF_XDP socket this process has open. net_af_xdp does not expose
 * its sockets (and getsockname() is not implemented for them); the workers need them to
 * block in poll() when idle. */
void tl_xsk_fds_scan(bool fds[TL_XSK_FD_MAX])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	memset(fds, 0, TL_XSK_FD_MAX * sizeof(fds[0]));
	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), domain = 0;
		socklen_t len = sizeof(domain);

		if (fd > 0 && fd < TL_XSK_FD_MAX && fd != dirfd(d) &&
		    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_XDP)
			fds[fd] = true;
	}
	closedir(d);
}

/* The one AF_XDP socket in after[] that is not in before[], else -1. */
int tl_xsk_fd_new(const bool before[TL_XSK_FD_MAX], const bool after[TL_XSK_FD_MAX])
{
	int found = -1;

	for (int fd = 0; fd < TL_XSK_FD_MAX; fd++)
		if (after[fd] && !before[fd]) {
			if (found >= 0)
				return -1;
			found = fd;
		}
	return found;
}

int tl_xsk_tx_budget(int fd, unsigned budget)
{
	return setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof(budget)) < 0 ? -errno : 0;
}
