/* The port interface (port.h) of each port kind: the only file that names them. */
#include "dataplane/afpacket.h"
#include "dataplane/port.h"
#include "dataplane/udpport.h"

_Static_assert(TL_AFP_TX_MAX <= TL_PORT_TX_MAX, "a packet port's burst fits the port interface's");
_Static_assert(TL_BURST <= TL_PORT_TX_MAX, "a burst fits the port interface's");

/* ---- ethdev: a DPDK port (a PMD, or net_af_xdp) ------------------------------------------ */

static uint16_t eth_rx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(p->port_id, q, pkts, n);
}

static uint16_t eth_tx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed)
{
	(void)failed;
	*n_failed = 0;
	return rte_eth_tx_burst(p->port_id, q, pkts, n);
}

static int eth_stats(const struct tl_port_info *p, struct rte_eth_stats *st)
{
	return rte_eth_stats_get(p->port_id, st);
}

static const struct tl_port_ops ethdev_ops = {
	.kind = "ethdev", .rx = eth_rx, .tx = eth_tx, .stats = eth_stats, .tx_burst_max = TL_BURST,
};

/* ---- udp: kernel UDP sockets on the listen port (udpport.c) ------------------------------ */

static uint16_t udp_rx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	return tl_udpport_rx(p->udp, q, pkts, n);
}

static uint16_t udp_tx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed)
{
	*n_failed = 0;
	return tl_udpport_tx(p->udp, q, pkts, n, failed, n_failed);
}

static bool udp_rx_pending(const struct tl_port_info *p, uint16_t q)
{
	return tl_udpport_rx_pending(p->udp, q);
}

/* Its IPv4 socket first, else its IPv6 one. */
static int udp_fd(const struct tl_port_info *p, uint16_t q, int which)
{
	int fd4 = tl_udpport_fd(p->udp, q, 0), fd6 = tl_udpport_fd(p->udp, q, 1);

	return which == 0 ? (fd4 >= 0 ? fd4 : fd6) : (fd4 >= 0 ? fd6 : -1);
}

static int udp_tx_full(const struct tl_port_info *p, uint16_t q)
{
	return tl_udpport_tx_full(p->udp, q);
}

static int udp_stats(const struct tl_port_info *p, struct rte_eth_stats *st)
{
	tl_udpport_stats(p->udp, st);
	return 0;
}

static void udp_gso(const struct tl_port_info *p, uint64_t *rx, uint64_t *tx)
{
	*rx = tl_udpport_gro_msgs(p->udp);
	*tx = tl_udpport_gso_sends(p->udp);
}

static const struct tl_port_ops udp_ops = {
	.kind = "udp", .rx = udp_rx, .tx = udp_tx, .rx_pending = udp_rx_pending, .fd = udp_fd,
	.tx_full_fd = udp_tx_full, .stats = udp_stats, .gso = udp_gso, .tx_burst_max = TL_BURST,
	.sockets = true, .live_fds = true,
};

/* ---- packet: an AF_PACKET socket on host mode's veth (afpacket.c) ------------------------- */

static uint16_t afp_rx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	return tl_afp_rx(p->afp, q, pkts, n);
}

static uint16_t afp_tx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed)
{
	*n_failed = 0;
	return tl_afp_tx(p->afp, q, pkts, n, failed, n_failed);
}

static bool afp_rx_pending(const struct tl_port_info *p, uint16_t q)
{
	return tl_afp_rx_pending(p->afp, q);
}

static int afp_fd(const struct tl_port_info *p, uint16_t q, int which)
{
	return which == 0 ? tl_afp_fd(p->afp, q) : -1;
}

static int afp_tx_full(const struct tl_port_info *p, uint16_t q)
{
	return tl_afp_tx_full(p->afp, q);
}

static int afp_stats(const struct tl_port_info *p, struct rte_eth_stats *st)
{
	tl_afp_stats(p->afp, st);
	return 0;
}

static void afp_gso(const struct tl_port_info *p, uint64_t *rx, uint64_t *tx)
{
	tl_afp_gso_counts(p->afp, rx, tx);
}

static const struct tl_port_ops packet_ops = {
	.kind = "packet", .rx = afp_rx, .tx = afp_tx, .rx_pending = afp_rx_pending, .fd = afp_fd,
	.tx_full_fd = afp_tx_full, .stats = afp_stats, .gso = afp_gso, .tx_burst_max = TL_AFP_TX_MAX,
	.sockets = true,
};

const struct tl_port_ops *tl_port_ops(const struct tl_port_info *p)
{
	return p->udp ? &udp_ops : p->afp ? &packet_ops : &ethdev_ops;
}
