/* Control API spec: loading ctlapi.yaml into C structures (libyaml document API) and
 * validating request documents against it. Every refusal names the value at fault by its
 * path in the request (args.aqm.flows, args.allowed_ips[1]) and says why. */
#include "ctrl/ctlspec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX_DEPTH 8
#define SHOW "%.64s"          /* how much of a bad value a message echoes */

const char *const tl_ctype_names[TL_CT_MAX] = {
	[TL_CT_STRING] = "string",
	[TL_CT_INTEGER] = "integer",
	[TL_CT_BOOLEAN] = "boolean",
	[TL_CT_KEY] = "key",
	[TL_CT_ENDPOINT] = "endpoint",
	[TL_CT_PREFIX_LIST] = "prefix_list",
	[TL_CT_ENUM] = "enum",
	[TL_CT_MAP] = "map",
	[TL_CT_NUMBER] = "number",
	[TL_CT_LIST] = "list",
	[TL_CT_COUNTERS] = "counters",
};

/* ---- libyaml document helpers ------------------------------------------------------------ */

static yaml_node_t *ynode(yaml_document_t *d, int id)
{
	return yaml_document_get_node(d, id);
}

static const char *yscalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *ykind(const yaml_node_t *n)
{
	if (!n)
		return "nothing";
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a sequence";
	case YAML_SCALAR_NODE: return "a scalar";
	default: return "nothing";
	}
}

/* Wipes every scalar (requests may carry preshared keys) and frees the document. */
static void ydoc_delete(yaml_document_t *d)
{
	for (yaml_node_t *n = d->nodes.start; n && n < d->nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
			explicit_bzero(n->data.scalar.value, n->data.scalar.length);
	yaml_document_delete(d);
}

static void yparse_error(const yaml_parser_t *p, char *out, size_t len)
{
	const char *problem = p->problem ? p->problem : "cannot parse";

	if (p->error == YAML_MEMORY_ERROR)
		snprintf(out, len, "out of memory");
	else if (p->context)
		snprintf(out, len, "invalid YAML: %s at line %zu column %zu (%s at line %zu)", problem,
			 p->problem_mark.line + 1, p->problem_mark.column + 1, p->context,
			 p->context_mark.line + 1);
	else
		snprintf(out, len, "invalid YAML: %s at line %zu column %zu", problem, p->problem_mark.line + 1,
			 p->problem_mark.column + 1);
}

/* Loads exactly one document from text; 0, or -1 with a message. */
static int ydoc_load(yaml_document_t *doc, const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_document_t extra;
	int rc = -1;

	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, doc)) {
		yparse_error(&p, err, errlen);
		yaml_parser_delete(&p);
		return -1;
	}
	if (!yaml_document_get_root_node(doc)) {
		snprintf(err, errlen, "empty document");
	} else if (!yaml_parser_load(&p, &extra)) {
		yparse_error(&p, err, errlen);
	} else {
		if (yaml_document_get_root_node(&extra))
			snprintf(err, errlen, "more than one YAML document (one per request)");
		else
			rc = 0;
		ydoc_delete(&extra);
	}
	if (rc != 0)
		ydoc_delete(doc);
	yaml_parser_delete(&p);
	return rc;
}

/* ---- spec loading ------------------------------------------------------------------------ */

