/* Gateway mode: the LAN interface's routes and neighbours, mirrored from the kernel into
 * the dataplane (see the top of lanmirror.c). Control thread only, except
 * tl_lanmirror_stats_get (any thread: counters as last written). */
#ifndef TL_CTRL_LANMIRROR_H
#define TL_CTRL_LANMIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tl_device;

struct tl_lanmirror_stats {
	uint64_t routes4, routes6;         /* in the published tables */
	uint64_t gateways4, gateways6;
	uint64_t routes_skipped;           /* not in the tables: too many gateways, or refused */
	uint64_t routes_full;              /* kernel routes not kept: route store full */
	uint64_t neighbours;               /* entries in the dataplane's neighbour table */
	uint64_t neigh_full;               /* neighbours not kept: table full */
	uint64_t events;                   /* notification datagrams read */
	uint64_t overruns, resyncs;        /* notifications lost (ENOBUFS); full dumps after */
	uint64_t dumps;                    /* dump requests (routes and neighbours, per family) */
	uint64_t builds;                   /* route snapshots published */
	uint64_t resolve_requests;         /* next hops handed to the kernel to resolve */
	uint64_t failed_removed;           /* of those, kernel entries deleted as failed */
	uint64_t netlink_requests;         /* every request the control plane sent (tl_nl) */
};

/* Subscribes, dumps, publishes the first snapshot (before the workers start). -1 and err on
 * failure. */
int tl_lanmirror_open(struct tl_device *dev, char *err, size_t errlen);
/* Notifications, the workers' resolution requests, the snapshot when due (the control loop
 * calls it when the subscription socket is readable, when a worker kicked it and on its
 * ticks). Returns the number of items handled. */
unsigned tl_lanmirror_poll(struct tl_device *dev, uint64_t now);
void tl_lanmirror_close(struct tl_device *dev);
/* A route table to build or a resync to do: the control loop ticks fast meanwhile. */
bool tl_lanmirror_pending(const struct tl_device *dev);
void tl_lanmirror_stats_get(const struct tl_device *dev, struct tl_lanmirror_stats *st);

#endif
