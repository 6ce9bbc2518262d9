/* Driver for test_kernel.sh: one subcommand per call into src/kernel/netlink.c and
 * src/kernel/xdp.c, plus "attach", which loads an object and attaches its first program
 * the way DPDK's net_af_xdp PMD does (bpf_xdp_attach, XDP_FLAGS_UPDATE_IF_NOEXIST).
 * Prints results on stdout; exit status 0 = success, 1 = failure (message on stderr). */
#include "kernel/netlink.h"
#include "kernel/xdp.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct tl_kd_ip {
	int family;
	uint8_t addr[16];
	uint8_t plen;
};

static int tl_kd_fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	return 1;
}

/* "addr" or "addr/plen", v4 or v6. */
static int tl_kd_parse_ip(const char *s, struct tl_kd_ip *ip)
{
	char buf[64], *slash;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	ip->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(ip->family, buf, ip->addr) != 1) {
		fprintf(stderr, "bad address '%s'\n", s);
		return -1;
	}
	ip->plen = (uint8_t)(slash ? atoi(slash) : (ip->family == AF_INET ? 32 : 128));
	return 0;
}

static int tl_kd_ifindex(const char *ifname)
{
	int idx = (int)if_nametoindex(ifname);

	if (idx == 0)
		fprintf(stderr, "no interface '%s'\n", ifname);
	return idx;
}

static void tl_kd_print_mac(const char *label, const uint8_t mac[6])
{
	printf("%s=%02x:%02x:%02x:%02x:%02x:%02x\n", label, mac[0], mac[1], mac[2], mac[3],
	       mac[4], mac[5]);
}

/* ---- netlink subcommands: argv[0] is the subcommand ---- */

static int tl_kd_veth(struct tl_nl *nl, char **argv)
{
	int rc = tl_nl_veth_create(nl, argv[1], argv[2], (unsigned)atoi(argv[3]));

	return rc ? tl_kd_fail("veth_create", rc) : 0;
}

static int tl_kd_link_del(struct tl_nl *nl, char **argv)
{
	int rc = tl_nl_link_delete(nl, argv[1]);

	printf("rc=%d\n", rc);
	return rc && rc != -ENODEV ? tl_kd_fail("link_delete", rc) : 0;
}

static int tl_kd_link_set(struct tl_nl *nl, char **argv)
{
	int rc = tl_nl_link_set(nl, argv[1], atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));

	return rc ? tl_kd_fail("link_set", rc) : 0;
}

static int tl_kd_link_info(struct tl_nl *nl, char **argv)
{
	uint8_t mac[6];
	int idx, mtu, rc = tl_nl_link_info(nl, argv[1], &idx, mac, &mtu);

	if (rc)
		return tl_kd_fail("link_info", rc);
	printf("ifindex=%d\nmtu=%d\n", idx, mtu);
	tl_kd_print_mac("mac", mac);
	return 0;
}

static int tl_kd_addr_add(struct tl_nl *nl, char **argv)
{
	struct tl_kd_ip ip;
	int idx = tl_kd_ifindex(argv[1]), rc;

	if (!idx || tl_kd_parse_ip(argv[2], &ip))
		return 1;
	rc = tl_nl_addr_add(nl, idx, ip.family, ip.addr, ip.plen);
	return rc ? tl_kd_fail("addr_add", rc) : 0;
}

static int tl_kd_route(struct tl_nl *nl, char **argv, int add)
{
	struct tl_kd_ip ip;
	int idx = tl_kd_ifindex(argv[1]), rc;

	if (!idx || tl_kd_parse_ip(argv[2], &ip))
		return 1;
	if (add)
		rc = tl_nl_route_add(nl, idx, ip.family, ip.addr, ip.plen);
	else
		rc = tl_nl_route_del(nl, idx, ip.family, ip.addr, ip.plen);
	printf("rc=%d\n", rc);
	return rc ? tl_kd_fail(add ? "route_add" : "route_del", rc) : 0;
}

static int tl_kd_route_get(struct tl_nl *nl, char **argv)
{
	struct tl_kd_ip ip;
	char name[IF_NAMESIZE] = "?", gws[INET6_ADDRSTRLEN] = "none";
	uint8_t gw[16];
	int oif, has_gw, rc;

	if (tl_kd_parse_ip(argv[1], &ip))
		return 1;
	rc = tl_nl_route_get(nl, ip.family, ip.addr, &oif, &has_gw, gw);
	if (rc)
		return tl_kd_fail("route_get", rc);
	if (has_gw)
		inet_ntop(ip.family, gw, gws, sizeof(gws));
	if_indextoname((unsigned)oif, name);
	printf("oif=%s\ngw=%s\n", name, gws);
	return 0;
}

