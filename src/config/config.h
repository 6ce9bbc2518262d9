/* tunless configuration: loaded from YAML with a libcyaml schema, then one semantic pass.
 * The loaded form is plain C data with keys decoded and prefixes parsed; nothing here
 * touches the network. */
#ifndef TL_CONFIG_H
#define TL_CONFIG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/addr.h"
#include "common/key.h"
#include "dataplane/qparams.h"

#define TL_METRICS_PORT 9586      /* Prometheus text, when `metrics` is present */
#define TL_MAX_PEERS_CFG (1 << 20) /* peers of one device at most (the dataplane's TL_MAX_PEERS) */

enum tl_mode { TL_MODE_HOST, TL_MODE_GATEWAY };

/* af_xdp, pmd: any port; udp: a WAN port only; packet: a LAN port only (host and gateway mode);
 * auto (host mode's WAN when the file names no driver): af_xdp where the interface offers
 * zero-copy AF_XDP, else udp, decided when the port opens. */
enum tl_port_driver { TL_DRIVER_AF_XDP, TL_DRIVER_PMD, TL_DRIVER_UDP, TL_DRIVER_PACKET, TL_DRIVER_AUTO };

struct tl_cfg_port {
	bool present;
	char iface[IF_NAMESIZE];  /* kernel interface (af_xdp); for pmd: a label */
	enum tl_port_driver driver;
	char devargs[256];        /* pmd: full vdev/PCI devargs, e.g. "net_null0" */
	uint16_t queues;          /* RX/TX queue pairs, default = workers */
	bool zero_copy;           /* af_xdp: ask for zero-copy (default false: copy mode) */
	struct tl_aqm_params aqm;        /* egress AQM of this port (fq_codel defaults) */
	struct tl_shaper_params shaper;  /* egress shaper, rate 0 = off */
};

struct tl_cfg_peer {
	uint8_t public_key[TL_KEY_LEN];
	bool has_psk;
	uint8_t psk[TL_KEY_LEN];
	bool has_endpoint;
	struct tl_sockaddr endpoint;
	struct tl_prefix *allowed_ips;
	size_t n_allowed_ips;
	uint16_t persistent_keepalive;   /* seconds, 0 = off */
	char name[32];                   /* optional label, for humans */
};

struct tl_cfg_neighbour {
	struct tl_ip ip;
	uint8_t mac[6];
	bool on_wan;                     /* which port it belongs to */
};

/* Protocol timers. Production values are the protocol's (REFERENCE.md); a test config may
 * shorten them. Seconds, except the message counts. */
struct tl_cfg_timers {
	double rekey_after_time;         /* 120 */
	double reject_after_time;        /* 180 */
	double rekey_attempt_time;       /* 90 */
	double rekey_timeout;            /* 5 */
	double keepalive_timeout;        /* 10 */
	uint64_t rekey_after_messages;   /* 2^60 */
	uint64_t reject_after_messages;  /* 2^64 - 2^13 - 1 */
};

struct tl_config {
	char path[4096];                 /* file it came from */
	char name[IF_NAMESIZE];          /* instance name: host interface, socket names */
	enum tl_mode mode;
	uint8_t private_key[TL_KEY_LEN];
	uint16_t listen_port;            /* default 51820 */
	uint16_t mtu;                    /* tunnel MTU, default 1420 */
	struct tl_prefix *addresses;     /* host mode: on the host end of the veth */
	size_t n_addresses;
	unsigned workers;                /* default 1; auto: tl_cfg_workers_auto() */
	unsigned handshake_threads;      /* beside the control thread; default tl_cfg_handshake_threads_auto() */
	struct tl_cfg_port wan;          /* required */
	struct tl_cfg_port lan;          /* gateway mode: required; host mode: must be absent */
	struct tl_cfg_peer *peers;
	size_t n_peers;
	struct tl_cfg_neighbour *neighbours;  /* static next-hop overrides */
	size_t n_neighbours;
	struct tl_cfg_timers timers;
	size_t staged_packets;           /* per-peer staged queue, default 128 */
	char **eal_args;                 /* extra EAL arguments, NULL-terminated, may be NULL */
	size_t n_eal_args;
	struct {
		bool enabled;                /* `metrics` present */
		struct tl_sockaddr listen;   /* default 127.0.0.1:9586 */
		uint32_t peer_series_max;    /* per-peer series only up to this many peers (1000) */
	} metrics;
	/* What loads but deserves the operator's attention (a key file that group or others
	 * can read), one "<file>:<line>: <field>: <why>" per line; "" if nothing. */
	char warnings[1024];
};

/* Loads and validates path. On failure returns -1, leaves *out NULL and writes one line to
 * err: "<file>:<line>: <field>: <why>" (line 0 if the file itself could not be read). */
int tl_config_load(const char *path, struct tl_config **out, char *err, size_t errlen);
void tl_config_free(struct tl_config *cfg);   /* wipes key material */

/* The most workers a configuration may ask for (the dataplane's TL_MAX_WORKERS). */
#define TL_CFG_WORKERS_MAX 64

/* workers: auto: every CPU this process may use but one (the control lcore's), at least 1. */
unsigned tl_cfg_workers_auto(void);
/* handshake_threads: auto (the default): every CPU this process may use but one (the control
 * thread computes too), 0 on one CPU. */
unsigned tl_cfg_handshake_threads_auto(void);

/* What a frame carries beyond the tunnel MTU at most (dataplane/bufsize.h's TL_FRAME_OVERHEAD:
 * Ethernet, outer IPv6 and UDP, the data message's header and tag). */
#define TL_CFG_FRAME_OVERHEAD 94
/* Of an af_xdp port's buffer, what is not frame: the mempool object header (64), the mbuf
 * (128), RTE_PKTMBUF_HEADROOM (128) and the kernel's XDP_PACKET_HEADROOM (256). */
#define TL_CFG_AF_XDP_BUF_OVERHEAD 576
/* The largest tunnel MTU an af_xdp port carries: DPDK 22.11's net_af_xdp makes each buffer of
 * the port's pool one chunk of the socket's UMEM, and the kernel takes chunks of at most a page
 * (the EAL runs without huge pages): a page less TL_CFG_AF_XDP_BUF_OVERHEAD is the largest
 * frame, 3 520 bytes, and 3 426 the MTU, on 4 KiB pages. */
unsigned tl_cfg_af_xdp_mtu_max(void);

#endif