struct sload {
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

static int __attribute__((format(printf, 3, 4))) sfail(struct sload *s, const char *path, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(s->err, s->errlen, "control API spec: %s: %s", path, why);
	return -1;
}

static int sstr(struct sload *s, const char *path, yaml_node_t *n, char **out)
{
	const char *v = yscalar(n);

	if (!v)
		return sfail(s, path, "must be a string, not %s", ykind(n));
	*out = strdup(v);
	return *out ? 0 : sfail(s, path, "out of memory");
}

static int sint(struct sload *s, const char *path, yaml_node_t *n, int64_t *out)
{
	const char *v = yscalar(n);
	char *end;

	if (!v || !*v)
		return sfail(s, path, "must be an integer");
	errno = 0;
	*out = strtoll(v, &end, 10);
	return errno || *end ? sfail(s, path, "'%s' is not an integer", v) : 0;
}

static int stype(struct sload *s, const char *path, yaml_node_t *n, enum tl_ctype *out)
{
	const char *v = yscalar(n);

	for (int t = 0; v && t < TL_CT_MAX; t++)
		if (!strcmp(v, tl_ctype_names[t])) {
			*out = (enum tl_ctype)t;
			return 0;
		}
	return sfail(s, path, "unknown type '%s'", v ? v : "?");
}

static int sfields(struct sload *s, const char *path, yaml_node_t *n, bool arg, unsigned depth,
		   struct tl_cfield **out, size_t *n_out);

static int svalues(struct sload *s, const char *path, yaml_node_t *n, struct tl_cfield *f)
{
	size_t cnt;

	if (!n || n->type != YAML_SEQUENCE_NODE)
		return sfail(s, path, "must be a sequence of strings");
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	f->values = calloc(cnt ? cnt : 1, sizeof(*f->values));
	if (!f->values)
		return sfail(s, path, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		if (sstr(s, path, ynode(s->doc, n->data.sequence.items.start[i]), &f->values[i]) < 0)
			return -1;
		f->n_values++;
	}
	return cnt ? 0 : sfail(s, path, "an enum needs values");
}

static int sbool(struct sload *s, const char *path, yaml_node_t *n, bool *out)
{
	const char *v = yscalar(n);

	if (v && (!strcmp(v, "true") || !strcmp(v, "false"))) {
		*out = !strcmp(v, "true");
		return 0;
	}
	return sfail(s, path, "must be true or false");
}

static int sfield_attr(struct sload *s, const char *path, const char *k, yaml_node_t *v, bool arg,
		       unsigned depth, struct tl_cfield *f)
{
	int64_t x;

	if (!strcmp(k, "type"))
		return stype(s, path, v, &f->type);
	if (!strcmp(k, "help"))
		return sstr(s, path, v, &f->help);
	if (!strcmp(k, "required"))
		return sbool(s, path, v, &f->required);
	if (!strcmp(k, "min") || !strcmp(k, "max")) {
		if (sint(s, path, v, &x) < 0)
			return -1;
		if (k[1] == 'i')
			f->min = x, f->has_min = true;
		else
			f->max = x, f->has_max = true;
		return 0;
	}
	if (!strcmp(k, "max_len")) {
		if (sint(s, path, v, &x) < 0 || x < 1)
			return sfail(s, path, "must be a positive integer");
		f->max_len = (size_t)x;
		return 0;
	}
	if (!strcmp(k, "values"))
		return svalues(s, path, v, f);
	if (!strcmp(k, "fields"))
		return sfields(s, path, v, arg, depth + 1, &f->fields, &f->n_fields);
	if (!strcmp(k, "items"))
		return stype(s, path, v, &f->items);
	return sfail(s, path, "unknown attribute");
}

static int sfield_check(struct sload *s, const char *path, bool arg, const struct tl_cfield *f)
{
	if (f->type == TL_CT_MAX)
		return sfail(s, path, "type missing");
	if (arg && (f->type == TL_CT_NUMBER || f->type == TL_CT_LIST || f->type == TL_CT_COUNTERS))
		return sfail(s, path, "type %s is for replies only", tl_ctype_names[f->type]);
	if (f->type == TL_CT_ENUM && !f->n_values)
		return sfail(s, path, "an enum needs values");
	if (arg && f->type == TL_CT_MAP && !f->n_fields)
		return sfail(s, path, "an argument map needs fields");
	if (f->has_min && f->has_max && f->min > f->max)
		return sfail(s, path, "min above max");
	if (!f->help)
		return sfail(s, path, "help missing");
	return 0;
}

static int sfield(struct sload *s, const char *path, yaml_node_t *n, bool arg, unsigned depth,
		  struct tl_cfield *f)
{
	char sub[256];

	f->type = TL_CT_MAX;
	f->items = TL_CT_MAX;
	if (depth > SPEC_MAX_DEPTH)
		return sfail(s, path, "nested too deep");
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, path, "a field is a mapping with type and help");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		const char *k = yscalar(ynode(s->doc, p->key));

