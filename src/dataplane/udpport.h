/* The WAN port kind `udp`: kernel UDP sockets on the listen port in place of a DPDK port,
 * for hosts without zero-copy AF_XDP (a cloud VM, a laptop). Each queue is one socket per
 * address family, bound with SO_REUSEPORT to the listen port on the WAN interface and read
 * and written by the worker that owns the queue.
 *
 * The dataplane sees frames, as from any port: a datagram read becomes the frame it was on
 * the wire (Ethernet, IPv4 or IPv6, UDP; the kernel checked its checksums), and a frame
 * given to tl_udpport_tx is sent to the address, port and ECN field its headers name.
 * Backpressure, not loss: when a socket takes no more (EAGAIN, ENOBUFS), tl_udpport_tx
 * takes fewer frames and the rest stays with the caller, as with a full TX ring. A frame
 * the kernel refuses for another reason (no route, too big) is handed back in failed[] for
 * the caller to count. Datagrams the kernel could not queue for us (receive buffer full)
 * are counted from SO_RXQ_OVFL as the port's imissed. */
#ifndef TL_DATAPLANE_UDPPORT_H
#define TL_DATAPLANE_UDPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

struct tl_udpport;
struct tl_counters;

struct tl_udpport_cfg {
	const char *iface;            /* SO_BINDTODEVICE */
	uint16_t port;                /* the listen port */
	uint16_t queues;
	bool v4, v6;                  /* families to open (at least one) */
	const uint8_t *mac;           /* destination MAC of the frames read (the port's own) */
	const uint8_t *gw_mac;        /* their source MAC: the "next hop" every endpoint has */
	const uint8_t *ip4, *ip6;     /* destination address when the kernel names none */
	struct rte_mempool *const *pools;   /* one per queue: the frames read */
	/* One per queue, or NULL: the counters of the worker that reads the queue. A datagram
	 * read and let go of (larger than a buffer, or than 64 KiB) counts there as received on
	 * the WAN port and dropped as oversized; always in the port's ierrors. */
	struct tl_counters *const *counters;
	int rcvbuf, sndbuf;           /* socket buffer bytes (SO_*BUFFORCE; 0: the kernel's) */
};

/* NULL on failure, with the reason in err. */
struct tl_udpport *tl_udpport_open(const struct tl_udpport_cfg *cfg, char *err, size_t errlen);
void tl_udpport_close(struct tl_udpport *u);

/* Up to n frames read from queue q's sockets. */
uint16_t tl_udpport_rx(struct tl_udpport *u, uint16_t q, struct rte_mbuf **pkts, uint16_t n);
/* Frames tl_udpport_tx takes in one call at most (the length of its sendmmsg's message
 * arrays). */
#define TL_UDPPORT_TX_BURST 64

/* Sends pkts[0..n) in order on queue q: returns how many it took (sent, or refused and put
 * in failed[0..*n_failed), not freed); the rest was not touched. At most TL_UDPPORT_TX_BURST. */
uint16_t tl_udpport_tx(struct tl_udpport *u, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		       struct rte_mbuf **failed, uint16_t *n_failed);

/* Counters as a DPDK port has them (ipackets, ibytes, opackets, obytes, imissed, ierrors:
 * datagrams too large for a buffer, also dropped as oversized; oerrors: refused sends). */
void tl_udpport_stats(const struct tl_udpport *u, struct rte_eth_stats *st);
/* Moves the port to listen port `port`: every queue's sockets are opened there first (if
 * one cannot be, nothing changes: an error in err, -errno), then each queue's worker takes
 * the new sockets at its next call, reads the old ones until they are empty and closes
 * them. -EBUSY while a queue has not taken the last move. Control plane. */
int tl_udpport_move(struct tl_udpport *u, uint16_t port, char *err, size_t errlen);
/* tl_udpport_move in two steps: prepare opens every queue's sockets on `port` into fds (one
 * pair per queue; 0, or -errno with nothing open and nothing changed), then exactly one of
 * commit (hands them to the workers: cannot fail) or abort (closes them). */
int tl_udpport_move_prepare(struct tl_udpport *u, uint16_t port, int (*fds)[2], char *err, size_t errlen);
void tl_udpport_move_commit(struct tl_udpport *u, uint16_t port, int (*fds)[2]);
void tl_udpport_move_abort(const struct tl_udpport *u, int (*fds)[2]);
/* Every queue took the last move. */
bool tl_udpport_moved(const struct tl_udpport *u);
/* Messages read with more than one datagram in them (UDP_GRO), all queues. */
uint64_t tl_udpport_gro_msgs(const struct tl_udpport *u);
/* The socket of queue q that took no more at the last send (EAGAIN, ENOBUFS: the worker may
 * wait for POLLOUT on it), or -1. */
int tl_udpport_tx_full(const struct tl_udpport *u, uint16_t q);
/* UDP_SEGMENT sends of several datagrams, all queues. */
uint64_t tl_udpport_gso_sends(const struct tl_udpport *u);
/* UDP_SEGMENT sends the kernel refused (EMSGSIZE or EINVAL: segments above the destination's
 * route MTU; EIO: an xfrm route; EOPNOTSUPP), all queues: their datagrams went one by one, and so do
 * that destination's for a second, then GSO is tried there again. */
uint64_t tl_udpport_gso_fallbacks(const struct tl_udpport *u);
/* Queue q holds datagrams read from its sockets and not handed out yet. */
bool tl_udpport_rx_pending(const struct tl_udpport *u, uint16_t q);
/* Queue q's socket of family index f (0: IPv4, 1: IPv6), or -1. The queue's worker: after a
 * move the sockets change. */
int tl_udpport_fd(const struct tl_udpport *u, uint16_t q, int f);

/* The udp kind's port interface (port.h). */
struct tl_port_ops;
extern const struct tl_port_ops tl_udpport_ops;

#endif
