/* The tunless device: one instance of the daemon, owned by the control plane (EAL main
 * lcore). Holds the configuration, our identity, the peers and the dataplane objects. */
#ifndef TL_DEVICE_H
#define TL_DEVICE_H

#include <pthread.h>
#include <sys/queue.h>

#include <rte_dev.h>

#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "config/config.h"
#include "kernel/xdp.h"
#include "dataplane/dp.h"
#include "dataplane/worker.h"

struct tl_nl;
struct tl_lanfib_ctl;
struct tl_uapi;
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
};

TAILQ_HEAD(tl_peer_list, tl_peer_ctrl);

/* What an index in our handshake/session space refers to (control plane only). */
struct tl_index_ref {
	struct tl_peer_ctrl *pc;
	bool is_handshake;
};

struct tl_port_ctl {
	bool af_xdp;
	char iface[IF_NAMESIZE];
	int ifindex;
	uint16_t queues;
	int xsk_fd[TL_MAX_WORKERS];        /* AF_XDP socket of each queue (-1: unknown) */
	struct tl_xdp_maps maps;
	bool started;
	char vdev_name[RTE_DEV_NAME_MAX_LEN];
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
	pthread_mutex_t lock;              /* peers list vs. telemetry thread */
	struct rte_hash *ctrl_index;       /* u32 index -> struct tl_index_ref* (ctrl only) */
	struct tl_ratelimit *ratelimit;    /* handshakes per source under load */
	struct tl_counters cnt;            /* control-plane drops and events */
	struct tl_dp_aead *aead;           /* control plane's own (keepalives, staged) */
	struct tl_nl *nl;
	struct tl_lanfib_ctl *lanfib;      /* gateway mode: LAN routes and neighbours (lanfib.c) */
	struct tl_uapi *uapi;              /* wg UAPI socket and its clients (uapi.c) */
	struct tl_ctlapi *ctlapi;          /* YAML control API on /run/tunless/<name>.sock (ctlapi.c) */
	struct tl_metrics *metrics;        /* Prometheus text over HTTP (metrics.c) */
	char host_if[IF_NAMESIZE];         /* host mode: the applications' end of the veth */
	char dp_if[IF_NAMESIZE];           /* host mode: the dataplane's end */
	int udp_fd[2];                     /* listen port held in the kernel: v4, v6 */
	uint32_t udp_ovfl[2];              /* their running kernel drop counts, last read */
	uint64_t under_load_until_ns;
	uint64_t table_gen;
	uint64_t handshakes_sent, handshakes_received, cookies_sent;
};

#define TL_NS 1000000000ull

/* device.c: the shared objects of the dataplane and the control plane (dp.n_workers set);
 * free is safe on a half-made device. */
int tl_device_objects_create(struct tl_device *dev);
void tl_device_objects_free(struct tl_device *dev);

/* peer.c */
int tl_peer_add(struct tl_device *dev, const struct tl_cfg_peer *cfg);
/* 0, or -1 when the routing table without the peer cannot be built: then nothing changed. */
int tl_peer_remove(struct tl_device *dev, struct tl_peer_ctrl *pc);
struct tl_peer_ctrl *tl_peer_find(struct tl_device *dev, const uint8_t pub[TL_KEY_LEN]);
int tl_table_publish(struct tl_device *dev);
/* Unit tests only (0 otherwise): the next this many routing table builds fail. */
extern unsigned tl_table_build_test_failures;
void tl_peer_set_endpoint(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_sockaddr *sa,
			  const uint8_t *mac);

/* session.c: keypairs and indices. tl_index_new returns 0 when no index is free. */
uint32_t tl_index_new(struct tl_device *dev, struct tl_peer_ctrl *pc, bool is_handshake);
void tl_index_free(struct tl_device *dev, uint32_t index);
void tl_index_drop_handshake(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_index_drop_peer(struct tl_device *dev, struct tl_peer_ctrl *pc);
struct tl_index_ref *tl_index_find(struct tl_device *dev, uint32_t index);
int tl_session_install(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_session_keys *k,
		       uint64_t now);
void tl_session_confirm(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_session_clear_all(struct tl_device *dev, struct tl_peer_ctrl *pc);
void tl_session_expire(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
/* The index table's RCU reclaim callback: wipes and frees a retired keypair. */
void tl_keypair_reclaim(void *arg, void *key_data);
/* Unit tests only (NULL otherwise): sees each keypair after its wipe, before it is freed. */
extern void (*tl_keypair_reclaim_test_hook)(const struct tl_keypair *kp);

/* handshake.c */
void tl_handshake_rx(struct tl_device *dev, struct rte_mbuf *m, uint64_t now);
/* Handles up to a burst of the messages waiting in the handshake ring; how many. */
unsigned tl_handshake_poll(struct tl_device *dev, uint64_t now);
int tl_handshake_initiate(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
int tl_send_frame(struct tl_device *dev, struct tl_peer_ctrl *pc, const void *msg, size_t len, uint64_t now);
void tl_send_keepalive(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
void tl_staged_flush(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
void tl_staged_drop(struct tl_device *dev, struct tl_peer_ctrl *pc, enum tl_drop why);

/* timers.c */
void tl_timers_run(struct tl_device *dev, uint64_t now);

/* neigh.c */
void tl_neigh_resolve_endpoints(struct tl_device *dev, uint64_t now);
int tl_neigh_lookup(struct tl_device *dev, int role, int family, const uint8_t *ip, uint8_t mac[6], bool ask);

/* ports.c */
struct rte_eth_stats;
int tl_ports_setup(struct tl_device *dev, char *err, size_t errlen);
void tl_ports_teardown(struct tl_device *dev);
unsigned tl_ports_memory_mb(const struct tl_device *dev);   /* RX pools, for the EAL -m */
/* A port's counters as rte_eth_stats, whatever its kind. 0, or -1 if it is not running. */
int tl_port_stats(const struct tl_device *dev, int role, struct rte_eth_stats *st);
/* The sockets a worker owning queue of port role polls when idle (which: 0, 1), or -1. */
int tl_port_wake_fd(const struct tl_device *dev, int role, uint16_t queue, int which);
/* Moves the listen port at run time: the kernel's UDP sockets are bound to the new port
 * first (so a port in use changes nothing), then the WAN XDP steering, then the port the
 * workers accept and send from. 0, or an errno value (EINVAL: port 0; EADDRINUSE, ...)
 * with a log line and nothing changed. Control thread. */
int tl_listen_port_set(struct tl_device *dev, uint16_t port);

/* hostmode.c */
int tl_host_setup(struct tl_device *dev, char *err, size_t errlen);
int tl_host_routes(struct tl_device *dev, bool add);
int tl_host_route(struct tl_device *dev, const struct tl_prefix *p, bool add);
void tl_host_teardown(struct tl_device *dev);

/* telemetry.c */
int tl_telemetry_register(struct tl_device *dev);
/* Registers a /tunless/... command behind the shutdown gate (all of ours go through it). */
int tl_telemetry_add(const char *path, int (*fn)(const char *cmd, const char *params, struct rte_tel_data *d),
		     const char *help);
/* Closes the gate: waits for a command in progress; later ones answer an error without
 * touching the device. Call before tearing anything down. */
void tl_telemetry_down(void);

#endif
