/* libFuzzer harness for the control API request parser and validator: the input is one
 * request document as the daemon would receive it, parsed and validated against the
 * embedded spec, and every accepted value is read back. Any crash, leak or sanitizer report
 * is a bug; a refused request must name a field and give a message, and the error reply
 * built from it must be a complete document. No socket, no dataplane. */
#include "api/request.h"
#include "api/yamlw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const struct tl_api_value *v)
{
	size_t n = v->present;

	if (v->s)
		n += strlen(v->s);
	for (size_t i = 0; i < v->n_prefixes; i++)
		n += v->prefixes[i].len;
	for (size_t i = 0; i < v->n_sub; i++)
		n += walk(&v->sub[i]);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tl_api_spec *spec;
	struct tl_buf reply = { 0 };
	struct tl_api_request req;
	struct tl_api_error e;
	char err[256];

	if (!spec && !(spec = tl_api_spec_builtin(err, sizeof(err))))
		abort();
	if (size > TL_CTL_MAX_REQUEST)
		return 0;      /* the server refuses these before parsing */
	if (tl_api_request_parse(spec, (const char *)data, size, &req, &e) == 0) {
		if (!req.op || walk(&req.args) == (size_t)-1)
			abort();
		tl_api_request_free(&req);
		return 0;
	}
	if (!e.field[0] || !e.message[0])
		abort();
	tl_api_error_reply(&reply, NULL, e.field, e.message);
	if (reply.len < 8 || strcmp(reply.p + reply.len - 4, "...\n"))
		abort();
	tl_buf_free(&reply);
	return 0;
}
