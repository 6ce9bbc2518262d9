/* Dataplane objects shared by the workers (readers, fast path) and the control plane
 * (owner, writer). Workers never take locks on these: peers, keypairs and lookup tables
 * are published with atomics and reclaimed after an rte_rcu_qsbr grace period. */
#ifndef TL_DP_H
#define TL_DP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <rte_hash.h>
#include <rte_lpm6.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_seqlock.h>
#include <rte_spinlock.h>

#include "crypto/replay.h"
#include "dataplane/drop.h"
#include "dataplane/qparams.h"
#include "dataplane/shaper.h"

#define TL_MAX_WORKERS 64
/* Peers of one device at most: the kernel's MAX_PEERS_PER_DEVICE (rte_lpm6 next hops have 21
 * bits). Nothing is sized by it: tables grow with the peers there are. */
#define TL_MAX_PEERS (1u << 20)
#define TL_BURST 32
/* Packets of one crypto job at most: the kernel's 64 segments of one UDP GSO send (its 64 KiB
 * make that 44 of 1420-byte packets: a job then leaves in two sends, not three), and on the
 * way in a GRO message's worth, so that a flow's TSO packet crosses the tunnel in few pieces. */
#define TL_JOB_MAX 64
/* Crypto jobs one queue owner may have in flight per direction: packets beyond the
 * egress and RX rings that the port pools are sized for. */
#define TL_JOBS_PER_OWNER 64

enum tl_port_role { TL_PORT_WAN, TL_PORT_LAN, TL_PORT_MAX };

/* The two directions of the crypto jobs (crypt.h): LAN -> WAN (seal) and WAN -> LAN (open). */
enum tl_dir { TL_DIR_ENCAP, TL_DIR_DECAP, TL_DIR_MAX };

/* Protocol limits in nanoseconds / messages, fixed at start. */
struct tl_dp_limits {
	uint64_t rekey_after_time_ns;
	uint64_t reject_after_time_ns;
	uint64_t rekey_after_messages;
	uint64_t reject_after_messages;
};

/* A session's transport keys. Created by the control plane on handshake completion; the
 * send counter is shared by all workers; the replay window has one writer at a time. */
struct tl_keypair {
	uint8_t send_key[32];
	uint8_t recv_key[32];
	uint32_t local_index;
	uint32_t remote_index;
	uint64_t birth_ns;
	bool initiator;
	struct tl_peer *peer;
	_Atomic uint64_t send_counter;
	rte_spinlock_t replay_lock;
	struct tl_replay replay;
};

/* Where to send a peer's packets: outer address, port and next-hop MAC, and our address the
 * peer last wrote to (the source of what we send it, as the kernel's endpoint source cache).
 * Written by the control plane (config, handshakes) and by workers (roaming), read under a
 * seqlock. */
struct tl_endpoint {
	int family;                 /* 0 = unknown */
	uint8_t ip[16];
	uint16_t port;              /* host order */
	uint8_t mac[6];             /* next hop on the WAN port */
	bool mac_valid;
	bool has_local;             /* local: known (learnt from an authenticated packet) */
	uint8_t local[16];
};

struct tl_peer_stats {
	_Atomic uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
};

struct tl_peer {
	uint32_t id;                                 /* index in the table, LPM next hop */
	_Atomic(struct tl_keypair *) current, previous, next;
	rte_seqlock_t ep_lock;
	struct tl_endpoint ep;
	/* Packets staged for the peer (waiting for a session or the endpoint's MAC): in
	 * tl_dp.stage_ring or the control plane's queue of the peer. */
	_Atomic uint32_t n_staged;
	struct tl_peer_stats stats;
	/* Event stamps (CLOCK_MONOTONIC ns) from which the control plane derives the timers. */
	_Atomic uint64_t last_tx_data_ns, last_tx_any_ns, last_rx_data_ns, last_rx_auth_ns;
	_Atomic bool want_handshake;                 /* worker: no usable session / rekey due */
	_Atomic bool next_confirmed;                 /* worker: data arrived on ->next */
	void *ctrl;                                  /* control-plane state, opaque here */
};

