/* One interface per port (port.c): what the pipeline and the control plane ask of a port,
 * whatever its kind. Three kinds fill it: ethdev (a DPDK port: a PMD or net_af_xdp), udp
 * (kernel UDP sockets on the listen port, udpport.c) and packet (an AF_PACKET socket on host
 * mode's veth, afpacket.c). Only port.c names them; the pipeline makes one indirect call per
 * burst. A new kind is its own file and a table in port.c. */
#ifndef TL_PORT_H
#define TL_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dataplane/dp.h"

/* Frames one tl_port_tx may be offered, at most (the largest tl_port_tx_burst_max). */
#define TL_PORT_TX_MAX 128

struct tl_port_ops {
	const char *kind;
	/* Up to n frames read from queue q. */
	uint16_t (*rx)(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n);
	/* Offers n frames (at most tx_burst_max) to queue q; returns how many it took. Those not
	 * taken are pkts[taken..n), in their order. Of the ones taken, the kernel may have
	 * refused some (a socket's send error): handed back in failed[] (*n_failed), for the
	 * caller to count and free. */
	uint16_t (*tx)(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed);
	/* Frames read from the kernel and not handed out yet (NULL: never). */
	bool (*rx_pending)(const struct tl_port_info *p, uint16_t q);
	/* The socket of queue q to wait on for input, which 0 or 1 (udp: IPv4, IPv6), or -1; NULL:
	 * the port has none of its own here (ethdev: the control plane knows the AF_XDP socket). */
	int (*fd)(const struct tl_port_info *p, uint16_t q, int which);
	/* The socket that took no more at its last send, to wait for POLLOUT on, or -1 (NULL:
	 * never). */
	int (*tx_full_fd)(const struct tl_port_info *p, uint16_t q);
	int (*stats)(const struct tl_port_info *p, struct rte_eth_stats *st);
	/* Offload counts: datagrams read as GRO batches / sent as GSO (udp), or frames split /
	 * merged (packet). NULL: none. */
	void (*gso)(const struct tl_port_info *p, uint64_t *rx, uint64_t *tx);
	/* Frames a burst offers at most: a packet port merges each TCP flow's frames of a burst
	 * into GSO packets, so it takes more at once (with 8 flows, 32 frames made runs of about
	 * 5 segments). */
	uint16_t tx_burst_max;
	bool sockets;                 /* kernel sockets: what they drop is their overflow */
	bool live_fds;                /* fd changes at run time (the listen port moves): ask it
				       * each time, not once at start */
};

/* The interface of port p (its kind is fixed once the port is open). */
const struct tl_port_ops *tl_port_ops(const struct tl_port_info *p);

static inline uint16_t tl_port_rx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	return tl_port_ops(p)->rx(p, q, pkts, n);
}

static inline uint16_t tl_port_tx(const struct tl_port_info *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
				  struct rte_mbuf **failed, uint16_t *n_failed)
{
	return tl_port_ops(p)->tx(p, q, pkts, n, failed, n_failed);
}

static inline unsigned tl_port_tx_burst_max(const struct tl_port_info *p)
{
	return tl_port_ops(p)->tx_burst_max;
}

static inline bool tl_port_rx_pending(const struct tl_port_info *p, uint16_t q)
{
	const struct tl_port_ops *o = tl_port_ops(p);

	return o->rx_pending && o->rx_pending(p, q);
}

static inline int tl_port_tx_full_fd(const struct tl_port_info *p, uint16_t q)
{
	const struct tl_port_ops *o = tl_port_ops(p);

	return o->tx_full_fd ? o->tx_full_fd(p, q) : -1;
}

/* The port's own socket of queue q (which 0 or 1), or -1; -2: the port has none of its own. */
static inline int tl_port_fd(const struct tl_port_info *p, uint16_t q, int which)
{
	const struct tl_port_ops *o = tl_port_ops(p);

	return o->fd ? o->fd(p, q, which) : -2;
}

/* A port of kernel sockets (udp, packet). */
static inline bool tl_port_sockets(const struct tl_port_info *p)
{
	return tl_port_ops(p)->sockets;
}

static inline bool tl_port_live_fds(const struct tl_port_info *p)
{
	return tl_port_ops(p)->live_fds;
}

/* The port's counters (st zeroed first). 0, or -1 as rte_eth_stats_get. */
static inline int tl_port_stats_read(const struct tl_port_info *p, struct rte_eth_stats *st)
{
	memset(st, 0, sizeof(*st));
	return tl_port_ops(p)->stats(p, st);
}

static inline void tl_port_gso_counts(const struct tl_port_info *p, uint64_t *rx, uint64_t *tx)
{
	const struct tl_port_ops *o = tl_port_ops(p);

	*rx = *tx = 0;
	if (o->gso)
		o->gso(p, rx, tx);
}

#endif
