/* tunlessctl: the command-line client of the YAML control API (src/api/ctlapi.yaml).
 * Arguments are checked against the embedded spec before anything is sent (the same
 * validator the daemon runs); replies are printed as tables, as YAML or as JSON. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/ctl.h"
#include "cli/import.h"
#include "common/ydoc.h"

#define CTL_TIMEOUT_S 30
#define CTL_MAX_ARGS 64
#define WATCH_MAX_QUEUES 64
#define WATCH_MAX_DROPS 64
#define WATCH_MAX_WORKERS 64

enum out_mode { OUT_HUMAN, OUT_YAML, OUT_JSON };

static const struct tl_api_spec *g_spec;

static int __attribute__((format(printf, 2, 3))) fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("tunlessctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

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
		return fail(CTL_USAGE, "argument '%s' is not ARG=VALUE (see tunlessctl help %s)", arg, op->name);
	for (;;) {
		const char *dot = memchr(p, '.', (size_t)(eq - p));
		size_t len = (size_t)((dot ? dot : eq) - p);

		n = node_child(n, p, len, fields, nf);
		if (!n)
			return fail(CTL_USAGE, "too many arguments");
		if (!dot)
			break;
		if (n->value)
			return fail(CTL_USAGE, "%.*s: given both as a value and with fields", (int)len, p);
		fields = n->f && n->f->type == TL_API_MAP ? n->f->fields : NULL;
		nf = n->f ? n->f->n_fields : 0;
		p = dot + 1;
	}
	if (n->value || n->n_kids)
		return fail(CTL_USAGE, "%.*s: given twice", (int)(eq - arg), arg);
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
static int request_build(const struct tl_api_op *op, int argc, char **argv, struct tl_buf *out)
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
		return fail(CTL_USAGE, "cannot write the request (argument not valid UTF-8?)");
	if (tl_api_request_parse(g_spec, out->p, out->len, &req, &e) < 0) {
		const char *f = strncmp(e.field, "args.", 5) ? e.field : e.field + 5;

		return fail(CTL_USAGE, "%s: %s (see tunlessctl help %s)", f, e.message, op->name);
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
static int ctl_call(const char *path, const struct tl_buf *req, struct tl_buf *reply)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CTL_TIMEOUT_S };
	size_t off = 0;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return fail(CTL_NOCONN, "%s: socket path too long", path);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return fail(CTL_NOCONN, "cannot connect to %s: %s (is tunlessd running?)", path, strerror(err));
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (off < req->len) {
		ssize_t n = send(fd, req->p + off, req->len - off, MSG_NOSIGNAL);

		if (n <= 0) {
			close(fd);
			return fail(CTL_NOCONN, "%s: send: %s", path, strerror(errno));
		}
		off += (size_t)n;
	}
	while (!reply_complete(reply)) {
		char buf[65536];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0) {
			close(fd);
			return fail(CTL_NOCONN, "%s: %s before the reply was complete", path,
				    n == 0 ? "connection closed" : strerror(errno));
		}
		tl_buf_add(reply, buf, (size_t)n);
		if (reply->oom) {
			close(fd);
			return fail(CTL_NOCONN, "out of memory");
		}
	}
	close(fd);
	return 0;
}

/* ---- reply documents -------------------------------------------------------------------------- */

struct reply {
	yaml_document_t doc;
	yaml_node_t *root;
	bool ok;
};

static const char *ystr(yaml_document_t *d, yaml_node_t *n, const char *key, const char *def)
{
	const char *v = tl_ydoc_scalar(tl_ydoc_get(d, n, key));

	return v ? v : def;
}

static uint64_t yu64(yaml_document_t *d, yaml_node_t *n, const char *key)
{
	return strtoull(ystr(d, n, key, "0"), NULL, 10);
}

static int reply_parse(const struct tl_buf *text, struct reply *r)
{
	char why[160];

	memset(r, 0, sizeof(*r));
	if (!text->p || tl_ydoc_load(&r->doc, text->p, text->len, why, sizeof(why)) < 0)
		return -1;
	r->root = yaml_document_get_root_node(&r->doc);
	if (r->root->type != YAML_MAPPING_NODE) {
		tl_ydoc_delete(&r->doc);
		r->root = NULL;
		return -1;
	}
	r->ok = !strcmp(ystr(&r->doc, r->root, "status", ""), "ok");
	return 0;
}

