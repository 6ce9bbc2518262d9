/* DPDK telemetry commands under /tunless/...: device, peers, drops by reason, ports and
 * per-worker counters. Runs on the telemetry thread: it reads counters that their owners
 * write (aligned 64-bit, no tearing) and walks the peer list under the device lock. */
#include <inttypes.h>
#include <stdio.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "ctrl/device.h"

static struct tl_device *g_dev;

static void counters_sum(struct tl_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned w = 0; w <= g_dev->dp.n_workers; w++) {
		const struct tl_counters *c = w < g_dev->dp.n_workers ? &g_dev->workers[w].cnt : &g_dev->cnt;

		for (int i = 0; i < TL_DROP_MAX; i++)
			sum->drops[i] += c->drops[i];
		for (int p = 0; p < TL_PORT_MAX; p++) {
			sum->rx[p] += c->rx[p];
			sum->tx[p] += c->tx[p];
			sum->backpressure[p] += c->backpressure[p];
		}
		sum->to_ctrl += c->to_ctrl;
		sum->consumed += c->consumed;
		sum->staged += c->staged;
		sum->unstaged += c->unstaged;
		sum->from_ctrl += c->from_ctrl;
		sum->slowpath_rx += c->slowpath_rx;
		sum->busy_polls += c->busy_polls;
		sum->idle_polls += c->idle_polls;
	}
}

static int cmd_drops(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_counters sum;

	(void)cmd;
	(void)params;
	counters_sum(&sum);
	/* kernel side: frames the AF_XDP socket could not take (net_af_xdp reports them as
	 * imissed); without this they are lost silently */
	for (int p = 0; p < TL_PORT_MAX; p++) {
		struct rte_eth_stats st = { 0 };

		if (rte_eth_stats_get(g_dev->dp.port[p].port_id, &st) == 0)
			sum.drops[TL_DROP_xsk_ring_full] += st.imissed;
	}
	rte_tel_data_start_dict(d);
	for (int i = 0; i < TL_DROP_MAX; i++)
		rte_tel_data_add_dict_u64(d, tl_drop_names[i], sum.drops[i]);
	return 0;
}

static void add_port(struct rte_tel_data *d, const char *name, int role, const struct tl_counters *sum)
{
	struct rte_tel_data *c = rte_tel_data_alloc();
	struct rte_eth_stats st = { 0 };

	if (!c)
		return;
	rte_tel_data_start_dict(c);
	rte_eth_stats_get(g_dev->dp.port[role].port_id, &st);
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
	rte_tel_data_add_dict_u64(d, "busy_polls", sum.busy_polls);
	rte_tel_data_add_dict_u64(d, "idle_polls", sum.idle_polls);
	rte_tel_data_add_dict_u64(d, "handshakes_sent", g_dev->handshakes_sent);
	rte_tel_data_add_dict_u64(d, "handshakes_received", g_dev->handshakes_received);
	rte_tel_data_add_dict_u64(d, "cookies_sent", g_dev->cookies_sent);
	return 0;
}

static int cmd_device(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char key[45];

	(void)cmd;
	(void)params;
	tl_key_to_base64(key, g_dev->id.pub);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "name", g_dev->cfg->name);
	rte_tel_data_add_dict_string(d, "mode", g_dev->dp.host_mode ? "host" : "gateway");
	rte_tel_data_add_dict_string(d, "public_key", key);
	rte_tel_data_add_dict_u64(d, "listen_port", g_dev->dp.listen_port);
	rte_tel_data_add_dict_u64(d, "mtu", g_dev->dp.mtu);
	rte_tel_data_add_dict_u64(d, "workers", g_dev->dp.n_workers);
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

int tl_telemetry_register(struct tl_device *dev)
{
	g_dev = dev;
	if (rte_telemetry_register_cmd("/tunless/device", cmd_device, "Device: name, mode, public key, port, workers") ||
	    rte_telemetry_register_cmd("/tunless/peers", cmd_peers, "Peers: endpoint, handshake, rx/tx bytes and packets") ||
	    rte_telemetry_register_cmd("/tunless/drops", cmd_drops, "Drops by reason, summed over workers and control plane") ||
	    rte_telemetry_register_cmd("/tunless/stats", cmd_stats, "Ports and pipeline counters"))
		return -1;
	return 0;
}
