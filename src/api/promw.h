/* The Prometheus text exposition format (0.0.4), written into a buffer (promw.c): a family's
 * HELP and TYPE lines, a sample with its labels, a label value escaped. */
#ifndef TL_API_PROMW_H
#define TL_API_PROMW_H

#include <stddef.h>

#include "common/buf.h"

/* # HELP name help / # TYPE name type */
void tl_prom_family(struct tl_buf *b, const char *name, const char *type, const char *help);
/* name{labels,extra} value (no braces when both are empty) */
void tl_prom_sample(struct tl_buf *b, const char *name, const char *labels, const char *extra, const char *value);
/* v with \, " and newline escaped, as a label value wants; cut to fit len. */
void tl_prom_label_value(char *out, size_t len, const char *v);

#endif
