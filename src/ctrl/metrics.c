/* Prometheus text exposition (its HTTP server: metrics_http.c): the read model (stats.h),
 * each field under its Prometheus family, and what only Prometheus has: the info gauges,
 * the sojourn histograms, the conservation balances, the busy ratio since the start, and the
 * names existing WireGuard dashboards query from the two common exporters,
 * MindFlavor/prometheus_wireguard_exporter (wireguard_sent_bytes_total, ...) and
 * mdlayher/wireguard_exporter (wireguard_peer_*, which the read model's peer fields use).
 * Names and labels: docs/metrics.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctrl/device.h"
#include "ctrl/metrics_priv.h"
#include "ctrl/stats.h"

#define P tl_buf_printf
#define LABELS 256          /* one sample's labels */

static void family(struct tl_buf *b, const char *name, const char *type, const char *help)
{
	P(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped, as the text format wants. */
static void label_value(char *out, size_t len, const char *v)
{
	size_t o = 0;

	for (; *v && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"')
			out[o++] = '\\', out[o++] = *v;
		else if (*v == '\n')
			out[o++] = '\\', out[o++] = 'n';
		else
			out[o++] = *v;
	}
	out[o] = '\0';
}

/* name{labels,extra} value */
static void sample(struct tl_buf *b, const char *name, const char *labels, const char *extra, const char *value)
{
	bool any = *labels || *extra;

	P(b, "%s%s%s%s%s%s %s\n", name, any ? "{" : "", labels, *labels && *extra ? "," : "", extra, any ? "}" : "",
	  value);
}

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
			family(b, f->prom, f->kind == TL_STAT_COUNTER ? "counter" : "gauge", help);
		}
		for (size_t i = 0; i < n; i++) {
			const void *s = (const char *)base + i * stride;

			if (f->unit == TL_UNIT_US || f->unit == TL_UNIT_NS)
				snprintf(value, sizeof(value), "%.9g", tl_stat_prom_value(s, f));
			else
				snprintf(value, sizeof(value), "%" PRIu64, tl_stat_value(s, f));
			sample(b, f->prom, labels ? labels[i] : "", f->label, value);
		}
	}
}

/* ---- device, ports, drops ---------------------------------------------------------------------- */