static int tl_kd_neigh(struct tl_nl *nl, char **argv, const char *op)
{
	struct tl_kd_ip ip;
	uint8_t mac[6];
	int idx = tl_kd_ifindex(argv[1]), rc;

	if (!idx || tl_kd_parse_ip(argv[2], &ip))
		return 1;
	if (strcmp(op, "get") == 0)
		rc = tl_nl_neigh_get(nl, idx, ip.family, ip.addr, mac);
	else if (strcmp(op, "resolve") == 0)
		rc = tl_nl_neigh_resolve(nl, idx, ip.family, ip.addr);
	else
		rc = tl_nl_neigh_del_managed(nl, idx, ip.family, ip.addr);
	printf("rc=%d\n", rc);
	if (rc < 0)
		return tl_kd_fail(op, rc);
	if (strcmp(op, "get") == 0 && rc == 1)
		tl_kd_print_mac("mac", mac);
	return 0;
}

struct tl_kd_nl_cmd {
	const char *name;
	int argc;
	int (*fn)(struct tl_nl *nl, char **argv);
};

static int tl_kd_route_add(struct tl_nl *nl, char **argv) { return tl_kd_route(nl, argv, 1); }
static int tl_kd_route_del(struct tl_nl *nl, char **argv) { return tl_kd_route(nl, argv, 0); }
static int tl_kd_neigh_get(struct tl_nl *nl, char **argv) { return tl_kd_neigh(nl, argv, "get"); }
static int tl_kd_neigh_res(struct tl_nl *nl, char **argv) { return tl_kd_neigh(nl, argv, "resolve"); }
static int tl_kd_neigh_del(struct tl_nl *nl, char **argv) { return tl_kd_neigh(nl, argv, "del"); }

static const struct tl_kd_nl_cmd tl_kd_nl_cmds[] = {
	{ "veth-create", 4, tl_kd_veth },          /* HOST PEER QUEUES */
	{ "link-del", 2, tl_kd_link_del },         /* IF */
	{ "link-set", 5, tl_kd_link_set },         /* IF UP MTU NOARP */
	{ "link-info", 2, tl_kd_link_info },       /* IF */
	{ "addr-add", 3, tl_kd_addr_add },         /* IF ADDR/PLEN */
	{ "route-add", 3, tl_kd_route_add },       /* IF PREFIX */
	{ "route-del", 3, tl_kd_route_del },       /* IF PREFIX */
	{ "route-get", 2, tl_kd_route_get },       /* ADDR */
	{ "neigh-get", 3, tl_kd_neigh_get },       /* IF ADDR */
	{ "neigh-resolve", 3, tl_kd_neigh_res },   /* IF ADDR */
	{ "neigh-del", 3, tl_kd_neigh_del },       /* IF ADDR */
};

/* ---- XDP subcommands ---- */

/* What net_af_xdp does with xdp_prog=: load, take the first program, attach (in the
 * kernel's default mode; "skb" as a third argument forces generic mode). */
static int tl_kd_attach(char **argv)
{
	uint32_t mode = argv[3] && strcmp(argv[3], "skb") == 0 ? XDP_FLAGS_SKB_MODE : 0;
	int idx = tl_kd_ifindex(argv[1]), fd, rc;
	struct bpf_object *obj;
	struct bpf_program *prog;

	if (!idx)
		return 1;
	obj = bpf_object__open_file(argv[2], NULL);
	if (!obj)
		return tl_kd_fail("open object", -errno);
	rc = bpf_object__load(obj);
	if (rc)
		return tl_kd_fail("load object", rc);
	prog = bpf_object__next_program(obj, NULL);
	fd = prog ? bpf_program__fd(prog) : -ENOENT;
	rc = fd < 0 ? fd : bpf_xdp_attach(idx, fd, XDP_FLAGS_UPDATE_IF_NOEXIST | mode, NULL);
	printf("rc=%d\n", rc);
	bpf_object__close(obj);      /* the attachment keeps program and maps alive */
	return rc ? tl_kd_fail("attach", rc) : 0;
}

static int tl_kd_open_maps(const char *ifname, struct tl_xdp_maps *m)
{
	char err[256] = "";
	int idx = tl_kd_ifindex(ifname), rc;

	if (!idx)
		return -ENODEV;
	rc = tl_xdp_maps_open(idx, m, err, sizeof(err));
	if (rc)
		fprintf(stderr, "maps_open: %s\n", err);
	return rc;
}

