/* Prometheus text (exposition format 0.0.4): the read model (stats.h), each field under its
 * Prometheus family, and what only Prometheus has: the info gauges, the queue histograms,
 * the conservation balances, the busy ratio since the start, and the names existing
 * WireGuard dashboards query from the two common exporters,
 * MindFlavor/prometheus_wireguard_exporter (wireguard_sent_bytes_total, ...) and
 * mdlayher/wireguard_exporter (wireguard_peer_*, which the read model's peer fields use).
 * Served over HTTP/1.0 and 1.1 on a TCP listener by the request server (api/server.h): a
 * request is at most TL_METRICS_MAX_REQUEST bytes, each connection carries one request and
 * is closed after the response (Connection: close, then a half-close and at most 2 s of
 * draining), a client that stalls is closed, and when every slot is taken the quietest
 * client makes room. Names and labels: docs/metrics.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/httpreq.h"
#include "api/promw.h"
#include "api/server.h"
#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/stats.h"
#include "daemon/metrics.h"
#include "dataplane/lcore.h"

struct tl_metrics {
	struct tl_server srv;
	struct tl_queue_snapshot snap[TL_PORT_MAX * TL_MAX_WORKERS];   /* scratch: the owners' queues */
	uint64_t requests, errors;         /* served, answered with 4xx/5xx */
};

#define P tl_buf_printf
#define LABELS 256          /* one sample's labels */

/* ---- the read model's fields ----------------------------------------------------------------- */

/* A family's help: the field's own, or for fields that share a family, each field's help
 * after its label. */
static void family_help(char *out, size_t len, const struct tl_stat_field *f)
{
	size_t o = 0;

	if (!f[1].id || strcmp(f[1].prom, f->prom)) {
		snprintf(out, len, "%s.", f->help);
		return;
	}
	out[0] = '\0';
	for (const struct tl_stat_field *g = f; g->id && !strcmp(g->prom, f->prom) && o < len; g++)
		o += (size_t)snprintf(out + o, len - o, "%s%s: %s", g == f ? "" : "; ", g->label, g->help);
}

/* Every field of a section, family by family: n entities at base, stride bytes apart, each
 * with its labels. */
static void render_fields(struct tl_buf *b, const struct tl_stat_field *fields, const void *base, size_t stride,
			  size_t n, char (*labels)[LABELS])
{
	char help[1024], value[32];

	for (const struct tl_stat_field *f = fields; f->id; f++) {
		if (f == fields || strcmp(f[-1].prom, f->prom)) {
			family_help(help, sizeof(help), f);
			tl_prom_family(b, f->prom, f->kind == TL_STAT_COUNTER ? "counter" : "gauge", help);
		}
		for (size_t i = 0; i < n; i++) {
			const void *s = (const char *)base + i * stride;

			uint64_t v = tl_stat_value(s, f);

			/* Seconds written exactly, every digit of the count (%g would round). */
			if (f->unit == TL_UNIT_US)
				snprintf(value, sizeof(value), "%" PRIu64 ".%06" PRIu64, v / 1000000u, v % 1000000u);
			else if (f->unit == TL_UNIT_NS)
				snprintf(value, sizeof(value), "%" PRIu64 ".%09" PRIu64, v / 1000000000u, v % 1000000000u);
			else
				snprintf(value, sizeof(value), "%" PRIu64, v);
			tl_prom_sample(b, f->prom, labels ? labels[i] : "", f->label, value);
		}
	}
}

/* ---- device, ports, drops ---------------------------------------------------------------------- */

static void render_device(struct tl_device *dev, struct tl_buf *b, const struct tl_stats_device *s)
{
	char name[64];

	tl_prom_label_value(name, sizeof(name), s->name);
	tl_prom_family(b, "tunless_info", "gauge", "Device metadata (always 1).");
	P(b, "tunless_info{name=\"%s\",mode=\"%s\",public_key=\"%s\",version=\"%s\"} 1\n", name, s->mode, s->public_key,
	  s->version);
	render_fields(b, tl_stats_device_fields, s, 0, 1, NULL);
	(void)dev;
}

