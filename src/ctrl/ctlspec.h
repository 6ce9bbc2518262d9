/* The control API spec (src/ctrl/ctlapi.yaml, embedded at build time) and what is built on
 * it without a daemon: the spec loaded into C structures, a request document parsed and
 * validated against it into typed values, and a YAML writer for requests and replies.
 * Shared by tunlessd, tunlessctl, the unit test and the fuzz harness; no DPDK, no sockets. */
#ifndef TL_CTLSPEC_H
#define TL_CTLSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "ctrl/config.h"

#define TL_CTL_MAX_REQUEST 65536     /* bytes of one request, terminator included */
#define TL_CTL_DIR "/run/tunless"

/* The spec text embedded in the binary (generated from ctlapi.yaml). */
extern const char tl_ctlapi_spec_text[];
extern const size_t tl_ctlapi_spec_len;

enum tl_ctype {
	TL_CT_STRING,
	TL_CT_INTEGER,
	TL_CT_BOOLEAN,
	TL_CT_KEY,
	TL_CT_ENDPOINT,
	TL_CT_PREFIX_LIST,
	TL_CT_ENUM,
	TL_CT_MAP,
	TL_CT_NUMBER,      /* reply only */
	TL_CT_LIST,        /* reply only */
	TL_CT_COUNTERS,    /* reply only */
	TL_CT_MAX
};

extern const char *const tl_ctype_names[TL_CT_MAX];

struct tl_cfield {
	char *name;
	enum tl_ctype type;
	char *help;
	bool required;
	bool has_min, has_max;
	int64_t min, max;              /* integer */
	size_t max_len;                /* string, 0 = no limit */
	char **values;                 /* enum */
	size_t n_values;
	struct tl_cfield *fields;      /* map, list of maps */
	size_t n_fields;
	enum tl_ctype items;           /* list of scalars; TL_CT_MAX = list of maps */
};

struct tl_cop {
	char *name;
	char *help;
	struct tl_cfield *args;
	size_t n_args;
	struct tl_cfield *reply;
	size_t n_reply;
};

struct tl_ctype_doc {
	char *name;
	char *help;
};

struct tl_cspec {
	char *title, *socket, *about, *framing, *request, *reply;
	unsigned version;
	struct tl_ctype_doc *types;
	size_t n_types;
	struct tl_cop *ops;
	size_t n_ops;
};

/* Loads a spec from YAML text. 0, or -1 with a message in err. */
int tl_cspec_load(struct tl_cspec *spec, const char *text, size_t len, char *err, size_t errlen);
/* The embedded spec, loaded once (not thread-safe on the first call); NULL on error. */
const struct tl_cspec *tl_cspec_builtin(char *err, size_t errlen);
void tl_cspec_free(struct tl_cspec *spec);
const struct tl_cop *tl_cspec_op(const struct tl_cspec *spec, const char *name);
const struct tl_cfield *tl_cfield_find(const struct tl_cfield *fields, size_t n, const char *name);

/* A validated value. Maps have one child per spec field (in spec order), present or not. */
struct tl_cval {
	const struct tl_cfield *f;
	bool present;
	int64_t i;                     /* integer */
	bool b;                        /* boolean */
	char *s;                       /* string, enum */
	uint8_t key[TL_KEY_LEN];       /* key */
	struct tl_sockaddr ep;         /* endpoint */
	struct tl_prefix *prefixes;    /* prefix_list */
	size_t n_prefixes;
	struct tl_cval *sub;           /* map: parallel to f->fields */
	size_t n_sub;
};

struct tl_creq {
	const struct tl_cop *op;
	struct tl_cval args;           /* map of op->args */
};

/* Where and why a request was refused. */
struct tl_cerr {
	char field[160];
	char message[320];
};

/* Parses one request document and validates it against spec. 0 with req filled (free with
 * tl_creq_free), or -1 with err filled and req empty. err->field names the value at fault. */
int tl_creq_parse(const struct tl_cspec *spec, const char *text, size_t len, struct tl_creq *req,
		  struct tl_cerr *err);
void tl_creq_free(struct tl_creq *req);
/* The child of a map value by field name (NULL if the spec has no such field). */
const struct tl_cval *tl_cval_get(const struct tl_cval *map, const char *name);
/* Present child or NULL. */
const struct tl_cval *tl_cval_has(const struct tl_cval *map, const char *name);

/* ---- growable text buffer and YAML writer ---------------------------------------------- */

struct tl_ybuf {
	char *p;
	size_t len, cap;
	bool oom;
};

void tl_ybuf_add(struct tl_ybuf *b, const void *data, size_t len);
void tl_ybuf_free(struct tl_ybuf *b);     /* wipes */

/* Block-style YAML with explicit document start and end ("---" ... "..."). Scalars that
 * would read back as another type (numbers, booleans, null) are quoted when written as
 * strings. Errors are sticky: check tl_yw_finish. */
struct tl_yw {
	yaml_emitter_t em;
	struct tl_ybuf *out;
	bool failed;
};

void tl_yw_begin(struct tl_yw *w, struct tl_ybuf *out);
int tl_yw_finish(struct tl_yw *w);        /* ends the document; 0 or -1 */
void tl_yw_map(struct tl_yw *w);
void tl_yw_flow_map(struct tl_yw *w);
void tl_yw_seq(struct tl_yw *w);
void tl_yw_flow_seq(struct tl_yw *w);
void tl_yw_end_map(struct tl_yw *w);
void tl_yw_end_seq(struct tl_yw *w);
void tl_yw_key(struct tl_yw *w, const char *key);
void tl_yw_str(struct tl_yw *w, const char *v);
void tl_yw_plain(struct tl_yw *w, const char *v);   /* as is, unquoted if YAML allows */
void tl_yw_u64(struct tl_yw *w, uint64_t v);
void tl_yw_i64(struct tl_yw *w, int64_t v);
void tl_yw_bool(struct tl_yw *w, bool v);
void tl_yw_num(struct tl_yw *w, double v);
void tl_yw_key_b64(struct tl_yw *w, const uint8_t key[TL_KEY_LEN]);
/* key: value shortcuts */
void tl_yw_kstr(struct tl_yw *w, const char *k, const char *v);
void tl_yw_ku64(struct tl_yw *w, const char *k, uint64_t v);
void tl_yw_kbool(struct tl_yw *w, const char *k, bool v);

/* An error reply document: status error, op (if known), error.field, error.message. */
void tl_ctl_error_reply(struct tl_ybuf *out, const char *op, const char *field, const char *message);

/* How a plain scalar reads: JSON-compatible integers and numbers, true/false, null/~/empty;
 * anything else is a string. The writer quotes strings that would read as another kind. */
enum tl_ykind { TL_YK_STRING, TL_YK_INT, TL_YK_NUMBER, TL_YK_BOOL, TL_YK_NULL };
enum tl_ykind tl_yaml_plain_kind(const char *s);

#endif
