/* Control API requests validated against the spec: a request document parsed into typed
 * values. Every refusal names the value at fault by its path in the request
 * (args.aqm.flows, args.allowed_ips[1]) and says why. */
#include "api/request.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/yamlw.h"
#include "common/ydoc.h"

#define SHOW "%.64s"          /* how much of a bad value a message echoes */

/* ---- request validation ------------------------------------------------------------------ */

struct rparse {
	yaml_document_t *doc;
	struct tl_api_error *err;
};

static int __attribute__((format(printf, 3, 4))) rfail(struct rparse *r, const char *path, const char *fmt, ...)
{
	va_list ap;

	snprintf(r->err->field, sizeof(r->err->field), "%s", path);
	va_start(ap, fmt);
	vsnprintf(r->err->message, sizeof(r->err->message), fmt, ap);
	va_end(ap);
	return -1;
}

static void rpath(char *out, size_t len, const char *parent, const char *key)
{
	snprintf(out, len, "%s%s%.64s", parent, parent[0] ? "." : "", key);
}

/* A scalar's text, refused if it holds a NUL (possible through "\0" escapes). */
static const char *rscalar(struct rparse *r, const char *path, yaml_node_t *n, const char *want)
{
	if (!n || n->type != YAML_SCALAR_NODE) {
		rfail(r, path, "wrong type: expected %s, got %s", want, tl_ydoc_kind(n));
		return NULL;
	}
	if (memchr(n->data.scalar.value, 0, n->data.scalar.length)) {
		rfail(r, path, "contains a NUL character");
		return NULL;
	}
	return (const char *)n->data.scalar.value;
}

static bool rplain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

static int rstring(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_api_field *f, struct tl_api_value *v)
{
	const char *s = rscalar(r, path, n, "a string");

	if (!s)
		return -1;
	if (rplain(n) && tl_yaml_plain_kind(s) == TL_YK_NULL)
		return rfail(r, path, "wrong type: expected a string, got null");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return rfail(r, path, "contains a control character");
	if (f->max_len && strlen(s) > f->max_len)
		return rfail(r, path, "longer than %zu characters", f->max_len);
	v->s = strdup(s);
	return v->s ? 0 : rfail(r, path, "out of memory");
}

static int rinteger(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_api_field *f, struct tl_api_value *v)
{
	const char *s = rscalar(r, path, n, "an integer");
	char *end;

	if (!s)
		return -1;
	if (!rplain(n) || tl_yaml_plain_kind(s) != TL_YK_INT)
		return rfail(r, path, "wrong type: '" SHOW "' is not an integer", s);
	errno = 0;
	v->i = strtoll(s, &end, 10);
	if (errno == ERANGE || *end)
		return rfail(r, path, "'" SHOW "' is out of range %" PRId64 "..%" PRId64, s,
			     f->min ? *f->min : INT64_MIN, f->max ? *f->max : INT64_MAX);
	if ((f->min && v->i < *f->min) || (f->max && v->i > *f->max))
		return rfail(r, path, "%" PRId64 " is out of range %" PRId64 "..%" PRId64, v->i,
			     f->min ? *f->min : INT64_MIN, f->max ? *f->max : INT64_MAX);
	return 0;
}

static int rboolean(struct rparse *r, const char *path, yaml_node_t *n, struct tl_api_value *v)
{
	const char *s = rscalar(r, path, n, "a boolean");

	if (!s)
		return -1;
	if (!rplain(n) || (strcmp(s, "true") && strcmp(s, "false")))
		return rfail(r, path, "wrong type: '" SHOW "' is not a boolean (true or false)", s);
	v->b = !strcmp(s, "true");
	return 0;
}

static int rkey(struct rparse *r, const char *path, yaml_node_t *n, struct tl_api_value *v)
{
	const char *s = rscalar(r, path, n, "a key");

	if (!s)
		return -1;
	if (tl_key_from_base64(v->key, s) < 0)   /* never echoed: it may be a secret */
		return rfail(r, path, "not a 32-byte key in base64 (44 characters, as wg genkey prints)");
	return 0;
}

