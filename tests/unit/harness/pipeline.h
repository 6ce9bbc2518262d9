/* Worker-pipeline harness for unit tests: the real dataplane (decap, encap, the worker's
 * egress queues and AQM, tl_conservation) over two DPDK net_ring ports on a no-huge,
 * no-PCI EAL, driven round by round on the calling thread. No root, no network.
 *
 * Typical use:
 *
 *	tl_pl_eal_init(argv[0]);                       once per process
 *	struct tl_pl pl;
 *	tl_pl_setup(&pl, NULL);                        dp, WAN + LAN ports, one worker
 *	struct tl_peer *p = tl_pl_peer_add(&pl, 0, &endpoint);
 *	tl_pl_route_add(&pl, AF_INET, addr, 24, 0);   then tl_pl_routes_publish(&pl)
 *	struct tl_keypair *kp = tl_pl_keypair_add(&pl, p, local_index, remote_index);
 *	tl_pl_inject(&pl, TL_PORT_WAN, tl_pl_wan_data(&pl, &endpoint, kp, ctr, ip, len, NULL));
 *	tl_pl_run(&pl);                                rounds until the worker is idle
 *	n = tl_pl_collect(&pl, TL_PORT_LAN, frames, max);
 *	CHECK(tl_pl_drops_only(&pl, TL_DROP_replay, 1), ...);
 *	CHECK(tl_pl_balanced(&pl), ...);
 *	tl_pl_teardown(&pl);
 *	tl_pl_eal_fini();
 *
 * Our side: WAN port MAC TL_PL_WAN_MAC, addresses TL_PL_WAN_IP4 / TL_PL_WAN_IP6, UDP port
 * TL_PL_LISTEN_PORT; LAN port MAC TL_PL_LAN_MAC, host mode with the host end of the
 * link at TL_PL_HOST_MAC. Keys of a keypair are deterministic (tl_pl_key) so a test can
 * act as the peer: the peer seals with our recv_key and opens with our send_key.
 *
 * The worker's clock is virtual: pl.w.now_ns is set once at setup and only moves when a
 * test writes it. Keypairs are born at the clock's value unless a test sets birth_ns. */
#ifndef TL_TEST_PIPELINE_H
#define TL_TEST_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dataplane/dp.h"
#include "dataplane/packet.h"
#include "dataplane/route.h"
#include "dataplane/worker.h"

#define TL_PL_LISTEN_PORT 51820
#define TL_PL_MTU 1420
#define TL_PL_MAX_PEERS 8
#define TL_PL_MAX_KEYPAIRS 32
#define TL_PL_MAX_ROUTES 32
#define TL_PL_RING_SIZE 4096
#define TL_PL_MAX_WORKERS 4

extern const uint8_t TL_PL_WAN_MAC[6], TL_PL_LAN_MAC[6], TL_PL_HOST_MAC[6];
extern const uint8_t TL_PL_WAN_IP4[4], TL_PL_WAN_IP6[16];

struct tl_pl {
	struct tl_dp dp;
	struct tl_worker w;                  /* worker 0: owns the port queues */
	struct tl_worker xw[TL_PL_MAX_WORKERS - 1];   /* workers 1..: crypto jobs only */
	unsigned n_xw;
	struct rte_ring *rx[TL_PORT_MAX];    /* what a port receives: tests enqueue here */
	struct rte_ring *tx[TL_PORT_MAX];    /* what a port transmitted: tl_pl_collect */
	struct rte_mempool *pool;            /* port buffers (tl_buf_data_room): frames tests craft */
	struct tl_peer *peers[TL_PL_MAX_PEERS];
	struct tl_keypair *kps[TL_PL_MAX_KEYPAIRS];
	unsigned n_kps;
	struct tl_route_entry routes[TL_PL_MAX_ROUTES];
	unsigned n_routes;
	uint64_t table_gen;
	bool port_up[TL_PORT_MAX], worker_up, online;   /* what teardown must undo */
};

