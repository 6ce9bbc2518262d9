/* Egress queue parameters: defaults and range checks (see qparams.h). */
#include "dataplane/qparams.h"

struct tl_aqm_params tl_aqm_params_default(void)
{
	return (struct tl_aqm_params){
		.target_us = 10000,
		.interval_us = 200000,
		.quantum = 1514,
		.quantum_fast = 65536,
		.flows = 1024,
		.limit = 10240,
		.memory_limit = 32u << 20,
		.ecn = true,
		.rtt_us = 0,
		.l4s_us = 1000,
		.flow_rtt_pct = 20,
	};
}

const char *tl_aqm_params_check(const struct tl_aqm_params *p)
{
	if (p->target_us == 0 || p->target_us > TL_AQM_INTERVAL_MAX)
		return "target_us: must be 1..100000000 (100 s)";
	if (p->interval_us < p->target_us || p->interval_us > TL_AQM_INTERVAL_MAX)
		return "interval_us: must be >= target_us and <= 100000000 (100 s)";
	if (p->quantum < TL_AQM_QUANTUM_MIN || p->quantum > TL_AQM_QUANTUM_MAX)
		return "quantum: must be 256..1048576 bytes";
	if (p->quantum_fast && (p->quantum_fast < TL_AQM_QUANTUM_MIN || p->quantum_fast > TL_AQM_QUANTUM_MAX))
		return "quantum_fast: must be 0 (quantum always) or 256..1048576 bytes";
	if (p->flows == 0 || p->flows > TL_AQM_FLOWS_MAX || (p->flows & (p->flows - 1)))
		return "flows: must be a power of two in 1..65536";
	if (p->limit == 0 || p->limit > TL_AQM_LIMIT_MAX)
		return "limit: must be 1..1048576 packets";
	if (p->memory_limit < TL_AQM_MEMORY_MIN || p->memory_limit > TL_AQM_MEMORY_MAX)
		return "memory_limit: must be 65536..4294967296 bytes";
	if (p->rtt_us && (p->rtt_us < 20 || p->rtt_us > TL_AQM_INTERVAL_MAX))
		return "rtt_us: must be 0 (target_us and interval_us) or 20..100000000 (100 s)";
	if (p->l4s_us > TL_AQM_INTERVAL_MAX)
		return "l4s_us: must be 0 (off) or up to 100000000 (100 s)";
	if (p->flow_rtt_pct > 100)
		return "flow_rtt_pct: must be 0 (off) to 100";
	return 0;
}

const char *tl_shaper_params_check(const struct tl_shaper_params *p)
{
	if (p->rate_bps > TL_SHAPER_RATE_MAX)
		return "rate_bps: must be 0 (off) or up to 400000000000 bit/s";
	if (p->burst_bytes && (p->burst_bytes < TL_SHAPER_BURST_MIN || p->burst_bytes > TL_SHAPER_BURST_MAX))
		return "burst_bytes: must be 0 (default) or 1600..67108864 bytes";
	return 0;
}

uint32_t tl_shaper_burst(const struct tl_shaper_params *p)
{
	uint64_t b;

	if (p->burst_bytes)
		return p->burst_bytes;
	b = p->rate_bps / 8 / 1000;    /* 1 ms at rate */
	if (b < 2 * 1538)
		b = 2 * 1538;
	return b > TL_SHAPER_BURST_MAX ? TL_SHAPER_BURST_MAX : (uint32_t)b;
}
