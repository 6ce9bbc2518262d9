/* A request that fails changes nothing, through every entry that changes the device: a
 * change that moves the listen port and also asks for what cannot be had (an AQM limit above
 * what the port buffers were sized for at start, or peers when no routing table can be
 * built) leaves the port, the queue parameters, the private key and the peers as they were,
 * and the reply is an error. The entries: tl_dev_change itself, the control API's reload,
 * SIGHUP's reload (tl_notify_reload), the control API's set and UAPI set. Each is also shown
 * to move the port when nothing fails, so that "unchanged" is not a port that never moves. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/key.h"
#include "ctrl/aips.h"
#include "ctrl/devchange.h"
#include "ctrl/peer.h"
#include "ctrl_harness.h"
#include "daemon/ctlapi.h"
#include "daemon/notify.h"
#include "daemon/uapi.h"
#include "dataplane/worker.h"

#define PORT TL_CH_LISTEN_PORT
#define MOVED (TL_CH_LISTEN_PORT + 77)
/* Above the start capacity: the default memory_limit (32 MiB) holds 14563 packets, the
 * default limit (10240) fewer, and the pools were sized for the defaults. */
#define TOO_MANY 20000u

static char g_file[64];

static uint16_t port_now(struct tl_ch *h)
{
	return tl_dp_listen_port(&h->dev.dp);
}

static uint32_t wan_limit(struct tl_ch *h)
{
	struct tl_queue_snapshot *s = malloc(sizeof(*s));
	uint32_t limit = 0;

	if (s) {
		tl_worker_queue_read(&h->dev.workers[0], TL_PORT_WAN, s);
		limit = s->params.limit;
	}
	free(s);
	return limit;
}

static void write_config(const struct tl_ch *h, uint16_t port, uint32_t limit)
{
	char b64[45];
	FILE *f = fopen(g_file, "w");

	if (!f)
		return;
	tl_key_to_base64(b64, h->cfg.private_key);
	fprintf(f, "name: tlch\nmode: host\nprivate_key: %s\nlisten_port: %u\naddresses: [10.77.0.1/24]\n"
		   "ports:\n  wan:\n    iface: lo\n",
		b64, (unsigned)port);
	if (limit)
		fprintf(f, "    aqm: {limit: %u}\n", limit);
	fclose(f);
	explicit_bzero(b64, sizeof(b64));
}

/* The harness device run from the file's configuration, as the daemon runs one: the
 * reloads diff against it. Its WAN port counts as started (its queue is reloadable). */
static struct tl_config *run_from_file(struct tl_ch *h)
{
	struct tl_config *c = NULL;
	char err[512];

	write_config(h, PORT, 0);
	if (tl_config_load(g_file, &c, err, sizeof(err)) < 0) {
		printf("config: %s\n", err);
		return NULL;
	}
	h->dev.cfg = c;
	h->dev.dp.mtu = c->mtu;
	h->dev.ports[TL_PORT_WAN].started = true;
	return c;
}

static bool is_error(const struct tl_buf *out, const char *field)
{
	char want[96];

	snprintf(want, sizeof(want), "field: %s", field);
	return out->p && strstr(out->p, "status: error") && strstr(out->p, want);
}

static void ctl(struct tl_ch *h, const char *req, struct tl_buf *out)
{
	tl_buf_free(out);
	tl_ctlapi_request(&h->dev, req, strlen(req), out);
}

/* tl_dev_change: the port part is prepared, the queue part refused; then both apply. */
static void test_change(void)
{
	struct tl_ch h;
	struct tl_dev_change c = { .has_port = true, .listen_port = MOVED };
	struct tl_dev_refusal r;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	c.has_aqm[TL_PORT_WAN] = true;
	c.aqm[TL_PORT_WAN] = tl_aqm_params_default();
	c.aqm[TL_PORT_WAN].limit = TOO_MANY;
	CHECK(tl_dev_change(&h.dev, &c, &r) == EINVAL, "a limit over the start capacity is refused");
	CHECK(r.part == TL_DEV_PART_QUEUE && r.role == TL_PORT_WAN && r.why && !strncmp(r.why, "limit:", 6),
	      "by the WAN queue's limit (%s)", r.why ? r.why : "no reason");
	CHECK(port_now(&h) == PORT, "the listen port stays %u (is %u)", PORT, port_now(&h));
	CHECK(wan_limit(&h) == 10240, "the WAN limit stays 10240 (is %u)", wan_limit(&h));
	c.aqm[TL_PORT_WAN].limit = 5000;
	CHECK(tl_dev_change(&h.dev, &c, &r) == 0, "a limit within it is taken");
	CHECK(port_now(&h) == MOVED && wan_limit(&h) == 5000, "with the port: %u, limit %u", port_now(&h), wan_limit(&h));
	tl_ch_teardown(&h);
}

/* The control API's reload and SIGHUP's of a file that moves the port and raises the limit
 * too far; then of one that moves the port alone. */
