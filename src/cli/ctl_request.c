/* tunlessctl: a request document built from ARG=VALUE arguments and checked with the spec
 * (the validator the daemon runs), and its round trip over the control socket. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/ctl.h"

#define CTL_TIMEOUT_S 30
#define CTL_MAX_ARGS 64

/* ---- request building from ARG=VALUE ----------------------------------------------------------- */

struct anode {
	const char *name;                 /* points into argv */
	size_t name_len;
	const struct tl_api_field *f;        /* NULL: not in the spec (the validator says so) */
	const char *value;
	struct anode *kids[CTL_MAX_ARGS];
	size_t n_kids;
};

static struct anode g_nodes[4 * CTL_MAX_ARGS];
static size_t g_n_nodes;

static struct anode *node_child(struct anode *n, const char *name, size_t len, const struct tl_api_field *fields,
				size_t nf)
{
	char key[128];
	struct anode *c;

	for (size_t i = 0; i < n->n_kids; i++)
		if (n->kids[i]->name_len == len && !memcmp(n->kids[i]->name, name, len))
			return n->kids[i];
	if (n->n_kids == CTL_MAX_ARGS || g_n_nodes == sizeof(g_nodes) / sizeof(g_nodes[0]) || len >= sizeof(key))
		return NULL;
	c = &g_nodes[g_n_nodes++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->name_len = len;
	snprintf(key, sizeof(key), "%.*s", (int)len, name);
	c->f = fields ? tl_api_field_find(fields, nf, key) : NULL;
	n->kids[n->n_kids++] = c;
	return c;
}

/* Adds "a.b.c=value" under root. 0, or a usage error. */
static int arg_add(struct anode *root, const struct tl_api_op *op, const char *arg)
{
	const char *eq = strchr(arg, '='), *p = arg;
	const struct tl_api_field *fields = op->args;
	size_t nf = op->n_args;
	struct anode *n = root;

	if (!eq || eq == arg)
		return ctl_fail(CTL_USAGE, "argument '%s' is not ARG=VALUE (see tunlessctl help %s)", arg, op->name);
	for (;;) {
		const char *dot = memchr(p, '.', (size_t)(eq - p));
		size_t len = (size_t)((dot ? dot : eq) - p);

		n = node_child(n, p, len, fields, nf);
		if (!n)
			return ctl_fail(CTL_USAGE, "too many arguments");
		if (!dot)
			break;
		if (n->value)
			return ctl_fail(CTL_USAGE, "%.*s: given both as a value and with fields", (int)len, p);
		fields = n->f && n->f->type == TL_API_MAP ? n->f->fields : NULL;
		nf = n->f ? n->f->n_fields : 0;
		p = dot + 1;
	}
	if (n->value || n->n_kids)
		return ctl_fail(CTL_USAGE, "%.*s: given twice", (int)(eq - arg), arg);
	n->value = eq + 1;
	return 0;
}

static void emit_prefixes(struct tl_yaml_writer *w, const char *v)
{
	tl_yaml_flow_seq(w);
	while (*v) {
		const char *comma = strchr(v, ',');
		size_t len = comma ? (size_t)(comma - v) : strlen(v);
		char item[128];

		snprintf(item, sizeof(item), "%.*s", (int)(len < sizeof(item) ? len : sizeof(item) - 1), v);
		tl_yaml_str(w, item);
		v += len + (comma != NULL);
	}
	tl_yaml_end_seq(w);
}

static void emit_node(struct tl_yaml_writer *w, const struct anode *n)
{
	char key[128];

	if (n->n_kids) {
		tl_yaml_map(w);
		for (size_t i = 0; i < n->n_kids; i++) {
			snprintf(key, sizeof(key), "%.*s", (int)n->kids[i]->name_len, n->kids[i]->name);
			tl_yaml_key(w, key);
			emit_node(w, n->kids[i]);
		}
		tl_yaml_end_map(w);
		return;
	}
	if (!n->f || n->f->type == TL_API_INTEGER || n->f->type == TL_API_BOOLEAN || n->f->type == TL_API_MAP)
		tl_yaml_plain(w, n->value);
	else if (n->f->type == TL_API_PREFIX_LIST)
		emit_prefixes(w, n->value);
	else
		tl_yaml_str(w, n->value);
}

/* The request document for op and its ARG=VALUE list, checked with the spec. */
int ctl_request_build(const struct tl_api_spec *spec, const struct tl_api_op *op, int argc, char **argv, struct tl_buf *out)
{
	struct anode root = { 0 };
	struct tl_api_request req;
	struct tl_api_error e;
	struct tl_yaml_writer w;
	int rc;

	g_n_nodes = 0;
	for (int i = 0; i < argc; i++)
		if ((rc = arg_add(&root, op, argv[i])) != 0)
			return rc;
	tl_yaml_begin(&w, out);
	tl_yaml_map(&w);
	tl_yaml_key_str(&w, "op", op->name);
	if (root.n_kids) {
		tl_yaml_key(&w, "args");
		emit_node(&w, &root);
	}
	tl_yaml_end_map(&w);
	if (tl_yaml_finish(&w) < 0)
		return ctl_fail(CTL_USAGE, "cannot write the request (argument not valid UTF-8?)");
	if (tl_api_request_parse(spec, out->p, out->len, &req, &e) < 0) {
		const char *f = strncmp(e.field, "args.", 5) ? e.field : e.field + 5;

		return ctl_fail(CTL_USAGE, "%s: %s (see tunlessctl help %s)", f, e.message, op->name);
	}
	tl_api_request_free(&req);
	return 0;
}

/* ---- the socket --------------------------------------------------------------------------------- */

static bool reply_complete(const struct tl_buf *b)
{
	return b->len >= 4 && !memcmp(b->p + b->len - 4, "...\n", 4) &&
	       (b->len == 4 || b->p[b->len - 5] == '\n');
}

/* Sends one request and reads its reply. 0, or CTL_NOCONN with a message printed. */
int ctl_call(const char *path, const struct tl_buf *req, struct tl_buf *reply)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CTL_TIMEOUT_S };
	size_t off = 0;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return ctl_fail(CTL_NOCONN, "%s: socket path too long", path);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return ctl_fail(CTL_NOCONN, "cannot connect to %s: %s (is tunlessd running?)", path, strerror(err));
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (off < req->len) {
		ssize_t n = send(fd, req->p + off, req->len - off, MSG_NOSIGNAL);

		if (n <= 0) {
			close(fd);
			return ctl_fail(CTL_NOCONN, "%s: send: %s", path, strerror(errno));
		}
		off += (size_t)n;
	}
	while (!reply_complete(reply)) {
		char buf[65536];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0) {
			close(fd);
			return ctl_fail(CTL_NOCONN, "%s: %s before the reply was complete", path,
				    n == 0 ? "connection closed" : strerror(errno));
		}
		tl_buf_add(reply, buf, (size_t)n);
		if (reply->oom) {
			close(fd);
			return ctl_fail(CTL_NOCONN, "out of memory");
		}
	}
	close(fd);
	return 0;
}