		if (!k)
			return sfail(s, path, "keys must be strings");
		snprintf(sub, sizeof(sub), "%.180s.%.60s", path, k);
		if (sfield_attr(s, sub, k, ynode(s->doc, p->value), arg, depth, f) < 0)
			return -1;
	}
	return sfield_check(s, path, arg, f);
}

static size_t ymap_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

static int sfields(struct sload *s, const char *path, yaml_node_t *n, bool arg, unsigned depth,
		   struct tl_cfield **out, size_t *n_out)
{
	char sub[256];
	size_t cnt;

	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, path, "must be a mapping of fields");
	cnt = ymap_len(n);
	*out = calloc(cnt ? cnt : 1, sizeof(**out));
	if (!*out)
		return sfail(s, path, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
		struct tl_cfield *f = &(*out)[i];

		snprintf(sub, sizeof(sub), "%.180s.%.60s", path, yscalar(ynode(s->doc, p->key)) ? yscalar(ynode(s->doc, p->key)) : "?");
		if (sstr(s, sub, ynode(s->doc, p->key), &f->name) < 0)
			return -1;
		(*n_out)++;
		if (sfield(s, sub, ynode(s->doc, p->value), arg, depth, f) < 0)
			return -1;
		if (tl_cfield_find(*out, i, f->name))
			return sfail(s, sub, "defined twice");
	}
	return 0;
}

static int sop(struct sload *s, const char *name, yaml_node_t *n, struct tl_cop *op)
{
	char path[256];

	snprintf(path, sizeof(path), "operations.%.60s", name);
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, path, "an operation is a mapping with help, args, reply");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		const char *k = yscalar(ynode(s->doc, p->key));
		yaml_node_t *v = ynode(s->doc, p->value);
		char sub[256];
		int rc;

		snprintf(sub, sizeof(sub), "%.180s.%.60s", path, k ? k : "?");
		if (k && !strcmp(k, "help"))
			rc = sstr(s, sub, v, &op->help);
		else if (k && !strcmp(k, "args"))
			rc = sfields(s, sub, v, true, 0, &op->args, &op->n_args);
		else if (k && !strcmp(k, "reply"))
			rc = sfields(s, sub, v, false, 0, &op->reply, &op->n_reply);
		else
			rc = sfail(s, sub, "unknown attribute");
		if (rc < 0)
			return -1;
	}
	return op->help ? 0 : sfail(s, path, "help missing");
}

static int sops(struct sload *s, yaml_node_t *n, struct tl_cspec *spec)
{
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, "operations", "must be a mapping");
	spec->ops = calloc(ymap_len(n) + 1, sizeof(*spec->ops));
	if (!spec->ops)
		return sfail(s, "operations", "out of memory");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		struct tl_cop *op = &spec->ops[spec->n_ops];

		if (sstr(s, "operations", ynode(s->doc, p->key), &op->name) < 0)
			return -1;
		spec->n_ops++;
		if (sop(s, op->name, ynode(s->doc, p->value), op) < 0)
			return -1;
	}
	return spec->n_ops ? 0 : sfail(s, "operations", "none defined");
}

static int stypes(struct sload *s, yaml_node_t *n, struct tl_cspec *spec)
{
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, "types", "must be a mapping of type name to description");
	spec->types = calloc(ymap_len(n) + 1, sizeof(*spec->types));
	if (!spec->types)
		return sfail(s, "types", "out of memory");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		struct tl_ctype_doc *t = &spec->types[spec->n_types];

		if (sstr(s, "types", ynode(s->doc, p->key), &t->name) < 0)
			return -1;
		spec->n_types++;
		if (sstr(s, "types", ynode(s->doc, p->value), &t->help) < 0)
			return -1;
	}
	return 0;
}

static int stop_key(struct sload *s, const char *k, yaml_node_t *v, struct tl_cspec *spec)
{
	int64_t version;

	if (!strcmp(k, "title"))
		return sstr(s, k, v, &spec->title);
	if (!strcmp(k, "socket"))
		return sstr(s, k, v, &spec->socket);
	if (!strcmp(k, "about"))
		return sstr(s, k, v, &spec->about);
	if (!strcmp(k, "framing"))
		return sstr(s, k, v, &spec->framing);
	if (!strcmp(k, "request"))
		return sstr(s, k, v, &spec->request);
	if (!strcmp(k, "reply"))
		return sstr(s, k, v, &spec->reply);
	if (!strcmp(k, "types"))
		return stypes(s, v, spec);
	if (!strcmp(k, "operations"))
		return sops(s, v, spec);
	if (!strcmp(k, "version")) {
		if (sint(s, k, v, &version) < 0 || version < 1)
			return sfail(s, k, "must be a positive integer");
		spec->version = (unsigned)version;
		return 0;
	}
	return sfail(s, k, "unknown key");
}

