/* Crypto jobs (see crypt.h): jobs of the queue owners, run by any worker, handed back to
 * their owner in submission order. A leaf: it knows no direction's finish. */
#include <stdio.h>

#include <rte_malloc.h>

#include "dataplane/crypt.h"
#include "dataplane/packet.h"

static struct rte_ring *jobs_ring(unsigned id, const char *what, int dir)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "w%u_%s%d", id, what, dir);
	return rte_ring_create(name, TL_JOBS_PER_OWNER, (int)rte_socket_id(),
			       RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
}

int tl_crypt_owner_init(struct tl_worker *w)
{
	for (int d = 0; d < TL_DIR_MAX; d++) {
		w->jobs[d] = rte_zmalloc("tl_jobs", sizeof(struct tl_crypt_job) * TL_JOBS_PER_OWNER, RTE_CACHE_LINE_SIZE);
		w->jobs_free[d] = jobs_ring(w->id, "jf", d);
		w->jobs_order[d] = jobs_ring(w->id, "jo", d);
		if (!w->jobs[d] || !w->jobs_free[d] || !w->jobs_order[d])
			return -1;
		for (unsigned i = 0; i < TL_JOBS_PER_OWNER; i++) {
			w->jobs[d][i].owner = w;
			w->jobs[d][i].dir = (uint8_t)d;
			rte_ring_sp_enqueue(w->jobs_free[d], &w->jobs[d][i]);
		}
	}
	return 0;
}

static void job_wipe(struct tl_crypt_job *j)
{
	tl_wipe(j->keys, sizeof(j->keys[0]) * j->n_keys);
	j->n_keys = 0;
}

void tl_crypt_owner_fini(struct tl_worker *w)
{
	for (int d = 0; d < TL_DIR_MAX; d++) {
		struct tl_crypt_job *j;

		if (w->job_open[d]) {
			rte_ring_sp_enqueue(w->jobs_order[d], w->job_open[d]);
			w->job_open[d] = NULL;
		}
		while (w->jobs_order[d] && rte_ring_sc_dequeue(w->jobs_order[d], (void **)&j) == 0) {
			for (unsigned i = j->next; i < j->n; i++)
				rte_pktmbuf_free(j->m[i]);
			w->cnt.inflight[d] -= j->n - j->next;
			j->n = j->next = 0;
		}
		if (w->jobs[d])
			for (unsigned i = 0; i < TL_JOBS_PER_OWNER; i++)
				tl_wipe(w->jobs[d][i].keys, sizeof(w->jobs[d][i].keys));
		rte_free(w->jobs[d]);
		rte_ring_free(w->jobs_free[d]);
		rte_ring_free(w->jobs_order[d]);
		w->jobs[d] = NULL;
		w->jobs_free[d] = w->jobs_order[d] = NULL;
	}
}

struct tl_crypt_job *tl_crypt_open(struct tl_worker *w, int dir)
{
	struct tl_crypt_job *j = w->job_open[dir];

	if (j)
		return j;
	if (rte_ring_count(w->jobs_order[dir]) >= tl_crypt_inflight_max(w->dp) ||
	    rte_ring_sc_dequeue(w->jobs_free[dir], (void **)&j) != 0) {
		w->cnt.crypto_full[dir]++;
		return NULL;
	}
	j->n = j->next = j->n_keys = 0;
	j->checked = false;
	j->key_gen = atomic_load_explicit(&w->dp->key_gen, memory_order_acquire);
	atomic_store_explicit(&j->done, false, memory_order_relaxed);
	w->job_open[dir] = j;
	return j;
}

struct tl_crypt_pkt *tl_crypt_add(struct tl_crypt_job *j, struct rte_mbuf *m, const void *src,
			    const uint8_t key[TL_KEY_LEN], uint64_t counter, uint16_t off, uint16_t len)
{
	struct tl_crypt_pkt *p = &j->p[j->n];

	if (!j->n_keys || j->key_src[j->n_keys - 1] != src) {
		memcpy(j->keys[j->n_keys], key, TL_KEY_LEN);
		j->key_src[j->n_keys++] = src;
	}
	p->key = (uint8_t)(j->n_keys - 1);
	p->counter = counter;
	p->off = off;
	p->len = len;
	p->ok = p->v6_csum = p->moved = false;
	j->m[j->n++] = m;
	return p;
}

/* A job is waiting: wake a worker blocked in poll(), if any. */
static void kick_one(struct tl_dp *dp)
{
	for (unsigned i = 0; i < dp->n_workers; i++) {
		struct tl_worker *o = dp->worker[i];

		if (o && atomic_load_explicit(&o->blocked, memory_order_relaxed)) {
			tl_worker_kick(o);
			return;
		}
	}
}

static unsigned job_run(struct tl_worker *w, struct tl_crypt_job *j);