/* The per-port balance of tl_conservation (also /tunless/conservation). */
static void render_conservation(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_port_balance bal[TL_PORT_MAX];

	tl_conservation(dev->workers, dev->dp.n_workers, bal);
	tl_prom_family(b, "tunless_conservation_balance_packets", "gauge",
	       "Per port: received + generated - transmitted - dropped - handed to the control plane - queued; 0 = every packet accounted for (off by the packets in flight while traffic flows).");
	for (int p = 0; p < TL_PORT_MAX; p++)
		P(b, "tunless_conservation_balance_packets{port=\"%s\"} %" PRId64 "\n", tl_port_names[p],
		  bal[p].balance);
}

static void render_ports(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_stats_port s[TL_PORT_MAX];
	char labels[TL_PORT_MAX][LABELS], iface[64];
	size_t n = 0;

	for (int r = 0; r < TL_PORT_MAX; r++)
		if (tl_stats_port(dev, r, &s[n]) == 0) {
			snprintf(labels[n], LABELS, "port=\"%s\"", s[n].port);
			n++;
		}
	tl_prom_family(b, "tunless_port_info", "gauge", "A running port: its interface (always 1).");
	for (size_t i = 0; i < n; i++) {
		tl_prom_label_value(iface, sizeof(iface), s[i].iface);
		P(b, "tunless_port_info{port=\"%s\",iface=\"%s\"} 1\n", s[i].port, iface);
	}
	render_fields(b, tl_stats_port_fields, s, sizeof(s[0]), n, labels);
	render_conservation(dev, b);
}

static void render_drops(struct tl_device *dev, struct tl_buf *b)
{
	uint64_t drops[TL_DROP_MAX];

	tl_stats_drops(dev, drops);
	tl_prom_family(b, "tunless_drops_total", "counter", "Packets let go of without delivering them, by reason (one list: src/dataplane/drop.h).");
	for (int i = 0; i < TL_DROP_MAX; i++)
		P(b, "tunless_drops_total{reason=\"%s\"} %" PRIu64 "\n", tl_drop_names[i], drops[i]);
}

/* ---- queues and workers ------------------------------------------------------------------------ */

/* A histogram family of the egress queues, from the AQM's own histograms: for the whole
 * queue (cls TL_AQM_ALL) or for each DRR class under a class label. */
struct hist_family {
	const char *name, *help;
	uint64_t (*cumulative)(const struct tl_aqm_stats *s, unsigned cls, uint64_t cum[TL_AQM_HIST_BOUNDS]);
	double (*sum)(const struct tl_aqm_stats *s, unsigned cls);
	double scale;            /* a bound in the family's unit */
	bool classes;
};

static const char *const class_names[TL_AQM_CLASSES] = { "sparse", "bulk" };

