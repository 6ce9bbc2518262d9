/* The two ports of a device, WAN and LAN, as rte_ethdev ports: net_af_xdp on a kernel
 * interface with our XDP program (the default), or any DPDK PMD from its devargs; or, for
 * the WAN only, the udp port kind: kernel UDP sockets on the listen port; or, for the LAN
 * only, the packet port kind: an AF_PACKET socket with GSO on a veth (host mode's; a
 * gateway's, fed from the LAN interface by tc programs: gwlan.c).
 * Those two are opened, moved and closed through the port interface (dataplane/port.h). */
#include <errno.h>
#include <stdlib.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>

#include "ctrl/device.h"
#include "ctrl/gwlan.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "ctrl/udpsock.h"
#include "kernel/xdp_features.h"
#include "dataplane/bufsize.h"
#include "dataplane/crypt.h"
#include "dataplane/dpdk_compat.h"
#include "dataplane/port.h"
#include "kernel/iface.h"
#include "kernel/netlink.h"

#define TL_RX_DESC 2048
#define TL_TX_DESC 2048
#define TL_POOL_CACHE 256
/* Socket buffers of a socket port: 4 MiB each way, as WireGuard implementations ask for. */
#define TL_SOCK_PORT_BUF (4 << 20)
/* An AF_XDP socket's TX descriptors one send() passes on in copy mode (kernel/iface.h). */
#define TL_XSK_TX_BUDGET 256u
_Static_assert(TL_XSK_TX_BUDGET >= TL_XSK_TX_BUDGET_MIN && TL_XSK_TX_BUDGET <= TL_RX_DESC && TL_XSK_TX_BUDGET <= TL_TX_DESC,
	       "the kernel takes a TX budget of 32 .. the TX ring's size (net_af_xdp sizes its rings by the descriptors asked)");

/* One RX pool per (port, queue). Its buffers end up in the egress queues of that queue's
 * worker (either port: ICMP errors return on the LAN), in the port's rings, in TX rings
 * awaiting completion and in per-lcore caches. Sized for all of it, the pool never runs
 * dry: a net_af_xdp port whose pool ran dry stops refilling its fill ring, and the kernel
 * would drop at the socket; here only the AQM decides. */
static unsigned rx_pool_size(const struct tl_device *dev)
{
	return dev->dp.queue_cap[TL_PORT_WAN] + dev->dp.queue_cap[TL_PORT_LAN] + 2 * TL_RX_DESC +
	       2 * TL_TX_DESC + 2 * TL_POOL_CACHE * (dev->dp.n_workers + 1) + TL_BURST * 4 +
	       TL_DIR_MAX * tl_crypt_inflight_max(&dev->dp) * TL_JOB_MAX;   /* the queue owner's crypto jobs */
}

_Static_assert(TL_CFG_FRAME_OVERHEAD == TL_FRAME_OVERHEAD, "config and dataplane agree on a frame's overhead");

/* The port kind: auto resolved (host mode's WAN: af_xdp only where it brings zero-copy and
 * carries the MTU's frames). */
static enum tl_port_driver driver_of(const struct tl_device *dev, const struct tl_cfg_port *cfg)
{
	if (cfg->driver != TL_DRIVER_AUTO)
		return cfg->driver;
	if (dev->cfg->mtu > tl_cfg_af_xdp_mtu_max())
		return TL_DRIVER_UDP;
	return tl_xdp_zero_copy(cfg->iface) ? TL_DRIVER_AF_XDP : TL_DRIVER_UDP;
}

/* The data room of a port's RX buffers: a frame of the tunnel MTU (behind the kernel's XDP
 * headroom on an AF_XDP port) in one buffer. */
static uint16_t port_data_room(const struct tl_device *dev, bool af_xdp)
{
	return tl_buf_data_room(dev->dp.mtu, af_xdp ? TL_XDP_HEADROOM : 0);
}

/* Both ports get the same queue pairs, at most the workers, ports.*.queues and an AF_XDP
 * port's channels, which the kernel tells before the EAL starts (a PMD's are known only once
 * probed). The EAL memory is sized for that bound. */
