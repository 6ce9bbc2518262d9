/* The dataplane's accounting (balance.c): per-port conservation, the counters summed. */
#ifndef TL_BALANCE_H
#define TL_BALANCE_H

#include "dataplane/lcore.h"

/* Per-port conservation. Every packet received on a port, plus the ICMP errors tunless
 * generated toward that port's queue and the IPv4 fragments it made beyond the packets it
 * split, is exactly one of: transmitted by the queue its packets go to (LAN -> WAN queue,
 * WAN -> LAN queue), dropped under a named reason (before the queue, in the AQM, at
 * dequeue or after the crypto jobs), handed to the control plane (handshake messages,
 * keepalives, packets staged for a handshake), or still queued (in an egress queue, a
 * crypto job or a LAN next-hop hold). Exact when the dataplane is quiet; off by the
 * packets in flight while it works. */
struct tl_port_balance {
	uint64_t rx;          /* received (WAN: + datagrams the kernel reassembled) */
	uint64_t generated;   /* ICMP errors tunless made (WAN entry: they join the LAN queue);
			       * LAN entry: the fragments made beyond the packets split */
	uint64_t tx;          /* data frames the destination queue transmitted */
	uint64_t drops;       /* every drop of these packets, any reason */
	uint64_t handed;      /* to the control plane */
	uint64_t queued;      /* in the destination queue, crypto jobs or holds now */
	int64_t balance;      /* rx + generated - tx - drops - handed - queued: 0 = exact */
};

/* Sums n workers' counters and queue snapshots (any thread). */
void tl_conservation(struct tl_worker *ws, unsigned n, struct tl_port_balance out[TL_PORT_MAX]);
/* The counters of n workers and of extra (the control plane's; NULL: none), summed (any
 * thread: each counter is read as its owner writes it). */
void tl_dp_counters_sum(const struct tl_worker *ws, unsigned n, const struct tl_counters *extra, struct tl_counters *sum);

#endif