static int rendpoint(struct rparse *r, const char *path, yaml_node_t *n, struct tl_api_value *v)
{
	const char *s = rscalar(r, path, n, "an endpoint");
	const char *why;

	if (!s)
		return -1;
	why = tl_sockaddr_error(s);
	if (why || tl_sockaddr_parse(&v->ep, s) < 0)
		return rfail(r, path, "'" SHOW "' %s", s, why ? why : "is not an endpoint");
	return 0;
}

static int rprefixes(struct rparse *r, const char *path, yaml_node_t *n, struct tl_api_value *v)
{
	char sub[200];
	size_t cnt;

	if (!n || n->type != YAML_SEQUENCE_NODE)
		return rfail(r, path, "wrong type: expected a sequence of prefixes, got %s", tl_ydoc_kind(n));
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	v->prefixes = calloc(cnt ? cnt : 1, sizeof(*v->prefixes));
	if (!v->prefixes)
		return rfail(r, path, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		struct tl_prefix *p = &v->prefixes[i];
		const char *s, *why;

		snprintf(sub, sizeof(sub), "%.150s[%zu]", path, i);
		s = rscalar(r, sub, tl_ydoc_node(r->doc, n->data.sequence.items.start[i]), "a prefix");
		if (!s)
			return -1;
		why = tl_prefix_error(s);
		if (why || tl_prefix_parse(p, s) < 0)
			return rfail(r, sub, "'" SHOW "' %s", s, why ? why : "is not a prefix");
		tl_prefix_clear_host_bits(p);
		for (size_t j = 0; j < i; j++)
			if (tl_prefix_eq(&v->prefixes[j], p))
				return rfail(r, sub, "'" SHOW "' is the same prefix as [%zu]", s, j);
		v->n_prefixes++;
	}
	return 0;
}