unsigned tl_ports_memory_mb(const struct tl_device *dev)
{
	uint64_t per_mbuf = port_data_room(dev, true) + sizeof(struct rte_mbuf) + 64;   /* + pool header */
	/* the control plane's pools grow with the MTU too (TL_EAL_BASE_MB counts them at the default) */
	uint64_t ctrl = (uint64_t)tl_dp_pool_bufs() * (port_data_room(dev, false) - RTE_MBUF_DEFAULT_BUF_SIZE);
	unsigned q = dev->dp.n_workers;

	for (int r = 0; r < TL_PORT_MAX; r++) {
		const struct tl_cfg_port *cfg = r == TL_PORT_WAN ? &dev->cfg->wan : &dev->cfg->lan;
		bool host_lan = r == TL_PORT_LAN && dev->dp.host_mode;
		enum tl_port_driver d = driver_of(dev, cfg);

		if (cfg->present && cfg->queues)
			q = RTE_MIN(q, (unsigned)cfg->queues);
		if (d == TL_DRIVER_PACKET)
			q = 1;
		else if (host_lan || d == TL_DRIVER_AF_XDP)
			q = RTE_MIN(q, tl_iface_channels(host_lan ? dev->dp_if : cfg->iface));
	}
	return (unsigned)(((uint64_t)TL_PORT_MAX * q * rx_pool_size(dev) * per_mbuf + ctrl + (1u << 20) - 1) >> 20);
}

const char *const tl_port_names[TL_PORT_MAX] = { "wan", "lan" };


static const struct tl_cfg_port *port_cfg(struct tl_device *dev, int role)
{
	return role == TL_PORT_WAN ? &dev->cfg->wan : &dev->cfg->lan;
}

static bool af_xdp_shared_umem(struct tl_device *dev);

static int af_xdp_probe(struct tl_device *dev, int role, const char *iface, uint16_t queues,
			uint16_t *port_id, char *err, size_t errlen)
{
	struct tl_port_ctl *pc = &dev->ports[role];
	char obj[4096], args[4400];
	int r;

	pc->ifindex = (int)if_nametoindex(iface);
	if (!pc->ifindex) {
		snprintf(err, errlen, "ports.%s.iface: no interface '%s'", tl_port_names[role], iface);
		return -1;
	}
	r = tl_xdp_object_path(obj, sizeof(obj), role == TL_PORT_WAN ? TL_XDP_WAN_OBJECT : TL_XDP_LAN_OBJECT);
	if (r != 0) {
		snprintf(err, errlen, "XDP object %s not found (build it, or set TUNLESS_BPF_DIR)", obj);
		return -1;
	}
	r = tl_xdp_clear_leftover(pc->ifindex, err, errlen);
	if (r < 0)
		return -1;
	if (r == 1)
		tl_log_info("%s: removed a tunless XDP program left over on %s", tl_port_names[role], iface);
	snprintf(pc->vdev_name, sizeof(pc->vdev_name), "net_af_xdp_%s_%s", dev->cfg->name, tl_port_names[role]);
	snprintf(args, sizeof(args), "iface=%s,start_queue=0,queue_count=%u,xdp_prog=%s,busy_budget=0%s", iface,
		 queues, obj, af_xdp_shared_umem(dev) ? ",shared_umem=1" : "");
	if (rte_vdev_init(pc->vdev_name, args) != 0) {
		snprintf(err, errlen, "ports.%s: cannot open AF_XDP on %s (see the DPDK log above)", tl_port_names[role], iface);
		return -1;
	}
	if (rte_eth_dev_get_port_by_name(pc->vdev_name, port_id) != 0) {
		snprintf(err, errlen, "ports.%s: AF_XDP port %s vanished", tl_port_names[role], pc->vdev_name);
		return -1;
	}
	pc->af_xdp = true;
	snprintf(pc->iface, sizeof(pc->iface), "%s", iface);
	return 0;
}

static unsigned pmd_offer(uint16_t port_id)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port_id, &info) != 0)
		return 1;
	return RTE_MAX(1u, RTE_MIN((unsigned)info.max_rx_queues, (unsigned)info.max_tx_queues));
}

