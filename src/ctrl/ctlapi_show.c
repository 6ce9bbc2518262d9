/* The control API's show: the read model (stats.h) as YAML, section by section; keys are the
 * fields' ids. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl/ctlapi.h"
#include "ctrl/device.h"
#include "ctrl/stats.h"

static void show_fields(struct tl_yaml_writer *w, const void *s, const struct tl_stat_field *f)
{
	for (; f->id; f++)
		if (f->unit == TL_UNIT_BOOL)
			tl_yaml_key_bool(w, f->id, tl_stat_value(s, f) != 0);
		else
			tl_yaml_key_u64(w, f->id, tl_stat_value(s, f));
}

static void show_device(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_stats_device s;

	tl_stats_device(dev, &s);
	tl_yaml_key(w, "device");
	tl_yaml_map(w);
	tl_yaml_key_str(w, "name", s.name);
	tl_yaml_key_str(w, "mode", s.mode);
	tl_yaml_key_str(w, "public_key", s.public_key);
	tl_yaml_key_str(w, "version", s.version);
	show_fields(w, &s, tl_stats_device_fields);
	tl_yaml_end_map(w);
}

/* "a/n,b/m" as a flow sequence. */
static void show_prefixes(struct tl_yaml_writer *w, const char *list)
{
	tl_yaml_flow_seq(w);
	while (*list) {
		size_t n = strcspn(list, ",");
		char p[64];

		snprintf(p, sizeof(p), "%.*s", (int)n, list);
		tl_yaml_str(w, p);
		list += n + (list[n] == ',');
	}
	tl_yaml_end_seq(w);
}

static void show_peers(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_stats_peer *v;
	size_t n;

	v = tl_stats_peers(dev, &n, &w->failed);
	tl_yaml_key(w, "peers");
	tl_yaml_seq(w);
	for (size_t i = 0; i < n; i++) {
		tl_yaml_map(w);
		if (v[i].name[0])
			tl_yaml_key_str(w, "name", v[i].name);
		tl_yaml_key_str(w, "public_key", v[i].public_key);
		if (v[i].endpoint[0])
			tl_yaml_key_str(w, "endpoint", v[i].endpoint);
		tl_yaml_key(w, "allowed_ips");
		show_prefixes(w, v[i].allowed_ips ? v[i].allowed_ips : "");
		w->failed |= !v[i].allowed_ips;
		show_fields(w, &v[i], tl_stats_peer_fields);
		tl_yaml_end_map(w);
	}
	tl_yaml_end_seq(w);
	tl_stats_peers_free(v, n);
}

static void show_ports(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_stats_port s;

	tl_yaml_key(w, "ports");
	tl_yaml_seq(w);
	for (int r = 0; r < TL_PORT_MAX; r++) {
		if (tl_stats_port(dev, r, &s) != 0)
			continue;
		tl_yaml_map(w);
		tl_yaml_key_str(w, "port", s.port);
		tl_yaml_key_str(w, "iface", s.iface);
		show_fields(w, &s, tl_stats_port_fields);
		tl_yaml_end_map(w);
	}
	tl_yaml_end_seq(w);
}

static void show_queues(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_queue_snapshot *snap = malloc(sizeof(*snap));   /* the histogram is large */
	struct tl_stats_queue s;

	if (!snap) {
		w->failed = true;
		return;
	}
	tl_yaml_key(w, "queues");
	tl_yaml_seq(w);
	for (int r = 0; r < TL_PORT_MAX; r++)
		for (unsigned i = 0; dev->ports[r].started && i < dev->dp.n_queues; i++) {   /* owners' */
			tl_stats_queue(dev, r, i, &s, snap);
			tl_yaml_map(w);
			tl_yaml_key_str(w, "port", s.port);
			tl_yaml_key_u64(w, "worker", s.worker);
			show_fields(w, &s, tl_stats_queue_fields);
			tl_yaml_end_map(w);
		}
	tl_yaml_end_seq(w);
	free(snap);
}

static void show_workers(struct tl_device *dev, struct tl_yaml_writer *w)
{
	struct tl_stats_worker s;

	tl_yaml_key(w, "workers");
	tl_yaml_seq(w);
	for (unsigned i = 0; i < dev->dp.n_workers; i++) {
		tl_stats_worker(dev, i, &s);
		tl_yaml_map(w);
		tl_yaml_key_u64(w, "worker", s.worker);
		show_fields(w, &s, tl_stats_worker_fields);
		tl_yaml_end_map(w);
	}
	tl_yaml_end_seq(w);
}

static void show_drops(struct tl_device *dev, struct tl_yaml_writer *w)
{
	uint64_t sum[TL_DROP_MAX];

	tl_stats_drops(dev, sum);
	tl_yaml_key(w, "drops");
	tl_yaml_map(w);
	for (int d = 0; d < TL_DROP_MAX; d++)
		tl_yaml_key_u64(w, tl_drop_names[d], sum[d]);
	tl_yaml_end_map(w);
}

int tl_ctlapi_op_show(struct tl_device *dev, const struct tl_api_request *req, struct tl_yaml_writer *w,
		      struct tl_api_error *e)
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
