/* Gateway mode: the control plane's mirror of the kernel's view of the LAN interface, as
 * routers built on DPDK keep one.
 *
 * - Routes: the unicast routes of the main table whose output interface is the LAN port
 *   (connected prefixes and routes via a gateway; of a multipath route the first hop). They
 *   live here in an rte_hash keyed by (family, prefix, length, metric); every change marks
 *   the snapshot dirty, and at most every TL_LF_BUILD_NS a new dataplane/lanfib.h snapshot
 *   (rte_fib + rte_fib6 + gateway addresses) is built and swapped in; the old one is freed
 *   after an RCU grace period of the workers. rte_fib of DPDK 22.11 promises nothing about
 *   lookups during add/delete, hence build-and-swap.
 * - Neighbours: the kernel's entries on the LAN interface that carry a MAC (REACHABLE,
 *   STALE, DELAY, PROBE, PERMANENT, NOARP) go into dp->neigh_table keyed by address;
 *   FAILED/INCOMPLETE entries and deletions take them out. Static `neighbours:` of the
 *   configuration are loaded at start and never overridden. The table has a fixed size;
 *   what does not fit is counted (neigh_full), and its packets wait and then count as
 *   no_neighbour.
 * - Kept current by rtnetlink notifications: a non-blocking libmnl socket subscribed to
 *   RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE and RTNLGRP_NEIGH, polled by the control loop,
 *   subscribed before the initial dump so that nothing is missed (replays are idempotent).
 *   A notification overrun (ENOBUFS) triggers a full dump again.
 * - Resolution: a worker holding packets for a next hop asks once through dp->neigh_req;
 *   requests are deduplicated here (one kernel request per next hop per TL_LF_ASK_NS) and
 *   handed to the kernel as a managed neighbour entry, which the kernel resolves and keeps
 *   fresh; the entry reaches the table by notification and the workers are kicked. A
 *   managed entry that fails (no such host) is deleted again, so that the kernel's table
 *   holds the hosts that exist, not every address the tunnel sent to.
 * Nothing here polls per entry or per destination: the netlink traffic follows changes in
 * the kernel and new next hops only. */
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <rte_malloc.h>

#include "ctrl/device.h"
#include "ctrl/lanfib.h"
#include "ctrl/log.h"
#include "kernel/netlink.h"
#include "dataplane/lanfib.h"

#define TL_LF_ROUTES_MAX 16384
#define TL_LF_PENDING 256
#define TL_LF_ASK_NS (1000ull * 1000000ull)
#define TL_LF_BUILD_NS (50ull * 1000000ull)
#define TL_LF_RCVBUF (4 << 20)
#define TL_LF_BUF 65536
#define TL_LF_READS_PER_POLL 64
#define TL_LF_ATTR_MAX 32

struct tl_lf_route_key {
	uint8_t family, plen, pad[2];
	uint32_t metric;
	uint8_t dst[16];
};

struct tl_lanfib_ctl {
	struct mnl_socket *ev;            /* notifications (non-blocking) */
	int ifindex;
	struct rte_hash *routes;          /* tl_lf_route_key -> struct tl_lanfib_route * */
	bool dirty, resync;
	uint64_t build_after_ns, gen;
	struct {
		struct tl_neigh_key key;
		uint64_t until;
	} pend[TL_LF_PENDING];
	unsigned n_pend;
	struct tl_lanfib_stats st;
	char buf[TL_LF_BUF];
};

/* ---- message parsing ---------------------------------------------------------------------- */

struct lf_attrs {
	const struct nlattr *tb[TL_LF_ATTR_MAX + 1];
};

static int attr_cb(const struct nlattr *a, void *data)
{
	struct lf_attrs *t = data;
	uint16_t type = mnl_attr_get_type(a);

	if (type <= TL_LF_ATTR_MAX)
		t->tb[type] = a;
	return MNL_CB_OK;
}

static bool attr_addr(const struct nlattr *a, size_t alen, uint8_t *out)
{
	if (!a || mnl_attr_get_payload_len(a) != alen)
		return false;
	memcpy(out, mnl_attr_get_payload(a), alen);
	return true;
}

