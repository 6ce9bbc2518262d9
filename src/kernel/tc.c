/* The tc programs of a gateway's packet LAN port (kernel/tc.h). */
#include "kernel/tc.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const tl_tc_stat_names[TL_TC_STAT_MAX] = { "steered", "passed", "sent", "no_target" };

/* Mirrors struct tl_tc_cfg in bpf/tl_lan_tc.bpf.c. */
struct tl_tc_cfg_value {
	uint32_t to_pair, to_lan;
};

static const char *ifname_of(int ifindex, char buf[IF_NAMESIZE])
{
	if (!if_indextoname((unsigned)ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "ifindex %d", ifindex);
	return buf;
}

#define TC_HOOK(name, ifi) LIBBPF_OPTS(bpf_tc_hook, name, .ifindex = (ifi), .attach_point = BPF_TC_INGRESS)
#define TC_OPTS(name) LIBBPF_OPTS(bpf_tc_opts, name, .handle = TL_TC_HANDLE, .priority = TL_TC_PRIORITY)

int tl_tc_clear_leftover(int ifindex, char *err, size_t errlen)
{
	TC_HOOK(hook, ifindex);
	TC_OPTS(q);
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	char ifn[IF_NAMESIZE];
	int fd, rc;

	rc = bpf_tc_query(&hook, &q);
	if (rc == -ENOENT || rc == -EINVAL)       /* no filter there, or no clsact at all */
		return 0;
	if (rc < 0) {
		tl_bpf_err(err, errlen, "tc query on %s: %s", ifname_of(ifindex, ifn), strerror(-rc));
		return rc;
	}
	memset(&info, 0, sizeof(info));
	fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return 0;                             /* gone meanwhile */
	}
	close(fd);
	if (strncmp(info.name, TL_XDP_PROG_PREFIX, strlen(TL_XDP_PROG_PREFIX)) != 0) {
		tl_bpf_err(err, errlen, "interface %s has a foreign tc ingress program '%s' (id %u) at handle 0x%x "
		       "priority %u; remove it first (tc filter del dev %s ingress prio %u)", ifname_of(ifindex, ifn),
		       info.name, q.prog_id, TL_TC_HANDLE, TL_TC_PRIORITY, ifn, TL_TC_PRIORITY);
		return -EBUSY;
	}
	{
		TC_OPTS(d);

		rc = bpf_tc_detach(&hook, &d);
	}
	if (rc < 0) {
		tl_bpf_err(err, errlen, "detaching a leftover tc program from %s: %s", ifname_of(ifindex, ifn),
		       strerror(-rc));
		return rc;
	}
	return 1;
}

static int attach(int ifindex, struct bpf_program *prog, char *err, size_t errlen)
{
	TC_HOOK(hook, ifindex);
	TC_OPTS(o);
	char ifn[IF_NAMESIZE];
	int rc = bpf_tc_hook_create(&hook);

	if (rc < 0 && rc != -EEXIST) {
		tl_bpf_err(err, errlen, "clsact on %s: %s", ifname_of(ifindex, ifn), strerror(-rc));
		return rc;
	}
	o.prog_fd = bpf_program__fd(prog);
	rc = bpf_tc_attach(&hook, &o);
	if (rc < 0)
		tl_bpf_err(err, errlen, "attaching %s to the ingress of %s: %s", bpf_program__name(prog),
		       ifname_of(ifindex, ifn), strerror(-rc));
	return rc;
}

static void detach(int ifindex)
{
	TC_HOOK(hook, ifindex);
	TC_OPTS(o);

	bpf_tc_detach(&hook, &o);
}

/* A duplicate of the object's map fd, or -errno. */
static int map_dup(struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);
	int fd = m ? bpf_map__fd(m) : -1;

	if (fd < 0)
		return -ENOENT;
	fd = dup(fd);
	return fd < 0 ? -errno : fd;
}

static int load(struct tl_tc *t, char *err, size_t errlen)
{
	char path[4096];
	int rc = tl_xdp_object_path(path, sizeof(path), TL_TC_LAN_OBJECT);

	if (rc != 0) {
		tl_bpf_err(err, errlen, "tc object %s not found (build it, or set TUNLESS_BPF_DIR)", path);
		return rc;
	}
	t->obj = bpf_object__open_file(path, NULL);
	if (!t->obj) {
		rc = -errno;
		tl_bpf_err(err, errlen, "opening %s: %s", path, strerror(-rc));
		return rc;
	}
	rc = bpf_object__load(t->obj);
	if (rc < 0) {
		tl_bpf_err(err, errlen, "loading %s: %s", path, strerror(-rc));
		return rc;
	}
	t->maps.routes4_fd = map_dup(t->obj, "tl_routes4");
	t->maps.routes6_fd = map_dup(t->obj, "tl_routes6");
	t->maps.stats_fd = map_dup(t->obj, "tl_tc_stats");
	if (t->maps.routes4_fd < 0 || t->maps.routes6_fd < 0 || t->maps.stats_fd < 0) {
		tl_bpf_err(err, errlen, "%s lacks its maps (tl_routes4, tl_routes6, tl_tc_stats)", path);
		return -ENOENT;
	}
	return 0;
}

int tl_tc_open(struct tl_tc *t, int lan_ifindex, int pair_ifindex, char *err, size_t errlen)
{
	struct tl_tc_cfg_value v = { .to_pair = (uint32_t)pair_ifindex, .to_lan = (uint32_t)lan_ifindex };
	struct bpf_program *in, *out;
	struct bpf_map *cfg;
	uint32_t key = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	t->maps = (struct tl_xdp_maps){ -1, -1, -1, -1 };
	t->lan_ifindex = lan_ifindex;
	t->pair_ifindex = pair_ifindex;
	rc = load(t, err, errlen);
	if (rc < 0)
		goto fail;
	in = bpf_object__find_program_by_name(t->obj, "tl_lan_tc_in");
	out = bpf_object__find_program_by_name(t->obj, "tl_lan_tc_out");
	cfg = bpf_object__find_map_by_name(t->obj, "tl_tc_cfg");
	if (!in || !out || !cfg) {
		tl_bpf_err(err, errlen, "%s lacks tl_lan_tc_in, tl_lan_tc_out or tl_tc_cfg", TL_TC_LAN_OBJECT);
		rc = -ENOENT;
		goto fail;
	}
	if (bpf_map_update_elem(bpf_map__fd(cfg), &key, &v, BPF_ANY) < 0) {
		rc = -errno;
		tl_bpf_err(err, errlen, "writing tl_tc_cfg: %s", strerror(-rc));
		goto fail;
	}
	/* tunless's way out first, then the LAN's way in */
	rc = attach(pair_ifindex, out, err, errlen);
	if (rc < 0)
		goto fail;
	t->pair_attached = true;
	rc = attach(lan_ifindex, in, err, errlen);
	if (rc < 0)
		goto fail;
	t->lan_attached = true;
	return 0;
fail:
	tl_tc_close(t);
	return rc;
}

void tl_tc_close(struct tl_tc *t)
{
	if (t->lan_attached)
		detach(t->lan_ifindex);
	if (t->pair_attached)
		detach(t->pair_ifindex);
	t->lan_attached = t->pair_attached = false;
	tl_xdp_maps_close(&t->maps);
	if (t->obj)
		bpf_object__close(t->obj);
	t->obj = NULL;
}

int tl_tc_stats(const struct tl_tc *t, uint64_t out[TL_TC_STAT_MAX])
{
	return tl_bpf_percpu_sums(t->maps.stats_fd, TL_TC_STAT_MAX, out);
}
