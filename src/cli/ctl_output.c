/* tunlessctl: the daemon's reply documents, printed as tables (human output) or as JSON (the
 * YAML as it came, with --yaml). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/ctl.h"
#include "common/ydoc.h"

/* ---- reply documents -------------------------------------------------------------------------- */

const char *ctl_ystr(yaml_document_t *d, yaml_node_t *n, const char *key, const char *def)
{
	const char *v = tl_ydoc_scalar(tl_ydoc_get(d, n, key));

	return v ? v : def;
}

uint64_t ctl_yu64(yaml_document_t *d, yaml_node_t *n, const char *key)
{
	return strtoull(ctl_ystr(d, n, key, "0"), NULL, 10);
}

int ctl_reply_parse(const struct tl_buf *text, struct ctl_reply *r)
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
	r->ok = !strcmp(ctl_ystr(&r->doc, r->root, "status", ""), "ok");
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

const char *ctl_human_bytes(char *buf, size_t len, double b)
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

const char *ctl_human_rate(char *buf, size_t len, double bits)
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
	uint64_t up = ctl_yu64(d, dev, "uptime_s");

	printf("device: %s (%s mode)\n  public key: %s\n  listening port: %s\n  mtu: %s, workers: %s, peers: %s\n"
	       "  up: %" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s\n",
	       ctl_ystr(d, dev, "name", "?"), ctl_ystr(d, dev, "mode", "?"), ctl_ystr(d, dev, "public_key", "?"),
	       ctl_ystr(d, dev, "listen_port", "?"), ctl_ystr(d, dev, "mtu", "?"), ctl_ystr(d, dev, "workers", "?"),
	       ctl_ystr(d, dev, "peers", "?"), up / 3600, up / 60 % 60, up % 60);
}

static void print_peer(yaml_document_t *d, yaml_node_t *p)
{
	yaml_node_t *aips = tl_ydoc_get(d, p, "allowed_ips");
	const char *name = ctl_ystr(d, p, "name", NULL);
	uint64_t hs = ctl_yu64(d, p, "last_handshake"), now = (uint64_t)time(NULL);
	char rx[32], tx[32];

	printf("\npeer: %s%s%s%s\n", ctl_ystr(d, p, "public_key", "?"), name ? " (" : "", name ? name : "", name ? ")" : "");
	printf("  endpoint: %s\n  allowed ips: ", ctl_ystr(d, p, "endpoint", "(none)"));
	for (size_t i = 0; i < tl_ydoc_len(aips); i++) {
		yaml_node_t *a = tl_ydoc_item(d, aips, i);

		printf("%s%s", i ? ", " : "", a->type == YAML_SCALAR_NODE ? (char *)a->data.scalar.value : "?");
	}
	printf("%s\n", tl_ydoc_len(aips) ? "" : "(none)");
	if (hs)
		printf("  latest handshake: %" PRIu64 " s ago (%s handshakes%s)\n", now > hs ? now - hs : 0,
		       ctl_ystr(d, p, "handshakes", "0"), strcmp(ctl_ystr(d, p, "session", ""), "true") ? ", no session" : "");
	else
		printf("  latest handshake: never\n");
	printf("  transfer: %s received (%s packets), %s sent (%s packets)\n",
	       ctl_human_bytes(rx, sizeof(rx), (double)ctl_yu64(d, p, "rx_bytes")), ctl_ystr(d, p, "rx_packets", "0"),
	       ctl_human_bytes(tx, sizeof(tx), (double)ctl_yu64(d, p, "tx_bytes")), ctl_ystr(d, p, "tx_packets", "0"));
	if (ctl_yu64(d, p, "persistent_keepalive"))
		printf("  persistent keepalive: every %s s\n", ctl_ystr(d, p, "persistent_keepalive", "?"));
}