/* Output interface and gateway of a multipath route: those of its first hop. */
static void first_hop(const struct nlattr *mp, size_t alen, uint32_t *oif, struct tl_lanfib_route *r)
{
	const struct rtnexthop *nh = mnl_attr_get_payload(mp);
	const struct nlattr *attr;
	size_t len = mnl_attr_get_payload_len(mp);

	if (len < sizeof(*nh) || nh->rtnh_len < sizeof(*nh) || nh->rtnh_len > len)
		return;
	*oif = (uint32_t)nh->rtnh_ifindex;
	mnl_attr_for_each_payload((const struct nlattr *)RTNH_DATA(nh), nh->rtnh_len - RTNH_LENGTH(0)) {
		if (mnl_attr_get_type(attr) == RTA_GATEWAY)
			r->has_gw = attr_addr(attr, alen, r->gw);
	}
}

static void route_forget(struct tl_lanfib_ctl *c, const struct tl_lf_route_key *k)
{
	struct tl_lanfib_route *old;

	if (rte_hash_lookup_data(c->routes, k, (void **)&old) < 0)
		return;
	rte_hash_del_key(c->routes, k);
	free(old);
	c->dirty = true;
}

static void route_keep(struct tl_lanfib_ctl *c, const struct tl_lf_route_key *k, const struct tl_lanfib_route *r)
{
	struct tl_lanfib_route *e;

	if (rte_hash_lookup_data(c->routes, k, (void **)&e) >= 0) {
		*e = *r;
		c->dirty = true;
		return;
	}
	e = malloc(sizeof(*e));
	if (!e || rte_hash_add_key_data(c->routes, k, e) != 0) {
		free(e);
		c->st.routes_full++;
		return;
	}
	*e = *r;
	c->dirty = true;
}

static void route_msg(struct tl_lanfib_ctl *c, const struct nlmsghdr *nlh)
{
	const struct rtmsg *rm = mnl_nlmsg_get_payload(nlh);
	struct tl_lanfib_route r = { 0 };
	struct tl_lf_route_key k = { 0 };
	struct lf_attrs a = { 0 };
	uint32_t table, oif = 0;
	size_t alen;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*rm)) || (rm->rtm_family != AF_INET && rm->rtm_family != AF_INET6))
		return;
	alen = rm->rtm_family == AF_INET ? 4 : 16;
	if (mnl_attr_parse(nlh, sizeof(*rm), attr_cb, &a) < 0 || rm->rtm_dst_len > alen * 8)
		return;
	table = a.tb[RTA_TABLE] ? mnl_attr_get_u32(a.tb[RTA_TABLE]) : rm->rtm_table;
	if (table != RT_TABLE_MAIN || rm->rtm_type != RTN_UNICAST || a.tb[RTA_VIA])
		return;
	r.family = rm->rtm_family;
	r.plen = rm->rtm_dst_len;
	if (a.tb[RTA_DST] && !attr_addr(a.tb[RTA_DST], alen, r.dst))
		return;
	r.metric = a.tb[RTA_PRIORITY] ? mnl_attr_get_u32(a.tb[RTA_PRIORITY]) : 0;
	if (a.tb[RTA_OIF])
		oif = mnl_attr_get_u32(a.tb[RTA_OIF]);
	r.has_gw = attr_addr(a.tb[RTA_GATEWAY], alen, r.gw);
	if (a.tb[RTA_MULTIPATH])
		first_hop(a.tb[RTA_MULTIPATH], alen, &oif, &r);
	k.family = r.family;
	k.plen = r.plen;
	k.metric = r.metric;
	memcpy(k.dst, r.dst, 16);
	if (nlh->nlmsg_type == RTM_NEWROUTE && oif == (uint32_t)c->ifindex)
		route_keep(c, &k, &r);
	else if (oif == (uint32_t)c->ifindex || (nlh->nlmsg_flags & NLM_F_REPLACE))
		route_forget(c, &k);   /* deleted, or replaced by a route off the LAN port */
}

static bool static_lan(const struct tl_device *dev, const struct tl_neigh_key *k, uint8_t mac[6])
{
	size_t alen = k->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < dev->cfg->n_neighbours; i++) {
		const struct tl_cfg_neighbour *n = &dev->cfg->neighbours[i];

		if (!n->on_wan && n->ip.family == k->family && !memcmp(n->ip.addr, k->ip, alen)) {
			if (mac)
				memcpy(mac, n->mac, 6);
			return true;
		}
	}
	return false;
}

