/* The control API spec (ctlapi.yaml, embedded at build time) loaded into C structures. */
#include "api/spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ydoc.h"

#define SPEC_MAX_DEPTH 8

const char *const tl_api_type_names[TL_API_MAX] = {
	[TL_API_STRING] = "string",
	[TL_API_INTEGER] = "integer",
	[TL_API_BOOLEAN] = "boolean",
	[TL_API_KEY] = "key",
	[TL_API_ENDPOINT] = "endpoint",
	[TL_API_PREFIX_LIST] = "prefix_list",
	[TL_API_ENUM] = "enum",
	[TL_API_MAP] = "map",
	[TL_API_NUMBER] = "number",
	[TL_API_LIST] = "list",
	[TL_API_COUNTERS] = "counters",
};

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
	const char *v = tl_ydoc_scalar(n);

	if (!v)
		return sfail(s, path, "must be a string, not %s", tl_ydoc_kind(n));
	*out = strdup(v);
	return *out ? 0 : sfail(s, path, "out of memory");
}

static int sint(struct sload *s, const char *path, yaml_node_t *n, int64_t *out)
{
	const char *v = tl_ydoc_scalar(n);
	char *end;

	if (!v || !*v)
		return sfail(s, path, "must be an integer");
	errno = 0;
	*out = strtoll(v, &end, 10);
	return errno || *end ? sfail(s, path, "'%s' is not an integer", v) : 0;
}

static int stype(struct sload *s, const char *path, yaml_node_t *n, enum tl_api_type *out)
{
	const char *v = tl_ydoc_scalar(n);

	for (int t = 0; v && t < TL_API_MAX; t++)
		if (!strcmp(v, tl_api_type_names[t])) {
			*out = (enum tl_api_type)t;
			return 0;
		}
	return sfail(s, path, "unknown type '%s'", v ? v : "?");
}

static int sfields(struct sload *s, const char *path, yaml_node_t *n, bool arg, unsigned depth,
		   struct tl_api_field **out, size_t *n_out);

static int svalues(struct sload *s, const char *path, yaml_node_t *n, struct tl_api_field *f)
{
	size_t cnt;

	if (!n || n->type != YAML_SEQUENCE_NODE)
		return sfail(s, path, "must be a sequence of strings");
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	f->values = calloc(cnt ? cnt : 1, sizeof(*f->values));
	if (!f->values)
		return sfail(s, path, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		if (sstr(s, path, tl_ydoc_node(s->doc, n->data.sequence.items.start[i]), &f->values[i]) < 0)
			return -1;
		f->n_values++;
	}
	return cnt ? 0 : sfail(s, path, "an enum needs values");
}

static int sbool(struct sload *s, const char *path, yaml_node_t *n, bool *out)
{
	const char *v = tl_ydoc_scalar(n);

	if (v && (!strcmp(v, "true") || !strcmp(v, "false"))) {
		*out = !strcmp(v, "true");
		return 0;
	}
	return sfail(s, path, "must be true or false");
}

static int sfield_attr(struct sload *s, const char *path, const char *k, yaml_node_t *v, bool arg,
		       unsigned depth, struct tl_api_field *f)
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

static int sfield_check(struct sload *s, const char *path, bool arg, const struct tl_api_field *f)
{
	if (f->type == TL_API_MAX)
		return sfail(s, path, "type missing");
	if (arg && (f->type == TL_API_NUMBER || f->type == TL_API_LIST || f->type == TL_API_COUNTERS))
		return sfail(s, path, "type %s is for replies only", tl_api_type_names[f->type]);
	if (f->type == TL_API_ENUM && !f->n_values)
		return sfail(s, path, "an enum needs values");
	if (arg && f->type == TL_API_MAP && !f->n_fields)
		return sfail(s, path, "an argument map needs fields");
	if (f->has_min && f->has_max && f->min > f->max)
		return sfail(s, path, "min above max");
	if (!f->help)
		return sfail(s, path, "help missing");
	return 0;
}

static int sfield(struct sload *s, const char *path, yaml_node_t *n, bool arg, unsigned depth,
		  struct tl_api_field *f)
{
	char sub[256];

	f->type = TL_API_MAX;
	f->items = TL_API_MAX;
	if (depth > SPEC_MAX_DEPTH)
		return sfail(s, path, "nested too deep");
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, path, "a field is a mapping with type and help");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		const char *k = tl_ydoc_scalar(tl_ydoc_node(s->doc, p->key));

		if (!k)
			return sfail(s, path, "keys must be strings");
		snprintf(sub, sizeof(sub), "%.180s.%.60s", path, k);
		if (sfield_attr(s, sub, k, tl_ydoc_node(s->doc, p->value), arg, depth, f) < 0)
			return -1;
	}
	return sfield_check(s, path, arg, f);
}

