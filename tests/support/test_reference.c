/*
 * The oracle's own tests: hand-written expectations for each key order, and properties checked
 * on generated data with comparisons that do not go through the reference (C's own integer and
 * float comparisons, bit equality for ties, the permutation applied back to the input).
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "reference.h"
#include "suite.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static sortd_sort_desc desc(sortd_key_type t, sortd_payload p, sortd_order o, unsigned b,
                            unsigned e)
{
        return (sortd_sort_desc){
                .key_type = t, .payload = p, .order = o, .begin_bit = b, .end_bit = e};
}

START_TEST(unsigned_and_argsort)
{
        uint8_t k[] = {3, 1, 2, 1, 0, 255};
        uint32_t v[6];
        const uint8_t want_k[] = {0, 1, 1, 2, 3, 255};
        const uint32_t want_v[] = {4, 1, 3, 2, 0, 5};
        sortd_sort_desc d = desc(SORTD_KEY_U8, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0);

        ck_assert_int_eq(ref_sort(&d, k, v, 6), 0);
        ck_assert_mem_eq(k, want_k, sizeof(k));
        ck_assert_mem_eq(v, want_v, sizeof(v));
}
END_TEST

START_TEST(signed_by_value)
{
        int8_t k8[] = {-128, 127, -1, 0, 1, -2};
        const int8_t want8[] = {-128, -2, -1, 0, 1, 127};
        int64_t k64[] = {INT64_MAX, -1, INT64_MIN, 0, 1, INT64_MIN + 1};
        const int64_t want64[] = {INT64_MAX, 1, 0, -1, INT64_MIN + 1, INT64_MIN};
        uint64_t v64[6];
        const uint64_t wantv[] = {0, 4, 3, 1, 5, 2};
        sortd_sort_desc d = desc(SORTD_KEY_I8, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0);

        ck_assert_int_eq(ref_sort(&d, k8, NULL, 6), 0);
        ck_assert_mem_eq(k8, want8, sizeof(k8));
        d = desc(SORTD_KEY_I64, SORTD_PAYLOAD_ARGSORT64, SORTD_DESCENDING, 0, 64);
        ck_assert_int_eq(ref_sort(&d, k64, v64, 6), 0);
        ck_assert_mem_eq(k64, want64, sizeof(k64));
        ck_assert_mem_eq(v64, wantv, sizeof(v64));
}
END_TEST

START_TEST(descending_is_stable)
{
        int16_t k[] = {1, 2, 1, 2, -5, 2};
        uint64_t v[] = {10, 20, 30, 40, 50, 60};
        const int16_t want_k[] = {2, 2, 2, 1, 1, -5};
        const uint64_t want_v[] = {20, 40, 60, 10, 30, 50};
        sortd_sort_desc d = desc(SORTD_KEY_I16, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0);

        ck_assert_int_eq(ref_sort(&d, k, v, 6), 0);
        ck_assert_mem_eq(k, want_k, sizeof(k));
        ck_assert_mem_eq(v, want_v, sizeof(v));
}
END_TEST

/* Every class of float in totalOrder, shuffled, sorted both ways. */
START_TEST(float_total_order)
{
        const uint32_t order32[] = {
                0xffffffff,                                     /* -NaN, largest payload */
                0xffc00001, 0xffc00000,                         /* -qNaN */
                0xff800002, 0xff800001,                         /* -sNaN */
                0xff800000,                                     /* -inf */
                0xff7fffff,                                     /* -largest finite */
                0xbf800000,                                     /* -1 */
                0x80800000,                                     /* -smallest normal */
                0x807fffff, 0x80000001,                         /* -denormals */
                0x80000000, 0x00000000,                         /* -0, +0 */
                0x00000001, 0x007fffff,                         /* +denormals */
                0x00800000, 0x3f800000, 0x7f7fffff, 0x7f800000, /* normals, +inf */
                0x7f800001, 0x7f800002, 0x7fc00000, 0x7fc00001, 0x7fffffff,
        };
        const uint64_t order64[] = {
                0xffffffffffffffff, 0xfff8000000000000, 0xfff0000000000001, 0xfff0000000000000,
                0xffefffffffffffff, 0xbff0000000000000, 0x8010000000000000, 0x800fffffffffffff,
                0x8000000000000001, 0x8000000000000000, 0x0000000000000000, 0x0000000000000001,
                0x000fffffffffffff, 0x0010000000000000, 0x3ff0000000000000, 0x7fefffffffffffff,
                0x7ff0000000000000, 0x7ff0000000000001, 0x7ff8000000000000, 0x7fffffffffffffff,
        };
        enum { N32 = LEN(order32), N64 = LEN(order64) };
        uint32_t k32[N32];
        uint64_t k64[N64];

        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                sortd_sort_desc d32 = desc(SORTD_KEY_F32, SORTD_PAYLOAD_NONE, o, 0, 0);
                sortd_sort_desc d64 = desc(SORTD_KEY_F64, SORTD_PAYLOAD_NONE, o, 0, 0);

                for (size_t i = 0; i < N32; i++)
                        k32[i] = order32[(i * 7 + 3) % N32]; /* 7 is prime to N32 = 24 */
                for (size_t i = 0; i < N64; i++)
                        k64[i] = order64[(i * 7 + 3) % N64]; /* and to N64 = 20 */
                ck_assert_int_eq(ref_sort(&d32, k32, NULL, N32), 0);
                ck_assert_int_eq(ref_sort(&d64, k64, NULL, N64), 0);
                for (size_t i = 0; i < N32; i++)
                        ck_assert_uint_eq(k32[i], order32[o ? N32 - 1 - i : i]);
                for (size_t i = 0; i < N64; i++)
                        ck_assert_uint_eq(k64[i], order64[o ? N64 - 1 - i : i]);
        }
}
END_TEST

