/*
 * The CPU engine against the reference sort (tests/support/reference.c): every key type x payload x
 * order over the sizes around a tile, primes, random sizes, every data distribution, bit ranges,
 * stability, thread counts, and every error path.
 *
 * Every comparison is of keys and vals byte for byte. Argsort outputs are prefilled with a
 * pattern that is no valid permutation, and each test counts the cases that really moved data,
 * so a harness that sorted nothing would fail.
 *
 * SORTD_TEST_SEED=<number> changes the data (default: fixed). A failure message names the case
 * (type, payload, order, bit range, distribution, n, seed, threads) and the first differing index.
 * CK_RUN_CASE=matrix|buckets|network|epoch|stability|bit-ranges|threads|shared runs one part
 * (meson runs each as its own test). The error paths are test_cpu_errors.c's.
 *
 * The reference's merge sort takes most of the time, so the sizes above 2^20 are kept to
 * matrix_random_sizes and thread_counts; under ASan the matrices take fewer cases
 * (variant_taken() in cpu_check.h).
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/lookback.h"
#include "cpu/network.h"
#include "cpu/small.h"
#include "cpu_check.h"
#include "reference.h"
#include "suite.h"

/* ---- the matrix ---------------------------------------------------------------------------- */

/*
 * The largest sizes are left out for two kinds of keys: 16-byte keys go through the
 * engine-neutral columns layer (kernels/columns), whose gathers run on one thread, so those
 * sizes cost minutes and test nothing the smaller ones do not; 16-bit floats run the u16 keys'
 * code with the float key map, and test_engine_halves sorts every one of their patterns.
 */
static bool lean(int t)
{
        return sortd_key_size((sortd_key_type)t) == 16 || t == SORTD_KEY_F16 || t == SORTD_KEY_BF16;
}

/* Around the powers of two, around one tile, and a prime. */
static const size_t small_sizes[] = {0,   1,   2,    3,        4,    5,        7,   8,
                                     15,  16,  17,   31,       32,   33,       100, 255,
                                     256, 257, 1000, TILE - 1, TILE, TILE + 1, 7919};
#define N_SMALL (sizeof(small_sizes) / sizeof(small_sizes[0]))

/* Every payload x order x distribution x small size, for key type _i. */
START_TEST(matrix_small_sizes)
{
        sortd_engine *e = engine_new(TILE + 1, 0);
        struct tally t = {0, 0};

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                        for (size_t s = 0; s < N_SMALL; s++)
                                for (size_t d = 0; d < N_DISTS; d++) {
                                        size_t cell = (size_t)_i + (p * 2 + o) * N_SMALL + s;

                                        if (!variant_taken(d, N_DISTS, cell))
                                                continue;
                                        struct sort_case c =
                                                make_case(_i, p, o, all_dists[d], small_sizes[s]);
                                        check_case(e, &c, &t);
                                }
        expect_tally(&t, SORTD_PAYLOAD_COUNT * SORTD_ORDER_COUNT * variants_per_cell(N_DISTS) *
                                 N_SMALL);
        sortd_engine_destroy(e);
}
END_TEST

/* Primes: 65537 with every distribution, 1000003 with one distribution per payload x order. */
START_TEST(matrix_primes)
{
        sortd_engine *e = engine_new(1000003, 0);
        struct tally t = {0, 0};
        size_t k = (size_t)_i;

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        for (size_t d = 0; d < N_DISTS; d++) {
                                if (!variant_taken(d, N_DISTS, (size_t)_i + p * 2 + o))
                                        continue;
                                struct sort_case c = make_case(_i, p, o, all_dists[d], 65537);
                                check_case(e, &c, &t);
                        }
                        if (lean(_i))
                                continue;
                        struct sort_case c = make_case(_i, p, o, all_dists[k++ % N_DISTS], 1000003);
                        check_case(e, &c, &t);
                }
        expect_tally(&t, SORTD_PAYLOAD_COUNT * SORTD_ORDER_COUNT *
                                 (variants_per_cell(N_DISTS) + !lean(_i)));
        sortd_engine_destroy(e);
}
END_TEST

/*
 * Random sizes: six up to 2^20 over the whole matrix, two in [2^21, 2^22] for key type _i. Under
 * ASan the two large ones are left out: they would be most of this test's time there, the
 * release build sorts them, and thread_counts sorts a million keys and more under ASan too.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(SORTD_TEST_ASAN)
#define RANDOM_SIZES 6
#else
#define RANDOM_SIZES 8
#endif

START_TEST(matrix_random_sizes)
{
        sortd_engine *e = engine_new(BIG, 0);
        struct tally t = {0, 0};
        uint64_t r = case_seed(_i, 0x517e5, 0);

        const int sizes = lean(_i) ? 6 : RANDOM_SIZES;

        for (int i = 0; i < sizes; i++) {
                size_t n;

                r = mix(r);
                if (i < 6)
                        n = 2 + (size_t)(r % ((size_t)1 << (1 + (r >> 32) % 20)));
                else
                        n = BIG / 2 + (size_t)((r >> 8) % (BIG / 2 + 1));
                struct sort_case c =
                        make_case(_i, (sortd_payload)((r >> 40) % SORTD_PAYLOAD_COUNT),
                                  (sortd_order)((r >> 48) & 1), all_dists[(r >> 52) % N_DISTS], n);
                check_case(e, &c, &t);
        }
        expect_tally(&t, (size_t)sizes);
        sortd_engine_destroy(e);
}
END_TEST

/* ---- stability ----------------------------------------------------------------------------- */

