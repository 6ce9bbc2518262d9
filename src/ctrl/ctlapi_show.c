/* The control API's show: device, peers, ports, egress queues, workers, drops. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "ctrl/ctlapi.h"
#include "ctrl/device.h"
#include "ctrl/metrics.h"
#include "ctrl/ports.h"

/* ---- show ------------------------------------------------------------------------------------ */

static void show_device(struct tl_device *dev, struct tl_yaml_writer *w)
{
	uint64_t up = dev->ctlapi ? (tl_now_ns() - dev->ctlapi->start_ns) / TL_NS : 0;
	unsigned cap;

	tl_yaml_key(w, "device");
	tl_yaml_map(w);
	tl_yaml_key_str(w, "name", dev->cfg->name);
	tl_yaml_key_str(w, "mode", dev->dp.host_mode ? "host" : "gateway");
	tl_yaml_key(w, "public_key");
	tl_yaml_b64(w, dev->id.pub);
	tl_yaml_key_u64(w, "listen_port", tl_dp_listen_port(&dev->dp));
	tl_yaml_key_u64(w, "mtu", dev->dp.mtu);
	tl_yaml_key_u64(w, "workers", dev->dp.n_workers);
	tl_yaml_key_u64(w, "queue_pairs", dev->dp.n_queues);
	tl_yaml_key_u64(w, "crypto_ring", tl_metrics_crypto_ring(dev, &cap));
	tl_yaml_key_u64(w, "crypto_ring_capacity", cap);
	tl_yaml_key_u64(w, "peers", dev->n_peers);
	tl_yaml_key_u64(w, "uptime_s", up);
	tl_yaml_end_map(w);
}

static void show_prefixes(struct tl_yaml_writer *w, const struct tl_prefix *p, size_t n)
{
	char text[64];

	tl_yaml_flow_seq(w);
	for (size_t i = 0; i < n; i++) {
		tl_prefix_format(text, sizeof(text), &p[i]);
		tl_yaml_str(w, text);
	}
	tl_yaml_end_seq(w);
}

static void show_peer(struct tl_yaml_writer *w, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct tl_peer_stats *st = &pc->dp->stats;
	struct tl_sockaddr sa = { 0 };
	struct tl_endpoint ep;
	char text[64];

	tl_yaml_map(w);
	if (pc->cfg.name[0])
		tl_yaml_key_str(w, "name", pc->cfg.name);
	tl_yaml_key(w, "public_key");
	tl_yaml_b64(w, pc->cfg.public_key);
	tl_endpoint_read(pc->dp, &ep);
	if (ep.family && ep.port) {
		sa.ip.family = ep.family;
		memcpy(sa.ip.addr, ep.ip, sizeof(sa.ip.addr));
		sa.port = ep.port;
		tl_sockaddr_format(text, sizeof(text), &sa);
		tl_yaml_key_str(w, "endpoint", text);
	}
	tl_yaml_key(w, "allowed_ips");
	show_prefixes(w, pc->cfg.allowed_ips, pc->cfg.n_allowed_ips);
	if (pc->last_session_ns)
		tl_yaml_key_u64(w, "latest_handshake_age_s", (now - pc->last_session_ns) / TL_NS);
	tl_yaml_key_u64(w, "handshakes", pc->handshakes);
	tl_yaml_key_bool(w, "session", atomic_load(&pc->dp->current) != NULL);
	tl_yaml_key_u64(w, "rx_bytes", atomic_load_explicit(&st->rx_bytes, memory_order_relaxed));
	tl_yaml_key_u64(w, "tx_bytes", atomic_load_explicit(&st->tx_bytes, memory_order_relaxed));
	tl_yaml_key_u64(w, "rx_packets", atomic_load_explicit(&st->rx_packets, memory_order_relaxed));
	tl_yaml_key_u64(w, "tx_packets", atomic_load_explicit(&st->tx_packets, memory_order_relaxed));
	tl_yaml_key_u64(w, "persistent_keepalive", pc->cfg.persistent_keepalive);
	tl_yaml_key_u64(w, "staged", rte_ring_count(pc->dp->staged));
	tl_yaml_end_map(w);
}

