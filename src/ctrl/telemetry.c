/* DPDK telemetry commands under /tunless/...: device, peers, drops by reason, ports,
 * egress queues (list + info pair: /tunless/queues, /tunless/queue,<port>/<worker>),
 * workers and the gateway's LAN routes and neighbours (/tunless/lanfib). Runs on the
 * telemetry thread: it reads counters that their owners write (tl_cnt_read: relaxed loads
 * of aligned 64-bit values) and walks the peer list and reads our identity under the
 * device lock. DPDK's telemetry thread outlives the device and 22.11 cannot unregister a
 * command: every command runs through one gate that the shutdown closes
 * (tl_telemetry_down) before anything is torn down. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "ctrl/device.h"
#include "ctrl/lanfib.h"
#include "ctrl/metrics.h"
#include "ctrl/ports.h"
#include "ctrl/telemetry.h"

static struct tl_device *g_dev;

/* ---- the gate: a command runs whole before teardown, or not at all --------------------------- */

#define TEL_MAX_CMDS 16

static pthread_mutex_t g_gate = PTHREAD_MUTEX_INITIALIZER;
static bool g_down;                 /* under g_gate */
static struct {
	const char *path;
	telemetry_cb fn;
} g_cmds[TEL_MAX_CMDS];
static unsigned g_n_cmds;          /* written before the command is registered */

static int tel_dispatch(const char *cmd, const char *params, struct rte_tel_data *d)
{
	int r = -ENOENT;

	pthread_mutex_lock(&g_gate);
	if (g_down) {
		pthread_mutex_unlock(&g_gate);
		return -ENODEV;             /* the client gets a null reply */
	}
	for (unsigned i = 0; i < g_n_cmds; i++)
		if (!strcmp(cmd, g_cmds[i].path)) {
			r = g_cmds[i].fn(cmd, params, d);
			break;
		}
	pthread_mutex_unlock(&g_gate);
	return r;
}

int tl_telemetry_add(const char *path, telemetry_cb fn, const char *help)
{
	pthread_mutex_lock(&g_gate);
	if (g_n_cmds == TEL_MAX_CMDS) {
		pthread_mutex_unlock(&g_gate);
		return -ENOSPC;
	}
	g_cmds[g_n_cmds].path = path;
	g_cmds[g_n_cmds].fn = fn;
	g_n_cmds++;
	pthread_mutex_unlock(&g_gate);
	return rte_telemetry_register_cmd(path, tel_dispatch, help);
}

void tl_telemetry_down(void)
{
	pthread_mutex_lock(&g_gate);   /* waits for a command in progress */
	g_down = true;
	pthread_mutex_unlock(&g_gate);
}

static void counters_sum(struct tl_counters *sum)
{
	tl_metrics_counters_sum(g_dev, sum);
}

static int cmd_drops(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint64_t drops[TL_DROP_MAX];

	(void)cmd;
	(void)params;
	tl_metrics_drops(g_dev, drops);
	rte_tel_data_start_dict(d);
	for (int i = 0; i < TL_DROP_MAX; i++)
		rte_tel_data_add_dict_u64(d, tl_drop_names[i], drops[i]);
	return 0;
}

static void add_port(struct rte_tel_data *d, const char *name, int role, const struct tl_counters *sum)
{
	struct rte_tel_data *c = rte_tel_data_alloc();
	struct rte_eth_stats st = { 0 };

	if (!c)
		return;
	rte_tel_data_start_dict(c);
	tl_port_stats(g_dev, role, &st);
	rte_tel_data_add_dict_u64(c, "rx", sum->rx[role]);
	rte_tel_data_add_dict_u64(c, "tx", sum->tx[role]);
	rte_tel_data_add_dict_u64(c, "backpressure", sum->backpressure[role]);
	rte_tel_data_add_dict_u64(c, "eth_ipackets", st.ipackets);
	rte_tel_data_add_dict_u64(c, "eth_opackets", st.opackets);
	rte_tel_data_add_dict_u64(c, "eth_imissed", st.imissed);
	rte_tel_data_add_dict_u64(c, "eth_ierrors", st.ierrors);
	rte_tel_data_add_dict_u64(c, "eth_oerrors", st.oerrors);
	rte_tel_data_add_dict_container(d, name, c, 0);
}

