/* Prometheus text exposition (its HTTP server: metrics_http.c).
 *
 * What is exposed (docs/metrics.md): tunless_* for the device, ports, drops by reason,
 * egress queues (AQM state, sojourn histogram, parameters), workers and peers; and the
 * names that existing WireGuard dashboards query, from the two common exporters:
 * MindFlavor/prometheus_wireguard_exporter (wireguard_sent_bytes_total, ...) and
 * mdlayher/wireguard_exporter (wireguard_peer_*). */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "ctrl/accounting.h"
#include "ctrl/device.h"
#include "ctrl/httpreq.h"
#include "ctrl/log.h"
#include "ctrl/metrics.h"
#include "ctrl/metrics_priv.h"
#include "ctrl/ports.h"
#include "ctrl/unixsock.h"

const char *const tl_metrics_port_names[TL_PORT_MAX] = { "wan", "lan" };

/* ---- exposition ---------------------------------------------------------------------------- */

#define P tl_buf_printf

static void family(struct tl_buf *b, const char *name, const char *type, const char *help)
{
	P(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped, as the text format wants. */
static void label_value(struct tl_buf *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			P(b, "\\\\");
		else if (*v == '"')
			P(b, "\\\"");
		else if (*v == '\n')
			P(b, "\\n");
		else
			P(b, "%c", *v);
	}
}

static void sample_u64(struct tl_buf *b, const char *name, const char *labels, uint64_t v)
{
	P(b, "%s%s%s%s %" PRIu64 "\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", v);
}

static void sample_f(struct tl_buf *b, const char *name, const char *labels, double v)
{
	P(b, "%s%s%s%s %.9g\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", v);
}

static void render_device(struct tl_device *dev, struct tl_buf *b)
{
	char key[45];

	tl_key_to_base64(key, dev->id.pub);
	family(b, "tunless_info", "gauge", "Device metadata (always 1).");
	P(b, "tunless_info{name=\"");
	label_value(b, dev->cfg->name);
	P(b, "\",mode=\"%s\",public_key=\"%s\",version=\"%s\"} 1\n", dev->dp.host_mode ? "host" : "gateway",
	  key, TL_VERSION);
	family(b, "tunless_listen_port", "gauge", "UDP listen port on the WAN.");
	sample_u64(b, "tunless_listen_port", "", tl_dp_listen_port(&dev->dp));
	family(b, "tunless_mtu_bytes", "gauge", "Tunnel (inner) MTU.");
	sample_u64(b, "tunless_mtu_bytes", "", dev->dp.mtu);
	family(b, "tunless_workers", "gauge", "Dataplane worker lcores.");
	sample_u64(b, "tunless_workers", "", dev->dp.n_workers);
	family(b, "tunless_peers", "gauge", "Configured peers.");
	sample_u64(b, "tunless_peers", "", dev->n_peers);
}

/* The per-port balance of tl_conservation and the control plane's per flow (also
 * /tunless/conservation). */
static void render_conservation(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_port_balance bal[TL_PORT_MAX];
	struct tl_flow_balance flow[TL_FLOW_MAX];

	tl_conservation(dev->workers, dev->dp.n_workers, bal);
	family(b, "tunless_conservation_balance_packets", "gauge",
	       "Per port: received + generated - transmitted - dropped - handed to the control plane - queued; 0 = every packet accounted for (off by the packets in flight while traffic flows).");
	for (int p = 0; p < TL_PORT_MAX; p++)
		P(b, "tunless_conservation_balance_packets{port=\"%s\"} %" PRId64 "\n", tl_metrics_port_names[p],
		  bal[p].balance);
	tl_ctrl_balance(dev, flow);
	family(b, "tunless_ctrl_conservation_balance_packets", "gauge",
	       "Per control-plane flow: entered - left - dropped - held in a ring; 0 = every packet accounted for (off by the packets in flight).");
	for (int f = 0; f < TL_FLOW_MAX; f++)
		P(b, "tunless_ctrl_conservation_balance_packets{flow=\"%s\"} %" PRId64 "\n", tl_ctrl_flow_names[f],
		  flow[f].balance);
}

/* Per-port counters: the dataplane's own (conservation) and the ethdev's. */
static void render_ports(struct tl_device *dev, struct tl_buf *b, const struct tl_counters *sum)
{
	static const struct {
		const char *name, *help;
	} eth[] = {
		{ "tunless_ethdev_rx_packets_total", "Frames the port received (ethdev ipackets)." },
		{ "tunless_ethdev_tx_packets_total", "Frames the port sent (ethdev opackets)." },
		{ "tunless_ethdev_rx_bytes_total", "Bytes the port received (ethdev ibytes)." },
		{ "tunless_ethdev_tx_bytes_total", "Bytes the port sent (ethdev obytes)." },
		{ "tunless_ethdev_rx_missed_total", "Frames lost before the dataplane saw them (ethdev imissed; AF_XDP: no free buffer, the socket RX ring unread)." },
		{ "tunless_ethdev_rx_errors_total", "Erroneous received frames (ethdev ierrors)." },
		{ "tunless_ethdev_tx_errors_total", "Failed transmissions (ethdev oerrors)." },
	};
	struct rte_eth_stats st[TL_PORT_MAX];
	char l[32];

	for (int p = 0; p < TL_PORT_MAX; p++) {
		memset(&st[p], 0, sizeof(st[p]));
		if (dev->ports[p].started)
			tl_port_stats(dev, p, &st[p]);
	}
	family(b, "tunless_port_rx_packets_total", "counter", "Frames the workers took from the port (conservation: rx = tx + drops + in flight).");
	for (int p = 0; p < TL_PORT_MAX; p++) {
		snprintf(l, sizeof(l), "port=\"%s\"", tl_metrics_port_names[p]);
		sample_u64(b, "tunless_port_rx_packets_total", l, sum->rx[p]);
	}
	family(b, "tunless_port_tx_packets_total", "counter", "Frames the port took for sending.");
	for (int p = 0; p < TL_PORT_MAX; p++) {
		snprintf(l, sizeof(l), "port=\"%s\"", tl_metrics_port_names[p]);
		sample_u64(b, "tunless_port_tx_packets_total", l, sum->tx[p]);
	}
	family(b, "tunless_port_backpressure_total", "counter", "Worker rounds in which the port's egress queues held packets back (port or shaper not ready).");
	for (int p = 0; p < TL_PORT_MAX; p++) {
		snprintf(l, sizeof(l), "port=\"%s\"", tl_metrics_port_names[p]);
		sample_u64(b, "tunless_port_backpressure_total", l, sum->backpressure[p]);
	}
	family(b, "tunless_port_rx_drops_total", "counter", "Packets received on the port and dropped before reaching a queue (any reason).");
	for (int p = 0; p < TL_PORT_MAX; p++) {
		snprintf(l, sizeof(l), "port=\"%s\"", tl_metrics_port_names[p]);
		sample_u64(b, "tunless_port_rx_drops_total", l, sum->rx_drops[p]);
	}
	family(b, "tunless_port_dequeue_drops_total", "counter", "Packets dropped when the port's queue released them (e.g. a session gone meanwhile).");
	for (int p = 0; p < TL_PORT_MAX; p++) {
		snprintf(l, sizeof(l), "port=\"%s\"", tl_metrics_port_names[p]);
		sample_u64(b, "tunless_port_dequeue_drops_total", l, sum->deq_drops[p]);
	}
	render_conservation(dev, b);
	for (size_t i = 0; i < RTE_DIM(eth); i++) {
		family(b, eth[i].name, "counter", eth[i].help);
		for (int p = 0; p < TL_PORT_MAX; p++) {
			const uint64_t v[] = { st[p].ipackets, st[p].opackets, st[p].ibytes, st[p].obytes,
					       st[p].imissed, st[p].ierrors, st[p].oerrors };

			snprintf(l, sizeof(l), "port=\"%s\"", tl_metrics_port_names[p]);
			sample_u64(b, eth[i].name, l, v[i]);
		}
	}
}

static void render_drops(struct tl_device *dev, struct tl_buf *b)
{
	uint64_t drops[TL_DROP_MAX];
	char l[64];

	tl_metrics_drops(dev, drops);
	family(b, "tunless_drops_total", "counter", "Packets let go of without delivering them, by reason (one list: src/dataplane/drop.h).");
	for (int i = 0; i < TL_DROP_MAX; i++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", tl_drop_names[i]);
		sample_u64(b, "tunless_drops_total", l, drops[i]);
	}
}

static void render_pipeline(struct tl_device *dev, struct tl_buf *b, const struct tl_counters *sum)
{
	static const struct {
		const char *name, *help;
	} c[] = {
		{ "tunless_handshake_messages_to_ctrl_total", "Handshake messages the workers handed to the control plane." },
		{ "tunless_consumed_packets_total", "Keepalives and handshake messages taken by tunless itself." },
		{ "tunless_staged_packets_total", "Inner packets parked while their peer had no session." },
		{ "tunless_unstaged_packets_total", "Staged packets sent after the handshake." },
		{ "tunless_ctrl_frames_sent_total", "Frames built by the control plane (handshakes, keepalives) and sent." },
		{ "tunless_slowpath_rx_packets_total", "WAN datagrams that came through the kernel's UDP socket (reassembled fragments)." },
		{ "tunless_icmp_errors_sent_total", "ICMP errors tunless generated (fragmentation needed / packet too big)." },
		{ "tunless_checksums_completed_total", "LAN packets whose TCP/UDP checksum the sender's kernel left partial (veth tx checksum offload) and tunless completed." },
		{ "tunless_fragmented_packets_total", "LAN IPv4 packets without DF above the tunnel MTU that tunless fragmented." },
		{ "tunless_fragments_total", "IPv4 fragments made of them." },
		{ "tunless_handshakes_sent_total", "Handshake initiations sent (responses are not counted here)." },
		{ "tunless_handshakes_received_total", "Handshake initiations and responses received and accepted." },
		{ "tunless_cookies_sent_total", "Cookie replies sent (under load)." },
	};
	const uint64_t v[] = { sum->to_ctrl, sum->consumed, sum->staged, sum->unstaged, sum->from_ctrl,
			       sum->slowpath_rx, sum->icmp_errors, sum->csum_completed, sum->fragmented, sum->fragments, dev->handshakes_sent, dev->handshakes_received, dev->cookies_sent };
	struct tl_peer_ctrl *pc;
	uint64_t done = 0;

	for (size_t i = 0; i < RTE_DIM(c); i++) {
		family(b, c[i].name, "counter", c[i].help);
		sample_u64(b, c[i].name, "", v[i]);
	}
	TAILQ_FOREACH(pc, &dev->peers, link)
		done += pc->handshakes;
	family(b, "tunless_handshakes_completed_total", "counter", "Completed handshakes of the current peers (sessions established).");
	sample_u64(b, "tunless_handshakes_completed_total", "", done);
}

/* ---- queues -------------------------------------------------------------------------------- */

typedef double (*queue_value)(const struct tl_queue_snapshot *s);

#define QV(fn, expr) \
	static double fn(const struct tl_queue_snapshot *s) { return (double)(expr); }
QV(q_depth_pkts, s->aqm.backlog_pkts)
QV(q_depth_bytes, s->aqm.backlog_bytes)
QV(q_memory, s->aqm.memory_bytes)
QV(q_sojourn_max, (double)s->aqm.sojourn_max_ns / 1e9)
QV(q_enqueued, s->aqm.enqueued)
QV(q_dequeued, s->aqm.dequeued)
QV(q_requeued, s->aqm.requeued)
QV(q_ecn, s->aqm.ecn_marks)
QV(q_new_flows, s->aqm.new_flows_count)
QV(q_overlimit_events, s->aqm.overlimit_events)
QV(q_tx_pkts, s->tx_packets)
QV(q_tx_bytes, s->tx_bytes)
QV(q_backpressure, s->backpressure)
QV(q_shaper_waits, s->shaper_waits)
QV(p_target, (double)s->params.target_us / 1e6)
QV(p_interval, (double)s->params.interval_us / 1e6)
QV(p_quantum, s->params.quantum)
QV(p_flows, s->params.flows)
QV(p_limit, s->params.limit)
QV(p_memory, s->params.memory_limit)
QV(p_ecn, s->params.ecn)
QV(p_rate, s->shaper.rate_bps)
QV(p_burst, s->shaper.rate_bps ? tl_shaper_burst(&s->shaper) : 0)
#undef QV

static const struct {
	const char *name, *type, *help;
	queue_value v;
	bool integer;
} queue_families[] = {
	{ "tunless_queue_depth_packets", "gauge", "Packets in the egress queue (AQM backlog).", q_depth_pkts, true },
	{ "tunless_queue_depth_bytes", "gauge", "Packet bytes in the egress queue.", q_depth_bytes, true },
	{ "tunless_queue_memory_bytes", "gauge", "Buffer memory held by the egress queue (against aqm memory_limit).", q_memory, true },
	{ "tunless_queue_sojourn_max_seconds", "gauge", "Longest time a delivered packet waited in the queue.", q_sojourn_max, false },
	{ "tunless_queue_enqueued_packets_total", "counter", "Packets offered to the egress queue.", q_enqueued, true },
	{ "tunless_queue_dequeued_packets_total", "counter", "Packets handed out of the egress queue (enqueued = dequeued + AQM drops + depth).", q_dequeued, true },
	{ "tunless_queue_requeued_packets_total", "counter", "Packets given back to the queue because the port took fewer than offered.", q_requeued, true },
	{ "tunless_queue_ecn_marks_total", "counter", "ECT packets CoDel marked CE instead of dropping.", q_ecn, true },
	{ "tunless_queue_new_flows_total", "counter", "Flows that became active (joined the new-flows list).", q_new_flows, true },
	{ "tunless_queue_overlimit_events_total", "counter", "Batches dropped from the fattest flow at the hard limit.", q_overlimit_events, true },
	{ "tunless_queue_tx_packets_total", "counter", "Frames the port took from this queue.", q_tx_pkts, true },
	{ "tunless_queue_tx_bytes_total", "counter", "Bytes of the frames the port took from this queue.", q_tx_bytes, true },
	{ "tunless_queue_backpressure_total", "counter", "Rounds in which the port took fewer frames than offered (the rest stayed queued).", q_backpressure, true },
	{ "tunless_queue_shaper_waits_total", "counter", "Rounds in which the shaper held packets back.", q_shaper_waits, true },
	{ "tunless_aqm_target_seconds", "gauge", "AQM parameter: CoDel target sojourn time.", p_target, false },
	{ "tunless_aqm_interval_seconds", "gauge", "AQM parameter: CoDel interval.", p_interval, false },
	{ "tunless_aqm_quantum_bytes", "gauge", "AQM parameter: DRR quantum.", p_quantum, true },
	{ "tunless_aqm_flows", "gauge", "AQM parameter: flow hash buckets.", p_flows, true },
	{ "tunless_aqm_limit_packets", "gauge", "AQM parameter: hard limit in packets.", p_limit, true },
	{ "tunless_aqm_memory_limit_bytes", "gauge", "AQM parameter: hard limit in buffer bytes.", p_memory, true },
	{ "tunless_aqm_ecn", "gauge", "AQM parameter: 1 if ECT packets are marked instead of dropped.", p_ecn, true },
	{ "tunless_shaper_rate_bits_per_second", "gauge", "Shaper rate on the wire (0 = no shaper).", p_rate, true },
	{ "tunless_shaper_burst_bytes", "gauge", "Shaper bucket depth in use (0 = no shaper).", p_burst, true },
};

static void queue_labels(char *l, size_t len, int p, unsigned w)
{
	snprintf(l, len, "port=\"%s\",worker=\"%u\"", tl_metrics_port_names[p], w);
}

static void render_sojourn(struct tl_device *dev, struct tl_buf *b, struct tl_metrics *m)
{
	static const char *name = "tunless_queue_sojourn_seconds";
	uint64_t cum[TL_METRICS_SOJOURN_BOUNDS];
	char l[64];

	family(b, name, "histogram", "Time delivered packets waited in the egress queue (bounds are edges of the AQM's own histogram; _sum from bucket midpoints, within 1/16).");
	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; w < dev->dp.n_queues; w++) {
			const struct tl_aqm_stats *s = &m->snap[p][w].aqm;
			uint64_t total = tl_metrics_sojourn_cumulative(s, cum);

			queue_labels(l, sizeof(l), p, w);
			for (unsigned i = 0; i < TL_METRICS_SOJOURN_BOUNDS; i++)
				P(b, "%s_bucket{%s,le=\"%.12g\"} %" PRIu64 "\n", name, l,
				  (double)tl_metrics_sojourn_bound(i) / 1e9, cum[i]);
			P(b, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, l, total);
			P(b, "%s_sum{%s} %.9g\n", name, l, tl_metrics_sojourn_sum_seconds(s));
			P(b, "%s_count{%s} %" PRIu64 "\n", name, l, total);
		}
}