/*
 * Stability seen without the reference: with the full key width, keys tie exactly when their bits
 * are equal (totalOrder tells -0 from +0 and NaN payloads apart), and within every run of equal
 * keys the input positions must increase.
 */
static void expect_stable_runs(const char *name, const void *keys, const void *pos, size_t n,
                               size_t kb, size_t pb, size_t *ties)
{
        for (size_t i = 0; i + 1 < n; i++) {
                if (memcmp((const char *)keys + i * kb, (const char *)keys + (i + 1) * kb, kb))
                        continue;
                (*ties)++;
                if (elem_at(pos, i, pb) >= elem_at(pos, i + 1, pb))
                        ck_abort_msg("%s: equal keys at %zu and %zu out of input order (%" PRIu64
                                     " then %" PRIu64 ")",
                                     name, i, i + 1, elem_at(pos, i, pb), elem_at(pos, i + 1, pb));
        }
}

/* Many equal keys; argsort and values that are the input positions, both orders. */
START_TEST(stability)
{
        static const struct dist dists[] = {
                {DATAGEN_EQUAL, 0}, {DATAGEN_FEW, 3}, {DATAGEN_FEW, 16}, {DATAGEN_ENTROPY, 16}};
        static const size_t sizes[] = {TILE * 3 + 5, 100003};
        sortd_engine *e = engine_new(sizes[0] > sizes[1] ? sizes[0] : sizes[1], 0);
        size_t cases = 0, ties = 0;

        for (int p = SORTD_PAYLOAD_VALUES32; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                        for (size_t d = 0; d < 4; d++)
                                for (size_t s = 0; s < 2 - (size_t)lean(_i); s++) {
                                        if (!variant_taken(d, 4, (size_t)(p * 2 + o) + s))
                                                continue;
                                        struct sort_case c =
                                                make_case(_i, p, o, dists[d], sizes[s]);
                                        struct input in;
                                        void *want_keys, *want_vals;
                                        char name[256];

                                        input_make(&c, &in);
                                        if (!is_argsort(c.desc.payload)) /* values = positions */
                                                for (size_t i = 0; i < c.n; i++)
                                                        memcpy((char *)in.vals + i * in.vb, &i,
                                                               in.vb);
                                        reference_sort(&c, &in, &want_keys, &want_vals);
                                        describe(&c, name, sizeof(name));
                                        expect_stable_runs(name, want_keys, want_vals, c.n, in.kb,
                                                           in.vb, &ties);
                                        engine_check(e, &c, &in, want_keys, want_vals);
                                        free(want_keys);
                                        free(want_vals);
                                        input_free(&in);
                                        cases++;
                                }
        ck_assert_uint_eq(cases, 4 * 2 * variants_per_cell(4) * (2 - (size_t)lean(_i)));
        ck_assert_uint_gt(ties, cases * 1000); /* the data really had ties */
        sortd_engine_destroy(e);
}
END_TEST

/* ---- bit ranges ---------------------------------------------------------------------------- */

/* Windows [begin, end) for a w-bit key; the invalid ones for small w are skipped. */
static size_t bit_windows(unsigned w, unsigned (*out)[2], size_t max)
{
        const int cand[][2] = {
                {0, 1},               /* the lowest bit */
                {(int)w - 1, (int)w}, /* the top bit: the sign of the image */
                {(int)w / 2, (int)w / 2 + 1},
                {0, (int)w}, /* full width, spelled out */
                {0, 0},      /* full width, as end = 0 */
                {1, (int)w},
                {0, (int)w - 1},
                {(int)w - 8, (int)w}, /* the top byte */
                {3, (int)w - 2},
                {(int)w / 2 - 3, (int)w / 2 + 2},
                {0, 5},
                {5, (int)w},
                {(int)w - 11, (int)w},
                {(int)w - 13, (int)w - 2},
        };
        size_t k = 0;

        for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]) && k < max; i++) {
                int b = cand[i][0], e = cand[i][1];

                if (b < 0 || e > (int)w || (e != 0 && b >= e))
                        continue;
                out[k][0] = (unsigned)b;
                out[k][1] = (unsigned)e;
                k++;
        }
        return k;
}