static int cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_counters sum;

	(void)cmd;
	(void)params;
	counters_sum(&sum);
	rte_tel_data_start_dict(d);
	add_port(d, "wan", TL_PORT_WAN, &sum);
	add_port(d, "lan", TL_PORT_LAN, &sum);
	rte_tel_data_add_dict_u64(d, "to_ctrl", sum.to_ctrl);
	rte_tel_data_add_dict_u64(d, "consumed", sum.consumed);
	rte_tel_data_add_dict_u64(d, "staged", sum.staged);
	rte_tel_data_add_dict_u64(d, "unstaged", sum.unstaged);
	rte_tel_data_add_dict_u64(d, "from_ctrl", sum.from_ctrl);
	rte_tel_data_add_dict_u64(d, "slowpath_rx", sum.slowpath_rx);
	rte_tel_data_add_dict_u64(d, "csum_completed", sum.csum_completed);
	rte_tel_data_add_dict_u64(d, "fragmented", sum.fragmented);
	rte_tel_data_add_dict_u64(d, "fragments", sum.fragments);
	rte_tel_data_add_dict_u64(d, "busy_polls", sum.busy_polls);
	rte_tel_data_add_dict_u64(d, "idle_polls", sum.idle_polls);
	rte_tel_data_add_dict_u64(d, "handshakes_sent", g_dev->handshakes_sent);
	rte_tel_data_add_dict_u64(d, "handshakes_received", g_dev->handshakes_received);
	rte_tel_data_add_dict_u64(d, "cookies_sent", g_dev->cookies_sent);
	return 0;
}

static int cmd_lanfib(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_lanfib_stats st;
	struct tl_counters sum;

	(void)cmd;
	(void)params;
	tl_lanfib_stats_get(g_dev, &st);
	counters_sum(&sum);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "routes4", st.routes4);
	rte_tel_data_add_dict_u64(d, "routes6", st.routes6);
	rte_tel_data_add_dict_u64(d, "gateways4", st.gateways4);
	rte_tel_data_add_dict_u64(d, "gateways6", st.gateways6);
	rte_tel_data_add_dict_u64(d, "routes_skipped", st.routes_skipped);
	rte_tel_data_add_dict_u64(d, "routes_full", st.routes_full);
	rte_tel_data_add_dict_u64(d, "neighbours", st.neighbours);
	rte_tel_data_add_dict_u64(d, "neigh_full", st.neigh_full);
	rte_tel_data_add_dict_u64(d, "held", sum.held);
	rte_tel_data_add_dict_u64(d, "events", st.events);
	rte_tel_data_add_dict_u64(d, "overruns", st.overruns);
	rte_tel_data_add_dict_u64(d, "resyncs", st.resyncs);
	rte_tel_data_add_dict_u64(d, "dumps", st.dumps);
	rte_tel_data_add_dict_u64(d, "builds", st.builds);
	rte_tel_data_add_dict_u64(d, "resolve_requests", st.resolve_requests);
	rte_tel_data_add_dict_u64(d, "failed_removed", st.failed_removed);
	rte_tel_data_add_dict_u64(d, "netlink_requests", st.netlink_requests);
	return 0;
}

static int cmd_device(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char key[45];
	unsigned cap;

	(void)cmd;
	(void)params;
	pthread_mutex_lock(&g_dev->lock);       /* a UAPI set may change our key */
	tl_key_to_base64(key, g_dev->id.pub);
	pthread_mutex_unlock(&g_dev->lock);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", g_dev->cfg->name);
	rte_tel_data_add_dict_string(d, "mode", g_dev->dp.host_mode ? "host" : "gateway");
	rte_tel_data_add_dict_string(d, "public_key", key);
	rte_tel_data_add_dict_u64(d, "listen_port", tl_dp_listen_port(&g_dev->dp));
	rte_tel_data_add_dict_u64(d, "mtu", g_dev->dp.mtu);
	rte_tel_data_add_dict_u64(d, "workers", g_dev->dp.n_workers);
	rte_tel_data_add_dict_u64(d, "queue_pairs", g_dev->dp.n_queues);
	rte_tel_data_add_dict_u64(d, "crypto_ring", tl_metrics_crypto_ring(g_dev, &cap));
	rte_tel_data_add_dict_u64(d, "crypto_ring_capacity", cap);
	rte_tel_data_add_dict_u64(d, "peers", g_dev->n_peers);
	return 0;
}

