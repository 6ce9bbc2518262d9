/* The `udp` WAN port kind's state, shared by its files (udpport.c: open, move, send;
 * udpport_rx.c: receive). Not an interface: the rest of the dataplane uses udpport.h. */
#ifndef TL_DATAPLANE_UDPPORT_INT_H
#define TL_DATAPLANE_UDPPORT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dataplane/bufsize.h"
#include "dataplane/sockport.h"
#include "dataplane/udpport.h"

#define UDPP_BURST 32
/* UDP_GRO: the kernel queues a run of datagrams from one sender as one super-datagram of at
 * most 64 KiB (in particular a peer's UDP_SEGMENT send, which then never gets segmented on
 * its way here). A queue reads up to GRO_MSGS of them at once into its arena and hands their
 * datagrams out as frames, a burst at a time; what a burst has no room for waits there. */
#define GRO_MSGS 4
#define GRO_MSG_LEN 65536u
/* Buffers a message slot lends the kernel to read a super-datagram's datagrams into, one
 * each (udpport_rx.c); the rest of the 64 KiB lands in the arena. */
#define RXZ_SEGS 64
_Static_assert(GRO_MSGS * RXZ_SEGS == TL_PORT_RX_LENT, "bufsize.h states the buffers a queue keeps lent");
/* A GSO send: at most this many segments and bytes (the kernel's limits are 64 and 64 KiB). */
#define TL_UDPPORT_GSO_SEGS 64
#define TL_UDPPORT_GSO_BYTES 65000
/* Room before a datagram for the largest frame header (Ethernet, IPv6, UDP). */
#define HDR_ROOM (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr))
#define HDR4 (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
/* A destination the kernel refused a UDP_SEGMENT send to (EMSGSIZE, or EINVAL before Linux
 * 6.x: segments above its route's MTU; EIO: an xfrm route; EOPNOTSUPP) gets datagram by
 * datagram for a while, then GSO is
 * tried again (its path MTU may have grown): per queue, the latest few. */
#define NO_GSO_DSTS 8
#define NO_GSO_NS 1000000000ull

struct no_gso {
	uint64_t until_ns;             /* 0: a free entry */
	uint8_t f, addr[16];
	uint16_t port;                 /* network order */
};

struct rx_meta {
	uint8_t dst[16];
	bool has_dst;
	uint8_t tos;
	uint16_t seg;                  /* UDP_GRO: the datagrams' size; 0: one datagram */
};

/* A message read into the arena: one datagram, or several of seg bytes (the last may be
 * shorter) from one source with one ECN field. */
struct rx_msg {
	uint32_t len;
	uint8_t f;
	uint8_t slot;                  /* its place in the arena and in zm[] */
	bool direct;                   /* its datagrams are in zm[slot][0..), one per buffer */
	struct rx_meta meta;
	struct sockaddr_storage src;
};

struct udpq {
	int fd[2];                     /* IPv4, IPv6; -1 if not open */
	int old_fd[2];                 /* after a move: the sockets of the old port, read until empty */
	int next_fd[2];                /* a move posted by the control plane, taken by the worker */
	int swap;                      /* 1: next_fd holds a move not taken yet */
	uint32_t ovfl_seen[2];         /* SO_RXQ_OVFL's running count, last seen */
	struct rte_mempool *mp;
	struct tl_counters *cnt;       /* the reading worker's (rx drops), or NULL */
	uint8_t first;                 /* family read first this time, alternated */
	struct no_gso no_gso[NO_GSO_DSTS];   /* destinations without GSO for now */
	unsigned no_gso_n, no_gso_next;      /* entries in use (maybe expired), the next to replace */
	int8_t out_full;               /* family whose socket took no more at the last send, or -1 */
	uint8_t *arena;                /* GRO_MSGS x GRO_MSG_LEN */
	struct rx_msg rm[GRO_MSGS];
	unsigned rm_n, rm_i;           /* messages in the arena, the one being handed out */
	uint32_t rm_off;               /* its bytes handed out so far */
	/* Receiving straight into buffers (udpport_rx.c): per message slot, buffers laid out for
	 * datagrams of zseg bytes, the first zn[slot] of zm[slot] held; zseg 0: not yet known. */
	struct rte_mbuf *zm[GRO_MSGS][RXZ_SEGS];
	uint8_t zn[GRO_MSGS];
	uint16_t zseg;
	/* written by the queue's worker only, read by the control plane */
	uint64_t ipackets, ibytes, opackets, obytes, imissed, ierrors, oerrors, gro_msgs, gso_sends;
	uint64_t gso_fallbacks;        /* UDP_SEGMENT sends refused (then sent datagram by datagram) */
	uint64_t rx_direct;            /* datagrams read straight into their buffer */
} __rte_cache_aligned;

struct tl_udpport {
	uint16_t queues, port;
	struct tl_udpport_cfg cfg;     /* as opened (iface copied), for a move */
	char iface[32];
	uint8_t mac[6], gw_mac[6], ip4[4], ip6[16];
	struct udpq q[];
};

union ctlbuf {
	char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + 2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t))];
	struct cmsghdr align;
};

#define cnt_add tl_sp_cnt_add
#define cnt_get tl_sp_cnt_get

/* The worker takes a move posted by the control plane (udpport.c). */
void tl_udpport_move_take(struct udpq *q);
/* The receive side's buffers of queue q (udpport_rx.c), given back at close. */
void tl_udpport_rx_free(struct udpq *q);

#endif
