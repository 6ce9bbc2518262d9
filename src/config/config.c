/* Configuration loader: a libcyaml schema (config_schema.c) loads the YAML document into raw
 * strings and numbers, then one semantic pass (here) converts and validates them into
 * struct tl_config.
 *
 * Errors are one line, "<file>:<line>: <field path>: <why>". libcyaml does not give value
 * positions, so the document is also walked once with libyaml's event parser to build a
 * path -> line index ("peers[1].allowed_ips[0]" -> 9, config_doc.c); the same walk reports
 * syntax errors.
 * Secrets are wiped from every buffer we own: the file text, the index, every block
 * libcyaml allocates (through tl_cfg_mem), and the loaded struct. */
#include "config/config_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <sched.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cyaml/cyaml.h>
#include <sodium.h>
#include <yaml.h>

/* ---- semantic pass: numbers, strings, keys ---------------------------------------------- */

/* The document's own text for path (scalars), to reject "12abc" that strtoll half-reads. */
static const char *tl_cfg_text(const struct tl_cfg_ctx *c, const char *path)
{
	const struct tl_cfg_node *n = tl_cfg_lookup(c, path);

	return n && n->value ? n->value : "";
}

static int tl_cfg_int(struct tl_cfg_ctx *c, const char *path, const int64_t *v, int64_t lo,
		      int64_t hi, int64_t def, int64_t *out)
{
	const char *text;
	char *end;

	if (!v) {
		*out = def;
		return 0;
	}
	text = tl_cfg_text(c, path);
	errno = 0;
	(void)strtoll(text, &end, 0);
	if (end == text || *end || errno)
		return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' is not an integer", text);
	if (*v < lo || *v > hi)
		return tl_cfg_fail(c, path, "%" PRId64 " is out of range %" PRId64 "..%" PRId64,
				   *v, lo, hi);
	*out = *v;
	return 0;
}

static int tl_cfg_u16(struct tl_cfg_ctx *c, const char *path, const int64_t *v, int64_t lo,
		      int64_t hi, int64_t def, uint16_t *out)
{
	int64_t x;

	if (tl_cfg_int(c, path, v, lo, hi, def, &x) < 0)
		return -1;
	*out = (uint16_t)x;
	return 0;
}

/* libcyaml reads any unknown word as true; only accept real YAML booleans. */
static bool tl_cfg_bool_text(const char *s)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcasecmp(s, words[i]))
			return true;
	return false;
}

static int tl_cfg_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= IF_NAMESIZE)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* Why b64 is not a key: wrong length after decoding, or not base64 at all. */
static void tl_cfg_key_why(const char *b64, char *why, size_t wlen)
{
	uint8_t tmp[96];
	size_t binlen = 0;
	const char *end = NULL;
	size_t len = strlen(b64);

	if (len <= 128 && sodium_base642bin(tmp, sizeof(tmp), b64, len, NULL, &binlen, &end,
					    sodium_base64_VARIANT_ORIGINAL) == 0 &&
	    end == b64 + len)
		snprintf(why, wlen, "key decodes to %zu bytes, want 32", binlen);
	else
		snprintf(why, wlen, "key is not valid base64 (want 44 characters, as from wg genkey)");
	sodium_memzero(tmp, sizeof(tmp));
}

static int tl_cfg_key(struct tl_cfg_ctx *c, const char *path, const char *b64,
		      uint8_t key[TL_KEY_LEN])
{
	char why[128];

	if (tl_key_from_base64(key, b64) == 0)
		return 0;
	tl_cfg_key_why(b64, why, sizeof(why));
	return tl_cfg_fail(c, path, "%s", why);
}

/* Reads a key file ("wg genkey" output); relative names are relative to the config file. */
static int tl_cfg_key_file(struct tl_cfg_ctx *c, const char *path, const char *name,
			   uint8_t key[TL_KEY_LEN])
{
	char full[4096], text[128];
	const char *slash = strrchr(c->file, '/');
	struct stat st;
	ssize_t n;
	int fd, rc;

	if (name[0] == '/' || !slash)
		snprintf(full, sizeof(full), "%s", name);
	else
		snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - c->file), c->file, name);
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* a FIFO must not block us */
	if (fd < 0)
		return tl_cfg_fail(c, path, "cannot open '" TL_CFG_SHOW "': %s", full, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' is not a regular file", full);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		tl_cfg_warn(c, path, "'" TL_CFG_SHOW "' is accessible to group or others (mode %04o): "
			    "chmod 600 it", full, (unsigned)(st.st_mode & 07777));
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return tl_cfg_fail(c, path, "cannot read '" TL_CFG_SHOW "': %s", full, strerror(errno));
	text[n] = '\0';
	text[strcspn(text, " \t\r\n")] = '\0';
	rc = tl_key_from_base64(key, text);
	sodium_memzero(text, sizeof(text));
	if (rc < 0)
		return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' does not hold a base64 32-byte key", full);
	return 0;
}

