/* The per-source handshake rate limit (ratelimit.h): token buckets in an rte_hash. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_lcore.h>

#include "ctrl/ratelimit.h"

#define TL_RL_TOKEN_NS (1000000000ull / TL_RL_PER_SECOND)
#define TL_RL_MAX_TOKENS (TL_RL_TOKEN_NS * TL_RL_BURST)
#define TL_RL_IDLE_NS 1000000000ull

struct tl_rl_key {
	uint8_t family;
	uint8_t addr[8];     /* IPv4 address, or the /64 of an IPv6 one */
};

struct tl_rl_bucket {
	uint64_t tokens;     /* in nanoseconds of credit */
	uint64_t last_ns;
};

struct tl_ratelimit {
	struct rte_hash *h;
	struct tl_rl_bucket *buckets;   /* indexed by the hash's key position */
};

struct tl_ratelimit *tl_ratelimit_new(const char *name)
{
	struct rte_hash_parameters p = {
		.name = name,
		.entries = TL_RL_ENTRIES,
		.key_len = sizeof(struct tl_rl_key),
		.hash_func = rte_jhash,
		.socket_id = (int)rte_socket_id(),
	};
	struct tl_ratelimit *rl = calloc(1, sizeof(*rl));

	if (!rl)
		return NULL;
	rl->h = rte_hash_create(&p);
	rl->buckets = calloc(TL_RL_ENTRIES * 2, sizeof(*rl->buckets));   /* rte_hash may use up to 2x slots */
	if (!rl->h || !rl->buckets) {
		tl_ratelimit_free(rl);
		return NULL;
	}
	return rl;
}

void tl_ratelimit_free(struct tl_ratelimit *rl)
{
	if (!rl)
		return;
	rte_hash_free(rl->h);
	free(rl->buckets);
	free(rl);
}

static struct tl_rl_key key_of(int family, const uint8_t *src)
{
	struct tl_rl_key k = { .family = (uint8_t)family };

	memcpy(k.addr, src, family == AF_INET ? 4 : 8);
	return k;
}

bool tl_ratelimit_allow(struct tl_ratelimit *rl, int family, const uint8_t *src, uint64_t now_ns)
{
	struct tl_rl_key k = key_of(family, src);
	struct tl_rl_bucket *b;
	int32_t pos = rte_hash_lookup(rl->h, &k);

	if (pos < 0) {
		pos = rte_hash_add_key(rl->h, &k);
		if (pos < 0 || (uint32_t)pos >= TL_RL_ENTRIES * 2)
			return false;
		rl->buckets[pos] = (struct tl_rl_bucket){ .tokens = TL_RL_MAX_TOKENS, .last_ns = now_ns };
	}
	b = &rl->buckets[pos];
	b->tokens = RTE_MIN(b->tokens + (now_ns - b->last_ns), TL_RL_MAX_TOKENS);
	b->last_ns = now_ns;
	if (b->tokens < TL_RL_TOKEN_NS)
		return false;
	b->tokens -= TL_RL_TOKEN_NS;
	return true;
}

void tl_ratelimit_gc(struct tl_ratelimit *rl, uint64_t now_ns)
{
	const void *key;
	void *data;
	uint32_t it = 0;
	int32_t pos;

	while ((pos = rte_hash_iterate(rl->h, &key, &data, &it)) >= 0)
		if (now_ns - rl->buckets[pos].last_ns > TL_RL_IDLE_NS)
			rte_hash_del_key(rl->h, key);
}