START_TEST(bit_ranges)
{
        static const struct dist dists[] = {
                {DATAGEN_UNIFORM, 0}, {DATAGEN_SPECIAL, 0}, {DATAGEN_FEW, 16}};
        static const sortd_payload payloads[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_ARGSORT32,
                                                 SORTD_PAYLOAD_VALUES64};
        static const size_t sizes[] = {7919, TILE + 1};
        unsigned win[16][2];
        size_t nwin = bit_windows(8 * (unsigned)sortd_key_size(_i), win, 16);
        sortd_engine *e = engine_new(TILE + 1, 0);
        struct tally t = {0, 0};

        ck_assert_uint_ge(nwin, 8);
        for (size_t w = 0; w < nwin; w++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                        for (size_t p = 0; p < 3; p++)
                                for (size_t d = 0; d < 3; d++)
                                        for (size_t s = 0; s < 2 - (size_t)lean(_i); s++) {
                                                if (!variant_taken(d, 3,
                                                                   ((w * 2 + o) * 3 + p) * 2 + s))
                                                        continue;
                                                struct sort_case c = make_case(_i, payloads[p], o,
                                                                               dists[d], sizes[s]);
                                                c.desc.begin_bit = win[w][0];
                                                c.desc.end_bit = win[w][1];
                                                c.seed ^= mix(w);
                                                check_case(e, &c, &t);
                                        }
        expect_tally(&t, nwin * 2 * 3 * variants_per_cell(3) * (2 - (size_t)lean(_i)));
        sortd_engine_destroy(e);
}
END_TEST

/* ---- thread counts ------------------------------------------------------------------------- */

/*
 * threads = 1, 2, 3 and the default must give the same bytes as each other and the reference. The
 * sizes of a million keys and more take one of their three cases each under ASan (variant_taken()).
 */
START_TEST(thread_counts)
{
        static const unsigned threads[] = {1, 2, 3, 0};
        static const size_t sizes[] = {100, TILE + 1, TILE * 4 + 3, 1000003,
                                       ((size_t)1 << 21) + 17};
        sortd_engine *e[4];
        size_t cases = 0;

        for (int i = 0; i < 4; i++)
                e[i] = engine_new((size_t)1 << 22, threads[i]);
        for (size_t s = 0; s < (lean(_i) ? 3u : 5u); s++)
                for (int k = 0; k < 3; k++) {
                        int p = (int)(s + k + _i) % SORTD_PAYLOAD_COUNT;
                        struct sort_case c = make_case(_i, p, (s + k) & 1,
                                                       all_dists[(s * 3 + k) % N_DISTS], sizes[s]);
                        struct input in;
                        void *want_keys, *want_vals;

                        if (sizes[s] > TILE * 4 + 3 && !variant_taken((size_t)k, 3, s + (size_t)_i))
                                continue;
                        if (k == 2) /* and a bit range */
                                c.desc.begin_bit = 1 + (unsigned)s;
                        input_make(&c, &in);
                        reference_sort(&c, &in, &want_keys, &want_vals);
                        for (int i = 0; i < 4; i++) {
                                c.threads = threads[i];
                                engine_check(e[i], &c, &in, want_keys, want_vals);
                        }
                        free(want_keys);
                        free(want_vals);
                        input_free(&in);
                        cases++;
                }
        ck_assert_uint_eq(cases, lean(_i) ? 9 : 9 + 2 * variants_per_cell(3));
        for (int i = 0; i < 4; i++)
                sortd_engine_destroy(e[i]);
}
END_TEST

/* ---- tiny sizes ---------------------------------------------------------------------------- */

/* n = 0 touches nothing (even with NULL buffers); n = 1 keeps the key and value, argsort gives 0.
 */
START_TEST(tiny)
{
        sortd_engine *e = engine_new(16, 0);
        _Alignas(16) unsigned char keys[16], vals[8], before_k[16], before_v[8];

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                sortd_sort_desc d = {t, p, o, 0, 0};
                                uint64_t zero = 0;

                                memset(keys, 0x5a, 16);
                                memset(vals, 0xff, 8);
                                memcpy(before_k, keys, 16);
                                memcpy(before_v, vals, 8);
                                ck_assert_int_eq(sortd_engine_sort(e, &d, keys, vals, 0), SORTD_OK);
                                ck_assert_int_eq(sortd_engine_sort(e, &d, NULL, NULL, 0), SORTD_OK);
                                ck_assert_mem_eq(keys, before_k, 16);
                                ck_assert_mem_eq(vals, before_v, 8);

                                ck_assert_int_eq(sortd_engine_sort(e, &d, keys, vals, 1), SORTD_OK);
                                ck_assert_mem_eq(keys, before_k, 16);
                                if (is_argsort(p)) {
                                        size_t vb = sortd_payload_size(p);

                                        ck_assert_mem_eq(vals, &zero, vb);
                                        ck_assert_mem_eq(vals + vb, before_v + vb, 8 - vb);
                                } else {
                                        ck_assert_mem_eq(vals, before_v, 8);
                                }
                        }
        sortd_engine_destroy(e);
}
END_TEST

/*
 * One engine for many sorts: the status words carry the epoch of their pass
 * (16 bits, one epoch per pass), so 65535 passes wrap it and the engine must
 * start the words afresh. 8190 u64 sorts (8 passes each) bring the epoch near
 * the wrap; multi-tile sorts, checked against the reference, then run across
 * it. Sorts of up to SORTD__SMALL_SINGLE_KEYS keys take the one-thread small
 * sort, which has no passes: the first ones must be one key larger.
 */
