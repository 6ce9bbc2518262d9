/* rtnetlink for the control plane (libmnl): veth for host mode, link/address/route
 * setup, route and neighbour lookups for next-hop MACs. One NETLINK_ROUTE socket,
 * synchronous requests with ack. Functions return 0 (or a documented value) on success
 * and -errno on failure, never print, and are not thread-safe.
 * Addresses are 4 (AF_INET) or 16 (AF_INET6) bytes in network order. */
#ifndef TL_KERNEL_NETLINK_H
#define TL_KERNEL_NETLINK_H

#include <stdint.h>

struct tl_nl;

struct tl_nl *tl_nl_open(void);          /* NULL with errno set on failure */
void tl_nl_close(struct tl_nl *nl);
/* Requests sent on this socket so far (any thread may read it). */
uint64_t tl_nl_requests(const struct tl_nl *nl);

/* veth pair; numtxqueues = numrxqueues = queues on both ends (0: kernel default). */
int tl_nl_veth_create(struct tl_nl *nl, const char *host_if, const char *peer_if,
		      unsigned queues);
int tl_nl_link_delete(struct tl_nl *nl, const char *ifname);   /* -ENODEV if absent */
/* up/noarp: 1 set, 0 clear, -1 keep; mtu: 0 keep. */
int tl_nl_link_set(struct tl_nl *nl, const char *ifname, int up, int mtu, int noarp);
/* Any output pointer may be NULL. */
int tl_nl_link_info(struct tl_nl *nl, const char *ifname, int *ifindex, uint8_t mac[6],
		    int *mtu);

/* Adds (or refreshes) an address; IPv6 addresses get IFA_F_NODAD. */
int tl_nl_addr_add(struct tl_nl *nl, int ifindex, int family, const uint8_t *addr,
		   uint8_t prefixlen);
/* Device route in the main table, proto static; an existing route is success. */
int tl_nl_route_add(struct tl_nl *nl, int ifindex, int family, const uint8_t *dst,
		    uint8_t prefixlen);
int tl_nl_route_del(struct tl_nl *nl, int ifindex, int family, const uint8_t *dst,
		    uint8_t prefixlen);                       /* -ESRCH if absent */
/* RTM_GETROUTE for dst: output interface and gateway (has_gw = 0 if on-link; gw is
 * zeroed then). -ENETUNREACH/-EHOSTUNREACH if no route. */
int tl_nl_route_get(struct tl_nl *nl, int family, const uint8_t *dst, int *oif,
		    int *has_gw, uint8_t gw[16]);

/* 1 and mac if the kernel has a usable entry (REACHABLE, STALE, DELAY, PROBE,
 * PERMANENT or NOARP with a 6-byte address), 0 if not, -errno on error. */
int tl_nl_neigh_get(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip,
		    uint8_t mac[6]);
/* Asks the kernel to resolve ip and keep it resolved: a managed entry (NTF_EXT_MANAGED,
 * kernel >= 5.16) which the kernel re-probes on its own; where that is refused, a one-shot
 * NTF_USE resolution instead (the caller then has to call again when the entry goes
 * stale). Returns 1 if managed, 0 if the one-shot fallback was used. */
int tl_nl_neigh_resolve(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip);
/* Deletes the entry if it is a managed one; 0 if deleted or not managed, -ENOENT if absent. */
int tl_nl_neigh_del_managed(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip);

#endif
