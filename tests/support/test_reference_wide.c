/*
 * The oracle's orders of the newer key types, by hand: f16 and bf16 patterns in IEEE 754
 * totalOrder, u128 and i128 keys that differ in one word only, i128 negatives, and bit ranges
 * over the 128-bit image that cross bit 64.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "reference.h"
#include "suite.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A 128-bit key as its two words, the low one first (its little-endian layout). */
typedef struct {
        uint64_t lo, hi;
} w128;

static sortd_sort_desc desc(sortd_key_type t, sortd_payload p, sortd_order o, unsigned b,
                            unsigned e)
{
        return (sortd_sort_desc){
                .key_type = t, .payload = p, .order = o, .begin_bit = b, .end_bit = e};
}

/*
 * want holds n 16-bit patterns in ascending totalOrder, all distinct: shuffled (11 is prime to
 * n), sorted both ways, they come back in that order and its reverse.
 */
static void expect_half_order(sortd_key_type t, const uint16_t *want, size_t n)
{
        uint16_t k[64];

        ck_assert(n <= LEN(k) && n % 11 != 0);
        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                sortd_sort_desc d = desc(t, SORTD_PAYLOAD_NONE, o, 0, 0);

                for (size_t i = 0; i < n; i++)
                        k[i] = want[(i * 11 + 3) % n];
                ck_assert_int_eq(ref_sort(&d, k, NULL, n), 0);
                for (size_t i = 0; i < n; i++)
                        ck_assert_msg(k[i] == want[o ? n - 1 - i : i], "%s %s: 0x%04x at %zu",
                                      sortd_key_type_name(t), o ? "descending" : "ascending", k[i],
                                      i);
        }
}

/* -NaN < -inf < -1 < -denormal < -0 < +0 < +denormal < 1 < inf < NaN, NaNs by payload. */
START_TEST(f16_total_order)
{
        static const uint16_t want[] = {
                0xffff, 0xfe00,         /* -qNaN, the largest payload first */
                0xfc01,                 /* -sNaN */
                0xfc00, 0xfbff,         /* -inf, -65504 */
                0xbc00, 0x8400,         /* -1, -smallest normal */
                0x83ff, 0x8001,         /* -denormals */
                0x8000, 0x0000,         /* -0, +0 */
                0x0001, 0x03ff, 0x0400, /* +denormals, smallest normal */
                0x3c00, 0x3c01, 0x7bff, /* 1, the next one up, 65504 */
                0x7c00, 0x7c01, 0x7e00, /* +inf, +sNaN, +qNaN */
                0x7fff,
        };

        expect_half_order(SORTD_KEY_F16, want, LEN(want));
}
END_TEST

/* bf16: the same classes, with bf16's 8-bit exponent: 1.0 is 0x3f80, not f16's 0x3c00. */
START_TEST(bf16_total_order)
{
        static const uint16_t want[] = {
                0xffff, 0xffc0, 0xff81, /* -NaNs */
                0xff80, 0xff7f,         /* -inf, -largest finite */
                0xbf80, 0x8080,         /* -1, -smallest normal */
                0x807f, 0x8001, 0x8000, /* -denormals, -0 */
                0x0000, 0x0001, 0x007f, /* +0, +denormals */
                0x0080, 0x3c00, 0x3f80, /* smallest normal, 2^-7, 1 */
                0x7f7f, 0x7f80, 0x7f81, /* largest finite, +inf, +sNaN */
                0x7fc0, 0x7fff,         /* +qNaN */
        };

        expect_half_order(SORTD_KEY_BF16, want, LEN(want));
}
END_TEST

/* bf16 is the top half of an f32: its order is f32's on the pattern shifted up 16 bits. */
START_TEST(bf16_is_f32_top_half)
{
        enum { N = 3000 };
        static uint16_t h[N];
        static uint32_t f[N];

        datagen_fill(h, N, SORTD_KEY_BF16, DATAGEN_SPECIAL, 0, 11);
        for (size_t i = 0; i < N; i++)
                f[i] = (uint32_t)h[i] << 16;
        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                sortd_sort_desc dh = desc(SORTD_KEY_BF16, SORTD_PAYLOAD_NONE, o, 0, 0);
                sortd_sort_desc df = desc(SORTD_KEY_F32, SORTD_PAYLOAD_NONE, o, 0, 0);

                for (size_t i = 1; i < N; i++)
                        ck_assert_int_eq(ref_compare(&dh, h, i - 1, i),
                                         ref_compare(&df, f, i - 1, i));
        }
}
END_TEST