static void render_device(struct tl_device *dev, struct tl_buf *b, const struct tl_stats_device *s)
{
	char name[64];

	label_value(name, sizeof(name), s->name);
	family(b, "tunless_info", "gauge", "Device metadata (always 1).");
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
	family(b, "tunless_conservation_balance_packets", "gauge",
	       "Per port: received + generated - transmitted - dropped - handed to the control plane - queued; 0 = every packet accounted for (off by the packets in flight while traffic flows).");
	for (int p = 0; p < TL_PORT_MAX; p++)
		P(b, "tunless_conservation_balance_packets{port=\"%s\"} %" PRId64 "\n", tl_stats_port_names[p],
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
	family(b, "tunless_port_info", "gauge", "A running port: its interface (always 1).");
	for (size_t i = 0; i < n; i++) {
		label_value(iface, sizeof(iface), s[i].iface);
		P(b, "tunless_port_info{port=\"%s\",iface=\"%s\"} 1\n", s[i].port, iface);
	}
	render_fields(b, tl_stats_port_fields, s, sizeof(s[0]), n, labels);
	render_conservation(dev, b);
}

static void render_drops(struct tl_device *dev, struct tl_buf *b)
{
	uint64_t drops[TL_DROP_MAX];

	tl_stats_drops(dev, drops);
	family(b, "tunless_drops_total", "counter", "Packets let go of without delivering them, by reason (one list: src/dataplane/drop.h).");
	for (int i = 0; i < TL_DROP_MAX; i++)
		P(b, "tunless_drops_total{reason=\"%s\"} %" PRIu64 "\n", tl_drop_names[i], drops[i]);
}

/* ---- queues and workers ------------------------------------------------------------------------ */

static void render_sojourn(struct tl_buf *b, struct tl_metrics *m, size_t n, char (*labels)[LABELS])
{
	static const char *name = "tunless_queue_sojourn_seconds";
	uint64_t cum[TL_STATS_SOJOURN_BOUNDS];

	family(b, name, "histogram", "Time delivered packets waited in the egress queue (bounds are edges of the AQM's own histogram; _sum from bucket midpoints, within 1/16).");
	for (size_t q = 0; q < n; q++) {
		const struct tl_aqm_stats *s = &m->snap[q].aqm;
		uint64_t total = tl_stats_sojourn_cumulative(s, cum);

		for (unsigned i = 0; i < TL_STATS_SOJOURN_BOUNDS; i++)
			P(b, "%s_bucket{%s,le=\"%.12g\"} %" PRIu64 "\n", name, labels[q],
			  (double)tl_stats_sojourn_bound(i) / 1e9, cum[i]);
		P(b, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, labels[q], total);
		P(b, "%s_sum{%s} %.9g\n", name, labels[q], tl_stats_sojourn_sum_seconds(s));
		P(b, "%s_count{%s} %" PRIu64 "\n", name, labels[q], total);
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
	render_sojourn(b, m, n, labels);
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
	family(b, "tunless_worker_busy_ratio", "gauge", "Share of a worker's loop time spent in rounds that did work, since start (busy_ns / loop_ns).");
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
		family(b, names[m], types[m], helps[m]);
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
				label_value(name, sizeof(name), v[i].name);
				P(b, ",friendly_name=\"%s\"", name);
			}
			P(b, "} %" PRIu64 "\n", val);
		}
	}
}

/* mdlayher/wireguard_exporter's info gauges; its wireguard_peer_* counters are read-model
 * fields, with the labels device and public_key. */
static void render_peers(struct tl_device *dev, struct tl_buf *b, const struct tl_stats_device *d)
{
	struct tl_stats_peer *v;
	char (*labels)[LABELS] = NULL, dev_name[64], name[128];
	size_t n;

	v = tl_stats_peers(dev, &n, &b->oom);
	if (n && !(labels = calloc(n, sizeof(*labels)))) {
		b->oom = true;
		n = 0;
	}
	label_value(dev_name, sizeof(dev_name), d->name);
	for (size_t i = 0; i < n; i++) {
		snprintf(labels[i], LABELS, "device=\"%s\",public_key=\"%s\"", dev_name, v[i].public_key);
		b->oom |= !v[i].allowed_ips;
	}
	family(b, "wireguard_device_info", "gauge", "Metadata about a device.");
	P(b, "wireguard_device_info{device=\"%s\",public_key=\"%s\"} 1\n", dev_name, d->public_key);
	family(b, "wireguard_peer_info", "gauge", "Metadata about a peer. The public_key label on peer metrics refers to the peer's public key; not the device's public key.");
	for (size_t i = 0; i < n; i++) {
		label_value(name, sizeof(name), v[i].name);
		P(b, "wireguard_peer_info{%s,endpoint=\"%s\",name=\"%s\"} 1\n", labels[i], v[i].endpoint, name);
	}
	family(b, "wireguard_peer_allowed_ips_info", "gauge", "Metadata about each of a peer's allowed IP subnets for a given device.");
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
	family(b, "tunless_ctrl_conservation_balance_packets", "gauge",
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
	family(out, "tunless_metrics_requests_total", "counter", "HTTP requests answered by this endpoint, by outcome.");
	P(out, "tunless_metrics_requests_total{outcome=\"ok\"} %" PRIu64 "\n",
	  dev->metrics ? dev->metrics->requests - dev->metrics->errors : 0);
	P(out, "tunless_metrics_requests_total{outcome=\"error\"} %" PRIu64 "\n", dev->metrics ? dev->metrics->errors : 0);
}
