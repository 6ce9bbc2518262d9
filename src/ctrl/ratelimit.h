/* Per-source handshake rate limit under load: a token bucket per source address (IPv4 /32,
 * IPv6 /64), 20 messages per second with a burst of 5, as WireGuard does. Control plane
 * only. Idle buckets are forgotten after a second. */
#ifndef TL_RATELIMIT_H
#define TL_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define TL_RL_PER_SECOND 20
#define TL_RL_BURST 5
#define TL_RL_ENTRIES 16384

struct tl_ratelimit;

struct tl_ratelimit *tl_ratelimit_new(const char *name);
void tl_ratelimit_free(struct tl_ratelimit *rl);
/* true: this message from src may be processed now. A full table refuses new sources. */
bool tl_ratelimit_allow(struct tl_ratelimit *rl, int family, const uint8_t *src, uint64_t now_ns);
/* Drops buckets idle for over a second; call about once a second. */
void tl_ratelimit_gc(struct tl_ratelimit *rl, uint64_t now_ns);

#endif
