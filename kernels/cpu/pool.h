/*
 * A fixed set of worker threads owned by one engine. pool_run() runs a job on
 * every thread (the caller takes part as thread 0) and returns when all are
 * done: a fork-join with no allocation per run.
 */
#ifndef SORTD_CPU_POOL_H
#define SORTD_CPU_POOL_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sortd__pool sortd__pool;
typedef void (*sortd__pool_fn)(void *arg, unsigned tid, unsigned nthreads);

/* Returns 0 or a negative errno; *out untouched on failure. */
int sortd__pool_create(unsigned nthreads, sortd__pool **out);
/* Runs fn on the first nthreads threads (1 <= nthreads <= pool size). */
void sortd__pool_run(sortd__pool *p, unsigned nthreads, sortd__pool_fn fn, void *arg);
unsigned sortd__pool_size(const sortd__pool *p);
/* Accepts NULL; joins every worker. */
void sortd__pool_destroy(sortd__pool *p);
/* The CPUs online now, at least 1: the default size of a pool. */
unsigned sortd__online_cpus(void);

#ifdef __cplusplus
}
#endif

#endif
