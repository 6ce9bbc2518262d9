/* The growable text buffer (buf.h). */
#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for len more bytes and the NUL; false when out of memory (then oom is set). */
static bool reserve(struct tl_buf *b, size_t len)
{
	size_t cap = b->cap ? b->cap : 1024;
	char *p;

	if (b->oom)
		return false;
	if (b->len + len + 1 <= b->cap)
		return true;
	while (cap < b->len + len + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void tl_buf_add(struct tl_buf *b, const void *data, size_t len)
{
	if (!reserve(b, len))
		return;
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

/* Formats into the room left; only when that is too small does it grow and format again. */
void tl_buf_printf(struct tl_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t room = b->cap - b->len;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n >= room) {
		if (!reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void tl_buf_free(struct tl_buf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->cap);
	free(b->p);
	memset(b, 0, sizeof(*b));
}