static void show_peers(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_peer_ctrl *pc;
	uint64_t now = tl_now_ns();

	tl_yaml_key(w, "peers");
	tl_yaml_seq(w);
	TAILQ_FOREACH(pc, &dev->peers, link)
		show_peer(w, pc, now);
	tl_yaml_end_seq(w);
}

static const char *port_iface(struct tl_device *dev, int role)
{
	if (dev->ports[role].iface[0])
		return dev->ports[role].iface;
	if (role == TL_PORT_LAN && dev->dp.host_mode)
		return dev->dp_if;
	return role == TL_PORT_WAN ? dev->cfg->wan.iface : dev->cfg->lan.iface;
}

static void show_ports(struct tl_device *dev, struct tl_yaml_writer *w)
{
	tl_yaml_key(w, "ports");
	tl_yaml_seq(w);
	for (int r = 0; r < TL_PORT_MAX; r++) {
		struct rte_eth_stats st = { 0 };

		if (!dev->ports[r].started)
			continue;
		tl_port_stats(dev, r, &st);
		tl_yaml_map(w);
		tl_yaml_key_str(w, "port", tl_metrics_port_names[r]);
		tl_yaml_key_str(w, "iface", port_iface(dev, r));
		tl_yaml_key_u64(w, "rx_packets", st.ipackets);
		tl_yaml_key_u64(w, "tx_packets", st.opackets);
		tl_yaml_key_u64(w, "rx_bytes", st.ibytes);
		tl_yaml_key_u64(w, "tx_bytes", st.obytes);
		tl_yaml_key_u64(w, "missed", st.imissed);
		tl_yaml_key_u64(w, "rx_errors", st.ierrors);
		tl_yaml_key_u64(w, "tx_errors", st.oerrors);
		tl_yaml_end_map(w);
	}
	tl_yaml_end_seq(w);
}

void tl_ctlapi_show_aqm(struct tl_yaml_writer *w, const struct tl_aqm_params *p)
{
	tl_yaml_map(w);
	tl_yaml_key_u64(w, "target_us", p->target_us);
	tl_yaml_key_u64(w, "interval_us", p->interval_us);
	tl_yaml_key_u64(w, "quantum", p->quantum);
	tl_yaml_key_u64(w, "flows", p->flows);
	tl_yaml_key_u64(w, "limit", p->limit);
	tl_yaml_key_u64(w, "memory_limit", p->memory_limit);
	tl_yaml_key_bool(w, "ecn", p->ecn);
	tl_yaml_end_map(w);
}

void tl_ctlapi_show_shaper(struct tl_yaml_writer *w, const struct tl_shaper_params *p)
{
	tl_yaml_map(w);
	tl_yaml_key_u64(w, "rate_bps", p->rate_bps);
	tl_yaml_key_u64(w, "burst_bytes", p->burst_bytes);
	tl_yaml_end_map(w);
}

static void show_queue(struct tl_yaml_writer *w, int role, unsigned id, const struct tl_queue_snapshot *s)
{
	const struct tl_aqm_stats *a = &s->aqm;

	tl_yaml_map(w);
	tl_yaml_key_str(w, "port", tl_metrics_port_names[role]);
	tl_yaml_key_u64(w, "worker", id);
	tl_yaml_key_u64(w, "depth_packets", a->backlog_pkts);
	tl_yaml_key_u64(w, "depth_bytes", a->backlog_bytes);
	tl_yaml_key_u64(w, "memory_bytes", a->memory_bytes);
	tl_yaml_key_u64(w, "sojourn_p50_us", RTE_MIN(tl_aqm_sojourn_quantile(a, 0.5), a->sojourn_max_ns) / 1000);
	tl_yaml_key_u64(w, "sojourn_p99_us", RTE_MIN(tl_aqm_sojourn_quantile(a, 0.99), a->sojourn_max_ns) / 1000);
	tl_yaml_key_u64(w, "sojourn_max_us", a->sojourn_max_ns / 1000);
	tl_yaml_key_u64(w, "enqueued", a->enqueued);
	tl_yaml_key_u64(w, "dequeued", a->dequeued);
	tl_yaml_key_u64(w, "tx_packets", s->tx_packets);
	tl_yaml_key_u64(w, "tx_bytes", s->tx_bytes);
	tl_yaml_key(w, "drops");
	tl_yaml_map(w);
	tl_yaml_key_u64(w, tl_drop_names[TL_DROP_aqm_codel], a->drops_codel);
	tl_yaml_key_u64(w, tl_drop_names[TL_DROP_aqm_overlimit], a->drops_overlimit);
	tl_yaml_end_map(w);
	tl_yaml_key_u64(w, "ecn_marks", a->ecn_marks);
	tl_yaml_key_u64(w, "backpressure", s->backpressure);
	tl_yaml_key_u64(w, "shaper_waits", s->shaper_waits);
	tl_yaml_key_u64(w, "flows_active", (uint64_t)a->flows_new + a->flows_old);
	tl_yaml_key(w, "aqm");
	tl_ctlapi_show_aqm(w, &s->params);
	tl_yaml_key(w, "shaper");
	tl_ctlapi_show_shaper(w, &s->shaper);
	tl_yaml_end_map(w);
}

