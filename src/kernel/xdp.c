/* Control-plane side of the tunless XDP programs: object lookup, leftover cleanup, and
 * the maps of the program the net_af_xdp PMD attached (found by name through the kernel,
 * since the PMD owns the bpf_object). */
#include "kernel/xdp.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef TL_BPF_BUILD_DIR
#define TL_BPF_BUILD_DIR "bpf"
#endif
#ifndef TL_BPF_INSTALL_DIR
#define TL_BPF_INSTALL_DIR "/usr/local/lib/tunless"
#endif

/* Mirrors struct tl_bpf_cfg in bpf/tl_maps.h. */
struct tl_xdp_cfg_value {
	uint16_t listen_port;
	uint16_t pad;
	uint32_t flags;
};

/* Mirrors struct tl_route4_key / tl_route6_key in bpf/tl_lan.bpf.c. */
struct tl_xdp_route_key {
	uint32_t prefixlen;
	uint8_t addr[16];
};

/* One program attached to an interface in one XDP mode. */
struct tl_xdp_slot {
	uint32_t prog_id;
	uint32_t mode_flag;         /* XDP_FLAGS_*_MODE, for detach */
	const char *mode_name;
};

#define TL_XDP_MODES 3

void tl_bpf_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int tl_xdp_path_in(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return access(out, R_OK) == 0 ? 0 : -ENOENT;
}

int tl_xdp_object_path(char *out, size_t len, const char *object_name)
{
	const char *env = getenv("TUNLESS_BPF_DIR");
	int rc;

	if (env && *env)
		return tl_xdp_path_in(out, len, env, object_name);
	rc = tl_xdp_path_in(out, len, TL_BPF_BUILD_DIR, object_name);
	if (rc != -ENOENT)
		return rc;
	return tl_xdp_path_in(out, len, TL_BPF_INSTALL_DIR, object_name);
}

/* Fills slots with the programs attached to ifindex, one per mode; returns how many. */
static int tl_xdp_slots(int ifindex, struct tl_xdp_slot slots[TL_XDP_MODES])
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int n = 0, rc;

	rc = bpf_xdp_query(ifindex, 0, &q);
	if (rc < 0)
		return rc;
	if (q.drv_prog_id)
		slots[n++] = (struct tl_xdp_slot){ q.drv_prog_id, XDP_FLAGS_DRV_MODE, "native" };
	if (q.skb_prog_id)
		slots[n++] = (struct tl_xdp_slot){ q.skb_prog_id, XDP_FLAGS_SKB_MODE, "generic" };
	if (q.hw_prog_id)
		slots[n++] = (struct tl_xdp_slot){ q.hw_prog_id, XDP_FLAGS_HW_MODE, "offload" };
	return n;
}

/* The object fd stands for (a program or a map) described in info; fd, or -errno (fd then
 * closed; a negative fd is returned as -errno of its opening). */