static int sfields(struct sload *s, const char *path, yaml_node_t *n, bool arg, unsigned depth,
		   struct tl_api_field **out, size_t *n_out)
{
	char sub[256];
	size_t cnt;

	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, path, "must be a mapping of fields");
	cnt = tl_ydoc_len(n);
	*out = calloc(cnt ? cnt : 1, sizeof(**out));
	if (!*out)
		return sfail(s, path, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
		struct tl_api_field *f = &(*out)[i];

		snprintf(sub, sizeof(sub), "%.180s.%.60s", path, tl_ydoc_scalar(tl_ydoc_node(s->doc, p->key)) ? tl_ydoc_scalar(tl_ydoc_node(s->doc, p->key)) : "?");
		if (sstr(s, sub, tl_ydoc_node(s->doc, p->key), &f->name) < 0)
			return -1;
		(*n_out)++;
		if (sfield(s, sub, tl_ydoc_node(s->doc, p->value), arg, depth, f) < 0)
			return -1;
		if (tl_api_field_find(*out, i, f->name))
			return sfail(s, sub, "defined twice");
	}
	return 0;
}

static int sop(struct sload *s, const char *name, yaml_node_t *n, struct tl_api_op *op)
{
	char path[256];

	snprintf(path, sizeof(path), "operations.%.60s", name);
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, path, "an operation is a mapping with help, args, reply");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		const char *k = tl_ydoc_scalar(tl_ydoc_node(s->doc, p->key));
		yaml_node_t *v = tl_ydoc_node(s->doc, p->value);
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

static int sops(struct sload *s, yaml_node_t *n, struct tl_api_spec *spec)
{
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, "operations", "must be a mapping");
	spec->ops = calloc(tl_ydoc_len(n) + 1, sizeof(*spec->ops));
	if (!spec->ops)
		return sfail(s, "operations", "out of memory");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		struct tl_api_op *op = &spec->ops[spec->n_ops];

		if (sstr(s, "operations", tl_ydoc_node(s->doc, p->key), &op->name) < 0)
			return -1;
		spec->n_ops++;
		if (sop(s, op->name, tl_ydoc_node(s->doc, p->value), op) < 0)
			return -1;
	}
	return spec->n_ops ? 0 : sfail(s, "operations", "none defined");
}

static int stypes(struct sload *s, yaml_node_t *n, struct tl_api_spec *spec)
{
	if (!n || n->type != YAML_MAPPING_NODE)
		return sfail(s, "types", "must be a mapping of type name to description");
	spec->types = calloc(tl_ydoc_len(n) + 1, sizeof(*spec->types));
	if (!spec->types)
		return sfail(s, "types", "out of memory");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		struct tl_api_type_doc *t = &spec->types[spec->n_types];

		if (sstr(s, "types", tl_ydoc_node(s->doc, p->key), &t->name) < 0)
			return -1;
		spec->n_types++;
		if (sstr(s, "types", tl_ydoc_node(s->doc, p->value), &t->help) < 0)
			return -1;
	}
	return 0;
}

static int stop_key(struct sload *s, const char *k, yaml_node_t *v, struct tl_api_spec *spec)
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

int tl_api_spec_load(struct tl_api_spec *spec, const char *text, size_t len, char *err, size_t errlen)
{
	yaml_document_t doc;
	struct sload s = { .doc = &doc, .err = err, .errlen = errlen };
	char why[256];
	yaml_node_t *root;
	int rc = 0;

	memset(spec, 0, sizeof(*spec));
	if (tl_ydoc_load(&doc, text, len, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "control API spec: %s", why);
		return -1;
	}
	root = yaml_document_get_root_node(&doc);
	if (root->type != YAML_MAPPING_NODE)
		rc = sfail(&s, "(document)", "must be a mapping");
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; !rc && root->type == YAML_MAPPING_NODE &&
	     p < root->data.mapping.pairs.top; p++) {
		const char *k = tl_ydoc_scalar(tl_ydoc_node(&doc, p->key));

		rc = k ? stop_key(&s, k, tl_ydoc_node(&doc, p->value), spec) : sfail(&s, "(document)", "keys must be strings");
	}
	if (!rc && (!spec->title || !spec->ops || !spec->framing || !spec->request || !spec->reply))
		rc = sfail(&s, "(document)", "title, framing, request, reply and operations are required");
	tl_ydoc_delete(&doc);
	if (rc)
		tl_api_spec_free(spec);
	return rc;
}

static void cfields_free(struct tl_api_field *f, size_t n)
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

void tl_api_spec_free(struct tl_api_spec *spec)
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

static struct tl_api_spec g_builtin;
static bool g_builtin_loaded;

static void builtin_free(void)
{
	tl_api_spec_free(&g_builtin);
}

const struct tl_api_spec *tl_api_spec_builtin(char *err, size_t errlen)
{
	if (g_builtin_loaded)
		return &g_builtin;
	if (tl_api_spec_load(&g_builtin, tl_ctlapi_spec_text, tl_ctlapi_spec_len, err, errlen) < 0)
		return NULL;
	g_builtin_loaded = true;
	atexit(builtin_free);
	return &g_builtin;
}

const struct tl_api_op *tl_api_spec_op(const struct tl_api_spec *spec, const char *name)
{
	for (size_t i = 0; i < spec->n_ops; i++)
		if (!strcmp(spec->ops[i].name, name))
			return &spec->ops[i];
	return NULL;
}

const struct tl_api_field *tl_api_field_find(const struct tl_api_field *fields, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

