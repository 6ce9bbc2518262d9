/* The control API spec (ctlapi.yaml, embedded at build time) loaded with a libcyaml schema,
 * then checked for what a schema cannot say. */
#include "api/spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cyaml/cyaml.h>

#include "api/stats_fields.h"

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

/* ---- the schema ------------------------------------------------------------------------------ */

static const cyaml_strval_t type_strings[TL_API_MAX] = {
	{ "string", TL_API_STRING }, { "integer", TL_API_INTEGER }, { "boolean", TL_API_BOOLEAN },
	{ "key", TL_API_KEY }, { "endpoint", TL_API_ENDPOINT }, { "prefix_list", TL_API_PREFIX_LIST },
	{ "enum", TL_API_ENUM }, { "map", TL_API_MAP }, { "number", TL_API_NUMBER }, { "list", TL_API_LIST },
	{ "counters", TL_API_COUNTERS },
};

static const cyaml_schema_value_t string_schema = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

/* A field holds fields (maps, lists of maps): the schema refers to itself. */
static const cyaml_schema_value_t field_schema;

static const cyaml_schema_field_t field_fields[] = {
	CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, struct tl_api_field, name, 1, CYAML_UNLIMITED),
	CYAML_FIELD_ENUM("type", CYAML_FLAG_STRICT, struct tl_api_field, type, type_strings, TL_API_MAX),
	CYAML_FIELD_STRING_PTR("help", CYAML_FLAG_POINTER, struct tl_api_field, help, 1, CYAML_UNLIMITED),
	CYAML_FIELD_BOOL("required", CYAML_FLAG_OPTIONAL, struct tl_api_field, required),
	CYAML_FIELD_INT_PTR("min", CYAML_FLAG_OPTIONAL, struct tl_api_field, min),
	CYAML_FIELD_INT_PTR("max", CYAML_FLAG_OPTIONAL, struct tl_api_field, max),
	CYAML_FIELD_UINT("max_len", CYAML_FLAG_OPTIONAL, struct tl_api_field, max_len),
	CYAML_FIELD_SEQUENCE_COUNT("values", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct tl_api_field, values,
				   n_values, &string_schema, 1, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE_COUNT("fields", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct tl_api_field, fields,
				   n_fields, &field_schema, 0, CYAML_UNLIMITED),
	CYAML_FIELD_ENUM_PTR("items", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT, struct tl_api_field, items, type_strings, TL_API_MAX),
	CYAML_FIELD_STRING_PTR("read_model", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct tl_api_field, read_model, 1,
			       CYAML_UNLIMITED),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t field_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct tl_api_field, field_fields),
};

static const cyaml_schema_field_t op_fields[] = {
	CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, struct tl_api_op, name, 1, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("help", CYAML_FLAG_POINTER, struct tl_api_op, help, 1, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE_COUNT("args", CYAML_FLAG_POINTER, struct tl_api_op, args, n_args, &field_schema, 0,
				   CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE_COUNT("reply", CYAML_FLAG_POINTER, struct tl_api_op, reply, n_reply, &field_schema, 0,
				   CYAML_UNLIMITED),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t op_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct tl_api_op, op_fields),
};

static const cyaml_schema_field_t type_doc_fields[] = {
	CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, struct tl_api_type_doc, name, 1, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("help", CYAML_FLAG_POINTER, struct tl_api_type_doc, help, 1, CYAML_UNLIMITED),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t type_doc_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct tl_api_type_doc, type_doc_fields),
};

