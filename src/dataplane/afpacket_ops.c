/* The packet port kind (afpacket.h) behind the port interface (port.h): its table. */
#include "dataplane/afpacket.h"
#include "dataplane/port.h"

_Static_assert(TL_AFP_TX_MAX <= TL_PORT_TX_MAX, "a packet port's burst fits the port interface's");

static uint16_t afp_rx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	return tl_afp_rx(p->priv, q, pkts, n);
}

static uint16_t afp_tx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed)
{
	*n_failed = 0;
	return tl_afp_tx(p->priv, q, pkts, n, failed, n_failed);
}

static bool afp_rx_pending(const struct tl_port_info *p, uint16_t q)
{
	return tl_afp_rx_pending(p->priv, q);
}

static int afp_fd(const struct tl_port_info *p, uint16_t q, int which)
{
	return which == 0 ? tl_afp_fd(p->priv, q) : -1;
}

static int afp_tx_full(const struct tl_port_info *p, uint16_t q)
{
	return tl_afp_tx_full(p->priv, q);
}

static int afp_stats(const struct tl_port_info *p, struct rte_eth_stats *st)
{
	tl_afp_stats(p->priv, st);
	return 0;
}

static void afp_gso(const struct tl_port_info *p, uint64_t *rx, uint64_t *tx)
{
	tl_afp_gso_counts(p->priv, rx, tx);
}

/* One AF_PACKET socket per queue on the interface (a veth has one queue pair). */
static int afp_open(struct tl_port_info *p, const struct tl_port_cfg *c, char *err, size_t errlen)
{
	struct tl_afp_cfg ac = { .iface = c->iface, .queues = c->queues, .pools = c->pools, .counters = c->counters,
				 .rcvbuf = c->rcvbuf, .sndbuf = c->sndbuf };

	p->priv = tl_afp_open(&ac, err, errlen);
	return p->priv ? 0 : -1;
}

static void afp_close(struct tl_port_info *p)
{
	tl_afp_close(p->priv);
}

const struct tl_port_ops tl_afp_ops = {
	.kind = "packet", .open = afp_open, .close = afp_close, .rx = afp_rx, .tx = afp_tx,
	.rx_pending = afp_rx_pending, .fd = afp_fd, .tx_full_fd = afp_tx_full, .stats = afp_stats, .gso = afp_gso,
	.tx_burst_max = TL_AFP_TX_MAX, .queues_max = 1, .sockets = true,
};
