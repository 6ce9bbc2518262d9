/* A control API request parsed and validated against the spec (spec.h): types, ranges,
 * unknown and missing fields. No daemon, no sockets: tunlessd, tunlessctl and the fuzz
 * harness run the same code. */
#ifndef TL_API_REQUEST_H
#define TL_API_REQUEST_H

#include "api/spec.h"
#include "common/addr.h"
#include "common/key.h"
#include "config/peer_op.h"
#include "dataplane/qparams.h"

/* A validated value. Maps have one child per spec field (in spec order), present or not. */
struct tl_api_value {
	const struct tl_api_field *f;
	bool present;
	int64_t i;                     /* integer */
	bool b;                        /* boolean */
	char *s;                       /* string, enum */
	uint8_t key[TL_KEY_LEN];       /* key */
	struct tl_sockaddr ep;         /* endpoint */
	struct tl_prefix *prefixes;    /* prefix_list */
	size_t n_prefixes;
	struct tl_api_value *sub;           /* map: parallel to f->fields */
	size_t n_sub;
};

struct tl_api_request {
	const struct tl_api_op *op;
	struct tl_api_value args;           /* map of op->args */
};

/* Where and why a request was refused. */
struct tl_api_error {
	char field[160];
	char message[320];
};

/* Parses one request document and validates it against spec. 0 with req filled (free with
 * tl_api_request_free), or -1 with err filled and req empty. err->field names the value at fault. */
int tl_api_request_parse(const struct tl_api_spec *spec, const char *text, size_t len, struct tl_api_request *req,
		  struct tl_api_error *err);
void tl_api_request_free(struct tl_api_request *req);
/* The child of a map value by field name (NULL if the spec has no such field). */
const struct tl_api_value *tl_api_value_get(const struct tl_api_value *map, const char *name);
/* Present child or NULL. */
const struct tl_api_value *tl_api_value_has(const struct tl_api_value *map, const char *name);

/* Fills e (the field at fault, the message): returns -1, for the operations to return. */
int tl_api_fail(struct tl_api_error *e, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "<field>: <rule>" from the queue parameter checks (dataplane/qparams.h) as an error on
 * <prefix>.<field>; -1. */
int tl_api_fail_qparams(struct tl_api_error *e, const char *prefix, const char *why);
/* The aqm and shaper argument maps of a request merged into p: the fields given replace
 * p's. */
void tl_api_merge_aqm(const struct tl_api_value *m, struct tl_aqm_params *p);
void tl_api_merge_shaper(const struct tl_api_value *m, struct tl_shaper_params *p);
/* The peer fields of a request (peer_add, peer_update) as one peer operation; its allowed
 * IPs point into args. */
void tl_api_peer_op(const struct tl_api_value *args, struct tl_peer_op *op);

/* The framing on the socket: the length of the first request in p (up to and including its
 * "..." line), 0 if incomplete; a terminator line may straddle from. */
size_t tl_api_request_end(const char *p, size_t len, size_t from);
/* Only spaces, tabs and line ends (what may follow the last request). */
bool tl_api_blank(const char *p, size_t len);

#endif
