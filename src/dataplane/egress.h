/* The egress stage of a queue owner: the AQM and the port's shared shaper in front of each
 * TX queue, the control plane's frames, and the snapshots and parameter mailbox the
 * control plane uses (egress.c). */
#ifndef TL_EGRESS_H
#define TL_EGRESS_H

#include "dataplane/crypt.h"

int tl_egress_init(struct tl_worker *w, int role);

/* Frames built by the control plane go out ahead of the queues. Returns frames sent. */
unsigned tl_egress_ctrl_flush(struct tl_worker *w);

/* Releases what the AQM and the shaper allow: WAN packets are readied for sealing into
 * crypto jobs (sent when finished, tl_egress_send_job); LAN packets go to the port, and
 * what it refuses returns to the head of the queue. Returns packets taken. */
unsigned tl_egress_flush(struct tl_worker *w, int role);

/* Transmits a finished encapsulation job from where it stopped (failed seals dropped
 * first). true when all of it is gone; false: the port refused some, the rest waits. */
bool tl_egress_send_job(struct tl_worker *w, struct tl_crypt_job *j);

/* Mailbox and snapshots, every round. */
void tl_egress_housekeeping(struct tl_worker *w);
bool tl_egress_requests_pending(struct tl_worker *w);

/* The shaper holds packets back: time until the earliest send slot, else 0. */
uint64_t tl_egress_shaper_wait_ns(const struct tl_worker *w);

#endif