START_TEST(epoch_wrap)
{
        const size_t big = 2 * TILE + 3, small = SORTD__SMALL_SINGLE_KEYS + 1;
        sortd_engine *e = engine_new(big, 2);
        sortd_sort_desc d = {SORTD_KEY_U64, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0};
        uint64_t *keys = malloc(big * 8), *want = malloc(big * 8);
        uint32_t *idx = malloc(big * 4), *want_idx = malloc(big * 4);

        ck_assert(keys && want && idx && want_idx);
        for (unsigned i = 0; i < 8190; i++) {
                datagen_fill(keys, small, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 1000 + i);
                ck_assert_int_eq(sortd_engine_sort(e, &d, keys, idx, small), SORTD_OK);
        }
        for (unsigned i = 0; i < 4; i++) {
                datagen_fill(keys, big, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 77 + i);
                memcpy(want, keys, big * 8);
                ck_assert_int_eq(sortd_engine_sort(e, &d, keys, idx, big), SORTD_OK);
                ck_assert_int_eq(ref_sort(&d, want, want_idx, big), 0);
                ck_assert_msg(memcmp(keys, want, big * 8) == 0, "sort %u: keys differ", i);
                ck_assert_msg(memcmp(idx, want_idx, big * 4) == 0, "sort %u: indices differ", i);
        }
        free(keys);
        free(want);
        free(idx);
        free(want_idx);
        sortd_engine_destroy(e);
}
END_TEST

/*
 * The wrap itself, where a test can see it: a status word left by an earlier
 * pass whose epoch number comes round again would look ready to a tile of the
 * new pass before its predecessor has published. epoch_wrap above crosses the
 * wrap, but such a stale word is read only if a tile overtakes its
 * predecessor, which timing decides; so the words are checked here.
 */
START_TEST(epoch_wrap_clears_status)
{
        sortd__cpu_ctx ctx;
        size_t words;

        ck_assert_int_eq(sortd__cpu_ctx_init(&ctx, 4 * TILE, 1), 0);
        words = ctx.max_tiles * SORTD__RADIX;
        ck_assert_uint_ge(ctx.max_tiles, 4);
        ctx.epoch = 0xfffe;
        ck_assert_uint_eq(sortd__look_back_start(&ctx), 0xffff);
        for (size_t i = 0; i < words; i++)
                ctx.status[i] = (uint64_t)1 << 48 | (uint64_t)2 << 46 | i; /* epoch 1, inclusive */
        ck_assert_uint_eq(sortd__look_back_start(&ctx), 1);
        for (size_t i = 0; i < words; i++)
                ck_assert_msg(ctx.status[i] == 0, "word %zu survived the wrap", i);
        ck_assert_uint_eq(sortd__look_back_start(&ctx), 2);
        sortd__cpu_ctx_free(&ctx);
}
END_TEST

/*
 * Binning passes after the first rank a tile straight into buckets sized from
 * the global histogram, and count first when its keys overrun one. Here the
 * low 5 bits of byte 1 copy those of byte 0 when bit 5 of byte 0 is clear:
 * the global histogram of byte 1 stays uniform, but once the first pass has
 * sorted by byte 0, a tile of keys with such bytes 0 holds half the bytes 1
 * twice as often, and overruns, while the next tiles fit. After a few
 * overruns a thread counts first for the rest of the pass. Keys, values and
 * indices must all match the reference, on one thread and two (under ASan each
 * case on one of them, in turn: variant_taken()).
 */
static void fill_clustered(uint32_t *keys, size_t n, uint64_t seed)
{
        datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        for (size_t i = 0; i < n; i++)
                if (!(keys[i] & 0x20))
                        keys[i] = (keys[i] & ~0x1f00u) | (keys[i] & 0x1f) << 8;
}

/*
 * The same for a place where one digit holds nearly every key, ranked through
 * a register: byte 1 is 0 but where byte 0 is below 8 (3% of the keys), so
 * after the first pass the first tile holds nearly all the other bytes 1 and
 * overruns their small buckets, and the later tiles fit. At 16 MiB and up the
 * passes stream, and that digit's keys go straight to the output: their
 * place is found before the ranking, and kept when the tile overruns.
 */
static void fill_dominant(uint32_t *keys, size_t n, uint64_t seed)
{
        datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        for (size_t i = 0; i < n; i++)
                if ((keys[i] & 0xff) >= 8)
                        keys[i] &= ~0xff00u;
}

/*
 * The first pass ranks into buckets too, and where a tile overruns, it ranks
 * from the counts of the histogram pass instead. Here the first tile's bytes 0
 * are all below 128: twice the expected count of each, while the global
 * histogram of byte 0 stays near uniform and the later tiles fit.
 */
static void fill_clustered_low(uint32_t *keys, size_t n, uint64_t seed)
{
        datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        for (size_t i = 0; i < n && i < TILE; i++)
                keys[i] &= ~0x80u;
}

/* The same with a dominant byte 0: 0 in every tile but the first. */
static void fill_dominant_low(uint32_t *keys, size_t n, uint64_t seed)
{
        datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        for (size_t i = TILE; i < n; i++)
                keys[i] &= ~0xffu;
}

