/* libFuzzer harness for the WireGuard UAPI set=1 parser and its checks. The input is what a
 * client writes on the socket: it is cut into requests at each blank line as the server
 * does (a last request without its blank line is taken too), and the first line of each
 * request is dispatched as the server does. A set=1 body is parsed into peer
 * operations (tl_uapi_set_parse) and checked (tl_uapi_set_check) against two pretend
 * devices, one nearly full; no device, socket or DPDK. get=1 needs a device and is skipped.
 *
 * Oracles besides the sanitizers: errors are EINVAL, EOPNOTSUPP, ENOSPC, E2BIG or ENOMEM (parse) and
 * EOPNOTSUPP, EINVAL or ENOSPC (check); accepted allowed IPs have their host bits cleared; and an
 * accepted request, written back as set=1 text with the shared formatters, parses to the
 * very same operations (nothing lost or misread between text and binary). */
#include "crypto/primitives.h"
#include "api/uapi_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LISTEN_PORT 51820

/* A pretend device holds the peers whose key starts with an odd byte. */
static bool has_peer(void *ctx, const uint8_t pub[TL_KEY_LEN])
{
	(void)ctx;
	return pub[0] & 1;
}

static void put_key(FILE *f, const char *name, const uint8_t key[TL_KEY_LEN])
{
	char hex[65];

	tl_key_to_hex(hex, key);
	fprintf(f, "%s=%s\n", name, hex);
}

/* The request as set=1 text again (device keys first: they are refused after a peer). */
static char *write_back(const struct tl_uapi_set_req *r)
{
	char *text = NULL, buf[80];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	if (r->has_priv)
		put_key(f, "private_key", r->priv);
	if (r->has_port)
		fprintf(f, "listen_port=%u\n", (unsigned)r->port);
	if (r->replace_peers)
		fprintf(f, "replace_peers=true\n");
	for (size_t i = 0; i < r->n_peers; i++) {
		const struct tl_peer_op *op = &r->peers[i];

		put_key(f, "public_key", op->pub);
		if (op->remove)
			fprintf(f, "remove=true\n");
		if (op->update_only)
			fprintf(f, "update_only=true\n");
		if (op->has_psk)
			put_key(f, "preshared_key", op->psk);
		if (op->has_endpoint) {
			tl_sockaddr_format(buf, sizeof(buf), &op->endpoint);
			fprintf(f, "endpoint=%s\n", buf);
		}
		if (op->has_keepalive)
			fprintf(f, "persistent_keepalive_interval=%u\n", (unsigned)op->keepalive);
		if (op->replace_aips)
			fprintf(f, "replace_allowed_ips=true\n");
		for (size_t j = 0; j < op->n_aips; j++) {
			tl_prefix_format(buf, sizeof(buf), &op->aips[j]);
			fprintf(f, "allowed_ip=%s\n", buf);
		}
	}
	if (fclose(f))
		abort();
	return text;
}

