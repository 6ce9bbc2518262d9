/* The read model as its readers on other threads see it: a reader thread loops over
 * tl_stats_peers (what /tunless/peers runs on DPDK's telemetry thread) while this thread
 * changes allowed IPs through the write model, as `wg set`, `wg setconf` and a reload do
 * (adds that grow a peer's list, replaces that shrink and reorder it, prefixes taken from
 * another peer, a peer removed and added again). Every list the reader gets must parse as a
 * prefix list of one of the committed states. Run under ASan (and with MALLOC_PERTURB_ set)
 * in the sanitizer build. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/spec.h"
#include "api/yamlw.h"
#include "check.h"
#include "common/addr.h"
#include "common/key.h"
#include "ctrl/aips.h"
#include "ctrl/peer.h"
#include "ctrl/peer_ops.h"
#include "ctrl/send.h"
#include "ctrl/stats.h"
#include "ctrl_harness.h"
#include "daemon/ctlapi.h"
#include "daemon/metrics.h"
#include "daemon/uapi.h"

#define CHURN_CYCLES 1500
#define BIG 256

struct reader {
	struct tl_device *dev;
	atomic_bool stop;
	unsigned long reads, lists, bad;
	char first_bad[160];
};

/* "a/n,b/m": every item a prefix as tl_prefix_format writes it, and none twice in a row
 * empty. */
static bool list_ok(const char *s)
{
	while (s && *s) {
		size_t n = strcspn(s, ",");
		struct tl_prefix p;
		char item[64], again[64];

		if (!n || n >= sizeof(item))
			return false;
		memcpy(item, s, n);
		item[n] = '\0';
		if (tl_prefix_parse(&p, item) != 0)
			return false;
		tl_prefix_format(again, sizeof(again), &p);
		if (strcmp(again, item))
			return false;
		s += n + (s[n] == ',');
	}
	return s != NULL;
}

static void *reader_run(void *arg)
{
	struct reader *rd = arg;

	while (!atomic_load(&rd->stop)) {
		bool oom = false;
		size_t n = 0;
		struct tl_stats_peer *v = tl_stats_peers(rd->dev, &n, &oom);

		for (size_t i = 0; i < n; i++, rd->lists++)
			if (!list_ok(v[i].allowed_ips) && !rd->bad++)
				snprintf(rd->first_bad, sizeof(rd->first_bad), "%.150s",
					 v[i].allowed_ips ? v[i].allowed_ips : "(null)");
		tl_stats_peers_free(v, n);
		rd->reads++;
	}
	return NULL;
}

static void prefix24(struct tl_prefix *p, uint8_t a, uint8_t b)
{
	*p = (struct tl_prefix){ .ip.family = AF_INET, .ip.addr = { 10, a, b, 0 }, .len = 24 };
}

static void key_of(uint8_t key[TL_KEY_LEN], uint8_t tag)
{
	memset(key, tag, TL_KEY_LEN);
	key[0] = 0x40;
}

static bool lists_are(struct tl_ch *h, const uint8_t pub[TL_KEY_LEN], const char *want, char *why, size_t len);

