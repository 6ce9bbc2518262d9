/* Unit tests for the configuration loader: every example config loads, every broken config
 * fails with the expected "<file>:<line>: <field>" prefix, and the shared parsers round-trip.
 * Run from the project source root (meson test sets workdir). */
#include "config/config.h"
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BAD "tests/unit/config/configs/bad/"

struct bad_case {
	const char *file;
	unsigned line;
	const char *field;    /* exact field path after "file:line: " */
	const char *why;      /* substring of the reason */
};

static const struct bad_case bad_cases[] = {
	{ "syntax.yaml", 4, "private_key[1]", "invalid YAML" },
	/* a key with a line end and a control character: shown escaped, the error one line */
	{ "key_newline.yaml", 4, "colo\\nur\\x01[1]", "invalid YAML" },
	{ "unknown_top.yaml", 7, "colour", "unknown key 'colour'" },
	{ "unknown_peer_key.yaml", 9, "peers[0].allowed_ip", "unknown key" },
	{ "unknown_peer1_key.yaml", 9, "peers[1].keepalive", "unknown key" },
	{ "wrong_type_seq.yaml", 7, "mtu", "wrong type: expected an integer, got a list" },
	{ "wrong_type_map.yaml", 5, "ports.wan", "wrong type: expected a mapping" },
	{ "wrong_type_int.yaml", 7, "workers", "'many' is not an integer" },
	{ "allowed_ip_type.yaml", 9, "peers[1].allowed_ips[1]", "expected a string" },
	{ "missing_name.yaml", 1, "name", "missing" },
	{ "bad_base64.yaml", 3, "private_key", "not valid base64" },
	{ "key31.yaml", 8, "peers[0].public_key", "31 bytes" },
	{ "bad_prefix.yaml", 12, "peers[1].allowed_ips[0]",
	  "'10.0.0.300/24' is not an IPv4/IPv6 prefix" },
	{ "prefix33.yaml", 9, "peers[0].allowed_ips[0]", "above 32" },
	{ "bad_endpoint.yaml", 9, "peers[0].endpoint", "is not an endpoint" },
	{ "hostname_endpoint.yaml", 9, "peers[0].endpoint", "hostnames are not accepted" },
	{ "endpoint_port0.yaml", 9, "peers[0].endpoint", "port outside 1..65535" },
	{ "port0.yaml", 7, "listen_port", "0 is out of range 1..65535" },
	{ "port70000.yaml", 7, "listen_port", "70000 is out of range 1..65535" },
	{ "port_garbage.yaml", 7, "listen_port", "'51820x' is not an integer" },
	{ "dup_peer.yaml", 13, "peers[2].public_key", "same public key as peers[0] 'one'" },
	{ "dup_allowed.yaml", 13, "peers[1].allowed_ips[1]",
	  "10.2.0.0/24 of peers[1] 'sitec' is already an allowed IP of peers[0] 'siteb'" },
	{ "lan_in_host.yaml", 7, "ports.lan.iface", "not in host mode" },
	{ "host_lan_udp.yaml", 7, "ports.lan.driver", "'udp' is not packet or af_xdp (host mode)" },
	{ "packet_wan.yaml", 5, "ports.wan.driver", "packet is a LAN port kind only" },
	{ "packet_no_iface.yaml", 6, "ports.lan.iface", "missing (required for driver packet)" },
	{ "packet_zero_copy.yaml", 6, "ports.lan.zero_copy", "only for driver af_xdp" },
	{ "addresses_in_gateway.yaml", 7, "addresses", "only for host mode" },
	{ "missing_wan.yaml", 4, "ports.wan", "missing" },
	{ "missing_lan.yaml", 4, "ports.lan", "required in gateway mode" },
	{ "mtu_range.yaml", 7, "mtu", "100 is out of range 576..9000" },
	{ "mtu_v6.yaml", 7, "mtu", "below 1280" },
	/* an af_xdp port's buffers are one page each (4 KiB here): 3 426 is the largest MTU */
	{ "mtu_af_xdp.yaml", 7, "mtu",
	  "9000 is above 3426, the largest tunnel MTU the af_xdp port kind carries (ports.wan: " },
	{ "mtu_host_lan_af_xdp.yaml", 8, "mtu",
	  "3427 is above 3426, the largest tunnel MTU the af_xdp port kind carries (ports.lan: " },
	{ "bad_mac.yaml", 9, "neighbours[1].mac", "is not a MAC address" },
	{ "neighbour_lan_host.yaml", 8, "neighbours[0].port", "no lan port in host mode" },
	{ "both_keys.yaml", 4, "private_key_file", "only one of" },
	{ "no_key.yaml", 1, "private_key", "missing" },
	{ "missing_key_file.yaml", 3, "private_key_file", "cannot open" },
	{ "long_name.yaml", 1, "name", "not a valid name" },
	{ "bad_mode.yaml", 2, "mode", "'router' is not host or gateway" },
	{ "pmd_no_devargs.yaml", 5, "ports.wan.devargs", "required for driver pmd" },
	{ "afxdp_devargs.yaml", 5, "ports.wan.devargs", "only for driver pmd" },
	{ "udp_no_iface.yaml", 5, "ports.wan.iface", "required for driver udp" },
	{ "udp_lan.yaml", 6, "ports.lan.driver", "udp is a WAN port kind only" },
	{ "udp_devargs.yaml", 5, "ports.wan.devargs", "only for driver pmd" },
	{ "bad_bool.yaml", 5, "ports.wan.zero_copy", "not true or false" },
	{ "timers_order.yaml", 9, "timers.reject_after_time", "greater than rekey_after_time" },
	{ "timers_negative.yaml", 8, "timers.rekey_timeout", "not a duration" },
	{ "timers_messages.yaml", 8, "timers.reject_after_messages", "out of range" },
	{ "dup_key.yaml", 7, "name", "given twice" },
	{ "alias.yaml", 6, "ports.wan", "aliases are not supported" },
	{ "empty.yaml", 1, "(document)", "empty" },
	{ "keepalive_range.yaml", 9, "peers[0].persistent_keepalive", "out of range 0..65535" },
	{ "peer_series_max.yaml", 9, "metrics.peer_series_max", "out of range 0..1048576" },
	{ "both_psk.yaml", 10, "peers[0].preshared_key_file", "only one of" },
	{ "peer_no_key.yaml", 8, "peers[0].public_key", "missing" },
	{ "workers_range.yaml", 7, "workers", "out of range 1..64" },
	{ "handshake_threads_range.yaml", 7, "handshake_threads", "-1 is out of range 0..64" },
	{ "handshake_threads_word.yaml", 7, "handshake_threads", "'all' is not an integer (nor auto)" },
	{ "aqm_rtt_range.yaml", 8, "ports.wan.aqm.rtt_us", "must be 0 (target_us and interval_us) or 20.." },
	{ "aqm_flow_rtt_range.yaml", 8, "ports.wan.aqm.flow_rtt_pct", "must be 0 (off) to 100" },
	{ "aqm_quantum_fast_range.yaml", 8, "ports.wan.aqm.quantum_fast", "must be 0 (quantum always) or 256..1048576" },
	{ "does-not-exist.yaml", 0, "(file)", "No such file" },
};

