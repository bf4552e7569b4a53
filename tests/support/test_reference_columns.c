/*
 * The oracle of keys of several columns (reference_sort_columns), by hand: mixed orders, ties
 * decided by later columns, full ties in input order, all eight columns; then checked against
 * ref_sort() where the two must agree (one column; two 64-bit words against one 128-bit key).
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "reference.h"
#include "suite.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
        uint64_t lo, hi;
} w128;

static sortd_column column(sortd_key_type t, sortd_order o, unsigned b, unsigned e)
{
        return (sortd_column){.key_type = t, .order = o, .begin_bit = b, .end_bit = e};
}

/*
 * ORDER BY a (u8) ASC, b (i32) DESC: a = 0 first; then a = 1 by b down (10, -3); then a = 2
 * by b down (7, 5, 5), the two 5s in input order. Values move; argsort leaves the columns.
 */
START_TEST(two_columns_mixed_orders)
{
        const uint8_t a0[] = {2, 1, 2, 1, 2, 0};
        const int32_t b0[] = {5, -3, 7, 10, 5, 0};
        const uint8_t want_a[] = {0, 1, 1, 2, 2, 2};
        const int32_t want_b[] = {0, 10, -3, 7, 5, 5};
        const uint64_t want_v[] = {105, 103, 101, 102, 100, 104};
        const uint32_t want_p[] = {5, 3, 1, 2, 0, 4};
        const sortd_column cols[] = {column(SORTD_KEY_U8, SORTD_ASCENDING, 0, 0),
                                     column(SORTD_KEY_I32, SORTD_DESCENDING, 0, 0)};
        uint8_t a[6];
        int32_t b[6];
        uint64_t v[6] = {100, 101, 102, 103, 104, 105};
        uint32_t p[6];
        void *const keys[] = {a, b};

        memcpy(a, a0, sizeof(a));
        memcpy(b, b0, sizeof(b));
        ck_assert_int_eq(reference_sort_columns(cols, 2, SORTD_PAYLOAD_VALUES64, keys, v, 6),
                         SORTD_OK);
        ck_assert_mem_eq(a, want_a, sizeof(a));
        ck_assert_mem_eq(b, want_b, sizeof(b));
        ck_assert_mem_eq(v, want_v, sizeof(v));
        memcpy(a, a0, sizeof(a));
        memcpy(b, b0, sizeof(b));
        ck_assert_int_eq(reference_sort_columns(cols, 2, SORTD_PAYLOAD_ARGSORT32, keys, p, 6),
                         SORTD_OK);
        ck_assert_mem_eq(p, want_p, sizeof(p));
        ck_assert_mem_eq(a, a0, sizeof(a));
        ck_assert_mem_eq(b, b0, sizeof(b));
}
END_TEST

/*
 * f16 DESC, u128 ASC, i8 ASC by bit 7 of its image (negatives first, the rest tie):
 * 1.0 rows 0 2 4 5: u128 4 (row 4) first, then rows 0 2 5 (u128 5) by the sign: 2 (-7), then
 * 0 and 5 tied (3 and 2 both non-negative) in input order; +0 (row 3); -0 rows 1 6, equal in
 * all three columns, in input order.
 */
START_TEST(three_columns_later_ones_break_ties)
{
        const uint16_t f[] = {0x3c00, 0x8000, 0x3c00, 0x0000, 0x3c00, 0x3c00, 0x8000};
        const w128 u[] = {{5, 0}, {0, 1}, {5, 0}, {0, 0}, {4, 0}, {5, 0}, {0, 1}};
        const int8_t s[] = {3, -1, -7, 1, 9, 2, -2};
        const uint64_t want[] = {4, 2, 0, 5, 3, 1, 6};
        const sortd_column cols[] = {column(SORTD_KEY_F16, SORTD_DESCENDING, 0, 0),
                                     column(SORTD_KEY_U128, SORTD_ASCENDING, 0, 0),
                                     column(SORTD_KEY_I8, SORTD_ASCENDING, 7, 8)};
        void *const keys[] = {(void *)f, (void *)u, (void *)s};
        uint64_t p[7];

        ck_assert_int_eq(reference_sort_columns(cols, 3, SORTD_PAYLOAD_ARGSORT64, keys, p, 7),
                         SORTD_OK);
        ck_assert_mem_eq(p, want, sizeof(p));
}
END_TEST

/*
 * Eight columns of eight types. Rows 8 and 9 hold each column's base value; row i < 8 differs
 * from them in column i only, by a value that column's order puts before the base for even i
 * and after it for odd i. So row i against any later row is decided by column i: the even rows
 * first in input order, then the base rows (a full tie, in input order), then the odd rows
 * from last to first.
 */
