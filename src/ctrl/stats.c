/* The read model (stats.h): its field tables, the structs filled from the counters, the sums
 * every observer shares (counters, drops with each port's missed frames, the control plane's
 * balance, the sojourn histogram's bounds), and the per-second worker load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "common/key.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "ctrl/stats.h"

/* One peer's configuration as a publish saw it: immutable, shared by every view that shows it
 * unchanged (a publish makes records for the peers that changed only). */
struct rm_peer {
	atomic_uint refs;
	const struct tl_peer_ctrl *pc;     /* compared, never followed: the peer may be gone */
	uint32_t id;
	uint16_t keepalive;
	uint8_t key[TL_KEY_LEN];
	char name[32], public_key[45];
	size_t n_aips;
	struct tl_prefix *aips;            /* in the write model's order */
	char aips_text[];                  /* "a/n,b/m" */
};

/* A published read model: the peers committed, in list order, and our public key. */
struct tl_stats_view {
	atomic_uint refs;
	char public_key[45];
	size_t n;
	uint32_t n_ids;
	uint32_t *pos;                     /* peer id -> index in peer[]; NO_POS: not in the view */
	struct rm_peer **peer;
};

struct tl_readmodel {
	pthread_mutex_t lock;              /* cur, and a reference taken on it */
	struct tl_stats_view *cur;
	uint64_t publishes, failures;
};

#define NO_POS UINT32_MAX

