/* UAPI set=1, first half: the body of the request parsed into a list of peer operations,
 * and the checks against what the device holds, without touching the device (the fuzz
 * harness drives both). A bad line or a failed check means nothing is applied; applying is
 * uapi_set.c. */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/primitives.h"
#include "api/uapi_parse.h"

/* ---- parsing: one handler per key, each returns 0 or an errno value ----------------------- */

static int parse_u16(const char *s, uint16_t *out)
{
	unsigned long v = 0;
	size_t n = 0;

	for (; s[n]; n++) {
		if (n >= 5 || s[n] < '0' || s[n] > '9')
			return EINVAL;
		v = v * 10 + (unsigned long)(s[n] - '0');
	}
	if (!n || v > 65535)
		return EINVAL;
	*out = (uint16_t)v;
	return 0;
}

static int parse_true(const char *s, bool *flag)
{
	if (strcmp(s, "true"))
		return EINVAL;
	*flag = true;
	return 0;
}

static struct tl_peer_op *cur(struct tl_uapi_set_req *r)
{
	return &r->peers[r->n_peers - 1];
}

static int dev_private_key(struct tl_uapi_set_req *r, const char *v)
{
	r->has_priv = true;
	return tl_key_from_hex(r->priv, v) ? EINVAL : 0;
}

static int dev_listen_port(struct tl_uapi_set_req *r, const char *v)
{
	r->has_port = true;
	return parse_u16(v, &r->port);
}

/* No socket of ours is routed by marks: only 0 (none) is honest. */
static int dev_fwmark(struct tl_uapi_set_req *r, const char *v)
{
	(void)r;
	for (const char *p = v; *p; p++)
		if (*p < '0' || *p > '9')
			return EINVAL;
	return *v && strspn(v, "0") == strlen(v) ? 0 : EOPNOTSUPP;
}

static int dev_replace_peers(struct tl_uapi_set_req *r, const char *v)
{
	return parse_true(v, &r->replace_peers);
}

/* ---- memory: every block wiped before it goes back (a PSK or a key may be in it) ------------ */

static void *default_alloc(size_t size)
{
	return calloc(1, size);
}

static void default_release(void *p, size_t size)
{
	(void)size;
	free(p);
}

static struct tl_uapi_alloc mem = { default_alloc, default_release };

void tl_uapi_set_alloc(const struct tl_uapi_alloc *a)
{
	mem = a ? *a : (struct tl_uapi_alloc){ default_alloc, default_release };
}

static void mem_free(void *p, size_t size)
{
	if (!p)
		return;
	tl_wipe(p, size);
	mem.release(p, size);
}

/* Room for one more element in a doubling array: the array (moved or not), or NULL when
 * out of memory (the old one is then untouched). A move is allocate, copy, wipe, free: the
 * old block never goes back with what it held (realloc would hand it back as it is). */
static void *grow(void *arr, size_t *cap, size_t n, size_t elt)
{
	size_t ncap = *cap ? 2 * *cap : 4;
	void *a;

	if (n < *cap)
		return arr;
	if (ncap > SIZE_MAX / elt || !(a = mem.alloc(ncap * elt)))
		return NULL;
	if (n)
		memcpy(a, arr, n * elt);
	mem_free(arr, *cap * elt);
	*cap = ncap;
	return a;
}

/* ---- the distinct public keys of a request ------------------------------------------------ */

#define KEY_BLOCK 4096u

struct key_entry {
	uint8_t pub[TL_KEY_LEN];     /* first: the tree compares entries and bare keys alike */
	bool counted;                /* tl_uapi_set_check: already one new peer */
};

struct tl_uapi_key_block {
	struct tl_uapi_key_block *next;
	size_t n;
	struct key_entry e[KEY_BLOCK];
};

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, TL_KEY_LEN);
}

static struct key_entry *key_find(const struct tl_uapi_set_req *r, const uint8_t pub[TL_KEY_LEN])
{
	struct key_entry **e = r->keys ? tfind(pub, &r->keys, key_cmp) : NULL;