START_TEST(bucket_overruns)
{
        const size_t n = 32 * TILE + 5; /* 16 MiB and more */
        /* A dominant digit goes through a register for keys only. */
        static const struct {
                void (*fill)(uint32_t *keys, size_t n, uint64_t seed);
                sortd_payload payload;
                sortd_order order;
        } cases[] = {
                {fill_clustered, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING},
                {fill_clustered, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING},
                {fill_dominant, SORTD_PAYLOAD_NONE, SORTD_ASCENDING},
                {fill_dominant, SORTD_PAYLOAD_NONE, SORTD_DESCENDING},
                {fill_clustered_low, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING},
                {fill_clustered_low, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING},
                {fill_clustered_low, SORTD_PAYLOAD_NONE, SORTD_ASCENDING},
                {fill_dominant_low, SORTD_PAYLOAD_NONE, SORTD_ASCENDING},
                {fill_dominant_low, SORTD_PAYLOAD_NONE, SORTD_DESCENDING},
        };
        uint32_t *keys = malloc(n * 4), *want = malloc(n * 4);
        uint32_t *vals = malloc(n * 4), *want_vals = malloc(n * 4);

        ck_assert(keys && want && vals && want_vals);
        for (unsigned threads = 1; threads <= 2; threads++) {
                sortd_engine *e = engine_new(n, threads);

                for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                        sortd_sort_desc d = {SORTD_KEY_U32, cases[k].payload, cases[k].order, 0, 0};
                        bool has_vals = d.payload != SORTD_PAYLOAD_NONE;

                        if (!variant_taken(threads - 1, 2, k))
                                continue;
                        cases[k].fill(keys, n, 500 + threads * 4 + k);
                        datagen_fill(vals, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 900 + k);
                        memcpy(want, keys, n * 4);
                        memcpy(want_vals, vals, n * 4);
                        ck_assert_int_eq(sortd_engine_sort(e, &d, keys, has_vals ? vals : NULL, n),
                                         SORTD_OK);
                        ck_assert_int_eq(ref_sort(&d, want, has_vals ? want_vals : NULL, n), 0);
                        ck_assert_msg(memcmp(keys, want, n * 4) == 0,
                                      "%u threads, case %u: keys differ", threads, k);
                        ck_assert_msg(memcmp(vals, want_vals, n * 4) == 0,
                                      "%u threads, case %u: values differ", threads, k);
                }
                sortd_engine_destroy(e);
        }
        free(keys);
        free(want);
        free(vals);
        free(want_vals);
}
END_TEST

/*
 * A dominant digit of a keys-only sort of 16 MiB and more goes straight to the
 * output, in the first pass and in later ones: q = 8 keys make
 * every place dominant. Both widths of the non-temporal store (u32, u64),
 * keys mapped (i32 descending) and not, one thread and two (under ASan each case
 * on one of them, in turn).
 */
START_TEST(dominant_direct)
{
        static const struct {
                sortd_key_type type;
                sortd_order order;
                size_t n;
        } cases[] = {
                {SORTD_KEY_U32, SORTD_ASCENDING, 32 * TILE + 7},
                {SORTD_KEY_I32, SORTD_DESCENDING, 32 * TILE + 7},
                {SORTD_KEY_U64, SORTD_ASCENDING, 16 * TILE + 3},
        };
        const struct dist q8 = {DATAGEN_ENTROPY, 8};
        struct tally t = {0, 0};

        for (unsigned threads = 1; threads <= 2; threads++) {
                sortd_engine *e = engine_new(32 * TILE + 7, threads);

                for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                        if (!variant_taken(threads - 1, 2, k))
                                continue;
                        struct sort_case c = make_case(cases[k].type, SORTD_PAYLOAD_NONE,
                                                       cases[k].order, q8, cases[k].n);
                        check_case(e, &c, &t);
                }
                sortd_engine_destroy(e);
        }
        expect_tally(&t, 3 * variants_per_cell(2));
}
END_TEST

/* ---- the small sort's network ------------------------------------------------------------- */

/* Image i of n in one of four forms: uniform, a few values, in order, in reverse. */
static uint64_t network_image(unsigned form, size_t i, uint64_t *z)
{
        *z = mix(*z + i);
        return form == 0   ? *z
               : form == 1 ? (*z % 5) * 0x4000000100000001ull
               : form == 2 ? (uint64_t)i
                           : UINT64_MAX - (uint64_t)i;
}

/*
 * The sorting network alone, at every n it takes, 4- and 8-byte images, against the reference: the
 * four forms of network_image(), padded where n is no power of two. Without AVX-512 it is
 * skipped with a message: the radix sort serves every small sort then.
 */
