/* The control API spec (src/api/ctlapi.yaml, embedded at build time) loaded into C
 * structures: operations, their arguments and replies, and the types they use. The request
 * validator (request.h), tunlessctl's arguments and help, and docs/control-api.md are built
 * on it. No DPDK, no sockets. */
#ifndef TL_API_SPEC_H
#define TL_API_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_CTL_MAX_REQUEST 65536     /* bytes of one request, terminator included */
#define TL_CTL_DIR "/run/tunless"

/* The spec text embedded in the binary (generated from ctlapi.yaml). */
extern const char tl_ctlapi_spec_text[];
extern const size_t tl_ctlapi_spec_len;

enum tl_api_type {
	TL_API_STRING,
	TL_API_INTEGER,
	TL_API_BOOLEAN,
	TL_API_KEY,
	TL_API_ENDPOINT,
	TL_API_PREFIX_LIST,
	TL_API_ENUM,
	TL_API_MAP,
	TL_API_NUMBER,      /* reply only */
	TL_API_LIST,        /* reply only */
	TL_API_COUNTERS,    /* reply only */
	TL_API_MAX
};

extern const char *const tl_api_type_names[TL_API_MAX];

/* What ctlapi.yaml says of one argument or reply field (loaded by libcyaml: absent optional
 * values are NULL or 0). */
struct tl_api_field {
	char *name;
	enum tl_api_type type;
	char *help;
	bool required;
	int64_t *min, *max;               /* integer: bounds, NULL = none */
	size_t max_len;                   /* string, 0 = no limit */
	char **values;                    /* enum */
	size_t n_values;
	struct tl_api_field *fields;      /* map, list of maps */
	size_t n_fields;
	enum tl_api_type *items;          /* list of scalars of this type; NULL = list of maps */
	char *read_model;                 /* reply: the read model section (api/stats_fields.h)
					   * whose fields follow the ones listed */
};

struct tl_api_op {
	char *name;
	char *help;
	struct tl_api_field *args;
	size_t n_args;
	struct tl_api_field *reply;
	size_t n_reply;
};

struct tl_api_type_doc {
	char *name;
	char *help;
};

struct tl_api_spec {
	char *title, *socket, *about, *framing, *request, *reply;
	unsigned version;
	struct tl_api_type_doc *types;
	size_t n_types;
	struct tl_api_op *ops;
	size_t n_ops;
};

/* Loads a spec from YAML text (a libcyaml schema, then the checks of what a schema cannot
 * say: types for replies only, enums without values, min above max, duplicate names). The
 * spec, or NULL with a message in err. */
struct tl_api_spec *tl_api_spec_load(const char *text, size_t len, char *err, size_t errlen);
/* The embedded spec, loaded once (not thread-safe on the first call); NULL on error. */
const struct tl_api_spec *tl_api_spec_builtin(char *err, size_t errlen);
void tl_api_spec_free(struct tl_api_spec *spec);
const struct tl_api_op *tl_api_spec_op(const struct tl_api_spec *spec, const char *name);
const struct tl_api_field *tl_api_field_find(const struct tl_api_field *fields, size_t n, const char *name);

#endif
