/* A growable text buffer: replies of the control API, the UAPI and the metrics, and requests
 * tunlessctl builds. Out of memory is sticky (oom) and the contents are then incomplete. The
 * bytes are kept NUL-terminated. Freeing wipes them: replies may carry keys. */
#ifndef TL_COMMON_BUF_H
#define TL_COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct tl_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

void tl_buf_add(struct tl_buf *b, const void *data, size_t len);
void tl_buf_printf(struct tl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tl_buf_free(struct tl_buf *b);

#endif
