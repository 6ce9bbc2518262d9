/* The egress AQM's per-class histograms as observers read them (aqm.h): quantiles, the
 * cumulative counts Prometheus and telemetry export, and the sums. The AQM fills them on
 * its hot path (aqm.c: one bucket increment per delivered packet and histogram); everything
 * here runs on the reading side, on a copy (tl_aqm_stats_get). */
#include <stddef.h>

#include <rte_common.h>

#include "dataplane/aqm.h"

/* Bucket i of a histogram at offset off of the class stats, summed over the classes asked. */
static uint64_t bucket_of(const struct tl_aqm_stats *s, size_t off, unsigned cls, unsigned i)
{
	uint64_t n = 0;

	for (unsigned c = 0; c < TL_AQM_CLASSES; c++)
		if (cls == TL_AQM_ALL || cls == c)
			n += ((const uint64_t *)((const char *)&s->cls[c] + off))[i];
	return n;
}

#define SOJOURN offsetof(struct tl_aqm_class_stats, sojourn_hist)
#define AHEAD   offsetof(struct tl_aqm_class_stats, ahead_hist)

/* Lower edge of bucket i (the rule of tl_aqm_hist_index). */
static uint64_t hist_lower(unsigned i)
{
	return i < 8 ? i : (8ull + i % 8) << (i / 8 - 1);
}

static uint64_t hist_total(const struct tl_aqm_stats *s, size_t off, unsigned cls)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < TL_AQM_HIST_BUCKETS; i++)
		total += bucket_of(s, off, cls, i);
	return total;
}

uint64_t tl_aqm_served(const struct tl_aqm_stats *s, unsigned cls)
{
	return hist_total(s, SOJOURN, cls);
}

static uint64_t hist_quantile(const struct tl_aqm_stats *s, size_t off, unsigned cls, double p)
{
	uint64_t total = hist_total(s, off, cls), seen = 0, rank;

	if (total == 0)
		return 0;
	rank = (uint64_t)(p * (double)total);
	if ((double)rank < p * (double)total)
		rank++;
	rank = RTE_MIN(RTE_MAX(rank, 1ull), total);
	for (unsigned i = 0; i < TL_AQM_HIST_BUCKETS; i++) {
		seen += bucket_of(s, off, cls, i);
		if (seen >= rank)
			return hist_lower(i + 1);
	}
	return hist_lower(TL_AQM_HIST_BUCKETS);
}

uint64_t tl_aqm_sojourn_quantile(const struct tl_aqm_stats *s, unsigned cls, double p)
{
	return hist_quantile(s, SOJOURN, cls, p);
}

uint64_t tl_aqm_ahead_quantile(const struct tl_aqm_stats *s, unsigned cls, double p)
{
	return hist_quantile(s, AHEAD, cls, p);
}

/* ---- as observers export them -------------------------------------------------------------- */

uint64_t tl_aqm_hist_bound(unsigned i)
{
	unsigned k = 10 + i / 2;

	return i % 2 ? 3ull << (k - 1) : 1ull << k;
}

/* Bucket j holds [lower(j), lower(j + 1)); the bound 2^k is lower(8(k-2)), 1.5 * 2^k is
 * lower(8(k-2) + 4). */
static unsigned bound_bucket(unsigned i)
{
	unsigned k = 10 + i / 2;

	return 8 * (k - 2) + (i % 2 ? 4 : 0);
}

static uint64_t hist_cumulative(const struct tl_aqm_stats *s, size_t off, unsigned cls,
				uint64_t cum[TL_AQM_HIST_BOUNDS])
{
	uint64_t seen = 0;
	unsigned j = 0;

	for (unsigned i = 0; i < TL_AQM_HIST_BOUNDS; i++) {
		unsigned end = bound_bucket(i);

		for (; j < end && j < TL_AQM_HIST_BUCKETS; j++)
			seen += bucket_of(s, off, cls, j);
		cum[i] = seen;
	}
	for (; j < TL_AQM_HIST_BUCKETS; j++)
		seen += bucket_of(s, off, cls, j);
	return seen;
}

uint64_t tl_aqm_sojourn_cumulative(const struct tl_aqm_stats *s, unsigned cls, uint64_t cum[TL_AQM_HIST_BOUNDS])
{
	return hist_cumulative(s, SOJOURN, cls, cum);
}

uint64_t tl_aqm_ahead_cumulative(const struct tl_aqm_stats *s, unsigned cls, uint64_t cum[TL_AQM_HIST_BOUNDS])
{
	return hist_cumulative(s, AHEAD, cls, cum);
}

/* Sum estimated from bucket midpoints (the AQM keeps no exact sum); the relative error is at
 * most 1/16. The last bucket is open-ended: its lower edge counts. */
static double hist_sum(const struct tl_aqm_stats *s, size_t off, unsigned cls)
{
	double sum = 0;

	for (unsigned j = 0; j < TL_AQM_HIST_BUCKETS; j++) {
		uint64_t n = bucket_of(s, off, cls, j);
		double mid;

		if (!n)
			continue;
		mid = j + 1 < TL_AQM_HIST_BUCKETS ? (double)(hist_lower(j) + hist_lower(j + 1)) / 2 : (double)hist_lower(j);
		sum += mid * (double)n;
	}
	return sum;
}

double tl_aqm_sojourn_sum_seconds(const struct tl_aqm_stats *s, unsigned cls)
{
	return hist_sum(s, SOJOURN, cls) / 1e9;
}

double tl_aqm_ahead_sum_bytes(const struct tl_aqm_stats *s, unsigned cls)
{
	return hist_sum(s, AHEAD, cls);
}
