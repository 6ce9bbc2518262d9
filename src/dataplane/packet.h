/* Frame parsing and building for the fast path: outer Ethernet/IP/UDP of WireGuard
 * datagrams on the WAN port, inner IP packets on the LAN port. Single-segment mbufs. */
#ifndef TL_PACKET_H
#define TL_PACKET_H

#include <stdbool.h>
#include <stdint.h>
#include <rte_mbuf.h>

#include "dataplane/dp.h"

#define TL_ETH_LEN 14
#define TL_OUTER4_LEN (TL_ETH_LEN + 20 + 8)
#define TL_OUTER6_LEN (TL_ETH_LEN + 40 + 8)

/* A parsed WAN datagram. After tl_pkt_parse_outer the mbuf data starts at the UDP payload. */
struct tl_outer {
	int family;
	uint8_t src_ip[16];
	uint8_t dst_ip[16];            /* the address of ours the peer wrote to */
	uint16_t src_port;             /* host order */
	uint8_t src_mac[6];
	uint8_t ecn;                   /* outer ECN bits */
	uint16_t hdr_len;              /* Ethernet + IP + UDP header bytes stripped */
};

/* A handshake message on its way to the control plane (dp->hs_ring): the WireGuard message
 * alone in the buffer's data, and its outer headers as the worker parsed them in the
 * buffer's private area (dp->hs_pool has TL_HS_PRIV bytes of it), so that the control plane
 * neither gets nor parses them. NULL: the buffer has no room for them (a pool without that
 * area). */
#define TL_HS_PRIV RTE_ALIGN(sizeof(struct tl_outer), RTE_MBUF_PRIV_ALIGN)

static inline struct tl_outer *tl_hs_outer(struct rte_mbuf *m)
{
	return rte_pktmbuf_priv_size(m->pool) >= sizeof(struct tl_outer) ? (struct tl_outer *)rte_mbuf_to_priv(m)
									  : NULL;
}

/* The bytes of m's buffer before p and after p + len, which a worker owns with the buffer
 * (stages never share or chain buffers): the data-path AEAD's head and tail room. */
static inline void tl_pkt_room(const struct rte_mbuf *m, const uint8_t *p, size_t len, size_t *head,
			       size_t *tail)
{
	const uint8_t *start = (const uint8_t *)m->buf_addr;

	*head = (size_t)(p - start);
	*tail = (size_t)(start + m->buf_len - (p + len));
}

/* A parsed inner IP packet. */
struct tl_inner {
	int family;
	const uint8_t *src, *dst;      /* 4 or 16 bytes */
	uint16_t len;                  /* IP total length */
	uint8_t ecn;
};

/* Whether addr (family's length) is an address of port wan now: one of its published set
 * (tl_port_info.addrs), or without a set its fixed ip4/ip6. Any thread; a worker within its
 * round. */
bool tl_pkt_wan_local(const struct tl_port_info *wan, int family, const uint8_t *addr);

/* Whether port wan has an address of family to send from now (else: no_endpoint). */
bool tl_pkt_wan_has_family(const struct tl_port_info *wan, int family);

/* The source address of a frame to ep, into src (16 bytes): the address of ours the peer last
 * wrote to while it is still ours, else the family's first address; a port whose kernel
 * picks the source (src_by_kernel: udp) leaves it unspecified (all zero) instead. False if
 * the port has no address of the family. */
bool tl_pkt_wan_source(const struct tl_port_info *wan, const struct tl_endpoint *ep, uint8_t src[16]);

/* Strips Ethernet/IP/UDP (and any Ethernet padding after the IP packet) of a frame that
 * must be UDP to listen_port, sent to the MAC and an address of port wan, with a valid IPv4
 * header checksum. Returns TL_DROP_MAX on success, else the drop reason (malformed,
 * not_ip, not_for_us, bad_checksum). */
enum tl_drop tl_pkt_parse_outer(struct rte_mbuf *m, const struct tl_port_info *wan, uint16_t listen_port,
				struct tl_outer *o);

/* The UDP checksum of a frame tl_pkt_parse_outer accepted, before anything changed its
 * payload or headers: zero passes over IPv4 only. TL_DROP_MAX or TL_DROP_bad_checksum. */
enum tl_drop tl_pkt_outer_udp_check(const struct rte_mbuf *m, const struct tl_outer *o);

/* Validates an IP packet at p of at most avail bytes. Returns TL_DROP_MAX or a reason. */
enum tl_drop tl_pkt_parse_inner(const uint8_t *p, uint32_t avail, struct tl_inner *in);

/* Completes the TCP or UDP checksum of the validated IP packet at p when its sender's
 * kernel left it partial (checksum offload: only the pseudo-header sum in the field).
 * Returns true if it did. */
bool tl_pkt_l4_csum_complete(uint8_t *p, const struct tl_inner *in);

/* Prepends Ethernet/IP/UDP in front of the WireGuard message the mbuf holds, from the
 * source tl_pkt_wan_source picks (all zero if the port has no address of the family).
 * Returns -1 without headroom. */
int tl_pkt_push_outer(struct rte_mbuf *m, const struct tl_port_info *wan, const struct tl_endpoint *ep,
		      uint16_t src_port, uint8_t ecn);

/* The same, but an IPv6 frame's UDP checksum is left for tl_pkt_outer_csum, called once
 * the payload is final (sealed). */
int tl_pkt_push_outer_nocsum(struct rte_mbuf *m, const struct tl_port_info *wan, const struct tl_endpoint *ep,
			     uint16_t src_port, uint8_t ecn);
void tl_pkt_outer_csum(struct rte_mbuf *m);

/* Prepends an Ethernet header for a decrypted IP packet. */
int tl_pkt_push_eth(struct rte_mbuf *m, const uint8_t dst[6], const uint8_t src[6], int family);

/* True if the IPv4 packet at p (validated) lets routers fragment it: DF is clear. */
bool tl_pkt_ip4_may_fragment(const uint8_t *p);

/* True if an ICMP error may be sent about the inner packet in the Ethernet frame m
 * (validated as in): not about an ICMP error, a non-first IPv4 fragment, a source that
 * names no single host, or an IPv4 multicast or broadcast destination (RFC 1812 4.3.2.7,
 * RFC 4443 2.4(e)). */
bool tl_pkt_icmp_error_allowed(const struct rte_mbuf *m, const struct tl_inner *in);

/* Turns a too-big inner packet (Ethernet frame in m) into the ICMP/ICMPv6 error telling
 * its sender the tunnel MTU, addressed back out of the port it came from; the family is
 * the packet's IP version. 0 or -1 (the packet is then simply dropped by the caller). */
int tl_pkt_make_too_big(struct rte_mbuf *m, const struct tl_port_info *lan, uint16_t mtu);

#endif