static void print_ports(yaml_document_t *d, yaml_node_t *ports)
{
	printf("\n%-5s %-15s %12s %12s %12s %12s %9s %8s %8s\n", "PORT", "IFACE", "RX PKTS", "TX PKTS", "RX BYTES",
	       "TX BYTES", "MISSED", "RX ERR", "TX ERR");
	for (size_t i = 0; i < tl_ydoc_len(ports); i++) {
		yaml_node_t *p = tl_ydoc_item(d, ports, i);

		printf("%-5s %-15s %12s %12s %12s %12s %9s %8s %8s\n", ctl_ystr(d, p, "port", "?"), ctl_ystr(d, p, "iface", "?"),
		       ctl_ystr(d, p, "ethdev_rx_packets", "0"), ctl_ystr(d, p, "ethdev_tx_packets", "0"),
		       ctl_ystr(d, p, "ethdev_rx_bytes", "0"), ctl_ystr(d, p, "ethdev_tx_bytes", "0"),
		       ctl_ystr(d, p, "ethdev_rx_missed", "0"), ctl_ystr(d, p, "ethdev_rx_errors", "0"),
		       ctl_ystr(d, p, "ethdev_tx_errors", "0"));
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

		if (ctl_yu64(d, q, "shaper_rate_bps"))
			ctl_human_rate(rate, sizeof(rate), (double)ctl_yu64(d, q, "shaper_rate_bps"));
		else
			snprintf(rate, sizeof(rate), "off");
		printf("%-4s %2s %7s %9s %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %10s %10s %7s %7s %7s %6s %6s %9s %9s %12s\n",
		       ctl_ystr(d, q, "port", "?"), ctl_ystr(d, q, "worker", "?"), ctl_ystr(d, q, "depth_packets", "0"),
		       ctl_ystr(d, q, "depth_bytes", "0"), ctl_yu64(d, q, "sojourn_p50_ns") / 1000, ctl_yu64(d, q, "sojourn_p99_ns") / 1000,
		       ctl_yu64(d, q, "sojourn_max_ns") / 1000, ctl_ystr(d, q, "enqueued", "0"), ctl_ystr(d, q, "dequeued", "0"),
		       ctl_ystr(d, q, "drops_aqm_codel", "0"), ctl_ystr(d, q, "drops_aqm_overlimit", "0"), ctl_ystr(d, q, "ecn_marks", "0"),
		       ctl_ystr(d, q, "backpressure", "0"), ctl_ystr(d, q, "shaper_waits", "0"), ctl_ystr(d, q, "aqm_target_us", "?"),
		       ctl_ystr(d, q, "aqm_interval_us", "?"), rate);
	}
	/* Flow isolation: the DRR's classes, sparse (new-flows list) and bulk (old list). */
	printf("\n%-4s %2s %-6s %10s %8s %8s %12s %12s\n", "PORT", "W", "CLASS", "SERVED", "P99us", "MAXus", "AHEAD P99 B",
	       "AHEAD MAX B");
	for (size_t i = 0; i < tl_ydoc_len(queues); i++) {
		yaml_node_t *q = tl_ydoc_item(d, queues, i);

		for (int c = 0; c < 2; c++) {
			const char *cl = c ? "bulk" : "sparse";
			char k[5][32];

			snprintf(k[0], sizeof(k[0]), "%s_served", cl);
			snprintf(k[1], sizeof(k[1]), "%s_sojourn_p99_ns", cl);
			snprintf(k[2], sizeof(k[2]), "%s_sojourn_max_ns", cl);
			snprintf(k[3], sizeof(k[3]), "%s_ahead_p99_bytes", cl);
			snprintf(k[4], sizeof(k[4]), "%s_ahead_max_bytes", cl);
			printf("%-4s %2s %-6s %10s %8" PRIu64 " %8" PRIu64 " %12s %12s\n", ctl_ystr(d, q, "port", "?"),
			       ctl_ystr(d, q, "worker", "?"), cl, ctl_ystr(d, q, k[0], "0"), ctl_yu64(d, q, k[1]) / 1000,
			       ctl_yu64(d, q, k[2]) / 1000, ctl_ystr(d, q, k[3], "0"), ctl_ystr(d, q, k[4], "0"));
		}
	}
}

static void print_workers(yaml_document_t *d, yaml_node_t *workers)
{
	printf("\n");
	for (size_t i = 0; i < tl_ydoc_len(workers); i++) {
		yaml_node_t *w = tl_ydoc_item(d, workers, i);

		printf("worker %s: %s%% busy (%s busy rounds, %s idle)\n", ctl_ystr(d, w, "worker", "?"),
		       ctl_ystr(d, w, "busy_percent", "?"), ctl_ystr(d, w, "busy_polls", "0"), ctl_ystr(d, w, "idle_polls", "0"));
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
		       "shaper %s bit/s, burst %s bytes\n", ctl_ystr(d, res, "port", "?"), ctl_ystr(d, aqm, "target_us", "?"),
		       ctl_ystr(d, aqm, "interval_us", "?"), ctl_ystr(d, aqm, "quantum", "?"), ctl_ystr(d, aqm, "flows", "?"),
		       ctl_ystr(d, aqm, "limit", "?"), ctl_ystr(d, aqm, "memory_limit", "?"), ctl_ystr(d, aqm, "ecn", "?"),
		       ctl_ystr(d, sh, "rate_bps", "?"), ctl_ystr(d, sh, "burst_bytes", "?"));
	} else if (!strncmp(op, "peer_", 5)) {
		printf("peer %s %s\n", ctl_ystr(d, res, "public_key", "?"),
		       !strcmp(op, "peer_add") ? "added" : !strcmp(op, "peer_remove") ? "removed" : "updated");
	} else if (!strcmp(op, "reload")) {
		yaml_node_t *q = tl_ydoc_get(d, res, "queues_changed");

		printf("reloaded %s\n", ctl_ystr(d, res, "file", "?"));
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
int ctl_reply_print(const char *op, const struct tl_buf *text, enum ctl_out_mode mode)
{
	struct ctl_reply r;
	yaml_node_t *err;

	if (ctl_reply_parse(text, &r) < 0)
		return ctl_fail(CTL_REFUSED, "the daemon's reply is not a YAML mapping");
	err = tl_ydoc_get(&r.doc, r.root, "error");
	if (mode == CTL_OUT_YAML)
		fwrite(text->p, 1, text->len, stdout);
	else if (mode == CTL_OUT_JSON) {
		json_node(stdout, &r.doc, r.root, 0);
		fputc('\n', stdout);
	} else if (r.ok)
		print_result(op, &r.doc, tl_ydoc_get(&r.doc, r.root, "result"));
	if (!r.ok && mode == CTL_OUT_HUMAN)
		fprintf(stderr, "tunlessctl: error: %s: %s\n", ctl_ystr(&r.doc, err, "field", "?"),
			ctl_ystr(&r.doc, err, "message", "(no message)"));
	tl_ydoc_delete(&r.doc);
	return r.ok ? CTL_OK : CTL_REFUSED;
}
