/* The configuration document itself (config_priv.h): its path -> line index, built with
 * libyaml's event parser because libcyaml gives no value positions (the same walk reports
 * syntax errors); the one-line errors and warnings; libcyaml's allocator, which wipes what
 * it frees, and its messages turned into "<file>:<line>: <field path>: <why>". */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <yaml.h>

#include "config/config_priv.h"

/* ---- the one-line error --------------------------------------------------------------- */

/* s with a control character (a key or a value may hold a line end) written as \n, \t or
 * \xNN, so that an error stays one line; cut to fit len. */
static void tl_cfg_one_line(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 5 <= len; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '\n' || ch == '\t')
			o += (size_t)snprintf(out + o, len - o, "\\%c", ch == '\n' ? 'n' : 't');
		else if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(out + o, len - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
}

/* Writes the error line (first failure wins) and returns -1. */
int tl_cfg_fail_at(struct tl_cfg_ctx *c, unsigned line, const char *path, const char *fmt, ...)
{
	char why[512], where[TL_CFG_PATH_MAX], what[512];
	va_list ap;

	if (c->failed)
		return -1;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	tl_cfg_one_line(where, sizeof(where), path[0] ? path : "(document)");
	tl_cfg_one_line(what, sizeof(what), why);
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s:%u: %s: %s", c->file, line, where, what);
	return -1;
}

/* Appends "<file>:<line>: <field>: <why>\n" to the configuration's warnings (what is cut
 * when they are full is lost: the first ones matter most). */
void tl_cfg_warn(struct tl_cfg_ctx *c, const char *path, const char *fmt, ...)
{
	struct tl_config *cfg = c->cfg;
	size_t used = strlen(cfg->warnings);
	char why[512], where[TL_CFG_PATH_MAX], what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	tl_cfg_one_line(where, sizeof(where), path);
	tl_cfg_one_line(what, sizeof(what), why);
	snprintf(cfg->warnings + used, sizeof(cfg->warnings) - used, "%s:%u: %s: %s\n", c->file,
		 tl_cfg_line(c, path), where, what);
}

/* ---- path -> line index, from libyaml's event parser ---------------------------------- */

static int tl_cfg_index_add(struct tl_cfg_index *ix, const char *path, unsigned line)
{
	struct tl_cfg_node *n;

	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 64;
		struct tl_cfg_node *v = realloc(ix->nodes, cap * sizeof(*v));

		if (!v)
			return -1;
		ix->nodes = v;
		ix->cap = cap;
	}
	n = &ix->nodes[ix->n];
	memset(n, 0, sizeof(*n));
	n->path = strdup(path);
	if (!n->path)
		return -1;
	n->line = line;
	n->seq = ix->n++;
	return 0;
}

void tl_cfg_index_free(struct tl_cfg_index *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		if (ix->nodes[i].value)
			sodium_memzero(ix->nodes[i].value, strlen(ix->nodes[i].value));
		free(ix->nodes[i].value);
		free(ix->nodes[i].path);
	}
	free(ix->nodes);
	memset(ix, 0, sizeof(*ix));
}

static int tl_cfg_node_cmp(const void *a, const void *b)
{
	const struct tl_cfg_node *x = a, *y = b;
	int r = strcmp(x->path, y->path);

	return r ? r : (x->seq > y->seq) - (x->seq < y->seq);
}

