/*
 * copybench: the GPU engines' staging copy on its own, on the host's CPUs only. A staged
 * transfer copies the caller's pageable memory through a ring of pinned slots (kernels/cuda/
 * staging.h): up, the whole array into the slots chunk by chunk; down, the slots back out into
 * the array. This times exactly that copy (sortd__pool_copy, split over 1, 2, 4 ... threads),
 * with streaming stores and with memcpy, the two copies an engine may take each way, each
 * configuration's repeats alternated so that both see the same machine. The slots here are
 * ordinary memory: the DMA that would read or fill them is left out, and with it its share of
 * the memory bandwidth.
 *
 *   copybench [--mib N] [--threads T] [--repeats R]
 *   copybench --engines
 *
 * N MiB of array (default 1024), at most T threads (default: the online CPUs), medians of R runs
 * (default 5). Every copy is checked after it is timed; a wrong byte exits 1. After the table, a
 * line says which copy was faster in each direction at the largest thread count, and one which
 * copy the engines use (kernels/cuda/staging_copy.h, as this binary was built); --engines prints
 * only the latter.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cpu/copy.h"
#include "cpu/pool.h"
#include "cuda/staging_copy.h"

/* The CUDA engines' staging (kernels/cuda/cuda_backend.cuh): 4 slots of 8 MiB, shares of
   512 KiB at least. */
#define SLOTS 4u
#define SLOT_BYTES ((size_t)8 << 20)
#define SHARE_MIN ((size_t)512 << 10)
#define MAX_RUNS 99
#define MAX_THREADS 256u

struct ring {
        unsigned char *array, *slots;
        size_t bytes;
};

static size_t chunk_len(const struct ring *r, size_t off)
{
        return r->bytes - off < SLOT_BYTES ? r->bytes - off : SLOT_BYTES;
}

/* Words no earlier run wrote at any offset: a byte a copy misses still holds an old one. */
static void seed(unsigned char *p, size_t bytes, unsigned run)
{
        uint64_t *w = (uint64_t *)p;

        for (size_t i = 0; i < bytes / 8; i++)
                w[i] = (i + 1) * 0x9e3779b97f4a7c15u ^ run * 0xd6e8feb86659fd93u;
}

/* One staged transfer's host copies, in the engines' order; GB/s, or 0 when a byte came out
   wrong. The source is seeded first, so that each run copies fresh bytes. */
static double transfer(const struct ring *r, sortd__pool *pool, bool up, bool stream, unsigned run)
{
        double t0, t;

        if (up)
                seed(r->array, r->bytes, run);
        else
                for (unsigned s = 0; s < SLOTS; s++)
                        seed(r->slots + s * SLOT_BYTES, SLOT_BYTES, run * SLOTS + s);
        t0 = bench_now();
        for (size_t off = 0, k = 0; off < r->bytes; off += SLOT_BYTES, k++) {
                unsigned char *slot = r->slots + k % SLOTS * SLOT_BYTES;

                sortd__pool_copy(pool, up ? slot : r->array + off, up ? r->array + off : slot,
                                 chunk_len(r, off), SHARE_MIN, stream);
        }
        t = bench_now() - t0;
        /* Up, the slots hold the last chunks; down, chunk k of the array is slot k's copy. */
        for (size_t off = 0, k = 0; off < r->bytes; off += SLOT_BYTES, k++) {
                const unsigned char *slot = r->slots + k % SLOTS * SLOT_BYTES;

                if ((!up || off + SLOTS * SLOT_BYTES >= r->bytes) &&
                    memcmp(slot, r->array + off, chunk_len(r, off)) != 0)
                        return 0;
        }
        return (double)r->bytes / t / 1e9;
}

/* One row: a direction at a thread count, both copies, with streamed's rate over memcpy's in
   ratio; 0, or -1 after saying what failed. */