/* ---- JSON ------------------------------------------------------------------------------------------ */

static void json_string(FILE *o, const char *s)
{
	fputc('"', o);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(o, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", o);
		else if (*p == '\t')
			fputs("\\t", o);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(o, "\\u%04x", *p);
		else
			fputc(*p, o);
	}
	fputc('"', o);
}

static void json_scalar(FILE *o, const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	bool plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;

	switch (plain ? tl_yaml_plain_kind(s) : TL_YK_STRING) {
	case TL_YK_INT:
	case TL_YK_NUMBER:
		if (strspn(s, "-0123456789.eE+") == strlen(s)) {
			fputs(s, o);
			return;
		}
		break;
	case TL_YK_BOOL:
		fputs(s[0] == 't' || s[0] == 'T' ? "true" : "false", o);
		return;
	case TL_YK_NULL:
		fputs("null", o);
		return;
	default:
		break;
	}
	json_string(o, s);
}

static void json_node(FILE *o, yaml_document_t *d, yaml_node_t *n, int depth)
{
	size_t cnt = tl_ydoc_len(n);

	if (!n || depth > 64) {
		fputs("null", o);
		return;
	}
	if (n->type == YAML_SCALAR_NODE) {
		json_scalar(o, n);
		return;
	}
	fputc(n->type == YAML_MAPPING_NODE ? '{' : '[', o);
	for (size_t i = 0; i < cnt; i++) {
		fprintf(o, "%s\n%*s", i ? "," : "", 2 * (depth + 1), "");
		if (n->type == YAML_MAPPING_NODE) {
			yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
			yaml_node_t *k = yaml_document_get_node(d, p->key);

			json_string(o, k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "");
			fputs(": ", o);
			json_node(o, d, yaml_document_get_node(d, p->value), depth + 1);
		} else {
			json_node(o, d, tl_ydoc_item(d, n, i), depth + 1);
		}
	}
	if (cnt)
		fprintf(o, "\n%*s", 2 * depth, "");
	fputc(n->type == YAML_MAPPING_NODE ? '}' : ']', o);
}

/* ---- human output ---------------------------------------------------------------------------------- */

static const char *human_bytes(char *buf, size_t len, double b)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", b, units[u]);
	return buf;
}

static const char *human_rate(char *buf, size_t len, double bits)
{
	static const char *const units[] = { "bit/s", "kbit/s", "Mbit/s", "Gbit/s" };
	int u = 0;

	while (bits >= 1000 && u < 3) {
		bits /= 1000;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bits, units[u]);
	return buf;
}

static void print_device(yaml_document_t *d, yaml_node_t *dev)
{
	uint64_t up = yu64(d, dev, "uptime_s");

	printf("device: %s (%s mode)\n  public key: %s\n  listening port: %s\n  mtu: %s, workers: %s, peers: %s\n"
	       "  up: %" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s\n",
	       ystr(d, dev, "name", "?"), ystr(d, dev, "mode", "?"), ystr(d, dev, "public_key", "?"),
	       ystr(d, dev, "listen_port", "?"), ystr(d, dev, "mtu", "?"), ystr(d, dev, "workers", "?"),
	       ystr(d, dev, "peers", "?"), up / 3600, up / 60 % 60, up % 60);
}

