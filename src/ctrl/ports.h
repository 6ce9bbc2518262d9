/* The ports: set-up, counters, wake-up sockets, the listen port (ports.c). */
#ifndef TL_CTRL_PORTS_H
#define TL_CTRL_PORTS_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_dev.h>

#include "common/addr.h"
#include "config/config.h"
#include "dataplane/dp.h"
#include "kernel/xdp.h"

struct tl_device;
struct tl_tc;

/* A port as the control plane set it up. Only ports.c reads the XDP maps. */
struct tl_port_ctl {
	enum tl_port_driver driver;        /* the kind opened (the configuration's, auto resolved) */
	bool af_xdp;
	char iface[IF_NAMESIZE];
	int ifindex;
	uint16_t queues;
	int xsk_fd[TL_MAX_WORKERS];        /* AF_XDP socket of each queue (-1: unknown) */
	struct tl_xdp_maps maps;
	struct tl_tc *tc;                  /* a gateway's packet LAN port: its tc programs (gwlan.c) */
	bool started;
	char vdev_name[RTE_DEV_NAME_MAX_LEN];
};

struct rte_eth_stats;
extern const char *const tl_port_names[TL_PORT_MAX];   /* "wan", "lan" */
/* The kernel interface of a port (host mode's LAN: the dataplane's end of the veth; a
 * gateway's packet LAN port: the LAN interface, whose packets it takes through a veth). */
const char *tl_port_iface(const struct tl_device *dev, int role);
int tl_ports_setup(struct tl_device *dev, char *err, size_t errlen);
void tl_ports_teardown(struct tl_device *dev);
unsigned tl_ports_memory_mb(const struct tl_device *dev);   /* RX pools, for the EAL -m */
/* A port's counters as rte_eth_stats, whatever its kind. 0, or -1 if it is not running. */
int tl_port_stats(const struct tl_device *dev, int role, struct rte_eth_stats *st);
/* The sockets a worker owning queue of port role polls when idle (which: 0, 1), or -1. */
int tl_port_wake_fd(const struct tl_device *dev, int role, uint16_t queue, int which);
/* tl_iface_addrs callback: notes the interface's first address of each family in the struct
 * tl_port_info at arg, the source of the port's ICMP errors (link-local IPv6 is skipped). */
void tl_port_source_addr(void *arg, int family, const uint8_t *addr);
/* A socket port's GSO messages: read and cut into frames, sent holding several frames (0
 * on other ports). */
void tl_port_gso(const struct tl_device *dev, int role, uint64_t *rx, uint64_t *tx);
/* Moves the listen port at run time, in two steps so that the move can be one part of a
 * device change (devchange.h). Prepare binds the new port without letting go of the old
 * one: the sockets of every queue of a WAN port kind that holds them (udp; port.h), or the
 * kernel's UDP sockets that hold the port for an AF_XDP WAN port; 0, or an errno value
 * (EINVAL: port 0; EADDRINUSE; EBUSY: the workers have not taken the last move yet, ...)
 * with a log line and nothing changed. Then exactly one of: commit (cannot fail: the new sockets to the workers, the
 * WAN XDP steering, then the port the workers accept and send from) or abort (the new
 * sockets closed; nothing changed). Control thread. */
struct tl_port_move {
	uint16_t port, old;
	bool own_open;                        /* own_fds hold the WAN port's own new sockets */
	int own_fds[TL_MAX_WORKERS][2];       /* (a kind holding the listen port: udp) */
	int sock_fds[2];                      /* AF_XDP: the kernel sockets holding the port */
};
int tl_listen_port_prepare(struct tl_device *dev, uint16_t port, struct tl_port_move *m);
void tl_listen_port_commit(struct tl_device *dev, struct tl_port_move *m);
void tl_listen_port_abort(struct tl_device *dev, struct tl_port_move *m);
/* The LAN port's XDP program steers p to the dataplane (add: for peer_id) or no longer
 * (an AF_XDP LAN port; nothing for other kinds). Control thread. */
void tl_port_steer(struct tl_device *dev, const struct tl_prefix *p, uint32_t peer_id, bool add);

#endif
