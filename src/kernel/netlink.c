/* rtnetlink requests over libmnl: one socket, one request at a time, every request
 * acked so that replies and errors are read synchronously. */
#include "kernel/netlink.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define TL_NL_BUF 32768
#define TL_NL_ATTR_MAX 64          /* above every *_MAX we parse */

struct tl_nl {
	struct mnl_socket *sk;
	unsigned int portid;
	unsigned int seq;
	uint64_t requests;
	char buf[TL_NL_BUF];       /* request, then replies */
};

/* Attributes of one reply message, indexed by type. */
struct tl_nl_attrs {
	const struct nlattr *tb[TL_NL_ATTR_MAX + 1];
};

struct tl_nl *tl_nl_open(void)
{
	struct tl_nl *nl = calloc(1, sizeof(*nl));
	int one = 1;

	if (!nl)
		return NULL;
	nl->sk = mnl_socket_open(NETLINK_ROUTE);
	if (!nl->sk || mnl_socket_bind(nl->sk, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;

		tl_nl_close(nl);
		errno = e;
		return NULL;
	}
	/* Errors need not echo the whole request back. */
	mnl_socket_setsockopt(nl->sk, NETLINK_CAP_ACK, &one, sizeof(one));
	nl->portid = mnl_socket_get_portid(nl->sk);
	nl->seq = (unsigned int)time(NULL);
	return nl;
}

void tl_nl_close(struct tl_nl *nl)
{
	if (!nl)
		return;
	if (nl->sk)
		mnl_socket_close(nl->sk);
	free(nl);
}

uint64_t tl_nl_requests(const struct tl_nl *nl)
{
	return nl->requests;
}

static struct nlmsghdr *tl_nl_msg(struct tl_nl *nl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->buf);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = ++nl->seq;
	return nlh;
}

/* Sends the request and runs cb on each reply until the ack; returns the kernel's
 * verdict as 0 / -errno. */
static int tl_nl_talk(struct tl_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	unsigned int seq = nlh->nlmsg_seq;

	nl->requests++;
	if (mnl_socket_sendto(nl->sk, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->sk, nl->buf, sizeof(nl->buf));
		int rc;

		if (n < 0)
			return -errno;
		errno = 0;
		rc = mnl_cb_run(nl->buf, (size_t)n, seq, nl->portid, cb, data);
		if (rc == MNL_CB_ERROR)
			return errno ? -errno : -EIO;
		if (rc == MNL_CB_STOP)
			return 0;
	}
}

static int tl_nl_attr_cb(const struct nlattr *attr, void *data)
{
	struct tl_nl_attrs *a = data;
	uint16_t type = mnl_attr_get_type(attr);

	if (type <= TL_NL_ATTR_MAX)
		a->tb[type] = attr;
	return MNL_CB_OK;
}

static size_t tl_nl_addr_len(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

/* Copies addr with the bits after prefixlen cleared. */
static void tl_nl_prefix(uint8_t out[16], const uint8_t *addr, size_t alen, uint8_t plen)
{
	memset(out, 0, 16);
	memcpy(out, addr, alen);
	for (size_t bit = plen; bit < alen * 8; bit++)
		out[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
}

static int tl_nl_check_name(const char *ifname)
{
	return ifname && *ifname && strlen(ifname) < IFNAMSIZ ? 0 : -EINVAL;
}

/* ---- links ---- */

static struct ifinfomsg *tl_nl_put_ifinfo(struct nlmsghdr *nlh)
{
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));

	ifm->ifi_family = AF_UNSPEC;
	return ifm;
}

static void tl_nl_put_queues(struct nlmsghdr *nlh, unsigned queues)
{
	if (queues == 0)
		return;
	mnl_attr_put_u32(nlh, IFLA_NUM_TX_QUEUES, queues);
	mnl_attr_put_u32(nlh, IFLA_NUM_RX_QUEUES, queues);
}

int tl_nl_veth_create(struct tl_nl *nl, const char *host_if, const char *peer_if,
		      unsigned queues)
{
	struct nlmsghdr *nlh;
	struct nlattr *info, *data, *peer;

	if (tl_nl_check_name(host_if) || tl_nl_check_name(peer_if))
		return -EINVAL;
	nlh = tl_nl_msg(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	tl_nl_put_ifinfo(nlh);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host_if);
	tl_nl_put_queues(nlh, queues);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	tl_nl_put_ifinfo(nlh);      /* the peer's attributes follow its own ifinfomsg */
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer_if);
	tl_nl_put_queues(nlh, queues);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