/* Exactly one of the inline key and the key file (unless optional and both absent). */
static int tl_cfg_secret(struct tl_cfg_ctx *c, const char *prefix, const char *field,
			 const char *inline_b64, const char *file, bool required,
			 uint8_t key[TL_KEY_LEN], bool *present)
{
	char path[TL_CFG_PATH_MAX], fpath[TL_CFG_PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", prefix, field);
	snprintf(fpath, sizeof(fpath), "%s%s_file", prefix, field);
	*present = inline_b64 || file;
	if (inline_b64 && file)
		return tl_cfg_fail(c, fpath, "give only one of %s and %s_file", field, field);
	if (inline_b64)
		return tl_cfg_key(c, path, inline_b64, key);
	if (file)
		return tl_cfg_key_file(c, fpath, file, key);
	if (required)
		return tl_cfg_fail(c, path, "missing (required: %s or %s_file)", field, field);
	return 0;
}

static int tl_cfg_prefix(struct tl_cfg_ctx *c, const char *path, const char *s,
			 struct tl_prefix *p)
{
	if (tl_prefix_parse(p, s) == 0)
		return 0;
	return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' %s", s, tl_prefix_error(s));
}

static int tl_cfg_prefixes(struct tl_cfg_ctx *c, const char *path, char **list, size_t n,
			   bool clear_host_bits, struct tl_prefix **out)
{
	char item[TL_CFG_PATH_MAX];

	if (!n)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return tl_cfg_fail(c, path, "out of memory");
	for (size_t i = 0; i < n; i++) {
		snprintf(item, sizeof(item), "%s[%zu]", path, i);
		if (tl_cfg_prefix(c, item, list[i], &(*out)[i]) < 0)
			return -1;
		if (clear_host_bits)
			tl_prefix_clear_host_bits(&(*out)[i]);
	}
	return 0;
}

/* ---- semantic pass: sections ------------------------------------------------------------ */

/* A range rule broken by a parameter set: "<field>: <rule>" -> error at path.field. */
static int tl_cfg_fail_field(struct tl_cfg_ctx *c, const char *path, const char *msg)
{
	char f[TL_CFG_PATH_MAX];
	const char *colon = strchr(msg, ':');
	int n = colon ? (int)(colon - msg) : 0;

	snprintf(f, sizeof(f), "%.200s.%.*s", path, n < 40 ? n : 40, msg);
	return tl_cfg_fail(c, f, "%s", colon ? colon + 2 : msg);
}

/* An integer member of the mapping at path. */
static int tl_cfg_member(struct tl_cfg_ctx *c, const char *path, const char *name, const int64_t *raw,
			 int64_t lo, int64_t hi, int64_t def, int64_t *out)
{
	char f[TL_CFG_PATH_MAX];

	snprintf(f, sizeof(f), "%.200s.%.40s", path, name);
	return tl_cfg_int(c, f, raw, lo, hi, def, out);
}

static int tl_cfg_aqm(struct tl_cfg_ctx *c, const char *path, const struct tl_raw_aqm *raw,
		      struct tl_aqm_params *p)
{
	char f[TL_CFG_PATH_MAX];
	const char *why;
	int64_t v[10];

	*p = tl_aqm_params_default();
	if (!raw)
		return 0;
	if (tl_cfg_member(c, path, "target_us", raw->target_us, 1, UINT32_MAX, p->target_us, &v[0]) ||
	    tl_cfg_member(c, path, "interval_us", raw->interval_us, 1, UINT32_MAX, p->interval_us, &v[1]) ||
	    tl_cfg_member(c, path, "quantum", raw->quantum, 1, UINT32_MAX, p->quantum, &v[2]) ||
	    tl_cfg_member(c, path, "flows", raw->flows, 1, UINT32_MAX, p->flows, &v[3]) ||
	    tl_cfg_member(c, path, "limit", raw->limit, 1, UINT32_MAX, p->limit, &v[4]) ||
	    tl_cfg_member(c, path, "memory_limit", raw->memory_limit, 1, INT64_MAX,
			  (int64_t)p->memory_limit, &v[5]) ||
	    tl_cfg_member(c, path, "rtt_us", raw->rtt_us, 0, UINT32_MAX, p->rtt_us, &v[6]) ||
	    tl_cfg_member(c, path, "l4s_us", raw->l4s_us, 0, UINT32_MAX, p->l4s_us, &v[7]) ||
	    tl_cfg_member(c, path, "flow_rtt_pct", raw->flow_rtt_pct, 0, UINT32_MAX, p->flow_rtt_pct, &v[8]) ||
	    tl_cfg_member(c, path, "quantum_fast", raw->quantum_fast, 0, UINT32_MAX, p->quantum_fast, &v[9]))
		return -1;
	p->target_us = (uint32_t)v[0];
	p->interval_us = (uint32_t)v[1];
	p->quantum = (uint32_t)v[2];
	p->flows = (uint32_t)v[3];
	p->limit = (uint32_t)v[4];
	p->memory_limit = (uint64_t)v[5];
	p->rtt_us = (uint32_t)v[6];
	p->l4s_us = (uint32_t)v[7];
	p->flow_rtt_pct = (uint32_t)v[8];
	p->quantum_fast = (uint32_t)v[9];
	snprintf(f, sizeof(f), "%.200s.ecn", path);
	if (raw->ecn && !tl_cfg_bool_text(tl_cfg_text(c, f)))
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not true or false", tl_cfg_text(c, f));
	if (raw->ecn)
		p->ecn = *raw->ecn;
	why = tl_aqm_params_check(p);
	return why ? tl_cfg_fail_field(c, path, why) : 0;
}

static int tl_cfg_shaper(struct tl_cfg_ctx *c, const char *path, const struct tl_raw_shaper *raw,
			 struct tl_shaper_params *p)
{
	const char *why;
	int64_t rate, burst;

	*p = (struct tl_shaper_params){ 0 };
	if (!raw)
		return 0;
	if (tl_cfg_member(c, path, "rate_bps", raw->rate_bps, 0, INT64_MAX, 0, &rate) ||
	    tl_cfg_member(c, path, "burst_bytes", raw->burst_bytes, 0, UINT32_MAX, 0, &burst))
		return -1;
	p->rate_bps = (uint64_t)rate;
	p->burst_bytes = (uint32_t)burst;
	why = tl_shaper_params_check(p);
	return why ? tl_cfg_fail_field(c, path, why) : 0;
}

static int tl_cfg_port(struct tl_cfg_ctx *c, const char *path, const struct tl_raw_port *raw,
		       unsigned workers, struct tl_cfg_port *port)
{
	char f[TL_CFG_PATH_MAX];

	port->present = true;
	snprintf(f, sizeof(f), "%s.driver", path);
	if (!raw->driver || !strcmp(raw->driver, "af_xdp"))
		port->driver = TL_DRIVER_AF_XDP;
	else if (!strcmp(raw->driver, "pmd"))
		port->driver = TL_DRIVER_PMD;
	else if (!strcmp(raw->driver, "udp") && !strcmp(path, "ports.wan"))
		port->driver = TL_DRIVER_UDP;
	else if (!strcmp(raw->driver, "udp"))
		return tl_cfg_fail(c, f, "udp is a WAN port kind only (the LAN carries frames, not datagrams)");
	else if (!strcmp(raw->driver, "packet") && !strcmp(path, "ports.lan"))
		port->driver = TL_DRIVER_PACKET;
	else if (!strcmp(raw->driver, "packet"))
		return tl_cfg_fail(c, f, "packet is a LAN port kind only (it reads the LAN's frames through a veth pair "
				   "tunless creates)");
	else
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not af_xdp, pmd, udp or packet", raw->driver);
	snprintf(f, sizeof(f), "%s.iface", path);
	if (raw->iface && !tl_cfg_name_ok(raw->iface))
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not an interface name "
				   "(1..15 characters of A-Z a-z 0-9 _ . -)", raw->iface);
	if (!raw->iface && port->driver != TL_DRIVER_PMD)
		return tl_cfg_fail(c, f, "missing (required for driver %s)", port->driver == TL_DRIVER_UDP ? "udp"
				   : port->driver == TL_DRIVER_PACKET ? "packet" : "af_xdp");
	snprintf(port->iface, sizeof(port->iface), "%s", raw->iface ? raw->iface : "");
	snprintf(f, sizeof(f), "%s.devargs", path);
	if (raw->devargs && port->driver != TL_DRIVER_PMD)
		return tl_cfg_fail(c, f, "only for driver pmd");
	if (!raw->devargs && port->driver == TL_DRIVER_PMD)
		return tl_cfg_fail(c, f, "missing (required for driver pmd)");
	if (raw->devargs && (!raw->devargs[0] || strlen(raw->devargs) >= sizeof(port->devargs)))
		return tl_cfg_fail(c, f, "must be 1..%zu characters", sizeof(port->devargs) - 1);
	snprintf(port->devargs, sizeof(port->devargs), "%s", raw->devargs ? raw->devargs : "");
	snprintf(f, sizeof(f), "%s.zero_copy", path);
	if (raw->zero_copy && !tl_cfg_bool_text(tl_cfg_text(c, f)))
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not true or false", tl_cfg_text(c, f));
	port->zero_copy = raw->zero_copy && *raw->zero_copy;
	if (port->zero_copy && port->driver != TL_DRIVER_AF_XDP)
		return tl_cfg_fail(c, f, "only for driver af_xdp");
	snprintf(f, sizeof(f), "%s.aqm", path);
	if (tl_cfg_aqm(c, f, raw->aqm, &port->aqm) < 0)
		return -1;
	snprintf(f, sizeof(f), "%s.shaper", path);
	if (tl_cfg_shaper(c, f, raw->shaper, &port->shaper) < 0)
		return -1;
	snprintf(f, sizeof(f), "%s.queues", path);
	return tl_cfg_u16(c, f, raw->queues, 1, 64, workers, &port->queues);
}

