/* The tunless device: one instance of the daemon, owned by the control plane (EAL main
 * lcore). Holds the configuration, our identity, the peers and the dataplane objects. */
#ifndef TL_DEVICE_H
#define TL_DEVICE_H

#include <pthread.h>
#include <sys/queue.h>

#include <rte_dev.h>

#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "common/evloop.h"
#include "config/config.h"
#include "ctrl/ports.h"
#include "dataplane/dp.h"
#include "dataplane/worker.h"

struct tl_nl;
struct tl_aips;
struct tl_readmodel;
struct tl_lanmirror;
struct tl_wanaddr_ctl;
struct tl_unix_server;
struct tl_server;
struct tl_parfor;

/* The request servers of a device (api/server.h). */
enum { TL_SERVER_UAPI, TL_SERVER_CTLAPI, TL_SERVER_METRICS, TL_SERVER_MAX };
struct tl_ratelimit;
struct tl_ctlapi;
struct tl_metrics;
struct rte_tel_data;

/* Control-plane half of a peer; the shared half is pc->dp. */
struct tl_peer_ctrl {
	TAILQ_ENTRY(tl_peer_ctrl) link;
	struct tl_peer *dp;
	struct tl_cfg_peer cfg;            /* allowed_ips owned here */
	struct tl_handshake hs;
	uint64_t hs_first_attempt_ns;      /* 0 = not trying to handshake */
	uint64_t hs_last_sent_ns;          /* last handshake message sent (initiation, response) */
	uint64_t hs_retry_ns;              /* REKEY_TIMEOUT + jitter for the next retry */
	uint64_t last_session_ns;          /* monotonic, last completed handshake */
	uint64_t last_handshake_unix_ns;   /* realtime, for wg show */
	uint64_t last_keepalive_sent_ns;
	/* Timers armed from the workers' event stamps (0 = disarmed), and the stamps as the
	 * previous tick saw them. */
	uint64_t keepalive_armed_ns, new_hs_armed_ns;
	uint64_t seen_rx_data_ns, seen_tx_any_ns, seen_tx_data_ns, seen_rx_auth_ns;
	uint64_t handshakes;               /* completed */
	uint64_t ep_resolve_ns;            /* next time to try to resolve the endpoint MAC */
	struct rte_ring *staged;           /* packets waiting to be sent (send.c), made when needed */
	uint32_t aips_cap;                 /* room in cfg.allowed_ips */
	uint32_t n_index;                  /* entries of the control plane's index table naming it */
	bool doomed;                       /* removed by the change being applied (peer_ops.c) */
	bool fresh;                        /* created by it */
	bool active;                       /* on the timers' active list (timers.c) */
	TAILQ_ENTRY(tl_peer_ctrl) active_link;
};

TAILQ_HEAD(tl_peer_list, tl_peer_ctrl);

/* What an index in our handshake/session space refers to (control plane only). */
struct tl_index_ref {
	struct tl_peer_ctrl *pc;
	bool is_handshake;
};

struct tl_device {
	struct tl_config *cfg;
	struct tl_identity id;
	struct tl_cookie_checker cookies;
	struct tl_dp dp;
	struct tl_worker workers[TL_MAX_WORKERS];
	unsigned worker_lcores[TL_MAX_WORKERS];
	struct tl_port_ctl ports[TL_PORT_MAX];
	struct tl_peer_list peers;
	uint32_t n_peers;
	/* peer.c: public key -> struct tl_peer_ctrl (grows by doubling), and the peer ids given
	 * back by removed peers. */
	struct rte_hash *peer_keys;
	uint32_t peer_keys_cap;
	uint32_t *free_ids, n_free_ids, cap_free_ids, next_id;
	struct tl_aips *aips;              /* the routing table's two copies, changes in progress (aips.c) */
	struct tl_readmodel *rm;           /* the read model's published view (stats.c) */
	struct tl_peer_list active;        /* peers whose timers run (timers.c) */
	uint32_t n_active, sweep_id;
	uint64_t staged_queued;            /* staged packets in the peers' control-plane queues */
	pthread_mutex_t lock;              /* peers list vs. telemetry thread */
	struct rte_hash *ctrl_index;       /* u32 index -> struct tl_index_ref* (ctrl only, grows) */
	uint32_t ctrl_index_cap;
	struct tl_ratelimit *ratelimit;    /* handshakes per source under load */
	struct tl_parfor *hs_pool;         /* handshake_threads helpers computing handshakes (handshake.c) */
	cpu_set_t cpus;                    /* where the daemon may run (read as the device comes up,
					    * before EAL pins this thread): host mode's RPS, the
					    * lcores', the handshake threads' CPUs */
	struct tl_counters cnt;            /* control-plane drops and events */
	struct tl_dp_aead *aead;           /* control plane's own (keepalives, staged) */
	struct tl_nl *nl;
	struct tl_lanmirror *lanmirror;    /* gateway mode: LAN routes and neighbours (lanmirror.c) */
	struct tl_wanaddr_ctl *wanaddr;    /* the WAN interface's addresses (wanaddr.c) */
	struct tl_unix_server *uapi;       /* wg UAPI socket and its clients (uapi.c) */
	struct tl_ctlapi *ctlapi;          /* YAML control API on /run/tunless/<name>.sock (ctlapi.c) */
	struct tl_metrics *metrics;        /* Prometheus text over HTTP (metrics.c) */
	struct tl_evloop *loop;            /* the control loop's epoll set (loop.c) */
	/* Called at the points a long step of the control thread passes (a request over many
	 * peers): the daemon feeds the watchdog there (daemon/notify.c). NULL: nothing. */
	void (*progress)(struct tl_device *dev);
	struct tl_server *servers[TL_SERVER_MAX];   /* the request servers running, for the loop's ticks */
	char host_if[IF_NAMESIZE];         /* host mode: the applications' end of the veth */
	char dp_if[IF_NAMESIZE];           /* host mode: the dataplane's end */
	int host_ifindex;                  /* host mode: host_if's index, 0 until it is set up */
	int udp_fd[2];                     /* listen port held in the kernel: v4, v6 */
	uint32_t udp_ovfl[2];              /* their running kernel drop counts, last read */
	struct tl_evitem udp_item[2];      /* udp_fd in the control loop */
	bool udp_blocked;                  /* the slow-path ring was full: the sockets wait (udpsock.c) */
	uint64_t under_load_until_ns;
	uint64_t table_gen;
	uint64_t handshakes_sent, handshakes_received, cookies_sent;
	uint64_t start_ns;                 /* when the device came up (uptime) */
	struct tl_worker_load {            /* each worker's busy share over the last second (stats.c) */
		uint64_t busy_ns, loop_ns, percent;
	} load[TL_MAX_WORKERS];
};

#define TL_NS 1000000000ull

/* A point a long step of the control thread passes: the watchdog's (tl_device.progress). */
static inline void tl_device_progress(struct tl_device *dev)
{
	if (dev->progress)
		dev->progress(dev);
}

/* device.c: the shared objects of the dataplane and the control plane (dp.n_workers set);
 * free is safe on a half-made device. */
int tl_device_objects_create(struct tl_device *dev);
void tl_device_objects_free(struct tl_device *dev);

#endif
