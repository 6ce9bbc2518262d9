/* Control-plane harness for unit tests: a struct tl_device as the daemon builds it (config
 * in code, identity, dataplane objects, index tables, worker 0 initialised but not launched)
 * over two net_ring ports on a no-huge, no-PCI EAL. No root, no network.
 *
 * The test plays remote peers (struct tl_ch_remote) with the handshake functions of
 * crypto/noise.c and crypto/cookie.c: their messages are handed to tl_handshake_rx as a
 * worker hands them over (tl_ch_hs_msg); what the control plane sends lands in worker 0's
 * control TX ring, where tl_ch_take finds it.
 *
 *	tl_ch_eal_init(argv[0]);                        once per process
 *	struct tl_ch h;
 *	tl_ch_setup(&h);                                one device at a time
 *	struct tl_ch_remote r;
 *	struct tl_peer_ctrl *pc = tl_ch_peer_add(&h, &r, 1);
 *	tl_handshake_initiate(&h.dev, pc, h.now);
 *	tl_ch_take(&h, &r, TL_MSG_INITIATION, &init, sizeof(init));
 *	tl_ch_remote_respond(&h, &r, &init, &resp);
 *	tl_ch_deliver(&h, &r, &resp, sizeof(resp));
 *	tl_ch_teardown(&h);
 *	tl_ch_eal_fini();
 *
 * The control plane's clock is virtual: h.now starts at one hour and moves when a test
 * writes it (tl_ch_tick runs the timers at it). */
#ifndef TL_TEST_CTRL_HARNESS_H
#define TL_TEST_CTRL_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "ctrl/device.h"

#define TL_CH_LISTEN_PORT 51820
/* Threads computing handshakes beside the control thread: more than this machine's CPUs, so
 * that a batch's messages are computed at the same time even on two. */
#define TL_CH_HS_THREADS 3

struct tl_ch {
	struct tl_device dev;
	struct tl_config cfg;
	struct rte_ring *rx[TL_PORT_MAX];    /* what a port receives */
	struct rte_ring *tx[TL_PORT_MAX];    /* what a port transmitted */
	struct rte_mempool *pool;            /* port buffers and frames the remotes send */
	uint64_t now;
	struct tl_ch_worker_thread *worker_thread;   /* tl_ch_worker_start */
};

/* A remote peer the test plays: its identity, its handshake state as initiator (hs) and
 * as responder (resp_hs), its cookie checker, and where it sits on the WAN. */
struct tl_ch_remote {
	struct tl_identity id;
	struct tl_handshake hs;
	struct tl_handshake resp_hs;
	struct tl_cookie_checker cookies;
	struct tl_port_info at;              /* its MAC and address (source of its frames) */
	uint16_t port;
	uint32_t index;                      /* its index of the handshake in progress */
	uint64_t tai;                        /* its timestamp counter (seconds) */
	struct tl_session_keys keys;         /* of its last completed handshake */
};

/* EAL on --no-huge, --no-pci, --no-shconf, a per-process --file-prefix. 0 or -1. */
int tl_ch_eal_init(const char *argv0);
/* Notes the CPUs this thread may use, for the devices' handshake threads (dev->cpus): called
 * by tl_ch_eal_init, or by a program starting EAL itself, before EAL pins the thread. */
void tl_ch_save_cpus(void);
void tl_ch_eal_fini(void);

/* The device with its dataplane objects, worker 0 and an empty published table. The test
 * thread is registered in the RCU state as worker 0 but offline: tl_ch_worker_round puts it
 * online for one round. 0 or -1 (reason printed). */
int tl_ch_setup(struct tl_ch *h);
/* Removes every peer, frees everything. */
void tl_ch_teardown(struct tl_ch *h);

/* A remote at 192.0.2.<host>:51820 with a fresh key, added as our peer (endpoint and next
 * hop known, allowed IPs 10.<host>.0.0/16) and published. NULL on failure. */
struct tl_peer_ctrl *tl_ch_peer_add(struct tl_ch *h, struct tl_ch_remote *r, uint8_t host);

/* A WAN frame from r to our listen port carrying msg, as it arrives on the WAN port. From
 * h->pool; NULL if none is free. */