/* Egress queues are the queue owners' (worker w < n_queues). */
static void render_queues(struct tl_device *dev, struct tl_buf *b, struct tl_metrics *m)
{
	static const char *drop_name = "tunless_queue_aqm_drops_total";
	char l[64];

	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; w < dev->dp.n_queues; w++)
			tl_worker_queue_read(&dev->workers[w], p, &m->snap[p][w]);
	for (size_t f = 0; f < RTE_DIM(queue_families); f++) {
		family(b, queue_families[f].name, queue_families[f].type, queue_families[f].help);
		for (int p = 0; p < TL_PORT_MAX; p++)
			for (unsigned w = 0; w < dev->dp.n_queues; w++) {
				double v = queue_families[f].v(&m->snap[p][w]);

				queue_labels(l, sizeof(l), p, w);
				if (queue_families[f].integer)
					sample_u64(b, queue_families[f].name, l, (uint64_t)v);
				else
					sample_f(b, queue_families[f].name, l, v);
			}
	}
	family(b, drop_name, "counter", "Packets the egress AQM dropped, by reason (aqm_codel, aqm_overlimit).");
	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; w < dev->dp.n_queues; w++) {
			queue_labels(l, sizeof(l), p, w);
			P(b, "%s{%s,reason=\"%s\"} %" PRIu64 "\n", drop_name, l, tl_drop_names[TL_DROP_aqm_codel],
			  m->snap[p][w].aqm.drops_codel);
			P(b, "%s{%s,reason=\"%s\"} %" PRIu64 "\n", drop_name, l, tl_drop_names[TL_DROP_aqm_overlimit],
			  m->snap[p][w].aqm.drops_overlimit);
		}
	family(b, "tunless_queue_flows", "gauge", "Active flows of the egress queue, by DRR list (new, old).");
	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; w < dev->dp.n_queues; w++) {
			queue_labels(l, sizeof(l), p, w);
			P(b, "tunless_queue_flows{%s,list=\"new\"} %u\n", l, (unsigned)m->snap[p][w].aqm.flows_new);
			P(b, "tunless_queue_flows{%s,list=\"old\"} %u\n", l, (unsigned)m->snap[p][w].aqm.flows_old);
		}
	render_sojourn(dev, b, m);
}

