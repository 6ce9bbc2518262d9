/* Per-port conservation (balance.h): the dataplane's own account of every packet. */
#include "dataplane/balance.h"
#include "dataplane/queue.h"

void tl_conservation(struct tl_worker *ws, unsigned n, struct tl_port_balance out[TL_PORT_MAX])
{
	memset(out, 0, sizeof(*out) * TL_PORT_MAX);
	for (unsigned i = 0; i < n; i++) {
		const struct tl_counters *c = &ws[i].cnt;
		struct tl_queue_snapshot q[TL_PORT_MAX];

		for (int role = 0; role < TL_PORT_MAX; role++)
			tl_worker_queue_read(&ws[i], role, &q[role]);
		/* LAN -> WAN queue */
		out[TL_PORT_LAN].rx += tl_cnt_read(&c->rx[TL_PORT_LAN]);
		out[TL_PORT_LAN].generated += tl_cnt_read(&c->fragments) - tl_cnt_read(&c->fragmented);
		out[TL_PORT_LAN].tx += q[TL_PORT_WAN].tx_packets;
		out[TL_PORT_LAN].drops += tl_cnt_read(&c->rx_drops[TL_PORT_LAN]) + tl_cnt_read(&c->deq_drops[TL_PORT_WAN]) +
					  q[TL_PORT_WAN].aqm.drops_codel + q[TL_PORT_WAN].aqm.drops_overlimit;
		out[TL_PORT_LAN].handed += tl_cnt_read(&c->staged);
		out[TL_PORT_LAN].queued += q[TL_PORT_WAN].aqm.backlog_pkts + tl_cnt_read(&c->inflight[TL_DIR_ENCAP]);
		/* WAN -> LAN queue */
		out[TL_PORT_WAN].rx += tl_cnt_read(&c->rx[TL_PORT_WAN]) + tl_cnt_read(&c->slowpath_rx);
		out[TL_PORT_WAN].generated += tl_cnt_read(&c->icmp_errors);
		out[TL_PORT_WAN].tx += q[TL_PORT_LAN].tx_packets;
		out[TL_PORT_WAN].drops += tl_cnt_read(&c->rx_drops[TL_PORT_WAN]) + tl_cnt_read(&c->deq_drops[TL_PORT_LAN]) +
					  q[TL_PORT_LAN].aqm.drops_codel + q[TL_PORT_LAN].aqm.drops_overlimit;
		out[TL_PORT_WAN].handed += tl_cnt_read(&c->to_ctrl) + tl_cnt_read(&c->consumed);
		out[TL_PORT_WAN].queued += q[TL_PORT_LAN].aqm.backlog_pkts + tl_cnt_read(&c->held) +
					   tl_cnt_read(&c->inflight[TL_DIR_DECAP]);
	}
	for (int role = 0; role < TL_PORT_MAX; role++) {
		struct tl_port_balance *b = &out[role];

		b->balance = (int64_t)(b->rx + b->generated) - (int64_t)(b->tx + b->drops + b->handed + b->queued);
	}
}

/* Every member of struct tl_counters is a uint64_t counter (or an array of them): the
 * struct sums as one array of words, so a counter added later is summed too. */
_Static_assert(sizeof(struct tl_counters) % sizeof(uint64_t) == 0, "tl_counters is whole words");
#define TL_COUNTER_WORDS (sizeof(struct tl_counters) / sizeof(uint64_t))

void tl_dp_counters_sum(const struct tl_worker *ws, unsigned n, const struct tl_counters *extra, struct tl_counters *sum)
{
	uint64_t *out = (uint64_t *)sum;

	memset(sum, 0, sizeof(*sum));
	for (unsigned w = 0; w <= n; w++) {
		const uint64_t *c = w < n ? (const uint64_t *)&ws[w].cnt : (const uint64_t *)extra;

		if (!c)
			break;
		for (size_t i = 0; i < TL_COUNTER_WORDS; i++)
			out[i] += tl_cnt_read(&c[i]);
	}
}