static int renum(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_api_field *f, struct tl_api_value *v)
{
	const char *s = rscalar(r, path, n, "one of the values");
	char list[256] = "";
	size_t off = 0;

	if (!s)
		return -1;
	for (size_t i = 0; i < f->n_values; i++)
		if (!strcmp(s, f->values[i])) {
			v->s = strdup(s);
			return v->s ? 0 : rfail(r, path, "out of memory");
		}
	for (size_t i = 0; i < f->n_values && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", f->values[i]);
	return rfail(r, path, "'" SHOW "' is not one of: %s", s, list);
}

static int rmap(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_api_field *fields, size_t nf,
		struct tl_api_value *v);

static int rvalue(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_api_field *f, struct tl_api_value *v)
{
	v->present = true;
	switch (f->type) {
	case TL_API_STRING: return rstring(r, path, n, f, v);
	case TL_API_INTEGER: return rinteger(r, path, n, f, v);
	case TL_API_BOOLEAN: return rboolean(r, path, n, v);
	case TL_API_KEY: return rkey(r, path, n, v);
	case TL_API_ENDPOINT: return rendpoint(r, path, n, v);
	case TL_API_PREFIX_LIST: return rprefixes(r, path, n, v);
	case TL_API_ENUM: return renum(r, path, n, f, v);
	case TL_API_MAP: return rmap(r, path, n, f->fields, f->n_fields, v);
	default: return rfail(r, path, "type %s cannot be an argument", tl_api_type_names[f->type]);
	}
}

static void rfield_names(const struct tl_api_field *fields, size_t nf, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < nf && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", fields[i].name);
}

/* A map value; absent (n NULL) or an empty plain scalar (`args:` with nothing after it) is an
 * empty map, whose required fields are then missing. */
static int rmap(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_api_field *fields, size_t nf,
		struct tl_api_value *v)
{
	char sub[200], names[256];

	v->sub = calloc(nf ? nf : 1, sizeof(*v->sub));
	if (!v->sub)
		return rfail(r, path, "out of memory");
	v->n_sub = nf;
	for (size_t i = 0; i < nf; i++)
		v->sub[i].f = &fields[i];
	v->present = true;
	if (n && n->type == YAML_SCALAR_NODE && rplain(n) && n->data.scalar.length == 0)
		n = NULL;
	else if (n && n->type != YAML_MAPPING_NODE)
		return rfail(r, path, "wrong type: expected a mapping, got %s", tl_ydoc_kind(n));
	for (yaml_node_pair_t *p = n ? n->data.mapping.pairs.start : NULL; n && p < n->data.mapping.pairs.top; p++) {
		const char *k = rscalar(r, path, tl_ydoc_node(r->doc, p->key), "a field name");
		const struct tl_api_field *f;
		struct tl_api_value *c;

		if (!k)
			return -1;
		rpath(sub, sizeof(sub), path, k);
		f = tl_api_field_find(fields, nf, k);
		if (!f) {
			rfield_names(fields, nf, names, sizeof(names));
			return nf ? rfail(r, sub, "unknown field (expected one of: %s)", names)
				  : rfail(r, sub, "unknown field (this operation takes no arguments)");
		}
		c = &v->sub[f - fields];
		if (c->present)
			return rfail(r, sub, "given twice");
		if (rvalue(r, sub, tl_ydoc_node(r->doc, p->value), f, c) < 0)
			return -1;
	}
	for (size_t i = 0; i < nf; i++)
		if (fields[i].required && !v->sub[i].present) {
			rpath(sub, sizeof(sub), path, fields[i].name);
			return rfail(r, sub, "missing (required)");
		}
	return 0;
}

static void rops(const struct tl_api_spec *spec, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < spec->n_ops && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", spec->ops[i].name);
}

static int rop(struct rparse *r, const struct tl_api_spec *spec, yaml_node_t *n, struct tl_api_request *req)
{
	const char *name = rscalar(r, "op", n, "an operation name");
	char ops[256];

	if (!name)
		return -1;
	req->op = tl_api_spec_op(spec, name);
	if (req->op)
		return 0;
	rops(spec, ops, sizeof(ops));
	return rfail(r, "op", "unknown operation '" SHOW "' (one of: %s)", name, ops);
}

static int rrequest(struct rparse *r, const struct tl_api_spec *spec, struct tl_api_request *req)
{
	yaml_node_t *root = yaml_document_get_root_node(r->doc), *op = NULL, *args = NULL;

	if (root->type != YAML_MAPPING_NODE)
		return rfail(r, "(document)", "a request is a mapping with op and args, not %s", tl_ydoc_kind(root));
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		const char *k = rscalar(r, "(document)", tl_ydoc_node(r->doc, p->key), "a field name");
		yaml_node_t **slot;

		if (!k)
			return -1;
		slot = !strcmp(k, "op") ? &op : !strcmp(k, "args") ? &args : NULL;
		if (!slot)
			return rfail(r, k[0] ? k : "(document)", "unknown field (a request has op and args)");
		if (*slot)
			return rfail(r, k, "given twice");
		*slot = tl_ydoc_node(r->doc, p->value);
	}
	if (!op)
		return rfail(r, "op", "missing (required)");
	if (rop(r, spec, op, req) < 0)
		return -1;
	return rmap(r, "args", args, req->op->args, req->op->n_args, &req->args);
}

int tl_api_request_parse(const struct tl_api_spec *spec, const char *text, size_t len, struct tl_api_request *req,
		  struct tl_api_error *err)
{
	yaml_document_t doc;
	struct rparse r = { .doc = &doc, .err = err };
	int rc;

	memset(req, 0, sizeof(*req));
	memset(err, 0, sizeof(*err));
	if (tl_ydoc_load(&doc, text, len, err->message, sizeof(err->message)) < 0) {
		snprintf(err->field, sizeof(err->field), "(document)");
		return -1;
	}
	rc = rrequest(&r, spec, req);
	tl_ydoc_delete(&doc);
	if (rc < 0)
		tl_api_request_free(req);
	return rc;
}

static void cval_free(struct tl_api_value *v)
{
	for (size_t i = 0; i < v->n_sub; i++)
		cval_free(&v->sub[i]);
	free(v->sub);
	free(v->s);
	free(v->prefixes);
	explicit_bzero(v->key, sizeof(v->key));
	v->sub = NULL;
	v->s = NULL;
	v->prefixes = NULL;
	v->n_sub = v->n_prefixes = 0;
}

void tl_api_request_free(struct tl_api_request *req)
{
	cval_free(&req->args);
	memset(req, 0, sizeof(*req));
}

const struct tl_api_value *tl_api_value_get(const struct tl_api_value *map, const char *name)
{
	for (size_t i = 0; i < map->n_sub; i++)
		if (!strcmp(map->sub[i].f->name, name))
			return &map->sub[i];
	return NULL;
}

