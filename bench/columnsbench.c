/*
 * columnsbench: an argsort of two u32 key columns (ORDER BY a, b) on the cpu engine, by the
 * packed path (one 64-bit composite, one sort) and by the chained path (a sort per column,
 * carrying the permutation), each configuration's repeats alternated so that both see the
 * same machine.
 *
 *   columnsbench [--n N] [--threads T] [--repeats R]
 *
 * N rows (default 2^24), T engine threads (default: the online CPUs), medians of R runs
 * (default 5). The two paths' permutations are compared after the runs; a difference exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datagen.h"
#include "clock.h"
#include "engine.h"

#define MAX_RUNS 99

static int parse(int argc, char **argv, size_t *n, unsigned *threads, unsigned *repeats)
{
        for (int i = 1; i < argc; i++) {
                char *end = NULL;
                unsigned long long v;

                if (i + 1 >= argc)
                        return -1;
                v = strtoull(argv[i + 1], &end, 10);
                if (!end || *end || v == 0)
                        return -1;
                if (strcmp(argv[i], "--n") == 0 && v <= UINT32_MAX)
                        *n = (size_t)v;
                else if (strcmp(argv[i], "--threads") == 0 && v <= 1024)
                        *threads = (unsigned)v;
                else if (strcmp(argv[i], "--repeats") == 0 && v <= MAX_RUNS)
                        *repeats = (unsigned)v;
                else
                        return -1;
                i++;
        }
        return 0;
}

int main(int argc, char **argv)
{
        static const sortd_column cols[2] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                             {SORTD_KEY_U32, SORTD_ASCENDING, 0, 0}};
        static const char *const names[2] = {"packed", "chained"};
        size_t n = (size_t)1 << 24;
        unsigned threads = 0, repeats = 5;
        double t[2][MAX_RUNS];
        sortd_engine *e = NULL;
        char why[256];

        if (parse(argc, argv, &n, &threads, &repeats) != 0) {
                fprintf(stderr, "usage: columnsbench [--n N] [--threads T] [--repeats R<=%d]\n",
                        MAX_RUNS);
                return 2;
        }
        sortd_engine_config cfg = {.capacity = n, .threads = threads};
        uint32_t *a = malloc(n * 4), *b = malloc(n * 4), *perm[2] = {malloc(n * 4), malloc(n * 4)};

        if (!a || !b || !perm[0] || !perm[1] ||
            sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) != SORTD_OK) {
                fprintf(stderr, "columnsbench: %s\n", e ? why : "out of memory or no engine");
                return 1;
        }
        /* a column of few values, so the second decides often */
        datagen_fill(a, n, SORTD_KEY_U32, DATAGEN_FEW, 1000, 1);
        datagen_fill(b, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 2);
        for (unsigned r = 0; r < repeats; r++)
                for (int p = 0; p < 2; p++) {
                        void *const keys[2] = {a, b};
                        double t0 = bench_now();

                        if (sortd_engine_sort_columns(
                                    e, cols, 2, SORTD_PAYLOAD_ARGSORT32,
                                    p ? SORTD_COLUMNS_CHAINED : SORTD_COLUMNS_PACKED,
                                    SORTD_MEMORY_HOST, keys, perm[p], n) != SORTD_OK) {
                                fprintf(stderr, "columnsbench: %s\n", sortd_engine_error(e));
                                return 1;
                        }
                        t[p][r] = bench_now() - t0;
                }
        printf("argsort of 2 u32 columns, n = %zu, %s, median of %u\n", n, sortd_engine_device(e),
               repeats);
        for (int p = 0; p < 2; p++) {
                double s = bench_median(t[p], repeats);

                printf("  %-8s %9.3f ms  %8.1f Mrows/s\n", names[p], s * 1e3, n / s / 1e6);
        }
        if (memcmp(perm[0], perm[1], n * 4) != 0) {
                fprintf(stderr, "columnsbench: the packed and chained permutations differ\n");
                return 1;
        }
        sortd_engine_destroy(e);
        free(a);
        free(b);
        free(perm[0]);
        free(perm[1]);
        return 0;
}