START_TEST(bit_ranges)
{
        uint32_t u[] = {0x10, 0x0f, 0x21, 0x1f0, 0x05};
        const uint32_t want_u[] = {0x0f, 0x05, 0x10, 0x21, 0x1f0}; /* by bits [4,8) */
        const uint32_t want_ud[] = {0x1f0, 0x21, 0x10, 0x0f, 0x05};
        const int32_t s0[] = {5, -3, 0, -1, 7};
        int32_t s[] = {5, -3, 0, -1, 7};
        const int32_t want_s[] = {-3, -1, 5, 0, 7}; /* by the image's top bit */
        const int32_t want_sd[] = {5, 0, 7, -3, -1};
        /* -1.0, 1.0, 2.0: without the image's top bit, -1.0 (~0xbf800000) is the largest */
        uint32_t f[] = {0xbf800000, 0x3f800000, 0x40000000};
        const uint32_t want_f[] = {0x3f800000, 0x40000000, 0xbf800000};
        uint8_t b[] = {0x81, 0x02, 0x03, 0x80, 0x00};
        const uint8_t want_bd[] = {0x81, 0x03, 0x02, 0x80, 0x00}; /* by bit 0, descending */
        const uint8_t want_b[] = {0x02, 0x80, 0x00, 0x81, 0x03};  /* then ascending */
        sortd_sort_desc d = desc(SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 4, 8);

        ck_assert_int_eq(ref_sort(&d, u, NULL, 5), 0);
        ck_assert_mem_eq(u, want_u, sizeof(u));
        d.order = SORTD_DESCENDING;
        ck_assert_int_eq(ref_sort(&d, u, NULL, 5), 0);
        ck_assert_mem_eq(u, want_ud, sizeof(u));

        d = desc(SORTD_KEY_I32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 31, 0);
        ck_assert_int_eq(ref_sort(&d, s, NULL, 5), 0);
        ck_assert_mem_eq(s, want_s, sizeof(s));
        memcpy(s, s0, sizeof(s));
        d.order = SORTD_DESCENDING;
        ck_assert_int_eq(ref_sort(&d, s, NULL, 5), 0);
        ck_assert_mem_eq(s, want_sd, sizeof(s));

        d = desc(SORTD_KEY_F32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 31);
        ck_assert_int_eq(ref_sort(&d, f, NULL, 3), 0);
        ck_assert_mem_eq(f, want_f, sizeof(f));

        d = desc(SORTD_KEY_U8, SORTD_PAYLOAD_NONE, SORTD_DESCENDING, 0, 1);
        ck_assert_int_eq(ref_sort(&d, b, NULL, 5), 0);
        ck_assert_mem_eq(b, want_bd, sizeof(b));
        d.order = SORTD_ASCENDING;
        ck_assert_int_eq(ref_sort(&d, b, NULL, 5), 0);
        ck_assert_mem_eq(b, want_b, sizeof(b));
}
END_TEST

