/* WAN -> LAN (decap.c): classification of WireGuard datagrams into crypto jobs, and the
 * in-order finish of opened packets toward the LAN egress queue. */
#ifndef TL_DECAP_H
#define TL_DECAP_H

#include "dataplane/crypto_stage.h"

/* WAN frames received by the worker's queue (or reassembled by the kernel): handshake
 * messages go to the control plane, data messages into the open decapsulation job, which
 * must have room for all n; anything else is a counted drop. The caller submits the job. */
void tl_decap_burst(struct tl_worker *w, struct tl_cs_job *j, struct rte_mbuf **pkts, unsigned n);

/* A done decapsulation job, in order: authentication result, the keypair looked up
 * again, the replay window, the source check, roaming, then the LAN. Always all of it. */
bool tl_decap_finish_job(struct tl_worker *w, struct tl_cs_job *j);

#endif