START_TEST(network_every_n)
{
        uint64_t *a = aligned_alloc(64, SORTD__NETWORK_KEYS * 8),
                 *want = malloc(SORTD__NETWORK_KEYS * 8), z = 0x9e3779b97f4a7c15ull;

        const sortd_sort_desc as_u32 = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0},
                              as_u64 = {SORTD_KEY_U64, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};

        ck_assert(a && want);
        if (!sortd__network_available()) {
                printf("SKIP network_every_n: this CPU has no AVX-512F\n");
                goto out;
        }
        for (unsigned w = 4; w <= 8; w += 4)
                for (size_t n = 1; n <= SORTD__NETWORK_KEYS; n++)
                        for (unsigned form = 0; form < 4; form++) {
                                uint32_t *a32 = (uint32_t *)a;

                                for (size_t i = 0; i < n; i++)
                                        if (w == 4)
                                                a32[i] = (uint32_t)network_image(form, i, &z);
                                        else
                                                a[i] = network_image(form, i, &z);
                                memcpy(want, a, n * w);
                                ck_assert_int_eq(
                                        ref_sort(w == 4 ? &as_u32 : &as_u64, want, NULL, n), 0);
                                if (w == 4)
                                        sortd__network_sort(a32, n);
                                else
                                        sortd__network_sort64(a, n);
                                if (memcmp(a, want, n * w) != 0)
                                        ck_abort_msg("network: %u-byte images, n %zu, form %u: "
                                                     "out of order",
                                                     w, n, form);
                        }
out:
        free(a);
        free(want);
}
END_TEST

/*
 * The small sort through the network and through the radix sort (the context's flag turned
 * off), against the reference: every key type of up to 8 bytes, every payload, both orders,
 * the whole key and a bit range, one distribution a cell in turn, and the sizes around the
 * network's powers of two, its three-quarter bounds and its limits, where the form of the
 * network changes (keys alone, ranked with indices) or the radix sort takes over.
 */
START_TEST(network_or_radix)
{
        static const size_t sizes[] = {2,    3,    15,   16,   17,   511,  767,
                                       768,  1023, 1024, 1025, 1535, 1536, 2047,
                                       2048, 2049, 3071, 3072, 4095, 4096, 4097};
        const sortd_key_type type = (sortd_key_type)_i;
        const unsigned bits = 8 * (unsigned)sortd_key_size(type);
        sortd__cpu_ctx ctx = {0};
        size_t cases = 0, by_network = 0, cell = 0;

        if (bits > 64)
                return;
        ck_assert_int_eq(sortd__cpu_ctx_init(&ctx, SORTD__SMALL_KEYS, 1), 0);
        const bool net_here = ctx.scratch[0].network;

        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                for (unsigned ranged = 0; ranged < 2; ranged++, cell++) {
                                        struct sort_case c =
                                                make_case(type, (sortd_payload)p, (sortd_order)o,
                                                          all_dists[cell % N_DISTS], sizes[s]);
                                        struct input in;
                                        void *want, *want_vals;
                                        char name[160];

                                        if (ranged) {
                                                c.desc.begin_bit = 3;
                                                c.desc.end_bit = bits - 2;
                                        }
                                        sortd__plan plan = sortd__plan_of(&c.desc);

                                        input_make(&c, &in);
                                        reference_sort(&c, &in, &want, &want_vals);
                                        for (int net = net_here; net >= 0; net--) {
                                                struct input copy;

                                                input_make(&c, &copy);
                                                ctx.scratch[0].network = net;
                                                by_network += sortd__small_by_network(
                                                        &plan, c.n, &ctx.scratch[0]);
                                                sortd__small_sort(&plan, copy.keys, copy.vals, c.n,
                                                                  &ctx.scratch[0]);
                                                describe(&c, name, sizeof(name));
                                                expect_same(name, net ? "keys (network)" : "keys",
                                                            copy.keys, want, c.n, copy.kb);
                                                expect_same(name, net ? "vals (network)" : "vals",
                                                            copy.vals, want_vals, c.n, copy.vb);
                                                input_free(&copy);
                                                cases++;
                                        }
                                        free(want);
                                        free(want_vals);
                                        input_free(&in);
                                }
        ck_assert_uint_gt(cases, 0);
        ck_assert(!net_here || by_network > 0);
        sortd__cpu_ctx_free(&ctx);
}
END_TEST

/*
 * On a CPU with AVX-512, bucket tiles of u32 keys split a dominant digit's
 * keys from the others without a branch; elsewhere, or with the split turned
 * off in the engine's context, they are ranked one at a time. Both ways must
 * give the reference's order: q = 8 keys, streamed (16 MiB and more) and not,
 * and a first tile that overruns its buckets in the second pass
 * (fill_dominant()) and in the first (fill_dominant_low()).
 */
START_TEST(dominant_split_or_not)
{
        static const size_t sizes[] = {32 * TILE + 5, 3 * TILE + 1};
        const sortd__plan plan = {.key_bytes = 4, .kind = SORTD__KEY_UNSIGNED, .end_bit = 32};
        const sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        uint32_t *keys = malloc(sizes[0] * 4), *want = malloc(sizes[0] * 4);
        sortd__cpu_ctx ctx = {0};

        ck_assert(keys && want);
        ck_assert_int_eq(sortd__cpu_ctx_init(&ctx, sizes[0], 2), 0);
        const bool can_split = ctx.split512;

        for (int split = can_split; split >= 0; split--)
                for (unsigned k = 0; k < 3 * 2; k++) {
                        size_t n = sizes[k % 2];

                        ctx.split512 = split;
                        if (k < 2)
                                datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_ENTROPY, 8, 40 + k);
                        else if (k < 4)
                                fill_dominant(keys, n, 50 + k);
                        else
                                fill_dominant_low(keys, n, 60 + k);
                        memcpy(want, keys, n * 4);
                        sortd__onesweep_sort(&ctx, &plan, keys, NULL, n);
                        ck_assert_int_eq(ref_sort(&d, want, NULL, n), 0);
                        ck_assert_msg(memcmp(keys, want, n * 4) == 0,
                                      "split %d, case %u: keys differ", split, k);
                }
        sortd__cpu_ctx_free(&ctx);
        free(keys);
        free(want);
}
END_TEST

