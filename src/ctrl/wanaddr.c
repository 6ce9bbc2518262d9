/* Every address of the WAN interface is ours, as for a kernel socket bound to the port:
 * the control plane mirrors the interface's addresses (IPv4, and IPv6 but link-local, which
 * needs a scope the endpoints do not carry; tentative and DAD-failed IPv6 addresses only once
 * they are usable) from rtnetlink address notifications (kernel/rtmon.h, RTM_NEWADDR and
 * RTM_DELADDR, subscribed before the first dump so that nothing is missed; an overrun dumps
 * again) and publishes each change to the workers as a new struct tl_addrset (dp.h), sorted
 * for their lookups. The workers read it without a lock (tl_pkt_wan_local in packet.c); the
 * old set is freed after an RCU grace period. On an AF_XDP WAN port the same addresses go into
 * the WAN XDP program's address maps (kernel/xdp.h), which steers UDP to the listen port only
 * when its destination is one of them: UDP to another host's port that this gateway forwards
 * stays with the kernel. An address leaves the maps before the workers' set, and enters them
 * after it, so that nothing is steered to the workers that they would not take. A datagram
 * to an address not (yet) in the maps passes to the kernel, whose socket on the listen port
 * (udpsock.c) hands it to the slow path. An interface without any address at start is fine:
 * its datagrams and peers wait for one (not_for_us on a pmd port, no_endpoint meanwhile). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ctrl/device.h"
#include "ctrl/log.h"
#include "ctrl/ports.h"
#include "ctrl/wanaddr.h"
#include "kernel/rtmon.h"
#include "kernel/xdp.h"

#define TL_WA_RCVBUF (1 << 20)
#define TL_WA_READS_PER_POLL 64
#define TL_WA_MAX 4096              /* addresses kept per interface; more are not followed */

struct wa_addr {
	uint8_t family;
	uint8_t ip[16];
};

struct tl_wanaddr_ctl {
	struct tl_rtmon *mon;
	struct tl_evitem ev_item;
	int ifindex;
	struct wa_addr *a;                /* in the order the kernel listed them */
	unsigned n;
	bool dirty, resync, full_told, xdp_told;
	uint64_t dumps;                   /* dump requests sent */
	struct tl_xdp_addrmaps xdp;       /* the WAN XDP program's address maps (-1: none) */
};

/* ---- the mirror ----------------------------------------------------------------------------- */

static int find(const struct tl_wanaddr_ctl *c, uint8_t family, const uint8_t *ip)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->a[i].family == family && !memcmp(c->a[i].ip, ip, 16))
			return (int)i;
	return -1;
}

static void addr_event(void *ctx, const struct tl_rt_addr *r)
{
	struct tl_wanaddr_ctl *c = ((struct tl_device *)ctx)->wanaddr;
	int at;

	if (r->ifindex != c->ifindex || (r->family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)r->ip)))
		return;
	at = find(c, r->family, r->ip);
	if (r->usable && at < 0) {
		if (c->n == TL_WA_MAX) {
			if (!c->full_told)
				tl_log_err("wan: more than %u addresses: the others are not followed", TL_WA_MAX);
			c->full_told = true;
			return;
		}
		c->a[c->n].family = r->family;
		memcpy(c->a[c->n++].ip, r->ip, 16);
		c->dirty = true;
	} else if (!r->usable && at >= 0) {
		memmove(&c->a[at], &c->a[at + 1], (c->n - (unsigned)at - 1) * sizeof(c->a[0]));
		c->n--;
		c->dirty = true;
	}
}

static const struct tl_rtmon_ops addr_ops = { .addr = addr_event };

/* ---- the published set ---------------------------------------------------------------------- */

static int cmp4(const void *a, const void *b)
{
	return memcmp(a, b, 4);
}

static int cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

/* One allocation: the header, then the IPv4 and the IPv6 addresses. */
static struct tl_addrset *set_build(const struct tl_wanaddr_ctl *c)
{
	uint32_t n4 = 0, n6 = 0;
	struct tl_addrset *s;

	for (unsigned i = 0; i < c->n; i++) {
		if (c->a[i].family == AF_INET)
			n4++;
		else
			n6++;
	}
	s = calloc(1, sizeof(*s) + (size_t)n4 * 4 + (size_t)n6 * 16);
	if (!s)
		return NULL;
	s->a6 = (uint8_t (*)[16])(void *)(s + 1);
	s->a4 = (uint8_t (*)[4])(void *)((uint8_t *)(s + 1) + (size_t)n6 * 16);
	for (unsigned i = 0; i < c->n; i++) {
		if (c->a[i].family == AF_INET) {
			if (!s->n4)
				memcpy(s->first4, c->a[i].ip, 4);
			memcpy(s->a4[s->n4++], c->a[i].ip, 4);
		} else {
			if (!s->n6)
				memcpy(s->first6, c->a[i].ip, 16);
			memcpy(s->a6[s->n6++], c->a[i].ip, 16);
		}
	}
	qsort(s->a4, s->n4, 4, cmp4);
	qsort(s->a6, s->n6, 16, cmp16);
	return s;
}

static void log_set(const struct tl_device *dev, const struct tl_wanaddr_ctl *c)
{
	char line[512] = "", one[INET6_ADDRSTRLEN];
	size_t at = 0;

	for (unsigned i = 0; i < c->n && at < sizeof(line) - 1; i++) {
		inet_ntop(c->a[i].family, c->a[i].ip, one, sizeof(one));
		at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s", i ? " " : "", one);
	}
	if (!c->ifindex)
		return;
	if (c->n)
		tl_log_info("wan: %s has %u address(es): %s", tl_port_iface(dev, TL_PORT_WAN), c->n, line);
	else
		tl_log_info("wan: %s has no address: peers cannot reach us or be reached until it has one",
			    tl_port_iface(dev, TL_PORT_WAN));
}