static void print_peer(yaml_document_t *d, yaml_node_t *p)
{
	yaml_node_t *aips = tl_ydoc_get(d, p, "allowed_ips");
	const char *name = ystr(d, p, "name", NULL);
	uint64_t hs = yu64(d, p, "last_handshake"), now = (uint64_t)time(NULL);
	char rx[32], tx[32];

	printf("\npeer: %s%s%s%s\n", ystr(d, p, "public_key", "?"), name ? " (" : "", name ? name : "", name ? ")" : "");
	printf("  endpoint: %s\n  allowed ips: ", ystr(d, p, "endpoint", "(none)"));
	for (size_t i = 0; i < tl_ydoc_len(aips); i++) {
		yaml_node_t *a = tl_ydoc_item(d, aips, i);

		printf("%s%s", i ? ", " : "", a->type == YAML_SCALAR_NODE ? (char *)a->data.scalar.value : "?");
	}
	printf("%s\n", tl_ydoc_len(aips) ? "" : "(none)");
	if (hs)
		printf("  latest handshake: %" PRIu64 " s ago (%s handshakes%s)\n", now > hs ? now - hs : 0,
		       ystr(d, p, "handshakes", "0"), strcmp(ystr(d, p, "session", ""), "true") ? ", no session" : "");
	else
		printf("  latest handshake: never\n");
	printf("  transfer: %s received (%s packets), %s sent (%s packets)\n",
	       human_bytes(rx, sizeof(rx), (double)yu64(d, p, "rx_bytes")), ystr(d, p, "rx_packets", "0"),
	       human_bytes(tx, sizeof(tx), (double)yu64(d, p, "tx_bytes")), ystr(d, p, "tx_packets", "0"));
	if (yu64(d, p, "persistent_keepalive"))
		printf("  persistent keepalive: every %s s\n", ystr(d, p, "persistent_keepalive", "?"));
}

static void print_ports(yaml_document_t *d, yaml_node_t *ports)
{
	printf("\n%-5s %-15s %12s %12s %12s %12s %9s %8s %8s\n", "PORT", "IFACE", "RX PKTS", "TX PKTS", "RX BYTES",
	       "TX BYTES", "MISSED", "RX ERR", "TX ERR");
	for (size_t i = 0; i < tl_ydoc_len(ports); i++) {
		yaml_node_t *p = tl_ydoc_item(d, ports, i);

		printf("%-5s %-15s %12s %12s %12s %12s %9s %8s %8s\n", ystr(d, p, "port", "?"), ystr(d, p, "iface", "?"),
		       ystr(d, p, "ethdev_rx_packets", "0"), ystr(d, p, "ethdev_tx_packets", "0"),
		       ystr(d, p, "ethdev_rx_bytes", "0"), ystr(d, p, "ethdev_tx_bytes", "0"),
		       ystr(d, p, "ethdev_rx_missed", "0"), ystr(d, p, "ethdev_rx_errors", "0"),
		       ystr(d, p, "ethdev_tx_errors", "0"));
	}
}

static void print_queues(yaml_document_t *d, yaml_node_t *queues)
{
	printf("\n%-4s %2s %7s %9s %7s %7s %8s %10s %10s %7s %7s %7s %6s %6s %9s %9s %12s\n", "PORT", "W", "DEPTH", "BYTES",
	       "P50us", "P99us", "MAXus", "ENQUEUED", "DEQUEUED", "CODEL", "OVERLIM", "ECN", "BKPR", "SHAPER",
	       "TARGETus", "INTERVAL", "RATE");
	for (size_t i = 0; i < tl_ydoc_len(queues); i++) {
		yaml_node_t *q = tl_ydoc_item(d, queues, i);
		char rate[32];

		if (yu64(d, q, "shaper_rate_bps"))
			human_rate(rate, sizeof(rate), (double)yu64(d, q, "shaper_rate_bps"));
		else
			snprintf(rate, sizeof(rate), "off");
		printf("%-4s %2s %7s %9s %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %10s %10s %7s %7s %7s %6s %6s %9s %9s %12s\n",
		       ystr(d, q, "port", "?"), ystr(d, q, "worker", "?"), ystr(d, q, "depth_packets", "0"),
		       ystr(d, q, "depth_bytes", "0"), yu64(d, q, "sojourn_p50_ns") / 1000, yu64(d, q, "sojourn_p99_ns") / 1000,
		       yu64(d, q, "sojourn_max_ns") / 1000, ystr(d, q, "enqueued", "0"), ystr(d, q, "dequeued", "0"),
		       ystr(d, q, "drops_aqm_codel", "0"), ystr(d, q, "drops_aqm_overlimit", "0"), ystr(d, q, "ecn_marks", "0"),
		       ystr(d, q, "backpressure", "0"), ystr(d, q, "shaper_waits", "0"), ystr(d, q, "aqm_target_us", "?"),
		       ystr(d, q, "aqm_interval_us", "?"), rate);
	}
}

