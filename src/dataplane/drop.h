/* Drop reasons: the one list. Every packet the dataplane lets go of without delivering it
 * is counted under exactly one of these. The X-macro yields the enum, the names, the
 * per-worker counters and the metric labels. */
#ifndef TL_DROP_H
#define TL_DROP_H

#include <stdint.h>

#define TL_DROP_REASONS(X)                                                                  \
	X(malformed,                  "truncated or unparsable frame, header or message")   \
	X(not_for_us,                 "WAN frame not to our MAC address or not to an address of the WAN port") \
	X(bad_checksum,               "WAN frame with a wrong outer IPv4 header or UDP checksum (or a zero UDP checksum over IPv6)") \
	X(oversized,                  "frame larger than the port or tunnel can carry")      \
	X(aqm_codel,                  "egress AQM: CoDel dropped a non-ECT packet (sojourn above target)") \
	X(aqm_overlimit,              "egress AQM: hard packet/memory limit, dropped from the fattest flow") \
	X(unknown_type,               "WireGuard message type not 1..4")                     \
	X(unknown_receiver,           "data message for a receiver index we do not hold")    \
	X(bad_mac1,                   "handshake message with a wrong mac1")                 \
	X(bad_mac2,                   "handshake under load without a valid mac2 (cookie reply sent if it has a way back)") \
	X(handshake_failed,           "handshake message that did not authenticate")         \
	X(handshake_overload,         "handshake queue to the control plane full")           \
	X(ctrl_backlog,               "control-plane frame not sent: its TX queue is full (flood)") \
	X(handshake_ratelimited,      "handshake under load above the per-source rate (20/s)") \
	X(auth_failed,                "data message whose tag did not verify")               \
	X(encrypt_failed,             "encryption of an outgoing data message failed")       \
	X(replay,                     "data message counter already seen or too old")        \
	X(key_expired,                "data message on a keypair past REJECT_AFTER_TIME/MESSAGES") \
	X(src_not_allowed,            "decrypted inner source outside the peer's allowed IPs") \
	X(ecn_ce_not_ect,             "decrypted inner packet not ECN-capable whose outer header carries CE: the congestion signal cannot reach its sender but as a loss (RFC 6040 4.2)") \
	X(no_route,                   "inner destination matches no peer's allowed IPs")     \
	X(no_endpoint,                "peer has no known endpoint to send to")               \
	X(no_neighbour,               "next-hop MAC not resolved: a peer endpoint's on the WAN, or a LAN next hop within 3 s") \
	X(neigh_hold_overflow,        "packets waiting for a LAN next-hop MAC above 8 per next hop or 16 next hops per worker") \
	X(lan_no_route,               "inner destination matches no route of the LAN interface")  \
	X(no_session_staged_overflow, "staged queue of a peer without session (or the staging pool) full, oldest dropped") \
	X(no_session_expired,         "staged packets dropped when the handshake gave up")   \
	X(frag_needed,                "inner packet above tunnel MTU (IPv4 with DF, IPv6), ICMP sent back") \
	X(icmp_suppressed,            "inner packet above tunnel MTU, no ICMP error allowed: about an ICMP error, a non-first fragment, or from/to a multicast or broadcast address (RFC 1812 4.3.2.7, RFC 4443 2.4)") \
	X(icmp_ratelimited,           "inner packet above tunnel MTU, ICMP error above the worker's rate (1000/s, burst 50)") \
	X(not_ip,                     "non-IP frame on a tunnel port")                        \
	X(peer_removed,               "packets held for a peer that was removed")            \
	X(nomem,                      "mbuf allocation failed")                              \
	X(xsk_ring_full,              "kernel side: the AF_XDP socket had no buffer for a frame, its RX ring unread (imissed of an AF_XDP port)") \
	X(nic_rx_missed,              "NIC side: frames the NIC could not put into a full RX ring (imissed of a PMD port)") \
	X(kernel_socket_overflow,     "kernel side: a UDP socket of the listen port (the udp port kind, or reassembled fragments) dropped datagrams, buffer full (SO_RXQ_OVFL)") \
	X(kernel_send_failed,         "udp port kind: the kernel refused to send a datagram (no route, too big)") \
	X(gso_unsplittable,           "packet port kind: a GSO packet from the host of a kind it cannot split (not TCP over IPv4 or IPv6)")

enum tl_drop {
#define TL_DROP_ENUM(name, help) TL_DROP_##name,
	TL_DROP_REASONS(TL_DROP_ENUM)
#undef TL_DROP_ENUM
	TL_DROP_MAX
};

extern const char *const tl_drop_names[TL_DROP_MAX];
extern const char *const tl_drop_help[TL_DROP_MAX];

#endif