static void add_peer(struct rte_tel_data *d, struct tl_peer_ctrl *pc, uint64_t now)
{
	struct rte_tel_data *c = rte_tel_data_alloc();
	struct tl_sockaddr sa = { 0 };
	struct tl_endpoint ep;
	char key[45], buf[64], name[32];
	uint64_t hs = pc->last_session_ns;

	if (!c)
		return;
	tl_endpoint_read(pc->dp, &ep);
	rte_tel_data_start_dict(c);
	tl_key_to_base64(key, pc->cfg.public_key);
	rte_tel_data_add_dict_string(c, "public_key", key);
	if (pc->cfg.name[0])
		rte_tel_data_add_dict_string(c, "name", pc->cfg.name);
	sa.ip.family = ep.family;
	memcpy(sa.ip.addr, ep.ip, 16);
	sa.port = ep.port;
	if (ep.family)
		tl_sockaddr_format(buf, sizeof(buf), &sa);
	rte_tel_data_add_dict_string(c, "endpoint", ep.family ? buf : "(none)");
	rte_tel_data_add_dict_u64(c, "handshakes", pc->handshakes);
	rte_tel_data_add_dict_u64(c, "last_handshake_unix", pc->last_handshake_unix_ns / TL_NS);
	rte_tel_data_add_dict_u64(c, "last_handshake_age_ms", hs ? (now - hs) / 1000000 : UINT64_MAX);
	rte_tel_data_add_dict_u64(c, "has_session", atomic_load(&pc->dp->current) != NULL);
	rte_tel_data_add_dict_u64(c, "rx_bytes", atomic_load(&pc->dp->stats.rx_bytes));
	rte_tel_data_add_dict_u64(c, "tx_bytes", atomic_load(&pc->dp->stats.tx_bytes));
	rte_tel_data_add_dict_u64(c, "rx_packets", atomic_load(&pc->dp->stats.rx_packets));
	rte_tel_data_add_dict_u64(c, "tx_packets", atomic_load(&pc->dp->stats.tx_packets));
	rte_tel_data_add_dict_u64(c, "staged", rte_ring_count(pc->dp->staged));
	snprintf(name, sizeof(name), "peer%u", pc->dp->id);
	rte_tel_data_add_dict_container(d, name, c, 0);
}

static int cmd_peers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_peer_ctrl *pc;
	uint64_t now = tl_now_ns();

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&g_dev->lock);
	TAILQ_FOREACH(pc, &g_dev->peers, link)
		add_peer(d, pc, now);
	pthread_mutex_unlock(&g_dev->lock);
	return 0;
}

/* ---- egress queues: /tunless/queues lists "<port>/<worker>", /tunless/queue,<id> tells one ---- */

static int cmd_queues(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char id[32];

	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; w < g_dev->dp.n_queues; w++) {   /* the queue owners' */
			snprintf(id, sizeof(id), "%s/%u", tl_metrics_port_names[p], w);
			rte_tel_data_add_array_string(d, id);
		}
	return 0;
}

/* "wan/0" (or "wan,0", or a port number for the role: 0 wan, 1 lan). 0 or -EINVAL. */
static int queue_id_parse(const char *params, int *role, unsigned *worker)
{
	char port[8], *end;
	size_t n;
	unsigned long w;

	if (!params)
		return -EINVAL;
	n = strcspn(params, "/,");
	if (!n || n >= sizeof(port) || !params[n])
		return -EINVAL;
	memcpy(port, params, n);
	port[n] = '\0';
	*role = -1;
	for (int p = 0; p < TL_PORT_MAX; p++)
		if (!strcmp(port, tl_metrics_port_names[p]) || (port[0] == '0' + p && !port[1]))
			*role = p;
	if (*role < 0 || params[n + 1] < '0' || params[n + 1] > '9')
		return -EINVAL;
	errno = 0;
	w = strtoul(params + n + 1, &end, 10);
	if (errno || *end || w >= g_dev->dp.n_queues)
		return -EINVAL;
	*worker = (unsigned)w;
	return 0;
}

static void add_sojourn(struct rte_tel_data *d, const struct tl_aqm_stats *s)
{
	struct rte_tel_data *c = rte_tel_data_alloc();
	uint64_t cum[TL_METRICS_SOJOURN_BOUNDS];
	char key[24];

	if (!c)
		return;
	tl_metrics_sojourn_cumulative(s, cum);
	rte_tel_data_start_dict(c);
	for (unsigned i = 0; i < TL_METRICS_SOJOURN_BOUNDS; i++) {
		snprintf(key, sizeof(key), "%" PRIu64, tl_metrics_sojourn_bound(i));
		rte_tel_data_add_dict_u64(c, key, cum[i]);
	}
	rte_tel_data_add_dict_container(d, "sojourn_below_ns", c, 0);
}

