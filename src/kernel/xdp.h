/* Control-plane side of the tunless XDP programs (bpf/tl_wan.bpf.c, bpf/tl_lan.bpf.c):
 * locating the objects, clearing leftovers before a port starts, and writing the maps
 * of the program the net_af_xdp PMD attached. libbpf only; no DPDK.
 * All functions return 0 (or a documented count) on success and -errno on failure. */
#ifndef TL_KERNEL_XDP_H
#define TL_KERNEL_XDP_H

#include <stddef.h>
#include <stdint.h>

/* Writes a message into err (errlen bytes; nothing if err is NULL or errlen 0): the XDP and
 * tc programs' loaders report their failures this way. */
void tl_bpf_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* out[k] = the sum over CPUs of key k of the per-CPU array map fd, for k < n; -ENOENT if fd < 0. */
int tl_bpf_percpu_sums(int fd, uint32_t n, uint64_t *out);

#define TL_XDP_WAN_OBJECT "tl_wan.bpf.o"
#define TL_XDP_LAN_OBJECT "tl_lan.bpf.o"
#define TL_XDP_PROG_PREFIX "tl_"             /* names of our programs start with this */
#define TL_XDP_CFG_REDIRECT_ALL 1u           /* tl_xdp_set_cfg flags: steer all IP (host mode) */
#define TL_XDP_ROUTE_LOCAL 0xffffffffu       /* route value: the port's own address, never steered */

enum tl_xdp_stat {
	TL_XDP_STAT_REDIRECTED = 0,          /* handed to the AF_XDP socket */
	TL_XDP_STAT_PASSED = 1,              /* left to the kernel on purpose */
	TL_XDP_STAT_NO_SOCKET = 2,           /* meant for the socket, slot empty: passed */
	TL_XDP_STAT_MAX = 3
};

/* Path of an object: $TUNLESS_BPF_DIR, else the build dir if the file exists there, else
 * the install dir. out is filled in every case; returns -ENOENT if that file does not
 * exist, -ENAMETOOLONG if it does not fit. */
int tl_xdp_object_path(char *out, size_t len, const char *object_name);

/* Before starting an af_xdp port. 1: a program of ours (leftover of a crash) was attached
 * in some mode and has been detached; 0: nothing attached; -EBUSY: a foreign program is
 * attached (err says which and how to remove it; nothing is touched). */
int tl_xdp_clear_leftover(int ifindex, char *err, size_t errlen);

struct tl_xdp_maps {
	int cfg_fd, routes4_fd, routes6_fd, stats_fd;  /* -1 when the program has no such map */
};

/* After the port started: finds our program on ifindex and opens its maps by name.
 * -ENOENT if none of ours is attached. */
int tl_xdp_maps_open(int ifindex, struct tl_xdp_maps *m, char *err, size_t errlen);
void tl_xdp_maps_close(struct tl_xdp_maps *m);

/* listen_port in host order (0: steer nothing on WAN); flags TL_XDP_CFG_*. */
int tl_xdp_set_cfg(const struct tl_xdp_maps *m, uint16_t listen_port, uint32_t flags);
/* addr: 4 (AF_INET) or 16 (AF_INET6) bytes, network order; host bits are cleared.
 * Adding an existing prefix replaces its value. del: -ENOENT if absent. */
int tl_xdp_route_add(const struct tl_xdp_maps *m, int family, const uint8_t *addr,
		     uint8_t prefixlen, uint32_t value);
int tl_xdp_route_del(const struct tl_xdp_maps *m, int family, const uint8_t *addr,
		     uint8_t prefixlen);
/* out[TL_XDP_STAT_*], summed over CPUs. */
int tl_xdp_stats(const struct tl_xdp_maps *m, uint64_t out[TL_XDP_STAT_MAX]);

/* The WAN program's own addresses (maps tl_wan_addr4, tl_wan_addr6): it steers UDP to the
 * listen port only when the destination is one of them; the rest passes to the kernel. */
struct tl_xdp_addrmaps {
	int fd4, fd6;
};
/* After the WAN port started: opens both maps of our program on ifindex. -ENOENT (err says
 * which) if no program of ours is attached or it lacks them (an older object). */
int tl_xdp_addrmaps_open(int ifindex, struct tl_xdp_addrmaps *m, char *err, size_t errlen);
void tl_xdp_addrmaps_close(struct tl_xdp_addrmaps *m);
/* Brings the maps to the n4 IPv4 (4 bytes each) and n6 IPv6 (16 bytes each) addresses given,
 * network order, any order: what TL_XDP_ADDRS_PRUNE deletes every other address, and
 * TL_XDP_ADDRS_ADD adds these (both: exactly these). 0, or the first error (the rest is
 * still done). */
#define TL_XDP_ADDRS_PRUNE 1u
#define TL_XDP_ADDRS_ADD 2u
int tl_xdp_addrmaps_set(const struct tl_xdp_addrmaps *m, const uint8_t (*a4)[4], unsigned n4,
			const uint8_t (*a6)[16], unsigned n6, unsigned what);
/* The addresses in the maps, at most max (family AF_INET or AF_INET6, address in the first 4
 * or 16 bytes of addr): the count listed, or -errno. */
struct tl_xdp_addr {
	int family;
	uint8_t addr[16];
};
int tl_xdp_addrmaps_list(const struct tl_xdp_addrmaps *m, struct tl_xdp_addr *out, unsigned max);

/* Safety net on exit: detaches every program of ours on ifindex (all modes), leaves
 * foreign ones alone. Returns how many were detached. */
int tl_xdp_detach(int ifindex);

#endif