static void test_bad_one(const struct bad_case *t)
{
	char path[256], err[512], prefix[384];
	struct tl_config *cfg = (struct tl_config *)1;
	int rc;

	snprintf(path, sizeof(path), BAD "%s", t->file);
	snprintf(prefix, sizeof(prefix), "%s:%u: %s: ", path, t->line, t->field);
	err[0] = '\0';
	rc = tl_config_load(path, &cfg, err, sizeof(err));
	CHECK(rc == -1 && cfg == NULL, "%s: expected failure, rc %d", t->file, rc);
	CHECK(!strncmp(err, prefix, strlen(prefix)), "%s: got '%s', want prefix '%s'", t->file,
	      err, prefix);
	CHECK(strstr(err, t->why) != NULL, "%s: got '%s', want '%s' in it", t->file, err, t->why);
	CHECK(!strchr(err, '\n'), "%s: error is not one line: '%s'", t->file, err);
	if (rc == 0)
		tl_config_free(cfg);
}

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		test_bad_one(&bad_cases[i]);
}

/* Every file under tests/unit/config/configs/bad/ has an expectation. */
static void test_bad_all_listed(void)
{
	glob_t g;

	CHECK(glob(BAD "*.yaml", 0, NULL, &g) == 0, "glob bad configs");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *base = g.gl_pathv[i] + strlen(BAD);
		bool listed = false;

		for (size_t j = 0; j < sizeof(bad_cases) / sizeof(bad_cases[0]); j++)
			listed |= !strcmp(bad_cases[j].file, base);
		CHECK(listed, "%s has no expectation in bad_cases", base);
	}
	globfree(&g);
}