START_TEST(rejects_what_the_engine_rejects)
{
        uint32_t k[4] = {4, 3, 2, 1}, v[4] = {9, 9, 9, 9};
        const uint32_t k0[4] = {4, 3, 2, 1}, v0[4] = {9, 9, 9, 9};
        const sortd_sort_desc bad[] = {
                desc(SORTD_KEY_TYPE_COUNT, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0),
                desc(SORTD_KEY_U32, SORTD_PAYLOAD_COUNT, SORTD_ASCENDING, 0, 0),
                desc(SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ORDER_COUNT, 0, 0),
                desc(SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 33),
                desc(SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 32, 0),
                desc(SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 5, 5),
        };
        sortd_sort_desc ok = desc(SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0);

        for (size_t i = 0; i < LEN(bad); i++)
                ck_assert_int_eq(ref_sort(&bad[i], k, v, 4), -1);
        ck_assert_int_eq(ref_sort(&ok, NULL, v, 4), -1);
        ck_assert_int_eq(ref_sort(&ok, k, NULL, 4), -1);
        ck_assert_int_eq(ref_sort(NULL, k, v, 4), -1);
        ck_assert_mem_eq(k, k0, sizeof(k));
        ck_assert_mem_eq(v, v0, sizeof(v));
        ck_assert_int_eq(ref_sort(&ok, NULL, NULL, 0), 0);
}
END_TEST

/* An f16 (binary16) or bf16 pattern's value, decoded here by hand: not through the reference. */
static double half_value(sortd_key_type t, const void *k)
{
        uint16_t h;
        float f;

        memcpy(&h, k, 2);
        if (t == SORTD_KEY_BF16) {
                uint32_t w = (uint32_t)h << 16;

                memcpy(&f, &w, 4);
                return f;
        }
        unsigned e = (h >> 10) & 31, m = h & 1023;
        double v = e == 31 ? (m ? NAN : INFINITY)
                   : e     ? ldexp(1024 + m, (int)e - 25)
                           : ldexp(m, -24);

        return h & 0x8000 ? -v : v;
}

/* a comes before b by C's own comparisons on the typed value (floats: NaNs aside). */
static int typed_compare(sortd_key_type t, const void *a, const void *b)
{
#define CMP(T)                                                                                     \
        do {                                                                                       \
                T x, y;                                                                            \
                memcpy(&x, a, sizeof(x));                                                          \
                memcpy(&y, b, sizeof(y));                                                          \
                return (x > y) - (x < y);                                                          \
        } while (0)
        switch (t) {
        case SORTD_KEY_U8:
                CMP(uint8_t);
        case SORTD_KEY_I8:
                CMP(int8_t);
        case SORTD_KEY_U16:
                CMP(uint16_t);
        case SORTD_KEY_I16:
                CMP(int16_t);
        case SORTD_KEY_U32:
                CMP(uint32_t);
        case SORTD_KEY_I32:
                CMP(int32_t);
        case SORTD_KEY_F32:
                CMP(float);
        case SORTD_KEY_U64:
                CMP(uint64_t);
        case SORTD_KEY_I64:
                CMP(int64_t);
        case SORTD_KEY_U128:
                CMP(unsigned __int128);
        case SORTD_KEY_I128:
                CMP(__int128);
        case SORTD_KEY_F16:
        case SORTD_KEY_BF16: {
                double x = half_value(t, a), y = half_value(t, b);
                return (x > y) - (x < y);
        }
        default:
                CMP(double);
        }
#undef CMP
}

/* -1 for a negative NaN, +1 for a positive NaN, 0 for any other value. */
static int nan_side(sortd_key_type t, const void *k)
{
        if (t == SORTD_KEY_F32) {
                float x;
                memcpy(&x, k, 4);
                return isnan(x) ? (signbit(x) ? -1 : 1) : 0;
        }
        if (t == SORTD_KEY_F64) {
                double x;
                memcpy(&x, k, 8);
                return isnan(x) ? (signbit(x) ? -1 : 1) : 0;
        }
        if (t == SORTD_KEY_F16 || t == SORTD_KEY_BF16)
                return isnan(half_value(t, k)) ? (((const uint8_t *)k)[1] & 0x80 ? -1 : 1) : 0;
        return 0;
}