static void print_workers(yaml_document_t *d, yaml_node_t *workers)
{
	printf("\n");
	for (size_t i = 0; i < tl_ydoc_len(workers); i++) {
		yaml_node_t *w = tl_ydoc_item(d, workers, i);

		printf("worker %s: %s%% busy (%s busy rounds, %s idle)\n", ystr(d, w, "worker", "?"),
		       ystr(d, w, "busy_percent", "?"), ystr(d, w, "busy_polls", "0"), ystr(d, w, "idle_polls", "0"));
	}
}

static void print_drops(yaml_document_t *d, yaml_node_t *drops)
{
	bool any = false;

	printf("\ndrops:");
	for (size_t i = 0; i < tl_ydoc_len(drops); i++) {
		yaml_node_pair_t *p = &drops->data.mapping.pairs.start[i];
		yaml_node_t *k = yaml_document_get_node(d, p->key), *v = yaml_document_get_node(d, p->value);

		if (!k || !v || v->type != YAML_SCALAR_NODE || !strcmp((char *)v->data.scalar.value, "0"))
			continue;
		printf("\n  %-28s %s", (char *)k->data.scalar.value, (char *)v->data.scalar.value);
		any = true;
	}
	printf("%s\n", any ? "" : " none");
}

static void print_show(yaml_document_t *d, yaml_node_t *res)
{
	yaml_node_t *n;

	if ((n = tl_ydoc_get(d, res, "device")))
		print_device(d, n);
	if ((n = tl_ydoc_get(d, res, "peers")))
		for (size_t i = 0; i < tl_ydoc_len(n); i++)
			print_peer(d, tl_ydoc_item(d, n, i));
	if ((n = tl_ydoc_get(d, res, "ports")))
		print_ports(d, n);
	if ((n = tl_ydoc_get(d, res, "queues")))
		print_queues(d, n);
	if ((n = tl_ydoc_get(d, res, "workers")))
		print_workers(d, n);
	if ((n = tl_ydoc_get(d, res, "drops")))
		print_drops(d, n);
}

static void print_keys(yaml_document_t *d, yaml_node_t *res, const char *list, const char *what)
{
	yaml_node_t *l = tl_ydoc_get(d, res, list);

	for (size_t i = 0; i < tl_ydoc_len(l); i++) {
		yaml_node_t *k = tl_ydoc_item(d, l, i);

		printf("peer %s %s\n", k->type == YAML_SCALAR_NODE ? (char *)k->data.scalar.value : "?", what);
	}
}

static void print_result(const char *op, yaml_document_t *d, yaml_node_t *res)
{
	if (!strcmp(op, "show")) {
		print_show(d, res);
	} else if (!strcmp(op, "set")) {
		yaml_node_t *aqm = tl_ydoc_get(d, res, "aqm"), *sh = tl_ydoc_get(d, res, "shaper");

		printf("%s: aqm target %s us, interval %s us, quantum %s, flows %s, limit %s packets, memory %s bytes, ecn %s; "
		       "shaper %s bit/s, burst %s bytes\n", ystr(d, res, "port", "?"), ystr(d, aqm, "target_us", "?"),
		       ystr(d, aqm, "interval_us", "?"), ystr(d, aqm, "quantum", "?"), ystr(d, aqm, "flows", "?"),
		       ystr(d, aqm, "limit", "?"), ystr(d, aqm, "memory_limit", "?"), ystr(d, aqm, "ecn", "?"),
		       ystr(d, sh, "rate_bps", "?"), ystr(d, sh, "burst_bytes", "?"));
	} else if (!strncmp(op, "peer_", 5)) {
		printf("peer %s %s\n", ystr(d, res, "public_key", "?"),
		       !strcmp(op, "peer_add") ? "added" : !strcmp(op, "peer_remove") ? "removed" : "updated");
	} else if (!strcmp(op, "reload")) {
		yaml_node_t *q = tl_ydoc_get(d, res, "queues_changed");

		printf("reloaded %s\n", ystr(d, res, "file", "?"));
		print_keys(d, res, "peers_removed", "removed");
		print_keys(d, res, "peers_updated", "updated");
		print_keys(d, res, "peers_added", "added");
		for (size_t i = 0; i < tl_ydoc_len(q); i++) {
			yaml_node_t *r = tl_ydoc_item(d, q, i);

			printf("%s queue parameters changed\n", r->type == YAML_SCALAR_NODE ? (char *)r->data.scalar.value : "?");
		}
	}
}