static void test_examples(void)
{
	glob_t g;
	int n = 0;

	CHECK(glob("configs/*.yaml", 0, NULL, &g) == 0, "glob configs/*.yaml");
	for (size_t i = 0; i < g.gl_pathc; i++, n++) {
		struct tl_config *cfg = NULL;
		char err[512] = "";

		CHECK(tl_config_load(g.gl_pathv[i], &cfg, err, sizeof(err)) == 0, "%s: %s",
		      g.gl_pathv[i], err);
		tl_config_free(cfg);
	}
	CHECK(n >= 4, "expected at least 4 example configs, found %d", n);
	globfree(&g);
}

static struct tl_config *load_ok(const char *path)
{
	struct tl_config *cfg = NULL;
	char err[512] = "";

	if (tl_config_load(path, &cfg, err, sizeof(err)) < 0) {
		CHECK(0, "%s: %s", path, err);
		return NULL;
	}
	return cfg;
}

static void expect_prefix(const struct tl_prefix *p, const char *want)
{
	char buf[64];

	tl_prefix_format(buf, sizeof(buf), p);
	CHECK(!strcmp(buf, want), "prefix %s, want %s", buf, want);
}

static void test_gateway_a(void)
{
	struct tl_config *cfg = load_ok("configs/gateway-a.yaml");
	char b64[45];

	if (!cfg)
		return;
	CHECK(cfg->mode == TL_MODE_GATEWAY && !strcmp(cfg->name, "gwa"), "gateway-a identity");
	CHECK(cfg->wan.present && cfg->lan.present && !strcmp(cfg->wan.iface, "wan-a") &&
	      !strcmp(cfg->lan.iface, "lan-a"), "gateway-a ports");
	CHECK(cfg->n_peers == 2 && cfg->n_addresses == 0, "gateway-a counts");
	tl_key_to_base64(b64, cfg->peers[1].public_key);
	CHECK(!strcmp(b64, "///m5AG8uonBGvfU3rAEudWp1y/VpMKKBuJYggXFTik="), "roadwarrior key");
	CHECK(!cfg->peers[1].has_endpoint && !strcmp(cfg->peers[1].name, "roadwarrior"),
	      "roadwarrior roams");
	tl_config_free(cfg);
}

static void test_host_a(void)
{
	struct tl_config *cfg = load_ok("configs/host-a.yaml");
	char buf[64];

	if (!cfg)
		return;
	CHECK(cfg->mode == TL_MODE_HOST && !strcmp(cfg->name, "tla") && !cfg->lan.present,
	      "host-a identity");
	CHECK(cfg->n_addresses == 2, "host-a addresses");
	if (cfg->n_addresses == 2) {
		expect_prefix(&cfg->addresses[0], "10.77.0.1/24");   /* host bits kept */
		expect_prefix(&cfg->addresses[1], "fd77::1/64");
	}
	tl_sockaddr_format(buf, sizeof(buf), &cfg->peers[0].endpoint);
	CHECK(!strcmp(buf, "10.99.0.2:51820"), "host-a endpoint %s", buf);
	CHECK(cfg->listen_port == 51820 && cfg->mtu == 1420 && cfg->workers == 1 &&
	      cfg->staged_packets == 128 && cfg->wan.queues == 1 &&
	      cfg->wan.driver == TL_DRIVER_AUTO && !cfg->wan.zero_copy, "host-a defaults");
	CHECK(cfg->timers.rekey_after_time == 120 && cfg->timers.reject_after_time == 180 &&
	      cfg->timers.rekey_attempt_time == 90 && cfg->timers.rekey_timeout == 5 &&
	      cfg->timers.keepalive_timeout == 10 &&
	      cfg->timers.rekey_after_messages == (1ull << 60) &&
	      cfg->timers.reject_after_messages == 18446744073709543423ull, "timer defaults");
	CHECK(cfg->eal_args == NULL && cfg->n_eal_args == 0 && cfg->n_neighbours == 0,
	      "host-a optional lists");
	tl_config_free(cfg);
}

static void test_full_peers(const struct tl_config *cfg)
{
	const struct tl_cfg_peer *p = &cfg->peers[0];
	char buf[64];

	CHECK(p->has_psk && p->persistent_keepalive == 25 && !strcmp(p->name, "site-b"),
	      "full peer 0");
	tl_sockaddr_format(buf, sizeof(buf), &p->endpoint);
	CHECK(!strcmp(buf, "[fd99::2]:51821"), "full endpoint %s", buf);
	CHECK(p->n_allowed_ips == 4, "allowed count");
	if (p->n_allowed_ips == 4) {   /* host bits cleared, like wg */
		expect_prefix(&p->allowed_ips[0], "10.2.0.0/24");
		expect_prefix(&p->allowed_ips[1], "fd02::/64");
		expect_prefix(&p->allowed_ips[2], "192.0.2.77/32");
		expect_prefix(&p->allowed_ips[3], "0.0.0.0/0");
	}
	tl_sockaddr_format(buf, sizeof(buf), &cfg->peers[1].endpoint);
	CHECK(!strcmp(buf, "10.99.0.3:65535") && !cfg->peers[1].has_psk, "full peer 1 %s", buf);
}

