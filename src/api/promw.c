/* The Prometheus text exposition format (promw.h). */
#include "api/promw.h"

#include <stdbool.h>

void tl_prom_family(struct tl_buf *b, const char *name, const char *type, const char *help)
{
	tl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void tl_prom_label_value(char *out, size_t len, const char *v)
{
	size_t o = 0;

	for (; *v && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"')
			out[o++] = '\\', out[o++] = *v;
		else if (*v == '\n')
			out[o++] = '\\', out[o++] = 'n';
		else
			out[o++] = *v;
	}
	out[o] = '\0';
}

void tl_prom_sample(struct tl_buf *b, const char *name, const char *labels, const char *extra, const char *value)
{
	bool any = *labels || *extra;

	tl_buf_printf(b, "%s%s%s%s%s%s %s\n", name, any ? "{" : "", labels, *labels && *extra ? "," : "", extra,
		      any ? "}" : "", value);
}
