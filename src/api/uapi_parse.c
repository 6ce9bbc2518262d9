/* UAPI set=1, first half: the body of the request parsed into a list of peer operations,
 * and the checks against what the device holds, without touching the device (the fuzz
 * harness drives both). A bad line or a failed check means nothing is applied; applying is
 * uapi_set.c. */
#include <errno.h>
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

/* Room for one more element in a doubling array: the array (moved or not), or NULL when
 * out of memory (the old one is then untouched). */
static void *grow(void *arr, size_t *cap, size_t n, size_t elt)
{
	size_t ncap = *cap ? 2 * *cap : 4;
	void *a;

	if (n < *cap)
		return arr;
	a = realloc(arr, ncap * elt);
	if (a)
		*cap = ncap;
	return a;
}

static int peer_begin(struct tl_uapi_set_req *r, const char *v)
{
	struct tl_peer_op *peers = grow(r->peers, &r->cap_peers, r->n_peers, sizeof(*peers));

	if (!peers)
		return ENOMEM;
	r->peers = peers;
	memset(&r->peers[r->n_peers++], 0, sizeof(struct tl_peer_op));
	return tl_key_from_hex(cur(r)->pub, v) ? EINVAL : 0;
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

	if (tl_prefix_parse(&pf, v) || !strchr(v, '/'))
		return EINVAL;
	tl_prefix_clear_host_bits(&pf);
	aips = grow(p->aips, &p->cap_aips, p->n_aips, sizeof(*aips));
	if (!aips)
		return ENOMEM;
	p->aips = aips;
	p->aips[p->n_aips++] = pf;
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

void tl_uapi_set_req_free(struct tl_uapi_set_req *r)
{
	for (size_t i = 0; i < r->n_peers; i++)
		free(r->peers[i].aips);
	if (r->peers)
		tl_wipe(r->peers, r->cap_peers * sizeof(*r->peers));
	free(r->peers);
	tl_wipe(r, sizeof(*r));
}

/* ---- checks against the device ------------------------------------------------------------- */

int tl_uapi_set_check(const struct tl_uapi_set_req *r, const struct tl_uapi_set_view *v)
{
	size_t peers = r->replace_peers ? 0 : v->n_peers;

	/* Another port is applied by tl_listen_port_set; 0 (a random port) is not supported. */
	if (r->has_port && r->port == 0)
		return EINVAL;
	if (r->has_priv && tl_is_zero(r->priv, TL_KEY_LEN))
		return EINVAL;
	for (size_t i = 0; i < r->n_peers; i++)
		if (!r->peers[i].remove && !r->peers[i].update_only &&
		    (r->replace_peers || !v->has_peer(v->ctx, r->peers[i].pub)))
			peers++;
	return peers > v->max_peers ? ENOSPC : 0;
}

size_t tl_uapi_line_end(const char *in, size_t len, size_t from)
{
	const char *nl = memchr(in + from, '\n', len - from);

	if (nl)
		return (size_t)(nl - in) + 1;
	return len >= TL_UAPI_LINE_MAX ? len : 0;
}
