/* What XDP an interface's driver offers, from the kernel's "netdev" generic netlink family
 * (Linux 6.3 and later; older kernels do not say, and are taken to offer no zero-copy). */
#include "kernel/xdp_features.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* include/uapi/linux/netdev.h (not in every distribution's headers yet) */
#define TL_NETDEV_FAMILY "netdev"
#define TL_NETDEV_CMD_DEV_GET 1
#define TL_NETDEV_A_DEV_IFINDEX 1
#define TL_NETDEV_A_DEV_XDP_FEATURES 3

struct reply {
	uint16_t type;        /* the attribute wanted */
	int width;            /* 2 or 8 bytes */
	uint64_t value;
	bool found;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	struct reply *r = data;

	if (mnl_attr_get_type(a) != r->type)
		return MNL_CB_OK;
	if (r->width == 2 && mnl_attr_validate(a, MNL_TYPE_U16) == 0)
		r->value = mnl_attr_get_u16(a), r->found = true;
	else if (r->width == 8 && mnl_attr_validate(a, MNL_TYPE_U64) == 0)
		r->value = mnl_attr_get_u64(a), r->found = true;
	return MNL_CB_OK;
}

static int msg_cb(const struct nlmsghdr *n, void *data)
{
	return mnl_attr_parse(n, sizeof(struct genlmsghdr), attr_cb, data);
}

/* One request on sk, its reply's attribute r->type into r. 0 or -errno. */
static int request(struct mnl_socket *sk, char *buf, size_t cap, struct nlmsghdr *n, struct reply *r)
{
	unsigned int portid = mnl_socket_get_portid(sk), seq = n->nlmsg_seq;
	ssize_t len;
	int ret;

	if (mnl_socket_sendto(sk, n, n->nlmsg_len) < 0)
		return -errno;
	do {
		len = mnl_socket_recvfrom(sk, buf, cap);
		if (len < 0)
			return -errno;
		ret = mnl_cb_run(buf, (size_t)len, seq, portid, msg_cb, r);
	} while (ret > 0);
	return ret < 0 ? -errno : 0;
}

static struct nlmsghdr *header(char *buf, uint16_t type, uint8_t cmd, unsigned seq)
{
	struct nlmsghdr *n = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	n->nlmsg_type = type;
	n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;   /* the ack ends the reply */
	n->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(n, sizeof(*g));
	g->cmd = cmd;
	g->version = 1;
	return n;
}

int tl_xdp_features(const char *iface, uint64_t *features)
{
	char *buf = malloc(MNL_SOCKET_BUFFER_SIZE);
	struct mnl_socket *sk = mnl_socket_open(NETLINK_GENERIC);
	struct reply fam = { .type = CTRL_ATTR_FAMILY_ID, .width = 2 };
	struct reply feat = { .type = TL_NETDEV_A_DEV_XDP_FEATURES, .width = 8 };
	unsigned seq = (unsigned)time(NULL);
	unsigned ifindex = if_nametoindex(iface);
	struct nlmsghdr *n;
	int r = -ENODEV;

	if (!buf || !sk || mnl_socket_bind(sk, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (!ifindex)
		goto out;
	n = header(buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, seq);
	mnl_attr_put_strz(n, CTRL_ATTR_FAMILY_NAME, TL_NETDEV_FAMILY);
	r = request(sk, buf, MNL_SOCKET_BUFFER_SIZE, n, &fam);
	if (r != 0 || !fam.found) {
		r = -EOPNOTSUPP;    /* no netdev family: a kernel before 6.3 */
		goto out;
	}
	n = header(buf, (uint16_t)fam.value, TL_NETDEV_CMD_DEV_GET, seq + 1);
	mnl_attr_put_u32(n, TL_NETDEV_A_DEV_IFINDEX, ifindex);
	r = request(sk, buf, MNL_SOCKET_BUFFER_SIZE, n, &feat);
	if (r == 0 && !feat.found)
		r = -EOPNOTSUPP;
	if (r == 0)
		*features = feat.value;
out:
	if (sk)
		mnl_socket_close(sk);
	free(buf);
	return r;
}

bool tl_xdp_zero_copy(const char *iface)
{
	uint64_t f = 0;

	return tl_xdp_features(iface, &f) == 0 && (f & TL_XDP_ACT_XSK_ZEROCOPY);
}
