/* The one read model (stats.c): every observer (the control API's show, the DPDK telemetry
 * commands, the Prometheus text, the UAPI's get) fills these structs and renders their
 * fields by the tables of api/stats_fields.h, so a value has one name and one meaning in
 * every output. Filling reads counters that their owners write (tl_cnt_read) and may run on
 * any thread. Also the conservation balances and the sums they share.
 *
 * The peers' configuration (keys, names, allowed IPs in order, keepalives) is read from a
 * published view, never from the write model, whose lists the control thread reallocates
 * as it changes them: tl_stats_publish (the control thread, after each committed change:
 * tl_aips_publish calls it) builds a new immutable view, swaps it in and lets go of the old
 * one, which is freed by the last reader holding it. A publish makes new records for the
 * peers that changed only; the others are shared with the view before, and a record no view
 * holds any more is freed by a later publish once no older view is left. A reader takes a
 * reference on the current view (a pointer read under a mutex held for that alone) and reads
 * the counters of its peers live: one walk of the peer list under dev->lock, copying
 * counters only, which is as long as a reader ever holds the control thread up. */
#ifndef TL_CTRL_STATS_H
#define TL_CTRL_STATS_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/stats_fields.h"
#include "common/key.h"
#include "ctrl/device.h"
#include "dataplane/balance.h"
#include "dataplane/lcore.h"

#define TL_STATS_FIELD(id, kind, unit, prom, label, help) uint64_t id;

struct tl_stats_device {
	char name[IF_NAMESIZE], mode[8], public_key[45], version[24];
	TL_STATS_DEVICE(TL_STATS_FIELD)
};

struct tl_stats_port {
	const char *port;                  /* "wan", "lan" */
	char iface[IF_NAMESIZE];
	TL_STATS_PORT(TL_STATS_FIELD)
};

struct tl_stats_queue {
	const char *port;
	unsigned worker;
	TL_STATS_QUEUE(TL_STATS_FIELD)
};

struct tl_stats_worker {
	unsigned worker;
	TL_STATS_WORKER(TL_STATS_FIELD)
};

struct tl_stats_peer {
	uint32_t id;                       /* the dataplane's peer id (telemetry's peer<id>) */
	char name[32], public_key[45], endpoint[64];   /* endpoint "" until known */
	char *allowed_ips;                 /* "a/n,b/m" in the order added, malloc'd (NULL out of memory) */
	uint64_t last_handshake_ns;        /* UNIX time in ns (the UAPI's sec and nsec), 0 = never */
	TL_STATS_PEER(TL_STATS_FIELD)
};

/* A field as the renderers see it: its declaration and where its value sits in the
 * section's struct. Each table ends with a zeroed entry. */
struct tl_stat_field {
	const char *id;
	enum tl_stat_kind kind;
	enum tl_stat_unit unit;
	const char *prom, *label, *help;
	size_t offset;
};

extern const struct tl_stat_field tl_stats_device_fields[], tl_stats_port_fields[], tl_stats_queue_fields[],
	tl_stats_worker_fields[], tl_stats_peer_fields[];

static inline uint64_t tl_stat_value(const void *s, const struct tl_stat_field *f)
{
	return *(const uint64_t *)((const char *)s + f->offset);
}


extern const char *const tl_stats_dir_names[TL_DIR_MAX];     /* "encap", "decap" */

void tl_stats_device(struct tl_device *dev, struct tl_stats_device *s);
/* 0, or -1 when the port is not running. */
int tl_stats_port(struct tl_device *dev, int role, struct tl_stats_port *s);
/* Queue (role, worker) of a queue owner (worker < n_queues); snap is scratch space that
 * keeps the snapshot read (the sojourn histogram). */
void tl_stats_queue(struct tl_device *dev, int role, unsigned worker, struct tl_stats_queue *s,
		    struct tl_queue_snapshot *snap);
void tl_stats_worker(struct tl_device *dev, unsigned worker, struct tl_stats_worker *s);
/* ---- the published view ---------------------------------------------------------------------- */

struct tl_stats_view;

