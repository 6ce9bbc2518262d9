/* Unit tests for how drops are named: a port's imissed is counted under the reason that
 * says what it is on that kind of port, and every reason has a name and help text; and the
 * sum of the workers' and the control plane's counters takes every counter. */
#include <string.h>

#include "ctrl/device.h"
#include "dataplane/balance.h"
#include "dataplane/worker.h"
#include "ctrl/stats.h"
#include "check.h"

static struct tl_worker ws[2];

/* Counters of two workers and the control plane, first, middle and last members among them. */
static void test_counters_sum(void)
{
	struct tl_counters extra = { 0 }, sum;

	ws[0].cnt.drops[0] = 1, ws[1].cnt.drops[0] = 2, extra.drops[0] = 4;
	ws[0].cnt.held = 10, ws[1].cnt.held = 20;
	ws[0].cnt.wakeups = 100, extra.wakeups = 200;
	ws[1].cnt.crypto_jobs = 7, ws[0].cnt.crypto_pkts = 70;
	ws[0].cnt.crypto_full[TL_DIR_MAX - 1] = 1000, ws[1].cnt.crypto_full[TL_DIR_MAX - 1] = 2000;
	tl_dp_counters_sum(ws, 2, &extra, &sum);
	CHECK(sum.drops[0] == 7 && sum.held == 30, "counters sum: drops[0] %lu, held %lu", (unsigned long)sum.drops[0],
	      (unsigned long)sum.held);
	CHECK(sum.wakeups == 300 && sum.crypto_jobs == 7 && sum.crypto_pkts == 70 &&
	      sum.crypto_full[TL_DIR_MAX - 1] == 3000, "counters sum: wakeups %lu, crypto jobs %lu, packets %lu, full %lu",
	      (unsigned long)sum.wakeups, (unsigned long)sum.crypto_jobs, (unsigned long)sum.crypto_pkts,
	      (unsigned long)sum.crypto_full[TL_DIR_MAX - 1]);
	tl_dp_counters_sum(ws, 2, NULL, &sum);
	CHECK(sum.drops[0] == 3 && sum.wakeups == 100, "counters sum without the control plane's");
}

int main(void)
{
	test_counters_sum();
	struct tl_device dev = { 0 };

	dev.ports[TL_PORT_WAN].af_xdp = true;
	dev.ports[TL_PORT_LAN].af_xdp = false;
	CHECK(tl_stats_missed_reason(&dev, TL_PORT_WAN) == TL_DROP_xsk_ring_full,
	      "imissed of an AF_XDP port is xsk_ring_full");
	CHECK(tl_stats_missed_reason(&dev, TL_PORT_LAN) == TL_DROP_nic_rx_missed,
	      "imissed of a NIC PMD port is nic_rx_missed");
	dev.ports[TL_PORT_WAN].af_xdp = false;
	dev.ports[TL_PORT_LAN].af_xdp = true;
	CHECK(tl_stats_missed_reason(&dev, TL_PORT_WAN) == TL_DROP_nic_rx_missed &&
	      tl_stats_missed_reason(&dev, TL_PORT_LAN) == TL_DROP_xsk_ring_full, "the rule follows the port, not its role");
	CHECK(!strcmp(tl_drop_names[TL_DROP_nic_rx_missed], "nic_rx_missed") &&
	      strstr(tl_drop_help[TL_DROP_nic_rx_missed], "PMD"), "nic_rx_missed named and explained");
	for (int i = 0; i < TL_DROP_MAX; i++)
		CHECK(tl_drop_names[i] && tl_drop_names[i][0] && tl_drop_help[i] && tl_drop_help[i][0],
		      "drop reason %d has a name and help", i);
	return check_report();
}