START_TEST(eight_columns)
{
        enum { N = 10 };
        uint8_t c0[N];
        int16_t c1[N];
        uint32_t c2[N]; /* f32 patterns */
        uint64_t c3[N];
        uint16_t c4[N]; /* bf16 patterns */
        w128 c5[N];
        uint32_t c6[N];
        int64_t c7[N];
        const sortd_column cols[8] = {
                column(SORTD_KEY_U8, SORTD_ASCENDING, 0, 0),
                column(SORTD_KEY_I16, SORTD_DESCENDING, 0, 0),
                column(SORTD_KEY_F32, SORTD_ASCENDING, 0, 0),
                column(SORTD_KEY_U64, SORTD_DESCENDING, 0, 0),
                column(SORTD_KEY_BF16, SORTD_ASCENDING, 0, 0),
                column(SORTD_KEY_I128, SORTD_DESCENDING, 0, 0),
                column(SORTD_KEY_U32, SORTD_ASCENDING, 0, 4),
                column(SORTD_KEY_I64, SORTD_ASCENDING, 0, 0),
        };
        void *const keys[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
        const uint32_t want[N] = {0, 2, 4, 6, 8, 9, 7, 5, 3, 1};
        uint32_t p[N];

        for (size_t i = 0; i < N; i++) {
                c0[i] = i == 0 ? 4 : 5;           /* 4 < 5 */
                c1[i] = i == 1 ? -1 : 0;          /* descending: 0 before -1 */
                c2[i] = i == 2 ? 0x80000000 : 0;  /* -0.0 < +0.0 */
                c3[i] = i == 3 ? 0 : 1;           /* descending: 1 before 0 */
                c4[i] = i == 4 ? 0xffc0 : 0x3f80; /* -NaN < 1.0 */
                c5[i] = i == 5 ? (w128){UINT64_MAX, UINT64_MAX} : (w128){0, 0}; /* 0 > -1 */
                c6[i] = i == 6 ? 0xf0 : 0x01; /* bits [0, 4): 0 < 1 */
                c7[i] = i == 7 ? 0 : -1;      /* -1 < 0 */
        }
        ck_assert_int_eq(reference_sort_columns(cols, 8, SORTD_PAYLOAD_ARGSORT32, keys, p, N),
                         SORTD_OK);
        ck_assert_mem_eq(p, want, sizeof(p));
        /* reordered in place, every column follows */
        ck_assert_int_eq(reference_sort_columns(cols, 8, SORTD_PAYLOAD_NONE, keys, NULL, N),
                         SORTD_OK);
        ck_assert_uint_eq(c0[0], 4);
        ck_assert_int_eq(c1[N - 1], -1);
        ck_assert_uint_eq(c2[1], 0x80000000);
        ck_assert_uint_eq(c3[N - 2], 0);
        ck_assert_uint_eq(c4[2], 0xffc0);
        ck_assert_uint_eq(c5[N - 3].hi, UINT64_MAX);
        ck_assert_uint_eq(c6[3], 0xf0);
        ck_assert_int_eq(c7[N - 4], 0);
        for (size_t i = 4; i < 6; i++)
                ck_assert(c0[i] == 5 && c1[i] == 0 && c2[i] == 0 && c3[i] == 1 && c4[i] == 0x3f80 &&
                          c5[i].hi == 0 && c6[i] == 1 && c7[i] == -1);
}
END_TEST

START_TEST(refused)
{
        uint32_t k[3] = {3, 2, 1}, v[3] = {7, 7, 7};
        const uint32_t k0[3] = {3, 2, 1}, v0[3] = {7, 7, 7};
        void *const keys[9] = {k, k, k, k, k, k, k, k, k};
        void *const null_key[2] = {k, NULL};
        sortd_column c[9];
        const sortd_column bad[] = {
                column(SORTD_KEY_TYPE_COUNT, SORTD_ASCENDING, 0, 0),
                column(SORTD_KEY_U32, SORTD_ORDER_COUNT, 0, 0),
                column(SORTD_KEY_U32, SORTD_ASCENDING, 0, 33),
                column(SORTD_KEY_U32, SORTD_ASCENDING, 4, 4),
        };

        for (size_t i = 0; i < 9; i++)
                c[i] = column(SORTD_KEY_U32, SORTD_ASCENDING, 0, 0);
        ck_assert_int_eq(reference_sort_columns(c, 0, SORTD_PAYLOAD_NONE, keys, NULL, 3),
                         SORTD_E_INVAL);
        ck_assert_int_eq(reference_sort_columns(c, 9, SORTD_PAYLOAD_NONE, keys, NULL, 3),
                         SORTD_E_INVAL);
        ck_assert_int_eq(reference_sort_columns(NULL, 1, SORTD_PAYLOAD_NONE, keys, NULL, 3),
                         SORTD_E_INVAL);
        ck_assert_int_eq(reference_sort_columns(c, 1, SORTD_PAYLOAD_COUNT, keys, v, 3),
                         SORTD_E_INVAL);
        ck_assert_int_eq(reference_sort_columns(c, 1, SORTD_PAYLOAD_VALUES32, keys, NULL, 3),
                         SORTD_E_INVAL);
        ck_assert_int_eq(reference_sort_columns(c, 1, SORTD_PAYLOAD_NONE, NULL, NULL, 3),
                         SORTD_E_INVAL);
        ck_assert_int_eq(reference_sort_columns(c, 2, SORTD_PAYLOAD_NONE, null_key, NULL, 3),
                         SORTD_E_INVAL);
        for (size_t i = 0; i < LEN(bad); i++) {
                c[1] = bad[i];
                ck_assert_int_eq(reference_sort_columns(c, 2, SORTD_PAYLOAD_VALUES32, keys, v, 3),
                                 SORTD_E_INVAL);
        }
        ck_assert_mem_eq(k, k0, sizeof(k));
        ck_assert_mem_eq(v, v0, sizeof(v));
        ck_assert_int_eq(reference_sort_columns(c, 1, SORTD_PAYLOAD_VALUES32, NULL, NULL, 0),
                         SORTD_OK);
}
END_TEST

/* One column sorts as ref_sort() does, for every key type, with and without a bit range. */
START_TEST(one_column_is_ref_sort)
{
        enum { N = 1500 };
        sortd_key_type t = (sortd_key_type)_i;
        size_t kb = sortd_key_size(t);
        unsigned w = 8 * (unsigned)kb;
        const unsigned ranges[][2] = {{0, 0}, {1, w - 1}, {w / 2, 0}};
        unsigned char *in = malloc(N * kb), *k = malloc(N * kb);
        uint64_t *p = malloc(N * 8), *q = malloc(N * 8);

        ck_assert(in && k && p && q);
        datagen_fill(in, N, t, DATAGEN_SPECIAL, 0, 21);
        for (size_t r = 0; r < LEN(ranges); r++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        sortd_column c = column(t, o, ranges[r][0], ranges[r][1]);
                        sortd_sort_desc d = {t, SORTD_PAYLOAD_ARGSORT64, o, ranges[r][0],
                                             ranges[r][1]};
                        void *keys[1] = {in};

                        memcpy(k, in, N * kb);
                        ck_assert_int_eq(ref_sort(&d, k, p, N), 0);
                        ck_assert_int_eq(
                                reference_sort_columns(&c, 1, SORTD_PAYLOAD_ARGSORT64, keys, q, N),
                                SORTD_OK);
                        ck_assert_msg(memcmp(p, q, N * 8) == 0, "%s [%u,%u) %d",
                                      sortd_key_type_name(t), ranges[r][0], ranges[r][1], o);
                }
        free(in);
        free(k);
        free(p);
        free(q);
}
END_TEST

/*
 * Two 64-bit columns (high word: u64 or i64, few values for ties; low word: u64) sort as the
 * 128-bit keys they make, both ways; the words reordered as the keys are.
 */
START_TEST(two_words_are_one_128_bit_key)
{
        enum { N = 3000 };
        bool is_signed = _i;
        static uint64_t hi[N], lo[N];
        static w128 k[N];
        static uint64_t p[N];

        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                const sortd_column cols[] = {
                        column(is_signed ? SORTD_KEY_I64 : SORTD_KEY_U64, o, 0, 0),
                        column(SORTD_KEY_U64, o, 0, 0)};
                sortd_sort_desc d = {is_signed ? SORTD_KEY_I128 : SORTD_KEY_U128,
                                     SORTD_PAYLOAD_ARGSORT64, o, 0, 0};
                void *const keys[] = {hi, lo};

                datagen_fill(hi, N, SORTD_KEY_U64, DATAGEN_FEW, 40, 5 + o);
                datagen_fill(lo, N, SORTD_KEY_U64, DATAGEN_FEW, 60, 6 + o);
                for (size_t i = 0; i < N; i++)
                        k[i] = (w128){lo[i], hi[i]};
                ck_assert_int_eq(ref_sort(&d, k, p, N), 0);
                ck_assert_int_eq(reference_sort_columns(cols, 2, SORTD_PAYLOAD_NONE, keys, NULL, N),
                                 SORTD_OK);
                for (size_t i = 0; i < N; i++)
                        if (k[i].lo != lo[i] || k[i].hi != hi[i])
                                ck_abort_msg("%s %d: row %zu", is_signed ? "i128" : "u128", o, i);
        }
}
END_TEST

static Suite *reference_columns_suite(void)
{
        Suite *s = suite_create("reference_columns");
        TCase *tc = tcase_create("reference_columns");

        tcase_add_test(tc, two_columns_mixed_orders);
        tcase_add_test(tc, three_columns_later_ones_break_ties);
        tcase_add_test(tc, eight_columns);
        tcase_add_test(tc, refused);
        tcase_add_loop_test(tc, one_column_is_ref_sort, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_loop_test(tc, two_words_are_one_128_bit_key, 0, 2);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(reference_columns_suite());
}