/*
 * Full-width sorts of generated data, checked without the reference's comparator: ordered by
 * C's comparison (NaNs at the ends by sign), ties (equal bits) in input order, the permutation a
 * bijection that maps the input onto the output, and the values moved with it.
 */
START_TEST(properties_full_width)
{
        static const datagen_dist dists[] = {DATAGEN_UNIFORM, DATAGEN_SPECIAL, DATAGEN_FEW,
                                             DATAGEN_ENTROPY};
        const size_t n = 20011;
        sortd_key_type t = (sortd_key_type)_i;
        size_t kb = sortd_key_size(t);
        unsigned char *in = malloc(n * kb), *k = malloc(n * kb), *seen = malloc(n);
        uint64_t *perm = malloc(n * 8), *vals = malloc(n * 8);
        size_t ties = 0;

        ck_assert(in && k && seen && perm && vals);
        for (size_t d = 0; d < LEN(dists); d++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        sortd_sort_desc da = desc(t, SORTD_PAYLOAD_ARGSORT64, o, 0, 0);
                        sortd_sort_desc dv = desc(t, SORTD_PAYLOAD_VALUES64, o, 0, 0);
                        int sign = o == SORTD_ASCENDING ? 1 : -1;

                        datagen_fill(in, n, t, dists[d], 4, 1234 + d);
                        memcpy(k, in, n * kb);
                        ck_assert_int_eq(ref_sort(&da, k, perm, n), 0);
                        memset(seen, 0, n);
                        for (size_t i = 0; i < n; i++) {
                                if (perm[i] >= n || seen[perm[i]])
                                        ck_abort_msg("not a permutation at %zu", i);
                                seen[perm[i]] = 1;
                                if (memcmp(k + i * kb, in + perm[i] * kb, kb) != 0)
                                        ck_abort_msg("key %zu is not input key %" PRIu64, i,
                                                     perm[i]);
                        }
                        for (size_t i = 0; i + 1 < n; i++) {
                                const void *a = k + i * kb, *b = k + (i + 1) * kb;
                                int na = nan_side(t, a), nb = nan_side(t, b);

                                if (memcmp(a, b, kb) == 0) {
                                        ties++;
                                        if (perm[i] >= perm[i + 1])
                                                ck_abort_msg("tie at %zu out of input order", i);
                                } else if (na || nb) {
                                        /* -NaN first and +NaN last, reversed when descending */
                                        int ra = na ? na * 2 : 0, rb = nb ? nb * 2 : 0;
                                        if (ra * sign > rb * sign)
                                                ck_abort_msg("NaN out of place at %zu", i);
                                } else {
                                        int c = typed_compare(t, a, b) * sign;
                                        /* equal values, different bits: -0 and +0 */
                                        bool a_neg = ((const unsigned char *)a)[kb - 1] & 0x80;

                                        if (c > 0 || (c == 0 && a_neg != (o == SORTD_ASCENDING)))
                                                ck_abort_msg("out of order at %zu", i);
                                }
                        }
                        /* values64 moves what argsort64 says */
                        for (size_t i = 0; i < n; i++)
                                vals[i] = i * 0x9e3779b97f4a7c15ull;
                        memcpy(k, in, n * kb);
                        ck_assert_int_eq(ref_sort(&dv, k, vals, n), 0);
                        for (size_t i = 0; i < n; i++)
                                if (vals[i] != perm[i] * 0x9e3779b97f4a7c15ull)
                                        ck_abort_msg("value %zu did not move with its key", i);
                }
        ck_assert_uint_gt(ties, 100);
        free(in);
        free(k);
        free(seen);
        free(perm);
        free(vals);
}
END_TEST

