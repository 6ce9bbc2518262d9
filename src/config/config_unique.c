/* No two peers with one public key, no allowed IP of two peers (config_unique.c); the
 * message names the later one in the document and the earlier it repeats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_priv.h"

/* "peers[3] 'laptop'" for messages. */
static void tl_cfg_peer_label(char *out, size_t len, const struct tl_config *cfg, size_t i)
{
	if (cfg->peers[i].name[0])
		snprintf(out, len, "peers[%zu] '%s'", i, cfg->peers[i].name);
	else
		snprintf(out, len, "peers[%zu]", i);
}

struct tl_cfg_ref {
	const void *item;   /* key or prefix */
	size_t peer, idx;
};

static int tl_cfg_key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, TL_KEY_LEN);
}

static int tl_cfg_ref_order(const struct tl_cfg_ref *x, const struct tl_cfg_ref *y)
{
	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int tl_cfg_key_ref_cmp(const void *a, const void *b)
{
	const struct tl_cfg_ref *x = a, *y = b;
	int r = tl_cfg_key_cmp(x->item, y->item);

	return r ? r : tl_cfg_ref_order(x, y);
}

static int tl_cfg_prefix_ref_cmp(const void *a, const void *b)
{
	const struct tl_cfg_ref *x = a, *y = b;
	int r = tl_prefix_cmp(x->item, y->item);

	return r ? r : tl_cfg_ref_order(x, y);
}

/* Sorts refs (item, then document order). Returns i such that refs[i] repeats refs[i - 1],
 * the first of its group, choosing the repeat that comes first in the document; n if none. */
static size_t tl_cfg_first_dup(struct tl_cfg_ref *refs, size_t n,
			       int (*ref_cmp)(const void *, const void *),
			       int (*item_cmp)(const void *, const void *))
{
	size_t best = n;

	qsort(refs, n, sizeof(*refs), ref_cmp);
	for (size_t i = 1; i < n; i++) {
		bool repeat = !item_cmp(refs[i].item, refs[i - 1].item);
		bool second = i == 1 || item_cmp(refs[i - 1].item, refs[i - 2].item);

		if (repeat && second && (best == n || tl_cfg_ref_order(&refs[i], &refs[best]) < 0))
			best = i;
	}
	return best;
}

static int tl_cfg_dup_keys(struct tl_cfg_ctx *c, const struct tl_config *cfg)
{
	struct tl_cfg_ref *refs = calloc(cfg->n_peers, sizeof(*refs));
	char path[64], other[64];
	size_t d;

	if (!refs)
		return tl_cfg_fail(c, "peers", "out of memory");
	for (size_t i = 0; i < cfg->n_peers; i++)
		refs[i] = (struct tl_cfg_ref){ cfg->peers[i].public_key, i, 0 };
	d = tl_cfg_first_dup(refs, cfg->n_peers, tl_cfg_key_ref_cmp, tl_cfg_key_cmp);
	if (d == cfg->n_peers) {
		free(refs);
		return 0;
	}
	snprintf(path, sizeof(path), "peers[%zu].public_key", refs[d].peer);
	tl_cfg_peer_label(other, sizeof(other), cfg, refs[d - 1].peer);
	free(refs);
	return tl_cfg_fail(c, path, "same public key as %s", other);
}

static int tl_cfg_dup_allowed(struct tl_cfg_ctx *c, const struct tl_config *cfg)
{
	struct tl_cfg_ref *refs;
	char path[96], other[64], self[64], text[64];
	size_t n = 0, d;

	for (size_t i = 0; i < cfg->n_peers; i++)
		n += cfg->peers[i].n_allowed_ips;
	if (!n)
		return 0;
	refs = calloc(n, sizeof(*refs));
	if (!refs)
		return tl_cfg_fail(c, "peers", "out of memory");
	n = 0;
	for (size_t i = 0; i < cfg->n_peers; i++)
		for (size_t j = 0; j < cfg->peers[i].n_allowed_ips; j++)
			refs[n++] = (struct tl_cfg_ref){ &cfg->peers[i].allowed_ips[j], i, j };
	d = tl_cfg_first_dup(refs, n, tl_cfg_prefix_ref_cmp, tl_prefix_cmp);
	if (d == n) {
		free(refs);
		return 0;
	}
	snprintf(path, sizeof(path), "peers[%zu].allowed_ips[%zu]", refs[d].peer, refs[d].idx);
	tl_cfg_peer_label(other, sizeof(other), cfg, refs[d - 1].peer);
	tl_cfg_peer_label(self, sizeof(self), cfg, refs[d].peer);
	tl_prefix_format(text, sizeof(text), refs[d].item);
	d = refs[d - 1].idx;
	free(refs);
	return tl_cfg_fail(c, path, "%s of %s is already an allowed IP of %s (allowed_ips[%zu])",
			   text, self, other, d);
}

int tl_cfg_peers_unique(struct tl_cfg_ctx *c, const struct tl_config *cfg)
{
	if (tl_cfg_dup_keys(c, cfg) < 0)
		return -1;
	return tl_cfg_dup_allowed(c, cfg);
}