/* Prints the reply; returns the exit status. */
static int reply_print(const char *op, const struct tl_buf *text, enum out_mode mode)
{
	struct reply r;
	yaml_node_t *err;

	if (reply_parse(text, &r) < 0)
		return fail(CTL_REFUSED, "the daemon's reply is not a YAML mapping");
	err = tl_ydoc_get(&r.doc, r.root, "error");
	if (mode == OUT_YAML)
		fwrite(text->p, 1, text->len, stdout);
	else if (mode == OUT_JSON) {
		json_node(stdout, &r.doc, r.root, 0);
		fputc('\n', stdout);
	} else if (r.ok)
		print_result(op, &r.doc, tl_ydoc_get(&r.doc, r.root, "result"));
	if (!r.ok && mode == OUT_HUMAN)
		fprintf(stderr, "tunlessctl: error: %s: %s\n", ystr(&r.doc, err, "field", "?"),
			ystr(&r.doc, err, "message", "(no message)"));
	tl_ydoc_delete(&r.doc);
	return r.ok ? CTL_OK : CTL_REFUSED;
}

/* ---- watch ------------------------------------------------------------------------------------------ */

struct watch_state {
	bool have;
	double t;
	uint64_t tx_packets[WATCH_MAX_QUEUES], tx_bytes[WATCH_MAX_QUEUES];
	char drop_names[WATCH_MAX_DROPS][48];
	uint64_t drops[WATCH_MAX_DROPS];
	size_t n_drops;
	uint64_t crypto_pkts[WATCH_MAX_WORKERS], crypto_jobs[WATCH_MAX_WORKERS];
	uint64_t backpressure[WATCH_MAX_WORKERS][2];
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t *watch_drop_prev(struct watch_state *s, const char *name, bool *known)
{
	for (size_t i = 0; i < s->n_drops; i++)
		if (!strcmp(s->drop_names[i], name)) {
			*known = true;
			return &s->drops[i];
		}
	*known = false;
	if (s->n_drops == WATCH_MAX_DROPS)
		return NULL;
	snprintf(s->drop_names[s->n_drops], sizeof(s->drop_names[0]), "%s", name);
	return &s->drops[s->n_drops++];
}

static void watch_queues(yaml_document_t *d, yaml_node_t *queues, struct watch_state *s, double dt)
{
	printf("%-4s %2s %7s %10s %7s %7s %10s %12s %8s %8s %8s\n", "PORT", "W", "DEPTH", "BYTES", "P50us", "P99us",
	       "TX PPS", "TX RATE", "CODEL", "OVERLIM", "ECN");
	for (size_t i = 0; i < tl_ydoc_len(queues) && i < WATCH_MAX_QUEUES; i++) {
		yaml_node_t *q = tl_ydoc_item(d, queues, i);
		uint64_t pk = yu64(d, q, "tx_packets"), by = yu64(d, q, "tx_bytes");
		char pps[24] = "-", rate[32] = "-";

		if (s->have && dt > 0) {
			snprintf(pps, sizeof(pps), "%.0f", (double)(pk - s->tx_packets[i]) / dt);
			human_rate(rate, sizeof(rate), 8.0 * (double)(by - s->tx_bytes[i]) / dt);
		}
		s->tx_packets[i] = pk;
		s->tx_bytes[i] = by;
		printf("%-4s %2s %7s %10s %7" PRIu64 " %7" PRIu64 " %10s %12s %8s %8s %8s\n", ystr(d, q, "port", "?"),
		       ystr(d, q, "worker", "?"), ystr(d, q, "depth_packets", "0"), ystr(d, q, "depth_bytes", "0"),
		       yu64(d, q, "sojourn_p50_ns") / 1000, yu64(d, q, "sojourn_p99_ns") / 1000, pps, rate,
		       ystr(d, q, "drops_aqm_codel", "0"), ystr(d, q, "drops_aqm_overlimit", "0"), ystr(d, q, "ecn_marks", "0"));
	}
}

/* "<encap>/<decap>" of a worker's <key>_encap and <key>_decap. */
static void watch_dirs(char *out, size_t len, yaml_document_t *d, yaml_node_t *w, const char *key)
{
	char e[48], de[48];

	snprintf(e, sizeof(e), "%s_encap", key);
	snprintf(de, sizeof(de), "%s_decap", key);
	snprintf(out, len, "%s/%s", ystr(d, w, e, "0"), ystr(d, w, de, "0"));
}

static void watch_workers(yaml_document_t *d, yaml_node_t *dev, yaml_node_t *workers, struct watch_state *s, double dt)
{
	printf("\n%s queue pair(s) per port; crypto ring %s of %s jobs waiting\n", ystr(d, dev, "queue_pairs", "?"),
	       ystr(d, dev, "crypto_ring", "?"), ystr(d, dev, "crypto_ring_capacity", "?"));
	printf("%2s %5s %6s %11s %9s %11s %9s %13s\n", "W", "OWNER", "BUSY%", "CRYPTO PPS", "JOBS/S", "INFLIGHT", "FIFO",
	       "BACKPRESS/S");
	for (size_t i = 0; i < tl_ydoc_len(workers) && i < WATCH_MAX_WORKERS; i++) {
		yaml_node_t *w = tl_ydoc_item(d, workers, i);
		bool owner = !strcmp(ystr(d, w, "owner", "false"), "true");
		uint64_t pk = yu64(d, w, "crypto_packets"), jb = yu64(d, w, "crypto_jobs");
		uint64_t be = yu64(d, w, "crypto_backpressure_encap"), bd = yu64(d, w, "crypto_backpressure_decap");
		char pps[24] = "-", jps[24] = "-", bps[32] = "-", infl[48], fifo[48];

		if (s->have && dt > 0) {
			snprintf(pps, sizeof(pps), "%.0f", (double)(pk - s->crypto_pkts[i]) / dt);
			snprintf(jps, sizeof(jps), "%.0f", (double)(jb - s->crypto_jobs[i]) / dt);
			if (owner)
				snprintf(bps, sizeof(bps), "%.0f/%.0f", (double)(be - s->backpressure[i][0]) / dt,
					 (double)(bd - s->backpressure[i][1]) / dt);
		}
		s->crypto_pkts[i] = pk;
		s->crypto_jobs[i] = jb;
		s->backpressure[i][0] = be;
		s->backpressure[i][1] = bd;
		watch_dirs(infl, sizeof(infl), d, w, "inflight");
		watch_dirs(fifo, sizeof(fifo), d, w, "job_fifo");
		if (!owner) {
			snprintf(infl, sizeof(infl), "-");
			snprintf(fifo, sizeof(fifo), "-");
		}
		printf("%2s %5s %6s %11s %9s %11s %9s %13s\n", ystr(d, w, "worker", "?"), owner ? "yes" : "no",
		       ystr(d, w, "busy_percent", "0"), pps, jps, infl, fifo, bps);
	}
	printf("(INFLIGHT, FIFO and BACKPRESS/S: encap/decap)\n");
}

static void watch_drops(yaml_document_t *d, yaml_node_t *drops, struct watch_state *s)
{
	bool any = false;

	printf("\n%-28s %12s %14s\n", "DROP REASON", "DELTA", "TOTAL");
	for (size_t i = 0; i < tl_ydoc_len(drops); i++) {
		yaml_node_pair_t *p = &drops->data.mapping.pairs.start[i];
		yaml_node_t *k = yaml_document_get_node(d, p->key), *v = yaml_document_get_node(d, p->value);
		uint64_t total, *prev;
		bool known;
		char delta[24] = "-";

		if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE)
			continue;
		total = strtoull((char *)v->data.scalar.value, NULL, 10);
		prev = watch_drop_prev(s, (char *)k->data.scalar.value, &known);
		if (known && s->have)
			snprintf(delta, sizeof(delta), "+%" PRIu64, total - *prev);
		if (prev)
			*prev = total;
		if (!total)
			continue;
		printf("%-28s %12s %14" PRIu64 "\n", (char *)k->data.scalar.value, delta, total);
		any = true;
	}
	if (!any)
		printf("(no drops)\n");
}