/* With a bit range: ordered by ref_compare, ties in input order, other widths agree. */
START_TEST(properties_bit_range)
{
        const size_t n = 5003;
        sortd_key_type t = (sortd_key_type)_i;
        unsigned w = 8 * (unsigned)sortd_key_size(t);
        size_t kb = w / 8;
        unsigned char *in = malloc(n * kb), *k = malloc(n * kb);
        uint32_t *perm = malloc(n * 4);
        size_t ties = 0;

        ck_assert(in && k && perm);
        datagen_fill(in, n, t, DATAGEN_SPECIAL, 0, 99);
        /* 128-bit keys: fewer ranges, as many as 64-bit keys get, bit 64 crossed by many */
        for (unsigned b = 0; b<w; b += w> 64 ? 7 : 3)
                for (unsigned e = b + 1; e <= w; e += w > 64 ? 9 : 5)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                sortd_sort_desc d = desc(t, SORTD_PAYLOAD_ARGSORT32, o, b, e);

                                memcpy(k, in, n * kb);
                                ck_assert_int_eq(ref_sort(&d, k, perm, n), 0);
                                for (size_t i = 0; i + 1 < n; i++) {
                                        int c = ref_compare(&d, k, i, i + 1);

                                        if (c > 0)
                                                ck_abort_msg("[%u,%u): order at %zu", b, e, i);
                                        if (c == 0 && perm[i] >= perm[i + 1])
                                                ck_abort_msg("[%u,%u): tie at %zu", b, e, i);
                                        ties += c == 0;
                                }
                        }
        ck_assert_uint_gt(ties, 0);
        free(in);
        free(k);
        free(perm);
}
END_TEST

/* Segments by u32 offsets, one of them empty: each sorted alone, argsort indices from 0. */
START_TEST(segments_by_offsets)
{
        uint32_t k[] = {3, 1, 2, 5, 4, 9, 7, 7, 0};
        uint32_t v[9];
        const uint32_t off[] = {0, 3, 5, 5, 6, 9};
        const uint32_t want_k[] = {1, 2, 3, 4, 5, 9, 0, 7, 7};
        const uint32_t want_v[] = {1, 2, 0, 1, 0, 0, 2, 0, 1};
        sortd_segments seg = {.count = 5, .offsets = off, .offset_bytes = 4};
        sortd_sort_desc d = desc(SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0);

        ck_assert_int_eq(ref_sort_segments(&d, &seg, k, v, 9), 0);
        ck_assert_mem_eq(k, want_k, sizeof(k));
        ck_assert_mem_eq(v, want_v, sizeof(v));
}
END_TEST

/* Uniform rows, descending, values moved, ties in input order; u64 offsets give the same. */
START_TEST(segments_by_rows)
{
        const int16_t k0[] = {1, 3, 1, -2, -2, 5};
        const uint64_t v0[] = {10, 11, 12, 13, 14, 15};
        const int16_t want_k[] = {3, 1, 1, 5, -2, -2};
        const uint64_t want_v[] = {11, 10, 12, 15, 13, 14};
        const uint64_t off[] = {0, 3, 6};
        const sortd_segments forms[] = {
                {.count = 2, .row_len = 3},
                {.count = 2, .offsets = off, .offset_bytes = 8},
        };
        sortd_sort_desc d = desc(SORTD_KEY_I16, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0);

        for (size_t f = 0; f < LEN(forms); f++) {
                int16_t k[6];
                uint64_t v[6];

                memcpy(k, k0, sizeof(k));
                memcpy(v, v0, sizeof(v));
                ck_assert_int_eq(ref_sort_segments(&d, &forms[f], k, v, 6), 0);
                ck_assert_mem_eq(k, want_k, sizeof(k));
                ck_assert_mem_eq(v, want_v, sizeof(v));
        }
}
END_TEST

START_TEST(segments_rejected)
{
        uint32_t k[4] = {4, 3, 2, 1};
        const uint32_t k0[4] = {4, 3, 2, 1};
        const uint32_t short_off[] = {0, 3}, down[] = {0, 3, 2, 4};
        const sortd_segments bad[] = {
                {.count = 1, .offsets = short_off, .offset_bytes = 4}, /* ends at 3, not 4 */
                {.count = 3, .offsets = down, .offset_bytes = 4},
                {.count = 3, .row_len = 2},
        };
        sortd_sort_desc d = desc(SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0);

        for (size_t i = 0; i < LEN(bad); i++)
                ck_assert_int_eq(ref_sort_segments(&d, &bad[i], k, NULL, 4), -1);
        ck_assert_int_eq(ref_sort_segments(&d, NULL, k, NULL, 4), -1);
        ck_assert_mem_eq(k, k0, sizeof(k));
}
END_TEST