/*
 * u128 keys equal in one word and not the other: {5,1} {3,1} {0,0} {max,0} {0,2} {3,1}, so
 * 0 < 2^64 - 1 < 2^64 + 3 = 2^64 + 3 < 2^64 + 5 < 2^65. Stable both ways.
 */
START_TEST(u128_words)
{
        const w128 in[] = {{5, 1}, {3, 1}, {0, 0}, {UINT64_MAX, 0}, {0, 2}, {3, 1}};
        const uint64_t want_a[] = {2, 3, 1, 5, 0, 4}, want_d[] = {4, 0, 1, 5, 3, 2};
        w128 k[6];
        uint64_t perm[6];
        sortd_sort_desc d = desc(SORTD_KEY_U128, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 0, 0);

        memcpy(k, in, sizeof(k));
        ck_assert_int_eq(ref_sort(&d, k, perm, 6), 0);
        ck_assert_mem_eq(perm, want_a, sizeof(perm));
        for (size_t i = 0; i < 6; i++)
                ck_assert_mem_eq(&k[i], &in[want_a[i]], sizeof(w128));
        memcpy(k, in, sizeof(k));
        d.order = SORTD_DESCENDING;
        ck_assert_int_eq(ref_sort(&d, k, perm, 6), 0);
        ck_assert_mem_eq(perm, want_d, sizeof(perm));
}
END_TEST

/*
 * i128: min < -2^64 - 1 < -2^64 < -1 < 0 < 1 < max, which u128 orders 0 < 1 < max < min < ...
 * < -1 instead; values move with their keys.
 */
START_TEST(i128_negatives)
{
        const uint64_t a = UINT64_MAX, s = (uint64_t)1 << 63;
        /* -2^64, -1, min, max, 1, -2^64 - 1, 0 */
        const w128 in[] = {{0, a}, {a, a}, {0, s}, {a, s - 1}, {1, 0}, {a, a - 1}, {0, 0}};
        const uint32_t want_i[] = {2, 5, 0, 1, 6, 4, 3}, want_u[] = {6, 4, 3, 2, 5, 0, 1};
        w128 k[7];
        uint32_t v[7];

        for (int signedness = 0; signedness < 2; signedness++) {
                sortd_sort_desc d = desc(signedness ? SORTD_KEY_I128 : SORTD_KEY_U128,
                                         SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0);
                const uint32_t *want = signedness ? want_i : want_u;

                memcpy(k, in, sizeof(k));
                for (uint32_t i = 0; i < 7; i++)
                        v[i] = i;
                ck_assert_int_eq(ref_sort(&d, k, v, 7), 0);
                ck_assert_mem_eq(v, want, sizeof(v));
                for (size_t i = 0; i < 7; i++)
                        ck_assert_mem_eq(&k[i], &in[want[i]], sizeof(w128));
        }
}
END_TEST

/* Sorts in by d into perm and checks it against want. */
static void expect_perm(const sortd_sort_desc *d, const w128 *in, size_t n, const uint64_t *want)
{
        w128 k[8];
        uint64_t perm[8];

        ck_assert(n <= 8);
        memcpy(k, in, n * sizeof(w128));
        ck_assert_int_eq(ref_sort(d, k, perm, n), 0);
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(perm[i] == want[i], "%s [%u,%u) %s: %llu at %zu",
                              sortd_key_type_name(d->key_type), d->begin_bit, d->end_bit,
                              d->order ? "descending" : "ascending", (unsigned long long)perm[i],
                              i);
}

