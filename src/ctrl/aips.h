/* Allowed IPs (aips.c), owned in one place as the kernel's allowedips.c owns them: a prefix
 * belongs to one peer, and the routing table the workers read (LPM, published by pointer
 * under RCU) and the other sinks (the host routes of host mode, the LAN XDP steering) follow
 * the peers' lists. Control thread. */
#ifndef TL_CTRL_AIPS_H
#define TL_CTRL_AIPS_H

#include "ctrl/device.h"
#include "dataplane/route.h"

/* The peer other than self that has p among its allowed IPs, or NULL. */
struct tl_peer_ctrl *tl_aips_owner(struct tl_device *dev, const struct tl_prefix *p, const struct tl_peer_ctrl *self);
/* p becomes an allowed IP of pc, taken from any other peer that has it. 0 or ENOMEM. */
int tl_aips_take(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *p);

/* The routing table of every peer but skip (NULL: all); NULL when out of memory. */
struct tl_table *tl_aips_table(struct tl_device *dev, const struct tl_peer_ctrl *skip);
/* Publishes t; the old table is freed once no worker can hold it; the LAN steering is
 * brought to every peer's prefixes. */
void tl_aips_swap(struct tl_device *dev, struct tl_table *t);
/* tl_aips_table(dev, NULL) published. 0, or -1 when out of memory (the old table stays). */
int tl_aips_publish(struct tl_device *dev);
/* The LAN steering of pc's prefixes removed (pc is going away). */
void tl_aips_unsteer(struct tl_device *dev, const struct tl_peer_ctrl *pc);

/* Every peer's allowed IPs, sorted: taken before a change, the host routes and the LAN
 * steering of the prefixes that appeared or disappeared are synced after it. */
struct tl_aips_list {
	struct tl_prefix *p;
	size_t n;
};
int tl_aips_list(struct tl_device *dev, struct tl_aips_list *l);   /* 0, or -1 out of memory */
void tl_aips_sync(struct tl_device *dev, const struct tl_aips_list *before);
void tl_aips_list_free(struct tl_aips_list *l);

/* Unit tests only (0 otherwise): the next this many routing table builds fail. */
extern unsigned tl_table_build_test_failures;

#endif