static int tl_cfg_metrics(struct tl_cfg_ctx *c, const struct tl_raw_metrics *raw,
			  struct tl_config *cfg)
{
	const char *why;
	int64_t v;

	cfg->metrics.enabled = raw != NULL;
	cfg->metrics.peer_series_max = 1000;
	if (!raw)
		return 0;
	if (tl_cfg_int(c, "metrics.peer_series_max", raw->peer_series_max, 0, TL_MAX_PEERS_CFG, 1000, &v) < 0)
		return -1;
	cfg->metrics.peer_series_max = (uint32_t)v;
	if (!raw->listen) {
		tl_ip_parse(&cfg->metrics.listen.ip, "127.0.0.1");
		cfg->metrics.listen.port = TL_METRICS_PORT;
		return 0;
	}
	why = tl_sockaddr_error(raw->listen);
	if (why)
		return tl_cfg_fail(c, "metrics.listen", "'" TL_CFG_SHOW "' %s", raw->listen, why);
	tl_sockaddr_parse(&cfg->metrics.listen, raw->listen);
	return 0;
}

/* Host mode's LAN port kind when the file names none. */
#define TL_HOST_LAN_DRIVER TL_DRIVER_PACKET

/* Host mode's LAN port is the veth tunless creates: only its kind (packet: AF_PACKET with
 * GSO both ways; af_xdp) and its egress queue are chosen. */
