/* rtnetlink route, neighbour and address monitor (rtmon.h). */
#include "kernel/rtmon.h"

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RTMON_BUF 65536
#define RTMON_ATTR_MAX 32
#define RTMON_NUD_USABLE (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP)

struct tl_rtmon {
	struct mnl_socket *ev;
	const struct tl_rtmon_ops *ops;
	void *ctx;
	char buf[RTMON_BUF];
};

/* ---- message parsing ----------------------------------------------------------------------------- */

struct attrs {
	const struct nlattr *tb[RTMON_ATTR_MAX + 1];
};

static int attr_cb(const struct nlattr *a, void *data)
{
	struct attrs *t = data;
	uint16_t type = mnl_attr_get_type(a);

	if (type <= RTMON_ATTR_MAX)
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
static void first_hop(const struct nlattr *mp, size_t alen, struct tl_rt_route *r)
{
	const struct rtnexthop *nh = mnl_attr_get_payload(mp);
	const struct nlattr *attr;
	size_t len = mnl_attr_get_payload_len(mp);

	if (len < sizeof(*nh) || nh->rtnh_len < sizeof(*nh) || nh->rtnh_len > len)
		return;
	r->oif = (uint32_t)nh->rtnh_ifindex;
	mnl_attr_for_each_payload((const struct nlattr *)RTNH_DATA(nh), nh->rtnh_len - RTNH_LENGTH(0)) {
		if (mnl_attr_get_type(attr) == RTA_GATEWAY)
			r->has_gw = attr_addr(attr, alen, r->gw);
	}
}

static void route_msg(struct tl_rtmon *m, const struct nlmsghdr *nlh)
{
	const struct rtmsg *rm = mnl_nlmsg_get_payload(nlh);
	struct tl_rt_route r = { 0 };
	struct attrs a = { 0 };
	uint32_t table;
	size_t alen;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*rm)) || (rm->rtm_family != AF_INET && rm->rtm_family != AF_INET6))
		return;
	alen = rm->rtm_family == AF_INET ? 4 : 16;
	if (mnl_attr_parse(nlh, sizeof(*rm), attr_cb, &a) < 0 || rm->rtm_dst_len > alen * 8)
		return;
	table = a.tb[RTA_TABLE] ? mnl_attr_get_u32(a.tb[RTA_TABLE]) : rm->rtm_table;
	if (table != RT_TABLE_MAIN || rm->rtm_type != RTN_UNICAST || a.tb[RTA_VIA])
		return;
	r.add = nlh->nlmsg_type == RTM_NEWROUTE;
	r.replace = nlh->nlmsg_flags & NLM_F_REPLACE;
	r.family = rm->rtm_family;
	r.plen = rm->rtm_dst_len;
	if (a.tb[RTA_DST] && !attr_addr(a.tb[RTA_DST], alen, r.dst))
		return;
	r.metric = a.tb[RTA_PRIORITY] ? mnl_attr_get_u32(a.tb[RTA_PRIORITY]) : 0;
	if (a.tb[RTA_OIF])
		r.oif = mnl_attr_get_u32(a.tb[RTA_OIF]);
	r.has_gw = attr_addr(a.tb[RTA_GATEWAY], alen, r.gw);
	if (a.tb[RTA_MULTIPATH])
		first_hop(a.tb[RTA_MULTIPATH], alen, &r);
	m->ops->route(m->ctx, &r);
}

static void neigh_msg(struct tl_rtmon *m, const struct nlmsghdr *nlh)
{
	const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);
	struct tl_rt_neigh n = { 0 };
	struct attrs a = { 0 };
	size_t alen;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*nd)) || (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6))
		return;
	if (mnl_attr_parse(nlh, sizeof(*nd), attr_cb, &a) < 0)
		return;
	alen = nd->ndm_family == AF_INET ? 4 : 16;
	n.add = nlh->nlmsg_type == RTM_NEWNEIGH;
	n.family = nd->ndm_family;
	n.ifindex = nd->ndm_ifindex;
	if (!attr_addr(a.tb[NDA_DST], alen, n.ip))
		return;
	n.usable = n.add && (nd->ndm_state & RTMON_NUD_USABLE) && attr_addr(a.tb[NDA_LLADDR], 6, n.mac);
	n.failed_managed = n.add && (nd->ndm_state & NUD_FAILED) && a.tb[NDA_FLAGS_EXT] &&
			   mnl_attr_get_payload_len(a.tb[NDA_FLAGS_EXT]) == 4 &&
			   (mnl_attr_get_u32(a.tb[NDA_FLAGS_EXT]) & NTF_EXT_MANAGED);
	m->ops->neigh(m->ctx, &n);
}

static void addr_msg(struct tl_rtmon *m, const struct nlmsghdr *nlh)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct tl_rt_addr r = { 0 };
	struct attrs a = { 0 };
	uint32_t flags;
	size_t alen;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*ifa)) || (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
		return;
	if (mnl_attr_parse(nlh, sizeof(*ifa), attr_cb, &a) < 0)
		return;
	alen = ifa->ifa_family == AF_INET ? 4 : 16;
	if (!attr_addr(a.tb[IFA_LOCAL], alen, r.ip) && !attr_addr(a.tb[IFA_ADDRESS], alen, r.ip))
		return;
	flags = a.tb[IFA_FLAGS] && mnl_attr_get_payload_len(a.tb[IFA_FLAGS]) == 4 ? mnl_attr_get_u32(a.tb[IFA_FLAGS])
										   : ifa->ifa_flags;
	r.add = nlh->nlmsg_type == RTM_NEWADDR;
	r.family = ifa->ifa_family;
	r.plen = ifa->ifa_prefixlen;
	r.ifindex = (int)ifa->ifa_index;
	r.usable = r.add && !(flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED));
	m->ops->addr(m->ctx, &r);
}

