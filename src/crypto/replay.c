/* Anti-replay window over a ring of 64-bit words (RFC 6479). Bit n of the ring stands for
 * counter n - 1, so that next (one past the greatest) indexes the newest bit. The word
 * holding next is never cleared while it is current, which is why one word of the 8192
 * bits is not part of the window. */
#include "crypto/replay.h"

#include <string.h>

#define TL_REPLAY_WORDS (TL_REPLAY_BITS / TL_REPLAY_WORD_BITS)
#define TL_REPLAY_WORD_SHIFT 6

_Static_assert(TL_REPLAY_WORD_BITS == 64, "one word is a uint64_t");
_Static_assert((TL_REPLAY_WORDS & (TL_REPLAY_WORDS - 1)) == 0, "ring is a power of two");

void tl_replay_init(struct tl_replay *r)
{
	memset(r, 0, sizeof(*r));
}

/* Moves the window forward to n: clears the words between the current one and n's, at
 * most the whole ring, so a far jump costs O(ring) once. */
static void tl_replay_advance(struct tl_replay *r, uint64_t n)
{
	uint64_t cur = r->next >> TL_REPLAY_WORD_SHIFT;
	uint64_t gap = (n >> TL_REPLAY_WORD_SHIFT) - cur;

	if (gap > TL_REPLAY_WORDS)
		gap = TL_REPLAY_WORDS;
	for (uint64_t i = 1; i <= gap; i++)
		r->bitmap[(cur + i) & (TL_REPLAY_WORDS - 1)] = 0;
	r->next = n;
}

bool tl_replay_check(struct tl_replay *r, uint64_t counter, uint64_t limit)
{
	uint64_t n, *word, bit;

	if (counter >= limit || counter == UINT64_MAX)
		return false;
	n = counter + 1;
	if (r->next > n && r->next - n > TL_REPLAY_WINDOW)
		return false;   /* too old */
	if (n > r->next)
		tl_replay_advance(r, n);
	word = &r->bitmap[(n >> TL_REPLAY_WORD_SHIFT) & (TL_REPLAY_WORDS - 1)];
	bit = 1ull << (n & (TL_REPLAY_WORD_BITS - 1));
	if (*word & bit)
		return false;   /* seen */
	*word |= bit;
	return true;
}