static int tl_xdp_obj_info(int fd, void *info, uint32_t info_len)
{
	if (fd < 0)
		return -errno;
	memset(info, 0, info_len);
	if (bpf_obj_get_info_by_fd(fd, info, &info_len) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Opens a program by id and reads its name; returns its fd. */
static int tl_xdp_prog_open(uint32_t id, char name[BPF_OBJ_NAME_LEN])
{
	struct bpf_prog_info info;
	int fd = tl_xdp_obj_info(bpf_prog_get_fd_by_id(id), &info, sizeof(info));

	if (fd < 0)
		return fd;
	memcpy(name, info.name, BPF_OBJ_NAME_LEN);
	name[BPF_OBJ_NAME_LEN - 1] = '\0';
	return fd;
}

static int tl_xdp_is_ours(const char *name)
{
	return strncmp(name, TL_XDP_PROG_PREFIX, strlen(TL_XDP_PROG_PREFIX)) == 0;
}

/* Detaches prog_fd from ifindex in one mode, only if it is still the one attached. */
static int tl_xdp_detach_slot(int ifindex, const struct tl_xdp_slot *s, int prog_fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = prog_fd);
	int rc = bpf_xdp_detach(ifindex, s->mode_flag | XDP_FLAGS_REPLACE, &opts);

	return rc < 0 ? rc : 0;
}

/* Reports the first foreign program among slots in err; -EBUSY if any, else 0. */
static int tl_xdp_check_foreign(int ifindex, const struct tl_xdp_slot *slots, int n,
				char *err, size_t errlen)
{
	char name[BPF_OBJ_NAME_LEN], ifname[IF_NAMESIZE] = "?";

	for (int i = 0; i < n; i++) {
		int fd = tl_xdp_prog_open(slots[i].prog_id, name);

		if (fd < 0)
			continue;         /* gone meanwhile */
		close(fd);
		if (tl_xdp_is_ours(name))
			continue;
		if_indextoname((unsigned)ifindex, ifname);
		tl_bpf_err(err, errlen,
			   "interface %s has a foreign XDP program '%s' (id %u, %s mode) attached; "
			   "remove it first (ip link set dev %s xdp off, or xdp-loader unload %s --all)",
			   ifname, name, slots[i].prog_id, slots[i].mode_name, ifname, ifname);
		return -EBUSY;
	}
	return 0;
}

/* Detaches our programs among slots; returns how many, or the first error. */
static int tl_xdp_detach_ours(int ifindex, const struct tl_xdp_slot *slots, int n)
{
	char name[BPF_OBJ_NAME_LEN];
	int count = 0;

	for (int i = 0; i < n; i++) {
		int fd = tl_xdp_prog_open(slots[i].prog_id, name), rc = 0;

		if (fd < 0)
			continue;
		if (tl_xdp_is_ours(name)) {
			rc = tl_xdp_detach_slot(ifindex, &slots[i], fd);
			count += rc == 0;
		}
		close(fd);
		if (rc < 0)
			return rc;
	}
	return count;
}

int tl_xdp_clear_leftover(int ifindex, char *err, size_t errlen)
{
	struct tl_xdp_slot slots[TL_XDP_MODES];
	int n = tl_xdp_slots(ifindex, slots), rc;

	if (n < 0) {
		tl_bpf_err(err, errlen, "XDP query on ifindex %d: %s", ifindex, strerror(-n));
		return n;
	}
	rc = tl_xdp_check_foreign(ifindex, slots, n, err, errlen);
	if (rc < 0)
		return rc;
	rc = tl_xdp_detach_ours(ifindex, slots, n);
	if (rc < 0) {
		tl_bpf_err(err, errlen, "detaching leftover XDP program from ifindex %d: %s",
			   ifindex, strerror(-rc));
		return rc;
	}
	return rc > 0;
}

int tl_xdp_detach(int ifindex)
{
	struct tl_xdp_slot slots[TL_XDP_MODES];
	int n = tl_xdp_slots(ifindex, slots);

	if (n < 0)
		return n;
	return tl_xdp_detach_ours(ifindex, slots, n);
}

/* fd of our program attached to ifindex, or -ENOENT. */
static int tl_xdp_find_ours(int ifindex)
{
	struct tl_xdp_slot slots[TL_XDP_MODES];
	char name[BPF_OBJ_NAME_LEN];
	int n = tl_xdp_slots(ifindex, slots);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int fd = tl_xdp_prog_open(slots[i].prog_id, name);

		if (fd >= 0 && tl_xdp_is_ours(name))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return -ENOENT;
}

/* Map ids used by a program: *ids is malloc'ed; returns the count. */
static int tl_xdp_prog_map_ids(int prog_fd, uint32_t **ids)
{
	struct bpf_prog_info info;
	uint32_t info_len = sizeof(info), n;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &info_len) < 0)
		return -errno;
	n = info.nr_map_ids;
	*ids = calloc(n ? n : 1, sizeof(**ids));
	if (!*ids)
		return -ENOMEM;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = n;
	info.map_ids = (uint64_t)(uintptr_t)*ids;
	info_len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &info_len) < 0) {
		int rc = -errno;

		free(*ids);
		*ids = NULL;
		return rc;
	}
	return (int)(info.nr_map_ids < n ? info.nr_map_ids : n);
}