static int tl_cfg_host_lan(struct tl_cfg_ctx *c, const struct tl_raw_port *raw, struct tl_cfg_port *port)
{
	static const char why[] = "not in host mode (the host end of the tunnel is created by tunless)";

	port->present = true;
	port->driver = TL_HOST_LAN_DRIVER;
	if (raw->driver && !strcmp(raw->driver, "af_xdp"))
		port->driver = TL_DRIVER_AF_XDP;
	else if (raw->driver && !strcmp(raw->driver, "packet"))
		port->driver = TL_DRIVER_PACKET;
	else if (raw->driver)
		return tl_cfg_fail(c, "ports.lan.driver", "'" TL_CFG_SHOW "' is not packet or af_xdp (host mode)",
				   raw->driver);
	if (raw->iface)
		return tl_cfg_fail(c, "ports.lan.iface", why);
	if (raw->devargs)
		return tl_cfg_fail(c, "ports.lan.devargs", why);
	if (raw->zero_copy)
		return tl_cfg_fail(c, "ports.lan.zero_copy", why);
	if (raw->queues)
		return tl_cfg_fail(c, "ports.lan.queues", why);
	return tl_cfg_aqm(c, "ports.lan.aqm", raw->aqm, &port->aqm) < 0 ||
			       tl_cfg_shaper(c, "ports.lan.shaper", raw->shaper, &port->shaper) < 0 ? -1 : 0;
}

static int tl_cfg_ports(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
			struct tl_config *cfg)
{
	const struct tl_raw_ports *p = raw->ports;

	if (tl_cfg_port(c, "ports.wan", p->wan, cfg->workers, &cfg->wan) < 0)
		return -1;
	if (cfg->mode == TL_MODE_HOST) {
		if (!p->wan->driver && !cfg->wan.zero_copy)
			cfg->wan.driver = TL_DRIVER_AUTO;
		cfg->lan.driver = TL_HOST_LAN_DRIVER;
		return p->lan ? tl_cfg_host_lan(c, p->lan, &cfg->lan) : 0;
	}
	if (cfg->mode == TL_MODE_GATEWAY && !p->lan)
		return tl_cfg_fail(c, "ports.lan", "missing (required in gateway mode)");
	return p->lan ? tl_cfg_port(c, "ports.lan", p->lan, cfg->workers, &cfg->lan) : 0;
}

static int tl_cfg_endpoint(struct tl_cfg_ctx *c, const char *path, const char *s,
			   struct tl_cfg_peer *peer)
{
	peer->has_endpoint = true;
	if (tl_sockaddr_parse(&peer->endpoint, s) == 0)
		return 0;
	return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' %s", s, tl_sockaddr_error(s));
}

static int tl_cfg_peer(struct tl_cfg_ctx *c, size_t i, const struct tl_raw_peer *raw,
		       struct tl_cfg_peer *peer)
{
	char pre[64], f[TL_CFG_PATH_MAX];

