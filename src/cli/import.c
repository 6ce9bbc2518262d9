/* tunlessctl import: a wg-quick configuration (INI) as an equivalent tunless host-mode YAML.
 * Keys, prefixes and endpoints are checked by the common room's parsers (common/key.h,
 * common/addr.h), the ones tunlessd's configuration uses, with their messages; the YAML is
 * written by the control API's writer (api/yamlw.h). */
#include "cli/import.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <net/if.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/yamlw.h"
#include "common/addr.h"
#include "common/buf.h"
#include "common/key.h"

#define IMP_MAX_LIST 256

struct imp_peer {
	char *public_key, *psk, *endpoint;
	char *allowed[IMP_MAX_LIST];
	int n_allowed, keepalive;
	unsigned line;
};

struct imp {
	const char *file;
	char *private_key;
	char *addresses[IMP_MAX_LIST];
	int n_addresses, listen_port, mtu;
	struct imp_peer *peers;
	int n_peers;
};

static int imp_err(const char *file, unsigned line, const char *fmt, const char *arg)
{
	fprintf(stderr, "tunlessctl import: %s:%u: ", file, line);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return -1;
}

static void imp_note(const char *file, unsigned line, const char *key, const char *why)
{
	fprintf(stderr, "tunlessctl import: %s:%u: %s not carried over: %s\n", file, line, key, why);
}

static char *imp_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A key as tunlessd reads one (exactly 44 base64 characters of 32 bytes); the copy is wiped. */
static bool imp_key_ok(const char *b64)
{
	uint8_t k[TL_KEY_LEN];
	bool ok = tl_key_from_base64(k, b64) == 0;

	sodium_memzero(k, sizeof(k));
	return ok;
}

/* Splits a comma list into out[] (strdup'd, each checked as a prefix as tunlessd checks
 * addresses and allowed IPs). */
static int imp_list(const char *file, unsigned line, const char *key, char *val, char **out, int *n)
{
	for (char *tok = strtok(val, ","); tok; tok = strtok(NULL, ",")) {
		char *t = imp_trim(tok);
		const char *why;

		if (!*t)
			continue;
		why = tl_prefix_error(t);
		if (why) {
			fprintf(stderr, "tunlessctl import: %s:%u: %s: '%s' %s\n", file, line, key, t, why);
			return -1;
		}
		if (*n == IMP_MAX_LIST)
			return imp_err(file, line, "%s: too many entries", key);
		out[(*n)++] = strdup(t);
	}
	return 0;
}