/* ---- workers ------------------------------------------------------------------------------- */

/* The crypto stage: what each worker sealed and opened, each owner's jobs in flight and
 * backpressure, and the shared ring's depth. */
static void render_crypto(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_crypto_view v[TL_MAX_WORKERS];
	unsigned n = dev->dp.n_workers, cap, depth = tl_metrics_crypto_ring(dev, &cap);

	for (unsigned w = 0; w < n; w++)
		tl_metrics_crypto_view(dev, w, &v[w]);
	family(b, "tunless_queue_pairs", "gauge", "Queue pairs per port; worker i below this number owns queue pair i of both ports.");
	sample_u64(b, "tunless_queue_pairs", "", dev->dp.n_queues);
	family(b, "tunless_crypto_ring_jobs", "gauge", "Crypto jobs waiting in the shared ring for a worker.");
	P(b, "tunless_crypto_ring_jobs %u\n", depth);
	family(b, "tunless_crypto_ring_capacity_jobs", "gauge", "Capacity of the shared crypto ring (every job there is).");
	P(b, "tunless_crypto_ring_capacity_jobs %u\n", cap);
	family(b, "tunless_worker_crypto_jobs_total", "counter", "Crypto jobs (bursts of one owner and direction) this worker sealed or opened.");
	for (unsigned w = 0; w < n; w++)
		P(b, "tunless_worker_crypto_jobs_total{worker=\"%u\"} %" PRIu64 "\n", w, v[w].jobs);
	family(b, "tunless_worker_crypto_packets_total", "counter", "Packets this worker sealed or opened, for any queue owner.");
	for (unsigned w = 0; w < n; w++)
		P(b, "tunless_worker_crypto_packets_total{worker=\"%u\"} %" PRIu64 "\n", w, v[w].pkts);
	family(b, "tunless_worker_inflight_packets", "gauge", "Packets of this owner's queues in crypto jobs now, by direction.");
	for (unsigned w = 0; w < n; w++)
		for (int d = 0; v[w].owner && d < TL_DIR_MAX; d++)
			P(b, "tunless_worker_inflight_packets{worker=\"%u\",dir=\"%s\"} %" PRIu64 "\n", w,
			  tl_metrics_dir_names[d], v[w].inflight[d]);
	family(b, "tunless_worker_job_fifo_jobs", "gauge", "Jobs this owner submitted and has not finished yet, by direction.");
	for (unsigned w = 0; w < n; w++)
		for (int d = 0; v[w].owner && d < TL_DIR_MAX; d++)
			P(b, "tunless_worker_job_fifo_jobs{worker=\"%u\",dir=\"%s\"} %u\n", w, tl_metrics_dir_names[d],
			  v[w].fifo[d]);
	family(b, "tunless_worker_crypto_backpressure_total", "counter",
	       "Rounds this owner had packets but no free crypto job, so it stopped reading (or dequeuing) them.");
	for (unsigned w = 0; w < n; w++)
		for (int d = 0; v[w].owner && d < TL_DIR_MAX; d++)
			P(b, "tunless_worker_crypto_backpressure_total{worker=\"%u\",dir=\"%s\"} %" PRIu64 "\n", w,
			  tl_metrics_dir_names[d], v[w].full[d]);
}