/* T2 of the review: the telemetry thread against the write model. */
static void test_reader_vs_writes(void)
{
	static struct tl_prefix big[BIG], few[BIG / 4];
	struct reader rd = { 0 };
	struct tl_peer_op op;
	struct tl_ch h;
	pthread_t t;
	uint8_t a[TL_KEY_LEN], b[TL_KEY_LEN];
	unsigned cycles = 0, refused = 0;
	char why[400];
	struct tl_stats_peer *v = NULL;
	bool oom = false;
	size_t n = 0;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	h.cfg.metrics.peer_series_max = 1000;
	key_of(a, 0xa1);
	key_of(b, 0xb2);
	for (unsigned i = 0; i < BIG; i++)
		prefix24(&big[i], 1, (uint8_t)i);
	rd.dev = &h.dev;
	CHECK(pthread_create(&t, NULL, reader_run, &rd) == 0, "reader thread");
	for (; cycles < CHURN_CYCLES && !rd.bad; cycles++) {
		/* A: a quarter of B's prefixes, replaced each cycle by another quarter (the list
		 * shrinks and is reordered); B: created with all of them (its list grows from
		 * nothing, taking A's), cut to a few, then removed. */
		for (unsigned i = 0; i < BIG / 4; i++)
			few[i] = big[(cycles * 7 + i * 5) % BIG];
		op = (struct tl_peer_op){ .aips = few, .n_aips = BIG / 4, .replace_aips = true };
		memcpy(op.pub, a, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
		op = (struct tl_peer_op){ .aips = big, .n_aips = BIG };
		memcpy(op.pub, b, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
		op = (struct tl_peer_op){ .aips = big + cycles % 3, .n_aips = 3, .replace_aips = true };
		memcpy(op.pub, b, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
		op = (struct tl_peer_op){ .remove = true };
		memcpy(op.pub, b, TL_KEY_LEN);
		refused += tl_peer_ops_apply(&h.dev, &op, 1, NULL, false) != 0;
	}
	atomic_store(&rd.stop, true);
	pthread_join(t, NULL);
	CHECK(!refused, "%u changes applied (%u refused)", cycles * 4, refused);
	CHECK(rd.reads > 0 && rd.lists > 0, "the reader read %lu times, %lu lists", rd.reads, rd.lists);
	CHECK(!rd.bad, "every list the reader got parses: %lu did not, the first \"%s\"", rd.bad, rd.first_bad);
	/* and what is left is what the last changes made: B took every prefix of A's, then went */
	CHECK(lists_are(&h, a, "", why, sizeof(why)), "A's list at the end: %s", why);
	CHECK(h.dev.n_peers == 1 && (v = tl_stats_peers(&h.dev, &n, &oom)) && n == 1, "B is gone from the view");
	tl_stats_peers_free(v, n);
	tl_ch_teardown(&h);
}

/* The peer's allowed IPs as every observer lists them, each in its own form, to compare
 * with want ("a/n,b/m"); the first that differs is described in why. */
static bool lists_are(struct tl_ch *h, const uint8_t pub[TL_KEY_LEN], const char *want, char *why, size_t len)
{
	static const char show_req[] = "op: show\nargs: {section: peers}\n...\n";
	struct tl_buf get = { 0 }, show = { 0 }, prom = { 0 }, seen = { 0 }, exp = { 0 };
	char b64[45], *in = NULL, *p;
	struct tl_stats_peer *v;
	size_t n = 0, in_len = 0;
	bool oom = false, ok = true;

	tl_key_to_base64(b64, pub);
	snprintf(why, len, "(all agree)");
	v = tl_stats_peers(&h->dev, &n, &oom);            /* telemetry's /tunless/peers */
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].public_key, b64) && strcmp(v[i].allowed_ips ? v[i].allowed_ips : "", want)) {
			snprintf(why, len, "read model: %s", v[i].allowed_ips ? v[i].allowed_ips : "(null)");
			ok = false;
		}
	tl_stats_peers_free(v, n);
	/* UAPI get: allowed_ip= lines after the peer's public_key= line */
	tl_uapi_test_client(&h->dev, "get=1\n\n", 7, 0, &in, &in_len, &get);
	free(in);
	for (const char *w = want; *w;) {
		size_t k = strcspn(w, ",");

		tl_buf_printf(&exp, "allowed_ip=%.*s\n", (int)k, w);
		w += k + (w[k] == ',');
	}
	tl_buf_printf(&exp, "%s", "");
	if (ok && (!get.p || !exp.p || !strstr(get.p, exp.p))) {
		snprintf(why, len, "UAPI get: %.300s", get.p ? get.p : "(no reply)");
		ok = false;
	}
	/* show: the flow sequence after the peer's key, its items unquoted */
	tl_ctlapi_request(&h->dev, show_req, strlen(show_req), &show);
	tl_buf_printf(&seen, "public_key: %s", b64);
	p = show.p && seen.p ? strstr(show.p, seen.p) : NULL;
	p = p ? strstr(p, "allowed_ips: [") : NULL;
	tl_buf_free(&seen);
	for (p = p ? p + 14 : NULL; p && *p && *p != ']'; p++)
		if (*p != '\'' && *p != ' ')
			tl_buf_printf(&seen, "%c", *p);
	if (ok && (!p || strcmp(seen.p ? seen.p : "", want))) {
		snprintf(why, len, "show: %s", seen.p ? seen.p : "(no such peer)");
		ok = false;
	}
	/* Prometheus: the mindflavor label */
	tl_metrics_render(&h->dev, &prom);
	tl_buf_free(&seen);
	seen = (struct tl_buf){ 0 };
	tl_buf_printf(&seen, "public_key=\"%s\",allowed_ips=\"%s\"", b64, want);
	if (ok && (!prom.p || !strstr(prom.p, seen.p))) {
		snprintf(why, len, "Prometheus: %.300s",
			 prom.p ? (p = strstr(prom.p, "wireguard_sent_bytes_total{")) ? p : prom.p : "(no text)");
		ok = false;
	}
	tl_buf_free(&get);
	tl_buf_free(&show);
	tl_buf_free(&prom);
	tl_buf_free(&seen);
	tl_buf_free(&exp);
	return ok;
}