int tl_nl_link_delete(struct tl_nl *nl, const char *ifname)
{
	struct nlmsghdr *nlh;

	if (tl_nl_check_name(ifname))
		return -EINVAL;
	nlh = tl_nl_msg(nl, RTM_DELLINK, 0);
	tl_nl_put_ifinfo(nlh);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

static void tl_nl_flag(struct ifinfomsg *ifm, unsigned flag, int want)
{
	if (want < 0)
		return;
	ifm->ifi_change |= flag;
	if (want)
		ifm->ifi_flags |= flag;
}

int tl_nl_link_set(struct tl_nl *nl, const char *ifname, int up, int mtu, int noarp)
{
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifm;

	if (tl_nl_check_name(ifname) || mtu < 0)
		return -EINVAL;
	nlh = tl_nl_msg(nl, RTM_NEWLINK, 0);
	ifm = tl_nl_put_ifinfo(nlh);
	tl_nl_flag(ifm, IFF_UP, up);
	tl_nl_flag(ifm, IFF_NOARP, noarp);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	if (mtu > 0)
		mnl_attr_put_u32(nlh, IFLA_MTU, (uint32_t)mtu);
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

struct tl_nl_link_out {
	int found;
	int ifindex;
	int mtu;
	int has_mac;
	uint8_t mac[6];
};

static int tl_nl_link_cb(const struct nlmsghdr *nlh, void *data)
{
	struct tl_nl_link_out *out = data;
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	struct tl_nl_attrs a = { { 0 } };
	const struct nlattr *mac;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifm), tl_nl_attr_cb, &a);
	out->found = 1;
	out->ifindex = ifm->ifi_index;
	if (a.tb[IFLA_MTU])
		out->mtu = (int)mnl_attr_get_u32(a.tb[IFLA_MTU]);
	mac = a.tb[IFLA_ADDRESS];
	if (mac && mnl_attr_get_payload_len(mac) == 6) {
		memcpy(out->mac, mnl_attr_get_payload(mac), 6);
		out->has_mac = 1;
	}
	return MNL_CB_OK;
}

int tl_nl_link_info(struct tl_nl *nl, const char *ifname, int *ifindex, uint8_t mac[6],
		    int *mtu)
{
	struct tl_nl_link_out out = { 0 };
	struct nlmsghdr *nlh;
	int rc;

	if (tl_nl_check_name(ifname))
		return -EINVAL;
	nlh = tl_nl_msg(nl, RTM_GETLINK, 0);
	tl_nl_put_ifinfo(nlh);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	rc = tl_nl_talk(nl, nlh, tl_nl_link_cb, &out);
	if (rc == 0 && !out.found)
		rc = -ENODEV;
	if (rc < 0)
		return rc;
	if (ifindex)
		*ifindex = out.ifindex;
	if (mtu)
		*mtu = out.mtu;
	if (mac)
		memcpy(mac, out.mac, 6);    /* zero if the link has no Ethernet address */
	return 0;
}

/* ---- addresses and routes ---- */

int tl_nl_addr_add(struct tl_nl *nl, int ifindex, int family, const uint8_t *addr,
		   uint8_t prefixlen)
{
	size_t alen = tl_nl_addr_len(family);
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;

	if (alen == 0 || prefixlen > alen * 8 || ifindex <= 0)
		return -EINVAL;
	nlh = tl_nl_msg(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)family;
	ifa->ifa_prefixlen = prefixlen;
	ifa->ifa_index = (uint32_t)ifindex;
	mnl_attr_put(nlh, IFA_LOCAL, alen, addr);
	mnl_attr_put(nlh, IFA_ADDRESS, alen, addr);
	if (family == AF_INET6) {
		ifa->ifa_flags = IFA_F_NODAD;
		mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
	}
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

/* A device route message for family/dst/prefixlen; NULL on bad arguments. */
static struct nlmsghdr *tl_nl_route_msg(struct tl_nl *nl, uint16_t type, uint16_t flags,
					int ifindex, int family, const uint8_t *dst,
					uint8_t prefixlen)
{
	size_t alen = tl_nl_addr_len(family);
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	uint8_t net[16];

	if (alen == 0 || prefixlen > alen * 8 || ifindex <= 0)
		return NULL;
	nlh = tl_nl_msg(nl, type, flags);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)family;
	rtm->rtm_dst_len = prefixlen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_type = RTN_UNICAST;
	if (type == RTM_DELROUTE)
		rtm->rtm_scope = RT_SCOPE_NOWHERE;          /* match any scope */
	else
		rtm->rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	tl_nl_prefix(net, dst, alen, prefixlen);
	if (prefixlen > 0)
		mnl_attr_put(nlh, RTA_DST, alen, net);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
	return nlh;
}