static int cmd_queue(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_queue_snapshot *s;
	uint64_t cum[TL_METRICS_SOJOURN_BOUNDS], now = tl_now_ns();
	unsigned w;
	int role;

	(void)cmd;
	if (queue_id_parse(params, &role, &w) != 0)
		return -EINVAL;
	s = malloc(sizeof(*s));   /* the histogram is a few KiB: not on the telemetry stack */
	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&g_dev->lock);
	tl_worker_queue_read(&g_dev->workers[w], role, s);
	pthread_mutex_unlock(&g_dev->lock);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "port", tl_metrics_port_names[role]);
	rte_tel_data_add_dict_u64(d, "worker", w);
	rte_tel_data_add_dict_u64(d, "depth_packets", s->aqm.backlog_pkts);
	rte_tel_data_add_dict_u64(d, "depth_bytes", s->aqm.backlog_bytes);
	rte_tel_data_add_dict_u64(d, "memory_bytes", s->aqm.memory_bytes);
	rte_tel_data_add_dict_u64(d, "enqueued", s->aqm.enqueued);
	rte_tel_data_add_dict_u64(d, "dequeued", s->aqm.dequeued);
	rte_tel_data_add_dict_u64(d, "requeued", s->aqm.requeued);
	rte_tel_data_add_dict_u64(d, "drops_aqm_codel", s->aqm.drops_codel);
	rte_tel_data_add_dict_u64(d, "drops_aqm_overlimit", s->aqm.drops_overlimit);
	rte_tel_data_add_dict_u64(d, "ecn_marks", s->aqm.ecn_marks);
	rte_tel_data_add_dict_u64(d, "overlimit_events", s->aqm.overlimit_events);
	rte_tel_data_add_dict_u64(d, "new_flows", s->aqm.new_flows_count);
	rte_tel_data_add_dict_u64(d, "flows_new", s->aqm.flows_new);
	rte_tel_data_add_dict_u64(d, "flows_old", s->aqm.flows_old);
	rte_tel_data_add_dict_u64(d, "tx_packets", s->tx_packets);
	rte_tel_data_add_dict_u64(d, "tx_bytes", s->tx_bytes);
	rte_tel_data_add_dict_u64(d, "backpressure", s->backpressure);
	rte_tel_data_add_dict_u64(d, "shaper_waits", s->shaper_waits);
	rte_tel_data_add_dict_u64(d, "delivered", tl_metrics_sojourn_cumulative(&s->aqm, cum));
	rte_tel_data_add_dict_u64(d, "sojourn_p50_ns", tl_aqm_sojourn_quantile(&s->aqm, 0.50));
	rte_tel_data_add_dict_u64(d, "sojourn_p99_ns", tl_aqm_sojourn_quantile(&s->aqm, 0.99));
	rte_tel_data_add_dict_u64(d, "sojourn_max_ns", s->aqm.sojourn_max_ns);
	rte_tel_data_add_dict_u64(d, "aqm_target_us", s->params.target_us);
	rte_tel_data_add_dict_u64(d, "aqm_interval_us", s->params.interval_us);
	rte_tel_data_add_dict_u64(d, "aqm_quantum", s->params.quantum);
	rte_tel_data_add_dict_u64(d, "aqm_flows", s->params.flows);
	rte_tel_data_add_dict_u64(d, "aqm_limit", s->params.limit);
	rte_tel_data_add_dict_u64(d, "aqm_memory_limit", s->params.memory_limit);
	rte_tel_data_add_dict_u64(d, "aqm_ecn", s->params.ecn);
	rte_tel_data_add_dict_u64(d, "shaper_rate_bps", s->shaper.rate_bps);
	rte_tel_data_add_dict_u64(d, "shaper_burst_bytes", s->shaper.rate_bps ? tl_shaper_burst(&s->shaper) : 0);
	rte_tel_data_add_dict_u64(d, "snapshot_age_ns", now > s->stamp_ns ? now - s->stamp_ns : 0);
	add_sojourn(d, &s->aqm);
	free(s);
	return 0;
}

/* ---- workers ------------------------------------------------------------------------------- */

