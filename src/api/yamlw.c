/* YAML writing for the control API (libyaml emitter): requests built by tunlessctl and
 * replies built by tunlessd. */
#include "api/yamlw.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- plain scalar kinds -------------------------------------------------------------------- */

static const char *digits(const char *s)
{
	while (*s >= '0' && *s <= '9')
		s++;
	return s;
}

/* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? */
static enum tl_ykind number_kind(const char *s)
{
	const char *p = s + (*s == '-');
	bool frac = false;

	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p = digits(p);
	else
		return TL_YK_STRING;
	if (*p == '.') {
		const char *q = digits(p + 1);

		if (q == p + 1)
			return TL_YK_STRING;
		p = q;
		frac = true;
	}
	if (*p == 'e' || *p == 'E') {
		const char *q;

		p += 1 + (p[1] == '+' || p[1] == '-');
		q = digits(p);
		if (q == p)
			return TL_YK_STRING;
		p = q;
		frac = true;
	}
	if (*p)
		return TL_YK_STRING;
	return frac ? TL_YK_NUMBER : TL_YK_INT;
}

enum tl_ykind tl_yaml_plain_kind(const char *s)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
	static const char *const bools[] = { "true", "True", "TRUE", "false", "False", "FALSE" };
	/* YAML 1.1 booleans and special floats other readers would take as such */
	static const char *const other[] = { "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON",
					     "off", "Off", "OFF", "y", "Y", "n", "N", ".inf", ".Inf",
					     ".INF", "-.inf", ".nan", ".NaN", ".NAN" };

	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (!strcmp(s, nulls[i]))
			return TL_YK_NULL;
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		if (!strcmp(s, bools[i]))
			return TL_YK_BOOL;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (!strcmp(s, other[i]))
			return TL_YK_NUMBER;   /* not a string to everyone: quote it */
	return number_kind(s);
}

/* ---- writer -------------------------------------------------------------------------------- */

static int yw_out(void *data, unsigned char *buffer, size_t size)
{
	struct tl_buf *b = data;

	tl_buf_add(b, buffer, size);
	return !b->oom;
}

static void yw_emit(struct tl_yaml_writer *w, yaml_event_t *ev, int ok)
{
	if (!ok) {
		w->failed = true;
		return;
	}
	if (w->failed) {
		yaml_event_delete(ev);
		return;
	}
	if (!yaml_emitter_emit(&w->em, ev))
		w->failed = true;
}

void tl_yaml_begin(struct tl_yaml_writer *w, struct tl_buf *out)
{
	yaml_event_t ev;

	memset(w, 0, sizeof(*w));
	w->out = out;
	if (!yaml_emitter_initialize(&w->em)) {
		w->failed = true;
		return;
	}
	yaml_emitter_set_output(&w->em, yw_out, out);
	yaml_emitter_set_unicode(&w->em, 1);
	yaml_emitter_set_width(&w->em, -1);
	yaml_emitter_set_indent(&w->em, 2);
	yw_emit(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	yw_emit(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
}

int tl_yaml_finish(struct tl_yaml_writer *w)
{
	yaml_event_t ev;

	yw_emit(w, &ev, yaml_document_end_event_initialize(&ev, 0));
	yw_emit(w, &ev, yaml_stream_end_event_initialize(&ev));
	if (!w->failed && !yaml_emitter_flush(&w->em))
		w->failed = true;
	yaml_emitter_delete(&w->em);
	return w->failed || w->out->oom ? -1 : 0;
}

static void yw_map(struct tl_yaml_writer *w, yaml_mapping_style_t style)
{
	yaml_event_t ev;

	yw_emit(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, style));
}

static void yw_seq(struct tl_yaml_writer *w, yaml_sequence_style_t style)
{
	yaml_event_t ev;

	yw_emit(w, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, style));
}

void tl_yaml_map(struct tl_yaml_writer *w) { yw_map(w, YAML_BLOCK_MAPPING_STYLE); }
void tl_yaml_flow_map(struct tl_yaml_writer *w) { yw_map(w, YAML_FLOW_MAPPING_STYLE); }
void tl_yaml_seq(struct tl_yaml_writer *w) { yw_seq(w, YAML_BLOCK_SEQUENCE_STYLE); }
void tl_yaml_flow_seq(struct tl_yaml_writer *w) { yw_seq(w, YAML_FLOW_SEQUENCE_STYLE); }

void tl_yaml_end_map(struct tl_yaml_writer *w)
{
	yaml_event_t ev;

	yw_emit(w, &ev, yaml_mapping_end_event_initialize(&ev));
}

