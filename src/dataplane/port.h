/* One interface per port (port.c): what the pipeline and the control plane ask of a port,
 * whatever its kind. Three kinds fill it: ethdev (a DPDK port: a PMD or net_af_xdp, port.c),
 * udp (kernel UDP sockets on the listen port, udpport.c, its table in udpport_ops.c) and
 * packet (an AF_PACKET socket on host mode's veth, afpacket.c, afpacket_ops.c). Each kind
 * fills its own table; port.c lists them and opens a port by its kind's name; the port keeps
 * its table and the kind's own state (tl_port_info.ops, .priv), so nothing above names a
 * kind. The pipeline makes one indirect call per burst. A new kind is its own files and one
 * line in port.c. */
#ifndef TL_PORT_H
#define TL_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dataplane/dp.h"

/* Frames one tl_port_tx may be offered, at most (the largest tl_port_tx_burst_max). */
#define TL_PORT_TX_MAX 128

/* What a port of a socket kind is opened with (tl_port_open). */
struct tl_port_cfg {
	const char *iface;
	uint16_t queues;
	uint16_t listen_port;                   /* a WAN port: the UDP port its sockets bind */
	struct rte_mempool *const *pools;       /* one per queue: the frames read */
	struct tl_counters *const *counters;    /* one per queue: the worker reading it */
	int rcvbuf, sndbuf;                     /* socket buffer bytes (0: the kernel's) */
};

struct tl_port_ops {
	const char *kind;
	/* Opens port p: sets p->priv and what the kind decides of p (its MAC when the interface
	 * has none, the next hop, src_by_kernel). 0, or -1 with the reason in err. NULL: the
	 * control plane sets the port up itself (ethdev: rte_eth_*). */
	int (*open)(struct tl_port_info *p, const struct tl_port_cfg *c, char *err, size_t errlen);
	void (*close)(struct tl_port_info *p);
	/* The listen port moved in two steps (ctrl/ports.h tl_listen_port_prepare): prepare opens
	 * the sockets of every queue on port into fds (0, or -errno with nothing changed), then
	 * commit hands them to the workers or abort closes them. NULL: the port holds no
	 * sockets of the listen port. */
	int (*move_prepare)(struct tl_port_info *p, uint16_t port, int (*fds)[2], char *err, size_t errlen);
	void (*move_commit)(struct tl_port_info *p, uint16_t port, int (*fds)[2]);
	void (*move_abort)(struct tl_port_info *p, int (*fds)[2]);
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
	/* Queues a port of the kind has at most (udp: a socket per worker, SO_REUSEPORT;
	 * packet: a veth has one queue pair). 0: the device says (ethdev). */
	unsigned queues_max;
	bool sockets;                 /* kernel sockets: what they drop is their overflow */
	bool live_fds;                /* fd changes at run time (the listen port moves): ask it
				       * each time, not once at start */
};

extern const struct tl_port_ops tl_port_ethdev_ops;

/* The interface of port p (its kind is fixed once the port is open): an ethdev's unless a
 * kind opened it. */
static inline const struct tl_port_ops *tl_port_ops(const struct tl_port_info *p)
{
	return p->ops ? p->ops : &tl_port_ethdev_ops;
}

/* Opens port p as the kind named kind (tl_port_ops.kind: "udp", "packet"). 0, or -1 with the
 * reason in err and p still an ethdev's. */
int tl_port_open(struct tl_port_info *p, const char *kind, const struct tl_port_cfg *c, char *err, size_t errlen);
/* The queues a port of the kind named kind has at most (tl_port_ops.queues_max); 0: no such
 * kind. */
unsigned tl_port_kind_queues(const char *kind);
/* Closes what tl_port_open opened (nothing for a port it did not open); p is an ethdev's
 * again. */
void tl_port_close(struct tl_port_info *p);

/* The port holds sockets of the listen port, which tl_port_move_* move. */
static inline bool tl_port_holds_listen(const struct tl_port_info *p)
{
	return tl_port_ops(p)->move_prepare != NULL;
}

static inline int tl_port_move_prepare(struct tl_port_info *p, uint16_t port, int (*fds)[2], char *err,
				       size_t errlen)
{
	return tl_port_ops(p)->move_prepare(p, port, fds, err, errlen);
}

static inline void tl_port_move_commit(struct tl_port_info *p, uint16_t port, int (*fds)[2])
{
	tl_port_ops(p)->move_commit(p, port, fds);
}

static inline void tl_port_move_abort(struct tl_port_info *p, int (*fds)[2])
{
	tl_port_ops(p)->move_abort(p, fds);
}

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