bool tl_crypt_submit(struct tl_worker *w, int dir)
{
	struct tl_crypt_job *j = w->job_open[dir];

	if (!j || !j->n)
		return false;
	w->job_open[dir] = NULL;
	w->cnt.inflight[dir] += j->n;
	/* Neither can fail: the FIFO holds all of the owner's jobs, the shared ring all jobs. */
	rte_ring_sp_enqueue(w->jobs_order[dir], j);
	if (w->dp->n_workers == 1) {
		/* Nobody else could take it: done now, as if there were no crypto jobs. */
		job_run(w, j);
		return true;
	}
	rte_ring_mp_enqueue(w->dp->crypto_ring, j);
	atomic_thread_fence(memory_order_seq_cst);   /* pairs with the fence in idle_block() */
	if (atomic_load_explicit(&w->dp->n_blocked, memory_order_relaxed))
		kick_one(w->dp);
	return true;
}

/* The lines packet i of j's AEAD reads, asked into the cache: a NIC (or the copy of a socket
 * port) wrote the message and its tag long before, and the one-pass path also reads the 64
 * bytes before the message (a line of the headroom nobody wrote lately, on decap) and the
 * rest of its last 64-byte block; the AEAD's first pass over them (the one ChaCha20 call)
 * would otherwise wait for each line in turn. */
static void job_prefetch(const struct tl_crypt_job *j, unsigned i)
{
	const struct tl_crypt_pkt *p = &j->p[i];
	uintptr_t buf = rte_pktmbuf_mtod_offset(j->m[i], uintptr_t, p->off);
	uintptr_t end = buf + RTE_ALIGN_CEIL((uintptr_t)p->len, 64) + TL_AEAD_TAG_LEN;

	for (uintptr_t a = RTE_ALIGN_FLOOR(buf - 64, RTE_CACHE_LINE_SIZE); a < end; a += RTE_CACHE_LINE_SIZE)
		rte_prefetch0((const void *)a);
}

/* Its packets: once done is released the job is its owner's again, which may recycle and
 * refill it at once, so nothing of it is read after. Each packet's bytes are prefetched
 * while the one before is sealed or opened. */
static unsigned job_run(struct tl_worker *w, struct tl_crypt_job *j)
{
	unsigned n = j->n;

	if (n)
		job_prefetch(j, 0);
	for (unsigned i = 0; i < n; i++) {
		struct tl_crypt_pkt *p = &j->p[i];
		uint8_t *buf = rte_pktmbuf_mtod_offset(j->m[i], uint8_t *, p->off);
		size_t head, tail;

		if (i + 1 < n)
			job_prefetch(j, i + 1);

		tl_pkt_room(j->m[i], buf, p->len, &head, &tail);
		if (j->dir == TL_DIR_ENCAP) {
			p->ok = tl_dp_aead_seal(w->aead, j->keys[p->key], p->counter, buf, p->len, buf + p->len,
						head, tail) == 0;
			if (p->ok && p->v6_csum)
				tl_pkt_outer_csum(j->m[i]);
		} else {
			p->ok = tl_dp_aead_open(w->aead, j->keys[p->key], p->counter, buf, p->len, buf + p->len,
						head, tail) == 0;
		}
	}
	/* A keypair retired since the job was made: its key must not stay in the context. */
	if (j->key_gen != atomic_load_explicit(&w->dp->key_gen, memory_order_acquire))
		tl_dp_aead_forget(w->aead);
	w->cnt.crypto_jobs++;
	w->cnt.crypto_pkts += n;
	atomic_store_explicit(&j->done, true, memory_order_release);
	return n;
}

unsigned tl_crypt_work(struct tl_worker *w, unsigned max)
{
	unsigned pkts = 0;
	struct tl_crypt_job *j;

	while (max-- && rte_ring_mc_dequeue(w->dp->crypto_ring, (void **)&j) == 0)
		pkts += job_run(w, j);
	return pkts;
}

struct tl_crypt_job *tl_crypt_done_head(struct tl_worker *w, int dir)
{
	struct rte_ring *order = w->jobs_order[dir];
	struct tl_crypt_job *j;
	bool done;

	if (rte_ring_dequeue_bulk_start(order, (void **)&j, 1, NULL) != 1)
		return NULL;
	done = atomic_load_explicit(&j->done, memory_order_acquire);
	rte_ring_dequeue_finish(order, 0);
	return done ? j : NULL;
}

void tl_crypt_release(struct tl_worker *w, struct tl_crypt_job *j)
{
	struct tl_crypt_job *head;

	rte_ring_sc_dequeue(w->jobs_order[j->dir], (void **)&head);   /* j: the done head */
	job_wipe(j);
	rte_ring_sp_enqueue(w->jobs_free[j->dir], j);
}

bool tl_crypt_busy(const struct tl_worker *w)
{
	for (int d = 0; d < TL_DIR_MAX; d++)
		if (w->jobs_order[d] && !rte_ring_empty(w->jobs_order[d]))
			return true;
	return false;
}