/* EAL on --no-huge, --no-pci, --no-shconf, a per-process --file-prefix. 0 or -1. */
int tl_pl_eal_init(const char *argv0);
/* rte_eal_cleanup and removal of the runtime directory. */
void tl_pl_eal_fini(void);

/* Options of tl_pl_setup; NULL = defaults (both address families on the WAN port,
 * default AQM, reject/rekey limits of the protocol). */
struct tl_pl_opts {
	bool no_ip4, no_ip6;                 /* the WAN port lacks that family */
	uint32_t aqm_limit;                  /* 0 = default */
	unsigned workers;                    /* 0 or 1: worker 0 only; more: pl->xw[], which
					      * the test drives (tl_crypt_work), any thread */
	uint16_t mtu;                        /* tunnel MTU, 0 = TL_PL_MTU; the port buffers are
					      * sized from it as the daemon sizes them */
};

/* One dataplane with WAN and LAN net_ring ports and worker 0, registered and online in
 * the RCU state on the calling thread. 0 or -1 (reason printed, nothing left to tear
 * down). One at a time. */
int tl_pl_setup(struct tl_pl *pl, const struct tl_pl_opts *opts);
/* Frees everything, including packets still in the port rings and keypairs; also after a
 * setup that succeeded and later steps (peers, routes) that failed. */
void tl_pl_teardown(struct tl_pl *pl);

/* A peer in slot id (< TL_PL_MAX_PEERS, its LPM next hop) with endpoint ep (NULL = none
 * known yet). Its routes are added with tl_pl_route_add. */
struct tl_peer *tl_pl_peer_add(struct tl_pl *pl, uint32_t id, const struct tl_endpoint *ep);
/* Allowed IPs: addr (4 or 16 bytes, network order) / len -> peer id. Takes effect with
 * tl_pl_routes_publish, which builds a new table and replaces the old one. 0 or -1. */
int tl_pl_route_add(struct tl_pl *pl, int family, const void *addr, uint8_t len, uint32_t peer_id);
int tl_pl_routes_publish(struct tl_pl *pl);

/* A keypair of peer in the index table under local_index, made peer->current, born at
 * pl->w.now_ns, keys tl_pl_key(local_index, 's' / 'r'). NULL on failure. */
struct tl_keypair *tl_pl_keypair_add(struct tl_pl *pl, struct tl_peer *peer, uint32_t local_index,
				     uint32_t remote_index);
/* The deterministic 32-byte key of a keypair: which = 's' (our send) or 'r' (our recv). */
void tl_pl_key(uint8_t key[32], uint32_t local_index, char which);

/* ---- frames ---------------------------------------------------------------------------- */

/* An inner IP packet into buf (room for len bytes): IPv4 (family AF_INET) or IPv6, UDP
 * from src to dst (4/16 bytes, network order), total length len (>= 28 / 48), payload
 * bytes derived from seed, checksums valid. Returns len, or 0 if it does not fit. */
uint16_t tl_pl_ip(uint8_t *buf, int family, const void *src, const void *dst, uint16_t len, uint32_t seed);

/* A LAN frame: Ethernet from TL_PL_HOST_MAC to TL_PL_LAN_MAC around an IP packet. */
struct rte_mbuf *tl_pl_lan_frame(struct tl_pl *pl, const uint8_t *ip, uint16_t len);

/* How a crafted WAN frame is wrapped. All zero = what a well-behaved peer sends to us:
 * to our WAN MAC and address of the endpoint's family, UDP checksum 0 on IPv4. */
struct tl_pl_wire {
	uint16_t trailer;                    /* Ethernet padding bytes after the IP packet */
	bool udp_cksum;                      /* compute the UDP checksum on IPv4 too */
	const uint8_t *dst_ip;               /* another destination address (4/16 bytes) */
	const uint8_t *dst_mac;              /* another destination MAC */
	uint16_t dst_port;                   /* another destination UDP port (0 = ours) */
	uint8_t ecn;                         /* outer ECN bits */
};

/* A WAN frame from the peer at ep (family, address, port, MAC) carrying the UDP payload
 * msg of len bytes (a handshake message, or anything). wire may be NULL. */
