/* What the control plane sends (send.c), as the kernel's send.c: every frame goes on worker
 * 0's control TX ring, counted as built; the worker sends it. */
#ifndef TL_CTRL_SEND_H
#define TL_CTRL_SEND_H

#include "ctrl/device.h"
#include "dataplane/packet.h"

/* A handshake message (initiation or response) went out less than REKEY_TIMEOUT ago, or
 * an initiation's retry is not due yet. */
bool tl_handshake_recent(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
/* A handshake initiation to the peer (a new index), unless one is recent (above): then
 * nothing is sent and 0 is returned, whichever timer or packet asked. 0 if sent or
 * rate limited. */
int tl_handshake_initiate(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
/* A handshake message to the peer's endpoint. 0, or -1 (counted: no endpoint, no MAC yet). */
int tl_send_frame(struct tl_device *dev, struct tl_peer_ctrl *pc, const void *msg, size_t len, uint64_t now);
/* A cookie reply to the sender of a handshake message (o: its outer headers). 0 if sent. */
int tl_send_cookie_reply(struct tl_device *dev, const struct tl_outer *o, const void *msg, size_t len,
			 uint32_t sender, uint64_t now);
/* A keepalive on the current session, or an initiation when there is none. */
void tl_send_keepalive(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now);
/* Packets the workers staged (the stage ring) into their peers' queues. How many. */
unsigned tl_staged_poll(struct tl_device *dev);
/* The peer's staged packets, encrypted and sent while the session and the ring allow,
 * leaving reserve frames of room in the ring (the answers a handshake batch still owes);
 * what does not fit waits in the peer's queue for a later tick. */
void tl_staged_flush(struct tl_device *dev, struct tl_peer_ctrl *pc, uint64_t now, unsigned reserve);
/* Every staged packet of the peer dropped under why. */
void tl_staged_drop(struct tl_device *dev, struct tl_peer_ctrl *pc, enum tl_drop why);
/* Frames the control TX ring has room for now. */
unsigned tl_send_room(struct tl_device *dev);
/* Unit tests only (NULL otherwise): runs just before each frame goes on the control TX
 * ring, where a worker may run at the same time. */
extern void (*tl_send_enqueue_test_hook)(struct tl_device *dev);

#endif
