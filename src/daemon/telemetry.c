/* DPDK telemetry commands under /tunless/...: the read model (stats.h) section by section,
 * keys being the fields' ids (device, peers, ports, egress queues as a list + info pair:
 * /tunless/queues, /tunless/queue,<port>/<worker>; workers, drops by reason), the
 * conservation balances and the gateway's LAN routes and neighbours (/tunless/lanfib). Runs
 * on the telemetry thread: the read model reads counters that their owners write and walks
 * the peers under the device lock. DPDK's telemetry thread outlives the device and 22.11
 * cannot unregister a command: every command runs through one gate that the shutdown closes
 * (tl_telemetry_down) before anything is torn down. */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "ctrl/device.h"
#include "ctrl/lanmirror.h"
#include "ctrl/ports.h"
#include "ctrl/stats.h"
#include "daemon/telemetry.h"
#include "dataplane/dpdk_compat.h"

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

/* Registers a /tunless/... command behind the gate (all of ours go through it). */
static int tl_telemetry_add(const char *path, telemetry_cb fn, const char *help)
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

static void add_fields(struct rte_tel_data *d, const void *s, const struct tl_stat_field *f)
{
	for (; f->id; f++)
		rte_tel_data_add_dict_u64(d, f->id, tl_stat_value(s, f));
}

/* A dictionary under name in d, filled by the caller; NULL out of memory. */
static struct rte_tel_data *add_dict(struct rte_tel_data *d, const char *name)
{
	struct rte_tel_data *c = rte_tel_data_alloc();

	if (!c)
		return NULL;
	rte_tel_data_start_dict(c);
	if (rte_tel_data_add_dict_container(d, name, c, 0) != 0) {
		rte_tel_data_free(c);
		return NULL;
	}
	return c;
}

static int cmd_device(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_stats_device s;

	(void)cmd;
	(void)params;
	tl_stats_device(g_dev, &s);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", s.name);
	rte_tel_data_add_dict_string(d, "mode", s.mode);
	rte_tel_data_add_dict_string(d, "public_key", s.public_key);
	rte_tel_data_add_dict_string(d, "version", s.version);
	add_fields(d, &s, tl_stats_device_fields);
	return 0;
}

static int cmd_peers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_stats_peer *v;
	bool oom = false;
	char name[24];
	size_t n;

	(void)cmd;
	(void)params;
	v = tl_stats_peers(g_dev, &n, &oom);
	if (oom)
		return -ENOMEM;
	rte_tel_data_start_dict(d);
	for (size_t i = 0; i < n; i++) {
		struct rte_tel_data *c;

		snprintf(name, sizeof(name), "peer%u", v[i].id);
		if (!(c = add_dict(d, name)))
			continue;
		rte_tel_data_add_dict_string(c, "name", v[i].name);
		rte_tel_data_add_dict_string(c, "public_key", v[i].public_key);
		rte_tel_data_add_dict_string(c, "endpoint", v[i].endpoint);
		rte_tel_data_add_dict_string(c, "allowed_ips", v[i].allowed_ips ? v[i].allowed_ips : "");
		add_fields(c, &v[i], tl_stats_peer_fields);
	}
	tl_stats_peers_free(v, n);
	return 0;
}

static int cmd_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_stats_port s;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (int r = 0; r < TL_PORT_MAX; r++) {
		struct rte_tel_data *c;

		if (tl_stats_port(g_dev, r, &s) != 0 || !(c = add_dict(d, s.port)))
			continue;
		rte_tel_data_add_dict_string(c, "iface", s.iface);
		add_fields(c, &s, tl_stats_port_fields);
	}
	return 0;
}

static int cmd_drops(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint64_t drops[TL_DROP_MAX];

	(void)cmd;
	(void)params;
	tl_stats_drops(g_dev, drops);
	rte_tel_data_start_dict(d);
	for (int i = 0; i < TL_DROP_MAX; i++)
		rte_tel_data_add_dict_u64(d, tl_drop_names[i], drops[i]);
	return 0;
}

