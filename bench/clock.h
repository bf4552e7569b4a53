/* The clock and the medians every C benchmark reports (clock.c). */
#ifndef SORTD_BENCH_CLOCK_H
#define SORTD_BENCH_CLOCK_H

#include <stddef.h>

/* Seconds on the monotonic clock. */
double bench_now(void);
/* Sorts v[0..n) ascending. */
void bench_sort_doubles(double *v, size_t n);
/* The median of v[0..n), which it sorts: the mean of the middle two when n is even. */
double bench_median(double *v, size_t n);

#endif
