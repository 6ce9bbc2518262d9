/* The udp port kind (udpport.h) behind the port interface (port.h): its table. */
#include <string.h>

#include <rte_ether.h>

#include "dataplane/port.h"
#include "dataplane/udpport.h"

/* The source MAC of the frames a udp port reads and the next hop of every endpoint on it:
 * the kernel routes the datagrams, no MAC address is involved (locally administered). */
static const uint8_t udp_gw_mac[6] = { 0x02, 0x74, 0x6c, 0x00, 0x00, 0x01 };

static uint16_t udp_rx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	return tl_udpport_rx(p->priv, q, pkts, n);
}

static uint16_t udp_tx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed)
{
	*n_failed = 0;
	return tl_udpport_tx(p->priv, q, pkts, n, failed, n_failed);
}

static bool udp_rx_pending(const struct tl_port_info *p, uint16_t q)
{
	return tl_udpport_rx_pending(p->priv, q);
}

/* Its IPv4 socket first, else its IPv6 one. */
static int udp_fd(const struct tl_port_info *p, uint16_t q, int which)
{
	int fd4 = tl_udpport_fd(p->priv, q, 0), fd6 = tl_udpport_fd(p->priv, q, 1);

	return which == 0 ? (fd4 >= 0 ? fd4 : fd6) : (fd4 >= 0 ? fd6 : -1);
}

static int udp_tx_full(const struct tl_port_info *p, uint16_t q)
{
	return tl_udpport_tx_full(p->priv, q);
}

static int udp_stats(const struct tl_port_info *p, struct rte_eth_stats *st)
{
	tl_udpport_stats(p->priv, st);
	return 0;
}

static void udp_gso(const struct tl_port_info *p, uint64_t *rx, uint64_t *tx)
{
	*rx = tl_udpport_gro_msgs(p->priv);
	*tx = tl_udpport_gso_sends(p->priv);
}

/* One socket per family and queue on the listen port. The port's MAC is the interface's
 * (any fixed one would do); every endpoint's next hop is udp_gw_mac; the kernel picks the
 * source address of what it sends. */
static int udp_open(struct tl_port_info *p, const struct tl_port_cfg *c, char *err, size_t errlen)
{
	struct tl_udpport_cfg uc = { .iface = c->iface, .port = c->listen_port, .queues = c->queues, .v4 = true,
				     .v6 = true, .mac = p->mac, .gw_mac = udp_gw_mac, .ip4 = p->ip4, .ip6 = p->ip6,
				     .pools = c->pools, .counters = c->counters, .rcvbuf = c->rcvbuf,
				     .sndbuf = c->sndbuf };

	if (rte_is_zero_ether_addr((const struct rte_ether_addr *)p->mac))
		memcpy(p->mac, udp_gw_mac, 6), p->mac[5] = 2;
	memcpy(p->peer_mac, udp_gw_mac, 6);
	p->fixed_peer_mac = true;
	p->src_by_kernel = true;
	p->priv = tl_udpport_open(&uc, err, errlen);
	return p->priv ? 0 : -1;
}

static void udp_close(struct tl_port_info *p)
{
	tl_udpport_close(p->priv);
}

static int udp_move_prepare(struct tl_port_info *p, uint16_t port, int (*fds)[2], char *err, size_t errlen)
{
	return tl_udpport_move_prepare(p->priv, port, fds, err, errlen);
}

static void udp_move_commit(struct tl_port_info *p, uint16_t port, int (*fds)[2])
{
	tl_udpport_move_commit(p->priv, port, fds);
}

static void udp_move_abort(struct tl_port_info *p, int (*fds)[2])
{
	tl_udpport_move_abort(p->priv, fds);
}

const struct tl_port_ops tl_udpport_ops = {
	.kind = "udp", .open = udp_open, .close = udp_close, .rx = udp_rx, .tx = udp_tx,
	.rx_pending = udp_rx_pending, .fd = udp_fd, .tx_full_fd = udp_tx_full, .stats = udp_stats, .gso = udp_gso,
	.move_prepare = udp_move_prepare, .move_commit = udp_move_commit, .move_abort = udp_move_abort,
	.tx_burst_max = TL_UDPPORT_TX_BURST, .queues_max = TL_MAX_WORKERS, .sockets = true, .live_fds = true,
};
