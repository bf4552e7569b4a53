/* What sortd-bench's parts share (sortd_bench.c, and device_path.c where CUDA is built). */
#ifndef SORTD_BENCH_H
#define SORTD_BENCH_H

#include <stddef.h>

#define BENCH_RUNS 5

/* Seconds on the monotonic clock. */
double bench_now(void);
/* The median of v[0..n), which it sorts. */
double bench_median(double *v, size_t n);

/*
 * The device path through the sortd listening on sock, which must serve a GPU engine of
 * capacity n or more (device_path.c): prints its table; 0, or -1 after saying what failed.
 */
int bench_device_path(const char *sock, size_t n);

#endif