static int watch(const char *path, double interval, long count, enum out_mode mode)
{
	const struct tl_api_op *op = tl_api_spec_op(g_spec, "show");
	struct watch_state s = { 0 };
	int rc = CTL_OK;

	for (long n = 0; !count || n < count; n++) {
		struct tl_buf req = { 0 }, reply = { 0 };
		struct reply r;
		double t;

		if (n)
			usleep((useconds_t)(interval * 1e6));
		if ((rc = request_build(op, 0, NULL, &req)) != 0 || (rc = ctl_call(path, &req, &reply)) != 0) {
			tl_buf_free(&req);
			tl_buf_free(&reply);
			return rc;
		}
		t = mono_s();
		if (mode != OUT_HUMAN || reply_parse(&reply, &r) < 0 || !r.ok) {
			if (mode == OUT_HUMAN && r.root)
				tl_ydoc_delete(&r.doc);   /* parsed, but an error reply */
			if (mode != OUT_HUMAN)
				rc = reply_print("show", &reply, mode);
			else
				rc = fail(CTL_REFUSED, "show refused or unreadable reply");
			tl_buf_free(&req);
			tl_buf_free(&reply);
			if (rc != CTL_OK)
				return rc;
			continue;
		}
		yaml_node_t *res = tl_ydoc_get(&r.doc, r.root, "result"), *dev = tl_ydoc_get(&r.doc, res, "device");

		printf("\033[H\033[2J%s: %s mode, %s peer(s), every %.1f s (refresh %ld%s)\n\n",
		       ystr(&r.doc, dev, "name", "?"), ystr(&r.doc, dev, "mode", "?"), ystr(&r.doc, dev, "peers", "?"),
		       interval, n + 1, count ? "" : ", Ctrl-C to stop");
		watch_queues(&r.doc, tl_ydoc_get(&r.doc, res, "queues"), &s, t - s.t);
		watch_workers(&r.doc, dev, tl_ydoc_get(&r.doc, res, "workers"), &s, t - s.t);
		watch_drops(&r.doc, tl_ydoc_get(&r.doc, res, "drops"), &s);
		fflush(stdout);
		s.have = true;
		s.t = t;
		tl_ydoc_delete(&r.doc);
		tl_buf_free(&req);
		tl_buf_free(&reply);
	}
	return rc;
}