static void render_workers(struct tl_device *dev, struct tl_buf *b)
{
	char l[32];

	family(b, "tunless_worker_busy_ratio", "gauge", "Share of a worker's loop time spent in rounds that did work, since start.");
	for (unsigned w = 0; w < dev->dp.n_workers; w++) {
		const struct tl_counters *c = &dev->workers[w].cnt;
		uint64_t busy = c->busy_ns, loop = c->loop_ns;

		snprintf(l, sizeof(l), "worker=\"%u\"", w);
		sample_f(b, "tunless_worker_busy_ratio", l, loop ? (double)busy / (double)loop : 0.0);
	}
	family(b, "tunless_worker_busy_seconds_total", "counter", "Time a worker spent in rounds that did work (rate() of it is the busy ratio).");
	for (unsigned w = 0; w < dev->dp.n_workers; w++) {
		snprintf(l, sizeof(l), "worker=\"%u\"", w);
		sample_f(b, "tunless_worker_busy_seconds_total", l, (double)dev->workers[w].cnt.busy_ns / 1e9);
	}
	family(b, "tunless_worker_loop_seconds_total", "counter", "Time a worker spent in its loop (busy and idle rounds).");
	for (unsigned w = 0; w < dev->dp.n_workers; w++) {
		snprintf(l, sizeof(l), "worker=\"%u\"", w);
		sample_f(b, "tunless_worker_loop_seconds_total", l, (double)dev->workers[w].cnt.loop_ns / 1e9);
	}
	family(b, "tunless_worker_polls_total", "counter", "Worker rounds, by whether they did work (busy) or not (idle).");
	for (unsigned w = 0; w < dev->dp.n_workers; w++) {
		P(b, "tunless_worker_polls_total{worker=\"%u\",state=\"busy\"} %" PRIu64 "\n", w, dev->workers[w].cnt.busy_polls);
		P(b, "tunless_worker_polls_total{worker=\"%u\",state=\"idle\"} %" PRIu64 "\n", w, dev->workers[w].cnt.idle_polls);
	}	render_crypto(dev, b);
}