#define TL_STATS_DESC(section, ...) TL_STATS_DESC_(section, __VA_ARGS__)
#define TL_STATS_DESC_(section, id, kind, unit, prom, label, help) \
	{ #id, TL_STAT_##kind, TL_UNIT_##unit, prom, label, help, offsetof(struct section, id) },
#define DEVICE_DESC(...) TL_STATS_DESC(tl_stats_device, __VA_ARGS__)
#define PORT_DESC(...) TL_STATS_DESC(tl_stats_port, __VA_ARGS__)
#define QUEUE_DESC(...) TL_STATS_DESC(tl_stats_queue, __VA_ARGS__)
#define WORKER_DESC(...) TL_STATS_DESC(tl_stats_worker, __VA_ARGS__)
#define PEER_DESC(...) TL_STATS_DESC(tl_stats_peer, __VA_ARGS__)

const struct tl_stat_field tl_stats_device_fields[] = { TL_STATS_DEVICE(DEVICE_DESC) { 0 } };
const struct tl_stat_field tl_stats_port_fields[] = { TL_STATS_PORT(PORT_DESC) { 0 } };
const struct tl_stat_field tl_stats_queue_fields[] = { TL_STATS_QUEUE(QUEUE_DESC) { 0 } };
const struct tl_stat_field tl_stats_worker_fields[] = { TL_STATS_WORKER(WORKER_DESC) { 0 } };
const struct tl_stat_field tl_stats_peer_fields[] = { TL_STATS_PEER(PEER_DESC) { 0 } };

const char *const tl_stats_dir_names[TL_DIR_MAX] = { "encap", "decap" };
const char *const tl_ctrl_flow_names[TL_FLOW_MAX] = { "handshakes", "staged", "frames", "slowpath" };

double tl_stat_prom_value(const void *s, const struct tl_stat_field *f)
{
	double v = (double)tl_stat_value(s, f);

	return f->unit == TL_UNIT_US ? v / 1e6 : f->unit == TL_UNIT_NS ? v / 1e9 : v;
}

/* ---- sums ------------------------------------------------------------------------------------ */

void tl_stats_counters_sum(const struct tl_device *dev, struct tl_counters *sum)
{
	tl_dp_counters_sum(dev->workers, dev->dp.n_workers, &dev->cnt, sum);
}

enum tl_drop tl_stats_missed_reason(const struct tl_device *dev, int role)
{
	/* net_af_xdp reports as imissed the frames its socket had no buffer for (XDP_STATISTICS
	 * rx_dropped: the fill ring was empty because the RX ring, which holds as many, was not
	 * read; a frame arriving at a full RX ring is the same case); a NIC PMD reports frames
	 * its own RX ring had no room for. */
	if (dev->dp.port[role].udp || dev->dp.port[role].afp)   /* the sockets' drop counts */
		return TL_DROP_kernel_socket_overflow;
	return dev->ports[role].af_xdp ? TL_DROP_xsk_ring_full : TL_DROP_nic_rx_missed;
}

void tl_stats_drops(struct tl_device *dev, uint64_t drops[TL_DROP_MAX])
{
	struct tl_counters sum;

	tl_stats_counters_sum(dev, &sum);
	memcpy(drops, sum.drops, sizeof(sum.drops));
	for (int p = 0; p < TL_PORT_MAX; p++) {
		struct rte_eth_stats st = { 0 };

		if (tl_port_stats(dev, p, &st) == 0)
			drops[tl_stats_missed_reason(dev, p)] += st.imissed;
	}
}

static void flow_set(struct tl_flow_balance *f, uint64_t in, uint64_t out, uint64_t dropped, uint64_t held)
{
	*f = (struct tl_flow_balance){ .in = in, .out = out, .dropped = dropped, .held = held };
	f->balance = (int64_t)in - (int64_t)(out + dropped + held);
}

void tl_ctrl_balance(struct tl_device *dev, struct tl_flow_balance out[TL_FLOW_MAX])
{
	const struct tl_counters *cc = &dev->cnt;
	uint64_t to_ctrl = 0, staged = 0, staged_drops = tl_cnt_read(&cc->staged_drops), staged_held = 0;
	uint64_t from_ctrl = 0, ctrl_tx_held = 0, slow_rx = 0, slow_held = 0;

	for (unsigned i = 0; i < dev->dp.n_workers; i++) {
		struct tl_worker *w = &dev->workers[i];

		to_ctrl += tl_cnt_read(&w->cnt.to_ctrl);
		staged += tl_cnt_read(&w->cnt.staged);
		staged_drops += tl_cnt_read(&w->cnt.staged_drops);
		from_ctrl += tl_cnt_read(&w->cnt.from_ctrl);
		slow_rx += tl_cnt_read(&w->cnt.slowpath_rx);
		ctrl_tx_held += w->ctrl_tx ? rte_ring_count(w->ctrl_tx) : 0;
		slow_held += w->slow_rx ? rte_ring_count(w->slow_rx) : 0;
	}
	/* in the stage ring, and in the peers' queues (counted by the control plane) */
	staged_held = (dev->dp.stage_ring ? rte_ring_count(dev->dp.stage_ring) : 0) +
		      __atomic_load_n(&dev->staged_queued, __ATOMIC_RELAXED);
	flow_set(&out[TL_FLOW_HANDSHAKES], to_ctrl, tl_cnt_read(&cc->consumed), tl_cnt_read(&cc->hs_drops),
		 dev->dp.hs_ring ? rte_ring_count(dev->dp.hs_ring) : 0);
	flow_set(&out[TL_FLOW_STAGED], staged, tl_cnt_read(&cc->unstaged), staged_drops, staged_held);
	flow_set(&out[TL_FLOW_FRAMES], tl_cnt_read(&cc->built), from_ctrl, 0, ctrl_tx_held);
	flow_set(&out[TL_FLOW_SLOWPATH], tl_cnt_read(&cc->slowpath_read), slow_rx, tl_cnt_read(&cc->slowpath_drops),
		 slow_held);
}

/* ---- sections -------------------------------------------------------------------------------- */

void tl_stats_device(struct tl_device *dev, struct tl_stats_device *s)
{
	struct tl_stats_view *v;
	struct tl_peer_ctrl *pc;
	struct tl_counters sum;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", dev->cfg->name);
	snprintf(s->mode, sizeof(s->mode), "%s", dev->dp.host_mode ? "host" : "gateway");
	snprintf(s->version, sizeof(s->version), "%s", TL_VERSION);
	tl_stats_counters_sum(dev, &sum);
	s->listen_port = tl_dp_listen_port(&dev->dp);
	s->mtu = dev->dp.mtu;
	s->workers = dev->dp.n_workers;
	s->queue_pairs = dev->dp.n_queues;
	s->crypto_ring = dev->dp.crypto_ring ? rte_ring_count(dev->dp.crypto_ring) : 0;
	s->crypto_ring_capacity = dev->dp.crypto_ring ? rte_ring_get_capacity(dev->dp.crypto_ring) : 0;
	s->uptime_s = dev->start_ns ? (tl_now_ns() - dev->start_ns) / TL_NS : 0;
	s->to_ctrl = sum.to_ctrl;
	s->consumed = sum.consumed;
	s->staged = sum.staged;
	s->unstaged = sum.unstaged;
	s->from_ctrl = sum.from_ctrl;
	s->slowpath_rx = sum.slowpath_rx;
	s->icmp_errors = sum.icmp_errors;
	s->csum_completed = sum.csum_completed;
	s->fragmented = sum.fragmented;
	s->fragments = sum.fragments;
	s->handshakes_sent = dev->handshakes_sent;
	s->handshakes_received = dev->handshakes_received;
	s->cookies_sent = dev->cookies_sent;
	v = tl_stats_view_get(dev);          /* our key and the peers as last committed */
	pthread_mutex_lock(&dev->lock);     /* peers come and go; before a view, our key */
	if (v) {
		memcpy(s->public_key, v->public_key, sizeof(s->public_key));
		s->peers = v->n;
	} else {
		tl_key_to_base64(s->public_key, dev->id.pub);
	}
	tl_stats_view_put(v);
	TAILQ_FOREACH(pc, &dev->peers, link)
		s->handshakes_completed += __atomic_load_n(&pc->handshakes, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&dev->lock);
}

int tl_stats_port(struct tl_device *dev, int role, struct tl_stats_port *s)
{
	struct rte_eth_stats st = { 0 };
	struct tl_counters sum;

	memset(s, 0, sizeof(*s));
	s->port = tl_port_names[role];
	if (!dev->ports[role].started)
		return -1;
	snprintf(s->iface, sizeof(s->iface), "%s", tl_port_iface(dev, role));
	tl_stats_counters_sum(dev, &sum);
	tl_port_stats(dev, role, &st);
	s->rx_packets = sum.rx[role];
	s->tx_packets = sum.tx[role];
	s->backpressure = sum.backpressure[role];
	s->rx_drops = sum.rx_drops[role];
	s->dequeue_drops = sum.deq_drops[role];
	s->ethdev_rx_packets = st.ipackets;
	s->ethdev_tx_packets = st.opackets;
	s->ethdev_rx_bytes = st.ibytes;
	s->ethdev_tx_bytes = st.obytes;
	s->ethdev_rx_missed = st.imissed;
	s->ethdev_rx_errors = st.ierrors;
	s->ethdev_tx_errors = st.oerrors;
	tl_port_gso(dev, role, &s->gso_rx, &s->gso_tx);
	return 0;
}

void tl_stats_queue(struct tl_device *dev, int role, unsigned worker, struct tl_stats_queue *s,
		    struct tl_queue_snapshot *snap)
{
	const struct tl_aqm_stats *a = &snap->aqm;
	uint64_t cum[TL_AQM_SOJOURN_BOUNDS];

	memset(s, 0, sizeof(*s));
	s->port = tl_port_names[role];
	s->worker = worker;
	tl_worker_queue_read(&dev->workers[worker], role, snap);
	s->depth_packets = a->backlog_pkts;
	s->depth_bytes = a->backlog_bytes;
	s->memory_bytes = a->memory_bytes;
	s->enqueued = a->enqueued;
	s->dequeued = a->dequeued;
	s->requeued = a->requeued;
	s->drops_aqm_codel = a->drops_codel;
	s->drops_aqm_overlimit = a->drops_overlimit;
	s->ecn_marks = a->ecn_marks;
	s->new_flows = a->new_flows_count;
	s->overlimit_events = a->overlimit_events;
	s->flows_new = a->flows_new;
	s->flows_old = a->flows_old;
	s->tx_packets = snap->tx_packets;
	s->tx_bytes = snap->tx_bytes;
	s->backpressure = snap->backpressure;
	s->shaper_waits = snap->shaper_waits;
	s->delivered = tl_aqm_sojourn_cumulative(a, cum);
	s->sojourn_p50_ns = RTE_MIN(tl_aqm_sojourn_quantile(a, 0.50), a->sojourn_max_ns);
	s->sojourn_p99_ns = RTE_MIN(tl_aqm_sojourn_quantile(a, 0.99), a->sojourn_max_ns);
	s->sojourn_max_ns = a->sojourn_max_ns;
	s->aqm_target_us = snap->params.target_us;
	s->aqm_interval_us = snap->params.interval_us;
	s->aqm_quantum = snap->params.quantum;
	s->aqm_flows = snap->params.flows;
	s->aqm_limit = snap->params.limit;
	s->aqm_memory_limit = snap->params.memory_limit;
	s->aqm_ecn = snap->params.ecn;
	s->shaper_rate_bps = snap->shaper.rate_bps;
	s->shaper_burst_bytes = snap->shaper.rate_bps ? tl_shaper_burst(&snap->shaper) : 0;
}

void tl_stats_worker(struct tl_device *dev, unsigned worker, struct tl_stats_worker *s)
{
	const struct tl_worker *wk = &dev->workers[worker];
	const struct tl_counters *c = &wk->cnt;

	memset(s, 0, sizeof(*s));
	s->worker = worker;
	s->lcore = dev->worker_lcores[worker];
	s->owner = wk->owner;
	s->busy_polls = tl_cnt_read(&c->busy_polls);
	s->idle_polls = tl_cnt_read(&c->idle_polls);
	s->busy_ns = tl_cnt_read(&c->busy_ns);
	s->loop_ns = tl_cnt_read(&c->loop_ns);
	s->busy_percent = __atomic_load_n(&dev->load[worker].percent, __ATOMIC_RELAXED);
	s->crypto_jobs = tl_cnt_read(&c->crypto_jobs);
	s->crypto_packets = tl_cnt_read(&c->crypto_pkts);
	s->inflight_encap = tl_cnt_read(&c->inflight[TL_DIR_ENCAP]);
	s->inflight_decap = tl_cnt_read(&c->inflight[TL_DIR_DECAP]);
	s->job_fifo_encap = wk->owner && wk->jobs_order[TL_DIR_ENCAP] ? rte_ring_count(wk->jobs_order[TL_DIR_ENCAP]) : 0;
	s->job_fifo_decap = wk->owner && wk->jobs_order[TL_DIR_DECAP] ? rte_ring_count(wk->jobs_order[TL_DIR_DECAP]) : 0;
	s->crypto_backpressure_encap = tl_cnt_read(&c->crypto_full[TL_DIR_ENCAP]);
	s->crypto_backpressure_decap = tl_cnt_read(&c->crypto_full[TL_DIR_DECAP]);
}

/* ---- the published read model ---------------------------------------------------------------- */

static void rec_put(struct rm_peer *r)
{
	if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		free(r->aips);
		free(r);
	}
}