int tl_cspec_load(struct tl_cspec *spec, const char *text, size_t len, char *err, size_t errlen)
{
	yaml_document_t doc;
	struct sload s = { .doc = &doc, .err = err, .errlen = errlen };
	char why[256];
	yaml_node_t *root;
	int rc = 0;

	memset(spec, 0, sizeof(*spec));
	if (ydoc_load(&doc, text, len, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "control API spec: %s", why);
		return -1;
	}
	root = yaml_document_get_root_node(&doc);
	if (root->type != YAML_MAPPING_NODE)
		rc = sfail(&s, "(document)", "must be a mapping");
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; !rc && root->type == YAML_MAPPING_NODE &&
	     p < root->data.mapping.pairs.top; p++) {
		const char *k = yscalar(ynode(&doc, p->key));

		rc = k ? stop_key(&s, k, ynode(&doc, p->value), spec) : sfail(&s, "(document)", "keys must be strings");
	}
	if (!rc && (!spec->title || !spec->ops || !spec->framing || !spec->request || !spec->reply))
		rc = sfail(&s, "(document)", "title, framing, request, reply and operations are required");
	ydoc_delete(&doc);
	if (rc)
		tl_cspec_free(spec);
	return rc;
}

static void cfields_free(struct tl_cfield *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].help);
		for (size_t v = 0; v < f[i].n_values; v++)
			free(f[i].values[v]);
		free(f[i].values);
		cfields_free(f[i].fields, f[i].n_fields);
	}
	free(f);
}

void tl_cspec_free(struct tl_cspec *spec)
{
	free(spec->title);
	free(spec->socket);
	free(spec->about);
	free(spec->framing);
	free(spec->request);
	free(spec->reply);
	for (size_t i = 0; i < spec->n_types; i++) {
		free(spec->types[i].name);
		free(spec->types[i].help);
	}
	free(spec->types);
	for (size_t i = 0; i < spec->n_ops; i++) {
		free(spec->ops[i].name);
		free(spec->ops[i].help);
		cfields_free(spec->ops[i].args, spec->ops[i].n_args);
		cfields_free(spec->ops[i].reply, spec->ops[i].n_reply);
	}
	free(spec->ops);
	memset(spec, 0, sizeof(*spec));
}

static struct tl_cspec g_builtin;
static bool g_builtin_loaded;

static void builtin_free(void)
{
	tl_cspec_free(&g_builtin);
}

const struct tl_cspec *tl_cspec_builtin(char *err, size_t errlen)
{
	if (g_builtin_loaded)
		return &g_builtin;
	if (tl_cspec_load(&g_builtin, tl_ctlapi_spec_text, tl_ctlapi_spec_len, err, errlen) < 0)
		return NULL;
	g_builtin_loaded = true;
	atexit(builtin_free);
	return &g_builtin;
}

const struct tl_cop *tl_cspec_op(const struct tl_cspec *spec, const char *name)
{
	for (size_t i = 0; i < spec->n_ops; i++)
		if (!strcmp(spec->ops[i].name, name))
			return &spec->ops[i];
	return NULL;
}

const struct tl_cfield *tl_cfield_find(const struct tl_cfield *fields, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

/* ---- request validation ------------------------------------------------------------------ */

struct rparse {
	yaml_document_t *doc;
	struct tl_cerr *err;
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
		rfail(r, path, "wrong type: expected %s, got %s", want, ykind(n));
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

static int rstring(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_cfield *f, struct tl_cval *v)
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

static int rinteger(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_cfield *f, struct tl_cval *v)
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
			     f->has_min ? f->min : INT64_MIN, f->has_max ? f->max : INT64_MAX);
	if ((f->has_min && v->i < f->min) || (f->has_max && v->i > f->max))
		return rfail(r, path, "%" PRId64 " is out of range %" PRId64 "..%" PRId64, v->i,
			     f->has_min ? f->min : INT64_MIN, f->has_max ? f->max : INT64_MAX);
	return 0;
}

