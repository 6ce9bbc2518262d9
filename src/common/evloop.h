/* An epoll set whose ready file descriptors call their handlers: the control lcore's one
 * event loop (src/daemon/loop.c) and the request servers (src/api/server.c) register with it.
 * Level-triggered. Single thread. */
#ifndef TL_COMMON_EVLOOP_H
#define TL_COMMON_EVLOOP_H

#include <stdint.h>

typedef void (*tl_ev_fn)(void *arg, uint32_t events);

/* One registered fd; lives in its owner's struct (the loop keeps a pointer to it). An item
 * removed by a handler (its fd is then -1) is skipped for the rest of the batch being
 * dispatched. */
struct tl_evitem {
	int fd;                /* -1: not registered */
	tl_ev_fn fn;
	void *arg;
};

struct tl_evloop {
	int epfd;              /* -1: none */
};

/* 0, or -1 (errno). */
int tl_evloop_open(struct tl_evloop *l);
void tl_evloop_close(struct tl_evloop *l);
/* Watches fd for events (EPOLLIN, EPOLLOUT, ...): fn(arg, events) when ready. 0, or -1. */
int tl_evloop_add(struct tl_evloop *l, struct tl_evitem *it, int fd, uint32_t events, tl_ev_fn fn, void *arg);
/* Changes the events watched (0: none for now). 0, or -1. */
int tl_evloop_mod(struct tl_evloop *l, struct tl_evitem *it, uint32_t events);
/* Stops watching; it->fd becomes -1 (the fd is not closed). Safe on an item not added. */
void tl_evloop_del(struct tl_evloop *l, struct tl_evitem *it);
/* Waits up to timeout_ms (-1: no limit, 0: not at all) and calls the handlers of what is
 * ready. The number of handlers called, or -1 (EINTR: a signal). */
int tl_evloop_run(struct tl_evloop *l, int timeout_ms);

#endif