/* ---- peers --------------------------------------------------------------------------------- */

struct peer_view {
	char key[45];
	char allowed[1024];    /* "a/n,b/m" (truncated at a prefix boundary if very long) */
	char endpoint[64];
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
	uint64_t hs_unix_s, staged;
	bool session;
};

static void peer_view(struct tl_peer_ctrl *pc, struct peer_view *v)
{
	struct tl_endpoint ep;
	size_t off = 0;

	tl_key_to_base64(v->key, pc->cfg.public_key);
	v->allowed[0] = '\0';
	for (size_t i = 0; i < pc->cfg.n_allowed_ips; i++) {
		char p[64];

		tl_prefix_format(p, sizeof(p), &pc->cfg.allowed_ips[i]);
		if (off + strlen(p) + 2 > sizeof(v->allowed))
			break;
		off += (size_t)snprintf(v->allowed + off, sizeof(v->allowed) - off, "%s%s", i ? "," : "", p);
	}
	tl_endpoint_read(pc->dp, &ep);
	v->endpoint[0] = '\0';
	if (ep.family && ep.port) {
		struct tl_sockaddr sa = { .ip.family = ep.family, .port = ep.port };

		memcpy(sa.ip.addr, ep.ip, sizeof(sa.ip.addr));
		tl_sockaddr_format(v->endpoint, sizeof(v->endpoint), &sa);
	}
	v->rx_bytes = atomic_load_explicit(&pc->dp->stats.rx_bytes, memory_order_relaxed);
	v->tx_bytes = atomic_load_explicit(&pc->dp->stats.tx_bytes, memory_order_relaxed);
	v->rx_packets = atomic_load_explicit(&pc->dp->stats.rx_packets, memory_order_relaxed);
	v->tx_packets = atomic_load_explicit(&pc->dp->stats.tx_packets, memory_order_relaxed);
	v->hs_unix_s = pc->last_handshake_unix_ns / TL_NS;
	v->staged = rte_ring_count(pc->dp->staged);
	v->session = atomic_load(&pc->dp->current) != NULL;
}