/* n equal to the capacity is accepted; reusing one engine for many sizes is covered above. */
START_TEST(capacity_exact)
{
        sortd_engine *e = engine_new(TILE * 2 + 1, 0);
        struct tally t = {0, 0};
        struct sort_case c = make_case(SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT64, SORTD_DESCENDING,
                                       all_dists[0], TILE * 2 + 1);

        ck_assert_str_eq(sortd_engine_kind(e), "cpu");
        ck_assert_uint_eq(sortd_engine_capacity(e), TILE * 2 + 1);
        ck_assert_ptr_nonnull(sortd_engine_device(e));
        ck_assert_str_ne(sortd_engine_device(e), "");
        check_case(e, &c, &t);
        expect_tally(&t, 1);
        sortd_engine_destroy(e);
}
END_TEST

/* ---- shared keys that change during the sort ------------------------------------------------ */

struct scribbler {
        uint32_t *keys;
        size_t n;
        _Atomic bool stop;
        uint64_t writes;
};

/* Another process writing a client's region while the daemon sorts it, played by a thread. */
static void *scribble(void *arg)
{
        struct scribbler *s = arg;
        uint64_t x = 0x9e3779b97f4a7c15ull;

        while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
                x = mix(x);
                ((volatile uint32_t *)s->keys)[x % s->n] = (uint32_t)(x >> 32);
                s->writes++;
        }
        return NULL;
}

/*
 * Keys that another process changes while they are sorted (sortd_engine_sort_shared) may come out
 * in any order, but the engine must stay inside its buffers and the caller's, and the
 * permutation it writes must be one: each input position exactly once. A key changed between the
 * histogram and a pass sends an unchecked pass past its bins (shared_keys_changed_after_count
 * below does it on purpose).
 */
START_TEST(shared_keys_change)
{
        static const size_t sizes[] = {SORTD__SMALL_SINGLE_KEYS, 3 * TILE + 17, 300007};
        const sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0};
        size_t n = sizes[_i];
        sortd_engine *e = engine_new(n, 2);
        struct guarded k, v;
        uint8_t *seen = malloc(n);

        guarded_alloc(&k, n * 4);
        guarded_alloc(&v, n * 4);
        for (int round = 0; round < 12; round++) {
                struct scribbler s = {.keys = k.p, .n = n};
                pthread_t t;

                for (size_t i = 0; i < n; i++)
                        ((uint32_t *)k.p)[i] = (uint32_t)mix(i + (uint64_t)round * n);
                atomic_init(&s.stop, false);
                ck_assert_int_eq(pthread_create(&t, NULL, scribble, &s), 0);
                ck_assert_int_eq(sortd_engine_sort_shared(e, &d, k.p, v.p, n), SORTD_OK);
                atomic_store(&s.stop, true);
                pthread_join(t, NULL);
                memset(seen, 0, n);
                for (size_t i = 0; i < n; i++) {
                        uint32_t at = ((uint32_t *)v.p)[i];

                        ck_assert_msg(at < n && !seen[at],
                                      "n = %zu, round %d: index %" PRIu32
                                      " at %zu out of range or twice",
                                      n, round, at, i);
                        seen[at] = 1;
                }
        }
        guarded_check_free(&k, "keys", "shared");
        guarded_check_free(&v, "vals", "shared");
        free(seen);
        sortd_engine_destroy(e);
}
END_TEST

/*
 * Shared keys changed after the histogram pass counted them and before the binning passes read
 * them (sortd__onesweep_count(), the change, sortd__onesweep_finish()). A change to the first
 * pass's digits is found by that pass, and the sort starts over from a copy of the keys; a change
 * to a later pass's digits only by that pass, which reads the engine's own memory, counts it and
 * runs again. Either way the caller gets exactly the sort of the keys as changed: no place of the
 * output keeps what the engine's buffers held before (a pattern, here), none is written twice.
 */
struct changed_case {
        sortd_sort_desc desc;
        unsigned byte; /* the byte of some keys that changes: the place whose pass finds it */
        size_t n;
};

