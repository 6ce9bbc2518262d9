/* Unit tests for how drops are named: a port's imissed is counted under the reason that
 * says what it is on that kind of port, and every reason has a name and help text. */
#include <string.h>

#include "ctrl/device.h"
#include "ctrl/stats.h"
#include "check.h"

int main(void)
{
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