void tl_stats_view_put(struct tl_stats_view *v)
{
	if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (size_t i = 0; i < v->n; i++)
		rec_put(v->peer[i]);
	free(v->peer);
	free(v->pos);
	free(v);
}

struct tl_stats_view *tl_stats_view_get(struct tl_device *dev)
{
	struct tl_readmodel *rm = dev->rm;
	struct tl_stats_view *v;

	if (!rm)
		return NULL;
	pthread_mutex_lock(&rm->lock);
	v = rm->cur;
	if (v)
		atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rm->lock);
	return v;
}

size_t tl_stats_view_peers(const struct tl_stats_view *v)
{
	return v ? v->n : 0;
}

size_t tl_stats_view_find(const struct tl_stats_view *v, const uint8_t key[TL_KEY_LEN])
{
	for (size_t i = 0; v && i < v->n; i++)
		if (!memcmp(v->peer[i]->key, key, TL_KEY_LEN))
			return i;
	return SIZE_MAX;
}

static bool rec_is(const struct rm_peer *r, const struct tl_peer_ctrl *pc)
{
	if (r->pc != pc || r->id != pc->dp->id || r->keepalive != pc->cfg.persistent_keepalive ||
	    r->n_aips != pc->cfg.n_allowed_ips || strcmp(r->name, pc->cfg.name) ||
	    memcmp(r->key, pc->cfg.public_key, TL_KEY_LEN))
		return false;
	for (size_t i = 0; i < r->n_aips; i++)
		if (!tl_prefix_eq(&r->aips[i], &pc->cfg.allowed_ips[i]))
			return false;
	return true;
}

