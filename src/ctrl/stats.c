/* The read model (stats.h): its field tables, the structs filled from the counters, the sums
 * every observer shares (counters, drops with each port's missed frames, the control plane's
 * balance, the sojourn histogram's bounds), and the per-second worker load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "common/key.h"
#include "ctrl/gwlan.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "ctrl/stats.h"
#include "dataplane/port.h"
#include "kernel/tc.h"

/* One peer's configuration as a publish saw it: immutable, shared by every view that shows it
 * unchanged (a publish makes records for the peers that changed only). Freed once retired (no
 * new view holds it) and no view older than its retirement is left. */
struct rm_peer {
	const struct tl_peer_ctrl *pc;     /* compared, never followed: the peer may be gone */
	uint64_t used_gen, retired_gen;    /* control thread: the last view made with it, 0 / retired by */
	struct rm_peer *next_retired;
	uint32_t id;
	uint16_t keepalive;
	uint8_t key[TL_KEY_LEN];
	char name[32], public_key[45];
	size_t n_aips;
	struct tl_prefix *aips;            /* in the write model's order */
	char aips_text[];                  /* "a/n,b/m" */
};

struct rm_entry {
	struct rm_peer *rec;
	const struct tl_peer_ctrl *pc;     /* rec->pc, beside it so that a publish need not read rec */
	uint32_t id;
};

/* A published read model: the peers committed, in list order, and our public key. */
struct tl_stats_view {
	struct tl_readmodel *rm;
	uint64_t gen;
	unsigned refs;                     /* under rm->lock */
	struct tl_stats_view *prev, *next; /* the views not freed yet, under rm->lock */
	char public_key[45];
	size_t n;
	uint32_t n_ids;
	uint32_t *pos;                     /* peer id -> index in ent[]; NO_POS: not in the view */
	struct rm_entry *ent;
};

/* A peer the write model changed since the last publish (its id to tell it is still there). */
struct rm_touch {
	const struct tl_peer_ctrl *pc;
	uint32_t id;
};

struct tl_readmodel {
	pthread_mutex_t lock;              /* cur, the views' refs and list */
	struct tl_stats_view *cur, *views;
	uint64_t gen;
	/* control thread */
	struct rm_peer *retired;
	struct rm_touch *touched;
	size_t n_touched, cap_touched;
	bool touch_lost;                   /* out of memory: the next publish looks at every peer */
	uint64_t failures, full_builds;
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
	if (tl_port_sockets(&dev->dp.port[role]))   /* the sockets' drop counts */
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
	if (role == TL_PORT_LAN) {
		uint64_t tc[TL_TC_STAT_MAX];

		if (tl_gwlan_stats(dev, tc) == 0) {
			s->tc_steered = tc[TL_TC_STAT_STEERED];
			s->tc_passed = tc[TL_TC_STAT_PASSED];
			s->tc_sent = tc[TL_TC_STAT_SENT];
			s->tc_no_target = tc[TL_TC_STAT_NO_TARGET];
		}
	}
	return 0;
}

/* The DRR's classes: sparse (served from the new-flows list) and bulk (the old list). */
static void stats_classes(struct tl_stats_queue *s, const struct tl_aqm_stats *a)
{
	const struct tl_aqm_class_stats *sp = &a->cls[TL_AQM_SPARSE], *bu = &a->cls[TL_AQM_BULK];

	s->sparse_served = tl_aqm_served(a, TL_AQM_SPARSE);
	s->bulk_served = tl_aqm_served(a, TL_AQM_BULK);
	s->sparse_sojourn_p99_ns = RTE_MIN(tl_aqm_sojourn_quantile(a, TL_AQM_SPARSE, 0.99), sp->sojourn_max_ns);
	s->bulk_sojourn_p99_ns = RTE_MIN(tl_aqm_sojourn_quantile(a, TL_AQM_BULK, 0.99), bu->sojourn_max_ns);
	s->sparse_sojourn_max_ns = sp->sojourn_max_ns;
	s->bulk_sojourn_max_ns = bu->sojourn_max_ns;
	s->sparse_ahead_p99_bytes = RTE_MIN(tl_aqm_ahead_quantile(a, TL_AQM_SPARSE, 0.99), sp->ahead_max_bytes);
	s->bulk_ahead_p99_bytes = RTE_MIN(tl_aqm_ahead_quantile(a, TL_AQM_BULK, 0.99), bu->ahead_max_bytes);
	s->sparse_ahead_max_bytes = sp->ahead_max_bytes;
	s->bulk_ahead_max_bytes = bu->ahead_max_bytes;
}

