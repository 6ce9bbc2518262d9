/* tunlessctl help and docs/control-api.md, both from the control API spec. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/stats_fields.h"
#include "cli/ctl.h"

/* "integer 1..65535", "enum: wan, lan", "string (at most 31 characters)". */
static void type_text(const struct tl_api_field *f, char *out, size_t len)
{
	size_t off;

	switch (f->type) {
	case TL_API_INTEGER:
		if (f->min && f->max)
			snprintf(out, len, "integer %" PRId64 "..%" PRId64, *f->min, *f->max);
		else
			snprintf(out, len, "integer");
		return;
	case TL_API_STRING:
		if (f->max_len)
			snprintf(out, len, "string (at most %zu characters)", f->max_len);
		else
			snprintf(out, len, "string");
		return;
	case TL_API_ENUM:
		off = (size_t)snprintf(out, len, "enum: ");
		for (size_t i = 0; i < f->n_values && off < len; i++)
			off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", f->values[i]);
		return;
	case TL_API_LIST:
		if (f->items)
			snprintf(out, len, "list of %s", tl_api_type_names[*f->items]);
		else
			snprintf(out, len, "list of maps");
		return;
	default:
		snprintf(out, len, "%s", tl_api_type_names[f->type]);
	}
}

/* ---- plain text ------------------------------------------------------------------------------ */

static void args_summary(FILE *o, const struct tl_api_op *op)
{
	for (size_t i = 0; i < op->n_args; i++) {
		const struct tl_api_field *f = &op->args[i];

		fprintf(o, " %s%s%s=%s%s", f->required ? "" : "[", f->name, f->type == TL_API_MAP ? ".FIELD" : "",
			f->type == TL_API_MAP ? "VALUE" : tl_api_type_names[f->type], f->required ? "" : "]");
	}
}

void ctl_usage(FILE *o, const struct tl_api_spec *spec)
{
	fprintf(o, "usage: tunlessctl [-n NAME | -s SOCKET] [--yaml | --json] OP [ARG=VALUE ...]\n"
		   "       tunlessctl [-n NAME | -s SOCKET] watch [-i | --interval SECONDS] [-c | --count N]\n"
		   "       tunlessctl help [OP | --markdown]\n"
		   "       tunlessctl import WG_QUICK.conf [-o OUT.yaml] [--name NAME] [--wan IFACE]\n\n"
		   "  -n, --name NAME     instance name: socket %s/NAME.sock\n"
		   "  -s, --socket PATH   control socket path\n"
		   "      --yaml          print the reply document as it came\n"
		   "      --json          print the reply as JSON\n"
		   "  -h, --help          this text\n"
		   "Arguments are ARG=VALUE; nested ones use dots (aqm.target_us=2000); prefix lists are\n"
		   "comma-separated (allowed_ips=10.0.0.2/32,fd00::2/128). OP names take - or _.\n"
		   "Exit status: 0 ok, 1 the daemon refused, 2 usage error, 3 cannot connect.\n\n"
		   "operations:\n", TL_CTL_DIR);
	for (size_t i = 0; spec && i < spec->n_ops; i++) {
		fprintf(o, "  %s", spec->ops[i].name);
		args_summary(o, &spec->ops[i]);
		fputc('\n', o);
	}
	fprintf(o, "  watch [-i SECONDS] [--count N]   live view of queues, throughput and drops\n");
}

static void field_lines(FILE *o, const struct tl_api_field *f, size_t n, const char *prefix)
{
	char type[256], name[256];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%.120s%.60s", prefix, f[i].name);
		type_text(&f[i], type, sizeof(type));
		fprintf(o, "  %-22s %-28s %s%s\n", name, type, f[i].required ? "(required) " : "", f[i].help);
		if (f[i].type == TL_API_MAP) {
			char sub[256];

			snprintf(sub, sizeof(sub), "%.200s.", name);
			field_lines(o, f[i].fields, f[i].n_fields, sub);
		}
	}
}

int ctl_help_op(FILE *o, const struct tl_api_op *op)
{
	fprintf(o, "tunlessctl %s", op->name);
	args_summary(o, op);
	fprintf(o, "\n\n%s\n", op->help);
	if (op->n_args) {
		fprintf(o, "\narguments:\n");
		field_lines(o, op->args, op->n_args, "");
	}
	return 0;
}

/* ---- markdown -------------------------------------------------------------------------------- */

static void md_text(FILE *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', o);
		fputc(*s == '\n' ? ' ' : *s, o);
	}
}

static void md_fields(FILE *o, const struct tl_api_field *f, size_t n, const char *prefix, bool args)
{
	char type[256], name[256];

	for (size_t i = 0; i < n; i++) {
		bool list_of_maps = f[i].type == TL_API_LIST && !f[i].items;

		snprintf(name, sizeof(name), "%.120s%.60s", prefix, f[i].name);
		type_text(&f[i], type, sizeof(type));
		fprintf(o, "| `%s` | %s |", name, type);
		if (args)
			fprintf(o, " %s |", f[i].required ? "**yes**" : "no");
		fputc(' ', o);
		md_text(o, f[i].help);
		fprintf(o, " |\n");
		if (f[i].n_fields) {
			char sub[256];

			snprintf(sub, sizeof(sub), "%.200s%s", name, list_of_maps ? "[]." : ".");
			md_fields(o, f[i].fields, f[i].n_fields, sub, args);
		}
	}
}