static int row(const struct ring *r, unsigned threads, bool up, unsigned repeats, double *ratio)
{
        double rate[2][MAX_RUNS];
        sortd__pool *pool;
        int rc = sortd__pool_create(threads, &pool);

        if (rc != 0) {
                fprintf(stderr, "copybench: cannot start %u threads: %s\n", threads, strerror(-rc));
                return -1;
        }
        for (unsigned i = 0; i < repeats; i++)
                for (unsigned stream = 0; stream < 2; stream++) {
                        rate[stream][i] = transfer(r, pool, up, stream, i * 2 + stream + 1);
                        if (rate[stream][i] == 0) {
                                fprintf(stderr,
                                        "copybench: %s copy %s with %u threads: wrong bytes\n",
                                        stream ? "streamed" : "memcpy", up ? "up" : "down",
                                        threads);
                                sortd__pool_destroy(pool);
                                return -1;
                        }
                }
        sortd__pool_destroy(pool);
        double plain = bench_median(rate[0], repeats), streamed = bench_median(rate[1], repeats);

        *ratio = streamed / plain;
        printf("%-4s %7u %12.2f %12.2f %7.2fx\n", up ? "up" : "down", threads, plain, streamed,
               *ratio);
        return 0;
}

static const char *kind(bool stream)
{
        return stream ? "streamed" : "memcpy";
}

/* The faster copy each way at the largest thread count (ratio: streamed over memcpy). */
static void print_decision(const double ratio[2])
{
        printf("decision: up %s (%.2fx memcpy), down %s (%.2fx)\n", kind(ratio[0] > 1), ratio[0],
               kind(ratio[1] > 1), ratio[1]);
}

static void print_engines(void)
{
        printf("engines: up %s, down %s (kernels/cuda/staging_copy.h)\n", kind(SORTD_STREAM_UP),
               kind(SORTD_STREAM_DOWN));
}

/* A positive count of at most max from s, or 0. */
static unsigned long count_of(const char *s, unsigned long max)
{
        char *end;
        unsigned long v = strtoul(s, &end, 10);

        return *s >= '0' && *s <= '9' && *end == '\0' && v >= 1 && v <= max ? v : 0;
}

int main(int argc, char **argv)
{
        unsigned long mib = 1024, threads = sortd__online_cpus(), repeats = 5;
        struct ring r;
        double ratio[2] = {0, 0};
        int status = 0;

        if (argc == 2 && strcmp(argv[1], "--engines") == 0) {
                print_engines();
                return 0;
        }
        for (int i = 1; i < argc; i++) {
                unsigned long *opt = strcmp(argv[i], "--mib") == 0       ? &mib
                                     : strcmp(argv[i], "--threads") == 0 ? &threads
                                     : strcmp(argv[i], "--repeats") == 0 ? &repeats
                                                                         : NULL;
                unsigned long max = opt == &mib       ? 1ul << 20
                                    : opt == &threads ? MAX_THREADS
                                                      : MAX_RUNS;

                if (!opt || i + 1 == argc || (*opt = count_of(argv[++i], max)) == 0) {
                        fprintf(stderr,
                                "usage: copybench [--mib 1..%lu] [--threads 1..%u] "
                                "[--repeats 1..%u]\n       copybench --engines\n",
                                1ul << 20, MAX_THREADS, MAX_RUNS);
                        return 2;
                }
        }
        r.bytes = (size_t)mib << 20;
        r.array = aligned_alloc(4096, r.bytes);
        r.slots = aligned_alloc(4096, SLOTS * SLOT_BYTES);
        if (!r.array || !r.slots) {
                fprintf(stderr, "copybench: no memory for %lu MiB and the slots\n", mib);
                free(r.array);
                free(r.slots);
                return 1;
        }
        memset(r.array, 0, r.bytes); /* faulted in: a caller's array has been written */
        memset(r.slots, 0, SLOTS * SLOT_BYTES);
        printf("staging copy, %lu MiB through %u slots of %zu MiB, medians of %lu (GB/s)\n", mib,
               SLOTS, SLOT_BYTES >> 20, repeats);
        printf("%-4s %7s %12s %12s %8s\n", "dir", "threads", "memcpy", "streamed", "ratio");
        for (int dir = 0; dir < 2 && status == 0; dir++)
                for (unsigned long t = 1; status == 0; t *= 2) {
                        unsigned long n = t < threads ? t : threads;

                        status = row(&r, (unsigned)n, dir == 0, (unsigned)repeats, &ratio[dir]);
                        if (n == threads)
                                break;
                }
        if (status == 0) {
                print_decision(ratio);
                print_engines();
        }
        free(r.array);
        free(r.slots);
        return status ? 1 : 0;
}