int tl_nl_route_add(struct tl_nl *nl, int ifindex, int family, const uint8_t *dst,
		    uint8_t prefixlen)
{
	struct nlmsghdr *nlh = tl_nl_route_msg(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL,
					       ifindex, family, dst, prefixlen);
	int rc;

	if (!nlh)
		return -EINVAL;
	rc = tl_nl_talk(nl, nlh, NULL, NULL);
	return rc == -EEXIST ? 0 : rc;
}

int tl_nl_route_del(struct tl_nl *nl, int ifindex, int family, const uint8_t *dst,
		    uint8_t prefixlen)
{
	struct nlmsghdr *nlh = tl_nl_route_msg(nl, RTM_DELROUTE, 0, ifindex, family, dst,
					       prefixlen);

	if (!nlh)
		return -EINVAL;
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

struct tl_nl_route_out {
	int found;
	int oif;
	int has_gw;
	uint8_t gw[16];
	size_t alen;
};

static int tl_nl_route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct tl_nl_route_out *out = data;
	struct tl_nl_attrs a = { { 0 } };
	const struct nlattr *gw;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(struct rtmsg), tl_nl_attr_cb, &a);
	out->found = 1;
	if (a.tb[RTA_OIF])
		out->oif = (int)mnl_attr_get_u32(a.tb[RTA_OIF]);
	gw = a.tb[RTA_GATEWAY];
	if (gw && mnl_attr_get_payload_len(gw) == out->alen) {
		memcpy(out->gw, mnl_attr_get_payload(gw), out->alen);
		out->has_gw = 1;
	}
	return MNL_CB_OK;
}

int tl_nl_route_get(struct tl_nl *nl, int family, const uint8_t *dst, int *oif,
		    int *has_gw, uint8_t gw[16])
{
	struct tl_nl_route_out out = { .alen = tl_nl_addr_len(family) };
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	int rc;

	if (out.alen == 0)
		return -EINVAL;
	nlh = tl_nl_msg(nl, RTM_GETROUTE, 0);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)family;
	rtm->rtm_dst_len = (uint8_t)(out.alen * 8);
	mnl_attr_put(nlh, RTA_DST, out.alen, dst);
	rc = tl_nl_talk(nl, nlh, tl_nl_route_cb, &out);
	if (rc == 0 && !out.found)
		rc = -ENETUNREACH;
	if (rc < 0)
		return rc;
	if (oif)
		*oif = out.oif;
	if (has_gw)
		*has_gw = out.has_gw;
	if (gw)
		memcpy(gw, out.gw, 16);
	return 0;
}

/* ---- neighbours ---- */

#define TL_NL_NUD_USABLE (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | \
			  NUD_PERMANENT | NUD_NOARP)

struct tl_nl_neigh_out {
	int found;
	uint16_t state;
	uint32_t flags_ext;
	int has_mac;
	uint8_t mac[6];
};

static int tl_nl_neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	struct tl_nl_neigh_out *out = data;
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct tl_nl_attrs a = { { 0 } };
	const struct nlattr *ll;

	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ndm), tl_nl_attr_cb, &a);
	out->found = 1;
	out->state = ndm->ndm_state;
	if (a.tb[NDA_FLAGS_EXT])
		out->flags_ext = mnl_attr_get_u32(a.tb[NDA_FLAGS_EXT]);
	ll = a.tb[NDA_LLADDR];
	if (ll && mnl_attr_get_payload_len(ll) == 6) {
		memcpy(out->mac, mnl_attr_get_payload(ll), 6);
		out->has_mac = 1;
	}
	return MNL_CB_OK;
}