static int pmd_probe(struct tl_device *dev, int role, const char *devargs, uint16_t *port_id, char *err,
		     size_t errlen)
{
	struct tl_port_ctl *pc = &dev->ports[role];
	char name[sizeof(pc->vdev_name)];
	size_t len = strcspn(devargs, ",");

	if (len >= sizeof(name)) {
		snprintf(err, errlen, "ports.%s.devargs: device name too long", tl_port_names[role]);
		return -1;
	}
	memcpy(name, devargs, len);
	name[len] = 0;
	if (rte_dev_probe(devargs) != 0 || rte_eth_dev_get_port_by_name(name, port_id) != 0) {
		snprintf(err, errlen, "ports.%s.devargs: cannot probe '%s'", tl_port_names[role], devargs);
		return -1;
	}
	memcpy(pc->vdev_name, name, len + 1);
	return 0;
}

#ifndef AF_XDP
#define AF_XDP 44
#endif
/* A TX budget of TL_XSK_TX_BUDGET descriptors per send() on queue q's AF_XDP socket; where
 * the kernel refuses, the kernel's own (32) stays, said once per socket. */
static void xsk_tx_budget(const struct tl_port_ctl *pc, uint16_t q)
{
	int r = tl_xsk_tx_budget(pc->xsk_fd[q], TL_XSK_TX_BUDGET);

	if (r == -ENOPROTOOPT)
		tl_log_info("%s queue %u: no XDP_MAX_TX_SKB_BUDGET (a kernel before 6.17): %u descriptors per send",
			    pc->iface, q, TL_XSK_TX_BUDGET_MIN);
	else if (r < 0)
		tl_log_err("%s queue %u: XDP_MAX_TX_SKB_BUDGET %u refused (%s): %u descriptors per send", pc->iface,
			   q, TL_XSK_TX_BUDGET, strerror(-r), TL_XSK_TX_BUDGET_MIN);
}

/* Sets up RX queue q; for an AF_XDP port also finds the socket it opened. */
static int rx_queue_setup(struct tl_port_ctl *pc, uint16_t port_id, uint16_t q, int socket, struct rte_mempool *mp)
{
	static bool before[TL_XSK_FD_MAX], after[TL_XSK_FD_MAX];
	bool find = pc->af_xdp && q < TL_MAX_WORKERS;
	int r;

	if (q < TL_MAX_WORKERS)
		pc->xsk_fd[q] = -1;
	if (find)
		tl_xsk_fds_scan(before);
	r = rte_eth_rx_queue_setup(port_id, q, TL_RX_DESC, (unsigned)socket, NULL, mp);
	if (r == 0 && find) {
		tl_xsk_fds_scan(after);
		pc->xsk_fd[q] = tl_xsk_fd_new(before, after);
		if (pc->xsk_fd[q] < 0)
			tl_log_info("%s queue %u: AF_XDP socket not found, the worker sleeps when idle", pc->iface, q);
		else
			xsk_tx_budget(pc, q);
	}
	return r;
}

/* An AF_XDP port's RX pool, in one virtually contiguous chunk. net_af_xdp (DPDK 22.11)
 * registers a pool as its socket's UMEM from the first memory chunk's address for all of
 * the pool's objects; an object in another chunk lies outside that UMEM. The kernel takes
 * such a buffer from the fill ring and drops it without a count, and once the fill ring has
 * drained that way the socket receives nothing any more: every frame is lost as imissed,
 * for good. A default pool on 4 KiB pages (no hugepages) comes in 1 MiB chunks, so it
 * happened under load, when the AQM held many buffers and the pool handed out ones from the
 * later chunks. Objects need no IOVA contiguity here (the kernel copies), so the pool can be
 * one chunk whatever the page size; NULL (reason in err) when memory for that is missing.
 * Each object is one chunk of the UMEM, which the kernel takes of at most a page: the data
 * room holds a frame of the MTU behind the kernel's XDP headroom, and the configuration
 * refuses an MTU whose object would be larger (tl_cfg_af_xdp_mtu_max; checked here). No
 * spreading over memory channels, which pads an object to an odd number of cache lines. */