static void test_full(void)
{
	struct tl_config *cfg = load_ok("tests/unit/config/configs/good/full.yaml");
	static const uint8_t mac1[6] = { 0x0a, 0xbc, 0xde, 0xf0, 0x12, 0x34 };

	if (!cfg)
		return;
	CHECK(!strcmp(cfg->name, "full_0.x-y") && cfg->listen_port == 4242 && cfg->mtu == 1280 &&
	      cfg->workers == 2 && cfg->handshake_threads == 3 && cfg->staged_packets == 64, "full scalars");
	CHECK(cfg->wan.queues == 4 && cfg->wan.zero_copy && cfg->lan.driver == TL_DRIVER_PMD &&
	      cfg->lan.queues == 2 && !strcmp(cfg->lan.devargs, "net_null0,size=64") &&
	      !strcmp(cfg->lan.iface, "nulllan"), "full ports");
	CHECK(cfg->n_peers == 2, "full peers");
	if (cfg->n_peers == 2)
		test_full_peers(cfg);
	CHECK(cfg->n_neighbours == 2 && cfg->neighbours[0].on_wan && !cfg->neighbours[1].on_wan &&
	      cfg->neighbours[1].ip.family == AF_INET6 &&
	      !memcmp(cfg->neighbours[1].mac, mac1, 6), "full neighbours");
	CHECK(cfg->timers.rekey_after_time == 2.5 && cfg->timers.rekey_timeout == 0.5 &&
	      cfg->timers.rekey_after_messages == 1000, "full timers");
	CHECK(cfg->n_eal_args == 2 && !strcmp(cfg->eal_args[1], "--no-pci") &&
	      cfg->eal_args[2] == NULL, "full eal");
	tl_config_free(cfg);
}

/* workers: auto is every CPU this process may use but the control lcore's, at least one;
 * handshake_threads the same but none on one CPU; the ports' queue pairs default to the
 * workers. */
static void test_workers_auto(void)
{
	struct tl_config *cfg = load_ok("tests/unit/config/configs/good/workers_auto.yaml");
	cpu_set_t set, one;
	unsigned want = 1;

	if (!cfg)
		return;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1)
		want = (unsigned)CPU_COUNT(&set) - 1;
	want = want > TL_CFG_WORKERS_MAX ? TL_CFG_WORKERS_MAX : want;
	CHECK(cfg->workers == want && tl_cfg_workers_auto() == want, "workers: auto = %u, want %u", cfg->workers,
	      want);
	want = CPU_COUNT(&set) > 1 ? want : 0;              /* the control thread alone on one CPU */
	CHECK(cfg->handshake_threads == want && tl_cfg_handshake_threads_auto() == want,
	      "handshake_threads (absent): auto = %u, want %u", cfg->handshake_threads, want);
	CHECK(cfg->wan.queues == cfg->workers, "queues default to the workers (%u)", cfg->wan.queues);
	tl_config_free(cfg);

	/* On one CPU: one worker, no handshake thread. */
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			CPU_SET(c, &one);
			break;
		}
	if (CPU_COUNT(&one) == 1 && sched_setaffinity(0, sizeof(one), &one) == 0) {
		cfg = load_ok("tests/unit/config/configs/good/workers_auto.yaml");
		CHECK(cfg && cfg->workers == 1 && cfg->handshake_threads == 0,
		      "one CPU: workers %u, handshake_threads %u", cfg ? cfg->workers : 0, cfg ? cfg->handshake_threads : 0);
		tl_config_free(cfg);
		sched_setaffinity(0, sizeof(set), &set);
	}
}

static void test_udp_wan(void)
{
	struct tl_config *cfg = load_ok("tests/unit/config/configs/good/udp_wan.yaml");

	if (!cfg)
		return;
	CHECK(cfg->wan.driver == TL_DRIVER_UDP && !strcmp(cfg->wan.iface, "eth0"), "driver: udp on the WAN");
	tl_config_free(cfg);
}