/* MindFlavor/prometheus_wireguard_exporter labels: interface, public_key, allowed_ips, and
 * friendly_name when the peer has a name. */
static void labels_mindflavor(struct tl_buf *b, struct tl_device *dev, struct tl_peer_ctrl *pc,
			      const struct peer_view *v)
{
	P(b, "{interface=\"");
	label_value(b, dev->cfg->name);
	P(b, "\",public_key=\"%s\",allowed_ips=\"%s\"", v->key, v->allowed);
	if (pc->cfg.name[0]) {
		P(b, ",friendly_name=\"");
		label_value(b, pc->cfg.name);
		P(b, "\"");
	}
	P(b, "}");
}

/* mdlayher/wireguard_exporter labels: device, public_key. */
static void labels_mdlayher(struct tl_buf *b, struct tl_device *dev, const struct peer_view *v)
{
	P(b, "{device=\"");
	label_value(b, dev->cfg->name);
	P(b, "\",public_key=\"%s\"}", v->key);
}

enum peer_metric {
	PM_WG_SENT, PM_WG_RECEIVED, PM_WG_LATEST, PM_WG_DELAY,
	PM_PEER_RX, PM_PEER_TX, PM_PEER_HS,
	PM_TL_RX_PKTS, PM_TL_TX_PKTS, PM_TL_SESSION, PM_TL_STAGED,
	PM_MAX
};