static const struct changed_case changed_cases[] = {
        /* The last of four passes, which writes the caller's keys. */
        {{SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0}, 3, 3 * TILE + 17},
        /* The first pass, which reads them: the sort starts over. Ranked by buckets, whose counts
           are the ranking's own: the tiles' counts add up to other totals than the histogram's. */
        {{SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0}, 0, 3 * TILE + 17},
        /* Too few keys for buckets: the first pass's tiles rank with the histogram pass's counts,
           so the totals agree, but no tile's ranking fills the slots those counts gave it. */
        {{SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0}, 0, TILE + 17},
        /* A middle pass, and keys stored mapped (keys.h) between passes. */
        {{SORTD_KEY_F32, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0}, 1, 3 * TILE + 17},
        {{SORTD_KEY_I64, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 0, 0}, 5, 3 * TILE + 17},
        /* The last of three passes (a bit range): values end in the engine's buffers. */
        {{SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 24}, 2, 3 * TILE + 17},
        /* One pass in all, which reads the caller's keys and so starts over. */
        {{SORTD_KEY_U8, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0}, 0, 3 * TILE + 17},
};

START_TEST(shared_keys_changed_after_count)
{
        const struct changed_case *c = &changed_cases[_i];
        const size_t n = c->n;
        sortd__plan plan = sortd__plan_of(&c->desc);
        const unsigned kb = plan.key_bytes, vb = plan.val_bytes;
        unsigned char *want_k = malloc(n * kb), *want_v = malloc(n * vb);
        sortd__cpu_ctx ctx = {0};
        struct guarded k, v;
        sortd__counts counts;

        plan.shared = true;
        ck_assert(want_k && want_v);
        ck_assert_int_eq(sortd__cpu_ctx_init(&ctx, n, 2), 0);
        guarded_alloc(&k, n * kb);
        guarded_alloc(&v, n * vb);
        datagen_fill(k.p, n, c->desc.key_type, DATAGEN_UNIFORM, 0, 70 + _i);
        for (size_t i = 0; i < n; i++)
                memcpy((unsigned char *)v.p + i * vb, &(uint64_t){plan.argsort ? ~0ull : i}, vb);
        memset(ctx.alt_keys, 0xa5, ctx.alt_bytes);
        memset(ctx.alt_vals, 0xa5, ctx.alt_bytes);
        memset(ctx.own_keys, 0xa5, ctx.alt_bytes);

        sortd__onesweep_count(&ctx, &plan, k.p, n, &counts);
        ck_assert_uint_eq(counts.np, (plan.end_bit - plan.begin_bit) / 8);
        /* Every fifth key's byte to 0: that place's histogram is not what was counted. */
        for (size_t i = 0; i < n; i += 5)
                ((unsigned char *)k.p)[i * kb + c->byte] = 0;
        memcpy(want_k, k.p, n * kb);
        memcpy(want_v, v.p, n * vb);
        sortd__onesweep_finish(&ctx, &plan, &counts, k.p, v.p, n);

        ck_assert_int_eq(ref_sort(&c->desc, want_k, want_v, n), 0);
        expect_same("changed after count", "keys", k.p, want_k, n, kb);
        expect_same("changed after count", "vals", v.p, want_v, n, vb);
        guarded_check_free(&k, "keys", "changed after count");
        guarded_check_free(&v, "vals", "changed after count");
        sortd__cpu_ctx_free(&ctx);
        free(want_k);
        free(want_v);
}
END_TEST

static Suite *cpu_engine_suite(void)
{
        Suite *s = suite_create("cpu-engine");
        TCase *tc;

        tc = tcase_create("matrix");
        tcase_set_timeout(tc, 1200);
        tcase_add_loop_test(tc, matrix_small_sizes, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, matrix_primes, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, matrix_random_sizes, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_test(tc, tiny);
        tcase_add_test(tc, capacity_exact);
        suite_add_tcase(s, tc);

        tc = tcase_create("buckets");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, bucket_overruns);
        tcase_add_test(tc, dominant_direct);
        tcase_add_test(tc, dominant_split_or_not);
        suite_add_tcase(s, tc);

        tc = tcase_create("network");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, network_every_n);
        tcase_add_loop_test(tc, network_or_radix, 0, SORTD_KEY_TYPE_COUNT);
        suite_add_tcase(s, tc);

        tc = tcase_create("epoch");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, epoch_wrap);
        tcase_add_test(tc, epoch_wrap_clears_status);
        suite_add_tcase(s, tc);

        tc = tcase_create("stability");
        tcase_set_timeout(tc, 1200);
        tcase_add_loop_test(tc, stability, 0, SORTD_KEY_TYPE_COUNT);
        suite_add_tcase(s, tc);

        tc = tcase_create("bit-ranges");
        tcase_set_timeout(tc, 1200);
        tcase_add_loop_test(tc, bit_ranges, 0, SORTD_KEY_TYPE_COUNT);
        suite_add_tcase(s, tc);

        tc = tcase_create("shared");
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, shared_keys_change, 0, 3);
        tcase_add_loop_test(tc, shared_keys_changed_after_count, 0,
                            sizeof(changed_cases) / sizeof(changed_cases[0]));
        suite_add_tcase(s, tc);

        tc = tcase_create("threads");
        tcase_set_timeout(tc, 1200);
        tcase_add_loop_test(tc, thread_counts, 0, SORTD_KEY_TYPE_COUNT);
        suite_add_tcase(s, tc);

        return s;
}

int main(void)
{
        cpu_check_seed_from_env();
        return run_suite(cpu_engine_suite());
}