static int imp_int(const char *file, unsigned line, const char *key, const char *val, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || end == val || *end || v < lo || v > hi) {
		fprintf(stderr, "tunlessctl import: %s:%u: %s: '%s' is not an integer in %ld..%ld\n", file, line, key, val, lo,
			hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int imp_parse(FILE *f, struct imp *c)
{
	enum { NONE, IFACE, PEER } sec = NONE;
	char buf[4096];
	unsigned line = 0;
	bool seen_iface = false;

	while (fgets(buf, sizeof(buf), f)) {
		char *s, *eq, *key, *val, *hash;
		struct imp_peer *p;

		line++;
		hash = strchr(buf, '#');
		if (hash)
			*hash = '\0';
		s = imp_trim(buf);
		if (!*s)
			continue;
		if (*s == '[') {
			if (!strcasecmp(s, "[Interface]")) {
				if (seen_iface)
					return imp_err(c->file, line, "%s: a second [Interface] section", s);
				sec = IFACE;
				seen_iface = true;
			} else if (!strcasecmp(s, "[Peer]")) {
				p = realloc(c->peers, (size_t)(c->n_peers + 1) * sizeof(*p));
				if (!p)
					return imp_err(c->file, line, "%s", "out of memory");
				c->peers = p;
				memset(&p[c->n_peers], 0, sizeof(*p));
				p[c->n_peers++].line = line;
				sec = PEER;
			} else {
				return imp_err(c->file, line, "unknown section %s (wg-quick has [Interface] and [Peer])", s);
			}
			continue;
		}
		eq = strchr(s, '=');
		if (!eq)
			return imp_err(c->file, line, "'%s' is not 'Key = Value'", s);
		*eq = '\0';
		key = imp_trim(s);
		val = imp_trim(eq + 1);
		if (sec == NONE)
			return imp_err(c->file, line, "%s outside of a section", key);
		if (sec == IFACE) {
			if (!strcasecmp(key, "PrivateKey")) {
				if (!imp_key_ok(val))
					return imp_err(c->file, line, "PrivateKey: '%s' is not a 32-byte base64 key", val);
				free(c->private_key);
				c->private_key = strdup(val);
			} else if (!strcasecmp(key, "Address")) {
				if (imp_list(c->file, line, key, val, c->addresses, &c->n_addresses))
					return -1;
			} else if (!strcasecmp(key, "ListenPort")) {
				if (imp_int(c->file, line, key, val, 1, 65535, &c->listen_port))
					return -1;
			} else if (!strcasecmp(key, "MTU")) {
				if (imp_int(c->file, line, key, val, 576, 9000, &c->mtu))
					return -1;
			} else if (!strcasecmp(key, "DNS")) {
				imp_note(c->file, line, key, "tunless does not configure resolvers; set them with resolvconf or "
					 "systemd-resolved");
			} else if (!strcasecmp(key, "Table")) {
				imp_note(c->file, line, key, "tunless routes every peer's allowed IPs through the host interface "
					 "in the main table; another table, or none, is not supported");
			} else if (!strcasecmp(key, "PreUp") || !strcasecmp(key, "PostUp") || !strcasecmp(key, "PreDown") ||
				   !strcasecmp(key, "PostDown")) {
				imp_note(c->file, line, key, "tunless runs no shell commands; use systemd ExecStartPre/ExecStartPost");
			} else if (!strcasecmp(key, "SaveConfig")) {
				imp_note(c->file, line, key, "the YAML file is the configuration; tunless does not rewrite it");
			} else if (!strcasecmp(key, "FwMark")) {
				imp_note(c->file, line, key, "tunless sends from its own dataplane, not through kernel sockets");
			} else {
				return imp_err(c->file, line, "unknown [Interface] key %s", key);
			}
			continue;
		}
		p = &c->peers[c->n_peers - 1];
		if (!strcasecmp(key, "PublicKey")) {
			if (!imp_key_ok(val))
				return imp_err(c->file, line, "PublicKey: '%s' is not a 32-byte base64 key", val);
			free(p->public_key);
			p->public_key = strdup(val);
		} else if (!strcasecmp(key, "PresharedKey")) {
			if (!imp_key_ok(val))
				return imp_err(c->file, line, "PresharedKey: '%s' is not a 32-byte base64 key", val);
			free(p->psk);
			p->psk = strdup(val);
		} else if (!strcasecmp(key, "AllowedIPs")) {
			if (imp_list(c->file, line, key, val, p->allowed, &p->n_allowed))
				return -1;
		} else if (!strcasecmp(key, "Endpoint")) {
			const char *why = tl_sockaddr_error(val);

			if (!why) {
				free(p->endpoint);
				p->endpoint = strdup(val);
			} else {
				fprintf(stderr, "tunlessctl import: %s:%u: Endpoint not carried over: '%s' %s (tunless takes "
					"IPv4:port or [IPv6]:port; resolve it and add it by hand)\n", c->file, line, val, why);
			}
		} else if (!strcasecmp(key, "PersistentKeepalive")) {
			if (!strcasecmp(val, "off"))
				p->keepalive = 0;
			else if (imp_int(c->file, line, key, val, 0, 65535, &p->keepalive))
				return -1;
		} else {
			return imp_err(c->file, line, "unknown [Peer] key %s", key);
		}
	}
	if (!seen_iface)
		return imp_err(c->file, line, "%s", "no [Interface] section");
	if (!c->private_key)
		return imp_err(c->file, line, "%s", "[Interface] has no PrivateKey");
	for (int i = 0; i < c->n_peers; i++)
		if (!c->peers[i].public_key)
			return imp_err(c->file, c->peers[i].line, "%s", "[Peer] has no PublicKey");
	return 0;
}

static void imp_list_out(struct tl_yaml_writer *w, const char *key, char *const *v, int n)
{
	tl_yaml_key(w, key);
	tl_yaml_flow_seq(w);
	for (int i = 0; i < n; i++)
		tl_yaml_str(w, v[i]);
	tl_yaml_end_seq(w);
}

/* The YAML document into out (tl_buf_free wipes it: it holds the private key). 0 or -1. */
static int imp_emit(struct tl_buf *out, const struct imp *c, const char *name, const char *wan)
{
	struct tl_yaml_writer w;

	tl_yaml_begin(&w, out);
	tl_yaml_map(&w);
	tl_yaml_key_str(&w, "name", name);
	tl_yaml_key_str(&w, "mode", "host");
	tl_yaml_key_str(&w, "private_key", c->private_key);
	if (c->listen_port)
		tl_yaml_key_u64(&w, "listen_port", (uint64_t)c->listen_port);
	if (c->mtu)
		tl_yaml_key_u64(&w, "mtu", (uint64_t)c->mtu);
	if (c->n_addresses)
		imp_list_out(&w, "addresses", c->addresses, c->n_addresses);
	tl_yaml_key(&w, "ports");
	tl_yaml_map(&w);
	tl_yaml_key(&w, "wan");
	tl_yaml_flow_map(&w);
	tl_yaml_key_str(&w, "iface", wan);
	tl_yaml_end_map(&w);
	tl_yaml_end_map(&w);
	if (c->n_peers) {
		tl_yaml_key(&w, "peers");
		tl_yaml_seq(&w);
		for (int i = 0; i < c->n_peers; i++) {
			const struct imp_peer *p = &c->peers[i];

			tl_yaml_map(&w);
			tl_yaml_key_str(&w, "public_key", p->public_key);
			if (p->psk)
				tl_yaml_key_str(&w, "preshared_key", p->psk);
			if (p->endpoint)
				tl_yaml_key_str(&w, "endpoint", p->endpoint);
			if (p->n_allowed)
				imp_list_out(&w, "allowed_ips", p->allowed, p->n_allowed);
			if (p->keepalive)
				tl_yaml_key_u64(&w, "persistent_keepalive", (uint64_t)p->keepalive);
			tl_yaml_end_map(&w);
		}
		tl_yaml_end_seq(&w);
	}
	tl_yaml_end_map(&w);
	return tl_yaml_finish(&w);
}

static void imp_free(struct imp *c)
{
	free(c->private_key);
	for (int i = 0; i < c->n_addresses; i++)
		free(c->addresses[i]);
	for (int i = 0; i < c->n_peers; i++) {
		free(c->peers[i].public_key);
		free(c->peers[i].psk);
		free(c->peers[i].endpoint);
		for (int j = 0; j < c->peers[i].n_allowed; j++)
			free(c->peers[i].allowed[j]);
	}
	free(c->peers);
}

/* The output file holds the private key: created 0600 (the umask may only narrow it), and an
 * existing regular file that group or others may access is left alone, not overwritten (its
 * mode would let them read the key). A device or a FIFO (/dev/stdout) is written as it is.
 * NULL after the error line on stderr. */
static FILE *open_private(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	const char *why = NULL;
	struct stat st;
	FILE *f = NULL;

	if (fd < 0 || fstat(fd, &st) < 0)
		why = strerror(errno);
	else if (S_ISREG(st.st_mode) && (st.st_mode & (S_IRWXG | S_IRWXO)))
		fprintf(stderr, "tunlessctl import: %s exists with mode %04o, open to group or others, and would "
			"hold the private key: not overwritten (chmod 600 it, or remove it, and import again)\n",
			path, (unsigned)(st.st_mode & 07777));
	else if ((S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) || !(f = fdopen(fd, "w")))
		why = strerror(errno);
	if (why)
		fprintf(stderr, "tunlessctl import: %s: %s\n", path, why);
	if (!f && fd >= 0)
		close(fd);
	return f;
}

int ctl_import_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "name", required_argument, NULL, 'N' },
		{ "wan", required_argument, NULL, 'w' },
		{ 0 },
	};
	const char *out_path = NULL, *name = NULL, *wan = "eth0";
	char name_buf[IF_NAMESIZE], *base, *dot, *copy;
	struct imp c = { 0 };
	struct tl_buf doc = { 0 };
	FILE *in, *out;
	int opt, rc;

	optind = 0; /* glibc: start over (the caller parsed its own options with "+") */
	while ((opt = getopt_long(argc, argv, "o:N:w:", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': out_path = optarg; break;
		case 'N': name = optarg; break;
		case 'w': wan = optarg; break;
		default: goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	c.file = argv[optind];
	if (sodium_init() < 0)
		return 1;
	in = fopen(c.file, "r");
	if (!in) {
		fprintf(stderr, "tunlessctl import: %s: %s\n", c.file, strerror(errno));
		return 1;
	}
	rc = imp_parse(in, &c);
	fclose(in);
	if (rc) {
		imp_free(&c);
		return 1;
	}
	if (!name) {
		/* wg-quick names the interface after the file: wg0.conf -> wg0 */
		copy = strdup(c.file);
		base = basename(copy);
		dot = strrchr(base, '.');
		if (dot && dot != base)
			*dot = '\0';
		snprintf(name_buf, sizeof(name_buf), "%s", base);
		free(copy);
		name = name_buf;
	}
	fprintf(stderr, "tunlessctl import: WAN port: %s (change ports.wan.iface, or pass --wan IFACE)\n", wan);
	out = out_path ? open_private(out_path) : stdout;
	if (!out) {
		imp_free(&c);
		return 1;
	}
	fprintf(out, "# imported from %s by tunlessctl import\n", c.file);
	rc = imp_emit(&doc, &c, name, wan);
	if (!rc && fwrite(doc.p, 1, doc.len, out) != doc.len)
		rc = -1;
	if (out_path ? fclose(out) != 0 : fflush(out) != 0)
		rc = -1;
	tl_buf_free(&doc);
	imp_free(&c);
	if (rc) {
		fprintf(stderr, "tunlessctl import: writing %s failed\n", out_path ? out_path : "stdout");
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: tunlessctl import WG_QUICK.conf [-o OUT.yaml] [--name NAME] [--wan IFACE]\n");
	return 2;
}