/* The WAN XDP program's maps to s (what: TL_XDP_ADDRS_*); an error is told once. */
static void steer_set(struct tl_wanaddr_ctl *c, const struct tl_addrset *s, unsigned what)
{
	int r;

	if (c->xdp.fd4 < 0)
		return;
	r = tl_xdp_addrmaps_set(&c->xdp, (const uint8_t (*)[4])s->a4, s->n4, (const uint8_t (*)[16])s->a6, s->n6,
				what);
	if (r != 0 && !c->xdp_told)
		tl_log_err("wan: the XDP steering's address maps: %s (datagrams to an address missing there "
			   "reach tunless through the kernel's socket)", strerror(-r));
	c->xdp_told |= r != 0;
}

/* The new set in, the old one out after the workers' grace period; the XDP steering drops
 * the addresses that went before, takes the new ones after. */
static int publish(struct tl_device *dev)
{
	struct tl_wanaddr_ctl *c = dev->wanaddr;
	struct tl_addrset *s = set_build(c);
	const struct tl_addrset *old;

	if (!s)
		return -ENOMEM;
	steer_set(c, s, TL_XDP_ADDRS_PRUNE);
	old = atomic_exchange_explicit(&dev->dp.port[TL_PORT_WAN].addrs, s, memory_order_acq_rel);
	if (old) {
		rte_rcu_qsbr_synchronize(dev->dp.qsbr, RTE_QSBR_THRID_INVALID);
		free((void *)(uintptr_t)old);
	}
	steer_set(c, s, TL_XDP_ADDRS_ADD);
	c->dirty = false;
	log_set(dev, c);
	return 0;
}

/* ---- notifications -------------------------------------------------------------------------- */

static int dump_all(struct tl_device *dev)
{
	dev->wanaddr->n = 0;
	dev->wanaddr->dirty = true;
	return tl_rtmon_dump(dev->wanaddr->mon, &dev->wanaddr->dumps);
}

unsigned tl_wanaddr_poll(struct tl_device *dev)
{
	struct tl_wanaddr_ctl *c = dev->wanaddr;
	bool overrun = false;
	unsigned n;

	if (!c || !c->mon)
		return 0;
	n = tl_rtmon_read(c->mon, TL_WA_READS_PER_POLL, &overrun);
	if (overrun)
		c->resync = true;         /* notifications were lost: read them all again */
	if (c->resync) {
		c->resync = false;
		if (dump_all(dev) != 0)
			c->resync = true;
	}
	if (c->dirty && !c->resync && publish(dev) != 0)
		tl_log_err("wan: out of memory publishing the addresses (the last set stays)");
	return n;
}

static void wanaddr_event(void *arg, uint32_t events)
{
	(void)events;
	tl_wanaddr_poll(arg);
}

/* ---- setup ---------------------------------------------------------------------------------- */

/* Subscribed first, then the dump, then the first set. 0 or -errno. */
static int follow(struct tl_device *dev, struct tl_wanaddr_ctl *c)
{
	int rc;

	c->mon = tl_rtmon_open(&addr_ops, dev, TL_WA_RCVBUF);
	rc = c->mon ? 0 : -errno;
	if (!rc && dev->loop &&
	    tl_evloop_add(dev->loop, &c->ev_item, tl_rtmon_fd(c->mon), EPOLLIN, wanaddr_event, dev) != 0)
		rc = -errno;
	if (!rc)
		rc = dump_all(dev);
	return rc ? rc : publish(dev);
}

int tl_wanaddr_open(struct tl_device *dev, char *err, size_t errlen)
{
	struct tl_wanaddr_ctl *c = calloc(1, sizeof(*c));
	const char *iface = tl_port_iface(dev, TL_PORT_WAN);
	int rc;

	dev->wanaddr = c;
	if (!c || !(c->a = calloc(TL_WA_MAX, sizeof(c->a[0])))) {
		snprintf(err, errlen, "wan addresses: out of memory");
		return -1;
	}
	c->ev_item.fd = -1;
	c->xdp.fd4 = c->xdp.fd6 = -1;
	c->ifindex = iface && iface[0] ? (int)if_nametoindex(iface) : 0;
	/* An AF_XDP WAN port (the PMD attached our program at port setup): its address maps. */
	if (dev->ports[TL_PORT_WAN].af_xdp &&
	    tl_xdp_addrmaps_open(dev->ports[TL_PORT_WAN].ifindex, &c->xdp, err, errlen) != 0)
		return -1;
	if (!c->ifindex) {                /* a pmd port that names no kernel interface */
		tl_log_info("wan: no kernel interface named '%s': no address to follow", iface ? iface : "");
		rc = publish(dev);
	} else {
		rc = follow(dev, c);
	}
	if (rc) {
		snprintf(err, errlen, "wan addresses of %s (rtnetlink): %s", iface ? iface : "", strerror(-rc));
		return -1;
	}
	return 0;
}

void tl_wanaddr_close(struct tl_device *dev)
{
	struct tl_wanaddr_ctl *c = dev->wanaddr;

	if (!c)
		return;
	if (dev->loop && c->ev_item.fd >= 0)
		tl_evloop_del(dev->loop, &c->ev_item);
	tl_rtmon_close(c->mon);
	tl_xdp_addrmaps_close(&c->xdp);
	free((void *)(uintptr_t)atomic_exchange(&dev->dp.port[TL_PORT_WAN].addrs, NULL));
	free(c->a);
	free(c);
	dev->wanaddr = NULL;
}