static int uapi_set(struct tl_ch *h, const char *fmt, const uint8_t pub[TL_KEY_LEN], const char *tail)
{
	char body[512], hex[65];

	tl_key_to_hex(hex, pub);
	snprintf(body, sizeof(body), fmt, hex, tail);
	return tl_uapi_set(&h->dev, body);
}

/* Allowed IPs are listed in the order they were added, as kernel WireGuard lists them: `wg
 * set ... allowed-ips A,B` (a replace) lists A then B; an add comes last; a prefix another
 * peer took and gives back comes last; a replace in another order is that order. Through
 * every observer: the read model, UAPI get, show, Prometheus. */
static void test_order(void)
{
	struct tl_ch h;
	struct tl_ch_remote r, r2;
	uint64_t builds;
	char why[400];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	h.cfg.metrics.peer_series_max = 1000;
	if (!tl_ch_peer_add(&h, &r, 9) || !tl_ch_peer_add(&h, &r2, 10))
		goto out;
	CHECK(lists_are(&h, r.id.pub, "10.9.0.0/16", why, sizeof(why)), "as added: %s", why);
	builds = tl_stats_full_builds(&h.dev);
	CHECK(uapi_set(&h, "public_key=%s\nreplace_allowed_ips=true\n%s", r.id.pub,
		       "allowed_ip=172.30.9.51/32\nallowed_ip=fd30::51/128\n") == 0, "wg set allowed-ips");
	CHECK(lists_are(&h, r.id.pub, "172.30.9.51/32,fd30::51/128", why, sizeof(why)), "after wg set: %s", why);
	CHECK(uapi_set(&h, "public_key=%s\n%s", r.id.pub, "allowed_ip=10.77.0.0/16\nallowed_ip=172.30.9.51/32\n") == 0,
	      "an add");
	CHECK(lists_are(&h, r.id.pub, "172.30.9.51/32,fd30::51/128,10.77.0.0/16", why, sizeof(why)),
	      "an add comes last, one it has stays: %s", why);
	CHECK(uapi_set(&h, "public_key=%s\n%s", r2.id.pub, "allowed_ip=fd30::51/128\n") == 0, "taken by another");
	CHECK(lists_are(&h, r.id.pub, "172.30.9.51/32,10.77.0.0/16", why, sizeof(why)), "taken away: %s", why);
	CHECK(lists_are(&h, r2.id.pub, "10.10.0.0/16,fd30::51/128", why, sizeof(why)), "the other's: %s", why);
	CHECK(uapi_set(&h, "public_key=%s\n%s", r.id.pub, "allowed_ip=fd30::51/128\n") == 0, "taken back");
	CHECK(lists_are(&h, r.id.pub, "172.30.9.51/32,10.77.0.0/16,fd30::51/128", why, sizeof(why)),
	      "given back comes last: %s", why);
	CHECK(uapi_set(&h, "public_key=%s\nreplace_allowed_ips=true\n%s", r.id.pub,
		       "allowed_ip=fd30::51/128\nallowed_ip=10.77.0.0/16\nallowed_ip=172.30.9.51/32\n") == 0,
	      "replaced in another order");
	CHECK(lists_are(&h, r.id.pub, "fd30::51/128,10.77.0.0/16,172.30.9.51/32", why, sizeof(why)),
	      "a replace's order: %s", why);
	CHECK(tl_stats_full_builds(&h.dev) == builds, "each change published from the view before and the peers "
	      "it touched (%" PRIu64 " publishes looked at every peer)", tl_stats_full_builds(&h.dev) - builds);
out:
	tl_ch_teardown(&h);
}