	snprintf(pre, sizeof(pre), "peers[%zu].", i);
	snprintf(f, sizeof(f), "%spublic_key", pre);
	if (tl_cfg_key(c, f, raw->public_key, peer->public_key) < 0)
		return -1;
	if (tl_cfg_secret(c, pre, "preshared_key", raw->preshared_key, raw->preshared_key_file,
			  false, peer->psk, &peer->has_psk) < 0)
		return -1;
	snprintf(f, sizeof(f), "%sendpoint", pre);
	if (raw->endpoint && tl_cfg_endpoint(c, f, raw->endpoint, peer) < 0)
		return -1;
	snprintf(f, sizeof(f), "%sallowed_ips", pre);
	peer->n_allowed_ips = raw->allowed_ips_count;
	if (tl_cfg_prefixes(c, f, raw->allowed_ips, raw->allowed_ips_count, true,
			    &peer->allowed_ips) < 0)
		return -1;
	snprintf(f, sizeof(f), "%spersistent_keepalive", pre);
	if (tl_cfg_u16(c, f, raw->persistent_keepalive, 0, 65535, 0,
		       &peer->persistent_keepalive) < 0)
		return -1;
	snprintf(f, sizeof(f), "%sname", pre);
	if (raw->name && strlen(raw->name) >= sizeof(peer->name))
		return tl_cfg_fail(c, f, "longer than %zu characters", sizeof(peer->name) - 1);
	snprintf(peer->name, sizeof(peer->name), "%s", raw->name ? raw->name : "");
	return 0;
}

static int tl_cfg_peers(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
			struct tl_config *cfg)
{
	if (!raw->peers_count)
		return 0;
	cfg->peers = calloc(raw->peers_count, sizeof(*cfg->peers));
	if (!cfg->peers)
		return tl_cfg_fail(c, "peers", "out of memory");
	for (size_t i = 0; i < raw->peers_count; i++) {
		cfg->n_peers = i + 1;
		if (tl_cfg_peer(c, i, &raw->peers[i], &cfg->peers[i]) < 0)
			return -1;
	}
	return tl_cfg_peers_unique(c, cfg);
}

static int tl_cfg_neighbour(struct tl_cfg_ctx *c, size_t i, const struct tl_raw_neighbour *raw,
			    enum tl_mode mode, struct tl_cfg_neighbour *nb)
{
	char f[TL_CFG_PATH_MAX];

	snprintf(f, sizeof(f), "neighbours[%zu].ip", i);
	if (tl_ip_parse(&nb->ip, raw->ip) < 0)
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not an IPv4/IPv6 address", raw->ip);
	snprintf(f, sizeof(f), "neighbours[%zu].mac", i);
	if (tl_mac_parse(nb->mac, raw->mac) < 0)
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not a MAC address "
				   "(want xx:xx:xx:xx:xx:xx)", raw->mac);
	snprintf(f, sizeof(f), "neighbours[%zu].port", i);
	nb->on_wan = !strcmp(raw->port, "wan");
	if (!nb->on_wan && strcmp(raw->port, "lan"))
		return tl_cfg_fail(c, f, "'" TL_CFG_SHOW "' is not wan or lan", raw->port);
	if (!nb->on_wan && mode == TL_MODE_HOST)
		return tl_cfg_fail(c, f, "there is no lan port in host mode");
	return 0;
}

static int tl_cfg_neighbours(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
			     struct tl_config *cfg)
{
	if (!raw->neighbours_count)
		return 0;
	cfg->neighbours = calloc(raw->neighbours_count, sizeof(*cfg->neighbours));
	if (!cfg->neighbours)
		return tl_cfg_fail(c, "neighbours", "out of memory");
	cfg->n_neighbours = raw->neighbours_count;
	for (size_t i = 0; i < raw->neighbours_count; i++)
		if (tl_cfg_neighbour(c, i, &raw->neighbours[i], cfg->mode, &cfg->neighbours[i]) < 0)
			return -1;
	return 0;
}

static int tl_cfg_seconds(struct tl_cfg_ctx *c, const char *field, const double *v,
			  double *out)
{
	char path[64];

	snprintf(path, sizeof(path), "timers.%s", field);
	if (!v)
		return 0;
	if (!isfinite(*v) || *v <= 0 || *v > 86400.0 * 365)
		return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' is not a duration in seconds "
				   "(> 0, at most a year)", tl_cfg_text(c, path));
	*out = *v;
	return 0;
}

static int tl_cfg_messages(struct tl_cfg_ctx *c, const char *field, const uint64_t *v,
			   uint64_t *out)
{
	const uint64_t max = UINT64_MAX - (1ull << 13);   /* 2^64 - 2^13 - 1 */
	char path[64];
	const char *text;
	char *end;

	snprintf(path, sizeof(path), "timers.%s", field);
	if (!v)
		return 0;
	text = tl_cfg_text(c, path);
	errno = 0;
	(void)strtoull(text, &end, 0);
	if (end == text || *end || errno || text[strspn(text, " \t")] == '-')
		return tl_cfg_fail(c, path, "'" TL_CFG_SHOW "' is not an unsigned integer", text);
	if (*v < 1 || *v > max)
		return tl_cfg_fail(c, path, "%" PRIu64 " is out of range 1..%" PRIu64, *v, max);
	*out = *v;
	return 0;
}

