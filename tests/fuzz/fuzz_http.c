/* libFuzzer harness for the HTTP request head parser of the Prometheus listener
 * (tl_http_parse, src/api/httpreq.c): the input is the bytes a client sent, at most the
 * listener's buffer (TL_METRICS_MAX_REQUEST), exactly as tl_metrics_http receives them.
 * No socket, no device, no DPDK.
 *
 * Oracles besides the sanitizers: the answer is 0 or one of the codes the listener sends
 * (400, 404, 405, 505) with a reason; an accepted request has a token method, an
 * origin-form path of visible characters without query or fragment, HTTP/1.0 or 1.x, and
 * one Host field under 1.1; and it parses the same when written back in canonical form. */
#include "api/httpreq.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REQUEST 8192   /* TL_METRICS_MAX_REQUEST: the listener answers 431 beyond */

static void check_accepted(const struct tl_http_req *r)
{
	size_t mlen = strnlen(r->method, sizeof(r->method)), plen = strnlen(r->path, sizeof(r->path));

	if (!mlen || mlen == sizeof(r->method) || !plen || plen == sizeof(r->path) || r->path[0] != '/')
		abort();
	for (size_t i = 0; i < mlen; i++)
		if (r->method[i] <= ' ' || r->method[i] >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", r->method[i]))
			abort();
	for (size_t i = 0; i < plen; i++)
		if (r->path[i] <= ' ' || r->path[i] >= 0x7f || r->path[i] == '?' || r->path[i] == '#')
			abort();
	if (r->minor < 0 || r->minor > 9 || (r->minor >= 1 && r->hosts != 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_http_req r, again;
	const char *why = NULL;
	char canon[512];
	int code, n;

	if (size > MAX_REQUEST)
		return 0;
	code = tl_http_parse((const char *)data, size, &r, &why);
	if (code) {
		if ((code != 400 && code != 404 && code != 405 && code != 505) || !why || !*why ||
		    (r.minor != 0 && r.minor != 1 && code != 400) || !strcmp(tl_http_status_text(code), "Error"))
			abort();
		return 0;
	}
	check_accepted(&r);
	n = snprintf(canon, sizeof(canon), "%s %s HTTP/1.%d\r\n%s\r\n", r.method, r.path, r.minor,
		     r.hosts ? "Host: x\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(canon))
		abort();
	why = NULL;
	if (tl_http_parse(canon, (size_t)n, &again, &why) != 0 || strcmp(again.method, r.method) ||
	    strcmp(again.path, r.path) || again.minor != r.minor) {
		fprintf(stderr, "accepted request does not parse the same written back: %s\n", canon);
		abort();
	}
	return 0;
}
