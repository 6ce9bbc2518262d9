/* The kernel's routes, neighbours and interface addresses as they change (libmnl): a
 * non-blocking rtnetlink socket subscribed to the IPv4/IPv6 groups of the kinds the caller
 * has ops for, full dumps of those kinds on a socket of their own, and each message parsed
 * into a plain event for the caller (src/ctrl/lanmirror.c keeps the gateway's LAN mirror with
 * it, src/ctrl/wanaddr.c the WAN's addresses). No DPDK, no device. Not thread-safe. */
#ifndef TL_KERNEL_RTMON_H
#define TL_KERNEL_RTMON_H

#include <stdbool.h>
#include <stdint.h>

/* A unicast route of the main table (of a multipath route its first hop). */
struct tl_rt_route {
	bool add;                  /* RTM_NEWROUTE; false: RTM_DELROUTE */
	bool replace;              /* NLM_F_REPLACE */
	uint8_t family, plen;
	uint32_t metric, oif;
	uint8_t dst[16];
	bool has_gw;
	uint8_t gw[16];
};

/* A neighbour entry. */
struct tl_rt_neigh {
	bool add;                  /* RTM_NEWNEIGH; false: RTM_DELNEIGH */
	uint8_t family;
	int ifindex;
	uint8_t ip[16];
	bool usable;               /* add with a MAC in a usable state (REACHABLE, STALE, ...) */
	uint8_t mac[6];
	bool failed_managed;       /* add, FAILED, and an entry NTF_EXT_MANAGED made */
};

/* An interface address (IFA_LOCAL, else IFA_ADDRESS). */
struct tl_rt_addr {
	bool add;                  /* RTM_NEWADDR; false: RTM_DELADDR */
	uint8_t family, plen;
	int ifindex;
	uint8_t ip[16];
	bool usable;               /* add, and not tentative or DAD-failed (IPv6): a source now */
};

/* A kind whose op is NULL is neither subscribed to nor dumped. */
struct tl_rtmon_ops {
	void (*route)(void *ctx, const struct tl_rt_route *r);
	void (*neigh)(void *ctx, const struct tl_rt_neigh *n);
	void (*addr)(void *ctx, const struct tl_rt_addr *a);
};

struct tl_rtmon;

/* Subscribes (the receive buffer asked for as rcvbuf bytes). NULL with errno on failure. */
struct tl_rtmon *tl_rtmon_open(const struct tl_rtmon_ops *ops, void *ctx, int rcvbuf);
void tl_rtmon_close(struct tl_rtmon *m);
int tl_rtmon_fd(const struct tl_rtmon *m);
/* Up to max notification datagrams read and handed to the ops. Returns how many were read;
 * *overrun is set when the kernel dropped notifications (ENOBUFS): dump again. */
unsigned tl_rtmon_read(struct tl_rtmon *m, unsigned max, bool *overrun);
/* Every route, neighbour and address (IPv4, IPv6; the kinds with ops) through the ops;
 * *requests counts the dump requests sent. 0, or -errno. */
int tl_rtmon_dump(struct tl_rtmon *m, uint64_t *requests);

#endif