/* A record of pc as it is now (control thread). NULL out of memory. */
static struct rm_peer *rec_new(const struct tl_peer_ctrl *pc)
{
	size_t n = pc->cfg.n_allowed_ips, len = 1, off = 0;
	struct rm_peer *r;
	char p[64];

	for (size_t i = 0; i < n; i++) {
		tl_prefix_format(p, sizeof(p), &pc->cfg.allowed_ips[i]);
		len += strlen(p) + 1;
	}
	r = calloc(1, sizeof(*r) + len);
	if (!r || (n && !(r->aips = malloc(n * sizeof(*r->aips))))) {
		free(r);
		return NULL;
	}
	atomic_init(&r->refs, 1);
	r->pc = pc;
	r->id = pc->dp->id;
	r->keepalive = pc->cfg.persistent_keepalive;
	memcpy(r->key, pc->cfg.public_key, TL_KEY_LEN);
	tl_key_to_base64(r->public_key, r->key);
	snprintf(r->name, sizeof(r->name), "%s", pc->cfg.name);
	r->n_aips = n;
	if (n)
		memcpy(r->aips, pc->cfg.allowed_ips, n * sizeof(*r->aips));
	for (size_t i = 0; i < n; i++) {
		tl_prefix_format(p, sizeof(p), &r->aips[i]);
		off += (size_t)snprintf(r->aips_text + off, len - off, "%s%s", i ? "," : "", p);
	}
	return r;
}