static int watch_main(const char *path, int argc, char **argv, enum out_mode mode)
{
	double interval = 1.0;
	long count = 0;

	for (int i = 0; i < argc; i += 2) {   /* options come as "-x VALUE" pairs */
		char *end = NULL;
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if ((!strcmp(a, "-i") || !strcmp(a, "--interval")) && v) {
			interval = strtod(v, &end);
			if (*end || !(interval >= 0.1 && interval <= 3600))
				return fail(CTL_USAGE, "watch: -i: '%s' is not a number of seconds in 0.1..3600", v);
		} else if ((!strcmp(a, "-c") || !strcmp(a, "--count")) && v) {
			errno = 0;
			count = strtol(v, &end, 10);
			if (errno || *end || count < 1)
				return fail(CTL_USAGE, "watch: --count: '%s' is not a positive integer", v);
		} else {
			return fail(CTL_USAGE, "watch: unknown argument '%s' (watch [-i SECONDS] [--count N])", a);
		}
	}
	return watch(path, interval, count, mode);
}

/* ---- main ------------------------------------------------------------------------------------------ */

static int help_main(int argc, char **argv)
{
	const struct tl_api_op *op;
	char name[64];

	if (argc == 0) {
		ctl_usage(stdout, g_spec);
		return CTL_OK;
	}
	if (!strcmp(argv[0], "--markdown"))
		return ctl_help_markdown(stdout, g_spec) == 0 ? CTL_OK : CTL_USAGE;
	if (!strcmp(argv[0], "--read-model"))
		return ctl_help_read_model(stdout) == 0 ? CTL_OK : CTL_USAGE;
	snprintf(name, sizeof(name), "%s", argv[0]);
	for (char *p = name; *p; p++)
		if (*p == '-')
			*p = '_';
	if (!strcmp(name, "watch")) {
		printf("tunlessctl watch [-i SECONDS] [--count N]\n\nRefreshes, in place, per-queue depth, sojourn "
		       "p50/p99, throughput (from deltas), per-worker busy %%, crypto rate, jobs in flight and "
		       "backpressure, the crypto ring's depth, and drops by reason (deltas and totals).\n");
		return CTL_OK;
	}
	op = tl_api_spec_op(g_spec, name);
	if (!op)
		return fail(CTL_USAGE, "help: unknown operation '%s'", argv[0]);
	return ctl_help_op(stdout, op);
}

