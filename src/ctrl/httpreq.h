/* The HTTP/1.x request head as the metrics listener accepts it: request line and header
 * fields (RFC 9112), parsed from bytes with no I/O and no allocation. metrics.c serves it;
 * the fuzz harness drives it on its own. */
#ifndef TL_HTTPREQ_H
#define TL_HTTPREQ_H

#include <stddef.h>

struct tl_http_req {
	char method[16];
	char path[256];          /* the target's path: no query, no fragment, no scheme/host */
	int minor;               /* HTTP/1.<minor> */
	int hosts;               /* Host header fields */
};

/* Parses [req, req + len): empty lines before the request line are skipped, then the
 * request line and the header fields up to the empty line ending them. Returns 0, or the
 * HTTP status code to answer with (400, 404, 405 or 505), *why then saying what is wrong.
 * r->minor is valid (the version to answer in) whenever the request line parsed, i.e. on
 * 0 and on any error but 505 and those of the request line. */
int tl_http_parse(const char *req, size_t len, struct tl_http_req *r, const char **why);

/* "OK", "Bad Request", ... ("Error" for a code without its own text). */
const char *tl_http_status_text(int code);

#endif