static void test_reload(bool sighup)
{
	const char *how = sighup ? "SIGHUP" : "control API";
	struct tl_buf out = { 0 };
	struct tl_config *c;
	struct tl_ch h;

	CHECK(tl_ch_setup(&h) == 0, "setup");
	c = run_from_file(&h);
	CHECK(c != NULL, "the device runs the file's configuration");
	if (!c)
		goto out;
	write_config(&h, MOVED, TOO_MANY);
	if (sighup)
		tl_notify_reload(&h.dev);
	else
		ctl(&h, "op: reload\n", &out);
	CHECK(sighup || is_error(&out, "ports.wan.aqm.limit"), "%s: the reload is refused on the limit: %s", how,
	      out.p ? out.p : "no reply");
	CHECK(port_now(&h) == PORT, "%s: the listen port stays %u (is %u)", how, PORT, port_now(&h));
	CHECK(wan_limit(&h) == 10240, "%s: the WAN limit stays 10240 (is %u)", how, wan_limit(&h));
	write_config(&h, MOVED, 5000);
	if (sighup)
		tl_notify_reload(&h.dev);
	else
		ctl(&h, "op: reload\n", &out);
	CHECK(sighup || (out.p && strstr(out.p, "status: ok") && strstr(out.p, "queues_changed: [wan]")),
	      "%s: a reload within the capacity is applied: %s", how, out.p ? out.p : "no reply");
	CHECK(port_now(&h) == MOVED && wan_limit(&h) == 5000, "%s: port %u, limit %u", how, port_now(&h),
	      wan_limit(&h));
	h.dev.cfg = &h.cfg;
	tl_config_free(c);
out:
	tl_buf_free(&out);
	tl_ch_teardown(&h);
}

/* The control API's set: a limit over the capacity is refused by the same rule, with the
 * field named, and nothing changed. */
static void test_ctl_set(void)
{
	struct tl_buf out = { 0 };
	struct tl_ch h;
	char req[128];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	h.dev.ports[TL_PORT_WAN].started = true;
	snprintf(req, sizeof(req), "op: set\nargs: {port: wan, aqm: {limit: %u, target_us: 3000}}\n", TOO_MANY);
	ctl(&h, req, &out);
	CHECK(is_error(&out, "args.aqm.limit"), "set refused on the limit: %s", out.p ? out.p : "no reply");
	CHECK(wan_limit(&h) == 10240, "the WAN limit stays 10240 (is %u)", wan_limit(&h));
	ctl(&h, "op: set\nargs: {port: wan, aqm: {limit: 5000}}\n", &out);
	CHECK(out.p && strstr(out.p, "status: ok") && wan_limit(&h) == 5000, "a limit within it is set: %s",
	      out.p ? out.p : "no reply");
	tl_buf_free(&out);
	tl_ch_teardown(&h);
}

/* UAPI set: a new listen port and private key with a peer removal that runs out of memory
 * (no routing table can be built): errno ENOMEM, and the port, the key and the peer stay. */
static void test_uapi_set(void)
{
	struct tl_ch h;
	struct tl_ch_remote r;
	uint8_t priv[TL_KEY_LEN], old_pub[TL_KEY_LEN];
	char body[512], phex[65], khex[65];

	CHECK(tl_ch_setup(&h) == 0, "setup");
	if (!tl_ch_peer_add(&h, &r, 5))
		goto out;
	memcpy(old_pub, h.dev.id.pub, TL_KEY_LEN);
	tl_random(priv, sizeof(priv));
	tl_key_to_hex(khex, priv);
	tl_key_to_hex(phex, r.id.pub);
	snprintf(body, sizeof(body), "private_key=%s\nlisten_port=%u\npublic_key=%s\nremove=true\n", khex,
		 (unsigned)MOVED, phex);
	tl_aips_test_failures = 1;
	CHECK(tl_uapi_set(&h.dev, body) == ENOMEM, "UAPI set answers ENOMEM");
	CHECK(port_now(&h) == PORT, "the listen port stays %u (is %u)", PORT, port_now(&h));
	CHECK(!memcmp(h.dev.id.pub, old_pub, TL_KEY_LEN), "the private key stays");
	CHECK(tl_peer_find(&h.dev, r.id.pub) != NULL, "the peer stays");
	snprintf(body, sizeof(body), "private_key=%s\nlisten_port=%u\npublic_key=%s\nremove=true\n", khex,
		 (unsigned)MOVED, phex);
	CHECK(tl_uapi_set(&h.dev, body) == 0, "UAPI set once a table can be built");
	CHECK(port_now(&h) == MOVED && memcmp(h.dev.id.pub, old_pub, TL_KEY_LEN) && !tl_peer_find(&h.dev, r.id.pub),
	      "port, key and peer changed together (port %u)", port_now(&h));
out:
	tl_aips_test_failures = 0;
	explicit_bzero(priv, sizeof(priv));
	explicit_bzero(khex, sizeof(khex));
	tl_ch_teardown(&h);
}

int main(int argc, char **argv)
{
	int fd;

	(void)argc;
	snprintf(g_file, sizeof(g_file), "/tmp/tl_change_XXXXXX");
	fd = mkstemp(g_file);
	if (fd < 0 || tl_ch_eal_init(argv[0]) != 0)
		return 1;
	close(fd);
	tl_notify_init();
	test_change();
	test_reload(false);
	test_reload(true);
	test_ctl_set();
	test_uapi_set();
	unlink(g_file);
	tl_ch_eal_fini();
	return check_report();
}
