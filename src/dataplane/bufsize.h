/* Port buffers sized from the tunnel MTU: every frame a port carries fits one buffer (one
 * segment), the stages never chain. */
#ifndef TL_DATAPLANE_BUFSIZE_H
#define TL_DATAPLANE_BUFSIZE_H

#include <stdint.h>

#include <rte_mbuf.h>

/* What a frame carries beyond the tunnel MTU at most: Ethernet, outer IPv6 and UDP, the data
 * message's header and tag (its padding never takes a packet above the MTU). A LAN frame
 * grows by no more in place: the outer headers go into the headroom, padding and tag into
 * the room left at the end. */
#define TL_FRAME_OVERHEAD (14 + 40 + 8 + 16 + 16)
/* The headroom the kernel keeps ahead of a frame it writes into an AF_XDP buffer
 * (XDP_PACKET_HEADROOM): inside the mbuf's data room, before the frame. */
#define TL_XDP_HEADROOM 256

/* The largest frame of tunnel MTU mtu. */
static inline uint32_t tl_frame_max(uint16_t mtu)
{
	return (uint32_t)mtu + TL_FRAME_OVERHEAD;
}

/* The data room (rte_pktmbuf_pool_create's) of a buffer that holds any frame of tunnel MTU
 * mtu behind RTE_PKTMBUF_HEADROOM and extra more bytes of headroom (an AF_XDP port's:
 * TL_XDP_HEADROOM); DPDK's default at least, so a LAN frame somewhat above the MTU still
 * arrives whole and gets its ICMP error or its fragments. */
static inline uint16_t tl_buf_data_room(uint16_t mtu, uint16_t extra)
{
	uint32_t room = RTE_PKTMBUF_HEADROOM + (uint32_t)extra + tl_frame_max(mtu);

	return (uint16_t)RTE_MAX(room, (uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE);
}

#endif