/* Top-2 of two segments both ways: ties go to the lower index; the inputs stay as they were. */
START_TEST(topk_ties_by_index)
{
        const uint8_t k[] = {5, 1, 5, 3, 1, 7, 7, 2};
        const uint32_t off[] = {0, 5, 8};
        const uint8_t want_ka[] = {1, 1, 2, 7}, want_kd[] = {5, 5, 7, 7};
        const uint32_t want_ia[] = {1, 4, 2, 0}, want_id[] = {0, 2, 0, 1};
        sortd_segments seg = {.count = 2, .offsets = off, .offset_bytes = 4};
        sortd_sort_desc d = desc(SORTD_KEY_U8, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0);
        uint8_t ok[4];
        uint32_t oi[4];

        ck_assert_int_eq(ref_topk(&d, &seg, 2, k, NULL, ok, oi, 8), 0);
        ck_assert_mem_eq(ok, want_ka, sizeof(ok));
        ck_assert_mem_eq(oi, want_ia, sizeof(oi));
        d.order = SORTD_DESCENDING;
        ck_assert_int_eq(ref_topk(&d, &seg, 2, k, NULL, ok, oi, 8), 0);
        ck_assert_mem_eq(ok, want_kd, sizeof(ok));
        ck_assert_mem_eq(oi, want_id, sizeof(oi));
}
END_TEST

/* k beyond a segment sorts it whole, packed after the others; values go with their keys; a
   bit range decides alone; k = 0 writes nothing; no segments is one of n keys. */
START_TEST(topk_layouts)
{
        const uint32_t k[] = {0x31, 0x12, 0x20, 0x05, 0x44};
        const uint64_t v[] = {100, 101, 102, 103, 104};
        const uint32_t off[] = {0, 1, 5};
        sortd_segments seg = {.count = 2, .offsets = off, .offset_bytes = 4};
        /* by bits [4, 8): 0x05 < 0x12 < 0x20 < 0x31 < 0x44 */
        const uint32_t want_k3[] = {0x31, 0x05, 0x12, 0x20};
        const uint64_t want_v3[] = {100, 103, 101, 102};
        /* by bits [0, 4), descending: 5, 4, 2, 1, 0 -> 0x05, 0x44, 0x12, 0x31, 0x20 */
        const uint32_t want_kw[] = {0x05, 0x44};
        const uint64_t want_vw[] = {103, 104};
        uint32_t ok[5];
        uint64_t ov[5];
        uint32_t sentinel = 0xdeadbeef;
        sortd_sort_desc d = desc(SORTD_KEY_U32, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 4, 8);

        ck_assert_int_eq(ref_topk(&d, &seg, 3, k, v, ok, ov, 5), 0);
        ck_assert_mem_eq(ok, want_k3, sizeof(want_k3));
        ck_assert_mem_eq(ov, want_v3, sizeof(want_v3));
        d = desc(SORTD_KEY_U32, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 4);
        ck_assert_int_eq(ref_topk(&d, NULL, 2, k, v, ok, ov, 5), 0);
        ck_assert_mem_eq(ok, want_kw, sizeof(want_kw));
        ck_assert_mem_eq(ov, want_vw, sizeof(want_vw));
        ck_assert_int_eq(ref_topk(&d, &seg, 0, k, v, &sentinel, NULL, 5), 0);
        ck_assert_uint_eq(sentinel, 0xdeadbeef);
        ck_assert_int_eq(ref_topk(&d, &seg, 2, k, NULL, ok, ov, 5), -1); /* values needed */
        ck_assert_int_eq(ref_topk(&d, &seg, 2, k, v, ok, ov, 4), -1);    /* offsets not n */
}
END_TEST

static Suite *reference_suite(void)
{
        Suite *s = suite_create("reference");
        TCase *tc = tcase_create("reference");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, unsigned_and_argsort);
        tcase_add_test(tc, signed_by_value);
        tcase_add_test(tc, descending_is_stable);
        tcase_add_test(tc, float_total_order);
        tcase_add_test(tc, bit_ranges);
        tcase_add_test(tc, rejects_what_the_engine_rejects);
        tcase_add_test(tc, segments_by_offsets);
        tcase_add_test(tc, segments_by_rows);
        tcase_add_test(tc, segments_rejected);
        tcase_add_test(tc, topk_ties_by_index);
        tcase_add_test(tc, topk_layouts);
        tcase_add_loop_test(tc, properties_full_width, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, properties_bit_range, 0, SORTD_KEY_TYPE_COUNT);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(reference_suite());
}
