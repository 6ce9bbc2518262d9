/* Control-plane logging to stderr; see log.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctrl/log.h"

const char *tl_log_name = "tunlessd";
int tl_log_verbose;

static int g_journal = -1;   /* -1: not decided yet */

void tl_log_reset(void)
{
	g_journal = -1;
}

/* sd_journal_stream_fd's convention (systemd.exec(5), $JOURNAL_STREAM): the variable holds
 * the device and inode of the stream connected to the journal; a child whose stderr was
 * redirected elsewhere inherits the variable but not the stream. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	if (!e || sscanf(e, "%llu:%llu%c", &dev, &ino, &end) != 2 || fstat(fileno(stderr), &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static const char *level_word(int priority)
{
	switch (priority) {
	case TL_LOG_ERR: return "error";
	case TL_LOG_WARNING: return "warning";
	case TL_LOG_DEBUG: return "debug";
	default: return "info";
	}
}

static void log_v(int priority, bool level, const char *fmt, va_list ap)
{
	char stack[512], *msg = stack;
	const char *p;
	va_list again;
	int n;

	if (g_journal < 0)
		g_journal = stderr_is_journal();
	va_copy(again, ap);
	n = vsnprintf(stack, sizeof(stack), fmt, ap);
	if (n >= 0 && (size_t)n >= sizeof(stack)) {
		msg = malloc((size_t)n + 1);
		if (msg)
			vsnprintf(msg, (size_t)n + 1, fmt, again);
		else
			msg = stack;   /* the truncated message rather than none */
	}
	va_end(again);
	if (n < 0)
		return;
	p = msg;
	do {
		size_t len = strcspn(p, "\n");
		char pre[8] = "";

		if (g_journal)
			snprintf(pre, sizeof(pre), "<%d>", priority);
		/* one fprintf per line: stderr is unbuffered, each line is one write */
		fprintf(stderr, "%s%s: %s%s%.*s\n", pre, tl_log_name, level ? level_word(priority) : "", level ? ": " : "",
			(int)len, p);
		p += len + (p[len] == '\n');
	} while (*p);
	if (msg != stack)
		free(msg);
}

void tl_log_line(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(priority, true, fmt, ap);
	va_end(ap);
}

void tl_log_bare(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v(priority, false, fmt, ap);
	va_end(ap);
}
