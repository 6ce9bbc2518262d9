/* What the socket port kinds (udpport.c, afpacket.c) share: counters that a queue's worker
 * writes and the control plane reads, and buffers taken from a pool a batch at a time while
 * a message read from the kernel is cut into frames. */
#ifndef TL_DATAPLANE_SOCKPORT_H
#define TL_DATAPLANE_SOCKPORT_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include "dataplane/dp.h"

/* Closes fd, whose set-up failed: -errno of that failure. */
static inline int tl_sp_fail(int fd)
{
	int e = errno;

	close(fd);
	return -e;
}

/* Gives fd its buffer sizes (0: the kernel's) and binds it to a: fd, or -errno (fd closed). */
static inline int tl_sp_bind(int fd, const struct sockaddr *a, socklen_t len, int rcvbuf, int sndbuf)
{
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	if (sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	return bind(fd, a, len) < 0 ? tl_sp_fail(fd) : fd;
}

static inline void tl_sp_cnt_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

static inline uint64_t tl_sp_cnt_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Bytes a frame may have in a buffer of pool mp. */
static inline uint32_t tl_sp_room(struct rte_mempool *mp)
{
	return (uint32_t)(rte_pktmbuf_data_room_size(mp) - RTE_PKTMBUF_HEADROOM);
}

/* A frame (or message) read from the kernel that the port lets go of: counted in the port's
 * ierrors and, with the counters of the worker that reads the queue (c; NULL: none), as
 * received on port role and dropped there under why (conservation: rx = ... + drops). */
static inline void tl_sp_rx_drop(uint64_t *ierrors, struct tl_counters *c, int role, enum tl_drop why)
{
	tl_sp_cnt_add(ierrors, 1);
	if (!c)
		return;
	c->rx[role]++;
	c->rx_drops[role]++;
	c->drops[why]++;
}

#define TL_SP_BATCH 32

struct tl_sp_bufs {
	struct rte_mbuf *m[TL_SP_BATCH];
	unsigned have, used;
};

/* The next buffer, taking up to `want` (at most TL_SP_BATCH) from mp when the batch is used
 * up; NULL when the pool has none. */
static inline struct rte_mbuf *tl_sp_buf(struct tl_sp_bufs *b, struct rte_mempool *mp, unsigned want)
{
	if (b->used == b->have) {
		b->have = RTE_MIN(want, (unsigned)TL_SP_BATCH);
		b->used = 0;
		if (!b->have || rte_pktmbuf_alloc_bulk(mp, b->m, b->have) != 0) {
			b->have = 0;
			return NULL;
		}
	}
	return b->m[b->used++];
}

/* Gives back the buffers of the batch not taken. */
static inline void tl_sp_bufs_end(struct tl_sp_bufs *b)
{
	if (b->used < b->have)
		rte_pktmbuf_free_bulk(b->m + b->used, b->have - b->used);
	b->have = b->used = 0;
}

#endif