static void kick_workers(struct tl_device *dev)
{
	for (unsigned w = 0; w < dev->dp.n_workers; w++)
		if (atomic_load_explicit(&dev->workers[w].running, memory_order_acquire))
			tl_worker_kick(&dev->workers[w]);
}

static void neigh_set(struct tl_device *dev, const struct tl_neigh_key *k, const uint8_t mac[6])
{
	struct tl_lanfib_ctl *c = dev->lanfib;
	void *old;

	if (rte_hash_lookup_data(dev->dp.neigh_table, k, &old) >= 0 && (uintptr_t)old == tl_mac_pack(mac))
		return;
	if (rte_hash_add_key_data(dev->dp.neigh_table, k, (void *)tl_mac_pack(mac)) != 0) {
		c->st.neigh_full++;
		return;
	}
	kick_workers(dev);   /* packets may be held for it */
}

#define TL_NUD_USABLE (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP)

static void neigh_msg(struct tl_device *dev, const struct nlmsghdr *nlh)
{
	const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);
	struct tl_neigh_key k = { 0 };
	struct lf_attrs a = { 0 };
	uint8_t mac[6];
	size_t alen;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*nd)) || (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6))
		return;
	if (nd->ndm_ifindex != dev->lanfib->ifindex || mnl_attr_parse(nlh, sizeof(*nd), attr_cb, &a) < 0)
		return;
	alen = nd->ndm_family == AF_INET ? 4 : 16;
	k.family = nd->ndm_family;
	if (!attr_addr(a.tb[NDA_DST], alen, k.ip) || static_lan(dev, &k, NULL))
		return;
	if (nlh->nlmsg_type == RTM_NEWNEIGH && (nd->ndm_state & TL_NUD_USABLE) && attr_addr(a.tb[NDA_LLADDR], 6, mac)) {
		neigh_set(dev, &k, mac);
		return;
	}
	rte_hash_del_key(dev->dp.neigh_table, &k);
	/* A managed entry we asked for that failed: no such host. The kernel would keep
	 * probing it for ever; only hosts that answer stay in its table. */
	if (nlh->nlmsg_type == RTM_NEWNEIGH && (nd->ndm_state & NUD_FAILED) && a.tb[NDA_FLAGS_EXT] &&
	    mnl_attr_get_payload_len(a.tb[NDA_FLAGS_EXT]) == 4 && (mnl_attr_get_u32(a.tb[NDA_FLAGS_EXT]) & NTF_EXT_MANAGED) &&
	    tl_nl_neigh_del_managed(dev->nl, dev->lanfib->ifindex, k.family, k.ip) == 0)
		dev->lanfib->st.failed_removed++;
}

static int msg_cb(const struct nlmsghdr *nlh, void *data)
{
	struct tl_device *dev = data;

	switch (nlh->nlmsg_type) {
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		route_msg(dev->lanfib, nlh);
		break;
	case RTM_NEWNEIGH:
	case RTM_DELNEIGH:
		neigh_msg(dev, nlh);
		break;
	default:
		break;
	}
	return MNL_CB_OK;
}

/* ---- dumps -------------------------------------------------------------------------------- */

static int dump_one(struct tl_device *dev, struct mnl_socket *sk, uint16_t type, int family)
{
	struct tl_lanfib_ctl *c = dev->lanfib;
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(c->buf);
	unsigned portid = mnl_socket_get_portid(sk), seq = ++c->st.dumps;
	int rc;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	if (type == RTM_GETROUTE) {
		struct rtmsg *rm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rm));

		rm->rtm_family = (uint8_t)family;
	} else {
		struct ndmsg *nd = mnl_nlmsg_put_extra_header(nlh, sizeof(*nd));

		nd->ndm_family = (uint8_t)family;
	}
	if (mnl_socket_sendto(sk, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ssize_t n = mnl_socket_recvfrom(sk, c->buf, sizeof(c->buf));

		if (n < 0)
			return -errno;
		rc = mnl_cb_run(c->buf, (size_t)n, seq, portid, msg_cb, dev);
	} while (rc > MNL_CB_STOP);
	return rc == MNL_CB_ERROR ? -EIO : 0;
}

static void routes_clear(struct tl_lanfib_ctl *c)
{
	const void *k;
	void *data;
	uint32_t it = 0;

	while (rte_hash_iterate(c->routes, &k, &data, &it) >= 0)
		free(data);
	rte_hash_reset(c->routes);
	c->dirty = true;
}