static int tl_cfg_timers_order(struct tl_cfg_ctx *c, const struct tl_cfg_timers *t)
{
	if (t->reject_after_time <= t->rekey_after_time)
		return tl_cfg_fail(c, "timers.reject_after_time", "must be greater than "
				   "rekey_after_time (%g)", t->rekey_after_time);
	if (t->rekey_attempt_time <= t->rekey_timeout)
		return tl_cfg_fail(c, "timers.rekey_attempt_time", "must be greater than "
				   "rekey_timeout (%g)", t->rekey_timeout);
	if (t->reject_after_messages <= t->rekey_after_messages)
		return tl_cfg_fail(c, "timers.reject_after_messages", "must be greater than "
				   "rekey_after_messages (%" PRIu64 ")", t->rekey_after_messages);
	return 0;
}

static int tl_cfg_timers(struct tl_cfg_ctx *c, const struct tl_raw_timers *raw,
			 struct tl_cfg_timers *t)
{
	*t = (struct tl_cfg_timers){
		.rekey_after_time = 120, .reject_after_time = 180, .rekey_attempt_time = 90,
		.rekey_timeout = 5, .keepalive_timeout = 10,
		.rekey_after_messages = 1ull << 60,
		.reject_after_messages = UINT64_MAX - (1ull << 13),
	};
	if (!raw)
		return 0;
	if (tl_cfg_seconds(c, "rekey_after_time", raw->rekey_after_time, &t->rekey_after_time) ||
	    tl_cfg_seconds(c, "reject_after_time", raw->reject_after_time,
			   &t->reject_after_time) ||
	    tl_cfg_seconds(c, "rekey_attempt_time", raw->rekey_attempt_time,
			   &t->rekey_attempt_time) ||
	    tl_cfg_seconds(c, "rekey_timeout", raw->rekey_timeout, &t->rekey_timeout) ||
	    tl_cfg_seconds(c, "keepalive_timeout", raw->keepalive_timeout,
			   &t->keepalive_timeout) ||
	    tl_cfg_messages(c, "rekey_after_messages", raw->rekey_after_messages,
			    &t->rekey_after_messages) ||
	    tl_cfg_messages(c, "reject_after_messages", raw->reject_after_messages,
			    &t->reject_after_messages))
		return -1;
	return tl_cfg_timers_order(c, t);
}

static int tl_cfg_eal(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
		      struct tl_config *cfg)
{
	if (!raw->eal_count)
		return 0;
	cfg->eal_args = calloc(raw->eal_count + 1, sizeof(*cfg->eal_args));
	if (!cfg->eal_args)
		return tl_cfg_fail(c, "eal", "out of memory");
	for (size_t i = 0; i < raw->eal_count; i++) {
		cfg->eal_args[i] = strdup(raw->eal[i]);
		if (!cfg->eal_args[i])
			return tl_cfg_fail(c, "eal", "out of memory");
		cfg->n_eal_args = i + 1;
	}
	return 0;
}

static bool tl_cfg_has_v6(const struct tl_config *cfg)
{
	for (size_t i = 0; i < cfg->n_addresses; i++)
		if (cfg->addresses[i].ip.family == AF_INET6)
			return true;
	for (size_t i = 0; i < cfg->n_peers; i++)
		for (size_t j = 0; j < cfg->peers[i].n_allowed_ips; j++)
			if (cfg->peers[i].allowed_ips[j].ip.family == AF_INET6)
				return true;
	return false;
}

static int tl_cfg_identity(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
			   struct tl_config *cfg)
{
	bool present;

	if (!tl_cfg_name_ok(raw->name))
		return tl_cfg_fail(c, "name", "'" TL_CFG_SHOW "' is not a valid name "
				   "(1..15 characters of A-Z a-z 0-9 _ . -)", raw->name);
	snprintf(cfg->name, sizeof(cfg->name), "%s", raw->name);
	if (!strcmp(raw->mode, "host"))
		cfg->mode = TL_MODE_HOST;
	else if (!strcmp(raw->mode, "gateway"))
		cfg->mode = TL_MODE_GATEWAY;
	else
		return tl_cfg_fail(c, "mode", "'" TL_CFG_SHOW "' is not host or gateway", raw->mode);
	return tl_cfg_secret(c, "", "private_key", raw->private_key, raw->private_key_file, true,
			     cfg->private_key, &present);
}

/* Every CPU this process may use but one, at most TL_CFG_WORKERS_MAX (0 on one CPU). */
static unsigned tl_cfg_cpus_but_one(void)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 1)
		return 0;
	return n - 1 > TL_CFG_WORKERS_MAX ? TL_CFG_WORKERS_MAX : (unsigned)(n - 1);
}

/* auto for a count of threads: every CPU but one, at least lo. */
static unsigned tl_cfg_threads_auto(unsigned lo)
{
	unsigned n = tl_cfg_cpus_but_one();

	return n < lo ? lo : n;
}

