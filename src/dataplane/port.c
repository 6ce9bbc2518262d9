/* The port interface (port.h): the ethdev kind's table, and the list of the kinds a port is
 * opened as, the only place that names them. */
#include <stdio.h>
#include <string.h>

#include "dataplane/afpacket.h"
#include "dataplane/port.h"
#include "dataplane/udpport.h"

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

const struct tl_port_ops tl_port_ethdev_ops = {
	.kind = "ethdev", .rx = eth_rx, .tx = eth_tx, .stats = eth_stats, .tx_burst_max = TL_BURST,
};

/* The kinds a port is opened as (an ethdev is set up by the control plane: rte_eth_*). */
static const struct tl_port_ops *const kinds[] = { &tl_udpport_ops, &tl_afp_ops };

static const struct tl_port_ops *kind_of(const char *kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i]->kind, kind) == 0)
			return kinds[i];
	return NULL;
}

int tl_port_open(struct tl_port_info *p, const char *kind, const struct tl_port_cfg *c, char *err, size_t errlen)
{
	const struct tl_port_ops *o = kind_of(kind);

	if (!o) {
		snprintf(err, errlen, "no port kind '%s'", kind);
		return -1;
	}
	if (o->open(p, c, err, errlen) != 0) {
		p->priv = NULL;
		p->src_by_kernel = false;
		return -1;
	}
	p->ops = o;
	return 0;
}

unsigned tl_port_kind_queues(const char *kind)
{
	const struct tl_port_ops *o = kind_of(kind);

	return o ? o->queues_max : 0;
}

void tl_port_close(struct tl_port_info *p)
{
	if (p->ops && p->ops->close)
		p->ops->close(p);
	p->ops = NULL;
	p->priv = NULL;
	p->src_by_kernel = false;
}