void tl_stats_queue(struct tl_device *dev, int role, unsigned worker, struct tl_stats_queue *s,
		    struct tl_queue_snapshot *snap)
{
	const struct tl_aqm_stats *a = &snap->aqm;
	uint64_t cum[TL_AQM_HIST_BOUNDS];

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
	s->shaper_lost_ns = snap->shaper_lost_ns;
	s->delivered = tl_aqm_sojourn_cumulative(a, TL_AQM_ALL, cum);
	s->sojourn_p50_ns = RTE_MIN(tl_aqm_sojourn_quantile(a, TL_AQM_ALL, 0.50), a->sojourn_max_ns);
	s->sojourn_p99_ns = RTE_MIN(tl_aqm_sojourn_quantile(a, TL_AQM_ALL, 0.99), a->sojourn_max_ns);
	s->sojourn_max_ns = a->sojourn_max_ns;
	stats_classes(s, a);
	s->aqm_target_us = a->target_ns / 1000;
	s->aqm_interval_us = a->interval_ns / 1000;
	s->aqm_rtt_us = snap->params.rtt_us;
	s->aqm_l4s_us = snap->params.l4s_us;
	s->aqm_flow_rtt_pct = snap->params.flow_rtt_pct;
	s->rtt_held = a->rtt_held;
	s->aqm_byte_limit = a->byte_limit;
	s->l4s_marks = a->l4s_marks;
	s->aqm_quantum = a->quantum;
	s->aqm_quantum_fast = snap->params.quantum_fast;
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
	s->shaper_sleeps = tl_cnt_read(&c->shaper_sleeps);
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

static void rec_free(struct rm_peer *r)
{
	free(r->aips);
	free(r);
}

/* No new view holds r from the one of generation gen on. */
static void rec_retire(struct tl_readmodel *rm, struct rm_peer *r, uint64_t gen)
{
	r->retired_gen = gen;
	r->next_retired = rm->retired;
	rm->retired = r;
}

static void view_free(struct tl_stats_view *v)
{
	free(v->pos);
	free(v->ent);
	free(v);
}

void tl_stats_view_put(struct tl_stats_view *v)
{
	struct tl_readmodel *rm = v ? v->rm : NULL;
	bool last;

	if (!v)
		return;
	pthread_mutex_lock(&rm->lock);
	if ((last = !--v->refs)) {
		if (v->prev)
			v->prev->next = v->next;
		else
			rm->views = v->next;
		if (v->next)
			v->next->prev = v->prev;
	}
	pthread_mutex_unlock(&rm->lock);
	if (last)
		view_free(v);     /* its records go with the publish that finds them unused */
}

struct tl_stats_view *tl_stats_view_get(struct tl_device *dev)
{
	struct tl_readmodel *rm = dev->rm;
	struct tl_stats_view *v;

	if (!rm)
		return NULL;
	pthread_mutex_lock(&rm->lock);
	if ((v = rm->cur))
		v->refs++;
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
		if (!memcmp(v->ent[i].rec->key, key, TL_KEY_LEN))
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

/* pc's index in v, or NO_POS. */
static uint32_t view_pos(const struct tl_stats_view *v, const struct tl_peer_ctrl *pc)
{
	uint32_t id = pc->dp->id, p = v && id < v->n_ids ? v->pos[id] : NO_POS;

	return p != NO_POS && v->ent[p].pc == pc ? p : NO_POS;
}

static struct tl_stats_view *view_new(struct tl_device *dev, size_t cap)
{
	struct tl_stats_view *v = calloc(1, sizeof(*v));

	if (!v || !(v->ent = malloc((cap ? cap : 1) * sizeof(*v->ent))) ||
	    !(v->pos = malloc((dev->next_id ? dev->next_id : 1) * sizeof(*v->pos)))) {
		if (v)
			free(v->ent);
		free(v);
		return NULL;
	}
	v->rm = dev->rm;
	v->n_ids = dev->next_id;
	v->refs = 1;                       /* the read model's, while it is the current one */
	tl_key_to_base64(v->public_key, dev->id.pub);
	return v;
}

static void view_add(struct tl_stats_view *v, struct rm_peer *r)
{
	v->pos[r->id] = (uint32_t)v->n;
	v->ent[v->n++] = (struct rm_entry){ .rec = r, .pc = r->pc, .id = r->id };
}

/* Every peer looked at: the records of old reused where the peer has not changed, those not
 * reused retired. NULL out of memory. */
static struct tl_stats_view *build_full(struct tl_device *dev, struct tl_stats_view *old, uint64_t gen)
{
	struct tl_stats_view *v = view_new(dev, dev->n_peers);
	struct tl_peer_ctrl *pc;
	uint32_t p;

