/* The parallel for (parfor.h). A run is a generation: the caller publishes fn, arg and n under
 * the lock, opens the run, bumps the generation and wakes the helpers; everybody takes the next
 * index with an atomic add until none is left. The caller then closes the run (a helper waking
 * later does not join it) and waits until every helper that joined has left, so none is still
 * working on the run, or could take an index of the next one, when it returns. */
#include "common/parfor.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

struct tl_parfor {
	pthread_mutex_t lock;
	pthread_cond_t work;       /* helpers wait here for a new generation */
	pthread_cond_t done;       /* the caller waits here for the helpers to leave */
	unsigned long gen;
	unsigned busy;             /* helpers inside the current generation */
	bool stop;
	bool open;                 /* helpers may join the current generation */
	tl_parfor_fn fn;
	void *arg;
	size_t n;
	atomic_size_t next;
	unsigned n_threads;
	pthread_t *threads;
};

static void take_indices(struct tl_parfor *p, tl_parfor_fn fn, void *arg, size_t n)
{
	size_t i;

	while ((i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed)) < n)
		fn(arg, i);
}

static void *helper(void *arg)
{
	struct tl_parfor *p = arg;
	unsigned long seen = 0;
	tl_parfor_fn fn;
	void *fn_arg;
	size_t n;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		seen = p->gen;
		if (!p->open)
			continue;
		fn = p->fn;
		fn_arg = p->arg;
		n = p->n;
		p->busy++;
		pthread_mutex_unlock(&p->lock);
		take_indices(p, fn, fn_arg, n);
		pthread_mutex_lock(&p->lock);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct tl_parfor *tl_parfor_new(unsigned helpers, const cpu_set_t *cpus)
{
	struct tl_parfor *p = calloc(1, sizeof(*p));
	pthread_attr_t attr;

	if (!p || pthread_attr_init(&attr) != 0) {
		free(p);
		return NULL;
	}
	if (cpus && CPU_COUNT(cpus) > 0)
		pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus);
	p->threads = calloc(helpers ? helpers : 1, sizeof(*p->threads));
	if (!p->threads) {
		pthread_attr_destroy(&attr);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	atomic_init(&p->next, 0);
	while (p->n_threads < helpers && pthread_create(&p->threads[p->n_threads], &attr, helper, p) == 0)
		p->n_threads++;
	pthread_attr_destroy(&attr);
	return p;
}

void tl_parfor_free(struct tl_parfor *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

unsigned tl_parfor_helpers(const struct tl_parfor *p)
{
	return p ? p->n_threads : 0;
}

void tl_parfor_run(struct tl_parfor *p, size_t n, tl_parfor_fn fn, void *arg)
{
	if (!p || !p->n_threads || n < 2) {
		for (size_t i = 0; i < n; i++)
			fn(arg, i);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->arg = arg;
	p->n = n;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	p->open = true;
	p->gen++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	take_indices(p, fn, arg, n);
	/* Those inside may still run their last fn; the lock orders their writes before our return. */
	pthread_mutex_lock(&p->lock);
	p->open = false;
	while (p->busy)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