static bool list_is(const struct tl_peer_ctrl *pc, const char *want, char *got, size_t len)
{
	size_t off = 0;

	got[0] = '\0';
	for (size_t i = 0; i < pc->cfg.n_allowed_ips && off < len; i++) {
		char p[64];

		tl_prefix_format(p, sizeof(p), &pc->cfg.allowed_ips[i]);
		off += (size_t)snprintf(got + off, len - off, "%s%s", i ? "," : "", p);
	}
	return !strcmp(got, want);
}

/* A request that fails is undone whole (tl_aips_abort, as the write model's rollback calls
 * it): the lists are back in their order, not only with their prefixes. */
static void test_abort_order(void)
{
	struct tl_prefix x, y, z, q, keep[2];
	struct tl_ch h;
	struct tl_ch_remote r, r2;
	struct tl_peer_ctrl *a, *b;
	char got[256], why[400];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	h.cfg.metrics.peer_series_max = 1000;
	a = tl_ch_peer_add(&h, &r, 11);
	b = tl_ch_peer_add(&h, &r2, 12);
	if (!a || !b)
		goto out;
	prefix24(&x, 11, 1);
	prefix24(&y, 11, 2);
	prefix24(&z, 11, 3);
	prefix24(&q, 11, 4);
	CHECK(tl_aips_take(&h.dev, a, &x) == 0 && tl_aips_take(&h.dev, a, &y) == 0 && tl_aips_take(&h.dev, a, &z) == 0,
	      "three more");
	tl_aips_publish(&h.dev);
	CHECK(list_is(a, "10.11.0.0/16,10.11.1.0/24,10.11.2.0/24,10.11.3.0/24", got, sizeof(got)), "published: %s", got);
	CHECK(tl_aips_take(&h.dev, b, &y) == 0, "the other takes the second");
	keep[0] = z;
	keep[1] = x;
	CHECK(tl_aips_keep_only(&h.dev, a, keep, 2) == 0, "replaced, in another order");
	CHECK(list_is(a, "10.11.3.0/24,10.11.1.0/24", got, sizeof(got)), "as asked: %s", got);
	CHECK(tl_aips_take(&h.dev, a, &q) == 0 && tl_aips_clear(&h.dev, b) == 0, "more changes");
	CHECK(lists_are(&h, r.id.pub, "10.11.0.0/16,10.11.1.0/24,10.11.2.0/24,10.11.3.0/24", why, sizeof(why)),
	      "observers see the published lists meanwhile: %s", why);
	tl_aips_abort(&h.dev);
	CHECK(list_is(a, "10.11.0.0/16,10.11.1.0/24,10.11.2.0/24,10.11.3.0/24", got, sizeof(got)), "undone in order: %s", got);
	CHECK(list_is(b, "10.12.0.0/16", got, sizeof(got)), "the other's undone: %s", got);
	tl_aips_publish(&h.dev);
	CHECK(lists_are(&h, r.id.pub, "10.11.0.0/16,10.11.1.0/24,10.11.2.0/24,10.11.3.0/24", why, sizeof(why)),
	      "and so published: %s", why);
out:
	tl_ch_teardown(&h);
}

/* The text of one peer's entry in a show reply (up to the next entry), or NULL. */
static char *show_entry(const char *show, const uint8_t pub[TL_KEY_LEN])
{
	char b64[45], key[64];
	const char *p, *end;

	tl_key_to_base64(b64, pub);
	snprintf(key, sizeof(key), "public_key: %s", b64);
	if (!show || !(p = strstr(show, key)))
		return NULL;
	end = strstr(p + 1, "- public_key: ");
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

static bool key_u64(const char *text, const char *key, uint64_t *v)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\n    %s: ", key);
	return text && (p = strstr(text, k)) && sscanf(p + strlen(k), "%" SCNu64, v) == 1;
}

/* Every reply of the control API carries api_version, the spec's version; show's peers have
 * latest_handshake_age_s, the name show had before the read model renamed it, beside its
 * new name last_handshake (deprecated, for a release): the seconds since the handshake,
 * absent before the first one. */