/* Where a map of this name goes in m, or NULL if we do not use it. */
static int *tl_xdp_map_slot(struct tl_xdp_maps *m, const char *name)
{
	if (strcmp(name, "tl_cfg") == 0)
		return &m->cfg_fd;
	if (strcmp(name, "tl_routes4") == 0)
		return &m->routes4_fd;
	if (strcmp(name, "tl_routes6") == 0)
		return &m->routes6_fd;
	if (strcmp(name, "tl_stats") == 0)
		return &m->stats_fd;
	return NULL;
}

/* Opens map id and keeps it in m if it is one of ours. */
static int tl_xdp_map_take(struct tl_xdp_maps *m, uint32_t id)
{
	struct bpf_map_info info;
	int fd = tl_xdp_obj_info(bpf_map_get_fd_by_id(id), &info, sizeof(info)), *slot;

	if (fd < 0)
		return fd;
	slot = tl_xdp_map_slot(m, info.name);
	if (slot && *slot < 0)
		*slot = fd;
	else
		close(fd);
	return 0;
}

static void tl_xdp_maps_reset(struct tl_xdp_maps *m)
{
	m->cfg_fd = m->routes4_fd = m->routes6_fd = m->stats_fd = -1;
}

int tl_xdp_maps_open(int ifindex, struct tl_xdp_maps *m, char *err, size_t errlen)
{
	uint32_t *ids = NULL;
	int prog_fd, n, rc = 0;

	tl_xdp_maps_reset(m);
	prog_fd = tl_xdp_find_ours(ifindex);
	if (prog_fd < 0) {
		tl_bpf_err(err, errlen, "no tunless XDP program attached to ifindex %d: %s",
			   ifindex, strerror(-prog_fd));
		return prog_fd;
	}
	n = tl_xdp_prog_map_ids(prog_fd, &ids);
	close(prog_fd);
	for (int i = 0; i < n && rc == 0; i++)
		rc = tl_xdp_map_take(m, ids[i]);
	free(ids);
	if (n < 0 || rc < 0) {
		tl_xdp_maps_close(m);
		tl_bpf_err(err, errlen, "opening XDP maps on ifindex %d: %s", ifindex,
			   strerror(n < 0 ? -n : -rc));
		return n < 0 ? n : rc;
	}
	return 0;
}