static struct rte_mempool *af_xdp_pool_create(const char *name, unsigned n, uint16_t room, int socket, char *err,
					      size_t errlen)
{
	struct rte_pktmbuf_pool_private priv = { .mbuf_data_room_size = room };
	struct rte_mempool *mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + room, TL_POOL_CACHE,
							  sizeof(priv), socket,
							  RTE_MEMPOOL_F_NO_IOVA_CONTIG | RTE_MEMPOOL_F_NO_SPREAD);
	unsigned chunk;

	if (!mp) {
		snprintf(err, errlen, "%s: %s", name, rte_strerror(rte_errno));
		return NULL;
	}
	chunk = mp->header_size + mp->elt_size + mp->trailer_size;
	if (chunk > (unsigned)getpagesize()) {
		snprintf(err, errlen, "%s: buffers of %u bytes for a data room of %u: an AF_XDP buffer is at most a "
			 "page (%d bytes)", name, chunk, room, getpagesize());
		rte_mempool_free(mp);
		return NULL;
	}
	if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL) != 0) {
		snprintf(err, errlen, "%s: no mempool ops", name);
		rte_mempool_free(mp);
		return NULL;
	}
	rte_pktmbuf_pool_init(mp, &priv);
	if (rte_mempool_populate_default(mp) != (int)n || mp->nb_mem_chunks != 1) {
		snprintf(err, errlen, "%s: no contiguous %u MiB for the AF_XDP buffers (%u chunk(s))", name,
			 (unsigned)(((uint64_t)n * (mp->header_size + mp->elt_size + mp->trailer_size)) >> 20),
			 mp->nb_mem_chunks);
		rte_mempool_free(mp);
		return NULL;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
}

static int queues_setup(struct tl_device *dev, int role, uint16_t port_id, uint16_t queues, char *err, size_t errlen)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info = { 0 };
	int socket = rte_eth_dev_socket_id(port_id);

	if (socket < 0)
		socket = (int)rte_socket_id();
	/* A PMD port's MTU: the largest packet of the tunnel MTU's frames, if above Ethernet's
	 * default (an AF_XDP port's is the kernel interface's). */
	if (!dev->ports[role].af_xdp && tl_frame_max(dev->dp.mtu) - RTE_ETHER_HDR_LEN > RTE_ETHER_MTU) {
		uint32_t want = tl_frame_max(dev->dp.mtu) - RTE_ETHER_HDR_LEN;

		if (rte_eth_dev_info_get(port_id, &info) != 0 || info.max_mtu < want) {
			snprintf(err, errlen, "ports.%s: mtu %u needs packets of %u bytes on the port, the device "
				 "carries at most %u", tl_port_names[role], dev->dp.mtu, want, (unsigned)info.max_mtu);
			return -1;
		}
		conf.rxmode.mtu = want;
	}
	/* Several queues on a NIC: RSS spreads flows over them (outer 5-tuples on the WAN,
	 * inner ones on the LAN). An AF_XDP port's queues are the interface's channels,
	 * whose spreading the kernel driver already set. */
	if (queues > 1 && !dev->ports[role].af_xdp && rte_eth_dev_info_get(port_id, &info) == 0) {
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP);
		if (conf.rx_adv_conf.rss_conf.rss_hf)
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	}
	if (rte_eth_dev_configure(port_id, queues, queues, &conf) != 0) {
		snprintf(err, errlen, "ports.%s: cannot configure %u queues", tl_port_names[role], queues);
		return -1;
	}
	for (uint16_t q = 0; q < queues; q++) {
		char name[RTE_MEMPOOL_NAMESIZE], why[128] = "";
		struct rte_mempool *mp;

		snprintf(name, sizeof(name), "rx_%s_%u", tl_port_names[role], q);
		if (dev->ports[role].af_xdp) {
			/* A shared UMEM: queue q of both ports on one pool, made by the first for both. */
			bool shared = af_xdp_shared_umem(dev);

			if (shared)
				snprintf(name, sizeof(name), "rx_xdp_%u", q);
			mp = shared ? rte_mempool_lookup(name) : NULL;
			if (!mp)
				mp = af_xdp_pool_create(name, (shared ? 2 : 1) * rx_pool_size(dev),
							port_data_room(dev, true), socket, why, sizeof(why));
			if (!mp) {
				snprintf(err, errlen, "ports.%s: %s", tl_port_names[role], why);
				return -1;
			}
		} else {
			mp = rte_pktmbuf_pool_create(name, rx_pool_size(dev), TL_POOL_CACHE, 0,
						     port_data_room(dev, false), socket);
		}
		if (!mp || rx_queue_setup(&dev->ports[role], port_id, q, socket, mp) != 0 ||
		    rte_eth_tx_queue_setup(port_id, q, TL_TX_DESC, (unsigned)socket, NULL) != 0) {
			snprintf(err, errlen, "ports.%s: cannot set up queue %u (%s)", tl_port_names[role], q,
				 mp ? "queue setup failed" : rte_strerror(rte_errno));
			return -1;
		}
	}
	if (rte_eth_dev_start(port_id) != 0) {
		snprintf(err, errlen, "ports.%s: cannot start the port", tl_port_names[role]);
		return -1;
	}
	dev->ports[role].started = true;
	return 0;
}