	if (!v)
		return NULL;
	memset(v->pos, 0xff, v->n_ids * sizeof(*v->pos));
	TAILQ_FOREACH(pc, &dev->peers, link) {
		struct rm_peer *r = NULL;

		if (pc->doomed)
			continue;
		if ((p = view_pos(old, pc)) != NO_POS && rec_is(old->ent[p].rec, pc))
			r = old->ent[p].rec;
		else if (!(r = rec_new(pc)))
			goto fail;
		r->used_gen = gen;
		view_add(v, r);
	}
	for (size_t i = 0; old && i < old->n; i++)
		if (old->ent[i].rec->used_gen != gen)
			rec_retire(dev->rm, old->ent[i].rec, gen);
	return v;
fail:
	for (size_t i = 0; i < v->n; i++)
		if (view_pos(old, v->ent[i].pc) == NO_POS || old->ent[view_pos(old, v->ent[i].pc)].rec != v->ent[i].rec)
			rec_free(v->ent[i].rec);
	view_free(v);
	return NULL;
}

static int touch_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct rm_touch *)a)->pc, y = (uintptr_t)((const struct rm_touch *)b)->pc;

	return (x > y) - (x < y);
}

/* The view before with the changes the write model named (tl_stats_touch) and the peers added
 * since (at the list's end): the peers that did not change are not looked at. NULL when it
 * cannot tell (a peer it was not told of went away: the counts differ) or out of memory: then
 * build_full. */
static struct tl_stats_view *build_changes(struct tl_device *dev, struct tl_stats_view *old, uint64_t gen)
{
	struct tl_readmodel *rm = dev->rm;
	struct tl_peer_ctrl *pc, *first_new = NULL;
	struct rm_peer **made = NULL, **gone = NULL;
	size_t n_added = 0, n_made = 0, n_gone = 0, n_doomed = 0, w = 0;
	struct tl_stats_view *v = NULL;
	uint32_t p;

	for (pc = TAILQ_LAST(&dev->peers, tl_peer_list); pc && view_pos(old, pc) == NO_POS;
	     pc = TAILQ_PREV(pc, tl_peer_list, link)) {
		first_new = pc;
		n_added += !pc->doomed;
	}
	if (rm->n_touched)
		qsort(rm->touched, rm->n_touched, sizeof(*rm->touched), touch_cmp);
	if (!(v = view_new(dev, old->n + n_added)) || !(made = malloc((rm->n_touched + n_added + 1) * sizeof(*made))) ||
	    !(gone = malloc((rm->n_touched + 1) * sizeof(*gone))))
		goto fail;
	memcpy(v->ent, old->ent, old->n * sizeof(*v->ent));
	memcpy(v->pos, old->pos, old->n_ids * sizeof(*v->pos));
	memset(v->pos + old->n_ids, 0xff, (v->n_ids - old->n_ids) * sizeof(*v->pos));
	v->n = old->n;
	for (size_t i = 0; i < rm->n_touched; i++) {
		const struct rm_touch *t = &rm->touched[i];
		struct tl_peer *dp = tl_dp_peer(&dev->dp, t->id);

		if ((i && t->pc == rm->touched[i - 1].pc) || !dp || dp->ctrl != t->pc)
			continue;                  /* told twice, or gone (a new peer given up) */
		pc = dp->ctrl;
		n_doomed += pc->doomed;
		if ((p = view_pos(old, pc)) == NO_POS)
			continue;                  /* added since: at the end */
		if (pc->doomed) {
			gone[n_gone++] = v->ent[p].rec;
			v->ent[p].rec = NULL;
		} else if (!rec_is(v->ent[p].rec, pc)) {
			if (!(made[n_made] = rec_new(pc)))
				goto fail;
			gone[n_gone++] = v->ent[p].rec;
			v->ent[p].rec = made[n_made++];
		}
	}
	for (size_t i = 0; i < v->n; i++)        /* the removed closed up */
		if (v->ent[i].rec) {
			v->pos[v->ent[i].id] = (uint32_t)w;
			v->ent[w++] = v->ent[i];
		} else {
			v->pos[v->ent[i].id] = NO_POS;
		}
	v->n = w;
	for (pc = first_new; pc; pc = TAILQ_NEXT(pc, link))
		if (!pc->doomed) {
			if (!(made[n_made] = rec_new(pc)))
				goto fail;
			view_add(v, made[n_made++]);
		}
	if (v->n + n_doomed != dev->n_peers)
		goto fail;                         /* a peer went without a word: look at them all */
	for (size_t i = 0; i < n_gone; i++)
		rec_retire(rm, gone[i], gen);
	for (size_t i = 0; i < n_made; i++)
		made[i]->used_gen = gen;
	free(made);
	free(gone);
	return v;
fail:
	for (size_t i = 0; made && i < n_made; i++)
		rec_free(made[i]);
	free(made);
	free(gone);
	if (v)
		view_free(v);
	return NULL;
}