/* A gateway's LAN port of the packet kind, and the MTU it carries (an af_xdp port would not). */
static void test_gateway_packet_lan(void)
{
	struct tl_config *cfg = load_ok("tests/unit/config/configs/good/packet_gateway.yaml");

	if (!cfg)
		return;
	CHECK(cfg->mode == TL_MODE_GATEWAY && cfg->lan.present && cfg->lan.driver == TL_DRIVER_PACKET &&
	      !strcmp(cfg->lan.iface, "eth1") && cfg->mtu == 9000, "gateway mode: driver packet on ports.lan (driver %d, "
	      "iface %s, mtu %u)", (int)cfg->lan.driver, cfg->lan.iface, (unsigned)cfg->mtu);
	tl_config_free(cfg);
}

static void test_host_lan(void)
{
	struct tl_config *cfg = load_ok("tests/unit/config/configs/good/host_lan.yaml");

	if (!cfg)
		return;
	CHECK(cfg->lan.present && cfg->lan.driver == TL_DRIVER_PACKET && cfg->lan.aqm.target_us == 2000 &&
	      cfg->lan.aqm.rtt_us == 200000 && cfg->lan.aqm.l4s_us == 500 && cfg->wan.aqm.l4s_us == 1000 &&
	      cfg->wan.aqm.rtt_us == 0 && cfg->lan.aqm.flow_rtt_pct == 35 && cfg->wan.aqm.flow_rtt_pct == 20 &&
	      cfg->lan.aqm.quantum_fast == 0 && cfg->wan.aqm.quantum_fast == 65536,
	      "host mode: ports.lan chooses the packet kind and its queue (target %u us, rtt %u us, l4s %u us, "
	      "flow_rtt_pct %u, quantum_fast %u)", cfg->lan.aqm.target_us, cfg->lan.aqm.rtt_us, cfg->lan.aqm.l4s_us,
	      cfg->lan.aqm.flow_rtt_pct, cfg->lan.aqm.quantum_fast);
	tl_config_free(cfg);
	cfg = load_ok("configs/host-a.yaml");
	if (cfg)
		CHECK(!cfg->lan.present && cfg->lan.driver == TL_DRIVER_PACKET && cfg->wan.driver == TL_DRIVER_AUTO,
		      "host mode without drivers: packet on the LAN, auto (udp unless zero-copy) on the WAN");
	tl_config_free(cfg);
}

/* Jumbo frames where the port kinds carry them: host mode (packet LAN, auto WAN, which takes
 * the udp kind above the af_xdp limit), a gateway of PMD ports. */
static void test_jumbo(void)
{
	static const char *const files[] = { "tests/unit/config/configs/good/jumbo_host.yaml",
					     "tests/unit/config/configs/good/jumbo_gateway.yaml" };

	CHECK(tl_cfg_af_xdp_mtu_max() == (unsigned)sysconf(_SC_PAGESIZE) - 576 - 94,
	      "af_xdp: a page less the buffer's header and headrooms less the frame's overhead (%u)",
	      tl_cfg_af_xdp_mtu_max());
	for (unsigned i = 0; i < 2; i++) {
		struct tl_config *cfg = load_ok(files[i]);

		CHECK(cfg && cfg->mtu == 9000, "%s: mtu 9000 loads", files[i]);
		tl_config_free(cfg);
	}
}

static void test_key_files(void)
{
	struct tl_config *cfg = load_ok("tests/unit/config/configs/good/keyfile.yaml");
	uint8_t want[TL_KEY_LEN];

	if (!cfg)
		return;
	tl_key_from_base64(want, "8KXxrJDW0P45LXP9J7xJFF0BZ4roulGBYr3NWBVhTkM=");
	CHECK(!memcmp(cfg->private_key, want, TL_KEY_LEN), "private key from file");
	CHECK(cfg->n_peers == 1 && cfg->peers[0].has_psk, "psk from file");
	tl_config_free(cfg);
}

/* Key files: a regular file loads, silently at mode 0600, with a warning naming the field
 * when group or others may read it; a directory or a FIFO is refused. */
#define DEMO_KEY "8KXxrJDW0P45LXP9J7xJFF0BZ4roulGBYr3NWBVhTkM=\n"

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", path);
}