/* The LAN port's source of ICMP errors: the interface's first address of each family
 * (link-local IPv6 cannot carry them). The WAN's addresses are followed as they change
 * (wanaddr.c). */
void tl_port_source_addr(void *arg, int family, const uint8_t *addr)
{
	struct tl_port_info *pi = arg;

	if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)addr))
		return;
	if (family == AF_INET && !pi->has_ip4) {
		memcpy(pi->ip4, addr, 4);
		pi->has_ip4 = true;
	} else if (family == AF_INET6 && !pi->has_ip6) {
		memcpy(pi->ip6, addr, 16);
		pi->has_ip6 = true;
	}
}

const char *tl_port_iface(const struct tl_device *dev, int role)
{
	if (dev->ports[role].iface[0])
		return dev->ports[role].iface;
	if (role == TL_PORT_LAN && (dev->dp.host_mode || dev->ports[role].driver == TL_DRIVER_PACKET))
		return dev->dp_if;
	return role == TL_PORT_WAN ? dev->cfg->wan.iface : dev->cfg->lan.iface;
}

static bool port_is_packet(struct tl_device *dev, int role)
{
	return role == TL_PORT_LAN && dev->ports[role].driver == TL_DRIVER_PACKET;
}

/* A gateway's LAN port of the packet kind: on the veth pair of gwlan.c. */
static bool gw_packet_lan(struct tl_device *dev, int role)
{
	return port_is_packet(dev, role) && !dev->dp.host_mode;
}

static bool port_is_af_xdp(struct tl_device *dev, int role)
{
	return !port_is_packet(dev, role) &&
	       ((role == TL_PORT_LAN && dev->dp.host_mode) || dev->ports[role].driver == TL_DRIVER_AF_XDP);
}

/* Both ports AF_XDP and a net_af_xdp that shares a UMEM between them (dpdk_compat.h). */
static bool af_xdp_shared_umem(struct tl_device *dev)
{
	return TL_AF_XDP_SHARED_UMEM && port_is_af_xdp(dev, TL_PORT_WAN) && port_is_af_xdp(dev, TL_PORT_LAN);
}

static bool port_is_udp(struct tl_device *dev, int role)
{
	return role == TL_PORT_WAN && dev->ports[role].driver == TL_DRIVER_UDP;
}

/* The socket port kind (port.h) that the port's driver names, or NULL: an ethdev. */
static const char *sock_kind(struct tl_device *dev, int role)
{
	return port_is_udp(dev, role) ? "udp" : port_is_packet(dev, role) ? "packet" : NULL;
}

/* A port of a socket kind (udp, packet) on iface: its MAC (the interface's), one RX pool per
 * queue and the counters of the worker that reads each queue (what the port drops on
 * receiving counts there), then the kind opens it (port.h). */
static int sock_port_open(struct tl_device *dev, int role, const char *kind, const char *iface, uint16_t queues,
			  char *err, size_t errlen)
{
	struct tl_port_info *pi = &dev->dp.port[role];
	struct tl_port_ctl *pc = &dev->ports[role];
	struct rte_mempool *pools[TL_MAX_WORKERS];
	struct tl_counters *cnts[TL_MAX_WORKERS];
	struct tl_port_cfg c = { .iface = iface, .queues = queues, .listen_port = tl_dp_listen_port(&dev->dp),
				 .pools = pools, .counters = cnts, .rcvbuf = TL_SOCK_PORT_BUF,
				 .sndbuf = TL_SOCK_PORT_BUF };

	pc->ifindex = (int)if_nametoindex(iface);
	if (!pc->ifindex) {
		snprintf(err, errlen, "ports.%s.iface: no interface '%s'", tl_port_names[role], iface);
		return -1;
	}
	snprintf(pc->iface, sizeof(pc->iface), "%s", iface);
	tl_iface_mac(iface, pi->mac);
	for (uint16_t q = 0; q < queues; q++) {
		char name[RTE_MEMPOOL_NAMESIZE];

		snprintf(name, sizeof(name), "rx_%s_%u", tl_port_names[role], q);
		cnts[q] = &dev->workers[q].cnt;
		pools[q] = rte_pktmbuf_pool_create(name, rx_pool_size(dev), TL_POOL_CACHE, 0, port_data_room(dev, false),
						   (int)rte_socket_id());
		if (!pools[q]) {
			snprintf(err, errlen, "ports.%s: cannot create the buffers of queue %u (%s)", tl_port_names[role], q,
				 rte_strerror(rte_errno));
			return -1;
		}
	}
	if (tl_port_open(pi, kind, &c, err, errlen) != 0)
		return -1;
	pc->queues = queues;
	pc->started = true;
	return 0;
}

