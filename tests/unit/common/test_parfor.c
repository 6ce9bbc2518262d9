/* The parallel for against a plain loop: every index exactly once, whatever the number of
 * helpers and of indices; nothing runs after tl_parfor_run returned (a run's arguments die
 * with it), over many short runs in a row; helpers run on the CPUs given, not on the one
 * their creator is pinned to; an idle pool's helpers sleep. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/parfor.h"

static atomic_uint late;     /* fn calls on a run that had returned */

struct run {
	atomic_uint *hits;
	uint64_t *value;
	atomic_bool returned;
};

static void visit(void *arg, size_t i)
{
	struct run *r = arg;

	if (atomic_load(&r->returned))
		atomic_fetch_add(&late, 1);
	atomic_fetch_add(&r->hits[i], 1);
	r->value[i] = (uint64_t)i * i + 7;
}

/* Runs n indices; returns the indices not visited exactly once or not computed as the
 * plain loop computes them. */
static size_t run_and_compare(struct tl_parfor *p, size_t n)
{
	struct run r = { .hits = calloc(n ? n : 1, sizeof(*r.hits)), .value = calloc(n ? n : 1, sizeof(uint64_t)) };
	size_t wrong = 0;

	atomic_init(&r.returned, false);
	tl_parfor_run(p, n, visit, &r);
	atomic_store(&r.returned, true);
	for (size_t i = 0; i < n; i++)
		wrong += atomic_load(&r.hits[i]) != 1 || r.value[i] != (uint64_t)i * i + 7;
	free(r.hits);
	free(r.value);
	return wrong;
}

static void test_every_index_once(void)
{
	static const unsigned helpers[] = { 0, 1, 3, 8 };
	static const size_t sizes[] = { 0, 1, 2, 3, 31, 1000, 100000 };

	for (size_t h = 0; h < sizeof(helpers) / sizeof(helpers[0]); h++) {
		struct tl_parfor *p = tl_parfor_new(helpers[h], NULL);

		CHECK(p != NULL && tl_parfor_helpers(p) == helpers[h], "a pool of %u helpers", helpers[h]);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t wrong = run_and_compare(p, sizes[s]);

			CHECK(wrong == 0, "%u helpers, %zu indices: %zu wrong", helpers[h], sizes[s], wrong);
		}
		tl_parfor_free(p);
	}
	CHECK(run_and_compare(NULL, 50) == 0, "no pool: the caller does it all");
}

/* Short runs one after another: a helper that wakes after a run returned must not join it. */
static void test_back_to_back(void)
{
	struct tl_parfor *p = tl_parfor_new(3, NULL);
	size_t wrong = 0;

	for (int k = 0; k < 20000; k++)
		wrong += run_and_compare(p, 2 + (size_t)(k % 5));
	CHECK(wrong == 0, "20000 short runs: %zu indices wrong", wrong);
	CHECK(atomic_load(&late) == 0, "no call after a run returned (%u)", atomic_load(&late));
	tl_parfor_free(p);
}

/* Threads of this process other than the caller that are not asleep (state S in
 * /proc/self/task/<tid>/stat); -1 if that cannot be read. */
static int helpers_awake(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int awake = 0;
	pid_t self = (pid_t)syscall(SYS_gettid);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], line[256], *paren;
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;                 /* gone meanwhile */
		paren = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		awake += !paren || paren[1] != ' ' || paren[2] != 'S';
	}
	closedir(d);
	return awake;
}

/* Context switches of this process's threads other than the caller, summed (voluntary and
 * not, from /proc/self/task/<tid>/status); -1 if they cannot be read. */
static long helpers_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long sum = 0;
	pid_t self = (pid_t)syscall(SYS_gettid);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			long v;

			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
				sum += v;
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* Four helpers left idle wait on their condition variable (state S), they do not poll: each
 * is asleep once it has gone back to waiting (looked at for up to 10 s), and, asleep, nothing
 * wakes them: no helper is switched in or out while the caller waits 200 ms (a helper that
 * polls with a sleep is in state S most of the time too, but wakes at every poll). */
static void test_idle_helpers_sleep(void)
{
	struct tl_parfor *p = tl_parfor_new(4, NULL);
	struct timespec pause = { 0, 10000000 };
	int awake = -1;
	long before, after;

	CHECK(run_and_compare(p, 100) == 0, "a run before the pause");
	for (int i = 0; i < 1000 && awake != 0; i++) {
		nanosleep(&pause, NULL);
		awake = helpers_awake();
	}
	CHECK(awake == 0, "every idle helper asleep (%d not)", awake);
	before = helpers_switches();
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	after = helpers_switches();
	CHECK(before >= 0 && after == before, "no idle helper woke while the caller waited (%ld switches)",
	      after - before);
	tl_parfor_free(p);
}

/* Two indices that wait for each other: one on the caller, one on the helper. Each records
 * how many CPUs its thread may use. */
struct meet {
	atomic_uint arrived;
	int cpus[2];
	bool timed_out;
};

static void meet(void *arg, size_t i)
{
	struct meet *m = arg;
	cpu_set_t set;
	time_t until = time(NULL) + 10;

	CPU_ZERO(&set);
	pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
	m->cpus[i] = CPU_COUNT(&set);
	atomic_fetch_add(&m->arrived, 1);
	while (atomic_load(&m->arrived) < 2 && time(NULL) < until)
		sched_yield();
	if (atomic_load(&m->arrived) < 2)
		m->timed_out = true;
}

static void test_helpers_on_cpus_given(void)
{
	cpu_set_t all, one;
	struct tl_parfor *p;
	struct meet m = { .cpus = { 0, 0 } };
	int first = -1;

	CHECK(sched_getaffinity(0, sizeof(all), &all) == 0, "our CPUs");
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	CHECK(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0, "the caller pinned to CPU %d", first);
	p = tl_parfor_new(1, &all);
	atomic_init(&m.arrived, 0);
	tl_parfor_run(p, 2, meet, &m);
	CHECK(!m.timed_out, "the two indices ran at once");
	CHECK(m.cpus[0] + m.cpus[1] == 1 + CPU_COUNT(&all), "caller on 1 CPU, helper on all %d (got %d and %d)",
	      CPU_COUNT(&all), m.cpus[0], m.cpus[1]);
	tl_parfor_free(p);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}

int main(void)
{
	test_every_index_once();
	test_back_to_back();
	test_idle_helpers_sleep();
	test_helpers_on_cpus_given();
	return check_report();
}