/* Loads a config whose private key (or PSK) is the file at key; returns 0 if it loaded. */
static int load_with_key(const char *dir, const char *key, bool psk, char *err, size_t errlen, char *warn,
			 size_t warnlen)
{
	char yaml[512], text[1024];
	struct tl_config *cfg = NULL;

	snprintf(yaml, sizeof(yaml), "%s/c.yaml", dir);
	snprintf(text, sizeof(text),
		 "name: kf1\nmode: host\nprivate_key_file: %s\nports:\n  wan: {iface: veth0}\npeers:\n"
		 "  - public_key: iZJymIxf26UFE0sFwPH/37HRJKkv8mPlHrxKAsTi020=\n%s%s\n",
		 psk ? "good.key" : key, psk ? "    preshared_key_file: " : "", psk ? key : "");
	write_text(yaml, text);
	err[0] = warn[0] = '\0';
	if (tl_config_load(yaml, &cfg, err, errlen) < 0)
		return -1;
	snprintf(warn, warnlen, "%s", cfg->warnings);
	tl_config_free(cfg);
	return 0;
}

static void test_key_file_modes(void)
{
	char dir[] = "/tmp/tl-keyfile-XXXXXX", path[256], err[512], warn[1024];
	int fifo_w = -1;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/good.key", dir);
	write_text(path, DEMO_KEY);
	chmod(path, 0600);
	CHECK(load_with_key(dir, path, false, err, sizeof(err), warn, sizeof(warn)) == 0 && !warn[0],
	      "key file 0600 loads without a warning (%s%s)", err, warn);

	snprintf(path, sizeof(path), "%s/open.key", dir);
	write_text(path, DEMO_KEY);
	chmod(path, 0644);
	CHECK(load_with_key(dir, path, false, err, sizeof(err), warn, sizeof(warn)) == 0 &&
	      strstr(warn, ":3: private_key_file: ") && strstr(warn, "accessible to group or others (mode 0644)"),
	      "key file 0644 loads with a warning on line 3 (%s) (warning: %s)", err, warn);
	chmod(path, 0640);
	CHECK(load_with_key(dir, path, false, err, sizeof(err), warn, sizeof(warn)) == 0 && strstr(warn, "(mode 0640)"),
	      "key file 0640 warns (%s%s)", err, warn);
	CHECK(load_with_key(dir, path, true, err, sizeof(err), warn, sizeof(warn)) == 0 &&
	      strstr(warn, ":8: peers[0].preshared_key_file: ") && !strstr(warn, "private_key_file"),
	      "PSK file 0640 warns under its own field (%s) (warning: %s)", err, warn);

	snprintf(path, sizeof(path), "%s/dir.key", dir);
	mkdir(path, 0700);
	CHECK(load_with_key(dir, path, false, err, sizeof(err), warn, sizeof(warn)) < 0 &&
	      strstr(err, "private_key_file: ") && strstr(err, "is not a regular file"),
	      "a directory as key file is refused (%s)", err);
	rmdir(path);

	/* A FIFO with a key waiting in it (the writer end held open, so nothing blocks). */
	snprintf(path, sizeof(path), "%s/fifo.key", dir);
	if (mkfifo(path, 0600) == 0)
		fifo_w = open(path, O_RDWR | O_NONBLOCK);
	CHECK(fifo_w >= 0 && write(fifo_w, DEMO_KEY, strlen(DEMO_KEY)) == (ssize_t)strlen(DEMO_KEY),
	      "FIFO set up");
	CHECK(load_with_key(dir, path, false, err, sizeof(err), warn, sizeof(warn)) < 0 &&
	      strstr(err, "is not a regular file"), "a FIFO as key file is refused (%s)", err);
	if (fifo_w >= 0)
		close(fifo_w);
	unlink(path);

	snprintf(path, sizeof(path), "%s/good.key", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/open.key", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	unlink(path);
	rmdir(dir);
}

/* A configuration file holding a key inline is as secret as a key file: group or others
 * able to open it give a warning (what tunlessd logs) at the first inline key, 0600 none. */
static int load_inline(const char *yaml, const char *text, mode_t mode, char *err, size_t errlen, char *warn,
		       size_t warnlen)
{
	struct tl_config *cfg = NULL;

	write_text(yaml, text);
	chmod(yaml, mode);
	err[0] = warn[0] = '\0';
	if (tl_config_load(yaml, &cfg, err, errlen) < 0)
		return -1;
	snprintf(warn, warnlen, "%s", cfg->warnings);
	tl_config_free(cfg);
	return 0;
}

static void test_inline_key_mode(void)
{
	char dir[] = "/tmp/tl-inline-XXXXXX", yaml[256], key[256], text[1024], err[512], warn[1024];
	const char *head = "name: ik1\nmode: host\n", *rest = "ports:\n  wan: {iface: veth0}\npeers:\n"
		"  - public_key: iZJymIxf26UFE0sFwPH/37HRJKkv8mPlHrxKAsTi020=\n";

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(yaml, sizeof(yaml), "%s/c.yaml", dir);
	snprintf(text, sizeof(text), "%sprivate_key: %s%s", head, DEMO_KEY, rest);
	CHECK(load_inline(yaml, text, 0600, err, sizeof(err), warn, sizeof(warn)) == 0 && !warn[0],
	      "inline private key, file 0600: loads without a warning (%s%s)", err, warn);
	CHECK(load_inline(yaml, text, 0644, err, sizeof(err), warn, sizeof(warn)) == 0 &&
	      strstr(warn, "c.yaml:3: private_key: the file is accessible to group or others (mode 0644) and holds "
			   "this key inline: chmod 600 ") && strstr(warn, "or move the key to private_key_file"),
	      "inline private key, file 0644: a warning on line 3 (%s) (warning: %s)", err, warn);
	CHECK(load_inline(yaml, text, 0640, err, sizeof(err), warn, sizeof(warn)) == 0 && strstr(warn, "(mode 0640)"),
	      "inline private key, file 0640 (group-readable): warns (%s%s)", err, warn);
	CHECK(load_inline(yaml, text, 0604, err, sizeof(err), warn, sizeof(warn)) == 0 && strstr(warn, "(mode 0604)"),
	      "inline private key, file 0604 (world-readable): warns (%s%s)", err, warn);

	/* The private key in a 0600 key file, a PSK inline: the warning names the PSK. */
	snprintf(key, sizeof(key), "%s/gw.key", dir);
	write_text(key, DEMO_KEY);
	chmod(key, 0600);
	snprintf(text, sizeof(text), "%sprivate_key_file: gw.key\n%s    preshared_key: %s", head, rest, DEMO_KEY);
	CHECK(load_inline(yaml, text, 0644, err, sizeof(err), warn, sizeof(warn)) == 0 &&
	      strstr(warn, ":8: peers[0].preshared_key: the file is accessible to group or others (mode 0644)") &&
	      strstr(warn, "or move the key to preshared_key_file") && !strstr(warn, "private_key"),
	      "inline PSK, file 0644: a warning at the PSK (%s) (warning: %s)", err, warn);
	/* Keys in files only: the YAML file's mode is no secret's. */
	snprintf(text, sizeof(text), "%sprivate_key_file: gw.key\n%s", head, rest);
	CHECK(load_inline(yaml, text, 0644, err, sizeof(err), warn, sizeof(warn)) == 0 && !warn[0],
	      "no inline key, file 0644: no warning (%s%s)", err, warn);
	unlink(key);
	unlink(yaml);
	rmdir(dir);
}

static void test_keys(void)
{
	uint8_t k[TL_KEY_LEN], k2[TL_KEY_LEN];
	char b64[45], hex[65];

	for (int i = 0; i < TL_KEY_LEN; i++)
		k[i] = (uint8_t)(i * 37 + 1);
	tl_key_to_base64(b64, k);
	CHECK(strlen(b64) == 44 && tl_key_from_base64(k2, b64) == 0 && !memcmp(k, k2, 32),
	      "base64 round trip");
	tl_key_to_hex(hex, k);
	CHECK(strlen(hex) == 64 && tl_key_from_hex(k2, hex) == 0 && !memcmp(k, k2, 32),
	      "hex round trip");
	CHECK(tl_key_from_base64(k2, "AAAA") < 0, "short base64");
	CHECK(tl_key_from_base64(k2, "iZJymIxf26UFE0sFwPH/37HRJKkv8mPlHrxKAsTi020") < 0,
	      "unpadded base64");
	CHECK(tl_key_from_base64(k2, "iZJymIxf26UFE0sFwPH/37HRJKkv8mPlHrxKAsTi020=x") < 0,
	      "trailing garbage");
	hex[63] = 'g';
	CHECK(tl_key_from_hex(k2, hex) < 0, "bad hex digit");
	CHECK(tl_key_from_hex(k2, "00") < 0, "short hex");
}

static void prefix_roundtrip(const char *in, const char *want, bool clear)
{
	struct tl_prefix p, q;
	char buf[64];

	CHECK(tl_prefix_parse(&p, in) == 0 && !tl_prefix_error(in), "parse %s", in);
	if (clear)
		tl_prefix_clear_host_bits(&p);
	tl_prefix_format(buf, sizeof(buf), &p);
	CHECK(!strcmp(buf, want), "%s -> %s, want %s", in, buf, want);
	CHECK(tl_prefix_parse(&q, buf) == 0 && q.len == p.len && q.ip.family == p.ip.family &&
	      !memcmp(q.ip.addr, p.ip.addr, 16), "reparse %s", buf);
}

static void test_prefixes(void)
{
	static const char *const bad[] = { "", "/24", "10.0.0.1/", "10.0.0.1/33", "fd00::/129",
		"10.0.0.1/-1", "10.0.0.1/ 8", "10.0.0.1/0x8", "10.0.0/8", "fe80::1%eth0/64",
		"10.0.0.1/24/3", "example.com/24", "10.0.0.1 /24", "1.2.3.4/1234" };

	prefix_roundtrip("10.0.0.0/24", "10.0.0.0/24", false);
	prefix_roundtrip("10.9.0.1/24", "10.9.0.1/24", false);   /* interface address */
	prefix_roundtrip("10.9.0.1/24", "10.9.0.0/24", true);
	prefix_roundtrip("10.9.255.255/17", "10.9.128.0/17", true);
	prefix_roundtrip("192.0.2.1", "192.0.2.1/32", true);
	prefix_roundtrip("0.0.0.0/0", "0.0.0.0/0", true);
	prefix_roundtrip("255.255.255.255/1", "128.0.0.0/1", true);
	prefix_roundtrip("fd09::1/64", "fd09::/64", true);
	prefix_roundtrip("fd09:1:2:3:4:5:6:7/127", "fd09:1:2:3:4:5:6:6/127", true);
	prefix_roundtrip("fd09::1", "fd09::1/128", true);
	prefix_roundtrip("::/0", "::/0", true);
	prefix_roundtrip("::ffff:10.0.0.1/120", "::ffff:10.0.0.0/120", true);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tl_prefix p;

		CHECK(tl_prefix_parse(&p, bad[i]) < 0 && tl_prefix_error(bad[i]),
		      "'%s' must not parse", bad[i]);
	}
}

