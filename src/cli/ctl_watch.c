/* tunlessctl watch: show, refreshed in place, with rates from the deltas between refreshes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/ctl.h"
#include "common/ydoc.h"

#define WATCH_MAX_QUEUES 64
#define WATCH_MAX_DROPS 64
#define WATCH_MAX_WORKERS 64

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
		uint64_t pk = ctl_yu64(d, q, "tx_packets"), by = ctl_yu64(d, q, "tx_bytes");
		char pps[24] = "-", rate[32] = "-";

		if (s->have && dt > 0) {
			snprintf(pps, sizeof(pps), "%.0f", (double)(pk - s->tx_packets[i]) / dt);
			ctl_human_rate(rate, sizeof(rate), 8.0 * (double)(by - s->tx_bytes[i]) / dt);
		}
		s->tx_packets[i] = pk;
		s->tx_bytes[i] = by;
		printf("%-4s %2s %7s %10s %7" PRIu64 " %7" PRIu64 " %10s %12s %8s %8s %8s\n", ctl_ystr(d, q, "port", "?"),
		       ctl_ystr(d, q, "worker", "?"), ctl_ystr(d, q, "depth_packets", "0"), ctl_ystr(d, q, "depth_bytes", "0"),
		       ctl_yu64(d, q, "sojourn_p50_ns") / 1000, ctl_yu64(d, q, "sojourn_p99_ns") / 1000, pps, rate,
		       ctl_ystr(d, q, "drops_aqm_codel", "0"), ctl_ystr(d, q, "drops_aqm_overlimit", "0"), ctl_ystr(d, q, "ecn_marks", "0"));
	}
}

/* "<encap>/<decap>" of a worker's <key>_encap and <key>_decap. */
static void watch_dirs(char *out, size_t len, yaml_document_t *d, yaml_node_t *w, const char *key)
{
	char e[48], de[48];

	snprintf(e, sizeof(e), "%s_encap", key);
	snprintf(de, sizeof(de), "%s_decap", key);
	snprintf(out, len, "%s/%s", ctl_ystr(d, w, e, "0"), ctl_ystr(d, w, de, "0"));
}

static void watch_workers(yaml_document_t *d, yaml_node_t *dev, yaml_node_t *workers, struct watch_state *s, double dt)
{
	printf("\n%s queue pair(s) per port; crypto ring %s of %s jobs waiting\n", ctl_ystr(d, dev, "queue_pairs", "?"),
	       ctl_ystr(d, dev, "crypto_ring", "?"), ctl_ystr(d, dev, "crypto_ring_capacity", "?"));
	printf("%2s %5s %6s %11s %9s %11s %9s %13s\n", "W", "OWNER", "BUSY%", "CRYPTO PPS", "JOBS/S", "INFLIGHT", "FIFO",
	       "BACKPRESS/S");
	for (size_t i = 0; i < tl_ydoc_len(workers) && i < WATCH_MAX_WORKERS; i++) {
		yaml_node_t *w = tl_ydoc_item(d, workers, i);
		bool owner = !strcmp(ctl_ystr(d, w, "owner", "false"), "true");
		uint64_t pk = ctl_yu64(d, w, "crypto_packets"), jb = ctl_yu64(d, w, "crypto_jobs");
		uint64_t be = ctl_yu64(d, w, "crypto_backpressure_encap"), bd = ctl_yu64(d, w, "crypto_backpressure_decap");
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
		printf("%2s %5s %6s %11s %9s %11s %9s %13s\n", ctl_ystr(d, w, "worker", "?"), owner ? "yes" : "no",
		       ctl_ystr(d, w, "busy_percent", "0"), pps, jps, infl, fifo, bps);
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

static int watch(const struct tl_api_spec *spec, const char *path, double interval, long count, enum ctl_out_mode mode)
{
	const struct tl_api_op *op = tl_api_spec_op(spec, "show");
	struct watch_state s = { 0 };
	int rc = CTL_OK;

	for (long n = 0; !count || n < count; n++) {
		struct tl_buf req = { 0 }, reply = { 0 };
		struct ctl_reply r;
		double t;

		if (n)
			usleep((useconds_t)(interval * 1e6));
		if ((rc = ctl_request_build(spec, op, 0, NULL, &req)) != 0 || (rc = ctl_call(path, &req, &reply)) != 0) {
			tl_buf_free(&req);
			tl_buf_free(&reply);
			return rc;
		}
		t = mono_s();
		if (mode != CTL_OUT_HUMAN || ctl_reply_parse(&reply, &r) < 0 || !r.ok) {
			if (mode == CTL_OUT_HUMAN && r.root)
				tl_ydoc_delete(&r.doc);   /* parsed, but an error reply */
			if (mode != CTL_OUT_HUMAN)
				rc = ctl_reply_print("show", &reply, mode);
			else
				rc = ctl_fail(CTL_REFUSED, "show refused or unreadable reply");
			tl_buf_free(&req);
			tl_buf_free(&reply);
			if (rc != CTL_OK)
				return rc;
			continue;
		}
		yaml_node_t *res = tl_ydoc_get(&r.doc, r.root, "result"), *dev = tl_ydoc_get(&r.doc, res, "device");

		printf("\033[H\033[2J%s: %s mode, %s peer(s), every %.1f s (refresh %ld%s)\n\n",
		       ctl_ystr(&r.doc, dev, "name", "?"), ctl_ystr(&r.doc, dev, "mode", "?"), ctl_ystr(&r.doc, dev, "peers", "?"),
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

int ctl_watch_main(const struct tl_api_spec *spec, const char *path, int argc, char **argv, enum ctl_out_mode mode)
{
	double interval = 1.0;
	long count = 0;

	for (int i = 0; i < argc; i += 2) {   /* options come as "-x VALUE" pairs */
		char *end = NULL;
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if ((!strcmp(a, "-i") || !strcmp(a, "--interval")) && v) {
			interval = strtod(v, &end);
			if (*end || !(interval >= 0.1 && interval <= 3600))
				return ctl_fail(CTL_USAGE, "watch: -i: '%s' is not a number of seconds in 0.1..3600", v);
		} else if ((!strcmp(a, "-c") || !strcmp(a, "--count")) && v) {
			errno = 0;
			count = strtol(v, &end, 10);
			if (errno || *end || count < 1)
				return ctl_fail(CTL_USAGE, "watch: --count: '%s' is not a positive integer", v);
		} else {
			return ctl_fail(CTL_USAGE, "watch: unknown argument '%s' (watch [-i SECONDS] [--count N])", a);
		}
	}
	return watch(spec, path, interval, count, mode);
}