unsigned tl_cfg_handshake_threads_auto(void)
{
	return tl_cfg_threads_auto(0);
}

unsigned tl_cfg_workers_auto(void)
{
	return tl_cfg_threads_auto(1);
}

/* A count of threads: an integer lo..64, or auto (every CPU but one, at least lo); def when
 * absent. */
static int tl_cfg_threads(struct tl_cfg_ctx *c, const char *field, const char *text, unsigned lo,
			  unsigned def, unsigned *out)
{
	char *end;
	long long v;

	if (!text) {
		*out = def;
		return 0;
	}
	if (!strcmp(text, "auto")) {
		*out = tl_cfg_threads_auto(lo);
		return 0;
	}
	errno = 0;
	v = strtoll(text, &end, 0);
	if (end == text || *end || errno)
		return tl_cfg_fail(c, field, "'" TL_CFG_SHOW "' is not an integer (nor auto)", text);
	if (v < lo || v > TL_CFG_WORKERS_MAX)
		return tl_cfg_fail(c, field, "%lld is out of range %u..%d", v, lo, TL_CFG_WORKERS_MAX);
	*out = (unsigned)v;
	return 0;
}

static int tl_cfg_scalars(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
			  struct tl_config *cfg)
{
	int64_t v;

	if (tl_cfg_u16(c, "listen_port", raw->listen_port, 1, 65535, 51820, &cfg->listen_port) ||
	    tl_cfg_u16(c, "mtu", raw->mtu, 576, 9000, 1420, &cfg->mtu) ||
	    tl_cfg_threads(c, "workers", raw->workers, 1, 1, &cfg->workers) ||
	    tl_cfg_threads(c, "handshake_threads", raw->handshake_threads, 0, tl_cfg_handshake_threads_auto(),
			   &cfg->handshake_threads))
		return -1;
	if (tl_cfg_int(c, "staged_packets", raw->staged_packets, 1, 4096, 128, &v))
		return -1;
	cfg->staged_packets = (size_t)v;
	if (raw->addresses && cfg->mode == TL_MODE_GATEWAY)
		return tl_cfg_fail(c, "addresses", "only for host mode (a gateway uses the "
				   "addresses of its LAN and WAN interfaces)");
	cfg->n_addresses = raw->addresses_count;
	return tl_cfg_prefixes(c, "addresses", raw->addresses, raw->addresses_count, false,
			       &cfg->addresses);
}

unsigned tl_cfg_af_xdp_mtu_max(void)
{
	return (unsigned)sysconf(_SC_PAGESIZE) - TL_CFG_AF_XDP_BUF_OVERHEAD - TL_CFG_FRAME_OVERHEAD;
}

/* The MTU against the port kinds: an af_xdp port carries frames of at most a page (an auto
 * WAN port takes the udp kind above that, see ctrl/ports.c). */
static int tl_cfg_mtu_ports(struct tl_cfg_ctx *c, const struct tl_config *cfg)
{
	bool wan = cfg->wan.driver == TL_DRIVER_AF_XDP, lan = cfg->lan.driver == TL_DRIVER_AF_XDP;
	unsigned max = tl_cfg_af_xdp_mtu_max();

	if (cfg->mtu <= max || (!wan && !lan))
		return 0;
	return tl_cfg_fail(c, "mtu", "%u is above %u, the largest tunnel MTU the af_xdp port kind carries "
			   "(ports.%s: DPDK's net_af_xdp receives into buffers of one %ld-byte page); "
			   "use driver %s", (unsigned)cfg->mtu, max, wan ? "wan" : "lan", sysconf(_SC_PAGESIZE),
			   wan ? "pmd or udp" : "packet or pmd");
}

static int tl_cfg_convert(struct tl_cfg_ctx *c, const struct tl_raw_config *raw,
			  struct tl_config *cfg)
{
	if (tl_cfg_identity(c, raw, cfg) || tl_cfg_scalars(c, raw, cfg) ||
	    tl_cfg_ports(c, raw, cfg) || tl_cfg_peers(c, raw, cfg) ||
	    tl_cfg_neighbours(c, raw, cfg) || tl_cfg_timers(c, raw->timers, &cfg->timers) ||
	    tl_cfg_eal(c, raw, cfg) || tl_cfg_metrics(c, raw->metrics, cfg))
		return -1;
	if (cfg->mtu < 1280 && tl_cfg_has_v6(cfg))
		return tl_cfg_fail(c, "mtu", "%u is below 1280, the IPv6 minimum, and an "
				   "IPv6 address or allowed IP is configured", (unsigned)cfg->mtu);
	return tl_cfg_mtu_ports(c, cfg);
}

/* ---- file, load, free -------------------------------------------------------------------- */

