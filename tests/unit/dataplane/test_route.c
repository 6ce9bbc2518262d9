/* Allowed-IPs lookup (rte_fib/rte_lpm6 as tl_table keeps them) against a linear scan on
 * random IPv4 and IPv6 prefix sets: the longest matching prefix wins. Addresses are drawn
 * near the prefixes so that nested and adjacent prefixes are exercised. Sets built at once,
 * and one table changed prefix by prefix (added, moved to another peer, removed, a copy too
 * small to take more) against the same scan over a reference list after every change. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "dataplane/runtime.h"
#include "dataplane/route.h"

static unsigned passed, failed;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static bool prefix_match(const struct tl_route_entry *e, const uint8_t *a)
{
	unsigned full = e->len / 8, rest = e->len % 8;

	if (memcmp(e->addr, a, full))
		return false;
	return !rest || !((e->addr[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest)));
}

static uint32_t naive_lookup(const struct tl_route_entry *e, size_t n, int family, const uint8_t *a)
{
	int best = -1;
	uint32_t id = UINT32_MAX;

	for (size_t i = 0; i < n; i++)
		if (e[i].family == family && prefix_match(&e[i], a) && (int)e[i].len > best) {
			best = e[i].len;
			id = e[i].peer_id;
		}
	return id;
}

static void clear_host_bits(uint8_t *a, unsigned alen, unsigned len)
{
	for (unsigned bit = len; bit < alen * 8; bit++)
		a[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
}

/* Random prefixes of one family, clustered in a few /8 (/16 for v6) regions. */
static size_t random_prefixes(struct tl_route_entry *e, size_t n, int family)
{
	unsigned alen = family == AF_INET ? 4 : 16, maxlen = alen * 8;
	size_t k = 0;

	while (k < n) {
		struct tl_route_entry c = { .family = family };
		bool dup = false;

		for (unsigned i = 0; i < alen; i++)
			c.addr[i] = (uint8_t)next_rand();
		c.addr[0] = (uint8_t)(10 + next_rand() % 3);
		c.len = (uint8_t)(next_rand() % 4 == 0 ? next_rand() % (maxlen + 1) : maxlen / 2 + next_rand() % (maxlen / 2 + 1));
		clear_host_bits(c.addr, alen, c.len);
		c.peer_id = (uint32_t)(next_rand() % TL_MAX_PEERS);
		for (size_t i = 0; i < k && !dup; i++)
			dup = e[i].len == c.len && !memcmp(e[i].addr, c.addr, alen);
		if (!dup)
			e[k++] = c;
	}
	return k;
}

/* An address inside (or just beside) a random prefix of the set, or anywhere. */
static void random_address(uint8_t *a, const struct tl_route_entry *e, size_t n, unsigned alen)
{
	for (unsigned i = 0; i < alen; i++)
		a[i] = (uint8_t)next_rand();
	if (next_rand() % 8 == 0)
		return;
	const struct tl_route_entry *p = &e[next_rand() % n];
	unsigned keep = p->len ? p->len - (next_rand() % 2 && p->len ? 1 : 0) : 0;

	for (unsigned bit = 0; bit < keep; bit++) {
		uint8_t m = (uint8_t)(0x80u >> (bit % 8));

		a[bit / 8] = (uint8_t)((a[bit / 8] & ~m) | (p->addr[bit / 8] & m));
	}
}

static void check_set(int family, size_t n_prefixes, unsigned lookups, uint64_t gen)
{
	unsigned alen = family == AF_INET ? 4 : 16, mismatches = 0;
	struct tl_route_entry *e = calloc(n_prefixes, sizeof(*e));
	struct tl_table *t;

	random_prefixes(e, n_prefixes, family);
	t = tl_table_build(e, n_prefixes, gen);
	if (!t) {
		failed++;
		printf("not ok build %s table of %zu prefixes\n", family == AF_INET ? "v4" : "v6", n_prefixes);
		free(e);
		return;
	}
	for (unsigned i = 0; i < lookups; i++) {
		uint8_t a[16];

		random_address(a, e, n_prefixes, alen);
		if (tl_route_lookup(t, family, a) != naive_lookup(e, n_prefixes, family, a))
			mismatches++;
	}
	if (mismatches) {
		failed++;
		printf("not ok %s: %u of %u lookups differ from the linear scan (%zu prefixes)\n",
		       family == AF_INET ? "v4" : "v6", mismatches, lookups, n_prefixes);
	} else {
		passed++;
	}
	tl_table_free(t);
	free(e);
}

/* ---- one table changed prefix by prefix against a reference list --------------------------- */

struct model {
	struct tl_route_entry e[600];
	size_t n;
};

static size_t model_find(const struct model *m, const struct tl_route_entry *p)
{
	unsigned alen = p->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].family == p->family && m->e[i].len == p->len && !memcmp(m->e[i].addr, p->addr, alen))
			return i;
	return m->n;
}