static inline void tl_endpoint_read(struct tl_peer *p, struct tl_endpoint *ep)
{
	uint32_t sn;

	do {
		sn = rte_seqlock_read_begin(&p->ep_lock);
		*ep = p->ep;
	} while (rte_seqlock_read_retry(&p->ep_lock, sn));
}

static inline bool tl_peer_has_endpoint(struct tl_peer *p)
{
	struct tl_endpoint ep;

	tl_endpoint_read(p, &ep);
	return ep.family != 0;
}

/* Age of something born at birth, at time now (CLOCK_MONOTONIC ns). A thread's clock
 * stamp may be older than a birth another thread stamped later: that is age 0, not a
 * wrap to about 2^64. */
static inline uint64_t tl_age_ns(uint64_t now, uint64_t birth)
{
	return now > birth ? now - birth : 0;
}

/* The routing table (dataplane/route.h) maps allowed IPs to peer ids; this maps ids to
 * peers. Replaced by a larger copy (and the old one freed after a grace period) when the ids
 * outgrow it; a slot is set before any route leads to it and cleared before the peer is
 * freed. */
struct tl_peer_map {
	uint32_t cap;
	_Atomic(struct tl_peer *) slot[];
};

/* An index-table entry out of the table, waiting for its grace period: its data (a keypair,
 * wiped and freed by tl_dp.index_reclaim) and its key slot in the table (< 0: none), which the
 * table keeps until then (a lock-free table frees no slot on delete). */
struct tl_dp_retired {
	void *data;
	int32_t pos;
};

/* A packet a worker staged for a peer, on its way to the control plane. */
struct tl_staged {
	struct tl_peer *peer;
	struct rte_mbuf *m;
};

/* The WAN interface's addresses (all but IPv6 link-local) as the control plane last saw them
 * (ctrl/wanaddr.c): n4 IPv4 then n6 IPv6 addresses, each family sorted (memcmp order) for
 * lookups, and each family's first as the kernel listed it, the source of frames to a peer
 * whose packets named none of ours yet. Published whole; the old one is freed after an RCU
 * grace period, so a worker reads it without a lock within its round. */
struct tl_addrset {
	uint32_t n4, n6;
	uint8_t first4[4], first6[16];
	uint8_t (*a4)[4];
	uint8_t (*a6)[16];
};

/* Per port constants for building frames. */
struct tl_port_ops;

struct tl_port_info {
	uint16_t port_id;
	const struct tl_port_ops *ops;   /* the port's kind (port.h); NULL: an ethdev */
	void *priv;                      /* the kind's own state of the port (port.h tl_port_open) */
	bool src_by_kernel;       /* the kernel picks a frame's outer source address (a socket
				   * port): the frame leaves it unspecified (tl_pkt_wan_source) */
	uint8_t mac[6];
	/* The WAN's addresses while the control plane follows them (tl_pkt_wan_local); NULL: the
	 * fixed ip4/ip6 below are the port's. */
	_Atomic(const struct tl_addrset *) addrs;
	uint8_t ip4[4];        /* fixed source address for outer IPv4 (WAN) / ICMP errors (LAN) */
	uint8_t ip6[16];
	bool has_ip4, has_ip6;
	uint8_t peer_mac[6];   /* host mode LAN: the host end of the veth */
	bool fixed_peer_mac;
};

