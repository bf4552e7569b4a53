/* The clock and the medians every C benchmark reports (clock.h). */
#include <stdlib.h>
#include <time.h>

#include "clock.h"

double bench_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

void bench_sort_doubles(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
}

double bench_median(double *v, size_t n)
{
        bench_sort_doubles(v, n);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
