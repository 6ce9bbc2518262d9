/* Anti-replay window for data message counters (RFC 6479 style bitmap). 8192 bits, so a
 * counter up to 8128 behind the newest is accepted once. Single writer. */
#ifndef TL_REPLAY_H
#define TL_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#define TL_REPLAY_BITS 8192
#define TL_REPLAY_WORD_BITS 64
#define TL_REPLAY_WINDOW (TL_REPLAY_BITS - TL_REPLAY_WORD_BITS)   /* 8128 */

struct tl_replay {
	uint64_t next;       /* one past the greatest counter accepted so far */
	uint64_t bitmap[TL_REPLAY_BITS / TL_REPLAY_WORD_BITS];
};

void tl_replay_init(struct tl_replay *r);
/* Call only after the packet authenticated. Returns true (and records the counter) if it
 * is new and within the window and below limit (REJECT_AFTER_MESSAGES); false otherwise. */
bool tl_replay_check(struct tl_replay *r, uint64_t counter, uint64_t limit);

#endif
