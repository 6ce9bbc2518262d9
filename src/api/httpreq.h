/* The HTTP/1.x request head as the metrics listener accepts it: request line and header
 * fields (RFC 9112), parsed from bytes with no I/O and no allocation, and the responses it
 * gets. src/daemon/metrics.c serves it; the fuzz harness drives the parser on its own. */
#ifndef TL_API_HTTPREQ_H
#define TL_API_HTTPREQ_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

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

/* A whole response (Connection: close; 405 adds Allow: GET, HEAD) in HTTP/1.<minor>, the
 * body left out for HEAD, appended to out. Returns code. */
int tl_http_respond(struct tl_buf *out, int code, int minor, const char *ctype, const char *body, size_t body_len,
		    bool head);
/* An error response whose text body names the code and why (NULL: the code only). */
int tl_http_respond_error(struct tl_buf *out, int code, int minor, const char *why);
/* Answers the request head [req, req + len) for one resource: GET or HEAD of path gets 200
 * with the body render() writes (405 for another method, 404 for another path, 500 when
 * out of memory, a parse error's code). Returns the code. */
int tl_http_get(struct tl_buf *out, const char *req, size_t len, const char *path, const char *ctype,
		void (*render)(void *arg, struct tl_buf *body), void *arg);
/* Length of the request head in[0..len) up to and including the empty line ending it (CRLF
 * CRLF or LF LF), 0 if incomplete; one may straddle from (the request server's framing). */
size_t tl_http_request_end(const char *in, size_t len, size_t from);

#endif