static int rboolean(struct rparse *r, const char *path, yaml_node_t *n, struct tl_cval *v)
{
	const char *s = rscalar(r, path, n, "a boolean");

	if (!s)
		return -1;
	if (!rplain(n) || (strcmp(s, "true") && strcmp(s, "false")))
		return rfail(r, path, "wrong type: '" SHOW "' is not a boolean (true or false)", s);
	v->b = !strcmp(s, "true");
	return 0;
}

static int rkey(struct rparse *r, const char *path, yaml_node_t *n, struct tl_cval *v)
{
	const char *s = rscalar(r, path, n, "a key");

	if (!s)
		return -1;
	if (tl_key_from_base64(v->key, s) < 0)   /* never echoed: it may be a secret */
		return rfail(r, path, "not a 32-byte key in base64 (44 characters, as wg genkey prints)");
	return 0;
}

static int rendpoint(struct rparse *r, const char *path, yaml_node_t *n, struct tl_cval *v)
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

static bool prefix_same(const struct tl_prefix *a, const struct tl_prefix *b)
{
	return a->len == b->len && a->ip.family == b->ip.family && !memcmp(a->ip.addr, b->ip.addr, 16);
}

static int rprefixes(struct rparse *r, const char *path, yaml_node_t *n, struct tl_cval *v)
{
	char sub[200];
	size_t cnt;

	if (!n || n->type != YAML_SEQUENCE_NODE)
		return rfail(r, path, "wrong type: expected a sequence of prefixes, got %s", ykind(n));
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	v->prefixes = calloc(cnt ? cnt : 1, sizeof(*v->prefixes));
	if (!v->prefixes)
		return rfail(r, path, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		struct tl_prefix *p = &v->prefixes[i];
		const char *s, *why;

		snprintf(sub, sizeof(sub), "%.150s[%zu]", path, i);
		s = rscalar(r, sub, ynode(r->doc, n->data.sequence.items.start[i]), "a prefix");
		if (!s)
			return -1;
		why = tl_prefix_error(s);
		if (why || tl_prefix_parse(p, s) < 0)
			return rfail(r, sub, "'" SHOW "' %s", s, why ? why : "is not a prefix");
		tl_prefix_clear_host_bits(p);
		for (size_t j = 0; j < i; j++)
			if (prefix_same(&v->prefixes[j], p))
				return rfail(r, sub, "'" SHOW "' is the same prefix as [%zu]", s, j);
		v->n_prefixes++;
	}
	return 0;
}

static int renum(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_cfield *f, struct tl_cval *v)
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

static int rmap(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_cfield *fields, size_t nf,
		struct tl_cval *v);

static int rvalue(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_cfield *f, struct tl_cval *v)
{
	v->present = true;
	switch (f->type) {
	case TL_CT_STRING: return rstring(r, path, n, f, v);
	case TL_CT_INTEGER: return rinteger(r, path, n, f, v);
	case TL_CT_BOOLEAN: return rboolean(r, path, n, v);
	case TL_CT_KEY: return rkey(r, path, n, v);
	case TL_CT_ENDPOINT: return rendpoint(r, path, n, v);
	case TL_CT_PREFIX_LIST: return rprefixes(r, path, n, v);
	case TL_CT_ENUM: return renum(r, path, n, f, v);
	case TL_CT_MAP: return rmap(r, path, n, f->fields, f->n_fields, v);
	default: return rfail(r, path, "type %s cannot be an argument", tl_ctype_names[f->type]);
	}
}

static void rfield_names(const struct tl_cfield *fields, size_t nf, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < nf && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", fields[i].name);
}

/* A map value; absent (n NULL) or an empty plain scalar (`args:` with nothing after it) is an
 * empty map, whose required fields are then missing. */