/* Counters of one thread (worker or control plane), written by that thread only. */
struct tl_counters {
	uint64_t drops[TL_DROP_MAX];
	uint64_t rx[TL_PORT_MAX], tx[TL_PORT_MAX];
	uint64_t to_ctrl;          /* handshake messages handed to the control plane */
	uint64_t consumed;         /* keepalives and handshake messages taken by us */
	uint64_t staged;           /* inner packets parked while no session */
	uint64_t unstaged;         /* staged packets sent after the handshake */
	uint64_t from_ctrl;        /* frames built by the control plane and sent */
	uint64_t slowpath_rx;      /* datagrams the kernel reassembled for the listen port (worker) */
	/* The control plane's own account (tl_ctrl_balance in ctrl/stats.h): handshake
	 * messages it dropped; staged packets dropped (worker: evicted by a newer one; control
	 * plane: expired, peer removed, not sendable); frames it put on a control TX ring;
	 * datagrams it read from the kernel's listen-port sockets, and dropped of those. */
	uint64_t hs_drops, staged_drops, built, slowpath_read, slowpath_drops;
	uint64_t backpressure[TL_PORT_MAX];   /* rounds where the egress queue held packets */
	/* Per-port accounting (see tl_conservation in dataplane/balance.h): drops of packets
	 * received on a port before they reach a queue, drops at the dequeue of a port's queue,
	 * and ICMP errors the LAN path generated into the LAN queue. */
	uint64_t rx_drops[TL_PORT_MAX], deq_drops[TL_PORT_MAX];
	uint64_t icmp_errors;
	uint64_t fragmented;       /* LAN IPv4 packets without DF above the MTU, split */
	uint64_t fragments;        /* the fragments made of them */
	uint64_t csum_completed;   /* LAN packets whose partial TCP/UDP checksum we completed */
	uint64_t held;             /* now: decrypted packets waiting for a LAN next-hop MAC */
	uint64_t busy_polls, idle_polls;
	uint64_t wakeups;          /* blocking idle rounds ended by an event (not the timeout) */
	uint64_t shaper_sleeps;    /* idle rounds slept to the shaper's next send slot */
	uint64_t busy_ns, loop_ns;         /* time in rounds that did work / in all rounds */
	/* The crypto jobs (crypt.h): jobs and packets this worker sealed or opened, for
	 * any queue owner; packets of this owner's queues in jobs now (a gauge); rounds this
	 * owner had packets but no free job, so it stopped reading (backpressure). */
	uint64_t crypto_jobs, crypto_pkts;
	uint64_t inflight[TL_DIR_MAX];
	uint64_t crypto_full[TL_DIR_MAX];
} __rte_cache_aligned;

/* Reads a counter of another thread: its owner is the only writer (aligned 64-bit stores),
 * readers on any thread load it relaxed, never torn. */
static inline uint64_t tl_cnt_read(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* Neighbour table key (gateway mode): a LAN next-hop address, not a destination. */
struct tl_neigh_key {
	uint8_t family;
	uint8_t pad[3];
	uint8_t ip[16];
};

/* Unaligned loads: frame headers sit at any 2-byte offset. */
static inline uint32_t tl_load32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* MACs travel through rte_hash data pointers packed in the low 48 bits. */
static inline uintptr_t tl_mac_pack(const uint8_t mac[6])
{
	uint64_t v = 0;

	for (int i = 0; i < 6; i++)
		v = (v << 8) | mac[i];
	return (uintptr_t)(v | (1ull << 48));   /* never NULL */
}

static inline void tl_mac_unpack(uint8_t mac[6], uintptr_t v)
{
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (8 * (5 - i)));
}

struct tl_lanfib;
struct tl_worker;

