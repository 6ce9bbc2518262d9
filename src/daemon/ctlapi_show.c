/* The control API's show: the read model (stats.h) as YAML, section by section; keys are the
 * fields' ids. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctrl/device.h"
#include "ctrl/peer.h"
#include "ctrl/stats.h"
#include "daemon/ctlapi.h"

/* Peers in a show reply when the request names no limit. */
#define TL_SHOW_PEERS_DEFAULT 1000

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

static void show_peer(struct tl_yaml_writer *w, const struct tl_stats_peer *v)
{
	tl_yaml_map(w);
	if (v->name[0])
		tl_yaml_key_str(w, "name", v->name);
	tl_yaml_key_str(w, "public_key", v->public_key);
	if (v->endpoint[0])
		tl_yaml_key_str(w, "endpoint", v->endpoint);
	tl_yaml_key(w, "allowed_ips");
	show_prefixes(w, v->allowed_ips ? v->allowed_ips : "");
	w->failed |= !v->allowed_ips;
	show_fields(w, v, tl_stats_peer_fields);
	/* Deprecated, for one release: show's key before the read model renamed it last_handshake
	 * (UNIX seconds); the seconds since it, absent before the first handshake, as it was. */
	if (v->last_handshake) {
		uint64_t now = (uint64_t)time(NULL);

		tl_yaml_key_u64(w, "latest_handshake_age_s", now > v->last_handshake ? now - v->last_handshake : 0);
	}
	tl_yaml_end_map(w);
}

static bool peer_matches(const struct tl_stats_peer *v, const char *filter)
{
	return !filter || strstr(v->public_key, filter) || strstr(v->name, filter) || strstr(v->endpoint, filter) ||
	       (v->allowed_ips && strstr(v->allowed_ips, filter));
}

/* A page of peers: at most limit of those after `after` (in the order they were added) that
 * match the filter; peers_next names the last one when the page is full. The peers are those
 * of the published view (what is committed), read a chunk at a time: only the peers of the
 * page are rendered, whatever the device holds. */
static void show_peers(struct tl_device *dev, struct tl_yaml_writer *w, const struct tl_api_request *req)
{
	const struct tl_api_value *lim = tl_api_value_has(&req->args, "limit");
	const struct tl_api_value *after = tl_api_value_has(&req->args, "after");
	const struct tl_api_value *filter = tl_api_value_has(&req->args, "filter");
	size_t limit = lim ? (size_t)lim->i : TL_SHOW_PEERS_DEFAULT, n = 0, total, at;
	struct tl_stats_view *view = tl_stats_view_get(dev);
	struct tl_stats_peer chunk[64];
	uint8_t last[TL_KEY_LEN];
	char next[64] = "";

	total = tl_stats_view_peers(view);
	at = !after ? 0 : (at = tl_stats_view_find(view, after->key)) == SIZE_MAX ? total : at + 1;
	tl_yaml_key_u64(w, "peers_total", total);
	tl_yaml_key(w, "peers");
	tl_yaml_seq(w);
	while (at < total && n < limit) {
		size_t got = tl_stats_view_read(dev, view, at, sizeof(chunk) / sizeof(chunk[0]), chunk, &w->failed);

		for (size_t i = 0; i < got; i++) {
			if (n < limit && peer_matches(&chunk[i], filter ? filter->s : NULL)) {
				show_peer(w, &chunk[i]);
				if (++n == limit)
					snprintf(next, sizeof(next), "%s", chunk[i].public_key);
			}
			tl_stats_peer_free(&chunk[i]);
		}
		at += sizeof(chunk) / sizeof(chunk[0]);
	}
	tl_yaml_end_seq(w);
	if (next[0] && tl_key_from_base64(last, next) == 0 && (at = tl_stats_view_find(view, last)) + 1 < total)
		tl_yaml_key_str(w, "peers_next", next);    /* more peers follow it */
	tl_stats_view_put(view);
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
		{ "device", show_device }, { "peers", NULL }, { "ports", show_ports },
		{ "queues", show_queues }, { "workers", show_workers }, { "drops", show_drops },
	};
	const struct tl_api_value *only = tl_api_value_has(&req->args, "section");

	(void)e;
	tl_yaml_map(w);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (only && strcmp(only->s, sections[i].name))
			continue;
		if (sections[i].fn)
			sections[i].fn(dev, w);
		else
			show_peers(dev, w, req);
	}
	tl_yaml_end_map(w);
	return 0;
}