/* The retired records no view left can hold. */
static void reclaim(struct tl_readmodel *rm)
{
	struct rm_peer **r = &rm->retired, *x;
	uint64_t oldest = UINT64_MAX;

	pthread_mutex_lock(&rm->lock);
	for (struct tl_stats_view *v = rm->views; v; v = v->next)
		oldest = RTE_MIN(oldest, v->gen);
	pthread_mutex_unlock(&rm->lock);
	while ((x = *r))
		if (x->retired_gen <= oldest) {
			*r = x->next_retired;
			rec_free(x);
		} else {
			r = &x->next_retired;
		}
}

void tl_stats_touch(struct tl_device *dev, const struct tl_peer_ctrl *pc)
{
	struct tl_readmodel *rm = dev->rm;

	if (!rm || rm->touch_lost)
		return;
	if (rm->n_touched == rm->cap_touched) {
		size_t cap = rm->cap_touched ? 2 * rm->cap_touched : 64;
		struct rm_touch *t = realloc(rm->touched, cap * sizeof(*t));

		if (!t) {
			rm->touch_lost = true;
			return;
		}
		rm->touched = t;
		rm->cap_touched = cap;
	}
	rm->touched[rm->n_touched++] = (struct rm_touch){ .pc = pc, .id = pc->dp->id };
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
	struct tl_stats_view *v;

	if (!rm)
		return;
	if ((v = rm->cur)) {
		for (size_t i = 0; i < v->n; i++)
			rec_retire(rm, v->ent[i].rec, v->gen + 1);
		rm->cur = NULL;
		tl_stats_view_put(v);
	}
	for (struct rm_peer *r = rm->retired, *x; (x = r);) {   /* no reader is left */
		r = x->next_retired;
		rec_free(x);
	}
	free(rm->touched);
	pthread_mutex_destroy(&rm->lock);
	free(rm);
	dev->rm = NULL;
}

int tl_stats_publish(struct tl_device *dev)
{
	struct tl_readmodel *rm = dev->rm;
	struct tl_stats_view *v = NULL, *old;
	uint64_t gen;

	if (!rm)
		return -1;
	old = rm->cur;                     /* only this thread changes it */
	gen = rm->gen + 1;
	if (old && !rm->touch_lost)
		v = build_changes(dev, old, gen);
	if (!v) {
		rm->full_builds++;
		v = build_full(dev, old, gen);
	}
	if (!v) {
		rm->gen = gen;             /* the records this try marked used are not */
		if (!rm->failures++)
			tl_log_err("read model: cannot be published (out of memory); observers see the last one");
		return -1;
	}
	rm->gen = v->gen = gen;
	rm->n_touched = 0;
	rm->touch_lost = false;
	pthread_mutex_lock(&rm->lock);
	v->next = rm->views;
	if (rm->views)
		rm->views->prev = v;
	rm->views = v;
	rm->cur = v;
	pthread_mutex_unlock(&rm->lock);
	tl_stats_view_put(old);
	reclaim(rm);
	return 0;
}

uint64_t tl_stats_full_builds(struct tl_device *dev)
{
	return dev->rm ? dev->rm->full_builds : 0;
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

		if (p == NO_POS || p < first || p - first >= count || v->ent[p].pc != pc ||
		    memcmp(v->ent[p].rec->key, pc->cfg.public_key, TL_KEY_LEN))
			continue;
		memset(&out[p - first], 0, sizeof(out[0]));
		peer_live(pc, &out[p - first]);
		live[p - first] = true;
	}
	pthread_mutex_unlock(&dev->lock);
	for (size_t i = 0; i < count; i++) {
		const struct rm_peer *r = v->ent[first + i].rec;
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
