/* EAL and net_ring ports for the unit-test harnesses (see test_eal.h). */
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>

#include "crypto/primitives.h"
#include "dataplane/runtime.h"
#include "test_eal.h"

/* 1 GiB: a jumbo MTU's dataplane (test_mtu) takes ~300 MB of buffers; taken only as touched. */
static char runtime_dir[4096];

int tl_test_eal_init(const char *argv0, const char *tag)
{
	char prefix[64];
	char *eal[] = { (char *)argv0, "--no-huge", "-m", "1024", "--no-pci", "--no-shconf", "--no-telemetry",
			"--file-prefix", prefix, "--log-level", "lib.eal:error", NULL };

	snprintf(prefix, sizeof(prefix), "%s_%d", tag, (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0) {
		printf("EAL init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	tl_runtime_dir_save(runtime_dir, sizeof(runtime_dir));
	return tl_crypto_init();
}

void tl_test_eal_fini(void)
{
	rte_eal_cleanup();
	tl_runtime_dir_remove(runtime_dir);
}

int tl_test_ring_port(const char *name, unsigned ring_size, struct rte_mempool *pool, struct rte_ring **rx,
		      struct rte_ring **tx)
{
	struct rte_eth_conf conf = { 0 };
	int socket = (int)rte_socket_id(), id;
	char rname[RTE_RING_NAMESIZE];

	snprintf(rname, sizeof(rname), "%s_rx", name);
	*rx = rte_ring_create(rname, ring_size, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(rname, sizeof(rname), "%s_tx", name);
	*tx = rte_ring_create(rname, ring_size, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!*rx || !*tx)
		return -1;
	id = rte_eth_from_rings(name, rx, 1, tx, 1, (unsigned)socket);
	if (id < 0)
		return -1;
	if (rte_eth_dev_configure((uint16_t)id, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup((uint16_t)id, 0, (uint16_t)ring_size, (unsigned)socket, NULL, pool) != 0 ||
	    rte_eth_tx_queue_setup((uint16_t)id, 0, (uint16_t)ring_size, (unsigned)socket, NULL) != 0 ||
	    rte_eth_dev_start((uint16_t)id) != 0) {
		rte_eth_dev_close((uint16_t)id);
		return -1;
	}
	return id;
}

static void ring_free_all(struct rte_ring *r)
{
	struct rte_mbuf *m;

	while (r && rte_ring_dequeue(r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(r);
}

void tl_test_ring_port_free(int port_id, struct rte_ring *rx, struct rte_ring *tx)
{
	if (port_id >= 0) {
		rte_eth_dev_stop((uint16_t)port_id);
		rte_eth_dev_close((uint16_t)port_id);    /* releases the port, not the rings */
	}
	ring_free_all(rx);
	ring_free_all(tx);
}