/* With the device's objects (tl_aips_init, tl_aips_fini). 0 or -1. */
int tl_stats_init(struct tl_device *dev);
void tl_stats_fini(struct tl_device *dev);
/* Control thread: the write model changed pc's configuration (its allowed IPs, name,
 * keepalive; its creation or removal): the next publish looks at it. */
void tl_stats_touch(struct tl_device *dev, const struct tl_peer_ctrl *pc);
/* Control thread: the peers on the list (but those being removed, pc->doomed) and our key
 * published. The view before is taken with the peers touched and those added since (at the
 * list's end) made anew: a change costs the peers it changed, not the device's. Every peer is
 * looked at only when that cannot tell (a peer went without a touch, out of memory before):
 * tl_stats_full_builds counts those. 0, or -1 out of memory (the last view stays; the next
 * publish tries again). */
int tl_stats_publish(struct tl_device *dev);
uint64_t tl_stats_full_builds(struct tl_device *dev);
/* Any thread: a reference on the current view (NULL before the first publish), and its
 * release (NULL is fine). */
struct tl_stats_view *tl_stats_view_get(struct tl_device *dev);
void tl_stats_view_put(struct tl_stats_view *v);
size_t tl_stats_view_peers(const struct tl_stats_view *v);
/* The index in the view of the peer with this key, or SIZE_MAX. */
size_t tl_stats_view_find(const struct tl_stats_view *v, const uint8_t key[TL_KEY_LEN]);
/* Peers first.. of the view, at most count of them, into out: their configuration from the
 * view, their counters live; a peer removed since the view was published is left out.
 * Returns how many were written (tl_stats_peer_free each); *oom set if a string could not
 * be copied. Takes dev->lock for one walk of the peers. */
size_t tl_stats_view_read(struct tl_device *dev, const struct tl_stats_view *v, size_t first, size_t count,
			  struct tl_stats_peer *out, bool *oom);
void tl_stats_peer_free(struct tl_stats_peer *s);
/* Every peer of the current view, in list order, in a calloc'd array (*n of them; NULL with
 * *n 0 if none or out of memory: then *oom is set). Free with tl_stats_peers_free. */
struct tl_stats_peer *tl_stats_peers(struct tl_device *dev, size_t *n, bool *oom);
void tl_stats_peers_free(struct tl_stats_peer *v, size_t n);

/* Drops by reason as reported everywhere: the summed counters plus each port's imissed under
 * tl_stats_missed_reason. */
void tl_stats_drops(struct tl_device *dev, uint64_t drops[TL_DROP_MAX]);
/* What a port's imissed counts: kernel_socket_overflow on a udp port (its sockets' drop
 * count), xsk_ring_full on an AF_XDP port, nic_rx_missed on a NIC PMD port. */
enum tl_drop tl_stats_missed_reason(const struct tl_device *dev, int role);
/* Counters of every worker and of the control plane, summed. */
void tl_stats_counters_sum(const struct tl_device *dev, struct tl_counters *sum);

/* Once a second from the control loop: each worker's busy share over the last second. */
void tl_stats_tick(struct tl_device *dev, uint64_t now);

/* ---- conservation ---------------------------------------------------------------------------- */

/* One flow through the control plane: every packet that entered it (in) left it (out), was
 * dropped under a named reason (dropped), or is still held in a ring (held). */
struct tl_flow_balance {
	uint64_t in, out, dropped, held;
	int64_t balance;      /* in - out - dropped - held: 0 = exact */
};

enum tl_ctrl_flow {
	/* handshake messages: in = handed by the workers (to_ctrl), out = consumed by the control
	 * plane, held = in the handshake ring */
	TL_FLOW_HANDSHAKES,
	/* packets parked for a handshake: in = staged by the workers, out = sent once a session
	 * exists (unstaged), dropped = evicted, expired, peer removed or not sendable, held = in
	 * the peers' staged rings */
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

/* The control plane's balance per flow (takes dev->lock to walk the peers). Exact when the
 * dataplane and control plane are quiet; off by what is in flight while they work. */
void tl_ctrl_balance(struct tl_device *dev, struct tl_flow_balance out[TL_FLOW_MAX]);

#endif