/*
 * u128 by bits [60, 68): the low word's top nibble below the high word's bottom one, the bits
 * outside ignored. {F<<60, 0} is 0x0f, {0, 1} 0x10, {1<<60, 0xf0} 0x01, {0x0fff..., 3} 0x30,
 * {2<<60, 0x10} 0x02.
 */
START_TEST(u128_range_across_bit_64)
{
        const w128 in[] = {{0xfull << 60, 0},
                           {0, 1},
                           {1ull << 60, 0xf0},
                           {UINT64_MAX >> 4, 3},
                           {2ull << 60, 0x10}};
        const uint64_t want_a[] = {2, 4, 0, 1, 3}, want_d[] = {3, 1, 0, 4, 2};
        /* [64, 128): the high word alone, ties in input order; [0, 64): the low word alone */
        const uint64_t want_hi[] = {0, 1, 3, 4, 2}, want_lo[] = {1, 3, 2, 4, 0};
        sortd_sort_desc d = desc(SORTD_KEY_U128, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 60, 68);

        expect_perm(&d, in, 5, want_a);
        d.order = SORTD_DESCENDING;
        expect_perm(&d, in, 5, want_d);
        d = desc(SORTD_KEY_U128, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 64, 0);
        expect_perm(&d, in, 5, want_hi);
        d = desc(SORTD_KEY_U128, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 0, 64);
        expect_perm(&d, in, 5, want_lo);
}
END_TEST

/*
 * i128 ranges go over the image, bit 127 flipped: by [120, 128) min (0x00) < -1 (0x7f) <
 * 2^120 (0x81) < 0x7f << 120 (0xff); by [127, 128) negatives before the rest, each in input
 * order; by [63, 65) bits 63 and 64, which the flip leaves alone.
 */
START_TEST(i128_ranges)
{
        const uint64_t s = (uint64_t)1 << 63;
        const w128 in[] = {{0, 0x7full << 56}, {5, s}, {UINT64_MAX, UINT64_MAX}, {0, 1ull << 56}};
        const uint64_t want_top[] = {1, 2, 3, 0}, want_sign[] = {1, 2, 0, 3};
        /* [63, 65): bit 63 of the low word, bit 0 of the high: 0b00, 0b00, 0b11, 0b00 */
        const uint64_t want_mid[] = {2, 0, 1, 3};
        sortd_sort_desc d = desc(SORTD_KEY_I128, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 120, 0);

        expect_perm(&d, in, 4, want_top);
        d.begin_bit = 127;
        expect_perm(&d, in, 4, want_sign);
        d = desc(SORTD_KEY_I128, SORTD_PAYLOAD_ARGSORT64, SORTD_DESCENDING, 63, 65);
        expect_perm(&d, in, 4, want_mid);
}
END_TEST

START_TEST(wide_ranges_refused)
{
        w128 k[2] = {{2, 0}, {1, 0}};
        uint64_t v[2] = {7, 7};
        const sortd_sort_desc bad[] = {
                desc(SORTD_KEY_U128, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 0, 129),
                desc(SORTD_KEY_I128, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 128, 0),
                desc(SORTD_KEY_F16, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 0, 17),
                desc(SORTD_KEY_BF16, SORTD_PAYLOAD_VALUES64, SORTD_ASCENDING, 16, 0),
        };

        for (size_t i = 0; i < LEN(bad); i++)
                ck_assert_int_eq(ref_sort(&bad[i], k, v, 2), -1);
        ck_assert_uint_eq(k[0].lo, 2);
        ck_assert_uint_eq(v[0], 7);
}
END_TEST

static Suite *reference_wide_suite(void)
{
        Suite *s = suite_create("reference_wide");
        TCase *tc = tcase_create("reference_wide");

        tcase_add_test(tc, f16_total_order);
        tcase_add_test(tc, bf16_total_order);
        tcase_add_test(tc, bf16_is_f32_top_half);
        tcase_add_test(tc, u128_words);
        tcase_add_test(tc, i128_negatives);
        tcase_add_test(tc, u128_range_across_bit_64);
        tcase_add_test(tc, i128_ranges);
        tcase_add_test(tc, wide_ranges_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(reference_wide_suite());
}
