/* DPDK's EAL for the daemon (eal.c): started once per process from the configuration,
 * stopped once, with the runtime directory it made removed. */
#ifndef TL_CTRL_EAL_H
#define TL_CTRL_EAL_H

struct tl_device;

/* --no-huge, memory for the ports and the control objects, a file prefix per instance
 * name, one floating lcore per worker plus the control lcore. 0 or -1 (logged). */
int tl_eal_start(struct tl_device *dev, const char *argv0);
/* rte_eal_cleanup and the runtime directory, if tl_eal_start succeeded. */
void tl_eal_stop(void);

#endif
