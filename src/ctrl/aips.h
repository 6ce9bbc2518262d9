/* Allowed IPs (aips.c), owned in one place as the kernel's allowedips.c owns them: a prefix
 * belongs to one peer, and the routing table the workers read and the other sinks (the host
 * routes of host mode, the LAN XDP steering) follow the peers' lists.
 *
 * The routing table has two copies (dataplane/route.h). The workers read the published one;
 * a change goes prefix by prefix into the other one, the spare, together with the peers'
 * lists and a log of what moved. tl_aips_publish publishes the spare, waits for the workers'
 * grace period and replays the log on the old copy, which becomes the spare: one change
 * costs its prefixes, not the table. A copy is built whole only at start, when a change
 * does not fit (a copy of twice the size: amortised) and to repair a copy after a failure;
 * tl_aips_builds counts those builds. tl_aips_abort undoes what was not published, lists
 * and spare alike. Control thread. */
#ifndef TL_CTRL_AIPS_H
#define TL_CTRL_AIPS_H

#include "ctrl/device.h"
#include "dataplane/route.h"

/* Both copies, sized for the configuration's peers, the first one published; the read
 * model's state (tl_stats_init; tl_aips_fini frees it). 0 or -1. */
int tl_aips_init(struct tl_device *dev);
void tl_aips_fini(struct tl_device *dev);

/* The peer other than self that has p among its allowed IPs (published or not), or NULL. */
struct tl_peer_ctrl *tl_aips_owner(struct tl_device *dev, const struct tl_prefix *p, const struct tl_peer_ctrl *self);
/* p becomes an allowed IP of pc, taken from any other peer that has it. 0 or ENOMEM (nothing
 * changed). */
int tl_aips_take(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *p);
/* pc has no allowed IP any more. 0 or ENOMEM (nothing changed). */
int tl_aips_clear(struct tl_device *dev, struct tl_peer_ctrl *pc);
/* pc keeps only the n prefixes of keep (which it has taken already). 0 or ENOMEM (nothing
 * changed). */
int tl_aips_keep_only(struct tl_device *dev, struct tl_peer_ctrl *pc, const struct tl_prefix *keep, size_t n);

/* The changes so far published, and the sinks brought to them; then the read model
 * (tl_stats_publish), whatever changed. Cannot fail (a copy that could not be brought along
 * is rebuilt, or repaired before the next change). 0. */
int tl_aips_publish(struct tl_device *dev);
/* The changes since the last publish undone. */
void tl_aips_abort(struct tl_device *dev);

/* Host routes and LAN steering for every prefix, and from now on for every change (the
 * daemon calls it once its ports and the host interface are up). */
void tl_aips_sinks_start(struct tl_device *dev);

/* Copies of the routing table built whole so far. */
uint64_t tl_aips_builds(struct tl_device *dev);

/* Unit tests only (0 otherwise): the next this many changes fail as if out of memory. */
extern unsigned tl_aips_test_failures;

#endif
