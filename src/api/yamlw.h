/* YAML writing for the control API (libyaml emitter): requests built by tunlessctl, replies
 * built by tunlessd. */
#ifndef TL_API_YAMLW_H
#define TL_API_YAMLW_H

#include <stdbool.h>
#include <stdint.h>

#include <yaml.h>

#include "common/buf.h"
#include "common/key.h"
#include "dataplane/qparams.h"

/* Block-style YAML with explicit document start and end ("---" ... "..."). Scalars that
 * would read back as another type (numbers, booleans, null) are quoted when written as
 * strings. Errors are sticky: check tl_yaml_finish. */
struct tl_yaml_writer {
	yaml_emitter_t em;
	struct tl_buf *out;
	bool failed;
};

void tl_yaml_begin(struct tl_yaml_writer *w, struct tl_buf *out);
int tl_yaml_finish(struct tl_yaml_writer *w);        /* ends the document; 0 or -1 */
void tl_yaml_map(struct tl_yaml_writer *w);
void tl_yaml_flow_map(struct tl_yaml_writer *w);
void tl_yaml_seq(struct tl_yaml_writer *w);
void tl_yaml_flow_seq(struct tl_yaml_writer *w);
void tl_yaml_end_map(struct tl_yaml_writer *w);
void tl_yaml_end_seq(struct tl_yaml_writer *w);
void tl_yaml_key(struct tl_yaml_writer *w, const char *key);
void tl_yaml_str(struct tl_yaml_writer *w, const char *v);
void tl_yaml_plain(struct tl_yaml_writer *w, const char *v);   /* as is, unquoted if YAML allows */
void tl_yaml_u64(struct tl_yaml_writer *w, uint64_t v);
void tl_yaml_i64(struct tl_yaml_writer *w, int64_t v);
void tl_yaml_bool(struct tl_yaml_writer *w, bool v);
void tl_yaml_num(struct tl_yaml_writer *w, double v);
void tl_yaml_b64(struct tl_yaml_writer *w, const uint8_t key[TL_KEY_LEN]);
/* key: value shortcuts */
void tl_yaml_key_str(struct tl_yaml_writer *w, const char *k, const char *v);
void tl_yaml_key_u64(struct tl_yaml_writer *w, const char *k, uint64_t v);
void tl_yaml_key_bool(struct tl_yaml_writer *w, const char *k, bool v);

/* AQM and shaper parameters as maps (set's reply). */
void tl_yaml_aqm(struct tl_yaml_writer *w, const struct tl_aqm_params *p);
void tl_yaml_shaper(struct tl_yaml_writer *w, const struct tl_shaper_params *p);

/* The control API's version: src/api/ctlapi.yaml's `version`, in every reply as api_version
 * (unit readmodel checks they agree). */
#define TL_API_VERSION 1

/* The head of a reply (in its mapping): status, api_version, op (if known). */
void tl_api_reply_head(struct tl_yaml_writer *w, const char *status, const char *op);

/* An error reply document: status error, api_version, op (if known), error.field,
 * error.message. */
void tl_api_error_reply(struct tl_buf *out, const char *op, const char *field, const char *message);

/* How a plain scalar reads: JSON-compatible integers and numbers, true/false, null/~/empty;
 * anything else is a string. The writer quotes strings that would read as another kind. */
enum tl_ykind { TL_YK_STRING, TL_YK_INT, TL_YK_NUMBER, TL_YK_BOOL, TL_YK_NULL };
enum tl_ykind tl_yaml_plain_kind(const char *s);

#endif