static int op_main(const char *path, const char *name, int argc, char **argv, enum out_mode mode)
{
	struct tl_buf req = { 0 }, reply = { 0 };
	const struct tl_api_op *op;
	char opname[64];
	int rc;

	snprintf(opname, sizeof(opname), "%s", name);
	for (char *p = opname; *p; p++)
		if (*p == '-')
			*p = '_';
	op = tl_api_spec_op(g_spec, opname);
	if (!op)
		return fail(CTL_USAGE, "unknown operation '%s' (tunlessctl help lists them)", name);
	rc = request_build(op, argc, argv, &req);
	if (rc == 0)
		rc = ctl_call(path, &req, &reply);
	if (rc == 0)
		rc = reply_print(op->name, &reply, mode);
	tl_buf_free(&req);
	tl_buf_free(&reply);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 's' },
		{ "yaml", no_argument, NULL, 'Y' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum out_mode mode = OUT_HUMAN;
	const char *name = NULL, *sock = NULL;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64], err[512];
	int c;

	g_spec = tl_api_spec_builtin(err, sizeof(err));
	if (!g_spec)
		return fail(CTL_USAGE, "%s", err);
	while ((c = getopt_long(argc, argv, "+n:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': name = optarg; break;
		case 's': sock = optarg; break;
		case 'Y': mode = OUT_YAML; break;
		case 'J': mode = OUT_JSON; break;
		case 'h': ctl_usage(stdout, g_spec); return CTL_OK;
		default: ctl_usage(stderr, g_spec); return CTL_USAGE;
		}
	}
	if (optind == argc) {
		ctl_usage(stderr, g_spec);
		return CTL_USAGE;
	}
	if (!strcmp(argv[optind], "import"))
		return ctl_import_main(argc - optind, argv + optind);
	if (!strcmp(argv[optind], "help"))
		return help_main(argc - optind - 1, argv + optind + 1);
	if (!name && !sock)
		return fail(CTL_USAGE, "give the instance name (-n NAME) or the socket (-s PATH)");
	if (name && (!name[0] || strchr(name, '/') || strlen(name) >= IF_NAMESIZE))
		return fail(CTL_USAGE, "-n: '%s' is not an instance name", name);
	snprintf(path, sizeof(path), "%s", sock ? sock : "");
	if (!sock)
		snprintf(path, sizeof(path), "%s/%s.sock", TL_CTL_DIR, name);
	if (!strcmp(argv[optind], "watch"))
		return watch_main(path, argc - optind - 1, argv + optind + 1, mode);
	return op_main(path, argv[optind], argc - optind - 1, argv + optind + 1, mode);
}