static void add_worker(struct rte_tel_data *d, unsigned w)
{
	const struct tl_counters *c = &g_dev->workers[w].cnt;
	struct rte_tel_data *x = rte_tel_data_alloc();
	uint64_t drops = 0, busy = tl_cnt_read(&c->busy_ns), loop = tl_cnt_read(&c->loop_ns);
	struct tl_crypto_view cv;
	char name[24];

	if (!x)
		return;
	for (int i = 0; i < TL_DROP_MAX; i++)
		drops += tl_cnt_read(&c->drops[i]);
	rte_tel_data_start_dict(x);
	rte_tel_data_add_dict_u64(x, "lcore", g_dev->worker_lcores[w]);
	rte_tel_data_add_dict_u64(x, "queue", g_dev->workers[w].queue);
	for (int p = 0; p < TL_PORT_MAX; p++) {
		snprintf(name, sizeof(name), "rx_%s", tl_metrics_port_names[p]);
		rte_tel_data_add_dict_u64(x, name, tl_cnt_read(&c->rx[p]));
		snprintf(name, sizeof(name), "tx_%s", tl_metrics_port_names[p]);
		rte_tel_data_add_dict_u64(x, name, tl_cnt_read(&c->tx[p]));
		snprintf(name, sizeof(name), "backpressure_%s", tl_metrics_port_names[p]);
		rte_tel_data_add_dict_u64(x, name, tl_cnt_read(&c->backpressure[p]));
	}
	rte_tel_data_add_dict_u64(x, "drops", drops);
	rte_tel_data_add_dict_u64(x, "busy_polls", tl_cnt_read(&c->busy_polls));
	rte_tel_data_add_dict_u64(x, "idle_polls", tl_cnt_read(&c->idle_polls));
	rte_tel_data_add_dict_u64(x, "busy_ns", busy);
	rte_tel_data_add_dict_u64(x, "loop_ns", loop);
	rte_tel_data_add_dict_u64(x, "busy_percent", loop ? (busy * 100 + loop / 2) / loop : 0);
	tl_metrics_crypto_view(g_dev, w, &cv);
	rte_tel_data_add_dict_u64(x, "owner", cv.owner);
	rte_tel_data_add_dict_u64(x, "crypto_jobs", cv.jobs);
	rte_tel_data_add_dict_u64(x, "crypto_pkts", cv.pkts);
	for (int dir = 0; dir < TL_DIR_MAX; dir++) {
		snprintf(name, sizeof(name), "inflight_%s", tl_metrics_dir_names[dir]);
		rte_tel_data_add_dict_u64(x, name, cv.inflight[dir]);
		snprintf(name, sizeof(name), "crypto_full_%s", tl_metrics_dir_names[dir]);
		rte_tel_data_add_dict_u64(x, name, cv.full[dir]);
		snprintf(name, sizeof(name), "fifo_%s", tl_metrics_dir_names[dir]);
		rte_tel_data_add_dict_u64(x, name, cv.fifo[dir]);
	}
	snprintf(name, sizeof(name), "worker%u", w);
	rte_tel_data_add_dict_container(d, name, x, 0);
}

static int cmd_workers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (unsigned w = 0; w < g_dev->dp.n_workers; w++)
		add_worker(d, w);
	return 0;
}

int tl_telemetry_register(struct tl_device *dev)
{
	g_dev = dev;
	if (tl_telemetry_add("/tunless/device", cmd_device, "Device: name, mode, public key, port, workers") ||
	    tl_telemetry_add("/tunless/peers", cmd_peers, "Peers: endpoint, handshake, rx/tx bytes and packets") ||
	    tl_telemetry_add("/tunless/drops", cmd_drops, "Drops by reason, summed over workers and control plane") ||
	    tl_telemetry_add("/tunless/stats", cmd_stats, "Ports and pipeline counters") ||
	    tl_telemetry_add("/tunless/queues", cmd_queues, "Egress queues: list of <port>/<worker> ids") ||
	    tl_telemetry_add("/tunless/queue", cmd_queue,
			     "One egress queue: depth, counters, sojourn, AQM and shaper parameters. Parameter: <port>/<worker>, e.g. wan/0") ||
	    tl_telemetry_add("/tunless/workers", cmd_workers, "Workers: lcore, rx/tx per port, polls, busy time") ||
	    tl_telemetry_add("/tunless/lanfib", cmd_lanfib,
			     "Gateway LAN routes and neighbours: table sizes, held packets, netlink events and requests"))
		return -1;
	return 0;
}