/* Routes and neighbours of the LAN interface, from scratch. */
static int dump_all(struct tl_device *dev)
{
	struct mnl_socket *sk = mnl_socket_open(NETLINK_ROUTE);
	int rc = -errno;

	if (!sk)
		return rc;
	routes_clear(dev->lanfib);
	rc = mnl_socket_bind(sk, 0, MNL_SOCKET_AUTOPID) < 0 ? -errno : 0;
	if (!rc)
		rc = dump_one(dev, sk, RTM_GETROUTE, AF_INET);
	if (!rc)
		rc = dump_one(dev, sk, RTM_GETROUTE, AF_INET6);
	if (!rc)
		rc = dump_one(dev, sk, RTM_GETNEIGH, AF_INET);
	if (!rc)
		rc = dump_one(dev, sk, RTM_GETNEIGH, AF_INET6);
	mnl_socket_close(sk);
	return rc;
}

/* ---- the snapshot ------------------------------------------------------------------------- */

static int publish(struct tl_device *dev)
{
	struct tl_lanfib_ctl *c = dev->lanfib;
	uint32_t n = rte_hash_count(c->routes), i = 0, it = 0;
	struct tl_lanfib_route *all = calloc(n ? n : 1, sizeof(*all));
	struct tl_lanfib *f, *old;
	const void *k;
	void *data;
	uint64_t skipped;

	if (!all)
		return -ENOMEM;
	while (i < n && rte_hash_iterate(c->routes, &k, &data, &it) >= 0)
		all[i++] = *(struct tl_lanfib_route *)data;
	f = tl_lanfib_build(all, i, c->ifindex > 0, ++c->gen, &skipped);
	free(all);
	if (!f)
		return -ENOMEM;
	c->st.routes_skipped = skipped;
	c->st.routes4 = f->n_routes4;
	c->st.routes6 = f->n_routes6;
	c->st.gateways4 = f->n_gw4;
	c->st.gateways6 = f->n_gw6;
	c->st.builds++;
	old = atomic_exchange_explicit(&dev->dp.lanfib, f, memory_order_acq_rel);
	if (old) {
		rte_rcu_qsbr_synchronize(dev->dp.qsbr, RTE_QSBR_THRID_INVALID);
		tl_lanfib_free(old);
	}
	c->dirty = false;
	return 0;
}

/* ---- requests from the workers ------------------------------------------------------------ */

/* true if k was asked for recently; otherwise remembers it as asked now. */
static bool asked_recently(struct tl_lanfib_ctl *c, const struct tl_neigh_key *k, uint64_t now)
{
	unsigned oldest = 0;

	for (unsigned i = 0; i < c->n_pend; i++) {
		if (!memcmp(&c->pend[i].key, k, sizeof(*k))) {
			if (now < c->pend[i].until)
				return true;
			c->pend[i].until = now + TL_LF_ASK_NS;
			return false;
		}
		if (c->pend[i].until < c->pend[oldest].until)
			oldest = i;
	}
	if (c->n_pend < TL_LF_PENDING)
		oldest = c->n_pend++;
	c->pend[oldest].key = *k;
	c->pend[oldest].until = now + TL_LF_ASK_NS;
	return false;
}

static void resolve(struct tl_device *dev, const struct tl_neigh_key *k)
{
	struct tl_lanfib_ctl *c = dev->lanfib;
	uint8_t mac[6];

	if (static_lan(dev, k, mac))
		return neigh_set(dev, k, mac);
	if (c->ifindex <= 0)
		return;
	c->st.resolve_requests++;
	tl_nl_neigh_resolve(dev->nl, c->ifindex, k->family, k->ip);
	/* Already resolved in the kernel (no notification will come): take it now. */
	if (tl_nl_neigh_get(dev->nl, c->ifindex, k->family, k->ip, mac) == 1)
		neigh_set(dev, k, mac);
}

static unsigned serve_requests(struct tl_device *dev, uint64_t now)
{
	struct tl_neigh_key k;
	unsigned n = 0;

	while (rte_ring_sc_dequeue_elem(dev->dp.neigh_req, &k, sizeof(k)) == 0) {
		n++;
		if (rte_hash_lookup(dev->dp.neigh_table, &k) >= 0 || asked_recently(dev->lanfib, &k, now))
			continue;
		resolve(dev, &k);
	}
	return n;
}