static int cmd_workers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_stats_worker s;
	char name[24];

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	for (unsigned w = 0; w < g_dev->dp.n_workers; w++) {
		struct rte_tel_data *c;

		snprintf(name, sizeof(name), "worker%u", w);
		if (!(c = add_dict(d, name)))
			continue;
		tl_stats_worker(g_dev, w, &s);
		add_fields(c, &s, tl_stats_worker_fields);
	}
	return 0;
}

static int cmd_lanfib(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_lanmirror_stats st;
	struct tl_counters sum;

	(void)cmd;
	(void)params;
	tl_lanmirror_stats_get(g_dev, &st);
	tl_stats_counters_sum(g_dev, &sum);
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

/* ---- egress queues: /tunless/queues lists "<port>/<worker>", /tunless/queue,<id> tells one ---- */

static int cmd_queues(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char id[32];

	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (int p = 0; p < TL_PORT_MAX; p++)
		for (unsigned w = 0; g_dev->ports[p].started && w < g_dev->dp.n_queues; w++) {   /* owners' */
			snprintf(id, sizeof(id), "%s/%u", tl_port_names[p], w);
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
		if (!strcmp(port, tl_port_names[p]) || (port[0] == '0' + p && !port[1]))
			*role = p;
	if (*role < 0 || params[n + 1] < '0' || params[n + 1] > '9')
		return -EINVAL;
	errno = 0;
	w = strtoul(params + n + 1, &end, 10);
	if (errno || *end || w >= g_dev->dp.n_queues || !g_dev->ports[*role].started)
		return -EINVAL;
	*worker = (unsigned)w;
	return 0;
}

static void add_hist(struct rte_tel_data *d, const char *name, const uint64_t cum[TL_AQM_HIST_BOUNDS])
{
	struct rte_tel_data *c = add_dict(d, name);
	char key[24];

	if (!c)
		return;
	for (unsigned i = 0; i < TL_AQM_HIST_BOUNDS; i++) {
		snprintf(key, sizeof(key), "%" PRIu64, tl_aqm_hist_bound(i));
		rte_tel_data_add_dict_u64(c, key, cum[i]);
	}
}

/* The cumulative histograms, with Prometheus' bounds: the queue's sojourn and, per DRR
 * class, the sojourn and the bytes served ahead. */
static void add_hists(struct rte_tel_data *d, const struct tl_aqm_stats *s)
{
	static const char *const names[TL_AQM_CLASSES][2] = {
		{ "sparse_sojourn_below_ns", "sparse_ahead_below_bytes" },
		{ "bulk_sojourn_below_ns", "bulk_ahead_below_bytes" },
	};
	uint64_t cum[TL_AQM_HIST_BOUNDS];

	tl_aqm_sojourn_cumulative(s, TL_AQM_ALL, cum);
	add_hist(d, "sojourn_below_ns", cum);
	for (unsigned c = 0; c < TL_AQM_CLASSES; c++) {
		tl_aqm_sojourn_cumulative(s, c, cum);
		add_hist(d, names[c][0], cum);
		tl_aqm_ahead_cumulative(s, c, cum);
		add_hist(d, names[c][1], cum);
	}
}

static int cmd_queue(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_queue_snapshot *snap;
	struct tl_stats_queue s;
	unsigned w;
	int role;

	(void)cmd;
	if (queue_id_parse(params, &role, &w) != 0)
		return -EINVAL;
	snap = malloc(sizeof(*snap));   /* the histogram is a few KiB: not on the telemetry stack */
	if (!snap)
		return -ENOMEM;
	tl_stats_queue(g_dev, role, w, &s, snap);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "port", s.port);
	rte_tel_data_add_dict_u64(d, "worker", s.worker);
	add_fields(d, &s, tl_stats_queue_fields);
	add_hists(d, &snap->aqm);
	free(snap);
	return 0;
}

/* ---- conservation ------------------------------------------------------------------------------ */

/* A signed 64-bit value as a JSON number: DPDK 22.11's telemetry has int (32 bits) and u64
 * only, so a balance below INT_MIN (never seen in practice) travels as a decimal string. */
static void add_i64(struct rte_tel_data *d, const char *name, int64_t v)
{
	char text[24];

	if (v >= 0) {
		rte_tel_data_add_dict_u64(d, name, (uint64_t)v);
	} else if (v >= INT_MIN) {
		rte_tel_data_add_dict_int(d, name, (int)v);
	} else {
		snprintf(text, sizeof(text), "%" PRId64, v);
		rte_tel_data_add_dict_string(d, name, text);
	}
}

static void add_balance(struct rte_tel_data *d, const char *name, const struct tl_port_balance *b)
{
	struct rte_tel_data *c = add_dict(d, name);

	if (!c)
		return;
	rte_tel_data_add_dict_u64(c, "rx", b->rx);
	rte_tel_data_add_dict_u64(c, "generated", b->generated);
	rte_tel_data_add_dict_u64(c, "tx", b->tx);
	rte_tel_data_add_dict_u64(c, "drops", b->drops);
	rte_tel_data_add_dict_u64(c, "handed", b->handed);
	rte_tel_data_add_dict_u64(c, "queued", b->queued);
	add_i64(c, "balance", b->balance);
}

/* The flows flattened ("<flow>_in", ...): 22.11's JSON writer nests one level only. */
static void add_ctrl(struct rte_tel_data *d, const struct tl_flow_balance f[TL_FLOW_MAX])
{
	static const char *const part[] = { "in", "out", "dropped", "held" };
	struct rte_tel_data *c = add_dict(d, "ctrl");
	int64_t total = 0;
	char key[40];

	if (!c)
		return;
	for (int i = 0; i < TL_FLOW_MAX; i++) {
		const uint64_t v[] = { f[i].in, f[i].out, f[i].dropped, f[i].held };

		for (size_t k = 0; k < RTE_DIM(part); k++) {
			snprintf(key, sizeof(key), "%s_%s", tl_ctrl_flow_names[i], part[k]);
			rte_tel_data_add_dict_u64(c, key, v[k]);
		}
		snprintf(key, sizeof(key), "%s_balance", tl_ctrl_flow_names[i]);
		add_i64(c, key, f[i].balance);
		total += f[i].balance < 0 ? -f[i].balance : f[i].balance;
	}
	add_i64(c, "balance", total);     /* sum of the flows' |balance|: 0 iff every flow is exact */
}

static int cmd_conservation(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_port_balance b[TL_PORT_MAX];
	struct tl_flow_balance f[TL_FLOW_MAX];

	(void)cmd;
	(void)params;
	tl_conservation(g_dev->workers, g_dev->dp.n_workers, b);
	tl_ctrl_balance(g_dev, f);
	rte_tel_data_start_dict(d);
	add_balance(d, "wan", &b[TL_PORT_WAN]);
	add_balance(d, "lan", &b[TL_PORT_LAN]);
	add_ctrl(d, f);
	return 0;
}

/* DPDK keeps help texts under RTE_TEL_MAX_STRING_LEN (128) bytes: a longer one is refused. */
int tl_telemetry_register(struct tl_device *dev)
{
	g_dev = dev;
	if (tl_telemetry_add("/tunless/device", cmd_device, "Device: name, mode, key, port, workers, pipeline counters") ||
	    tl_telemetry_add("/tunless/peers", cmd_peers, "Peers: endpoint, allowed IPs, handshakes, session, rx/tx bytes and packets") ||
	    tl_telemetry_add("/tunless/ports", cmd_ports, "Ports: the dataplane's rx/tx, drops, backpressure; the ethdev's counters") ||
	    tl_telemetry_add("/tunless/drops", cmd_drops, "Drops by reason, summed over workers and control plane") ||
	    tl_telemetry_add("/tunless/queues", cmd_queues, "Egress queues: list of <port>/<worker> ids") ||
	    tl_telemetry_add("/tunless/queue", cmd_queue,
			     "One egress queue: depth, counters, sojourn, AQM and shaper parameters. Parameter: <port>/<worker>, e.g. wan/0") ||
	    tl_telemetry_add("/tunless/workers", cmd_workers, "Workers: lcore, polls, busy time, crypto jobs") ||
	    tl_telemetry_add("/tunless/lanfib", cmd_lanfib,
			     "Gateway LAN routes and neighbours: table sizes, held packets, netlink events and requests") ||
	    tl_telemetry_add("/tunless/conservation", cmd_conservation,
			     "Balances: per port rx + generated = tx + drops + handed + queued; "
			     "ctrl per flow in = out + dropped + held"))
		return -1;
	return 0;
}
