/* The sums every observer shares: counters and drops summed over the workers and the
 * control plane, the name of a port's missed frames by port kind, and the sojourn-time
 * histogram bounds. Read by metrics, telemetry and the control API. */
#include <rte_ethdev.h>

#include "ctrl/device.h"
#include "ctrl/metrics.h"
#include "ctrl/ports.h"

void tl_metrics_counters_sum(const struct tl_device *dev, struct tl_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned w = 0; w <= dev->dp.n_workers; w++) {
		const struct tl_counters *c = w < dev->dp.n_workers ? &dev->workers[w].cnt : &dev->cnt;

		for (int i = 0; i < TL_DROP_MAX; i++)
			sum->drops[i] += tl_cnt_read(&c->drops[i]);
		for (int p = 0; p < TL_PORT_MAX; p++) {
			sum->rx[p] += tl_cnt_read(&c->rx[p]);
			sum->tx[p] += tl_cnt_read(&c->tx[p]);
			sum->backpressure[p] += tl_cnt_read(&c->backpressure[p]);
			sum->rx_drops[p] += tl_cnt_read(&c->rx_drops[p]);
			sum->deq_drops[p] += tl_cnt_read(&c->deq_drops[p]);
		}
		sum->icmp_errors += tl_cnt_read(&c->icmp_errors);
		sum->held += tl_cnt_read(&c->held);
		sum->csum_completed += tl_cnt_read(&c->csum_completed);
		sum->fragmented += tl_cnt_read(&c->fragmented);
		sum->fragments += tl_cnt_read(&c->fragments);
		sum->to_ctrl += tl_cnt_read(&c->to_ctrl);
		sum->consumed += tl_cnt_read(&c->consumed);
		sum->staged += tl_cnt_read(&c->staged);
		sum->unstaged += tl_cnt_read(&c->unstaged);
		sum->from_ctrl += tl_cnt_read(&c->from_ctrl);
		sum->slowpath_rx += tl_cnt_read(&c->slowpath_rx);
		sum->hs_drops += tl_cnt_read(&c->hs_drops);
		sum->staged_drops += tl_cnt_read(&c->staged_drops);
		sum->built += tl_cnt_read(&c->built);
		sum->slowpath_read += tl_cnt_read(&c->slowpath_read);
		sum->slowpath_drops += tl_cnt_read(&c->slowpath_drops);
		sum->busy_polls += tl_cnt_read(&c->busy_polls);
		sum->idle_polls += tl_cnt_read(&c->idle_polls);
		sum->busy_ns += tl_cnt_read(&c->busy_ns);
		sum->loop_ns += tl_cnt_read(&c->loop_ns);
	}
}

void tl_metrics_drops(const struct tl_device *dev, uint64_t drops[TL_DROP_MAX])
{
	struct tl_counters sum;

	tl_metrics_counters_sum(dev, &sum);
	memcpy(drops, sum.drops, sizeof(sum.drops));
	for (int p = 0; p < TL_PORT_MAX; p++) {
		struct rte_eth_stats st = { 0 };

		if (tl_port_stats(dev, p, &st) == 0)
			drops[tl_metrics_missed_reason(dev, p)] += st.imissed;
	}
}

enum tl_drop tl_metrics_missed_reason(const struct tl_device *dev, int role)
{
	/* net_af_xdp reports as imissed the frames its socket had no buffer for (XDP_STATISTICS
	 * rx_dropped: the fill ring was empty because the RX ring, which holds as many, was not
	 * read; a frame arriving at a full RX ring is the same case); a NIC PMD
	 * reports frames its own RX ring had no room for. */
	if (dev->dp.port[role].udp || dev->dp.port[role].afp)   /* the sockets' drop counts */
		return TL_DROP_kernel_socket_overflow;
	return dev->ports[role].af_xdp ? TL_DROP_xsk_ring_full : TL_DROP_nic_rx_missed;
}

uint64_t tl_metrics_sojourn_bound(unsigned i)
{
	unsigned k = 10 + i / 2;

	return i % 2 ? 3ull << (k - 1) : 1ull << k;
}

/* AQM bucket j holds [lower(j), lower(j + 1)); the bound 2^k is lower(8(k-2)), 1.5 * 2^k is
 * lower(8(k-2) + 4) (src/dataplane/aqm.c). */
static unsigned bound_bucket(unsigned i)
{
	unsigned k = 10 + i / 2;

	return 8 * (k - 2) + (i % 2 ? 4 : 0);
}

uint64_t tl_metrics_sojourn_cumulative(const struct tl_aqm_stats *s, uint64_t cum[TL_METRICS_SOJOURN_BOUNDS])
{
	uint64_t seen = 0;
	unsigned j = 0;

	for (unsigned i = 0; i < TL_METRICS_SOJOURN_BOUNDS; i++) {
		unsigned end = bound_bucket(i);

		for (; j < end && j < TL_AQM_HIST_BUCKETS; j++)
			seen += s->sojourn_hist[j];
		cum[i] = seen;
	}
	for (; j < TL_AQM_HIST_BUCKETS; j++)
		seen += s->sojourn_hist[j];
	return seen;
}

/* Lower edge of AQM bucket j in ns (the same rule as aqm.c's histogram). */
static double bucket_lower(unsigned j)
{
	return j < 8 ? (double)j : (double)((8ull + j % 8) << (j / 8 - 1));
}

/* Sum of sojourn times estimated from bucket midpoints (the AQM keeps no exact sum); the
 * relative error is at most 1/16. The last bucket is open-ended: its lower edge counts. */
double tl_metrics_sojourn_sum_seconds(const struct tl_aqm_stats *s)
{
	double sum = 0;

	for (unsigned j = 0; j < TL_AQM_HIST_BUCKETS; j++) {
		double mid;

		if (!s->sojourn_hist[j])
			continue;
		mid = j + 1 < TL_AQM_HIST_BUCKETS ? (bucket_lower(j) + bucket_lower(j + 1)) / 2 : bucket_lower(j);
		sum += mid * (double)s->sojourn_hist[j];
	}
	return sum / 1e9;
}

const char *const tl_metrics_dir_names[TL_DIR_MAX] = { "encap", "decap" };

void tl_metrics_crypto_view(const struct tl_device *dev, unsigned w, struct tl_crypto_view *v)
{
	const struct tl_worker *wk = &dev->workers[w];
	const struct tl_counters *c = &wk->cnt;

	memset(v, 0, sizeof(*v));
	v->owner = wk->owner;
	v->jobs = tl_cnt_read(&c->crypto_jobs);
	v->pkts = tl_cnt_read(&c->crypto_pkts);
	for (int d = 0; d < TL_DIR_MAX; d++) {
		v->inflight[d] = tl_cnt_read(&c->inflight[d]);
		v->full[d] = tl_cnt_read(&c->crypto_full[d]);
		v->fifo[d] = wk->owner && wk->jobs_order[d] ? rte_ring_count(wk->jobs_order[d]) : 0;
	}
}

unsigned tl_metrics_crypto_ring(const struct tl_device *dev, unsigned *capacity)
{
	*capacity = dev->dp.crypto_ring ? rte_ring_get_capacity(dev->dp.crypto_ring) : 0;
	return dev->dp.crypto_ring ? rte_ring_count(dev->dp.crypto_ring) : 0;
}