void tl_xdp_maps_close(struct tl_xdp_maps *m)
{
	int *fds[] = { &m->cfg_fd, &m->routes4_fd, &m->routes6_fd, &m->stats_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int tl_xdp_set_cfg(const struct tl_xdp_maps *m, uint16_t listen_port, uint32_t flags)
{
	struct tl_xdp_cfg_value v = { .listen_port = listen_port, .flags = flags };
	uint32_t key = 0;

	if (m->cfg_fd < 0)
		return -ENOENT;
	return bpf_map_update_elem(m->cfg_fd, &key, &v, BPF_ANY) < 0 ? -errno : 0;
}

/* Builds a trie key with host bits cleared; returns its map fd, or -errno. */
static int tl_xdp_route_key(const struct tl_xdp_maps *m, int family, const uint8_t *addr,
			    uint8_t prefixlen, struct tl_xdp_route_key *key)
{
	size_t alen = family == AF_INET ? 4 : 16;
	int fd = family == AF_INET ? m->routes4_fd : m->routes6_fd;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	if (prefixlen > alen * 8)
		return -EINVAL;
	if (fd < 0)
		return -ENOENT;
	memset(key, 0, sizeof(*key));
	key->prefixlen = prefixlen;
	memcpy(key->addr, addr, alen);
	for (size_t bit = prefixlen; bit < alen * 8; bit++)
		key->addr[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
	return fd;
}

int tl_xdp_route_add(const struct tl_xdp_maps *m, int family, const uint8_t *addr,
		     uint8_t prefixlen, uint32_t value)
{
	struct tl_xdp_route_key key;
	int fd = tl_xdp_route_key(m, family, addr, prefixlen, &key);

	if (fd < 0)
		return fd;
	return bpf_map_update_elem(fd, &key, &value, BPF_ANY) < 0 ? -errno : 0;
}

int tl_xdp_route_del(const struct tl_xdp_maps *m, int family, const uint8_t *addr,
		     uint8_t prefixlen)
{
	struct tl_xdp_route_key key;
	int fd = tl_xdp_route_key(m, family, addr, prefixlen, &key);

	if (fd < 0)
		return fd;
	return bpf_map_delete_elem(fd, &key) < 0 ? -errno : 0;
}

int tl_bpf_percpu_sums(int fd, uint32_t n, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	int rc = 0;

	if (fd < 0)
		return -ENOENT;
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t key = 0; key < n && rc == 0; key++) {
		out[key] = 0;
		if (bpf_map_lookup_elem(fd, &key, vals) < 0) {
			rc = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			out[key] += vals[c];
	}
	free(vals);
	return rc;
}

int tl_xdp_stats(const struct tl_xdp_maps *m, uint64_t out[TL_XDP_STAT_MAX])
{
	return tl_bpf_percpu_sums(m->stats_fd, TL_XDP_STAT_MAX, out);
}

/* ---- the WAN program's own addresses ---------------------------------------------------- */

int tl_xdp_addrmaps_open(int ifindex, struct tl_xdp_addrmaps *m, char *err, size_t errlen)
{
	uint32_t *ids = NULL;
	int prog_fd, n, rc = 0;

	m->fd4 = m->fd6 = -1;
	prog_fd = tl_xdp_find_ours(ifindex);
	if (prog_fd < 0) {
		tl_bpf_err(err, errlen, "no tunless XDP program attached to ifindex %d: %s",
			   ifindex, strerror(-prog_fd));
		return prog_fd;
	}
	n = tl_xdp_prog_map_ids(prog_fd, &ids);
	close(prog_fd);
	for (int i = 0; i < n && rc == 0; i++) {
		struct bpf_map_info info;
		int fd = tl_xdp_obj_info(bpf_map_get_fd_by_id(ids[i]), &info, sizeof(info));
		int *slot = NULL;

		if (fd < 0) {
			rc = fd;
			break;
		}
		if (strcmp(info.name, "tl_wan_addr4") == 0)
			slot = &m->fd4;
		else if (strcmp(info.name, "tl_wan_addr6") == 0)
			slot = &m->fd6;
		if (slot && *slot < 0)
			*slot = fd;
		else
			close(fd);
	}
	free(ids);
	if (n < 0 || rc < 0 || m->fd4 < 0 || m->fd6 < 0) {
		rc = n < 0 ? n : rc < 0 ? rc : -ENOENT;
		tl_xdp_addrmaps_close(m);
		tl_bpf_err(err, errlen, "the XDP program on ifindex %d: its address maps (tl_wan_addr4, "
			   "tl_wan_addr6): %s", ifindex,
			   rc == -ENOENT ? "absent (an older " TL_XDP_WAN_OBJECT "?)" : strerror(-rc));
		return rc;
	}
	return 0;
}

void tl_xdp_addrmaps_close(struct tl_xdp_addrmaps *m)
{
	if (m->fd4 >= 0)
		close(m->fd4);
	if (m->fd6 >= 0)
		close(m->fd6);
	m->fd4 = m->fd6 = -1;
}

static int tl_xdp_cmp4(const void *a, const void *b)
{
	return memcmp(a, b, 4);
}

static int tl_xdp_cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

/* Brings one map to the n keys of klen bytes at want (what: TL_XDP_ADDRS_*). 0 or the first
 * -errno. */
static int tl_xdp_addr_sync(int fd, size_t klen, const uint8_t *want, unsigned n, unsigned what)
{
	int (*cmp)(const void *, const void *) = klen == 4 ? tl_xdp_cmp4 : tl_xdp_cmp16;
	uint8_t key[16], next[16], *sorted, *stale = NULL;
	unsigned nstale = 0, cap = 0;
	const uint8_t one = 1;
	void *prev = NULL;
	int rc = 0;

	sorted = malloc(n ? n * klen : 1);
	if (!sorted)
		return -ENOMEM;
	if (n)
		memcpy(sorted, want, n * klen);
	qsort(sorted, n, klen, cmp);
	/* the keys to delete first: deleting while walking could restart the walk */
	while ((what & TL_XDP_ADDRS_PRUNE) && bpf_map_get_next_key(fd, prev, next) == 0) {
		if (!bsearch(next, sorted, n, klen, cmp)) {
			if (nstale == cap) {
				uint8_t *more = realloc(stale, (cap = cap ? 2 * cap : 16) * klen);

				if (!more) {
					rc = -ENOMEM;
					break;
				}
				stale = more;
			}
			memcpy(stale + (size_t)nstale++ * klen, next, klen);
		}
		memcpy(key, next, klen);
		prev = key;
	}
	if ((what & TL_XDP_ADDRS_PRUNE) && rc == 0 && errno != ENOENT)
		rc = -errno;
	for (unsigned i = 0; i < nstale; i++)
		if (bpf_map_delete_elem(fd, stale + (size_t)i * klen) < 0 && errno != ENOENT && rc == 0)
			rc = -errno;
	for (unsigned i = 0; (what & TL_XDP_ADDRS_ADD) && i < n; i++)
		if (bpf_map_update_elem(fd, sorted + (size_t)i * klen, &one, BPF_ANY) < 0 && rc == 0)
			rc = -errno;
	free(stale);
	free(sorted);
	return rc;
}

int tl_xdp_addrmaps_set(const struct tl_xdp_addrmaps *m, const uint8_t (*a4)[4], unsigned n4,
			const uint8_t (*a6)[16], unsigned n6, unsigned what)
{
	int r4, r6;

	if (m->fd4 < 0 || m->fd6 < 0)
		return -ENOENT;
	r4 = tl_xdp_addr_sync(m->fd4, 4, n4 ? a4[0] : NULL, n4, what);
	r6 = tl_xdp_addr_sync(m->fd6, 16, n6 ? a6[0] : NULL, n6, what);
	return r4 ? r4 : r6;
}

/* Appends the keys of one map to out[*n..max). */
static int tl_xdp_addr_walk(int fd, int family, struct tl_xdp_addr *out, unsigned max, unsigned *n)
{
	size_t klen = family == AF_INET ? 4 : 16;
	uint8_t key[16], next[16];
	void *prev = NULL;

	while (*n < max && bpf_map_get_next_key(fd, prev, next) == 0) {
		memset(&out[*n], 0, sizeof(out[*n]));
		out[*n].family = family;
		memcpy(out[(*n)++].addr, next, klen);
		memcpy(key, next, klen);
		prev = key;
	}
	return *n < max && errno != ENOENT ? -errno : 0;
}

int tl_xdp_addrmaps_list(const struct tl_xdp_addrmaps *m, struct tl_xdp_addr *out, unsigned max)
{
	unsigned n = 0;
	int rc;

	if (m->fd4 < 0 || m->fd6 < 0)
		return -ENOENT;
	rc = tl_xdp_addr_walk(m->fd4, AF_INET, out, max, &n);
	if (rc == 0)
		rc = tl_xdp_addr_walk(m->fd6, AF_INET6, out, max, &n);
	return rc < 0 ? rc : (int)n;
}
