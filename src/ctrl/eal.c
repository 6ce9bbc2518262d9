/* The daemon's EAL (eal.h): arguments from the configuration, start, stop and the removal
 * of the runtime directory EAL leaves behind. */
#include <sched.h>
#include <stdio.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "ctrl/device.h"
#include "ctrl/eal.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "dataplane/runtime.h"

/* Everything but the port pools: control pools (~60 MB), hashes and rings, and the routing
 * table's two copies (published and spare), each an IPv4 rte_fib and an IPv6 rte_lpm6 of 64 MB
 * apiece, plus their rules (a RIB node of 128 bytes per IPv4 prefix and per branch). A copy
 * that grows replaces one family's table in the spare, the old one freed first. With 512 MB,
 * test_wg_uapi's syncconf (when tables were rebuilt whole in quick succession) failed to
 * allocate once the port pools held the crypto jobs too. */
#define TL_EAL_BASE_MB 1024
/* Per allowed IP of the configuration, in both copies of the routing table: 100 000 peers with
 * ten /32 each took 1.1 GB more than none (RIB nodes, tbl8 groups, the peers' lists). Memory
 * without hugepages is taken as it is touched: what is reserved and unused costs nothing. */
#define TL_EAL_ROUTE_BYTES 1200
/* "NN@(first-last)," per lcore: room for the control lcore and TL_MAX_WORKERS workers. */
#define TL_LCORES_ARG_LEN (24 * (TL_MAX_WORKERS + 1))

static bool g_eal_up;
static char g_runtime_dir[4096];

/* --lcores: every lcore may float over every CPU this process may use (set), so that two
 * instances (or a benchmark) on a small machine share the CPUs instead of pinning. */
static void lcores_arg(char *out, size_t len, unsigned n_workers, const cpu_set_t *set)
{
	int first = -1, last = -1;
	size_t off = 0;

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, set)) {
			if (first < 0)
				first = c;
			last = c;
		}
	for (unsigned l = 0; l <= n_workers && off < len; l++)
		off += (size_t)snprintf(out + off, len - off, "%s%u@(%d-%d)", l ? "," : "", l, first, last);
}

static unsigned routes_mb(const struct tl_config *cfg)
{
	uint64_t n = 0;

	for (size_t i = 0; i < cfg->n_peers; i++)
		n += cfg->peers[i].n_allowed_ips;
	return (unsigned)(n * TL_EAL_ROUTE_BYTES >> 20);
}

int tl_eal_start(struct tl_device *dev, const char *argv0)
{
	char prefix[64], lcores[TL_LCORES_ARG_LEN], mem[32];
	char *args[64];
	int n = 0;

	snprintf(prefix, sizeof(prefix), "tunless-%s", dev->cfg->name);
	lcores_arg(lcores, sizeof(lcores), dev->cfg->workers, &dev->cpus);
	args[n++] = (char *)argv0;
	args[n++] = "--no-huge";
	args[n++] = "-m";
	snprintf(mem, sizeof(mem), "%u", tl_ports_memory_mb(dev) + TL_EAL_BASE_MB + routes_mb(dev->cfg));
	args[n++] = mem;
	args[n++] = "--file-prefix";
	args[n++] = prefix;
	args[n++] = "--lcores";
	args[n++] = lcores;
	args[n++] = "--no-pci";
	for (size_t i = 0; i < dev->cfg->n_eal_args && n < 62; i++)
		args[n++] = dev->cfg->eal_args[i];
	args[n] = NULL;
	if (rte_eal_init(n, args) < 0) {
		if (rte_errno == EALREADY || rte_errno == 0)
			tl_log_err("EAL: cannot start: is another tunlessd named '%s' running? (%s is in use)",
				   dev->cfg->name, prefix);
		else
			tl_log_err("EAL: %s", rte_strerror(rte_errno));
		return -1;
	}
	g_eal_up = true;
	tl_runtime_dir_save(g_runtime_dir, sizeof(g_runtime_dir));
	return 0;
}

void tl_eal_stop(void)
{
	if (!g_eal_up)
		return;
	rte_eal_cleanup();
	tl_runtime_dir_remove(g_runtime_dir);
	g_eal_up = false;
}