static void sockaddr_roundtrip(const char *in)
{
	struct tl_sockaddr sa;
	char buf[64];

	CHECK(tl_sockaddr_parse(&sa, in) == 0 && !tl_sockaddr_error(in), "parse %s", in);
	tl_sockaddr_format(buf, sizeof(buf), &sa);
	CHECK(!strcmp(buf, in), "%s -> %s", in, buf);
}

static void test_sockaddrs(void)
{
	static const char *const bad[] = { "", "10.0.0.1", "10.0.0.1:", "10.0.0.1:0",
		"10.0.0.1:65536", "10.0.0.1:70000", "fd00::1:51820", "[10.0.0.1]:1", "[fd00::1]",
		"[fd00::1]51820", "host.example:51820", "10.0.0.1:+5", "10.0.0.1:5x",
		"[fd00::1]:123456" };
	struct tl_sockaddr sa;

	sockaddr_roundtrip("10.99.0.1:51820");
	sockaddr_roundtrip("[fd99::2]:1");
	sockaddr_roundtrip("255.255.255.255:65535");
	CHECK(tl_sockaddr_parse(&sa, "[fd99::2]:51820") == 0 && sa.port == 51820 &&
	      sa.ip.family == AF_INET6 && sa.ip.addr[0] == 0xfd && sa.ip.addr[15] == 2, "v6 fields");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(tl_sockaddr_parse(&sa, bad[i]) < 0 && tl_sockaddr_error(bad[i]),
		      "'%s' must not parse", bad[i]);
	CHECK(strstr(tl_sockaddr_error("vpn.example.com:51820"), "hostname") != NULL,
	      "hostname explained");
}

static void test_macs(void)
{
	static const char *const bad[] = { "", "02:00:00:00:00", "02:00:00:00:00:0g",
		"02-00-00-00-00-01", "02:00:00:00:00:001", "2:00:00:00:00:01:" };
	uint8_t mac[6];

	CHECK(tl_mac_parse(mac, "02:aB:00:ff:10:01") == 0 && mac[1] == 0xab && mac[3] == 0xff &&
	      mac[5] == 0x01, "mac parse");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(tl_mac_parse(mac, bad[i]) < 0, "'%s' must not parse", bad[i]);
}

int main(void)
{
	test_keys();
	test_prefixes();
	test_sockaddrs();
	test_macs();
	test_examples();
	test_host_a();
	test_gateway_a();
	test_full();
	test_workers_auto();
	test_udp_wan();
	test_gateway_packet_lan();
	test_host_lan();
	test_jumbo();
	test_key_files();
	test_key_file_modes();
	test_inline_key_mode();
	test_bad();
	test_bad_all_listed();
	tl_config_free(NULL);
	return check_report();
}