static void render_hist_one(struct tl_buf *b, const struct hist_family *h, const struct tl_aqm_stats *s,
			    unsigned cls, const char *labels)
{
	uint64_t cum[TL_AQM_HIST_BOUNDS];
	uint64_t total = h->cumulative(s, cls, cum);

	for (unsigned i = 0; i < TL_AQM_HIST_BOUNDS; i++)
		P(b, "%s_bucket{%s,le=\"%.12g\"} %" PRIu64 "\n", h->name, labels,
		  (double)tl_aqm_hist_bound(i) * h->scale, cum[i]);
	P(b, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", h->name, labels, total);
	P(b, "%s_sum{%s} %.9g\n", h->name, labels, h->sum(s, cls));
	P(b, "%s_count{%s} %" PRIu64 "\n", h->name, labels, total);
}

static void render_hists(struct tl_buf *b, struct tl_metrics *m, size_t n, char (*labels)[LABELS])
{
	static const struct hist_family fams[] = {
		{ "tunless_queue_sojourn_seconds", "Time delivered packets waited in the egress queue (bounds are edges of the AQM's own histogram; _sum from bucket midpoints, within 1/16).",
		  tl_aqm_sojourn_cumulative, tl_aqm_sojourn_sum_seconds, 1e-9, false },
		{ "tunless_queue_class_sojourn_seconds", "Time delivered packets waited in the egress queue, by DRR class: sparse (served from the new-flows list) and bulk (the old list).",
		  tl_aqm_sojourn_cumulative, tl_aqm_sojourn_sum_seconds, 1e-9, true },
		{ "tunless_queue_served_ahead_bytes", "Bytes the egress queue served between a delivered packet's arrival and its own service, by DRR class (flow isolation: small for sparse packets whatever the bulk backlog).",
		  tl_aqm_ahead_cumulative, tl_aqm_ahead_sum_bytes, 1, true },
	};
	char cl[LABELS + 32];

	for (size_t f = 0; f < RTE_DIM(fams); f++) {
		tl_prom_family(b, fams[f].name, "histogram", fams[f].help);
		for (size_t q = 0; q < n; q++) {
			if (!fams[f].classes) {
				render_hist_one(b, &fams[f], &m->snap[q].aqm, TL_AQM_ALL, labels[q]);
				continue;
			}
			for (unsigned c = 0; c < TL_AQM_CLASSES; c++) {
				snprintf(cl, sizeof(cl), "%.*s,class=\"%s\"", LABELS - 1, labels[q], class_names[c]);
				render_hist_one(b, &fams[f], &m->snap[q].aqm, c, cl);
			}
		}
	}
}

/* Egress queues are the queue owners' (worker w < n_queues). */
static void render_queues(struct tl_device *dev, struct tl_buf *b, struct tl_metrics *m)
{
	static struct tl_stats_queue s[TL_PORT_MAX * TL_MAX_WORKERS];
	static char labels[TL_PORT_MAX * TL_MAX_WORKERS][LABELS];
	size_t n = 0;

	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; dev->ports[p].started && w < dev->dp.n_queues; w++, n++) {
			tl_stats_queue(dev, p, w, &s[n], &m->snap[n]);
			snprintf(labels[n], LABELS, "port=\"%s\",worker=\"%u\"", s[n].port, w);
		}
	render_fields(b, tl_stats_queue_fields, s, sizeof(s[0]), n, labels);
	render_hists(b, m, n, labels);
}

static void render_workers(struct tl_device *dev, struct tl_buf *b)
{
	static struct tl_stats_worker s[TL_MAX_WORKERS];
	static char labels[TL_MAX_WORKERS][LABELS];
	unsigned n = dev->dp.n_workers;

	for (unsigned w = 0; w < n; w++) {
		tl_stats_worker(dev, w, &s[w]);
		snprintf(labels[w], LABELS, "worker=\"%u\"", w);
	}
	render_fields(b, tl_stats_worker_fields, s, sizeof(s[0]), n, labels);
	tl_prom_family(b, "tunless_worker_busy_ratio", "gauge", "Share of a worker's loop time spent in rounds that did work, since start (busy_ns / loop_ns).");
	for (unsigned w = 0; w < n; w++)
		P(b, "tunless_worker_busy_ratio{%s} %.9g\n", labels[w],
		  s[w].loop_ns ? (double)s[w].busy_ns / (double)s[w].loop_ns : 0.0);
}

/* ---- peers ------------------------------------------------------------------------------------- */

/* MindFlavor/prometheus_wireguard_exporter: labels interface, public_key, allowed_ips, and
 * friendly_name when the peer has a name; its byte counters and handshake times are the same
 * values as the read model's rx_bytes, tx_bytes and last_handshake. */
static void render_mindflavor(struct tl_buf *b, const char *dev_name, const struct tl_stats_peer *v, size_t n)
{
	static const char *const names[] = { "wireguard_sent_bytes_total", "wireguard_received_bytes_total",
					     "wireguard_latest_handshake_seconds", "wireguard_latest_handshake_delay_seconds" };
	static const char *const types[] = { "counter", "counter", "gauge", "gauge" };
	static const char *const helps[] = { "Bytes sent to the peer", "Bytes received from the peer",
					     "UNIX timestamp of the latest handshake (0 = never)",
					     "Seconds since the latest handshake (absent if none yet)" };
	uint64_t now = (uint64_t)time(NULL);
	char name[128];

	for (int m = 0; m < 4; m++) {
		tl_prom_family(b, names[m], types[m], helps[m]);
		for (size_t i = 0; i < n; i++) {
			uint64_t val = m == 0 ? v[i].tx_bytes : m == 1 ? v[i].rx_bytes : v[i].last_handshake;

			if (m == 3) {
				if (!v[i].last_handshake)
					continue;
				val = now > v[i].last_handshake ? now - v[i].last_handshake : 0;
			}
			P(b, "%s{interface=\"%s\",public_key=\"%s\",allowed_ips=\"%s\"", names[m], dev_name, v[i].public_key,
			  v[i].allowed_ips ? v[i].allowed_ips : "");
			if (v[i].name[0]) {
				tl_prom_label_value(name, sizeof(name), v[i].name);
				P(b, ",friendly_name=\"%s\"", name);
			}
			P(b, "} %" PRIu64 "\n", val);
		}
	}
}

