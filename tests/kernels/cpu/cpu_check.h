/*
 * The CPU engine's test cases (cpu_check.c): a case is a sort descriptor, a distribution, n and
 * a seed; its input comes from datagen, its answer from the reference sort, and the engine's
 * output is compared byte for byte, in buffers with guard bytes around them.
 */
#ifndef SORTD_TESTS_CPU_CHECK_H
#define SORTD_TESTS_CPU_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/onesweep.h"
#include "datagen.h"
#include "engine.h"

#define TILE ((size_t)SORTD__CPU_TILE_KEYS)
#define BIG ((size_t)1 << 22)

/* Guard bytes around every engine buffer; under ASan the allocation is exact instead, so that
   the sanitizer sees reads past the end too. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SORTD_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(SORTD_TEST_ASAN)
#define GUARD 0
#define SORTD_TEST_ONE_VARIANT 1
#else
#define GUARD 64
#define SORTD_TEST_ONE_VARIANT 0
#endif
#define GUARD_BYTE 0xcd
#define ARGSORT_FILL 0xa5 /* 0xa5a5a5a5 is no index of any test's n */

struct dist {
        datagen_dist dist;
        unsigned param;
};

struct sort_case {
        sortd_sort_desc desc;
        struct dist dist;
        size_t n;
        uint64_t seed;
        unsigned threads; /* of the engine, for messages */
};

/* Counts of one test, checked at its end. */
struct tally {
        size_t cases;
        size_t moved; /* cases where the sort changed the keys or the values */
};

/* A buffer with guard bytes on both sides. */
struct guarded {
        unsigned char *mem;
        void *p;
        size_t bytes;
};

/* The input of a case: keys from datagen, values random, argsort outputs prefilled. */
struct input {
        void *keys, *vals;
        size_t kb, vb;
};

extern const struct dist all_dists[];
extern const size_t n_dists;
#define N_DISTS n_dists

/* SORTD_TEST_SEED=<number> changes every case's data (default: fixed). */
void cpu_check_seed_from_env(void);
/* splitmix64's finaliser: seeds of cases from their parameters. */
uint64_t mix(uint64_t z);
uint64_t case_seed(uint64_t a, uint64_t b, uint64_t c);
bool is_argsort(sortd_payload p);
/* Names the case for failure messages: type, payload, order, bits, distribution, n, seed. */
const char *describe(const struct sort_case *c, char *buf, size_t len);
sortd_engine *engine_new(size_t capacity, unsigned threads);
void guarded_alloc(struct guarded *g, size_t bytes);
/* Fails if the engine wrote outside g; frees it. */
void guarded_check_free(struct guarded *g, const char *what, const char *name);
/* Fails with the first index where got differs from want. */
void expect_same(const char *name, const char *what, const void *got, const void *want, size_t n,
                 size_t elem);
/* Element i of an array of elem-byte elements, widened (little-endian: the low bytes). */
uint64_t elem_at(const void *base, size_t i, size_t elem);
void input_make(const struct sort_case *c, struct input *in);
void input_free(struct input *in);
/* The reference's answer, in fresh buffers. */
void reference_sort(const struct sort_case *c, const struct input *in, void **keys, void **vals);
/* Sorts a copy of the input with e, then another as shared keys (sortd_engine_sort_shared), and
   checks each result against want_keys and want_vals. */
void engine_check(sortd_engine *e, const struct sort_case *c, const struct input *in,
                  const void *want_keys, const void *want_vals);
/* One case: the engine's output against the reference's, counted in t. */
void check_case(sortd_engine *e, struct sort_case *c, struct tally *t);
struct sort_case make_case(sortd_key_type t, sortd_payload p, sortd_order o, struct dist d,
                           size_t n);
/*
 * Whether a matrix's cell (a payload, order, size... numbered by the test) takes variant v of
 * count (a distribution, a payload): every one in the release build, one per cell in turn under
 * ASan, where a sort costs several times as much. What ASan finds follows sizes, widths and
 * paths, which every cell keeps; every variant still comes round many times a key type; the
 * release build sorts them all.
 */
bool variant_taken(size_t v, size_t count, size_t cell);
/* How many of count variants variant_taken() gives one cell. */
size_t variants_per_cell(size_t count);
/* Every case ran, and most of them had something to sort. */
void expect_tally(const struct tally *t, size_t cases);

#endif