static void test_version_alias(void)
{
	static const char show_req[] = "op: show\nargs: {section: peers}\n...\n", bad_req[] = "op: nosuch\n...\n";
	struct tl_buf show = { 0 }, bad = { 0 };
	struct tl_msg_initiation ours;
	struct tl_msg_response resp;
	struct tl_ch h;
	struct tl_ch_remote r, r2;
	struct tl_peer_ctrl *pc;
	char msg[256], *e1 = NULL, *e2 = NULL;
	uint64_t t0, t1, last = 0, age = 0, unused;
	const struct tl_api_spec *spec = tl_api_spec_builtin(msg, sizeof(msg));

	CHECK(spec && spec->version == TL_API_VERSION, "the spec's version is the replies' (%u, %u)",
	      spec ? spec->version : 0, TL_API_VERSION);
	CHECK(tl_ch_setup(&h) == 0, "setup");
	pc = tl_ch_peer_add(&h, &r, 21);
	if (!pc || !tl_ch_peer_add(&h, &r2, 22))
		goto out;
	CHECK(tl_handshake_initiate(&h.dev, pc, h.now) == 0, "initiation sent");
	CHECK(tl_ch_take(&h, &r, TL_MSG_INITIATION, &ours, sizeof(ours)) == (int)sizeof(ours), "on the wire");
	CHECK(tl_ch_remote_respond(&h, &r, &ours, &resp) == 0, "peer responds");
	h.now += 1000000;
	tl_ch_deliver(&h, &r, &resp, sizeof(resp));
	tl_ch_discard(&h);
	CHECK(atomic_load(&pc->dp->current) != NULL, "a handshake completed");
	t0 = (uint64_t)time(NULL);
	tl_ctlapi_request(&h.dev, show_req, strlen(show_req), &show);
	t1 = (uint64_t)time(NULL);
	tl_ctlapi_request(&h.dev, bad_req, strlen(bad_req), &bad);
	CHECK(show.p && !strncmp(show.p, "---\nstatus: ok\napi_version: 1\nop: show\n", 39), "show's reply: %.60s",
	      show.p ? show.p : "(none)");
	CHECK(bad.p && strstr(bad.p, "status: error\napi_version: 1\n"), "an error reply: %.80s", bad.p ? bad.p : "(none)");
	e1 = show_entry(show.p, r.id.pub);
	e2 = show_entry(show.p, r2.id.pub);
	CHECK(key_u64(e1, "last_handshake", &last) && last, "the new name: %s", e1 ? e1 : "(no entry)");
	CHECK(key_u64(e1, "latest_handshake_age_s", &age) && age + last >= t0 && age + last <= t1,
	      "the old name beside it: the seconds since it (%" PRIu64 " at %" PRIu64 ", read in %" PRIu64 "..%" PRIu64 ")",
	      age, last, t0, t1);
	CHECK(key_u64(e2, "last_handshake", &unused) && !key_u64(e2, "latest_handshake_age_s", &unused),
	      "absent before the first handshake: %s", e2 ? e2 : "(no entry)");
out:
	free(e1);
	free(e2);
	tl_buf_free(&show);
	tl_buf_free(&bad);
	tl_ch_teardown(&h);
}

/* Prometheus gives a time counter in seconds with every digit of its nanoseconds (or
 * microseconds): a worker busy for 1.523617882 s reads 1.523617882, not a value rounded to
 * a few significant digits that differs from what show and telemetry say. */
static void test_prom_seconds_exact(void)
{
	struct tl_buf prom = { 0 };
	struct tl_ch h;
	const char *p;
	double busy = 0, loop = 0;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	h.dev.workers[0].cnt.busy_ns = 1523617882;
	h.dev.workers[0].cnt.loop_ns = 123456789012345;
	tl_metrics_render(&h.dev, &prom);
	p = prom.p ? strstr(prom.p, "\ntunless_worker_busy_seconds_total{") : NULL;
	CHECK(p && (p = strchr(p, ' ')) && sscanf(p, "%lf", &busy) == 1 && busy == 1.523617882,
	      "busy 1523617882 ns: %.60s", p ? p : "(no sample)");
	p = prom.p ? strstr(prom.p, "\ntunless_worker_loop_seconds_total{") : NULL;
	CHECK(p && (p = strchr(p, ' ')) && sscanf(p, "%lf", &loop) == 1 && loop == 123456.789012345,
	      "loop 123456789012345 ns: %.60s", p ? p : "(no sample)");
	tl_buf_free(&prom);
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (tl_ch_eal_init(argv[0]) != 0)
		return 1;
	test_reader_vs_writes();
	test_order();
	test_abort_order();
	test_version_alias();
	test_prom_seconds_exact();
	tl_ch_eal_fini();
	return check_report();
}