/* Everything the dataplane needs, built by the control plane before workers start. */
struct tl_dp {
	unsigned n_workers;
	/* Queue pairs of each port (both ports the same): worker q < n_queues owns RX/TX queue q
	 * of both ports and their egress queues; every worker takes crypto jobs. */
	unsigned n_queues;
	_Atomic uint16_t listen_port;       /* tl_dp_listen_port; changed at run time by `wg set` */
	uint16_t mtu;
	bool host_mode;
	struct tl_dp_limits limits;
	struct tl_port_info port[TL_PORT_MAX];
	_Atomic(struct tl_table *) table;    /* allowed IPs -> peer id (route.h) */
	_Atomic(struct tl_peer_map *) peers; /* peer id -> peer */
	/* Local index -> keypair (lock-free readers); replaced by a larger one as sessions grow
	 * (tl_dp_index_grow). */
	_Atomic(struct rte_hash *) index_table;
	uint32_t index_cap;                  /* its size; the control plane's */
	rte_hash_free_key_data index_reclaim;
	uint64_t name_gen;                   /* makes DPDK object names unique (control plane) */
	struct rte_hash *neigh_table;        /* LAN next hop (tl_neigh_key) -> MAC packed in uintptr_t */
	_Atomic(struct tl_lanfib *) lanfib;  /* LAN routes (dataplane/lanfib.h), gateway mode */
	/* TCP flows' round trips (dataplane/flowrtt.h): the WAN queues start samples, the decap
	 * path ends them; the WAN queues' law reads them. */
	struct tl_flowrtt *flowrtt;
	struct rte_rcu_qsbr *qsbr;
	struct rte_ring *hs_ring;            /* handshake frames -> control plane (MP/SC) */
	struct rte_ring *neigh_req;          /* tl_neigh_key elements: next hops to resolve (MP/SC) */
	struct rte_ring *crypto_ring;        /* crypto jobs waiting for a worker (MP/MC) */
	/* struct tl_staged: packets staged for peers, to the control plane (MP/SC), room for
	 * every buffer of stage_pool. */
	struct rte_ring *stage_ring;
	struct tl_worker *worker[TL_MAX_WORKERS];   /* set by tl_worker_init: whom to wake */
	/* The control plane's wake-up (tl_dp_kick_ctrl): an eventfd it waits on (-1: none),
	 * whether it is about to sleep or sleeps, and a count of the kicks it compares before
	 * sleeping, so that no kick is lost between its last look and its sleep. */
	int ctrl_kick_fd;
	atomic_bool ctrl_sleeping;
	_Atomic unsigned ctrl_kicks;
	_Atomic unsigned n_blocked;          /* workers blocked in poll() now */
	/* Each port's shaper clock, shared by its egress queues (shaper.h). */
	struct tl_shaper_port shaper_port[TL_PORT_MAX];
	struct rte_mempool *ctrl_pool;       /* frames the control plane builds */
	struct rte_mempool *hs_pool;         /* copies of handshake messages for the control plane */
	struct rte_mempool *stage_pool;      /* copies of packets waiting for a session */
	/* Egress queues (one per worker and port): parameters at start, and how many packets
	 * one queue of each port may hold, which the port RX pools were sized for. */
	struct tl_aqm_params aqm_init[TL_PORT_MAX];
	struct tl_shaper_params shaper_init[TL_PORT_MAX];
	uint32_t queue_cap[TL_PORT_MAX];
	/* Bumped by the control plane whenever a keypair retires, after it left the index table:
	 * a worker that sees it change drops the key copies of its AEAD context before its next
	 * burst (and can no longer find the keypair). */
	_Atomic uint64_t key_gen;
	/* Entries taken out of the index table whose grace period has not ended (control plane,
	 * tl_dp_index_retire): [0, n_sealed) wait for the one that began at retire_token, the rest
	 * for the next. */
	struct tl_dp_retired *retired;
	uint32_t n_retired, n_sealed, cap_retired;
	uint64_t retire_token;
	volatile bool stop;
};

/* Wakes the control plane for work a worker handed it (a handshake message, a next hop to
 * resolve) or a peer wish it set (want_handshake, next_confirmed): the write happens only
 * while the control plane sleeps, once per sleep. */
static inline void tl_dp_kick_ctrl(struct tl_dp *dp)
{
	static const uint64_t one = 1;

	atomic_fetch_add_explicit(&dp->ctrl_kicks, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);   /* pairs with the control loop's before it sleeps */
	if (atomic_load_explicit(&dp->ctrl_sleeping, memory_order_relaxed) &&
	    atomic_exchange_explicit(&dp->ctrl_sleeping, false, memory_order_relaxed) && dp->ctrl_kick_fd >= 0 &&
	    write(dp->ctrl_kick_fd, &one, sizeof(one)) < 0) {
		/* Only a saturated counter fails, and then the control plane is being woken anyway. */
	}
}

/* A worker asks for a handshake with the peer (no usable session, or a rekey is due); the
 * control plane is woken when the wish is new. */
