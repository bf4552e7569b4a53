/*
 * f16 and bf16 keys on the engine that SORTD_TEST_ENGINE names ("cpu" when unset; the emulated
 * build runs it on "cuda"): every one of the 65,536 bit patterns, twice, shuffled, ascending
 * and descending, argsorted and checked against totalOrder computed here (not by the engines'
 * key map, nor the reference's), stable; then segmented sorts and top-k of them against the
 * reference.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "engine.h"
#include "reference.h"
#include "suite.h"

#define PATTERNS 65536u
#define N (2 * PATTERNS) /* every pattern twice: ties to keep in order */

static const char *engine_kind(void)
{
        const char *k = getenv("SORTD_TEST_ENGINE");

        return k && *k ? k : "cpu";
}

static int on_cpu(void)
{
        return strcmp(engine_kind(), "cpu") == 0;
}

static sortd_engine *engine_new(void)
{
        sortd_engine_config cfg = {.capacity = N, .threads = 2};
        sortd_engine *e = NULL;
        char why[256];

        if (sortd_engine_create(engine_kind(), &cfg, &e, why, sizeof(why)) != SORTD_OK)
                ck_abort_msg("%s engine: %s", engine_kind(), why);
        return e;
}

static uint64_t mix(uint64_t z)
{
        z += 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

/*
 * totalOrder of a 16-bit float (f16 and bf16 alike: sign, then magnitude bits), as a rank:
 * negatives (sign set) below positives, larger magnitudes lower among negatives.
 */
static unsigned rank_of(uint16_t x)
{
        return x & 0x8000u ? 0x7fffu - (x & 0x7fffu) : 0x8000u + x;
}

static uint16_t pattern_of(unsigned rank)
{
        return (uint16_t)(rank & 0x8000u ? rank - 0x8000u : 0x8000u | (0x7fffu - rank));
}

enum arrangement { SHUFFLED, ASCENDING, DESCENDING, ARRANGEMENTS };

static void arrange(uint16_t *k, enum arrangement a, uint64_t seed)
{
        for (unsigned i = 0; i < N; i++) {
                unsigned r = i / 2;

                k[i] = pattern_of(a == DESCENDING ? PATTERNS - 1 - r : r);
        }
        if (a != SHUFFLED)
                return;
        for (unsigned i = N - 1; i > 0; i--) {
                unsigned j = (unsigned)(mix(seed + i) % (i + 1));
                uint16_t t = k[i];

                k[i] = k[j];
                k[j] = t;
        }
}

/*
 * The result is the input permuted by idx, in totalOrder (reversed descending), stable. Plain
 * ifs: each ck_assert marks a point through a pipe, a system call per row.
 */
static void expect_total_order(const char *what, const uint16_t *in, const uint16_t *out,
                               const uint32_t *idx, int descending)
{
        unsigned char *seen = calloc(N, 1);

        ck_assert_ptr_nonnull(seen);
        for (unsigned i = 0; i < N; i++) {
                if (idx[i] >= N || seen[idx[i]])
                        ck_abort_msg("%s: index %u at %u repeats or is out of range", what, idx[i],
                                     i);
                seen[idx[i]] = 1;
                if (in[idx[i]] != out[i])
                        ck_abort_msg("%s: key at %u is not input %u's", what, i, idx[i]);
                if (i == 0)
                        continue;
                unsigned a = rank_of(out[i - 1]), b = rank_of(out[i]);

                if (descending ? a < b : a > b)
                        ck_abort_msg("%s: 0x%04x before 0x%04x at %u", what, out[i - 1], out[i], i);
                if (a == b && idx[i - 1] > idx[i])
                        ck_abort_msg("%s: equal keys 0x%04x out of input order at %u", what, out[i],
                                     i);
        }
        free(seen);
}

static void every_pattern(sortd_key_type t)
{
        sortd_engine *e = engine_new();
        uint16_t *in = xmalloc(N * 2), *keys = xmalloc(N * 2);
        uint32_t *idx = xmalloc(N * 4);
        unsigned done = 0;

        for (int a = 0; a < ARRANGEMENTS; a++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        const sortd_sort_desc d = {t, SORTD_PAYLOAD_ARGSORT32, (sortd_order)o, 0,
                                                   0};
                        char what[64];

                        /* the emulated engine: each arrangement of f16 in one order, bf16
                           (the same key map) shuffled */
                        if (!on_cpu() &&
                            (o != (a == ASCENDING) || (t == SORTD_KEY_BF16 && a != SHUFFLED)))
                                continue;
                        snprintf(what, sizeof(what), "%s %s input %d", sortd_key_type_name(t),
                                 o ? "descending" : "ascending", a);
                        arrange(in, (enum arrangement)a, (uint64_t)t * 10 + (uint64_t)a);
                        memcpy(keys, in, N * 2);
                        ck_assert_msg(sortd_engine_sort(e, &d, keys, idx, N) == SORTD_OK, "%s: %s",
                                      what, sortd_engine_error(e));
                        expect_total_order(what, in, keys, idx, o);
                        done++;
                }
        ck_assert_uint_eq(done, on_cpu() ? 6 : t == SORTD_KEY_BF16 ? 1 : 3);
        free(in);
        free(keys);
        free(idx);
        sortd_engine_destroy(e);
}

START_TEST(f16_every_pattern)
{
        every_pattern(SORTD_KEY_F16);
}
END_TEST

START_TEST(bf16_every_pattern)
{
        every_pattern(SORTD_KEY_BF16);
}
END_TEST

static void expect_same(const char *what, const void *a, const void *b, size_t bytes)
{
        ck_assert_msg(memcmp(a, b, bytes) == 0, "%s: differs from the reference", what);
}

/* Rows of every size class, and CSR segments, of special and uniform f16 and bf16 keys. */
START_TEST(segments_and_topk)
{
        static const uint64_t row_lens[] = {3, 40, 700, 5000};
        sortd_engine *e = engine_new();
        const size_t n = 20000;
        uint16_t *k = xmalloc(n * 2), *want = xmalloc(n * 2), *out = xmalloc(n * 2);
        uint64_t *v = xmalloc(n * 8), *want_v = xmalloc(n * 8), *out_v = xmalloc(n * 8);

        for (int t = SORTD_KEY_F16; t <= SORTD_KEY_BF16; t++)
                for (unsigned r = 0; r < 4; r++) {
                        const sortd_segments seg = {.count = n / row_lens[r],
                                                    .row_len = row_lens[r]};
                        const size_t m = seg.count * seg.row_len;
                        const sortd_sort_desc d = {(sortd_key_type)t,
                                                   (sortd_payload)(r % 2 ? SORTD_PAYLOAD_ARGSORT64
                                                                         : SORTD_PAYLOAD_VALUES64),
                                                   (sortd_order)(r / 2), 0, 0};
                        const uint64_t kk = 1 + r * 13;
                        const uint64_t got = sortd_topk_results(&seg, m, kk);

                        datagen_fill(k, m, d.key_type, r % 2 ? DATAGEN_SPECIAL : DATAGEN_FEW, 0, r);
                        datagen_fill_values(v, m, 8, r);
                        memcpy(want, k, m * 2);
                        memcpy(want_v, v, m * 8);
                        ck_assert_int_eq(ref_topk(&d, &seg, kk, k, v, want, want_v, m), 0);
                        ck_assert_msg(sortd_engine_topk(e, &d, &seg, kk, SORTD_MEMORY_HOST, k, v,
                                                        out, out_v, m) == SORTD_OK,
                                      "top-k: %s", sortd_engine_error(e));
                        expect_same("top-k keys", out, want, got * 2);
                        expect_same("top-k vals", out_v, want_v, got * 8);
                        memcpy(want, k, m * 2);
                        memcpy(want_v, v, m * 8);
                        ck_assert_int_eq(ref_sort_segments(&d, &seg, want, want_v, m), 0);
                        ck_assert_msg(sortd_engine_sort_segments(e, &d, &seg, SORTD_MEMORY_HOST, k,
                                                                 v, m) == SORTD_OK,
                                      "segments: %s", sortd_engine_error(e));
                        expect_same("segmented keys", k, want, m * 2);
                        expect_same("segmented vals", v, want_v, m * 8);
                }
        free(k);
        free(want);
        free(out);
        free(v);
        free(want_v);
        free(out_v);
        sortd_engine_destroy(e);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("engine-halves");
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {
                {"f16", f16_every_pattern},
                {"bf16", bf16_every_pattern},
                {"segments", segments_and_topk},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                TCase *tc = tcase_create(cases[i].name);

                tcase_set_timeout(tc, 600);
                tcase_add_test(tc, cases[i].test);
                suite_add_tcase(s, tc);
        }
        return on_cpu() ? run_suite(s) : run_suite_nofork(s);
}