static bool ip_eq(const struct tl_ip *a, const struct tl_ip *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static bool op_eq(const struct tl_peer_op *a, const struct tl_peer_op *b)
{
	if (memcmp(a->pub, b->pub, TL_KEY_LEN) || a->remove != b->remove || a->update_only != b->update_only ||
	    a->replace_aips != b->replace_aips || a->has_psk != b->has_psk || a->has_endpoint != b->has_endpoint ||
	    a->has_keepalive != b->has_keepalive || a->has_name != b->has_name || a->n_aips != b->n_aips)
		return false;
	if (a->has_psk && memcmp(a->psk, b->psk, TL_KEY_LEN))
		return false;
	if (a->has_endpoint && (!ip_eq(&a->endpoint.ip, &b->endpoint.ip) || a->endpoint.port != b->endpoint.port))
		return false;
	if (a->has_keepalive && a->keepalive != b->keepalive)
		return false;
	for (size_t i = 0; i < a->n_aips; i++)
		if (!ip_eq(&a->aips[i].ip, &b->aips[i].ip) || a->aips[i].len != b->aips[i].len)
			return false;
	return true;
}

static bool req_eq(const struct tl_uapi_set_req *a, const struct tl_uapi_set_req *b)
{
	if (a->has_priv != b->has_priv || a->has_port != b->has_port || a->replace_peers != b->replace_peers ||
	    a->n_peers != b->n_peers)
		return false;
	if ((a->has_priv && memcmp(a->priv, b->priv, TL_KEY_LEN)) || (a->has_port && a->port != b->port))
		return false;
	for (size_t i = 0; i < a->n_peers; i++)
		if (!op_eq(&a->peers[i], &b->peers[i]))
			return false;
	return true;
}

static void check_prefixes(const struct tl_uapi_set_req *r)
{
	for (size_t i = 0; i < r->n_peers; i++)
		for (size_t j = 0; j < r->peers[i].n_aips; j++) {
			struct tl_prefix p = r->peers[i].aips[j];
			unsigned max = p.ip.family == AF_INET ? 32 : 128;

			if ((p.ip.family != AF_INET && p.ip.family != AF_INET6) || p.len > max)
				abort();
			tl_prefix_clear_host_bits(&p);
			if (memcmp(p.ip.addr, r->peers[i].aips[j].ip.addr, sizeof(p.ip.addr)))
				abort();
		}
}

static void check_request(const struct tl_uapi_set_req *r)
{
	struct tl_uapi_set_view small = { .listen_port = LISTEN_PORT, .n_peers = 3, .max_peers = 4096,
					  .has_peer = has_peer };
	struct tl_uapi_set_view full = small;
	int e1, e2;

	full.n_peers = full.max_peers - 1;
	e1 = tl_uapi_set_check(r, &small);
	e2 = tl_uapi_set_check(r, &full);
	if ((e1 && e1 != EOPNOTSUPP && e1 != EINVAL && e1 != ENOSPC) ||
	    (e2 && e2 != EOPNOTSUPP && e2 != EINVAL && e2 != ENOSPC))
		abort();
	if (e1 == 0 && e2 != 0 && e2 != ENOSPC)
		abort();                   /* only the peer count differs between the two */
	if (e1 == 0 && ((r->has_port && r->port == 0) || (r->has_priv && tl_is_zero(r->priv, TL_KEY_LEN))))
		abort();
}

static void set_request(char *body)
{
	struct tl_uapi_set_req r = { 0 }, again = { 0 };
	int err = tl_uapi_set_parse(&r, body);

	if (err) {
		if (err != EINVAL && err != EOPNOTSUPP && err != ENOMEM && err != ENOSPC && err != E2BIG)
			abort();                   /* EOPNOTSUPP: an fwmark other than 0 */
		tl_uapi_set_req_free(&r);
		return;
	}
	check_prefixes(&r);
	check_request(&r);
	{
		char *text = write_back(&r);

		if (tl_uapi_set_parse(&again, text) != 0 || !req_eq(&r, &again)) {
			fprintf(stderr, "set=1 does not survive being written back:\n%s", text);
			abort();
		}
		free(text);
	}
	tl_uapi_set_req_free(&again);
	tl_uapi_set_req_free(&r);
}

/* The first line of one request (NUL-terminated, written to), as the server sees it. */
static void request(char *req)
{
	char *nl = strchr(req, '\n');

	if (nl)
		*nl = '\0';
	if (!strcmp(req, "set=1"))
		set_request(nl ? nl + 1 : req + strlen(req));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *p, *end;

	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (p = buf; p < buf + size; p = end + 2) {
		end = memmem(p, (size_t)(buf + size - p), "\n\n", 2);
		if (!end) {
			request(p);
			break;
		}
		*end = '\0';
		request(p);
	}
	free(buf);
	return 0;
}
