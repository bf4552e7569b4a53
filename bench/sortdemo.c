/*
 * The first thing a new user runs: sorts 2^26 random u32 keys with the CPU
 * engine, prints the throughput and checks the result (ordered, and the same
 * multiset of keys as the input).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "datagen.h"
#include "engine.h"

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Order-independent fingerprint of a multiset: a sum of mixed elements. */
static uint64_t multiset_hash(const uint32_t *k, size_t n)
{
        uint64_t h = 0;

        for (size_t i = 0; i < n; i++) {
                uint64_t z = k[i] + 0x9e3779b97f4a7c15ull;

                z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
                z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
                h += z ^ (z >> 31);
        }
        return h;
}

int main(int argc, char **argv)
{
        size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)1 << 26;
        sortd_engine_config cfg = {.capacity = n};
        sortd_sort_desc desc = {.key_type = SORTD_KEY_U32};
        sortd_engine *e;
        char why[256];
        uint32_t *keys;
        sortd_status s;

        if (n == 0) {
                fprintf(stderr, "sortdemo: n must be positive\n");
                return 2;
        }
        s = sortd_engine_create("cpu", &cfg, &e, why, sizeof(why));
        if (s != SORTD_OK) {
                fprintf(stderr, "sortdemo: cannot create the CPU engine: %s\n", why);
                return 1;
        }
        keys = malloc(n * sizeof(*keys));
        if (!keys) {
                fprintf(stderr, "sortdemo: cannot allocate %zu keys\n", n);
                sortd_engine_destroy(e);
                return 1;
        }
        datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 42);
        uint64_t before = multiset_hash(keys, n);

        double t0 = now();
        s = sortd_engine_sort(e, &desc, keys, NULL, n);
        double secs = now() - t0;

        if (s != SORTD_OK) {
                fprintf(stderr, "sortdemo: sort failed: %s\n", sortd_engine_error(e));
                free(keys);
                sortd_engine_destroy(e);
                return 1;
        }
        size_t disorder = 0;

        for (size_t i = 1; i < n; i++)
                disorder += keys[i - 1] > keys[i];
        int ok = disorder == 0 && multiset_hash(keys, n) == before;

        printf("sorted %zu random u32 keys on %s in %.1f ms: %.1f Mkeys/s\n", n,
               sortd_engine_device(e), secs * 1e3, (double)n / secs / 1e6);
        printf("verification: %s (%zu out-of-order pairs, multiset %s)\n", ok ? "OK" : "FAILED",
               disorder, multiset_hash(keys, n) == before ? "preserved" : "CHANGED");
        free(keys);
        sortd_engine_destroy(e);
        return ok ? 0 : 1;
}
