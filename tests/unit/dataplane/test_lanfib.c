/* The gateway's LAN route snapshot (dataplane/lanfib.c): next hops for connected prefixes
 * and gateways, the lowest metric winning per prefix, a default route, no route, the
 * gateway limit, and a snapshot without tables (every address on-link). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>

#include "check.h"
#include "dataplane/lanfib.h"
#include "dataplane/runtime.h"

static struct tl_lanfib_route rt(int family, const char *dst, int plen, const char *gw, uint32_t metric)
{
	struct tl_lanfib_route r = { .family = (uint8_t)family, .plen = (uint8_t)plen, .metric = metric };

	inet_pton(family, dst, r.dst);
	if (gw) {
		r.has_gw = true;
		inet_pton(family, gw, r.gw);
	}
	return r;
}

/* The next hop of dst as text, or "none". */
static const char *hop(const struct tl_lanfib *f, int family, const char *dst)
{
	static char out[INET6_ADDRSTRLEN];
	struct tl_neigh_key k;
	uint8_t a[16] = { 0 };

	inet_pton(family, dst, a);
	if (tl_lanfib_next_hop(f, family, a, &k) != 0)
		return "none";
	inet_ntop(family, k.ip, out, sizeof(out));
	return out;
}

#define HOP(f, fam, dst, want)                                                                  \
	do {                                                                                    \
		const char *got = hop(f, fam, dst);                                             \
		CHECK(!strcmp(got, want), "%s: next hop %s, expected %s", dst, got, want);       \
	} while (0)

static void routes(void)
{
	struct tl_lanfib_route r[] = {
		rt(AF_INET, "10.2.0.0", 24, NULL, 0),
		rt(AF_INET, "10.200.0.0", 16, "10.2.0.2", 0),
		rt(AF_INET, "10.200.5.0", 24, "10.2.0.3", 100),
		rt(AF_INET, "10.200.5.0", 24, "10.2.0.4", 10),     /* lower metric wins */
		rt(AF_INET6, "fd02::", 64, NULL, 256),
		rt(AF_INET6, "fd77::", 48, "fe80::1", 1024),
	};
	uint64_t skipped;
	struct tl_lanfib *f = tl_lanfib_build(r, sizeof(r) / sizeof(r[0]), true, 1, &skipped);

	CHECK(f != NULL, "build");
	if (!f)
		return;
	CHECK(skipped == 0, "skipped %lu", (unsigned long)skipped);
	CHECK(f->n_gw4 == 3 && f->n_gw6 == 1, "gateways %u/%u", f->n_gw4, f->n_gw6);
	HOP(f, AF_INET, "10.2.0.7", "10.2.0.7");             /* connected: itself */
	HOP(f, AF_INET, "10.200.77.1", "10.2.0.2");
	HOP(f, AF_INET, "10.200.5.9", "10.2.0.4");
	HOP(f, AF_INET, "10.201.0.1", "none");
	HOP(f, AF_INET6, "fd02::9", "fd02::9");
	HOP(f, AF_INET6, "fd77:0:0:1::5", "fe80::1");
	HOP(f, AF_INET6, "fd78::1", "none");
	tl_lanfib_free(f);
}

static void default_route(void)
{
	struct tl_lanfib_route r[] = {
		rt(AF_INET, "0.0.0.0", 0, "10.2.0.254", 0),
		rt(AF_INET6, "::", 0, "fd02::fe", 0),
	};
	uint64_t skipped;
	struct tl_lanfib *f = tl_lanfib_build(r, 2, true, 2, &skipped);

	CHECK(f != NULL && skipped == 0, "default route build");
	if (!f)
		return;
	HOP(f, AF_INET, "192.0.2.1", "10.2.0.254");
	HOP(f, AF_INET6, "2001:db8::1", "fd02::fe");
	tl_lanfib_free(f);
}

static void gateway_limit(void)
{
	size_t n = TL_LANFIB_MAX_GW + 4;
	struct tl_lanfib_route *r = calloc(n, sizeof(*r));
	char dst[32], gw[32];
	uint64_t skipped;
	struct tl_lanfib *f;

	for (size_t i = 0; i < n; i++) {
		snprintf(dst, sizeof(dst), "10.%zu.%zu.0", 100 + i / 256, i % 256);
		snprintf(gw, sizeof(gw), "10.2.%zu.%zu", i / 250, 1 + i % 250);
		r[i] = rt(AF_INET, dst, 24, gw, 0);
	}
	f = tl_lanfib_build(r, n, true, 3, &skipped);
	CHECK(f && skipped == 4 && f->n_gw4 == TL_LANFIB_MAX_GW, "gateway limit: skipped %lu",
	      (unsigned long)skipped);
	tl_lanfib_free(f);
	free(r);
}

static void on_link(void)
{
	uint64_t skipped;
	struct tl_lanfib *f = tl_lanfib_build(NULL, 0, false, 4, &skipped);

	CHECK(f != NULL, "build without tables");
	HOP(f, AF_INET, "192.0.2.9", "192.0.2.9");
	HOP(f, AF_INET6, "2001:db8::9", "2001:db8::9");
	HOP(NULL, AF_INET, "192.0.2.8", "192.0.2.8");       /* nothing published yet */
	tl_lanfib_free(f);
}

int main(int argc, char **argv)
{
	char prefix[64], runtime_dir[4096];
	char *eal[] = { argv[0], "--no-huge", "-m", "128", "--no-pci", "--no-shconf", "--file-prefix", prefix,
			"--log-level", "lib.eal:error", NULL };

	(void)argc;
	snprintf(prefix, sizeof(prefix), "tl_unit_lf_%d", (int)getpid());
	if (rte_eal_init(10, eal) < 0) {
		printf("EAL init failed\n0 passed, 1 failed\n");
		return 1;
	}
	tl_runtime_dir_save(runtime_dir, sizeof(runtime_dir));
	routes();
	default_route();
	gateway_limit();
	on_link();
	rte_eal_cleanup();
	tl_runtime_dir_remove(runtime_dir);
	return check_report();
}