static const struct {
	const char *name, *type, *help;
} peer_families[PM_MAX] = {
	[PM_WG_SENT] = { "wireguard_sent_bytes_total", "counter", "Bytes sent to the peer" },
	[PM_WG_RECEIVED] = { "wireguard_received_bytes_total", "counter", "Bytes received from the peer" },
	[PM_WG_LATEST] = { "wireguard_latest_handshake_seconds", "gauge", "UNIX timestamp of the latest handshake (0 = never)" },
	[PM_WG_DELAY] = { "wireguard_latest_handshake_delay_seconds", "gauge", "Seconds since the latest handshake (absent if none yet)" },
	[PM_PEER_RX] = { "wireguard_peer_receive_bytes_total", "counter", "Number of bytes received from a given peer." },
	[PM_PEER_TX] = { "wireguard_peer_transmit_bytes_total", "counter", "Number of bytes transmitted to a given peer." },
	[PM_PEER_HS] = { "wireguard_peer_last_handshake_seconds", "gauge", "UNIX timestamp for the last handshake with a given peer." },
	[PM_TL_RX_PKTS] = { "tunless_peer_rx_packets_total", "counter", "Data packets received from the peer." },
	[PM_TL_TX_PKTS] = { "tunless_peer_tx_packets_total", "counter", "Data packets sent to the peer." },
	[PM_TL_SESSION] = { "tunless_peer_session", "gauge", "1 if the peer has a usable session now." },
	[PM_TL_STAGED] = { "tunless_peer_staged_packets", "gauge", "Packets waiting for the peer's handshake." },
};

static void render_peer_family(struct tl_device *dev, struct tl_buf *b, enum peer_metric pm,
			       struct peer_view *views)
{
	struct tl_peer_ctrl *pc;
	uint64_t now_unix = (uint64_t)time(NULL);
	size_t i = 0;