static int tl_kd_maps(char **argv)
{
	struct tl_xdp_maps m;

	if (tl_kd_open_maps(argv[1], &m))
		return 1;
	printf("cfg=%d\nroutes4=%d\nroutes6=%d\nstats=%d\n", m.cfg_fd >= 0, m.routes4_fd >= 0,
	       m.routes6_fd >= 0, m.stats_fd >= 0);
	tl_xdp_maps_close(&m);
	return 0;
}

static int tl_kd_cfg(char **argv)
{
	struct tl_xdp_maps m;
	int rc;

	if (tl_kd_open_maps(argv[1], &m))
		return 1;
	rc = tl_xdp_set_cfg(&m, (uint16_t)atoi(argv[2]), (uint32_t)atoi(argv[3]));
	tl_xdp_maps_close(&m);
	return rc ? tl_kd_fail("set_cfg", rc) : 0;
}

/* xroute-add IF PREFIX VALUE | xroute-del IF PREFIX */
static int tl_kd_xroute(char **argv, int add)
{
	struct tl_xdp_maps m;
	struct tl_kd_ip ip;
	int rc;

	if (tl_kd_parse_ip(argv[2], &ip) || tl_kd_open_maps(argv[1], &m))
		return 1;
	if (add)
		rc = tl_xdp_route_add(&m, ip.family, ip.addr, ip.plen, (uint32_t)atoi(argv[3]));
	else
		rc = tl_xdp_route_del(&m, ip.family, ip.addr, ip.plen);
	tl_xdp_maps_close(&m);
	printf("rc=%d\n", rc);
	return rc ? tl_kd_fail("xdp route", rc) : 0;
}

/* xroute-lookup IF ADDR: the trie's longest match for a full address, as the program sees it. */
static int tl_kd_xlookup(char **argv)
{
	struct { uint32_t plen; uint8_t addr[16]; } key;
	struct tl_xdp_maps m;
	struct tl_kd_ip ip;
	uint32_t value;
	int fd, rc;

	if (tl_kd_parse_ip(argv[2], &ip) || tl_kd_open_maps(argv[1], &m))
		return 1;
	key.plen = ip.plen;
	memcpy(key.addr, ip.addr, 16);
	fd = ip.family == AF_INET ? m.routes4_fd : m.routes6_fd;
	rc = bpf_map_lookup_elem(fd, &key, &value);
	if (rc == 0)
		printf("value=%u\n", value);
	else
		printf("value=none\n");
	tl_xdp_maps_close(&m);
	return 0;
}

static int tl_kd_stats(char **argv)
{
	struct tl_xdp_maps m;
	uint64_t s[TL_XDP_STAT_MAX];
	int rc;

	if (tl_kd_open_maps(argv[1], &m))
		return 1;
	rc = tl_xdp_stats(&m, s);
	tl_xdp_maps_close(&m);
	if (rc)
		return tl_kd_fail("stats", rc);
	printf("redirected=%llu\npassed=%llu\nno_socket=%llu\n", (unsigned long long)s[0],
	       (unsigned long long)s[1], (unsigned long long)s[2]);
	return 0;
}

static int tl_kd_open_addrmaps(const char *ifname, struct tl_xdp_addrmaps *m)
{
	char err[256] = "";
	int idx = tl_kd_ifindex(ifname), rc;

	if (!idx)
		return -ENODEV;
	rc = tl_xdp_addrmaps_open(idx, m, err, sizeof(err));
	if (rc)
		fprintf(stderr, "addrmaps_open: %s\n", err);
	return rc;
}

/* xaddr-set IF [ADDR...]: the WAN program's own addresses become exactly these. */
static int tl_kd_xaddr_set(char **argv)
{
	uint8_t a4[8][4], a6[8][16];
	unsigned n4 = 0, n6 = 0;
	struct tl_xdp_addrmaps m;
	struct tl_kd_ip ip;
	int rc;

	for (char **a = argv + 2; *a; a++) {
		if (tl_kd_parse_ip(*a, &ip) || n4 == 8 || n6 == 8)
			return 1;
		if (ip.family == AF_INET)
			memcpy(a4[n4++], ip.addr, 4);
		else
			memcpy(a6[n6++], ip.addr, 16);
	}
	if (tl_kd_open_addrmaps(argv[1], &m))
		return 1;
	rc = tl_xdp_addrmaps_set(&m, (const uint8_t (*)[4])a4, n4, (const uint8_t (*)[16])a6, n6,
				 TL_XDP_ADDRS_PRUNE | TL_XDP_ADDRS_ADD);
	tl_xdp_addrmaps_close(&m);
	printf("rc=%d\n", rc);
	return rc ? tl_kd_fail("addrmaps_set", rc) : 0;
}