static inline void tl_peer_want_handshake(struct tl_dp *dp, struct tl_peer *peer)
{
	if (!atomic_exchange_explicit(&peer->want_handshake, true, memory_order_acq_rel))
		tl_dp_kick_ctrl(dp);
}

/* The UDP port of the WAN (host order): read by the workers for every frame, written only by
 * the control plane (the device change, ctrl/devchange.c), so a relaxed load is enough. */
static inline uint16_t tl_dp_listen_port(const struct tl_dp *dp)
{
	return atomic_load_explicit(&dp->listen_port, memory_order_relaxed);
}

/* The peer with this id, or NULL (any thread; a worker within its round). */
static inline struct tl_peer *tl_dp_peer(struct tl_dp *dp, uint32_t id)
{
	struct tl_peer_map *m = atomic_load_explicit(&dp->peers, memory_order_acquire);

	return id < m->cap ? atomic_load_explicit(&m->slot[id], memory_order_acquire) : NULL;
}

static inline struct rte_hash *tl_dp_index(struct tl_dp *dp)
{
	return atomic_load_explicit(&dp->index_table, memory_order_acquire);
}

/* dp.c: creates the shared objects of dp (n_workers set) and frees them. reclaim wipes and
 * frees a keypair taken out of the index table once its RCU grace period is over (below);
 * tl_dp_free reclaims the ones still waiting (the workers have stopped). */
int tl_dp_create(struct tl_dp *dp, rte_hash_free_key_data reclaim);
/* Buffers of the control plane's pools tl_dp_create makes (their data room follows dp->mtu,
 * as the ports' do): the EAL memory counts them. */
unsigned tl_dp_pool_bufs(void);
void tl_dp_free(struct tl_dp *dp);
/* Control plane (the control thread is not an RCU reader): retirement in batches, one grace
 * period for every entry retired meanwhile, however many.
 *
 * tl_dp_index_retire takes index's entry (data) out of the index table at once; workers that
 * found it before may still use it, so its key slot and data wait for the grace period.
 * Without memory to queue it, the grace period is waited for here.
 * tl_dp_retire_poll never blocks: reclaims the entries whose grace period ended and starts
 * one (rte_rcu_qsbr_start) for those retired since. True while some still wait: poll again.
 * tl_dp_synchronize waits for a grace period (rte_rcu_qsbr_synchronize): afterwards no worker
 * holds anything unpublished before it, and every entry retired so far is reclaimed. */
void tl_dp_index_retire(struct tl_dp *dp, uint32_t index, void *data);
bool tl_dp_retire_poll(struct tl_dp *dp);
void tl_dp_synchronize(struct tl_dp *dp);
struct rte_hash *tl_dp_hash_new(const char *name, uint32_t entries, uint32_t key_len, bool lock_free);
/* A hash like h with room for entries, holding what h holds (h is left as it was). */
struct rte_hash *tl_dp_hash_copy(struct rte_hash *h, const char *name, uint32_t entries, uint32_t key_len,
				 bool lock_free);
/* Whether one more entry would make a hash of cap entries three quarters full (the rule every
 * table here grows by). tl_dp_hash_double replaces a control-plane hash (one writer, no
 * lock-free readers) by a copy of twice its size, named prefix<gen>: 0, or -1 out of memory
 * (it stays). */
bool tl_dp_hash_crowded(struct rte_hash *h, uint32_t cap);
int tl_dp_hash_double(struct rte_hash **h, uint32_t *cap, const char *prefix, uint64_t *gen, uint32_t key_len);
/* Control plane: the peer map has a slot for id (a larger one published if needed, after a
 * grace period: tl_dp_synchronize). 0 or -1. */
int tl_dp_peers_reserve(struct tl_dp *dp, uint32_t id);
/* Control plane: the index table replaced by one twice its size when it is more than about
 * three quarters full. 0 (room enough, or grown) or -1 (out of memory: the old one stays). */
int tl_dp_index_grow(struct tl_dp *dp);

#endif