/* pc's record in the view published before, if pc has not changed since. */
static struct rm_peer *rec_reuse(const struct tl_stats_view *old, const struct tl_peer_ctrl *pc)
{
	uint32_t id = pc->dp->id;
	struct rm_peer *r;

	if (!old || id >= old->n_ids || old->pos[id] == NO_POS)
		return NULL;
	r = old->peer[old->pos[id]];
	if (!rec_is(r, pc))
		return NULL;
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	return r;
}

int tl_stats_init(struct tl_device *dev)
{
	struct tl_readmodel *rm = calloc(1, sizeof(*rm));

	if (!rm)
		return -1;
	pthread_mutex_init(&rm->lock, NULL);
	dev->rm = rm;
	return 0;
}

void tl_stats_fini(struct tl_device *dev)
{
	struct tl_readmodel *rm = dev->rm;

	if (!rm)
		return;
	tl_stats_view_put(rm->cur);
	pthread_mutex_destroy(&rm->lock);
	free(rm);
	dev->rm = NULL;
}

int tl_stats_publish(struct tl_device *dev)
{
	struct tl_readmodel *rm = dev->rm;
	struct tl_stats_view *v, *old;
	struct tl_peer_ctrl *pc;
	size_t n;

	if (!rm)
		return -1;
	old = rm->cur;                     /* only this thread changes it */
	n = dev->n_peers;                  /* at most: those being removed are left out */
	v = calloc(1, sizeof(*v));
	if (!v || !(v->peer = calloc(n ? n : 1, sizeof(*v->peer))) ||
	    !(v->pos = malloc((dev->next_id ? dev->next_id : 1) * sizeof(*v->pos))))
		goto fail;
	atomic_init(&v->refs, 1);
	v->n_ids = dev->next_id;
	memset(v->pos, 0xff, v->n_ids * sizeof(*v->pos));
	tl_key_to_base64(v->public_key, dev->id.pub);
	TAILQ_FOREACH(pc, &dev->peers, link) {
		struct rm_peer *r;

		if (pc->doomed)
			continue;
		if (!(r = rec_reuse(old, pc)) && !(r = rec_new(pc)))
			goto fail;
		v->pos[r->id] = (uint32_t)v->n;
		v->peer[v->n++] = r;
	}
	pthread_mutex_lock(&rm->lock);
	rm->cur = v;
	pthread_mutex_unlock(&rm->lock);
	rm->publishes++;
	tl_stats_view_put(old);
	return 0;
fail:
	if (v && v->peer) {
		atomic_init(&v->refs, 1);
		tl_stats_view_put(v);
	} else if (v) {
		free(v);
	}
	if (!rm->failures++)
		tl_log_err("read model: cannot be published (out of memory); observers see the last one");
	return -1;
}

/* What the workers and the control thread update as they go, read as it is (dev->lock held:
 * pc is on the list). */
