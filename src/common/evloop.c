/* The epoll set (evloop.h). */
#include "common/evloop.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#define TL_EV_BATCH 64

int tl_evloop_open(struct tl_evloop *l)
{
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	return l->epfd < 0 ? -1 : 0;
}

void tl_evloop_close(struct tl_evloop *l)
{
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = -1;
}

int tl_evloop_add(struct tl_evloop *l, struct tl_evitem *it, int fd, uint32_t events, tl_ev_fn fn, void *arg)
{
	struct epoll_event ev = { .events = events, .data.ptr = it };

	it->fn = fn;
	it->arg = arg;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		it->fd = -1;
		return -1;
	}
	it->fd = fd;
	return 0;
}

int tl_evloop_mod(struct tl_evloop *l, struct tl_evitem *it, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = it };

	return it->fd < 0 ? -1 : epoll_ctl(l->epfd, EPOLL_CTL_MOD, it->fd, &ev);
}

void tl_evloop_del(struct tl_evloop *l, struct tl_evitem *it)
{
	if (it->fd >= 0 && l->epfd >= 0)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, it->fd, NULL);
	it->fd = -1;
}

int tl_evloop_run(struct tl_evloop *l, int timeout_ms)
{
	struct epoll_event ev[TL_EV_BATCH];
	int n = epoll_wait(l->epfd, ev, TL_EV_BATCH, timeout_ms), done = 0;

	for (int i = 0; i < n; i++) {
		struct tl_evitem *it = ev[i].data.ptr;

		if (it->fd < 0)
			continue;        /* removed by an earlier handler of this batch */
		it->fn(it->arg, ev[i].events);
		done++;
	}
	return n < 0 ? -1 : done;
}
