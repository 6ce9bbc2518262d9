/* /tunless/conservation: the per-port balance of the dataplane (tl_conservation), for
 * tests and operators: a non-zero balance on a quiet dataplane is a lost packet. */
#include <rte_telemetry.h>

#include "ctrl/accounting.h"
#include "ctrl/device.h"

static struct tl_device *g_dev;

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
	rte_tel_data_add_dict_int(c, "balance", (int)b->balance);
	rte_tel_data_add_dict_container(d, name, c, 0);
}

static int cmd_conservation(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct tl_port_balance b[TL_PORT_MAX];

	(void)cmd;
	(void)params;
	tl_conservation(g_dev->workers, g_dev->dp.n_workers, b);
	rte_tel_data_start_dict(d);
	add_balance(d, "wan", &b[TL_PORT_WAN]);
	add_balance(d, "lan", &b[TL_PORT_LAN]);
	return 0;
}

int tl_accounting_register(struct tl_device *dev)
{
	g_dev = dev;
	return rte_telemetry_register_cmd("/tunless/conservation", cmd_conservation,
					  "Per-port balance: rx + generated = tx + drops + handed + queued. No parameters");
}