/* mdlayher/wireguard_exporter's info gauges; its wireguard_peer_* counters are read-model
 * fields, with the labels device and public_key. Above metrics.peer_series_max peers the
 * families have no samples (a hub's 100 000 peers would be millions of series, as exporters
 * for large hubs leave them out): the device's totals and the control API's paged show
 * remain. */
static void render_peers(struct tl_device *dev, struct tl_buf *b, const struct tl_stats_device *d)
{
	struct tl_stats_peer *v = NULL;
	char (*labels)[LABELS] = NULL, dev_name[64], name[128];
	size_t n = 0;
	uint32_t max = dev->cfg->metrics.peer_series_max;

	if (dev->n_peers <= max)
		v = tl_stats_peers(dev, &n, &b->oom);
	else
		P(b, "# per-peer series omitted: %u peers, metrics.peer_series_max is %u\n", dev->n_peers, max);
	if (n && !(labels = calloc(n, sizeof(*labels)))) {
		b->oom = true;
		n = 0;
	}
	tl_prom_label_value(dev_name, sizeof(dev_name), d->name);
	for (size_t i = 0; i < n; i++) {
		snprintf(labels[i], LABELS, "device=\"%s\",public_key=\"%s\"", dev_name, v[i].public_key);
		b->oom |= !v[i].allowed_ips;
	}
	tl_prom_family(b, "wireguard_device_info", "gauge", "Metadata about a device.");
	P(b, "wireguard_device_info{device=\"%s\",public_key=\"%s\"} 1\n", dev_name, d->public_key);
	tl_prom_family(b, "wireguard_peer_info", "gauge", "Metadata about a peer. The public_key label on peer metrics refers to the peer's public key; not the device's public key.");
	for (size_t i = 0; i < n; i++) {
		tl_prom_label_value(name, sizeof(name), v[i].name);
		P(b, "wireguard_peer_info{%s,endpoint=\"%s\",name=\"%s\"} 1\n", labels[i], v[i].endpoint, name);
	}
	tl_prom_family(b, "wireguard_peer_allowed_ips_info", "gauge", "Metadata about each of a peer's allowed IP subnets for a given device.");
	for (size_t i = 0; i < n; i++)
		for (const char *p = v[i].allowed_ips; p && *p;) {
			size_t len = strcspn(p, ",");

			P(b, "wireguard_peer_allowed_ips_info{%s,allowed_ips=\"%.*s\",family=\"%s\"} 1\n", labels[i], (int)len, p,
			  memchr(p, ':', len) ? "IPv6" : "IPv4");
			p += len + (p[len] == ',');
		}
	render_mindflavor(b, dev_name, v, n);
	render_fields(b, tl_stats_peer_fields, v, sizeof(v[0]), n, labels);
	free(labels);
	tl_stats_peers_free(v, n);
}

/* ---- the whole exposition ---------------------------------------------------------------------- */

/* The control plane's account per flow (also /tunless/conservation's ctrl). */
static void render_ctrl_balance(struct tl_device *dev, struct tl_buf *b)
{
	struct tl_flow_balance flow[TL_FLOW_MAX];

	tl_ctrl_balance(dev, flow);
	tl_prom_family(b, "tunless_ctrl_conservation_balance_packets", "gauge",
	       "Per control-plane flow: entered - left - dropped - held in a ring; 0 = every packet accounted for (off by the packets in flight).");
	for (int f = 0; f < TL_FLOW_MAX; f++)
		P(b, "tunless_ctrl_conservation_balance_packets{flow=\"%s\"} %" PRId64 "\n", tl_ctrl_flow_names[f],
		  flow[f].balance);
}

