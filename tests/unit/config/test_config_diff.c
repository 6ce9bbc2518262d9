/* Unit test of a reload's difference (src/config/config_diff.c) without a device: two
 * configurations loaded from text, and what tl_config_diff says must change between them:
 * each key that needs a restart, the peer operations (removes, then updates, then adds; only
 * the fields that differ; allowed IPs compared as a set; an endpoint the file leaves out is
 * kept), the queue parameters per port and the listen port. */
#include "config/config_diff.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_A "KzETaL5ZMbcJUBnaaIpf/8sCfCptDvrtsrECFQCknlk="
#define KEY_B "ZDqoMH8guMBB/RLjCQV59cWgjLViQwPEYDmS70tTp3E="
#define KEY_C "jwvLVZNBEOjlezHaE9TcIWeGdLxHEtjl+blkivUaeR8="
#define PSK "TNOwu4vLshLw9hunu4ePa+Md11uFT6hpIopBNpHWYpw="

/* The configuration every case starts from; a case gives the text that replaces one line
 * (matched by its start) or, with a NULL start, lines appended. */
static const char base[] =
	"name: gw\n"
	"mode: gateway\n"
	"private_key: AC9YAPkLtUwtZI/TLcjHKrXB5pwRcbZZdNaMDYgxPFY=\n"
	"listen_port: 51820\n"
	"mtu: 1420\n"
	"workers: 2\n"
	"staged_packets: 64\n"
	"ports:\n"
	"  wan: {iface: wan0}\n"
	"  lan: {iface: lan0}\n"
	"peers:\n"
	"  - public_key: " KEY_A "\n"
	"    preshared_key: " PSK "\n"
	"    endpoint: 10.99.0.2:51820\n"
	"    allowed_ips: [10.2.0.0/24, fd02::/64]\n"
	"    persistent_keepalive: 25\n"
	"    name: site-b\n"
	"  - public_key: " KEY_B "\n"
	"    endpoint: 10.99.0.3:51820\n"
	"    allowed_ips: [10.3.0.0/24]\n";

static struct tl_config *load_text(const char *text)
{
	char path[] = "/tmp/tl-config-diff-XXXXXX", err[512];
	struct tl_config *c = NULL;
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	if (tl_config_load(path, &c, err, sizeof(err)) < 0)
		printf("load: %s\n", err);
	unlink(path);
	return c;
}

/* base with the line starting with `from` replaced by `to` (from NULL: to appended). */
static struct tl_config *variant(const char *from, const char *to)
{
	char text[4096];
	const char *at = from ? strstr(base, from) : NULL;

	if (!from) {
		snprintf(text, sizeof(text), "%s%s", base, to);
	} else {
		const char *eol = strchr(at, '\n') + 1;

		snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, to, eol);
	}
	return load_text(text);
}

static int diff_of(const char *from, const char *to, struct tl_config_diff *d)
{
	struct tl_config *o = load_text(base), *n = variant(from, to);
	int rc = o && n ? tl_config_diff(o, n, d) : -1;

	tl_config_free(o);
	tl_config_free(n);
	return rc;
}

static void test_same(void)
{
	struct tl_config *o = load_text(base), *n = load_text(base);
	struct tl_config_diff d;

	CHECK(o && n && tl_config_diff(o, n, &d) == 0, "diff of the same file");
	CHECK(!d.restart_key && d.n_ops == 0 && !d.queue_wan && !d.queue_lan && !d.listen_port,
	      "nothing to change: restart %s, %zu ops", d.restart_key ? d.restart_key : "-", d.n_ops);
	tl_config_diff_free(&d);
	tl_config_free(o);
	tl_config_free(n);
}