	return e ? *e : NULL;
}

/* pub among the request's keys: 0, ENOSPC when it would be one too many, ENOMEM. */
static int key_add(struct tl_uapi_set_req *r, const uint8_t pub[TL_KEY_LEN])
{
	size_t max = r->max_keys ? r->max_keys : TL_UAPI_MAX_KEYS;
	struct tl_uapi_key_block *b = r->key_blocks;
	struct key_entry *e;

	if (key_find(r, pub))
		return 0;
	if (r->n_keys >= max)
		return ENOSPC;
	if (!b || b->n == KEY_BLOCK) {
		b = mem.alloc(sizeof(*b));
		if (!b)
			return ENOMEM;
		b->next = r->key_blocks;
		r->key_blocks = b;
	}
	e = &b->e[b->n];
	memcpy(e->pub, pub, TL_KEY_LEN);
	if (!tsearch(e, &r->keys, key_cmp))
		return ENOMEM;
	b->n++;
	r->n_keys++;
	return 0;
}

static int peer_begin(struct tl_uapi_set_req *r, const char *v)
{
	size_t max = r->max_peer_lines ? r->max_peer_lines : TL_UAPI_MAX_PEER_LINES;
	uint8_t pub[TL_KEY_LEN];
	struct tl_peer_op *peers;
	int err;

	if (r->n_peers >= max)
		return E2BIG;
	if (tl_key_from_hex(pub, v))
		return EINVAL;
	err = key_add(r, pub);
	if (err)
		return err;
	peers = grow(r->peers, &r->cap_peers, r->n_peers, sizeof(*peers));
	if (!peers)
		return ENOMEM;
	r->peers = peers;
	memset(&r->peers[r->n_peers], 0, sizeof(struct tl_peer_op));
	memcpy(r->peers[r->n_peers++].pub, pub, TL_KEY_LEN);
	return 0;
}

static int peer_remove(struct tl_uapi_set_req *r, const char *v)
{
	return parse_true(v, &cur(r)->remove);
}

static int peer_update_only(struct tl_uapi_set_req *r, const char *v)
{
	return parse_true(v, &cur(r)->update_only);
}

static int peer_psk(struct tl_uapi_set_req *r, const char *v)
{
	cur(r)->has_psk = true;
	return tl_key_from_hex(cur(r)->psk, v) ? EINVAL : 0;
}

static int peer_endpoint(struct tl_uapi_set_req *r, const char *v)
{
	cur(r)->has_endpoint = true;
	return tl_sockaddr_parse(&cur(r)->endpoint, v) ? EINVAL : 0;
}

static int peer_keepalive(struct tl_uapi_set_req *r, const char *v)
{
	cur(r)->has_keepalive = true;
	return parse_u16(v, &cur(r)->keepalive);
}

/* Applied in order: allowed IPs listed before this line are dropped as well. */
static int peer_replace_aips(struct tl_uapi_set_req *r, const char *v)
{
	cur(r)->n_aips = 0;
	return parse_true(v, &cur(r)->replace_aips);
}

static int peer_allowed_ip(struct tl_uapi_set_req *r, const char *v)
{
	struct tl_peer_op *p = cur(r);
	struct tl_prefix pf, *aips;

	if (r->n_aips >= (r->max_aips ? r->max_aips : TL_UAPI_MAX_AIPS))
		return E2BIG;
	if (tl_prefix_parse(&pf, v) || !strchr(v, '/'))
		return EINVAL;
	tl_prefix_clear_host_bits(&pf);
	aips = grow(p->aips, &p->cap_aips, p->n_aips, sizeof(*aips));
	if (!aips)
		return ENOMEM;
	p->aips = aips;
	p->aips[p->n_aips++] = pf;
	r->n_aips++;
	return 0;
}