static void peer_live(struct tl_peer_ctrl *pc, struct tl_stats_peer *s)
{
	const struct tl_peer_stats *st = &pc->dp->stats;
	struct tl_endpoint ep;

	tl_endpoint_read(pc->dp, &ep);
	if (ep.family && ep.port) {
		struct tl_sockaddr sa = { .ip.family = ep.family, .port = ep.port };

		memcpy(sa.ip.addr, ep.ip, sizeof(sa.ip.addr));
		tl_sockaddr_format(s->endpoint, sizeof(s->endpoint), &sa);
	}
	s->handshakes = __atomic_load_n(&pc->handshakes, __ATOMIC_RELAXED);
	s->last_handshake_ns = __atomic_load_n(&pc->last_handshake_unix_ns, __ATOMIC_RELAXED);
	s->last_handshake = s->last_handshake_ns / TL_NS;
	s->session = atomic_load(&pc->dp->current) != NULL;
	s->rx_bytes = atomic_load_explicit(&st->rx_bytes, memory_order_relaxed);
	s->tx_bytes = atomic_load_explicit(&st->tx_bytes, memory_order_relaxed);
	s->rx_packets = atomic_load_explicit(&st->rx_packets, memory_order_relaxed);
	s->tx_packets = atomic_load_explicit(&st->tx_packets, memory_order_relaxed);
	s->staged = atomic_load_explicit(&pc->dp->n_staged, memory_order_relaxed);
}

size_t tl_stats_view_read(struct tl_device *dev, const struct tl_stats_view *v, size_t first, size_t count,
			  struct tl_stats_peer *out, bool *oom)
{
	struct tl_peer_ctrl *pc;
	size_t k = 0;
	bool *live;

	if (!v || first >= v->n)
		return 0;
	count = RTE_MIN(count, v->n - first);
	if (!(live = calloc(count ? count : 1, sizeof(*live)))) {
		*oom = true;
		return 0;
	}
	/* The configuration from the view; the counters of the peers still there (a peer the
	 * view shows may be gone since: it is left out). The lock is held for the walk only. */
	pthread_mutex_lock(&dev->lock);
	TAILQ_FOREACH(pc, &dev->peers, link) {
		uint32_t id = pc->dp->id, p = id < v->n_ids ? v->pos[id] : NO_POS;

		if (p == NO_POS || p < first || p - first >= count || v->peer[p]->pc != pc ||
		    memcmp(v->peer[p]->key, pc->cfg.public_key, TL_KEY_LEN))
			continue;
		memset(&out[p - first], 0, sizeof(out[0]));
		peer_live(pc, &out[p - first]);
		live[p - first] = true;
	}
	pthread_mutex_unlock(&dev->lock);
	for (size_t i = 0; i < count; i++) {
		const struct rm_peer *r = v->peer[first + i];
		struct tl_stats_peer *s = &out[k];

		if (!live[i])
			continue;
		if (k != i)
			*s = out[i];
		s->id = r->id;
		memcpy(s->name, r->name, sizeof(s->name));
		memcpy(s->public_key, r->public_key, sizeof(s->public_key));
		s->persistent_keepalive = r->keepalive;
		s->allowed_ips = strdup(r->aips_text);
		*oom |= !s->allowed_ips;
		k++;
	}
	free(live);
	return k;
}

struct tl_stats_peer *tl_stats_peers(struct tl_device *dev, size_t *n, bool *oom)
{
	struct tl_stats_view *v = tl_stats_view_get(dev);
	struct tl_stats_peer *out = NULL;

	*n = 0;
	if (v && v->n && !(out = calloc(v->n, sizeof(*out))))
		*oom = true;
	else if (v && v->n)
		*n = tl_stats_view_read(dev, v, 0, v->n, out, oom);
	tl_stats_view_put(v);
	return out;
}

void tl_stats_peer_free(struct tl_stats_peer *s)
{
	free(s->allowed_ips);
	s->allowed_ips = NULL;
}

void tl_stats_peers_free(struct tl_stats_peer *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tl_stats_peer_free(&v[i]);
	free(v);
}

void tl_stats_tick(struct tl_device *dev, uint64_t now)
{
	(void)now;
	for (unsigned w = 0; w < dev->dp.n_workers && w < TL_MAX_WORKERS; w++) {
		struct tl_worker_load *l = &dev->load[w];
		uint64_t busy = tl_cnt_read(&dev->workers[w].cnt.busy_ns);
		uint64_t loop = tl_cnt_read(&dev->workers[w].cnt.loop_ns);

		if (loop > l->loop_ns)
			__atomic_store_n(&l->percent, ((busy - l->busy_ns) * 100 + (loop - l->loop_ns) / 2) / (loop - l->loop_ns),
					 __ATOMIC_RELAXED);
		l->busy_ns = busy;
		l->loop_ns = loop;
	}
}