/* Lookups and exact gets of t agree with the reference; the number of disagreements. */
static unsigned compare(struct tl_table *t, const struct model *m, int family, unsigned lookups)
{
	unsigned alen = family == AF_INET ? 4 : 16, bad = 0;

	for (unsigned i = 0; i < lookups; i++) {
		uint8_t a[16];

		random_address(a, m->e, m->n ? m->n : 1, alen);
		bad += tl_route_lookup(t, family, a) != naive_lookup(m->e, m->n, family, a);
	}
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].family == family)
			bad += tl_table_get(t, family, m->e[i].addr, m->e[i].len) != m->e[i].peer_id;
	return bad;
}

static void check_incremental(int family, uint64_t gen)
{
	struct tl_table_size size = { .routes4 = 1024, .tbl8_4 = 1024, .rules6 = 1024, .tbl8_6 = 8192 };
	unsigned bad = 0, steps = 0, refused = 0, alen = family == AF_INET ? 4 : 16;
	struct model *m = calloc(1, sizeof(*m));
	struct tl_route_entry pool[400];
	struct tl_table *t = tl_table_new(&size, gen);

	if (!t || !m) {
		failed++;
		printf("not ok incremental %s: no table\n", family == AF_INET ? "v4" : "v6");
		goto out;
	}
	random_prefixes(pool, RTE_DIM(pool), family);
	/* the default route and its halves, which rte_lpm6 cannot hold as such */
	for (unsigned i = 0; i < 3; i++) {
		memset(pool[i].addr, 0, sizeof(pool[i].addr));
		pool[i].addr[0] = i == 2 ? 0x80 : 0;
		pool[i].len = i ? 1 : 0;
	}
	for (unsigned step = 0; step < 3000; step++) {
		struct tl_route_entry c = pool[next_rand() % RTE_DIM(pool)];
		size_t at = model_find(m, &c);
		unsigned what = (unsigned)(next_rand() % 4);

		c.peer_id = (uint32_t)(next_rand() % 1000);
		if (what < 3) {                             /* add, or move to another peer */
			if (tl_table_set(t, family, c.addr, c.len, c.peer_id) != 0) {
				bad++;
				break;
			}
			if (at == m->n)
				m->e[m->n++] = c;
			else
				m->e[at].peer_id = c.peer_id;
		} else if (at < m->n) {                     /* remove */
			bad += tl_table_del(t, family, c.addr, c.len) != 0;
			m->e[at] = m->e[--m->n];
		} else {                                    /* remove what is not there */
			bad += tl_table_del(t, family, c.addr, c.len) != -ENOENT;
		}
		steps++;
		if (step % 10 == 0)
			bad += compare(t, m, family, 200);
	}
	bad += compare(t, m, family, 4000);
	bad += t->n[family == AF_INET6] != m->n;
	tl_table_free(t);

	/* A copy with room for 8 prefixes (IPv4: RIB nodes for at least 8): one more is refused
	 * with -ENOSPC and changes nothing. */
	size.routes4 = size.rules6 = 8;
	t = tl_table_new(&size, gen + 1);
	m->n = 0;
	for (size_t i = 0; t && i < RTE_DIM(pool) && refused == 0; i++) {
		struct tl_route_entry c = pool[i];

		c.len = (uint8_t)(alen * 8);                /* distinct hosts: one prefix each */
		if (model_find(m, &c) < m->n)
			continue;
		if (tl_table_set(t, family, c.addr, c.len, c.peer_id) == -ENOSPC)
			refused++;
		else
			m->e[m->n++] = c;
	}
	bad += !t || refused != 1 || m->n < 8 || compare(t, m, family, 2000);
	tl_table_free(t);
	if (bad) {
		failed++;
		printf("not ok incremental %s: %u disagreements over %u changes (refused %u at %zu)\n",
		       family == AF_INET ? "v4" : "v6", bad, steps, refused, m->n);
	} else {
		passed++;
	}
out:
	free(m);
}

int main(int argc, char **argv)
{
	char prefix[64], runtime_dir[4096];
	char *eal[] = { argv[0], "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--file-prefix", prefix,
			"--log-level", "lib.eal:error", NULL };
	uint64_t gen = 0;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "tl_unit_%d", (int)getpid());
	if (rte_eal_init(10, eal) < 0) {
		printf("EAL init failed\n0 passed, 1 failed\n");
		return 1;
	}
	tl_runtime_dir_save(runtime_dir, sizeof(runtime_dir));
	for (unsigned round = 0; round < 40; round++) {
		size_t n = 1 + next_rand() % (round < 20 ? 16 : 400);

		check_set(AF_INET, n, 4000, gen++);
		check_set(AF_INET6, n, 4000, gen++);
	}
	for (unsigned round = 0; round < 4; round++) {
		check_incremental(AF_INET, gen);
		gen += 2;
		check_incremental(AF_INET6, gen);
		gen += 2;
	}
	rte_eal_cleanup();
	tl_runtime_dir_remove(runtime_dir);
	printf("%u passed, %u failed\n", passed, failed);
	return failed != 0;
}