static int rmap(struct rparse *r, const char *path, yaml_node_t *n, const struct tl_cfield *fields, size_t nf,
		struct tl_cval *v)
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
		return rfail(r, path, "wrong type: expected a mapping, got %s", ykind(n));
	for (yaml_node_pair_t *p = n ? n->data.mapping.pairs.start : NULL; n && p < n->data.mapping.pairs.top; p++) {
		const char *k = rscalar(r, path, ynode(r->doc, p->key), "a field name");
		const struct tl_cfield *f;
		struct tl_cval *c;

		if (!k)
			return -1;
		rpath(sub, sizeof(sub), path, k);
		f = tl_cfield_find(fields, nf, k);
		if (!f) {
			rfield_names(fields, nf, names, sizeof(names));
			return nf ? rfail(r, sub, "unknown field (expected one of: %s)", names)
				  : rfail(r, sub, "unknown field (this operation takes no arguments)");
		}
		c = &v->sub[f - fields];
		if (c->present)
			return rfail(r, sub, "given twice");
		if (rvalue(r, sub, ynode(r->doc, p->value), f, c) < 0)
			return -1;
	}
	for (size_t i = 0; i < nf; i++)
		if (fields[i].required && !v->sub[i].present) {
			rpath(sub, sizeof(sub), path, fields[i].name);
			return rfail(r, sub, "missing (required)");
		}
	return 0;
}

static void rops(const struct tl_cspec *spec, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < spec->n_ops && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", spec->ops[i].name);
}

static int rop(struct rparse *r, const struct tl_cspec *spec, yaml_node_t *n, struct tl_creq *req)
{
	const char *name = rscalar(r, "op", n, "an operation name");
	char ops[256];

	if (!name)
		return -1;
	req->op = tl_cspec_op(spec, name);
	if (req->op)
		return 0;
	rops(spec, ops, sizeof(ops));
	return rfail(r, "op", "unknown operation '" SHOW "' (one of: %s)", name, ops);
}

static int rrequest(struct rparse *r, const struct tl_cspec *spec, struct tl_creq *req)
{
	yaml_node_t *root = yaml_document_get_root_node(r->doc), *op = NULL, *args = NULL;

	if (root->type != YAML_MAPPING_NODE)
		return rfail(r, "(document)", "a request is a mapping with op and args, not %s", ykind(root));
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		const char *k = rscalar(r, "(document)", ynode(r->doc, p->key), "a field name");
		yaml_node_t **slot;

		if (!k)
			return -1;
		slot = !strcmp(k, "op") ? &op : !strcmp(k, "args") ? &args : NULL;
		if (!slot)
			return rfail(r, k[0] ? k : "(document)", "unknown field (a request has op and args)");
		if (*slot)
			return rfail(r, k, "given twice");
		*slot = ynode(r->doc, p->value);
	}
	if (!op)
		return rfail(r, "op", "missing (required)");
	if (rop(r, spec, op, req) < 0)
		return -1;
	return rmap(r, "args", args, req->op->args, req->op->n_args, &req->args);
}

int tl_creq_parse(const struct tl_cspec *spec, const char *text, size_t len, struct tl_creq *req,
		  struct tl_cerr *err)
{
	yaml_document_t doc;
	struct rparse r = { .doc = &doc, .err = err };
	int rc;

	memset(req, 0, sizeof(*req));
	memset(err, 0, sizeof(*err));
	if (ydoc_load(&doc, text, len, err->message, sizeof(err->message)) < 0) {
		snprintf(err->field, sizeof(err->field), "(document)");
		return -1;
	}
	rc = rrequest(&r, spec, req);
	ydoc_delete(&doc);
	if (rc < 0)
		tl_creq_free(req);
	return rc;
}

static void cval_free(struct tl_cval *v)
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

void tl_creq_free(struct tl_creq *req)
{
	cval_free(&req->args);
	memset(req, 0, sizeof(*req));
}

const struct tl_cval *tl_cval_get(const struct tl_cval *map, const char *name)
{
	for (size_t i = 0; i < map->n_sub; i++)
		if (!strcmp(map->sub[i].f->name, name))
			return &map->sub[i];
	return NULL;
}

const struct tl_cval *tl_cval_has(const struct tl_cval *map, const char *name)
{
	const struct tl_cval *v = tl_cval_get(map, name);

	return v && v->present ? v : NULL;
}
