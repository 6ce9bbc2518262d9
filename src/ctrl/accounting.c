/* /tunless/conservation: the per-port balance of the dataplane (tl_conservation) and the
 * control plane's balance per flow (tl_ctrl_balance), for tests and operators: a non-zero
 * balance on a quiet daemon is a lost (or twice counted) packet. */
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>

#include <rte_telemetry.h>

#include "ctrl/accounting.h"
#include "ctrl/device.h"
#include "ctrl/telemetry.h"

const char *const tl_ctrl_flow_names[TL_FLOW_MAX] = { "handshakes", "staged", "frames", "slowpath" };

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
	struct tl_peer_ctrl *pc;

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
	pthread_mutex_lock(&dev->lock);
	TAILQ_FOREACH(pc, &dev->peers, link)
		staged_held += rte_ring_count(pc->dp->staged);
	pthread_mutex_unlock(&dev->lock);
	flow_set(&out[TL_FLOW_HANDSHAKES], to_ctrl, tl_cnt_read(&cc->consumed), tl_cnt_read(&cc->hs_drops),
		 dev->dp.hs_ring ? rte_ring_count(dev->dp.hs_ring) : 0);
	flow_set(&out[TL_FLOW_STAGED], staged, tl_cnt_read(&cc->unstaged), staged_drops, staged_held);
	flow_set(&out[TL_FLOW_FRAMES], tl_cnt_read(&cc->built), from_ctrl, 0, ctrl_tx_held);
	flow_set(&out[TL_FLOW_SLOWPATH], tl_cnt_read(&cc->slowpath_read), slow_rx, tl_cnt_read(&cc->slowpath_drops), slow_held);
}

/* ---- telemetry ------------------------------------------------------------------------------ */

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
	struct rte_tel_data *c = rte_tel_data_alloc();

	if (!c)
		return;
	rte_tel_data_start_dict(c);
	rte_tel_data_add_dict_u64(c, "rx", b->rx);
	rte_tel_data_add_dict_u64(c, "generated", b->generated);
	rte_tel_data_add_dict_u64(c, "tx", b->tx);
	rte_tel_data_add_dict_u64(c, "drops", b->drops);
	rte_tel_data_add_dict_u64(c, "handed", b->handed);
	rte_tel_data_add_dict_u64(c, "queued", b->queued);
	add_i64(c, "balance", b->balance);
	rte_tel_data_add_dict_container(d, name, c, 0);
}

/* The flows flattened ("<flow>_in", ...): 22.11's JSON writer nests one level only. */
static void add_ctrl(struct rte_tel_data *d, const struct tl_flow_balance f[TL_FLOW_MAX])
{
	struct rte_tel_data *c = rte_tel_data_alloc();
	int64_t total = 0;
	char key[40];

	if (!c)
		return;
	rte_tel_data_start_dict(c);
	for (int i = 0; i < TL_FLOW_MAX; i++) {
		const char *n = tl_ctrl_flow_names[i];

		snprintf(key, sizeof(key), "%s_in", n);
		rte_tel_data_add_dict_u64(c, key, f[i].in);
		snprintf(key, sizeof(key), "%s_out", n);
		rte_tel_data_add_dict_u64(c, key, f[i].out);
		snprintf(key, sizeof(key), "%s_dropped", n);
		rte_tel_data_add_dict_u64(c, key, f[i].dropped);
		snprintf(key, sizeof(key), "%s_held", n);
		rte_tel_data_add_dict_u64(c, key, f[i].held);
		snprintf(key, sizeof(key), "%s_balance", n);
		add_i64(c, key, f[i].balance);
		total += f[i].balance < 0 ? -f[i].balance : f[i].balance;
	}
	add_i64(c, "balance", total);     /* sum of the flows' |balance|: 0 iff every flow is exact */
	rte_tel_data_add_dict_container(d, "ctrl", c, 0);
}

static struct tl_device *g_dev;

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
int tl_accounting_register(struct tl_device *dev)
{
	g_dev = dev;
	return tl_telemetry_add("/tunless/conservation", cmd_conservation,
				"Balances: per port rx + generated = tx + drops + handed + queued; "
				"ctrl per flow in = out + dropped + held");
}