/* ---- notifications ------------------------------------------------------------------------ */

static unsigned read_events(struct tl_device *dev)
{
	struct tl_lanfib_ctl *c = dev->lanfib;
	unsigned n = 0;

	while (c->ev && n < TL_LF_READS_PER_POLL) {
		ssize_t len = mnl_socket_recvfrom(c->ev, c->buf, sizeof(c->buf));

		if (len < 0) {
			if (errno == ENOBUFS) {
				c->resync = true;      /* notifications were lost */
				c->st.overruns++;
				n++;
				continue;
			}
			break;                         /* EAGAIN: nothing more */
		}
		n++;
		c->st.events++;
		mnl_cb_run(c->buf, (size_t)len, 0, 0, msg_cb, dev);
	}
	return n;
}

unsigned tl_lanfib_poll(struct tl_device *dev, uint64_t now)
{
	struct tl_lanfib_ctl *c = dev->lanfib;
	unsigned n;

	if (!c)
		return 0;
	n = read_events(dev) + serve_requests(dev, now);
	if (c->resync) {
		c->resync = false;
		c->st.resyncs++;
		if (dump_all(dev) != 0)
			c->resync = true;
	}
	if (c->dirty && !c->build_after_ns)
		c->build_after_ns = now + TL_LF_BUILD_NS;
	if (c->dirty && now >= c->build_after_ns && publish(dev) == 0)
		c->build_after_ns = 0;
	return n;
}

/* ---- setup -------------------------------------------------------------------------------- */

static int subscribe(struct tl_lanfib_ctl *c)
{
	unsigned groups = RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE | RTMGRP_NEIGH;
	int fd, sz = TL_LF_RCVBUF;

	c->ev = mnl_socket_open(NETLINK_ROUTE);
	if (!c->ev || mnl_socket_bind(c->ev, groups, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	fd = mnl_socket_get_fd(c->ev);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 ? 0 : -errno;
}

static void statics_load(struct tl_device *dev)
{
	for (size_t i = 0; i < dev->cfg->n_neighbours; i++) {
		const struct tl_cfg_neighbour *n = &dev->cfg->neighbours[i];
		struct tl_neigh_key k = { .family = (uint8_t)n->ip.family };

		if (n->on_wan)
			continue;
		memcpy(k.ip, n->ip.addr, n->ip.family == AF_INET ? 4 : 16);
		neigh_set(dev, &k, n->mac);
	}
}

int tl_lanfib_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct rte_hash_parameters p = {
		.name = "tl_lanfib_routes",
		.entries = TL_LF_ROUTES_MAX,
		.key_len = sizeof(struct tl_lf_route_key),
		.socket_id = (int)rte_socket_id(),
	};
	struct tl_lanfib_ctl *c = calloc(1, sizeof(*c));
	int rc;

	dev->lanfib = c;
	if (!c || !(c->routes = rte_hash_create(&p))) {
		snprintf(err, errlen, "LAN routes: cannot allocate");
		return -1;
	}
	c->ifindex = dev->ports[TL_PORT_LAN].ifindex;
	statics_load(dev);
	if (c->ifindex > 0) {
		rc = subscribe(c);
		if (!rc)
			rc = dump_all(dev);
		if (rc) {
			snprintf(err, errlen, "LAN routes and neighbours (rtnetlink): %s", strerror(-rc));
			return -1;
		}
	}
	if (publish(dev) != 0) {
		snprintf(err, errlen, "LAN routes: cannot build the route table");
		return -1;
	}
	return 0;
}

void tl_lanfib_close(struct tl_device *dev)
{
	struct tl_lanfib_ctl *c = dev->lanfib;

	if (!c)
		return;
	if (c->ev)
		mnl_socket_close(c->ev);
	if (c->routes) {
		routes_clear(c);
		rte_hash_free(c->routes);
	}
	free(c);
	dev->lanfib = NULL;
}

void tl_lanfib_stats_get(const struct tl_device *dev, struct tl_lanfib_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (dev->lanfib)
		*st = dev->lanfib->st;
	st->neighbours = dev->dp.neigh_table ? (uint64_t)rte_hash_count(dev->dp.neigh_table) : 0;
	st->netlink_requests = dev->nl ? tl_nl_requests(dev->nl) : 0;
}