static void md_op(FILE *o, const struct tl_api_op *op)
{
	fprintf(o, "### `%s`\n\n", op->name);
	md_text(o, op->help);
	fprintf(o, "\n\n`tunlessctl -n NAME %s", op->name);
	args_summary(o, op);
	fprintf(o, "`\n\n");
	if (op->n_args) {
		fprintf(o, "Arguments (`args`):\n\n| argument | type | required | meaning |\n|---|---|---|---|\n");
		md_fields(o, op->args, op->n_args, "", true);
	} else {
		fprintf(o, "No arguments.\n");
	}
	if (op->n_reply) {
		fprintf(o, "\nReply (`result`):\n\n| field | type | meaning |\n|---|---|---|\n");
		md_fields(o, op->reply, op->n_reply, "", false);
	}
	fputc('\n', o);
}

int ctl_help_markdown(FILE *o, const struct tl_api_spec *spec)
{
	fprintf(o, "# %s (version %u)\n\n", spec->title, spec->version);
	fprintf(o, "<!-- Generated from src/api/ctlapi.yaml by `tunlessctl help --markdown`: do not edit. -->\n\n");
	md_text(o, spec->about);
	fprintf(o, "\n\n## Framing\n\n");
	md_text(o, spec->framing);
	fprintf(o, "\n\n## Requests\n\n");
	md_text(o, spec->request);
	fprintf(o, "\n\n```yaml\nop: set\nargs:\n  port: wan\n  aqm: {target_us: 2000}\n...\n```\n\n## Replies\n\n");
	md_text(o, spec->reply);
	fprintf(o, "\n\n```yaml\n---\nstatus: error\napi_version: 1\nop: set\nerror:\n  field: args.aqm.flows\n"
		   "  message: must be a power of two in 1..65536\n...\n```\n\n");
	fprintf(o, "## tunlessctl\n\n`tunlessctl [-n NAME | -s SOCKET] [--yaml | --json] OP [ARG=VALUE ...]` sends one request "
		   "and prints the reply: tables by default, the reply document with `--yaml`, JSON with `--json`. "
		   "Arguments are checked against this spec before anything is sent; nested arguments use dots "
		   "(`aqm.target_us=2000`), prefix lists are comma-separated. `tunlessctl -n NAME watch [-i SECONDS] "
		   "[--count N]` refreshes a live view of queue depth, sojourn, throughput and drops. Exit status: 0 ok, "
		   "1 the daemon refused the request, 2 usage error (checked locally), 3 cannot connect.\n\n");
	fprintf(o, "## Types\n\n| type | meaning |\n|---|---|\n");
	for (size_t i = 0; i < spec->n_types; i++) {
		fprintf(o, "| `%s` | ", spec->types[i].name);
		md_text(o, spec->types[i].help);
		fprintf(o, " |\n");
	}
	fprintf(o, "\n## Operations\n\n");
	for (size_t i = 0; i < spec->n_ops; i++)
		md_op(o, &spec->ops[i]);
	return ferror(o) ? -1 : 0;
}

/* ---- the read model (api/stats_fields.h) ----------------------------------------------------------- */

static const char *const unit_names[] = {
	[TL_UNIT_NONE] = "", [TL_UNIT_PACKETS] = "packets", [TL_UNIT_BYTES] = "bytes", [TL_UNIT_JOBS] = "jobs",
	[TL_UNIT_SECONDS] = "s", [TL_UNIT_US] = "µs", [TL_UNIT_NS] = "ns", [TL_UNIT_BPS] = "bit/s",
	[TL_UNIT_PERCENT] = "%", [TL_UNIT_BOOL] = "0/1",
};

#define MODEL_ROW(id, kind, unit, prom, label, help) \
	fprintf(o, "| %s | `%s` | %s | %s | `%s%s%s%s` | %s |\n", section, #id, \
		TL_STAT_##kind == TL_STAT_COUNTER ? "counter" : "gauge", unit_names[TL_UNIT_##unit], prom, \
		*label ? "{" : "", label, *label ? "}" : "", help);
#define MODEL_SECTION(name, table) \
	section = #name; \
	table(MODEL_ROW)

int ctl_help_read_model(FILE *o)
{
	const char *section;

	fprintf(o, "<!-- Generated from src/api/stats_fields.h by `tunlessctl help --read-model`: do not edit. -->\n\n");
	fprintf(o, "| section | field | kind | unit | Prometheus | meaning |\n|---|---|---|---|---|---|\n");
	TL_STATS_SECTIONS(MODEL_SECTION)
	return 0;
}