static void show_queues(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_queue_snapshot *s = malloc(sizeof(*s));   /* the histogram is large */

	if (!s) {
		w->failed = true;
		return;
	}
	tl_yaml_key(w, "queues");
	tl_yaml_seq(w);
	for (int r = 0; r < TL_PORT_MAX; r++)
		for (unsigned i = 0; dev->ports[r].started && i < dev->dp.n_queues; i++) {   /* owners' */
			tl_worker_queue_read(&dev->workers[i], r, s);
			show_queue(w, r, i, s);
		}
	tl_yaml_end_seq(w);
	free(s);
}

static void show_dirs(struct tl_yaml_writer *w, const char *key, const uint64_t v[TL_DIR_MAX])
{
	tl_yaml_key(w, key);
	tl_yaml_map(w);
	for (int d = 0; d < TL_DIR_MAX; d++)
		tl_yaml_key_u64(w, tl_metrics_dir_names[d], v[d]);
	tl_yaml_end_map(w);
}

static void show_workers(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_crypto_view v;

	tl_yaml_key(w, "workers");
	tl_yaml_seq(w);
	for (unsigned i = 0; i < dev->dp.n_workers; i++) {
		const struct tl_counters *c = &dev->workers[i].cnt;

		tl_yaml_map(w);
		tl_yaml_key_u64(w, "id", i);
		tl_yaml_key(w, "busy_percent");
		tl_yaml_num(w, dev->ctlapi ? dev->ctlapi->load[i].busy_percent : 0.0);
		tl_yaml_key_u64(w, "busy_polls", c->busy_polls);
		tl_yaml_key_u64(w, "idle_polls", c->idle_polls);
		tl_metrics_crypto_view(dev, i, &v);
		tl_yaml_key_bool(w, "owner", v.owner);
		tl_yaml_key_u64(w, "crypto_jobs", v.jobs);
		tl_yaml_key_u64(w, "crypto_packets", v.pkts);
		if (v.owner) {
			show_dirs(w, "inflight", v.inflight);
			show_dirs(w, "job_fifo", (uint64_t[TL_DIR_MAX]){ v.fifo[TL_DIR_ENCAP], v.fifo[TL_DIR_DECAP] });
			show_dirs(w, "crypto_backpressure", v.full);
		}
		tl_yaml_end_map(w);
	}
	tl_yaml_end_seq(w);
}

static void show_drops(struct tl_device *dev, struct tl_yaml_writer *w)
{
	uint64_t sum[TL_DROP_MAX];

	tl_metrics_drops(dev, sum);
	tl_yaml_key(w, "drops");
	tl_yaml_map(w);
	for (int d = 0; d < TL_DROP_MAX; d++)
		tl_yaml_key_u64(w, tl_drop_names[d], sum[d]);
	tl_yaml_end_map(w);
}

int tl_ctlapi_op_show(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w, struct tl_api_error *e)
{
	static const struct {
		const char *name;
		void (*fn)(struct tl_device *dev, struct tl_yaml_writer *w);
	} sections[] = {
		{ "device", show_device }, { "peers", show_peers }, { "ports", show_ports },
		{ "queues", show_queues }, { "workers", show_workers }, { "drops", show_drops },
	};
	const struct tl_api_value *only = tl_api_value_has(&req->args, "section");

	(void)e;
	tl_yaml_map(w);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (!only || !strcmp(only->s, sections[i].name))
			sections[i].fn(dev, w);
	tl_yaml_end_map(w);
	return 0;
}