int tl_port_stats(const struct tl_device *dev, int role, struct rte_eth_stats *st)
{
	const struct tl_port_info *pi = &dev->dp.port[role];

	if (!tl_port_sockets(pi) && !dev->ports[role].started) {
		memset(st, 0, sizeof(*st));
		return -1;
	}
	return tl_port_stats_read(pi, st);
}

void tl_port_gso(const struct tl_device *dev, int role, uint64_t *rx, uint64_t *tx)
{
	tl_port_gso_counts(&dev->dp.port[role], rx, tx);
}

int tl_port_wake_fd(const struct tl_device *dev, int role, uint16_t queue, int which)
{
	int fd = tl_port_fd(&dev->dp.port[role], queue, which);

	if (fd != -2)
		return fd;
	/* an ethdev port: net_af_xdp's socket, which the control plane opened */
	return which == 0 && dev->ports[role].af_xdp && queue < TL_MAX_WORKERS ? dev->ports[role].xsk_fd[queue] : -1;
}

/* A PMD port is probed here; an AF_XDP port is opened with its queue count later. */
static int port_offer(struct tl_device *dev, int role, unsigned *offer, char *err, size_t errlen)
{
	uint16_t port_id;

	if (port_is_af_xdp(dev, role)) {
		*offer = tl_iface_channels(tl_port_iface(dev, role));
		return 0;
	}
	if (sock_kind(dev, role)) {
		*offer = tl_port_kind_queues(sock_kind(dev, role));
		return 0;
	}
	if (pmd_probe(dev, role, port_cfg(dev, role)->devargs, &port_id, err, errlen) != 0)
		return -1;
	dev->dp.port[role].port_id = port_id;
	*offer = pmd_offer(port_id);
	return 0;
}

static int port_open(struct tl_device *dev, int role, uint16_t queues, char *err, size_t errlen)
{
	struct tl_port_info *pi = &dev->dp.port[role];
	uint16_t port_id = pi->port_id;
	struct rte_ether_addr mac;
	const char *iface = tl_port_iface(dev, role);
	bool host_lan = role == TL_PORT_LAN && dev->dp.host_mode;

	/* udp: a socket per family and queue on the listen port; packet: one socket on host
	 * mode's veth, whose host end's MAC is the next hop already (tl_host_setup) */
	if (gw_packet_lan(dev, role))
		return sock_port_open(dev, role, "packet", dev->dp_if, queues, err, errlen) != 0 ||
		       tl_gwlan_start(dev, err, errlen) != 0 ? -1 : 0;
	if (sock_kind(dev, role))
		return sock_port_open(dev, role, sock_kind(dev, role), iface, queues, err, errlen);
	if (port_is_af_xdp(dev, role)) {
		unsigned rxq = tl_iface_rx_queues(iface);

		if (af_xdp_probe(dev, role, iface, queues, &port_id, err, errlen) != 0)
			return -1;
		if (rxq > queues)
			tl_log_info("%s: %s has %u RX queues and tunless reads %u: frames on the others go to the "
				    "kernel's stack, not to tunless (ethtool -L %s combined %u, or one queue on a veth)",
				    tl_port_names[role], iface, rxq, queues, iface, queues);
	}
	if (queues_setup(dev, role, port_id, queues, err, errlen) != 0)
		return -1;
	pi->port_id = port_id;
	rte_eth_macaddr_get(port_id, &mac);
	memcpy(pi->mac, mac.addr_bytes, 6);
	dev->ports[role].queues = queues;
	if (role == TL_PORT_LAN && !host_lan)
		tl_iface_addrs(iface, tl_port_source_addr, pi);
	return 0;
}

