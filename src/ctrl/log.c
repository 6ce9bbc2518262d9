/* Control-plane logging to stderr. */
#include <stdarg.h>

#include "ctrl/log.h"

const char *tl_log_name = "tunlessd";
int tl_log_verbose;

void tl_log_line(const char *level, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", tl_log_name, level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
