/*
 * bench's data: keys generated in a few cheap distributions, and the check of every result
 * (in order, and a permutation of the input).
 */
#ifndef SORTCTL_BENCH_DATA_H
#define SORTCTL_BENCH_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

typedef enum bench_dist {
        BENCH_UNIFORM,  /* every bit random */
        BENCH_SORTED,   /* ascending, spread over the key's range */
        BENCH_REVERSED, /* descending, the same */
        BENCH_FEW,      /* 16 distinct random keys */
        BENCH_DIST_COUNT
} bench_dist;

int bench_dist_parse(const char *name); /* -1 if unknown */
/* The key types bench generates and checks, those of up to 64 bits: -1 for others. */
int bench_type_parse(const char *name);
const char *bench_dist_name(bench_dist d);

/* n keys of type t in distribution d from seed. */
void bench_generate(uint8_t *keys, size_t n, sortd_key_type t, bench_dist d, uint64_t seed);

/*
 * NULL when out (n keys, and vals: n values or indices of vs bytes, or NULL) is input sorted
 * in order, stably; else what is wrong, with the index in *at. vals must have been 0..n-1
 * before a values sort, as argsort writes them. Without a payload the keys are compared with
 * the input's as multisets by hash (two 64-bit sums of mixed keys): a lost or duplicated key
 * goes unnoticed with a chance of about 2^-64.
 */
const char *bench_verify(const uint8_t *input, const uint8_t *out, const uint8_t *vals, size_t vs,
                         size_t n, sortd_key_type t, sortd_order order, size_t *at);

#endif