	family(b, peer_families[pm].name, peer_families[pm].type, peer_families[pm].help);
	TAILQ_FOREACH(pc, &dev->peers, link) {
		const struct peer_view *v = &views[i++];
		uint64_t val;

		switch (pm) {
		case PM_WG_SENT: val = v->tx_bytes; break;
		case PM_WG_RECEIVED: val = v->rx_bytes; break;
		case PM_WG_LATEST: val = v->hs_unix_s; break;
		case PM_WG_DELAY:
			if (!v->hs_unix_s)
				continue;
			val = now_unix > v->hs_unix_s ? now_unix - v->hs_unix_s : 0;
			break;
		case PM_PEER_RX: val = v->rx_bytes; break;
		case PM_PEER_TX: val = v->tx_bytes; break;
		case PM_PEER_HS: val = v->hs_unix_s; break;
		case PM_TL_RX_PKTS: val = v->rx_packets; break;
		case PM_TL_TX_PKTS: val = v->tx_packets; break;
		case PM_TL_SESSION: val = v->session; break;
		default: val = v->staged; break;
		}
		P(b, "%s", peer_families[pm].name);
		if (pm <= PM_WG_DELAY)
			labels_mindflavor(b, dev, pc, v);
		else
			labels_mdlayher(b, dev, v);
		P(b, " %" PRIu64 "\n", val);
	}
}

static void render_peers(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_peer_ctrl *pc;
	struct peer_view *views;
	char key[45];
	size_t i = 0, n = 0;

	TAILQ_FOREACH(pc, &dev->peers, link)
		n++;
	views = calloc(n ? n : 1, sizeof(*views));
	if (!views) {
		b->oom = true;
		return;
	}
	TAILQ_FOREACH(pc, &dev->peers, link)
		peer_view(pc, &views[i++]);
	tl_key_to_base64(key, dev->id.pub);
	family(b, "wireguard_device_info", "gauge", "Metadata about a device.");
	P(b, "wireguard_device_info{device=\"");
	label_value(b, dev->cfg->name);
	P(b, "\",public_key=\"%s\"} 1\n", key);
	family(b, "wireguard_peer_info", "gauge", "Metadata about a peer. The public_key label on peer metrics refers to the peer's public key; not the device's public key.");
	i = 0;
	TAILQ_FOREACH(pc, &dev->peers, link) {
		const struct peer_view *v = &views[i++];

		P(b, "wireguard_peer_info{device=\"");
		label_value(b, dev->cfg->name);
		P(b, "\",public_key=\"%s\",endpoint=\"%s\",name=\"", v->key, v->endpoint);
		label_value(b, pc->cfg.name);
		P(b, "\"} 1\n");
	}
	family(b, "wireguard_peer_allowed_ips_info", "gauge", "Metadata about each of a peer's allowed IP subnets for a given device.");
	i = 0;
	TAILQ_FOREACH(pc, &dev->peers, link) {
		const struct peer_view *v = &views[i++];

		for (size_t a = 0; a < pc->cfg.n_allowed_ips; a++) {
			char p[64];

			tl_prefix_format(p, sizeof(p), &pc->cfg.allowed_ips[a]);
			P(b, "wireguard_peer_allowed_ips_info{device=\"");
			label_value(b, dev->cfg->name);
			P(b, "\",public_key=\"%s\",allowed_ips=\"%s\",family=\"%s\"} 1\n", v->key, p,
			  pc->cfg.allowed_ips[a].ip.family == AF_INET ? "IPv4" : "IPv6");
		}
	}
	for (int pm = 0; pm < PM_MAX; pm++)
		render_peer_family(dev, b, (enum peer_metric)pm, views);
	free(views);
}

void tl_metrics_render(struct tl_device *dev, struct tl_buf *out)
{
	struct tl_metrics *m = dev->metrics;
	struct tl_counters sum;

	if (!m) {           /* rendering without a listener (tests): snapshots on the heap */
		m = malloc(sizeof(*m));
		if (!m) {
			out->oom = true;
			return;
		}
	}
	tl_metrics_counters_sum(dev, &sum);
	render_device(dev, out);
	render_ports(dev, out, &sum);
	render_drops(dev, out);
	render_pipeline(dev, out, &sum);
	render_queues(dev, out, m);
	render_workers(dev, out);
	render_peers(dev, out);
	if (m != dev->metrics)
		free(m);
	family(out, "tunless_metrics_requests_total", "counter", "HTTP requests answered by this endpoint, by outcome.");
	P(out, "tunless_metrics_requests_total{outcome=\"ok\"} %" PRIu64 "\n",
	  dev->metrics ? dev->metrics->requests - dev->metrics->errors : 0);
	P(out, "tunless_metrics_requests_total{outcome=\"error\"} %" PRIu64 "\n", dev->metrics ? dev->metrics->errors : 0);
}