static int peer_protocol_version(struct tl_uapi_set_req *r, const char *v)
{
	(void)r;
	return strcmp(v, "1") ? EINVAL : 0;
}

struct set_key {
	const char *name;
	int (*parse)(struct tl_uapi_set_req *r, const char *value);
};

static const struct set_key device_keys[] = {
	{ "private_key", dev_private_key },
	{ "listen_port", dev_listen_port },
	{ "fwmark", dev_fwmark },
	{ "replace_peers", dev_replace_peers },
	{ "public_key", peer_begin },
	{ NULL, NULL },
};

static const struct set_key peer_keys[] = {
	{ "public_key", peer_begin },
	{ "remove", peer_remove },
	{ "update_only", peer_update_only },
	{ "preshared_key", peer_psk },
	{ "endpoint", peer_endpoint },
	{ "persistent_keepalive_interval", peer_keepalive },
	{ "replace_allowed_ips", peer_replace_aips },
	{ "allowed_ip", peer_allowed_ip },
	{ "protocol_version", peer_protocol_version },
	{ NULL, NULL },
};

int tl_uapi_set_parse_line(struct tl_uapi_set_req *r, char *line)
{
	const struct set_key *k = r->n_peers ? peer_keys : device_keys;
	char *eq = strchr(line, '=');

	if (!eq)
		return EINVAL;
	*eq = '\0';
	for (; k->name; k++)
		if (!strcmp(k->name, line))
			return k->parse(r, eq + 1);
	return EINVAL;
}

int tl_uapi_set_parse(struct tl_uapi_set_req *r, char *body)
{
	char *line, *next;
	int err = 0;

	for (line = body; !err && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		err = tl_uapi_set_parse_line(r, line);
	}
	return err;
}

static void key_node_free(void *node)
{
	(void)node;                  /* the entries live in the blocks */
}

void tl_uapi_set_req_free(struct tl_uapi_set_req *r)
{
	struct tl_uapi_key_block *b, *next;

	for (size_t i = 0; i < r->n_peers; i++)
		mem_free(r->peers[i].aips, r->peers[i].cap_aips * sizeof(*r->peers[i].aips));
	mem_free(r->peers, r->cap_peers * sizeof(*r->peers));
	if (r->keys)
		tdestroy(r->keys, key_node_free);
	for (b = r->key_blocks; b; b = next) {
		next = b->next;
		mem_free(b, sizeof(*b));
	}
	tl_wipe(r, sizeof(*r));
}

/* ---- checks against the device ------------------------------------------------------------- */

int tl_uapi_set_check(const struct tl_uapi_set_req *r, const struct tl_uapi_set_view *v)
{
	size_t peers = r->replace_peers ? 0 : v->n_peers;

	/* Another port is applied by the device change (ctrl/devchange.c); 0 (a random port) is not supported. */
	if (r->has_port && r->port == 0)
		return EINVAL;
	if (r->has_priv && tl_is_zero(r->priv, TL_KEY_LEN))
		return EINVAL;
	for (struct tl_uapi_key_block *b = r->key_blocks; b; b = b->next)
		for (size_t i = 0; i < b->n; i++)
			b->e[i].counted = false;
	for (size_t i = 0; i < r->n_peers; i++) {
		const struct tl_peer_op *op = &r->peers[i];
		struct key_entry *e;

		if (op->remove || op->update_only || (!r->replace_peers && v->has_peer(v->ctx, op->pub)))
			continue;
		e = key_find(r, op->pub);       /* one new peer, however many operations name it */
		if (e && e->counted)
			continue;
		if (e)
			e->counted = true;
		peers++;
	}
	return peers > v->max_peers ? ENOSPC : 0;
}

size_t tl_uapi_line_end(const char *in, size_t len, size_t from)
{
	const char *nl = memchr(in + from, '\n', len - from);

	if (nl)
		return (size_t)(nl - in) + 1;
	return len >= TL_UAPI_LINE_MAX ? len : 0;
}
