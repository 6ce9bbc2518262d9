/* Packet conservation, exported as /tunless/conservation (accounting.c) and as metrics: the
 * per-port balance of the dataplane (tl_conservation, worker.h), and the control plane's
 * balance, which takes over where the ports' account ends (what the workers handed to the
 * control plane, and the frames and datagrams the control plane gives the workers). */
#ifndef TL_ACCOUNTING_H
#define TL_ACCOUNTING_H

#include <stdint.h>

struct tl_device;

/* One flow through the control plane: every packet that entered it (in) left it (out),
 * was dropped under a named reason (dropped), or is still held in a ring (held). */
struct tl_flow_balance {
	uint64_t in, out, dropped, held;
	int64_t balance;      /* in - out - dropped - held: 0 = exact */
};

enum tl_ctrl_flow {
	/* handshake messages: in = handed by the workers (to_ctrl), out = consumed by the
	 * control plane, held = in the handshake ring */
	TL_FLOW_HANDSHAKES,
	/* packets parked for a handshake: in = staged by the workers, out = sent once a session
	 * exists (unstaged), dropped = evicted, expired, peer removed or not sendable, held =
	 * in the peers' staged rings */
	TL_FLOW_STAGED,
	/* frames the control plane builds (handshakes, cookies, keepalives, unstaged packets):
	 * in = put on a control TX ring, out = sent by the worker (from_ctrl), held = in the ring */
	TL_FLOW_FRAMES,
	/* datagrams of the listen port that the kernel received (IP fragments it reassembled):
	 * in = read from the sockets, out = taken by the worker (slowpath_rx), dropped = before
	 * the slow-path ring, held = in the ring */
	TL_FLOW_SLOWPATH,
	TL_FLOW_MAX
};

extern const char *const tl_ctrl_flow_names[TL_FLOW_MAX];

/* Sums the counters of the workers and the control plane and the rings' fill (any thread;
 * takes dev->lock to walk the peers). Exact when the dataplane and control plane are
 * quiet; off by what is in flight while they work. */
void tl_ctrl_balance(struct tl_device *dev, struct tl_flow_balance out[TL_FLOW_MAX]);

int tl_accounting_register(struct tl_device *dev);

#endif
