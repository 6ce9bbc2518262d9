/* What differs in DPDK's API between the releases tunless builds on (Debian 12: DPDK 22.11,
 * Debian 13: DPDK 24.11), in one place. meson.build checks the installed DPDK and writes
 * tl_build_config.h; code that meets one of these differences uses the names below. */
#ifndef TL_DPDK_COMPAT_H
#define TL_DPDK_COMPAT_H

#include "tl_build_config.h"

#include <rte_ip.h>
#include <rte_telemetry.h>

/* The 16 bytes of an IPv6 address field of struct rte_ipv6_hdr, as a uint8_t[16] (with the
 * field's const-ness): the field is uint8_t[16] up to DPDK 24.07, struct rte_ipv6_addr since. */
#if TL_HAVE_RTE_IPV6_ADDR
#define TL_IP6_ADDR(field) ((field).a)
#else
#define TL_IP6_ADDR(field) (field)
#endif

/* An IPv6 address (const uint8_t *) or array of them (uint8_t (*)[16]) as rte_lpm6_* and
 * rte_fib6_* take it: struct rte_ipv6_addr * since DPDK 24.11, the bytes before. */
#if TL_HAVE_RTE_IPV6_ADDR
#define TL_RTE_IP6(p) ((const struct rte_ipv6_addr *)(const void *)(p))
#else
#define TL_RTE_IP6(p) (p)
#endif

/* rte_tel_data_add_dict_u64 is deprecated since DPDK 23.03 for rte_tel_data_add_dict_uint (the
 * same arguments), which 22.11 lacks: the calls keep the old name, the new function where it
 * exists. <rte_telemetry.h> is included above, so its declarations keep their names. */
#if TL_HAVE_RTE_TEL_DATA_ADD_DICT_UINT
#define rte_tel_data_add_dict_u64 rte_tel_data_add_dict_uint
#endif

/* net_af_xdp's shared UMEM: the queues of AF_XDP ports given the same mempool (each port opened
 * with shared_umem=1) share one UMEM, so an mbuf received on one port is sent on the other from
 * where it lies; with a UMEM per port the PMD copies it into a buffer of its own UMEM first.
 * 1 with DPDK >= 23.11 (Debian 13's 24.11); Debian 12's 22.11 PMD refuses the devarg. Neither
 * release opens more than one queue on a veth: net_af_xdp counts an interface's queues as its
 * combined channels (ETHTOOL_GCHANNELS), and a veth has none, so it gets one (src/kernel/iface.c
 * counts them the same way). */
#define TL_AF_XDP_SHARED_UMEM TL_HAVE_AF_XDP_SHARED_UMEM

#endif