void tl_yaml_end_seq(struct tl_yaml_writer *w)
{
	yaml_event_t ev;

	yw_emit(w, &ev, yaml_sequence_end_event_initialize(&ev));
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	uint32_t cp;

	if (n <= 1)
		return n;
	cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* libyaml refuses invalid UTF-8: such bytes (e.g. a multi-byte character cut short in an
 * echoed value) are written as '?'. */
static void yw_scalar(struct tl_yaml_writer *w, const char *v, yaml_scalar_style_t style)
{
	size_t len = strlen(v), i = 0, n;
	char *fixed = NULL;
	yaml_event_t ev;

	while (i < len && (n = utf8_len((const unsigned char *)v + i)))
		i += n;
	if (i < len) {
		fixed = strdup(v);
		if (!fixed) {
			w->failed = true;
			return;
		}
		for (i = 0; i < len; i += n)
			if (!(n = utf8_len((unsigned char *)fixed + i)))
				fixed[i] = '?', n = 1;
		v = fixed;
	}
	yw_emit(w, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v, (int)len, 1, 1, style));
	free(fixed);
}

void tl_yaml_key(struct tl_yaml_writer *w, const char *key)
{
	yw_scalar(w, key, YAML_ANY_SCALAR_STYLE);
}

void tl_yaml_str(struct tl_yaml_writer *w, const char *v)
{
	yw_scalar(w, v, tl_yaml_plain_kind(v) == TL_YK_STRING ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

void tl_yaml_plain(struct tl_yaml_writer *w, const char *v)
{
	yw_scalar(w, v, YAML_ANY_SCALAR_STYLE);
}

void tl_yaml_u64(struct tl_yaml_writer *w, uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	tl_yaml_plain(w, s);
}

void tl_yaml_i64(struct tl_yaml_writer *w, int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	tl_yaml_plain(w, s);
}

void tl_yaml_bool(struct tl_yaml_writer *w, bool v)
{
	tl_yaml_plain(w, v ? "true" : "false");
}

void tl_yaml_num(struct tl_yaml_writer *w, double v)
{
	char s[32];

	snprintf(s, sizeof(s), "%.1f", v);
	tl_yaml_plain(w, s);
}

void tl_yaml_b64(struct tl_yaml_writer *w, const uint8_t key[TL_KEY_LEN])
{
	char b64[45];

	tl_key_to_base64(b64, key);
	tl_yaml_str(w, b64);
}

void tl_yaml_key_str(struct tl_yaml_writer *w, const char *k, const char *v)
{
	tl_yaml_key(w, k);
	tl_yaml_str(w, v);
}

void tl_yaml_key_u64(struct tl_yaml_writer *w, const char *k, uint64_t v)
{
	tl_yaml_key(w, k);
	tl_yaml_u64(w, v);
}

void tl_yaml_key_bool(struct tl_yaml_writer *w, const char *k, bool v)
{
	tl_yaml_key(w, k);
	tl_yaml_bool(w, v);
}

#define YW_STR_(x) #x
#define YW_STR(x) YW_STR_(x)

void tl_api_reply_head(struct tl_yaml_writer *w, const char *status, const char *op)
{
	tl_yaml_key_str(w, "status", status);
	tl_yaml_key_u64(w, "api_version", TL_API_VERSION);
	if (op)
		tl_yaml_key_str(w, "op", op);
}

void tl_api_error_reply(struct tl_buf *out, const char *op, const char *field, const char *message)
{
	static const char oom[] = "---\nstatus: error\napi_version: " YW_STR(TL_API_VERSION)
				  "\nerror:\n  field: (request)\n  message: out of memory\n...\n";
	struct tl_yaml_writer w;

	tl_yaml_begin(&w, out);
	tl_yaml_map(&w);
	tl_api_reply_head(&w, "error", op);
	tl_yaml_key(&w, "error");
	tl_yaml_map(&w);
	tl_yaml_key_str(&w, "field", field);
	tl_yaml_key_str(&w, "message", message);
	tl_yaml_end_map(&w);
	tl_yaml_end_map(&w);
	if (tl_yaml_finish(&w) == 0)
		return;
	tl_buf_free(out);      /* out of memory: a fixed reply rather than none */
	tl_buf_add(out, oom, sizeof(oom) - 1);
}

void tl_yaml_aqm(struct tl_yaml_writer *w, const struct tl_aqm_params *p)
{
	tl_yaml_map(w);
	tl_yaml_key_u64(w, "target_us", p->target_us);
	tl_yaml_key_u64(w, "interval_us", p->interval_us);
	tl_yaml_key_u64(w, "quantum", p->quantum);
	tl_yaml_key_u64(w, "flows", p->flows);
	tl_yaml_key_u64(w, "limit", p->limit);
	tl_yaml_key_u64(w, "memory_limit", p->memory_limit);
	tl_yaml_key_bool(w, "ecn", p->ecn);
	tl_yaml_key_u64(w, "rtt_us", p->rtt_us);
	tl_yaml_key_u64(w, "l4s_us", p->l4s_us);
	tl_yaml_key_u64(w, "flow_rtt_pct", p->flow_rtt_pct);
	tl_yaml_key_u64(w, "quantum_fast", p->quantum_fast);
	tl_yaml_end_map(w);
}

void tl_yaml_shaper(struct tl_yaml_writer *w, const struct tl_shaper_params *p)
{
	tl_yaml_map(w);
	tl_yaml_key_u64(w, "rate_bps", p->rate_bps);
	tl_yaml_key_u64(w, "burst_bytes", p->burst_bytes);
	tl_yaml_end_map(w);
}
