/* HTTP/1.x request head parsing for the metrics listener (RFC 9112): request line
 * "METHOD SP target SP HTTP/1.x", then "name: value" header fields up to the empty line.
 * Bytes in, no I/O, no allocation; whether the method and path are served is the caller's. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/httpreq.h"

const char *tl_http_status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The next line of [*p, end): without its CRLF (or bare LF). NULL if no line end. */
static const char *next_line(const char **p, const char *end, size_t *len)
{
	const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));

	if (!nl)
		return NULL;
	*len = (size_t)(nl - s) - (nl > s && nl[-1] == '\r');
	*p = nl + 1;
	return s;
}

/* Request line "METHOD SP target SP HTTP/1.x". 0, or an HTTP error code. */
static int parse_request_line(const char *s, size_t len, struct tl_http_req *r)
{
	const char *sp1 = memchr(s, ' ', len), *sp2, *t;
	size_t mlen, tlen, vlen;

	if (!sp1 || sp1 == s)
		return 400;
	mlen = (size_t)(sp1 - s);
	sp2 = memchr(sp1 + 1, ' ', len - mlen - 1);
	if (!sp2)
		return 400;
	t = sp1 + 1;
	tlen = (size_t)(sp2 - t);
	vlen = len - (size_t)(sp2 + 1 - s);
	if (mlen >= sizeof(r->method) || !tlen)
		return 400;
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(s[i]))
			return 400;
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			return 400;
	if (vlen != 8 || memcmp(sp2 + 1, "HTTP/", 5) || sp2[6] < '0' || sp2[6] > '9' || sp2[7] != '.' ||
	    sp2[8] < '0' || sp2[8] > '9')
		return 400;
	if (sp2[6] != '1')
		return 505;
	r->minor = sp2[8] - '0';
	memcpy(r->method, s, mlen);
	r->method[mlen] = '\0';
	/* absolute-form (http://host/path) is allowed by RFC 9112: keep the path */
	if (tlen > 7 && !strncasecmp(t, "http://", 7)) {
		const char *slash = memchr(t + 7, '/', tlen - 7);

		tlen = slash ? tlen - (size_t)(slash - t) : 1;
		t = slash ? slash : "/";
	} else if (t[0] != '/') {
		return t[0] == '*' && tlen == 1 ? 405 : 400;
	}
	for (size_t i = 0; i < tlen; i++)
		if (t[i] == '?' || t[i] == '#') {
			tlen = i;
			break;
		}
	if (tlen >= sizeof(r->path))
		return 404;          /* no path of ours is that long */
	memcpy(r->path, t, tlen);
	r->path[tlen] = '\0';
	return 0;
}

/* Header fields "name: value", no obsolete line folding. 0 or 400. */
static int parse_headers(const char *p, const char *end, struct tl_http_req *r)
{
	const char *line;
	size_t len;

	while ((line = next_line(&p, end, &len))) {
		const char *colon;

		if (!len)
			return 0;    /* the empty line ends the header section */
		colon = memchr(line, ':', len);
		if (!colon || colon == line)
			return 400;
		for (const char *c = line; c < colon; c++)
			if (!is_tchar(*c))
				return 400;        /* also rejects folding and space before ':' */
		for (const char *c = colon + 1; c < line + len; c++)
			if (*c == '\0' || *c == '\r')
				return 400;
		if ((size_t)(colon - line) == 4 && !strncasecmp(line, "host", 4))
			r->hosts++;
	}
	return 400;                  /* no empty line: the request stopped early */
}

int tl_http_parse(const char *req, size_t len, struct tl_http_req *r, const char **why)
{
	const char *p = req, *end = req + len, *line;
	size_t llen;
	int code;

	memset(r, 0, sizeof(*r));
	r->minor = 1;            /* the version to answer in until the request line says */
	/* RFC 9112 2.2: ignore empty lines before the request line */
	while ((line = next_line(&p, end, &llen)) && !llen)
		;
	if (!line) {
		*why = "no request line";
		return 400;
	}
	code = parse_request_line(line, llen, r);
	if (code) {
		r->minor = 1;
		*why = code == 505 ? "only HTTP/1.0 and HTTP/1.1" : "malformed request line";
		return code;
	}
	if (parse_headers(p, end, r)) {
		*why = "malformed header section";
		return 400;
	}
	if (r->minor >= 1 && r->hosts != 1) {
		*why = "HTTP/1.1 needs exactly one Host header";
		return 400;
	}
	return 0;
}

int tl_http_respond(struct tl_buf *out, int code, int minor, const char *ctype, const char *body, size_t body_len,
		    bool head)
{
	tl_buf_printf(out, "HTTP/1.%d %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
		      minor == 0 ? 0 : 1, code, tl_http_status_text(code), ctype, body_len,
		      code == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!head && body_len)
		tl_buf_add(out, body, body_len);
	return code;
}

int tl_http_respond_error(struct tl_buf *out, int code, int minor, const char *why)
{
	char body[160];
	int n = snprintf(body, sizeof(body), "%d %s%s%s\n", code, tl_http_status_text(code), why ? ": " : "",
			 why ? why : "");

	return tl_http_respond(out, code, minor, "text/plain; charset=utf-8", body, (size_t)n, false);
}

size_t tl_http_request_end(const char *in, size_t len, size_t from)
{
	const char *crlf, *lf;

	from = from > 3 ? from - 3 : 0;
	crlf = memmem(in + from, len - from, "\r\n\r\n", 4);
	lf = memmem(in + from, len - from, "\n\n", 2);
	if (crlf && (!lf || crlf < lf))
		return (size_t)(crlf - in) + 4;
	return lf ? (size_t)(lf - in) + 2 : 0;
}

int tl_http_get(struct tl_buf *out, const char *req, size_t len, const char *path, const char *ctype,
		void (*render)(void *arg, struct tl_buf *body), void *arg)
{
	struct tl_http_req r;
	struct tl_buf body = { 0 };
	const char *why = NULL;
	int code = tl_http_parse(req, len, &r, &why);

	if (code)
		return tl_http_respond_error(out, code, r.minor, why);
	if (strcmp(r.method, "GET") && strcmp(r.method, "HEAD"))
		return tl_http_respond_error(out, 405, r.minor, "only GET and HEAD");
	if (strcmp(r.path, path)) {
		char msg[sizeof(r.path) + 32];

		snprintf(msg, sizeof(msg), "the resource is at %s", path);
		return tl_http_respond_error(out, 404, r.minor, msg);
	}
	render(arg, &body);
	if (body.oom)
		code = tl_http_respond_error(out, 500, r.minor, "out of memory");
	else
		code = tl_http_respond(out, 200, r.minor, ctype, body.p, body.len, !strcmp(r.method, "HEAD"));
	free(body.p);
	return code;
}