void tl_metrics_render(struct tl_device *dev, struct tl_buf *out)
{
	struct tl_metrics *m = dev->metrics;
	struct tl_stats_device d;

	if (!m) {           /* rendering without a listener (tests): snapshots on the heap */
		m = calloc(1, sizeof(*m));
		if (!m) {
			out->oom = true;
			return;
		}
	}
	tl_stats_device(dev, &d);
	render_device(dev, out, &d);
	render_ports(dev, out);
	render_drops(dev, out);
	render_queues(dev, out, m);
	render_workers(dev, out);
	render_peers(dev, out, &d);
	render_ctrl_balance(dev, out);
	if (m != dev->metrics)
		free(m);
	tl_prom_family(out, "tunless_metrics_requests_total", "counter", "HTTP requests answered by this endpoint, by outcome.");
	P(out, "tunless_metrics_requests_total{outcome=\"ok\"} %" PRIu64 "\n",
	  dev->metrics ? dev->metrics->requests - dev->metrics->errors : 0);
	P(out, "tunless_metrics_requests_total{outcome=\"error\"} %" PRIu64 "\n", dev->metrics ? dev->metrics->errors : 0);
}

/* ---- the HTTP endpoint: GET (or HEAD) /metrics, over the request server ------------------------- */

static void render(void *dev, struct tl_buf *body)
{
	tl_metrics_render(dev, body);
}

int tl_metrics_http(struct tl_device *dev, const char *req, size_t len, struct tl_buf *out)
{
	return tl_http_get(out, req, len, "/metrics", "text/plain; version=0.0.4; charset=utf-8", render, dev);
}

/* ---- the protocol over the request server ---------------------------------------------------- */

static void count(struct tl_device *dev, int code)
{
	dev->metrics->requests++;
	if (code >= 400)
		dev->metrics->errors++;
}

static enum tl_server_next http_answer(void *ctx, char *req, size_t len, struct tl_buf *out)
{
	count(ctx, tl_metrics_http(ctx, req, len, out));
	return TL_SERVER_CLOSE;
}

/* The client finished sending: answer what came, if anything. */
static void http_at_eof(void *ctx, char *in, size_t len, struct tl_buf *out)
{
	if (len)
		http_answer(ctx, in, len, out);
}

/* An error found before the request could be parsed. */
static void http_refuse(void *ctx, bool oom, struct tl_buf *out)
{
	count(ctx, tl_http_respond_error(out, oom ? 500 : 431, 1, NULL));
}

static const struct tl_server_ops http_ops = {
	.name = "metrics",
	.request_end = tl_http_request_end,
	.answer = http_answer,
	.at_eof = http_at_eof,
	.refuse = http_refuse,
	.max_request = TL_METRICS_MAX_REQUEST,
	.first_buffer = TL_METRICS_MAX_REQUEST + 1,
	.read_chunk = TL_METRICS_MAX_REQUEST,
	.idle_ns = 10ull * TL_NS,
	.one_request = true,
	.linger_ns = 2ull * TL_NS,
	.evict_quietest = true,
	.accepts_per_event = 4,
};


int tl_metrics_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_metrics *m;
	char where[64];
	int fd;

	if (!dev->cfg->metrics.enabled)
		return 0;
	tl_sockaddr_format(where, sizeof(where), &dev->cfg->metrics.listen);
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "metrics: %s", strerror(ENOMEM));
		return -1;
	}
	fd = tl_server_listen_tcp(&dev->cfg->metrics.listen, TL_SERVER_MAX_CLIENTS);
	if (fd < 0 || tl_server_start(&m->srv, &http_ops, dev, dev->loop, fd) != 0) {
		snprintf(err, errlen, "metrics.listen: cannot listen on %s: %s", where, strerror(errno));
		free(m);
		return -1;
	}
	dev->metrics = m;
	dev->servers[TL_SERVER_METRICS] = &m->srv;
	tl_log_info("metrics: Prometheus text on http://%s/metrics", where);
	return 0;
}

void tl_metrics_close(struct tl_device *dev)
{
	struct tl_metrics *m = dev->metrics;

	if (!m)
		return;
	tl_server_stop(&m->srv);
	free(m);
	dev->metrics = NULL;
	dev->servers[TL_SERVER_METRICS] = NULL;
}
