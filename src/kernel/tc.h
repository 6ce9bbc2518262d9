/* The tc programs of a gateway's LAN port of the packet kind (bpf/tl_lan_tc.bpf.c): loading
 * them, attaching them to the ingress of the LAN interface and of the veth pair's kernel end,
 * their route tries (the same keys and values as the XDP program's: kernel/xdp.h) and their
 * counters. libbpf only; no DPDK. Functions return 0 on success and -errno on failure. */
#ifndef TL_KERNEL_TC_H
#define TL_KERNEL_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/xdp.h"

#define TL_TC_LAN_OBJECT "tl_lan_tc.bpf.o"
/* Our filters: this handle and priority on the clsact ingress hook of each interface. */
#define TL_TC_HANDLE 0x7417u
#define TL_TC_PRIORITY 1u

/* Mirrors enum tl_tc_stat in bpf/tl_lan_tc.bpf.c. */
enum tl_tc_stat {
	TL_TC_STAT_STEERED = 0,   /* LAN -> tunless: redirected to the pair */
	TL_TC_STAT_PASSED = 1,    /* LAN -> the kernel's stack: not routed into the tunnel */
	TL_TC_STAT_SENT = 2,      /* tunless -> LAN: redirected out of the LAN interface */
	TL_TC_STAT_NO_TARGET = 3, /* no target set or the redirect refused (LAN: passed, tunless: dropped) */
	TL_TC_STAT_MAX = 4
};

extern const char *const tl_tc_stat_names[TL_TC_STAT_MAX];

struct bpf_object;

struct tl_tc {
	struct bpf_object *obj;
	int lan_ifindex, pair_ifindex;
	bool lan_attached, pair_attached;
	/* the route tries (routes4_fd, routes6_fd: for tl_xdp_route_add/del), the counters in
	 * stats_fd; cfg_fd -1. Own fds, closed by tl_tc_close. */
	struct tl_xdp_maps maps;
};

/* Before attaching: detaches a filter of ours (a program named tl_*) left at our handle and
 * priority on ifindex's ingress by an earlier run. 1 if one was, 0 if none; -EBUSY (err
 * says) if a foreign program holds that place. */
int tl_tc_clear_leftover(int ifindex, char *err, size_t errlen);

/* Loads the object, points its programs at each other's interfaces and attaches the LAN
 * program to lan_ifindex's ingress and the pair program to pair_ifindex's ingress (clsact
 * created where missing). On failure nothing stays attached. */
int tl_tc_open(struct tl_tc *t, int lan_ifindex, int pair_ifindex, char *err, size_t errlen);
/* Detaches both programs (the clsact qdisc stays: other filters may use it) and frees all. */
void tl_tc_close(struct tl_tc *t);
/* out[TL_TC_STAT_*], summed over CPUs. */
int tl_tc_stats(const struct tl_tc *t, uint64_t out[TL_TC_STAT_MAX]);

#endif