struct rte_mbuf *tl_ch_frame(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len);
/* msg from r as a worker hands a handshake message over (dp->hs_ring): the message alone,
 * the frame's outer headers parsed into the buffer's private area (tl_hs_outer). From
 * h->pool; NULL if none is free. */
struct rte_mbuf *tl_ch_hs_msg(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len);
/* That frame handed to tl_handshake_rx at h->now. */
void tl_ch_deliver(struct tl_ch *h, const struct tl_ch_remote *r, const void *msg, size_t len);

/* Takes the frames the control plane sent (worker 0's control TX ring) up to and including
 * the first WireGuard message of type addressed to r (its MAC, address and port); copies its
 * UDP payload (at most len bytes) to out. Frames before it are freed. Returns the payload
 * length, or -1 if none was sent. */
int tl_ch_take(struct tl_ch *h, const struct tl_ch_remote *r, uint32_t type, void *out, size_t len);
/* Frees every frame waiting in the control TX ring; returns how many there were. */
unsigned tl_ch_discard(struct tl_ch *h);

/* The remote starts a handshake with us (r->index is its new index). 0 or -1. */
int tl_ch_remote_initiation(struct tl_ch *h, struct tl_ch_remote *r, struct tl_msg_initiation *out);
/* The remote answers our initiation; r->keys holds the session. 0 or -1. */
int tl_ch_remote_respond(struct tl_ch *h, struct tl_ch_remote *r, const struct tl_msg_initiation *ours,
			 struct tl_msg_response *out);
/* The remote takes our response to its initiation; r->keys holds the session. 0 or -1. */
int tl_ch_remote_complete(struct tl_ch *h, struct tl_ch_remote *r, const struct tl_msg_response *ours);
/* The remote, under load, answers our message (initiation or response) with a cookie reply
 * addressed to its sender index. */
void tl_ch_remote_cookie(struct tl_ch *h, struct tl_ch_remote *r, const void *ours, size_t len,
			 uint32_t sender, struct tl_msg_cookie *out);

/* One control-plane timer tick at h->now. */
void tl_ch_tick(struct tl_ch *h);
/* One round of worker 0 on the test thread (online in the RCU state for that round only),
 * counted in its busy_polls or idle_polls as the worker's loop counts it. */
unsigned tl_ch_worker_round(struct tl_ch *h);

/* Worker 0 on a thread of its own, as the daemon runs a worker under load: online in the RCU
 * state from start to stop (so that every grace period waits for it), it runs a round
 * (tl_worker_round, counted as tl_ch_worker_round counts it, its clock at h->now of the
 * start) and then sleeps a millisecond, reporting a quiescent state once a round. Before each
 * round it looks up the n indices of watch (kept by the caller) in the index table and counts
 * the keypairs it finds wiped: a keypair reclaimed before its grace period ended. The test
 * thread runs no tl_ch_worker_round meanwhile. 0, or -1 (reason printed). */
int tl_ch_worker_start(struct tl_ch *h, const uint32_t *watch, size_t n);
/* Stops it (offline, as the daemon's workers stop); the wiped keypairs it found. */
uint64_t tl_ch_worker_stop(struct tl_ch *h);
/* Rounds the thread ran so far. */
uint64_t tl_ch_worker_rounds(struct tl_ch *h);
/* Grace periods begun on the device's RCU state so far: every rte_rcu_qsbr_synchronize begins
 * one, as does every token taken for a batch of retired keypairs (rte_rcu_qsbr_start). */
uint64_t tl_ch_grace_periods(struct tl_ch *h);

/* Entries of the control plane's index table whose owner is pc (pc may be freed: only the
 * pointer is compared), and entries whose owner is not a current peer. */
unsigned tl_ch_index_refs(struct tl_ch *h, const struct tl_peer_ctrl *pc);
unsigned tl_ch_index_orphans(struct tl_ch *h);
/* Handshake entries of the index table that the owner's handshake state no longer names
 * (an index nobody can complete or free any more). */
unsigned tl_ch_index_stale(struct tl_ch *h);

#endif