static struct nlmsghdr *tl_nl_neigh_msg(struct tl_nl *nl, uint16_t type, uint16_t flags,
					int ifindex, int family, const uint8_t *ip)
{
	size_t alen = tl_nl_addr_len(family);
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;

	if (alen == 0 || ifindex <= 0)
		return NULL;
	nlh = tl_nl_msg(nl, type, flags);
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = (uint8_t)family;
	ndm->ndm_ifindex = ifindex;
	mnl_attr_put(nlh, NDA_DST, alen, ip);
	return nlh;
}

/* Reads the entry for ip on ifindex; -ENOENT if the kernel has none. */
static int tl_nl_neigh_read(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip,
			    struct tl_nl_neigh_out *out)
{
	struct nlmsghdr *nlh = tl_nl_neigh_msg(nl, RTM_GETNEIGH, 0, ifindex, family, ip);
	int rc;

	if (!nlh)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	rc = tl_nl_talk(nl, nlh, tl_nl_neigh_cb, out);
	if (rc == 0 && !out->found)
		rc = -ENOENT;
	return rc;
}

int tl_nl_neigh_get(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip,
		    uint8_t mac[6])
{
	struct tl_nl_neigh_out out;
	int rc = tl_nl_neigh_read(nl, ifindex, family, ip, &out);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (!(out.state & TL_NL_NUD_USABLE) || !out.has_mac)
		return 0;
	memcpy(mac, out.mac, 6);
	return 1;
}

/* A managed entry: the kernel resolves it now and keeps re-probing it, so it stays
 * REACHABLE while the neighbour answers. Existing entries keep their state. */
static int tl_nl_neigh_add_managed(struct tl_nl *nl, int ifindex, int family,
				   const uint8_t *ip)
{
	struct nlmsghdr *nlh = tl_nl_neigh_msg(nl, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE,
					       ifindex, family, ip);

	if (!nlh)
		return -EINVAL;
	((struct ndmsg *)mnl_nlmsg_get_payload(nlh))->ndm_state = NUD_NONE;
	mnl_attr_put_u32(nlh, NDA_FLAGS_EXT, NTF_EXT_MANAGED);
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

/* One-shot resolution (what a transmitted packet would trigger). */
static int tl_nl_neigh_use(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip)
{
	struct nlmsghdr *nlh = tl_nl_neigh_msg(nl, RTM_NEWNEIGH, NLM_F_CREATE, ifindex,
					       family, ip);

	if (!nlh)
		return -EINVAL;
	((struct ndmsg *)mnl_nlmsg_get_payload(nlh))->ndm_flags = NTF_USE;
	return tl_nl_talk(nl, nlh, NULL, NULL);
}

int tl_nl_neigh_resolve(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip)
{
	struct tl_nl_neigh_out out;
	int rc = tl_nl_neigh_add_managed(nl, ifindex, family, ip);

	/* Kernels before 5.16 ignore NDA_FLAGS_EXT: check that it took. */
	if (rc == 0 && tl_nl_neigh_read(nl, ifindex, family, ip, &out) == 0 &&
	    (out.flags_ext & NTF_EXT_MANAGED))
		return 1;
	if (rc < 0 && rc != -EINVAL && rc != -EOPNOTSUPP)
		return rc;
	rc = tl_nl_neigh_use(nl, ifindex, family, ip);
	return rc < 0 ? rc : 0;
}

int tl_nl_neigh_del_managed(struct tl_nl *nl, int ifindex, int family, const uint8_t *ip)
{
	struct tl_nl_neigh_out out;
	struct nlmsghdr *nlh;
	int rc = tl_nl_neigh_read(nl, ifindex, family, ip, &out);

	if (rc < 0)
		return rc;
	if (!(out.flags_ext & NTF_EXT_MANAGED))
		return 0;
	nlh = tl_nl_neigh_msg(nl, RTM_DELNEIGH, 0, ifindex, family, ip);
	return nlh ? tl_nl_talk(nl, nlh, NULL, NULL) : -EINVAL;
}