const struct tl_cfg_node *tl_cfg_lookup(const struct tl_cfg_ctx *c, const char *path)
{
	size_t lo = 0, hi = c->ix.n;

	while (lo < hi) {   /* first node whose path is >= path */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(c->ix.nodes[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ix.n && !strcmp(c->ix.nodes[lo].path, path) ? &c->ix.nodes[lo] : NULL;
}

/* Line of path, or of its nearest ancestor present in the document. */
unsigned tl_cfg_line(const struct tl_cfg_ctx *c, const char *path)
{
	char buf[TL_CFG_PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (;;) {
		const struct tl_cfg_node *n = tl_cfg_lookup(c, buf);
		char *cut = strrchr(buf, '.');
		char *bracket = strrchr(buf, '[');

		if (n)
			return n->line;
		if (!buf[0])
			return 1;
		if (!cut || (bracket && bracket > cut))
			cut = bracket;
		if (!cut)
			cut = buf;
		*cut = '\0';
	}
}

struct tl_cfg_walk {
	struct tl_cfg_ctx *c;
	yaml_parser_t parser;
	char fail_path[TL_CFG_PATH_MAX];
};

static void tl_cfg_event_delete(yaml_event_t *ev)
{
	if (ev->type == YAML_SCALAR_EVENT && ev->data.scalar.value)
		sodium_memzero(ev->data.scalar.value, ev->data.scalar.length);
	yaml_event_delete(ev);
}

static int tl_cfg_next(struct tl_cfg_walk *w, yaml_event_t *ev, const char *path)
{
	if (yaml_parser_parse(&w->parser, ev))
		return 0;
	snprintf(w->fail_path, sizeof(w->fail_path), "%s", path);
	if (w->parser.context)
		return tl_cfg_fail_at(w->c, (unsigned)w->parser.problem_mark.line + 1, path,
				      "invalid YAML: %s (%s on line %u)",
				      w->parser.problem ? w->parser.problem : "error",
				      w->parser.context, (unsigned)w->parser.context_mark.line + 1);
	return tl_cfg_fail_at(w->c, (unsigned)w->parser.problem_mark.line + 1, path,
			      "invalid YAML: %s", w->parser.problem ? w->parser.problem : "error");
}

static int tl_cfg_walk_node(struct tl_cfg_walk *w, yaml_event_t *ev, const char *path,
			    bool record, unsigned depth);

static char *tl_cfg_child(const char *parent, const char *key, size_t idx)
{
	char *out = NULL;
	int r;

	if (key)
		r = asprintf(&out, "%s%s%.100s", parent, parent[0] ? "." : "", key);
	else
		r = asprintf(&out, "%s[%zu]", parent, idx);
	return r < 0 ? NULL : out;
}

/* Walks one child of a mapping (key event given) or of a sequence (key NULL). */
static int tl_cfg_walk_child(struct tl_cfg_walk *w, const char *path, const yaml_event_t *key,
			     size_t idx, unsigned depth)
{
	const char *k = NULL;
	yaml_event_t ev;
	char *child;
	int rc;

	if (key)
		k = key->type == YAML_SCALAR_EVENT ? (const char *)key->data.scalar.value : "?";
	child = tl_cfg_child(path, k, idx);
	if (!child)
		return tl_cfg_fail_at(w->c, 0, path, "out of memory");
	rc = -1;
	if (key && tl_cfg_index_add(&w->c->ix, child, (unsigned)key->start_mark.line + 1) < 0)
		tl_cfg_fail_at(w->c, 0, path, "out of memory");
	else if (tl_cfg_next(w, &ev, child) == 0) {
		rc = tl_cfg_walk_node(w, &ev, child, !key, depth + 1);
		tl_cfg_event_delete(&ev);
	}
	free(child);
	return rc;
}

static int tl_cfg_walk_mapping(struct tl_cfg_walk *w, const char *path, unsigned depth)
{
	for (;;) {
		yaml_event_t key;
		int rc;

		if (tl_cfg_next(w, &key, path) < 0)
			return -1;
		if (key.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&key);
			return 0;
		}
		rc = key.type == YAML_SCALAR_EVENT ? 0 :
			tl_cfg_fail_at(w->c, (unsigned)key.start_mark.line + 1, path,
				       "mapping keys must be plain strings");
		if (rc == 0)
			rc = tl_cfg_walk_child(w, path, &key, 0, depth);
		tl_cfg_event_delete(&key);
		if (rc < 0)
			return -1;
	}
}

static int tl_cfg_walk_sequence(struct tl_cfg_walk *w, const char *path, unsigned depth)
{
	for (size_t i = 0;; i++) {
		yaml_event_t ev;
		char *child = tl_cfg_child(path, NULL, i);
		int rc = -1;

		if (!child)
			return tl_cfg_fail_at(w->c, 0, path, "out of memory");
		if (tl_cfg_next(w, &ev, child) == 0) {
			rc = ev.type == YAML_SEQUENCE_END_EVENT ? 1 :
				tl_cfg_walk_node(w, &ev, child, true, depth + 1);
			tl_cfg_event_delete(&ev);
		}
		free(child);
		if (rc != 0)
			return rc > 0 ? 0 : -1;
	}
}

static int tl_cfg_walk_node(struct tl_cfg_walk *w, yaml_event_t *ev, const char *path,
			    bool record, unsigned depth)
{
	unsigned line = (unsigned)ev->start_mark.line + 1;

	if (depth > TL_CFG_MAX_DEPTH)
		return tl_cfg_fail_at(w->c, line, path, "nested deeper than %d levels",
				      TL_CFG_MAX_DEPTH);
	if (ev->type == YAML_ALIAS_EVENT)
		return tl_cfg_fail_at(w->c, line, path, "YAML aliases are not supported");
	if (record && tl_cfg_index_add(&w->c->ix, path, line) < 0)
		return tl_cfg_fail_at(w->c, line, path, "out of memory");
	if (ev->type == YAML_SCALAR_EVENT) {
		struct tl_cfg_node *n = &w->c->ix.nodes[w->c->ix.n - 1];

		n->value = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
		return n->value ? 0 : tl_cfg_fail_at(w->c, line, path, "out of memory");
	}
	if (ev->type == YAML_MAPPING_START_EVENT)
		return tl_cfg_walk_mapping(w, path, depth);
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		return tl_cfg_walk_sequence(w, path, depth);
	return tl_cfg_fail_at(w->c, line, path, "unexpected YAML event");
}

/* Walks the first document; also the syntax check (libcyaml never sees invalid YAML). */
int tl_cfg_index_build(struct tl_cfg_ctx *c, const char *text, size_t len)
{
	struct tl_cfg_walk w = { .c = c };
	yaml_event_t ev;
	int rc = 0;

	if (!yaml_parser_initialize(&w.parser))
		return tl_cfg_fail_at(c, 0, "(file)", "out of memory");
	yaml_parser_set_input_string(&w.parser, (const unsigned char *)text, len);
	for (bool done = false; !done && rc == 0;) {
		rc = tl_cfg_next(&w, &ev, "");
		if (rc < 0)
			break;
		if (ev.type == YAML_STREAM_END_EVENT || ev.type == YAML_DOCUMENT_END_EVENT)
			done = true;
		else if (ev.type != YAML_STREAM_START_EVENT && ev.type != YAML_DOCUMENT_START_EVENT)
			rc = tl_cfg_walk_node(&w, &ev, "", true, 0);
		tl_cfg_event_delete(&ev);
	}
	if (w.parser.buffer.start)
		sodium_memzero(w.parser.buffer.start,
			       (size_t)(w.parser.buffer.end - w.parser.buffer.start));
	yaml_parser_delete(&w.parser);
	if (rc == 0 && c->ix.n)
		qsort(c->ix.nodes, c->ix.n, sizeof(*c->ix.nodes), tl_cfg_node_cmp);
	return rc;
}

/* ---- libcyaml: memory that is wiped on free, errors captured into one line ------------- */

/* libcyaml grows a sequence one entry at a time: a block that must move gets twice the room
 * it needs, and a later growth within that room stays in place (a hub's 100 000 peers were
 * 100 000 copies of the whole list, 16 s). */
void *tl_cfg_mem(void *ctx, void *ptr, size_t size)
{
	void *fresh = NULL;
	size_t old = ptr ? malloc_usable_size(ptr) : 0;

	(void)ctx;
	if (ptr && size && size <= old)
		return ptr;
	if (size) {
		fresh = malloc(ptr ? 2 * size : size);
		if (!fresh)
			return NULL;
		if (ptr)
			memcpy(fresh, ptr, old < size ? old : size);
	}
	if (ptr) {
		sodium_memzero(ptr, old);
		free(ptr);
	}
	return fresh;
}

void tl_cfg_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args)
{
	struct tl_cfg_ctx *c = ctx;
	int n;

	if (level < CYAML_LOG_ERROR || c->log_len >= sizeof(c->log) - 1)
		return;
	n = vsnprintf(c->log + c->log_len, sizeof(c->log) - c->log_len, fmt, args);
	if (n > 0)
		c->log_len += (size_t)n < sizeof(c->log) - c->log_len
			? (size_t)n : sizeof(c->log) - c->log_len - 1;
}

/* Appends one backtrace frame ("  in mapping field 'x' (line: 3, ...)") to path. libcyaml
 * counts a sequence entry before reading it, so entry 'n' is index n - 1. */
static void tl_cfg_frame_to_path(char *path, size_t size, const char *frame, unsigned *line)
{
	const char *l = strstr(frame, "(line: ");
	char name[128];
	unsigned long entry;
	size_t len = strlen(path);

	if (l)
		*line = (unsigned)strtoul(l + 7, NULL, 10);
	if (sscanf(frame, "  in mapping field '%127[^']'", name) == 1)
		snprintf(path + len, size - len, "%s%s", len ? "." : "", name);
	else if (sscanf(frame, "  in sequence entry '%lu'", &entry) == 1)
		snprintf(path + len, size - len, "[%lu]", entry ? entry - 1 : 0);
}

/* Field path from the backtrace (innermost frame first in the log). For errors about a key
 * (unknown, missing, repeated) the innermost mapping frame names the previous field, not
 * the one at fault, so it is skipped. */
static unsigned tl_cfg_log_path(char *log, bool key_error, char *path, size_t size)
{
	char *frames[64];
	size_t n = 0, skip = 0;
	unsigned line = 1;

	path[0] = '\0';
	for (char *s = strtok(log, "\n"); s && n < 64; s = strtok(NULL, "\n"))
		if (!strncmp(s, "  in ", 5))
			frames[n++] = s;
	if (key_error && n && !strncmp(frames[0], "  in mapping field", 18))
		skip = 1;
	while (n-- > skip)
		tl_cfg_frame_to_path(path, size, frames[n], &line);
	return line;
}

static void tl_cfg_strip_nl(char *s)
{
	s[strcspn(s, "\n")] = '\0';
}

/* libcyaml's type and event names, as a user would say them. */
static const char *tl_cfg_type_word(const char *s)
{
	static const char *const words[][2] = {
		{ "MAPPING_START", "a mapping" }, { "SEQUENCE_START", "a list" },
		{ "SCALAR", "a single value" }, { "MAPPING", "a mapping" },
		{ "SEQUENCE", "a list" }, { "STRING", "a string" }, { "UINT", "an integer" },
		{ "INT", "an integer" }, { "BOOL", "true or false" }, { "FLOAT", "a number" },
		{ "ALIAS", "an alias" },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strncmp(s, words[i][0], strlen(words[i][0])))
			return words[i][1];
	return s;
}

/* "MAPPING, got event: SCALAR" -> "expected a mapping, got a single value". */
static void tl_cfg_wrong_type(const char *s, char *why, size_t wlen)
{
	const char *got = strstr(s, "got event: ");

	snprintf(why, wlen, "wrong type: expected %s, got %s", tl_cfg_type_word(s),
		 got ? tl_cfg_type_word(got + 11) : "something else");
}

/* Turns "Load: <message>" into a path suffix and a reason. */
static void tl_cfg_explain(const char *msg, char *path, size_t size, char *why, size_t wlen)
{
	char arg[256];
	size_t len = strlen(path);

	if (sscanf(msg, "Unexpected key: %255[^\n]", arg) == 1) {
		snprintf(path + len, size - len, "%s%s", len ? "." : "", arg);
		snprintf(why, wlen, "unknown key '%s'", arg);
	} else if (sscanf(msg, "Missing required mapping field: %255[^\n]", arg) == 1) {
		snprintf(path + len, size - len, "%s%s", len ? "." : "", arg);
		snprintf(why, wlen, "missing (required)");
	} else if (sscanf(msg, "Mapping field already seen: %255[^\n]", arg) == 1) {
		snprintf(path + len, size - len, "%s%s", len ? "." : "", arg);
		snprintf(why, wlen, "given twice");
	} else if (sscanf(msg, "Invalid INT value: %255[^\n]", arg) == 1) {
		snprintf(why, wlen, "%s is not an integer", arg);
	} else if (sscanf(msg, "Invalid uint64_t value: %255[^\n]", arg) == 1 ||
		   sscanf(msg, "Invalid UINT value: %255[^\n]", arg) == 1) {
		snprintf(why, wlen, "%s is not an unsigned 64-bit integer", arg);
	} else if (sscanf(msg, "Invalid FLOAT value: %255[^\n]", arg) == 1) {
		snprintf(why, wlen, "'%s' is not a number", arg);
	} else if (sscanf(msg, "Invalid BOOL value: %255[^\n]", arg) == 1) {
		snprintf(why, wlen, "%s is not a boolean (true/false)", arg);
	} else if (!strncmp(msg, "Expecting ", 10)) {
		tl_cfg_wrong_type(msg + 10, why, wlen);
	} else {
		snprintf(why, wlen, "%s", msg);
	}
}

static bool tl_cfg_key_error(const char *msg)
{
	return !strncmp(msg, "Unexpected key:", 15) || !strncmp(msg, "Missing required", 16) ||
	       !strncmp(msg, "Mapping field already seen:", 27);
}

/* One line from libcyaml's error log; line from the index when the path is known. */
int tl_cfg_cyaml_fail(struct tl_cfg_ctx *c, cyaml_err_t err)
{
	char path[TL_CFG_PATH_MAX], why[400], msg[300];
	char *load = strstr(c->log, "Load: ");
	unsigned line;

	if (!load)
		return tl_cfg_fail_at(c, 1, "", "%s", cyaml_strerror(err));
	snprintf(msg, sizeof(msg), "%s", load + 6);
	tl_cfg_strip_nl(msg);
	line = tl_cfg_log_path(c->log, tl_cfg_key_error(msg), path, sizeof(path));
	if (!strncmp(msg, "Missing required", 16)) {
		line = tl_cfg_line(c, path);
		tl_cfg_explain(msg, path, sizeof(path), why, sizeof(why));
	} else {
		tl_cfg_explain(msg, path, sizeof(path), why, sizeof(why));
		const struct tl_cfg_node *n = tl_cfg_lookup(c, path);

		/* a repeated key: point at its last occurrence */
		while (n && n + 1 < c->ix.nodes + c->ix.n && !strcmp(n[1].path, path))
			n++;
		if (n)
			line = n->line;
	}
	return tl_cfg_fail_at(c, line, path, "%s", why);
}