/* xaddr-list IF: one address a line. */
static int tl_kd_xaddr_list(char **argv)
{
	struct tl_xdp_addr out[64];
	struct tl_xdp_addrmaps m;
	char s[INET6_ADDRSTRLEN];
	int n;

	if (tl_kd_open_addrmaps(argv[1], &m))
		return 1;
	n = tl_xdp_addrmaps_list(&m, out, 64);
	tl_xdp_addrmaps_close(&m);
	if (n < 0)
		return tl_kd_fail("addrmaps_list", n);
	for (int i = 0; i < n; i++)
		printf("%s\n", inet_ntop(out[i].family, out[i].addr, s, sizeof(s)));
	return 0;
}

static int tl_kd_clear(char **argv)
{
	char err[512] = "";
	int idx = tl_kd_ifindex(argv[1]), rc;

	if (!idx)
		return 1;
	rc = tl_xdp_clear_leftover(idx, err, sizeof(err));
	printf("rc=%d\nerr=%s\n", rc, err);
	return 0;
}

static int tl_kd_detach(char **argv)
{
	int idx = tl_kd_ifindex(argv[1]), rc;

	if (!idx)
		return 1;
	rc = tl_xdp_detach(idx);
	printf("rc=%d\n", rc);
	return rc < 0 ? tl_kd_fail("detach", rc) : 0;
}

static int tl_kd_objpath(char **argv)
{
	char path[512];
	int rc = tl_xdp_object_path(path, sizeof(path), argv[1]);

	printf("rc=%d\npath=%s\n", rc, path);
	return 0;
}

static int tl_kd_xroute_add(char **argv) { return tl_kd_xroute(argv, 1); }
static int tl_kd_xroute_del(char **argv) { return tl_kd_xroute(argv, 0); }

struct tl_kd_xdp_cmd {
	const char *name;
	int argc;
	int (*fn)(char **argv);
};

static const struct tl_kd_xdp_cmd tl_kd_xdp_cmds[] = {
	{ "attach", 3, tl_kd_attach },             /* IF OBJECT [skb] */
	{ "maps", 2, tl_kd_maps },                 /* IF */
	{ "cfg", 4, tl_kd_cfg },                   /* IF PORT FLAGS */
	{ "xroute-add", 4, tl_kd_xroute_add },     /* IF PREFIX VALUE */
	{ "xroute-del", 3, tl_kd_xroute_del },     /* IF PREFIX */
	{ "xroute-lookup", 3, tl_kd_xlookup },     /* IF ADDR */
	{ "xaddr-set", 2, tl_kd_xaddr_set },       /* IF [ADDR...] */
	{ "xaddr-list", 2, tl_kd_xaddr_list },     /* IF */
	{ "stats", 2, tl_kd_stats },               /* IF */
	{ "clear", 2, tl_kd_clear },               /* IF */
	{ "detach", 2, tl_kd_detach },             /* IF */
	{ "object-path", 2, tl_kd_objpath },       /* NAME */
};

#define TL_KD_N(a) (sizeof(a) / sizeof((a)[0]))

static int tl_kd_run_nl(const struct tl_kd_nl_cmd *c, char **argv)
{
	struct tl_nl *nl = tl_nl_open();
	int rc;

	if (!nl)
		return tl_kd_fail("tl_nl_open", -errno);
	rc = c->fn(nl, argv);
	tl_nl_close(nl);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s <subcommand> [args]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < TL_KD_N(tl_kd_nl_cmds); i++)
		if (strcmp(argv[1], tl_kd_nl_cmds[i].name) == 0)
			return argc - 1 < tl_kd_nl_cmds[i].argc ? 2 :
			       tl_kd_run_nl(&tl_kd_nl_cmds[i], argv + 1);
	for (size_t i = 0; i < TL_KD_N(tl_kd_xdp_cmds); i++)
		if (strcmp(argv[1], tl_kd_xdp_cmds[i].name) == 0)
			return argc - 1 < tl_kd_xdp_cmds[i].argc ? 2 : tl_kd_xdp_cmds[i].fn(argv + 1);
	fprintf(stderr, "unknown subcommand '%s'\n", argv[1]);
	return 2;
}