const struct tl_api_value *tl_api_value_has(const struct tl_api_value *map, const char *name)
{
	const struct tl_api_value *v = tl_api_value_get(map, name);

	return v && v->present ? v : NULL;
}

/* ---- what the operations share --------------------------------------------------------------- */

int tl_api_fail(struct tl_api_error *e, const char *field, const char *fmt, ...)
{
	va_list ap;

	snprintf(e->field, sizeof(e->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* "<field>: <rule>" from the qparams checks -> error on <prefix>.<field>. */
int tl_api_fail_qparams(struct tl_api_error *e, const char *prefix, const char *why)
{
	const char *colon = strstr(why, ": ");
	char field[sizeof(e->field)];

	if (!colon)
		return tl_api_fail(e, prefix, "%s", why);
	snprintf(field, sizeof(field), "%s.%.*s", prefix, (int)(colon - why), why);
	return tl_api_fail(e, field, "%s", colon + 2);
}

static void merge_u32(const struct tl_api_value *map, const char *name, uint32_t *out)
{
	const struct tl_api_value *v = tl_api_value_has(map, name);

	if (v)
		*out = (uint32_t)v->i;   /* the spec bounds it */
}

void tl_api_merge_aqm(const struct tl_api_value *m, struct tl_aqm_params *p)
{
	const struct tl_api_value *v;

	merge_u32(m, "target_us", &p->target_us);
	merge_u32(m, "interval_us", &p->interval_us);
	merge_u32(m, "quantum", &p->quantum);
	merge_u32(m, "flows", &p->flows);
	merge_u32(m, "limit", &p->limit);
	merge_u32(m, "rtt_us", &p->rtt_us);
	merge_u32(m, "l4s_us", &p->l4s_us);
	merge_u32(m, "flow_rtt_pct", &p->flow_rtt_pct);
	merge_u32(m, "quantum_fast", &p->quantum_fast);
	if ((v = tl_api_value_has(m, "memory_limit")))
		p->memory_limit = (uint64_t)v->i;
	if ((v = tl_api_value_has(m, "ecn")))
		p->ecn = v->b;
}

void tl_api_merge_shaper(const struct tl_api_value *m, struct tl_shaper_params *p)
{
	const struct tl_api_value *v;

	if ((v = tl_api_value_has(m, "rate_bps")))
		p->rate_bps = (uint64_t)v->i;
	merge_u32(m, "burst_bytes", &p->burst_bytes);
}

/* The peer fields of a request (peer_add, peer_update) as one peer operation. */
void tl_api_peer_op(const struct tl_api_value *args, struct tl_peer_op *op)
{
	const struct tl_api_value *v;

	memset(op, 0, sizeof(*op));
	memcpy(op->pub, tl_api_value_has(args, "public_key")->key, TL_KEY_LEN);
	if ((v = tl_api_value_has(args, "preshared_key"))) {
		op->has_psk = true;
		memcpy(op->psk, v->key, TL_KEY_LEN);
	}
	if ((v = tl_api_value_has(args, "endpoint"))) {
		op->has_endpoint = true;
		op->endpoint = v->ep;
	}
	if ((v = tl_api_value_has(args, "persistent_keepalive"))) {
		op->has_keepalive = true;
		op->keepalive = (uint16_t)v->i;
	}
	if ((v = tl_api_value_has(args, "name"))) {
		op->has_name = true;
		snprintf(op->name, sizeof(op->name), "%s", v->s);
	}
	if ((v = tl_api_value_has(args, "allowed_ips"))) {
		op->replace_aips = true;
		op->aips = v->prefixes;
		op->n_aips = v->n_prefixes;
	}
}

size_t tl_api_request_end(const char *p, size_t len, size_t from)
{
	for (size_t i = from > 4 ? from - 4 : 0; i + 3 <= len; i++) {
		size_t j = i + 3;

		if ((i && p[i - 1] != '\n') || memcmp(p + i, "...", 3))
			continue;
		if (j < len && p[j] == '\r')
			j++;
		if (j < len && p[j] == '\n')
			return j + 1;
	}
	return 0;
}

bool tl_api_blank(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}