static int tl_cfg_read_file(struct tl_cfg_ctx *c, char **text, size_t *len, mode_t *mode)
{
	int fd = open(c->file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	ssize_t n = 0;

	if (fd < 0)
		return tl_cfg_fail_at(c, 0, "(file)", "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TL_CFG_MAX_FILE) {
		close(fd);
		return tl_cfg_fail_at(c, 0, "(file)", "not a regular file of at most %u bytes",
				      TL_CFG_MAX_FILE);
	}
	*mode = st.st_mode;
	*text = calloc(1, (size_t)st.st_size + 1);
	if (*text)
		n = read(fd, *text, (size_t)st.st_size);
	close(fd);
	if (!*text || n != st.st_size)
		return tl_cfg_fail_at(c, 0, "(file)", "cannot read: %s",
				      *text ? strerror(errno) : "out of memory");
	*len = (size_t)n;
	return 0;
}

static void tl_cfg_raw_wipe(struct tl_raw_config *raw)
{
	if (raw->private_key)
		sodium_memzero(raw->private_key, strlen(raw->private_key));
	for (unsigned i = 0; i < raw->peers_count; i++)
		if (raw->peers[i].preshared_key)
			sodium_memzero(raw->peers[i].preshared_key,
				       strlen(raw->peers[i].preshared_key));
}

/* A file that holds a key inline is as secret as a key file: a warning when group or others
 * may open it, at its first inline key (one line, however many keys). */
static void tl_cfg_inline_key_mode(struct tl_cfg_ctx *c, const struct tl_raw_config *raw, mode_t mode)
{
	char path[TL_CFG_PATH_MAX];
	unsigned n = raw->private_key ? 1 : 0;

	path[0] = '\0';
	if (raw->private_key)
		snprintf(path, sizeof(path), "private_key");
	for (unsigned i = 0; i < raw->peers_count; i++)
		if (raw->peers[i].preshared_key && !n++)
			snprintf(path, sizeof(path), "peers[%u].preshared_key", i);
	if (!n || !(mode & (S_IRWXG | S_IRWXO)))
		return;
	tl_cfg_warn(c, path, "the file is accessible to group or others (mode %04o) and holds this key inline%s: "
		    "chmod 600 %s, or move the key to %s_file", (unsigned)(mode & 07777),
		    n > 1 ? " (and more)" : "", c->file, raw->private_key ? "private_key" : "preshared_key");
}

static int tl_cfg_load_raw(struct tl_cfg_ctx *c, const char *text, size_t len, mode_t mode,
			   struct tl_config *cfg)
{
	const cyaml_config_t cy = {
		.log_fn = tl_cfg_log, .log_ctx = c, .mem_fn = tl_cfg_mem,
		.log_level = CYAML_LOG_ERROR, .flags = CYAML_CFG_NO_ALIAS,
	};
	struct tl_raw_config *raw = NULL;
	cyaml_err_t err;
	int rc;

	err = cyaml_load_data((const uint8_t *)text, len, &cy, &tl_cfg_schema,
			      (cyaml_data_t **)&raw, NULL);
	if (err != CYAML_OK)
		return tl_cfg_cyaml_fail(c, err);
	if (!raw)
		return tl_cfg_fail_at(c, 1, "", "empty document");
	rc = tl_cfg_convert(c, raw, cfg);
	if (rc == 0)
		tl_cfg_inline_key_mode(c, raw, mode);
	tl_cfg_raw_wipe(raw);
	cyaml_free(&cy, &tl_cfg_schema, raw, 0);
	return rc;
}

int tl_config_load(const char *path, struct tl_config **out, char *err, size_t errlen)
{
	struct tl_cfg_ctx *c = calloc(1, sizeof(*c));
	struct tl_config *cfg = calloc(1, sizeof(*cfg));
	char *text = NULL;
	size_t len = 0;
	mode_t mode = 0;
	int rc = -1;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!c || !cfg) {
		if (err && errlen)
			snprintf(err, errlen, "%s:0: (file): out of memory", path);
		free(c);
		free(cfg);
		return -1;
	}
	*c = (struct tl_cfg_ctx){ .file = path, .err = err, .errlen = errlen, .cfg = cfg };
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	if (tl_cfg_read_file(c, &text, &len, &mode) == 0 && tl_cfg_index_build(c, text, len) == 0)
		rc = tl_cfg_load_raw(c, text, len, mode, cfg);
	if (text) {
		sodium_memzero(text, len);
		free(text);
	}
	tl_cfg_index_free(&c->ix);
	free(c);
	if (rc < 0) {
		tl_config_free(cfg);
		return -1;
	}
	*out = cfg;
	return 0;
}

void tl_config_free(struct tl_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_peers; i++)
		free(cfg->peers[i].allowed_ips);
	if (cfg->peers)
		sodium_memzero(cfg->peers, cfg->n_peers * sizeof(*cfg->peers));
	free(cfg->peers);
	free(cfg->addresses);
	free(cfg->neighbours);
	for (size_t i = 0; i < cfg->n_eal_args; i++)
		free(cfg->eal_args[i]);
	free(cfg->eal_args);
	sodium_memzero(cfg, sizeof(*cfg));
	free(cfg);
}
