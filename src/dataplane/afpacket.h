/* The host-mode LAN port kind `packet`: an AF_PACKET socket with virtio-net headers
 * (PACKET_VNET_HDR) on the dataplane end of the host veth, in place of AF_XDP.
 *
 * Why: XDP on a veth end turns TSO off on its peer, so every TCP segment the host sends
 * crosses the veth as its own skb and reaches AF_XDP through one more copy each. Without
 * XDP the host keeps TSO: its TCP stack hands over up to 64 KiB at once, and in the other
 * direction a run of one flow's segments crosses as one GSO packet, as a TUN device with
 * IFF_VNET_HDR does for a userspace VPN.
 *
 * The dataplane sees frames, as from any port:
 * - receive: a GSO packet (TCP over IPv4 or IPv6) is split into the segments the host
 *   would have sent (headers of each fixed: lengths, IPv4 id, TCP sequence and flags),
 *   each with its checksums complete; a packet whose checksum the host left to the device
 *   (VIRTIO_NET_HDR_F_NEEDS_CSUM) has it completed here;
 * - send: the frames of one TCP flow in a burst that the host's GRO would merge (same
 *   headers, consecutive sequence numbers, equal sizes but the last; other flows' frames
 *   may lie between them) leave as one GSO packet with its checksum left partial (the
 *   host's stack trusts it: it never crosses a wire); any other frame leaves as it is. A
 *   flow's frames keep their order; frames of different flows may pass each other.
 * Backpressure, not loss: when the kernel takes no more (EAGAIN, or ENOBUFS: the host's
 * backlog was full and the kernel dropped its copy, ours is intact), tl_afp_tx takes
 * fewer frames and the rest stays with the caller. Packets the socket's receive queue
 * could not hold are counted from PACKET_STATISTICS as the port's imissed (one per packet
 * the host sent, which may be a GSO packet of many segments). A packet this port cannot
 * hand out (a GSO kind other than TCP, which the host end is set up not to send; larger
 * than a buffer; headers it cannot parse) is dropped under a reason (counters below) and
 * counted in ierrors. */
#ifndef TL_DATAPLANE_AFPACKET_H
#define TL_DATAPLANE_AFPACKET_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

struct tl_afp;
struct tl_counters;

struct tl_afp_cfg {
	const char *iface;                  /* the dataplane end of the host veth */
	uint16_t queues;                    /* 1: a veth has one queue pair */
	struct rte_mempool *const *pools;   /* one per queue: the frames read */
	/* One per queue, or NULL: the counters of the worker that reads the queue. A packet read
	 * and let go of counts there as received on the LAN port and dropped: oversized (larger
	 * than a buffer, or than 64 KiB), malformed (headers it cannot parse, a checksum it
	 * cannot complete), gso_unsplittable (a GSO kind other than TCP); always in ierrors. */
	struct tl_counters *const *counters;
	int rcvbuf, sndbuf;                 /* socket buffer bytes (SO_*BUFFORCE; 0: the kernel's) */
};

/* NULL on failure, with the reason in err. */
struct tl_afp *tl_afp_open(const struct tl_afp_cfg *cfg, char *err, size_t errlen);
void tl_afp_close(struct tl_afp *p);

/* Up to n frames read from queue q (GSO packets split into their segments). */
uint16_t tl_afp_rx(struct tl_afp *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n);
/* Frames tl_afp_tx takes in one call at most: a burst of many flows' frames still gives
 * each flow runs long enough to merge (8 TCP flows in 128 frames: about 16 segments each). */
#define TL_AFP_TX_MAX 128

/* Sends pkts[0..n) on queue q (one flow's frames in order) and returns how many it took:
 * sent (freed), or refused and put in failed[0..*n_failed) (not freed). The frames not
 * taken are moved to pkts[taken..n), in their order: the taken ones need not have been the
 * first, as frames of different flows may leave out of order. */
uint16_t tl_afp_tx(struct tl_afp *p, uint16_t q, struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **failed,
		   uint16_t *n_failed);
/* Queue q's socket if the last send stopped because its buffer was full (EAGAIN: the worker
 * may wait for POLLOUT), else -1. ENOBUFS (the host's backlog) is not a socket's to signal. */
int tl_afp_tx_full(const struct tl_afp *p, uint16_t q);
/* Queue q holds segments read from its socket and not handed out yet. */
bool tl_afp_rx_pending(const struct tl_afp *p, uint16_t q);

/* Counters as a DPDK port has them (ipackets, ibytes: segments as handed out; imissed:
 * the socket's drops; ierrors: packets read and dropped; oerrors: frames refused). */
void tl_afp_stats(struct tl_afp *p, struct rte_eth_stats *st);
/* GSO packets read and split, and sent merged, all queues. */
void tl_afp_gso_counts(const struct tl_afp *p, uint64_t *split, uint64_t *merged);
/* Merged sends the kernel refused (the veth down, a merge it does not take), all queues:
 * their frames went one by one, and so does the queue's traffic for a second, then merging
 * is tried again. */
uint64_t tl_afp_merge_fallbacks(const struct tl_afp *p);
/* Queue q's socket, or -1. */
int tl_afp_fd(const struct tl_afp *p, uint16_t q);

/* The packet kind's port interface (port.h). */
struct tl_port_ops;
extern const struct tl_port_ops tl_afp_ops;

#endif