static void test_restart_keys(void)
{
	static const struct {
		const char *from, *to, *key;
	} cases[] = {
		{ "name:", "name: gw2\n", "name" },
		{ "private_key:", "private_key: yNA3J47F4IO08Zi1gNnfmeumKpvp+FUU4Q5e0HtCMl8=\n", "private_key" },
		{ "mtu:", "mtu: 1380\n", "mtu" },
		{ "workers:", "workers: 1\n", "workers" },
		{ NULL, "handshake_threads: 0\n", "handshake_threads" },
		{ "staged_packets:", "staged_packets: 32\n", "staged_packets" },
		{ "  wan:", "  wan: {iface: wan1}\n", "ports.wan" },
		{ "  wan:", "  wan: {iface: wan0, zero_copy: true}\n", "ports.wan" },
		{ "  lan:", "  lan: {iface: lan0, queues: 1}\n", "ports.lan" },
		{ NULL, "neighbours:\n  - {ip: 10.99.0.2, mac: \"02:00:00:00:00:01\", port: wan}\n", "neighbours" },
		{ NULL, "timers: {keepalive_timeout: 2}\n", "timers" },
		{ NULL, "eal: [\"--no-pci\"]\n", "eal" },
		{ NULL, "metrics: {}\n", "metrics" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tl_config_diff d;

		CHECK(diff_of(cases[i].from, cases[i].to, &d) == 0, "case %zu loads", i);
		CHECK(d.restart_key && !strcmp(d.restart_key, cases[i].key) && !d.ops, "%s: restart key %s, want %s",
		      cases[i].to, d.restart_key ? d.restart_key : "(none)", cases[i].key);
		tl_config_diff_free(&d);
	}
}

/* The host mode's addresses and the mode itself. */
static void test_restart_host(void)
{
	static const char host[] = "name: h\nmode: host\nprivate_key: AC9YAPkLtUwtZI/TLcjHKrXB5pwRcbZZdNaMDYgxPFY=\n"
				   "addresses: [10.77.0.1/24]\nports:\n  wan: {iface: veth-a}\n";
	static const char host2[] = "name: h\nmode: host\nprivate_key: AC9YAPkLtUwtZI/TLcjHKrXB5pwRcbZZdNaMDYgxPFY=\n"
				    "addresses: [10.77.0.1/24, fd77::1/64]\nports:\n  wan: {iface: veth-a}\n";
	static const char gw[] = "name: h\nmode: gateway\nprivate_key: AC9YAPkLtUwtZI/TLcjHKrXB5pwRcbZZdNaMDYgxPFY=\n"
				 "ports:\n  wan: {iface: veth-a}\n  lan: {iface: lan0}\n";
	struct tl_config *a = load_text(host), *b = load_text(host2), *c = load_text(gw);
	struct tl_config_diff d;

	CHECK(a && b && c, "host configurations load");
	CHECK(tl_config_diff(a, b, &d) == 0 && d.restart_key && !strcmp(d.restart_key, "addresses"),
	      "addresses need a restart");
	tl_config_diff_free(&d);
	CHECK(tl_config_diff(a, c, &d) == 0 && d.restart_key && !strcmp(d.restart_key, "mode"), "mode needs a restart");
	tl_config_diff_free(&d);
	tl_config_free(a);
	tl_config_free(b);
	tl_config_free(c);
}

static const struct tl_peer_op *op_for(const struct tl_config_diff *d, const char *b64)
{
	uint8_t key[TL_KEY_LEN];

	tl_key_from_base64(key, b64);
	for (size_t i = 0; i < d->n_ops; i++)
		if (!memcmp(d->ops[i].pub, key, TL_KEY_LEN))
			return &d->ops[i];
	return NULL;
}

static void test_peers(void)
{
	/* B removed, A's name, keepalive and allowed IPs changed, C added. */
	static const char text[] =
		"name: gw\nmode: gateway\nprivate_key: AC9YAPkLtUwtZI/TLcjHKrXB5pwRcbZZdNaMDYgxPFY=\n"
		"listen_port: 51820\nmtu: 1420\nworkers: 2\nstaged_packets: 64\n"
		"ports:\n  wan: {iface: wan0}\n  lan: {iface: lan0}\n"
		"peers:\n"
		"  - public_key: " KEY_C "\n    allowed_ips: [10.4.0.0/24]\n    persistent_keepalive: 5\n"
		"  - public_key: " KEY_A "\n    preshared_key: " PSK "\n    endpoint: 10.99.0.2:51820\n"
		"    allowed_ips: [10.2.0.0/24]\n    persistent_keepalive: 10\n    name: site-b2\n";
	struct tl_config *o = load_text(base), *n = load_text(text);
	const struct tl_peer_op *a, *b, *c;
	struct tl_config_diff d;

	CHECK(o && n && tl_config_diff(o, n, &d) == 0 && !d.restart_key, "peers differ, no restart");
	CHECK(d.n_remove == 1 && d.n_update == 1 && d.n_add == 1 && d.n_ops == 3, "1 removed, 1 updated, 1 added (%zu %zu %zu)",
	      d.n_remove, d.n_update, d.n_add);
	b = op_for(&d, KEY_B);
	a = op_for(&d, KEY_A);
	c = op_for(&d, KEY_C);
	CHECK(b == &d.ops[0] && b->remove, "the remove comes first");
	CHECK(a == &d.ops[1] && a->update_only && !a->remove, "then the update");
	CHECK(a && a->has_name && !strcmp(a->name, "site-b2") && a->has_keepalive && a->keepalive == 10,
	      "update: name and keepalive");
	CHECK(a && !a->has_psk && !a->has_endpoint, "update: unchanged PSK and endpoint are not touched");
	CHECK(a && a->replace_aips && a->n_aips == 1, "update: allowed IPs replaced by the file's one prefix");
	CHECK(c == &d.ops[2] && !c->update_only && c->replace_aips && c->n_aips == 1 && c->has_keepalive &&
	      c->keepalive == 5 && !c->has_psk && !c->has_endpoint && !c->has_name, "the add last, as configured");
	tl_config_diff_free(&d);
	CHECK(d.ops == NULL && d.n_ops == 0, "freed");
	tl_config_free(o);
	tl_config_free(n);
}

static void test_peer_fields(void)
{
	struct tl_config_diff d;
	const struct tl_peer_op *a;

	/* The same prefixes in another order: nothing to do. */
	CHECK(diff_of("    allowed_ips: [10.2.0.0/24, fd02::/64]", "    allowed_ips: [fd02::/64, 10.2.0.0/24]\n", &d) == 0 &&
	      d.n_ops == 0, "allowed IPs reordered: no operation (%zu)", d.n_ops);
	tl_config_diff_free(&d);
	/* The PSK left out: removed (all-zero). */
	CHECK(diff_of("    preshared_key:", "", &d) == 0 && d.n_ops == 1, "PSK left out: one update");
	a = op_for(&d, KEY_A);
	CHECK(a && a->has_psk && !memcmp(a->psk, (uint8_t[TL_KEY_LEN]){ 0 }, TL_KEY_LEN), "the PSK is cleared");
	tl_config_diff_free(&d);
	/* The endpoint left out: kept (roaming decides it), no operation. */
	CHECK(diff_of("    endpoint: 10.99.0.2:51820", "", &d) == 0 && d.n_ops == 0, "endpoint left out: kept");
	tl_config_diff_free(&d);
	/* Another endpoint: set. */
	CHECK(diff_of("    endpoint: 10.99.0.2:51820", "    endpoint: \"[fd99::2]:51821\"\n", &d) == 0 && d.n_ops == 1,
	      "endpoint changed: one update");
	a = op_for(&d, KEY_A);
	CHECK(a && a->has_endpoint && a->endpoint.port == 51821 && a->endpoint.ip.family == AF_INET6 &&
	      !a->replace_aips && !a->has_psk, "only the endpoint");
	tl_config_diff_free(&d);
}

static void test_queues_and_port(void)
{
	struct tl_config_diff d;

	CHECK(diff_of("  wan:", "  wan: {iface: wan0, aqm: {target_us: 2000}}\n", &d) == 0 && !d.restart_key &&
	      d.queue_wan && !d.queue_lan && d.n_ops == 0, "wan AQM changed");
	tl_config_diff_free(&d);
	CHECK(diff_of("  wan:", "  wan: {iface: wan0, aqm: {rtt_us: 200000}}\n", &d) == 0 && !d.restart_key &&
	      d.queue_wan && !d.queue_lan, "wan AQM rtt changed");
	tl_config_diff_free(&d);
	CHECK(diff_of("  wan:", "  wan: {iface: wan0, aqm: {l4s_us: 0}}\n", &d) == 0 && !d.restart_key &&
	      d.queue_wan && !d.queue_lan, "wan AQM l4s step changed");
	tl_config_diff_free(&d);
	CHECK(diff_of("  wan:", "  wan: {iface: wan0, aqm: {flow_rtt_pct: 0}}\n", &d) == 0 && !d.restart_key &&
	      d.queue_wan && !d.queue_lan, "wan AQM flow_rtt_pct changed");
	tl_config_diff_free(&d);
	CHECK(diff_of("  wan:", "  wan: {iface: wan0, aqm: {quantum_fast: 0}}\n", &d) == 0 && !d.restart_key &&
	      d.queue_wan && !d.queue_lan, "wan AQM quantum_fast changed");
	tl_config_diff_free(&d);
	CHECK(diff_of("  lan:", "  lan: {iface: lan0, shaper: {rate_bps: 100000000}}\n", &d) == 0 && !d.restart_key &&
	      !d.queue_wan && d.queue_lan, "lan shaper changed");
	tl_config_diff_free(&d);
	CHECK(diff_of("listen_port:", "listen_port: 51821\n", &d) == 0 && !d.restart_key && d.listen_port &&
	      d.n_ops == 0, "listen port changed");
	tl_config_diff_free(&d);
}

int main(void)
{
	test_same();
	test_restart_keys();
	test_restart_host();
	test_peers();
	test_peer_fields();
	test_queues_and_port();
	return check_report();
}