/* The LAN port's own addresses stay with the kernel whatever the peers route. */
static void local_route(void *arg, int family, const uint8_t *addr)
{
	tl_xdp_route_add(arg, family, addr, family == AF_INET ? 32 : 128, TL_XDP_ROUTE_LOCAL);
}

static int xdp_maps_setup(struct tl_device *dev, int role, char *err, size_t errlen)
{
	struct tl_port_ctl *pc = &dev->ports[role];
	uint32_t flags = role == TL_PORT_LAN && dev->dp.host_mode ? TL_XDP_CFG_REDIRECT_ALL : 0;

	if (!pc->af_xdp)
		return 0;
	if (tl_xdp_maps_open(pc->ifindex, &pc->maps, err, errlen) != 0)
		return -1;
	if (role == TL_PORT_LAN && !dev->dp.host_mode)
		tl_iface_addrs(pc->iface, local_route, &pc->maps);
	return tl_xdp_set_cfg(&pc->maps, role == TL_PORT_WAN ? tl_dp_listen_port(&dev->dp) : 0, flags);
}

int tl_listen_port_prepare(struct tl_device *dev, uint16_t port, struct tl_port_move *m)
{
	struct tl_port_ctl *wan = &dev->ports[TL_PORT_WAN];
	struct tl_port_info *pi = &dev->dp.port[TL_PORT_WAN];
	int r = 0;

	m->old = tl_dp_listen_port(&dev->dp);
	m->port = port;
	m->sock_fds[0] = m->sock_fds[1] = -1;
	m->own_open = false;
	if (port == m->old)
		return 0;
	if (port == 0) {
		tl_log_info("listen port: 0 (a random port) is not supported, still %u", m->old);
		return EINVAL;
	}
	if (tl_port_holds_listen(pi)) {
		char why[256];

		r = tl_port_move_prepare(pi, port, m->own_fds, why, sizeof(why));
		m->own_open = r == 0;
	} else if (wan->af_xdp) {
		r = tl_udpsock_bind(dev, port, m->sock_fds);
		if (r == 0 && wan->maps.cfg_fd < 0)
			r = -ENOENT;     /* no steering to change: nothing would reach the new port */
		if (r != 0)
			for (int i = 0; i < 2; i++)
				if (m->sock_fds[i] >= 0)
					close(m->sock_fds[i]);
	}
	if (r != 0) {
		tl_log_err("listen port: cannot move to UDP %u on %s: %s; still %u", port, wan->iface, strerror(-r),
			   m->old);
		m->sock_fds[0] = m->sock_fds[1] = -1;
		return -r;
	}
	return 0;
}

void tl_listen_port_abort(struct tl_device *dev, struct tl_port_move *m)
{
	if (m->own_open)
		tl_port_move_abort(&dev->dp.port[TL_PORT_WAN], m->own_fds);
	for (int i = 0; i < 2; i++)
		if (m->sock_fds[i] >= 0)
			close(m->sock_fds[i]);
	m->own_open = false;
	m->sock_fds[0] = m->sock_fds[1] = -1;
}

void tl_listen_port_commit(struct tl_device *dev, struct tl_port_move *m)
{
	struct tl_port_ctl *wan = &dev->ports[TL_PORT_WAN];
	int r;

	if (m->port == m->old)
		return;
	if (m->own_open)
		tl_port_move_commit(&dev->dp.port[TL_PORT_WAN], m->port, m->own_fds);
	/* An array map's one element, its fd checked at prepare: the update does not fail. */
	if (wan->af_xdp && (r = tl_xdp_set_cfg(&wan->maps, m->port, 0)) != 0)
		tl_log_err("listen port: the WAN steering refused UDP %u: %s", m->port, strerror(-r));
	/* From here frames go out from the new port and the workers accept only it; the
	 * steering above already sends it to them. */
	atomic_store_explicit(&dev->dp.listen_port, m->port, memory_order_relaxed);
	if (wan->af_xdp)
		tl_udpsock_replace(dev, m->sock_fds);
	m->own_open = false;
	m->sock_fds[0] = m->sock_fds[1] = -1;
	tl_log_info("listen port: %u, was %u", m->port, m->old);
}

