/* A parallel for: fn(arg, i) for every i below n, shared out between the calling thread and a
 * fixed set of helper threads started once. The helpers sleep on a condition variable between
 * runs (no polling), so an idle pool costs nothing. One caller at a time. */
#ifndef TL_PARFOR_H
#define TL_PARFOR_H

#include <sched.h>
#include <stddef.h>

struct tl_parfor;

typedef void (*tl_parfor_fn)(void *arg, size_t i);

/* A pool of `helpers` threads (0: the caller does everything) that may run on cpus (NULL or
 * empty: where the caller may; a caller pinned to one CPU, as EAL pins its main lcore by
 * default, would keep them all there). NULL if out of memory; fewer helpers than asked if
 * some thread cannot start (tl_parfor_helpers says how many). */
struct tl_parfor *tl_parfor_new(unsigned helpers, const cpu_set_t *cpus);
void tl_parfor_free(struct tl_parfor *p);
unsigned tl_parfor_helpers(const struct tl_parfor *p);

/* Runs fn for i = 0..n-1, each exactly once, on any of the threads; returns when all are
 * done (what fn wrote is then visible to the caller). p may be NULL: all on the caller. */
void tl_parfor_run(struct tl_parfor *p, size_t n, tl_parfor_fn fn, void *arg);


#endif