struct rte_mbuf *tl_pl_wan_frame(struct tl_pl *pl, const struct tl_endpoint *ep, const void *msg,
				 uint16_t len, const struct tl_pl_wire *wire);
/* A data message from the peer at ep on keypair kp: receiver kp->local_index, counter ctr,
 * the IP packet ip (len bytes, 0 = keepalive) padded to 16 and sealed with kp->recv_key
 * through the dataplane's AEAD. */
struct rte_mbuf *tl_pl_wan_data(struct tl_pl *pl, const struct tl_endpoint *ep, struct tl_keypair *kp,
				uint64_t ctr, const uint8_t *ip, uint16_t len, const struct tl_pl_wire *wire);
/* Opens a data message frame the WAN port sent, as the peer of kp would: checks the outer
 * headers go to ep from our address and port and the receiver is kp->remote_index, then
 * decrypts with kp->send_key into out (room for max bytes). Returns the plaintext length
 * (padded), or -1 with the reason in *why (a static string). */
int tl_pl_open_data(struct tl_pl *pl, const struct rte_mbuf *m, const struct tl_endpoint *ep,
		    const struct tl_keypair *kp, uint64_t *ctr, uint8_t *out, uint16_t max, const char **why);

/* ---- running and looking -------------------------------------------------------------- */

/* Puts a frame into the RX ring of port role (the worker receives it next round). */
void tl_pl_inject(struct tl_pl *pl, int role, struct rte_mbuf *m);
/* Worker rounds on the calling thread until a round finds no work (at most 10000).
 * Returns the rounds run. */
unsigned tl_pl_run(struct tl_pl *pl);
/* Takes up to max frames port role transmitted; the caller frees them. */
unsigned tl_pl_collect(struct tl_pl *pl, int role, struct rte_mbuf **out, unsigned max);
/* Frees everything the ports transmitted and what waits on dp->hs_ring. */
void tl_pl_discard(struct tl_pl *pl);

/* ---- the one-peer fixture of the pipeline tests -------------------------------------------
 * Peer 0 at an endpoint (TL_PL_PEER4 or TL_PL_PEER6), allowed IPs TL_PL_PEER_NET4/16 and
 * TL_PL_PEER_NET6/64 published, and a current keypair (TL_PL_LOCAL_INDEX, TL_PL_REMOTE_INDEX).
 * Hosts behind the peer: TL_PL_PEER_HOST4/6; hosts on our LAN: TL_PL_LAN_HOST4/6. */
#define TL_PL_LOCAL_INDEX 0x1001
#define TL_PL_REMOTE_INDEX 0x2001

extern const struct tl_endpoint TL_PL_PEER4, TL_PL_PEER6;
extern const uint8_t TL_PL_PEER_NET4[4], TL_PL_PEER_HOST4[4], TL_PL_LAN_HOST4[4];
extern const uint8_t TL_PL_PEER_NET6[16], TL_PL_PEER_HOST6[16], TL_PL_LAN_HOST6[16];

struct tl_pl_fixture {
	struct tl_pl pl;
	struct tl_peer *peer;
	struct tl_keypair *kp;
	const struct tl_endpoint *ep;
};

/* The pipeline (default options) with the peer at ep. 0, or -1 with everything torn down. */
int tl_pl_fixture_up(struct tl_pl_fixture *f, const struct tl_endpoint *ep);
void tl_pl_fixture_down(struct tl_pl_fixture *f);

/* Drops the worker counted, all reasons. */
uint64_t tl_pl_drops_total(const struct tl_pl *pl);
/* Exactly n drops under reason r and none under any other (n = 0, r = TL_DROP_MAX: no drop
 * at all). Prints the counts that differ. */
bool tl_pl_drops_only(const struct tl_pl *pl, enum tl_drop r, uint64_t n);
/* Fresh queue snapshots, then tl_conservation over the worker into out. */
void tl_pl_balance(struct tl_pl *pl, struct tl_port_balance out[TL_PORT_MAX]);
/* Both ports' balance is exactly 0 (prints the terms otherwise). */
bool tl_pl_balanced(struct tl_pl *pl);

#endif