int tl_ports_setup(struct tl_device *dev, char *err, size_t errlen)
{
	unsigned offer[TL_PORT_MAX], q = dev->dp.n_workers;

	for (int r = 0; r < TL_PORT_MAX; r++) {
		const struct tl_cfg_port *cfg = port_cfg(dev, r);

		dev->ports[r].maps = (struct tl_xdp_maps){ -1, -1, -1, -1 };
		dev->ports[r].driver = driver_of(dev, cfg);
		if (cfg->driver == TL_DRIVER_AUTO && dev->cfg->mtu > tl_cfg_af_xdp_mtu_max())
			tl_log_info("%s: mtu %u is above %u, the largest af_xdp carries: the udp port kind",
				    tl_port_names[r], dev->cfg->mtu, tl_cfg_af_xdp_mtu_max());
		else if (cfg->driver == TL_DRIVER_AUTO)
			tl_log_info("%s: %s offers %s zero-copy AF_XDP: the %s port kind", tl_port_names[r], cfg->iface,
				    dev->ports[r].driver == TL_DRIVER_AF_XDP ? "" : "no",
				    dev->ports[r].driver == TL_DRIVER_AF_XDP ? "af_xdp" : "udp");
		for (unsigned i = 0; i < TL_MAX_WORKERS; i++)
			dev->ports[r].xsk_fd[i] = -1;
		if (gw_packet_lan(dev, r) && tl_gwlan_setup(dev, err, errlen) != 0)
			return -1;
		if (port_offer(dev, r, &offer[r], err, errlen) != 0)
			return -1;
		q = RTE_MIN(q, offer[r]);
		if (cfg->present && cfg->queues)
			q = RTE_MIN(q, (unsigned)cfg->queues);
	}
	/* Both ports have the same queue pairs: worker i < q owns queue i of each. */
	dev->dp.n_queues = q;
	for (int r = 0; r < TL_PORT_MAX; r++)
		if (port_open(dev, r, (uint16_t)q, err, errlen) != 0)
			return -1;
	tl_log_info("%u queue pair(s) per port (wan offers %u, lan %u): %u queue owner(s), %u worker(s) seal and open",
		    q, offer[TL_PORT_WAN], offer[TL_PORT_LAN], q, dev->dp.n_workers);
	return xdp_maps_setup(dev, TL_PORT_WAN, err, errlen) != 0 || xdp_maps_setup(dev, TL_PORT_LAN, err, errlen) != 0
		       ? -1 : 0;
}

void tl_ports_teardown(struct tl_device *dev)
{
	if (gw_packet_lan(dev, TL_PORT_LAN))
		tl_gwlan_teardown(dev);   /* the steering stops before the port's socket closes */
	for (int r = 0; r < TL_PORT_MAX; r++) {
		struct tl_port_ctl *pc = &dev->ports[r];
		uint16_t port_id;

		tl_xdp_maps_close(&pc->maps);
		tl_port_close(&dev->dp.port[r]);
		if (!pc->vdev_name[0] || rte_eth_dev_get_port_by_name(pc->vdev_name, &port_id) != 0)
			continue;
		if (pc->started)
			rte_eth_dev_stop(port_id);
		rte_eth_dev_close(port_id);
		if (pc->af_xdp) {
			rte_vdev_uninit(pc->vdev_name);
			tl_xdp_detach(pc->ifindex);   /* safety net: the PMD detaches it on close */
		}
		pc->vdev_name[0] = 0;
	}
}

void tl_port_steer(struct tl_device *dev, const struct tl_prefix *p, uint32_t peer_id, bool add)
{
	struct tl_port_ctl *lan = &dev->ports[TL_PORT_LAN];
	/* the af_xdp port's XDP program's tries, or the tc programs' of a gateway's packet port */
	struct tl_xdp_maps *maps = lan->af_xdp ? &lan->maps : tl_gwlan_maps(dev);

	static bool told;
	int r;

	if (!maps || maps->routes4_fd < 0)
		return;
	if (!add) {
		tl_xdp_route_del(maps, p->ip.family, p->ip.addr, p->len);
		return;
	}
	r = tl_xdp_route_add(maps, p->ip.family, p->ip.addr, p->len, peer_id);
	if (r != 0 && !told) {      /* once: a full map would say so per prefix */
		told = true;
		tl_log_err("lan: %s steering of an allowed IP: %s (its packets stay with the kernel)",
			   lan->af_xdp ? "XDP" : "tc", strerror(-r));
	}
}