static const cyaml_schema_field_t spec_fields[] = {
	CYAML_FIELD_STRING_PTR("title", CYAML_FLAG_POINTER, struct tl_api_spec, title, 1, CYAML_UNLIMITED),
	CYAML_FIELD_UINT("version", CYAML_FLAG_DEFAULT, struct tl_api_spec, version),
	CYAML_FIELD_STRING_PTR("socket", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct tl_api_spec, socket, 1,
			       CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("about", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct tl_api_spec, about, 1,
			       CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("framing", CYAML_FLAG_POINTER, struct tl_api_spec, framing, 1, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("request", CYAML_FLAG_POINTER, struct tl_api_spec, request, 1, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("reply", CYAML_FLAG_POINTER, struct tl_api_spec, reply, 1, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE_COUNT("types", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct tl_api_spec, types,
				   n_types, &type_doc_schema, 0, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE_COUNT("operations", CYAML_FLAG_POINTER, struct tl_api_spec, ops, n_ops, &op_schema, 1,
				   CYAML_UNLIMITED),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t spec_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct tl_api_spec, spec_fields),
};

/* ---- loading: libcyaml's first error line is the message ----------------------------------- */

struct spec_log {
	char *err;
	size_t errlen;
	bool have;
};

static void spec_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args)
{
	struct spec_log *l = ctx;
	size_t n;

	if (level < CYAML_LOG_ERROR || l->have)
		return;
	n = strlen(l->err);
	vsnprintf(l->err + n, l->errlen - n, fmt, args);
	l->err[strcspn(l->err, "\n")] = '\0';
	l->have = true;
}

static int __attribute__((format(printf, 4, 5))) spec_fail(char *err, size_t errlen, const char *path,
							   const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "control API spec: %s: %s", path, why);
	return -1;
}

/* ---- the read model's fields in show's reply -------------------------------------------------- */

struct model_field {
	const char *id, *help;
	enum tl_stat_kind kind;
	enum tl_stat_unit unit;
};

#define MODEL_FIELD(id, kind, unit, prom, label, help) { #id, help, TL_STAT_##kind, TL_UNIT_##unit },
#define MODEL_SECTION(name, table) static const struct model_field model_##name[] = { table(MODEL_FIELD) { 0 } };
TL_STATS_SECTIONS(MODEL_SECTION)
#define MODEL_ENTRY(name, table) { #name, model_##name },
static const struct {
	const char *name;
	const struct model_field *fields;
} model_sections[] = { TL_STATS_SECTIONS(MODEL_ENTRY) };

static const char *const unit_names[] = {
	[TL_UNIT_NONE] = NULL, [TL_UNIT_PACKETS] = "packets", [TL_UNIT_BYTES] = "bytes", [TL_UNIT_JOBS] = "jobs",
	[TL_UNIT_SECONDS] = "seconds", [TL_UNIT_US] = "microseconds", [TL_UNIT_NS] = "nanoseconds",
	[TL_UNIT_BPS] = "bits/s", [TL_UNIT_PERCENT] = "percent", [TL_UNIT_BOOL] = NULL,
};

/* The section's fields appended to f's (as integers, booleans for BOOL), their help with the
 * kind and the unit. 0, or -1 for an unknown section or out of memory. */
static int model_expand(struct tl_api_field *f, char *err, size_t errlen)
{
	const struct model_field *m = NULL;
	struct tl_api_field *fields;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(model_sections) / sizeof(model_sections[0]); i++)
		if (!strcmp(model_sections[i].name, f->read_model))
			m = model_sections[i].fields;
	if (!m)
		return spec_fail(err, errlen, f->name, "no read model section '%s'", f->read_model);
	while (m[n].id)
		n++;
	fields = realloc(f->fields, (f->n_fields + n) * sizeof(*fields));
	if (!fields)
		return spec_fail(err, errlen, f->name, "out of memory");
	f->fields = fields;
	for (size_t i = 0; i < n; i++) {
		struct tl_api_field *x = &fields[f->n_fields];
		char help[512];

		memset(x, 0, sizeof(*x));
		snprintf(help, sizeof(help), "%s (%s%s%s)", m[i].help, m[i].kind == TL_STAT_COUNTER ? "counter" : "gauge",
			 unit_names[m[i].unit] ? ", " : "", unit_names[m[i].unit] ? unit_names[m[i].unit] : "");
		x->type = m[i].unit == TL_UNIT_BOOL ? TL_API_BOOLEAN : TL_API_INTEGER;
		x->name = strdup(m[i].id);
		x->help = strdup(help);
		if (!x->name || !x->help) {
			free(x->name);
			free(x->help);
			return spec_fail(err, errlen, f->name, "out of memory");
		}
		f->n_fields++;
	}
	return 0;
}

/* What the schema cannot say, for each field under path. */
static int fields_check(const struct tl_api_field *f, size_t n, bool arg, unsigned depth, const char *path,
			char *err, size_t errlen)
{
	char sub[256];

	for (size_t i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%.180s.%.60s", path, f[i].name);
		if (depth > SPEC_MAX_DEPTH)
			return spec_fail(err, errlen, sub, "nested too deep");
		if (tl_api_field_find(f, i, f[i].name))
			return spec_fail(err, errlen, sub, "defined twice");
		if (arg && (f[i].type == TL_API_NUMBER || f[i].type == TL_API_LIST || f[i].type == TL_API_COUNTERS))
			return spec_fail(err, errlen, sub, "type %s is for replies only", tl_api_type_names[f[i].type]);
		if (f[i].type == TL_API_ENUM && !f[i].n_values)
			return spec_fail(err, errlen, sub, "an enum needs values");
		if (arg && f[i].type == TL_API_MAP && !f[i].n_fields)
			return spec_fail(err, errlen, sub, "an argument map needs fields");
		if (f[i].min && f[i].max && *f[i].min > *f[i].max)
			return spec_fail(err, errlen, sub, "min above max");
		if (fields_check(f[i].fields, f[i].n_fields, arg, depth + 1, sub, err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* Reply fields naming a read model section get its fields (libcyaml's allocator is libc's:
 * cyaml_free frees them with the rest). */
static int fields_expand(struct tl_api_field *f, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		if ((f[i].read_model && model_expand(&f[i], err, errlen) < 0) ||
		    fields_expand(f[i].fields, f[i].n_fields, err, errlen) < 0)
			return -1;
	return 0;
}

static int spec_check(struct tl_api_spec *s, char *err, size_t errlen)
{
	char path[128];

	if (s->version < 1)
		return spec_fail(err, errlen, "version", "must be a positive integer");
	for (size_t i = 0; i < s->n_ops; i++) {
		snprintf(path, sizeof(path), "operations.%.60s", s->ops[i].name);
		if (tl_api_spec_op(s, s->ops[i].name) != &s->ops[i])
			return spec_fail(err, errlen, path, "defined twice");
		if (fields_expand(s->ops[i].reply, s->ops[i].n_reply, err, errlen) < 0 ||
		    fields_check(s->ops[i].args, s->ops[i].n_args, true, 0, path, err, errlen) < 0 ||
		    fields_check(s->ops[i].reply, s->ops[i].n_reply, false, 0, path, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static cyaml_config_t spec_config(struct spec_log *l)
{
	return (cyaml_config_t){ .log_fn = spec_log, .log_ctx = l, .mem_fn = cyaml_mem, .log_level = CYAML_LOG_ERROR,
				 .flags = CYAML_CFG_NO_ALIAS };
}

struct tl_api_spec *tl_api_spec_load(const char *text, size_t len, char *err, size_t errlen)
{
	struct spec_log l = { .err = err, .errlen = errlen };
	cyaml_config_t config = spec_config(&l);
	struct tl_api_spec *spec = NULL;
	cyaml_err_t e;

	snprintf(err, errlen, "control API spec: ");
	e = cyaml_load_data((const uint8_t *)text, len, &config, &spec_schema, (cyaml_data_t **)&spec, NULL);
	if (e != CYAML_OK) {
		if (!l.have)
			snprintf(err, errlen, "control API spec: %s", cyaml_strerror(e));
		return NULL;
	}
	if (spec_check(spec, err, errlen) < 0) {
		tl_api_spec_free(spec);
		return NULL;
	}
	return spec;
}

void tl_api_spec_free(struct tl_api_spec *spec)
{
	char none[1] = "";
	struct spec_log l = { .err = none, .errlen = sizeof(none) };
	cyaml_config_t config = spec_config(&l);

	if (spec)
		cyaml_free(&config, &spec_schema, spec, 0);
}

static struct tl_api_spec *g_builtin;

static void builtin_free(void)
{
	tl_api_spec_free(g_builtin);
}

const struct tl_api_spec *tl_api_spec_builtin(char *err, size_t errlen)
{
	if (g_builtin)
		return g_builtin;
	g_builtin = tl_api_spec_load(tl_ctlapi_spec_text, tl_ctlapi_spec_len, err, errlen);
	if (g_builtin)
		atexit(builtin_free);
	return g_builtin;
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