static int msg_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct tl_rtmon *m = data;

	switch (nlh->nlmsg_type) {
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		if (m->ops->route)
			route_msg(data, nlh);
		break;
	case RTM_NEWNEIGH:
	case RTM_DELNEIGH:
		if (m->ops->neigh)
			neigh_msg(data, nlh);
		break;
	case RTM_NEWADDR:
	case RTM_DELADDR:
		if (m->ops->addr)
			addr_msg(data, nlh);
		break;
	default:
		break;
	}
	return MNL_CB_OK;
}

/* ---- the subscription ------------------------------------------------------------------------------- */

struct tl_rtmon *tl_rtmon_open(const struct tl_rtmon_ops *ops, void *ctx, int rcvbuf)
{
	unsigned groups = (ops->route ? RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE : 0) | (ops->neigh ? RTMGRP_NEIGH : 0) |
			  (ops->addr ? RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR : 0);
	struct tl_rtmon *m = calloc(1, sizeof(*m));
	int fd, e;

	if (!m)
		return NULL;
	m->ops = ops;
	m->ctx = ctx;
	m->ev = mnl_socket_open(NETLINK_ROUTE);
	if (!m->ev || mnl_socket_bind(m->ev, groups, MNL_SOCKET_AUTOPID) < 0)
		goto fail;
	fd = mnl_socket_get_fd(m->ev);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
		goto fail;
	return m;
fail:
	e = errno;
	tl_rtmon_close(m);
	errno = e;
	return NULL;
}

void tl_rtmon_close(struct tl_rtmon *m)
{
	if (!m)
		return;
	if (m->ev)
		mnl_socket_close(m->ev);
	free(m);
}

int tl_rtmon_fd(const struct tl_rtmon *m)
{
	return mnl_socket_get_fd(m->ev);
}

unsigned tl_rtmon_read(struct tl_rtmon *m, unsigned max, bool *overrun)
{
	unsigned n = 0;

	while (n < max) {
		ssize_t len = mnl_socket_recvfrom(m->ev, m->buf, sizeof(m->buf));

		if (len < 0) {
			if (errno == ENOBUFS) {
				*overrun = true;       /* notifications were lost */
				n++;
				continue;
			}
			break;                         /* EAGAIN: nothing more */
		}
		n++;
		mnl_cb_run(m->buf, (size_t)len, 0, 0, msg_cb, m);
	}
	return n;
}

/* ---- dumps ----------------------------------------------------------------------------------------- */

static int dump_one(struct tl_rtmon *m, struct mnl_socket *sk, uint16_t type, int family, unsigned seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(m->buf);
	unsigned portid = mnl_socket_get_portid(sk);
	int rc;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	if (type == RTM_GETROUTE) {
		struct rtmsg *rm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rm));

		rm->rtm_family = (uint8_t)family;
	} else if (type == RTM_GETADDR) {
		struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));

		ifa->ifa_family = (uint8_t)family;
	} else {
		struct ndmsg *nd = mnl_nlmsg_put_extra_header(nlh, sizeof(*nd));

		nd->ndm_family = (uint8_t)family;
	}
	if (mnl_socket_sendto(sk, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ssize_t n = mnl_socket_recvfrom(sk, m->buf, sizeof(m->buf));

		if (n < 0)
			return -errno;
		rc = mnl_cb_run(m->buf, (size_t)n, seq, portid, msg_cb, m);
	} while (rc > MNL_CB_STOP);
	return rc == MNL_CB_ERROR ? -EIO : 0;
}

int tl_rtmon_dump(struct tl_rtmon *m, uint64_t *requests)
{
	static const struct {
		uint16_t type;
		int family;
	} what[] = { { RTM_GETROUTE, AF_INET }, { RTM_GETROUTE, AF_INET6 }, { RTM_GETNEIGH, AF_INET },
		     { RTM_GETNEIGH, AF_INET6 }, { RTM_GETADDR, AF_INET }, { RTM_GETADDR, AF_INET6 } };
	struct mnl_socket *sk = mnl_socket_open(NETLINK_ROUTE);
	int rc = -errno;

	if (!sk)
		return rc;
	rc = mnl_socket_bind(sk, 0, MNL_SOCKET_AUTOPID) < 0 ? -errno : 0;
	for (size_t i = 0; !rc && i < sizeof(what) / sizeof(what[0]); i++) {
		uint16_t t = what[i].type;

		if ((t == RTM_GETROUTE && m->ops->route) || (t == RTM_GETNEIGH && m->ops->neigh) ||
		    (t == RTM_GETADDR && m->ops->addr))
			rc = dump_one(m, sk, t, what[i].family, (unsigned)++*requests);
	}
	mnl_socket_close(sk);
	return rc;
}
