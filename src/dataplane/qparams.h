/* Egress queue parameters in user units: the AQM (fq_codel semantics) and the shaper.
 * Plain C without DPDK, shared by the configuration, the control API and the dataplane,
 * which converts them into its own runtime form (ns, bytes per ns). */
#ifndef TL_QPARAMS_H
#define TL_QPARAMS_H

#include <stdbool.h>
#include <stdint.h>

#define TL_AQM_FLOWS_MAX     65536u
#define TL_AQM_QUANTUM_MIN   256u
#define TL_AQM_QUANTUM_MAX   (1u << 20)
#define TL_AQM_LIMIT_MAX     (1u << 20)
#define TL_AQM_MEMORY_MIN    (64u * 1024u)
#define TL_AQM_MEMORY_MAX    (1ull << 32)
#define TL_AQM_INTERVAL_MAX  100000000u   /* us: 100 s */
#define TL_AQM_FAST_RATE     1000000000ull /* bit/s: quantum_fast from this shaped rate up */

struct tl_aqm_params {
	uint32_t target_us;      /* CoDel target sojourn time (10000) */
	uint32_t interval_us;    /* CoDel interval (200000) */
	uint32_t quantum;        /* DRR quantum in bytes (1514) */
	/* The DRR quantum in bytes while the queue is not shaped below TL_AQM_FAST_RATE, when it
	 * is larger than quantum: a flow's run of up to this many bytes leaves in its turn, as
	 * a GSO packet leaves a fast device's queue whole (CAKE splits GSO packets only below
	 * 1 Gbit/s), so that a flow's segments reach the next hop together and it can merge
	 * them. 0 = quantum always. (65536) */
	uint32_t quantum_fast;
	uint32_t flows;          /* hash buckets, power of two (1024) */
	uint32_t limit;          /* hard limit in packets (10240) */
	uint64_t memory_limit;   /* hard limit in bytes of mbuf buffers (32 MiB) */
	bool ecn;                /* mark CE instead of dropping ECT packets (true) */
	/* The path's round-trip time, as CAKE's rtt: interval = rtt_us, target = rtt_us / 20
	 * (target_us and interval_us are then not used). 0: target_us and interval_us. With a
	 * shaper, the target is never below two frame times at its rate. (0) */
	uint32_t rtt_us;
	/* L4S (RFC 9331): an ECT(1) packet that waited at least this long is marked CE, the
	 * step that scalable congestion controls expect; ECT(0) and not-ECT packets keep the
	 * drop law. 0 = off; needs ecn. (1000) */
	uint32_t l4s_us;
	/* A TCP flow whose round trip the queue measured (its timestamps, dataplane/flowrtt.h)
	 * is judged against at least this percentage of it, up to half the interval: a classic
	 * sender on a long path reduces its window to 0.7 at each signal, and only a queue of
	 * about a fifth of its round trip keeps the path full meanwhile. The standing queue is
	 * the flow's own (other flows have their own queues). 0 = off: every flow gets the
	 * target. (20) */
	uint32_t flow_rtt_pct;
};

/* Token bucket on the real on-wire size of each frame (Ethernet header, FCS, preamble and
 * inter-frame gap included), so the queue builds in the AQM and not in a downstream
 * buffer. rate_bps 0 = no shaper. */
#define TL_SHAPER_RATE_MAX   (400ull * 1000 * 1000 * 1000)   /* 400 Gbit/s */
#define TL_SHAPER_BURST_MIN  1600u
#define TL_SHAPER_BURST_MAX  (64u << 20)
#define TL_WIRE_OVERHEAD     24u   /* FCS 4 + preamble/SFD 8 + inter-frame gap 12 */

struct tl_shaper_params {
	uint64_t rate_bps;       /* bits per second, 0 = off */
	uint32_t burst_bytes;    /* bucket depth; 0 = default: 1 ms at rate, >= 2 full frames */
};

/* Defaults of Linux fq_codel; those of the parameters it does not have are in their comments. */
struct tl_aqm_params tl_aqm_params_default(void);

/* NULL if p is usable, else "<field>: <rule>" naming the first field that breaks a rule. */
const char *tl_aqm_params_check(const struct tl_aqm_params *p);
const char *tl_shaper_params_check(const struct tl_shaper_params *p);

/* The bucket depth actually used: burst_bytes, or the default for rate_bps. */
uint32_t tl_shaper_burst(const struct tl_shaper_params *p);

#endif
