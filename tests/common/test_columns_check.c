/* sortd_columns_check() and sortd_columns_offset(): the checks of keys of several columns and
   their layout in one buffer, with the numbers worked out by hand. */
#include <check.h>
#include <string.h>

#include "sortd_types.h"
#include "suite.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The largest n the layout can count: ((2^64 - 1) / 8 - 15) / 16 = 2^57 - 1. */
#define N_MAX (((uint64_t)1 << 57) - 1)

static sortd_column col(sortd_key_type t, sortd_order o, unsigned b, unsigned e)
{
        return (sortd_column){.key_type = t, .order = o, .begin_bit = b, .end_bit = e};
}

typedef struct columns_case {
        const char *name;
        unsigned count;
        int fault_at; /* which column is made faulty (-1: none) */
        sortd_column fault;
        sortd_payload payload;
        uint64_t n;
        const char *why; /* a part of the message, NULL for SORTD_OK */
} columns_case;

/* A column that passes the check (clang-format would spread the braces over four lines). */
/* clang-format off */
#define FINE {SORTD_KEY_U8, SORTD_ASCENDING, 0, 0}
/* clang-format on */

static const columns_case cases[] = {
        {"one column", 1, -1, FINE, SORTD_PAYLOAD_NONE, 10, NULL},
        {"eight columns", 8, -1, FINE, SORTD_PAYLOAD_ARGSORT32, 10, NULL},
        {"no rows", 3, -1, FINE, SORTD_PAYLOAD_VALUES64, 0, NULL},
        {"the most rows", 8, -1, FINE, SORTD_PAYLOAD_ARGSORT64, N_MAX, NULL},
        {"no columns", 0, -1, FINE, SORTD_PAYLOAD_NONE, 10, "0 key columns; 1 to 8 are allowed"},
        {"nine columns", 9, -1, FINE, SORTD_PAYLOAD_NONE, 10, "9 key columns; 1 to 8"},
        {"too many rows", 2, -1, FINE, SORTD_PAYLOAD_ARGSORT64, N_MAX + 1,
         "n = 144115188075855872 rows is too many to lay out"},
        {"no rows fit 2^64", 1, -1, FINE, SORTD_PAYLOAD_NONE, UINT64_MAX, "is too many to lay out"},
        {"unknown key type",
         4,
         2,
         {SORTD_KEY_TYPE_COUNT, SORTD_ASCENDING, 0, 0},
         SORTD_PAYLOAD_NONE,
         10,
         "column 2: unknown key type 14"},
        {"bad order",
         2,
         1,
         {SORTD_KEY_I32, SORTD_ORDER_COUNT, 0, 0},
         SORTD_PAYLOAD_NONE,
         10,
         "column 1: unknown order 2"},
        {"u128 range past the width",
         5,
         3,
         {SORTD_KEY_U128, SORTD_DESCENDING, 0, 129},
         SORTD_PAYLOAD_NONE,
         10,
         "column 3: bad bit range [0, 129) for a 128-bit key"},
        {"f16 range past the width",
         8,
         7,
         {SORTD_KEY_F16, SORTD_ASCENDING, 16, 0},
         SORTD_PAYLOAD_NONE,
         10,
         "column 7: bad bit range [16, 0) for a 16-bit key"},
        {"unknown payload", 2, -1, FINE, SORTD_PAYLOAD_COUNT, 10, "unknown payload 5"},
        {"argsort32 past 2^32 rows", 2, -1, FINE, SORTD_PAYLOAD_ARGSORT32, ((uint64_t)1 << 32) + 1,
         "too large for u32 argsort indices"},
};

#undef FINE

START_TEST(check_table)
{
        const columns_case *c = &cases[_i];
        sortd_column cols[SORTD_MAX_COLUMNS + 1];
        char why[160] = "untouched";
        sortd_status s;

        for (unsigned i = 0; i < LEN(cols); i++) /* fine columns of every width */
                cols[i] = col((sortd_key_type)(i * 5 % SORTD_KEY_TYPE_COUNT), (sortd_order)(i % 2),
                              0, 0);
        if (c->fault_at >= 0)
                cols[c->fault_at] = c->fault;
        s = sortd_columns_check(cols, c->count, c->payload, c->n, why, sizeof(why));
        if (!c->why) {
                ck_assert_msg(s == SORTD_OK, "%s: %s", c->name, why);
                ck_assert_str_eq(why, "untouched"); /* success writes no message */
                return;
        }
        ck_assert_msg(s == SORTD_E_INVAL, "%s: got %s", c->name, sortd_strerror(s));
        ck_assert_msg(strstr(why, c->why), "%s: '%s' not in '%s'", c->name, c->why, why);
}
END_TEST

START_TEST(check_null)
{
        char why[8];

        ck_assert_int_eq(sortd_columns_check(NULL, 1, SORTD_PAYLOAD_NONE, 1, why, sizeof(why)),
                         SORTD_E_INVAL);
        ck_assert_str_eq(why, "NULL co"); /* truncated, terminated */
        ck_assert_int_eq(sortd_columns_check(NULL, 1, SORTD_PAYLOAD_NONE, 1, NULL, 0),
                         SORTD_E_INVAL);
}
END_TEST

/*
 * u8, u128, f16, i32 columns: each starts at the previous one's end rounded up to 16 bytes.
 * n = 5: 5 -> 16; 16 + 80 = 96; 96 + 10 = 106 -> 112; 112 + 20 = 132 -> 144, the total.
 * n = 1: 16, 32, 48, 64. n = 0: all 0.
 */
START_TEST(offsets)
{
        const sortd_column c[] = {
                col(SORTD_KEY_U8, SORTD_ASCENDING, 0, 0),
                col(SORTD_KEY_U128, SORTD_DESCENDING, 0, 0),
                col(SORTD_KEY_F16, SORTD_ASCENDING, 0, 0),
                col(SORTD_KEY_I32, SORTD_ASCENDING, 0, 0),
        };
        const uint64_t want5[] = {0, 16, 96, 112, 144}, want1[] = {0, 16, 32, 48, 64};

        for (unsigned j = 0; j <= 4; j++) {
                ck_assert_uint_eq(sortd_columns_offset(c, 4, 5, j), want5[j]);
                ck_assert_uint_eq(sortd_columns_offset(c, 4, 1, j), want1[j]);
                ck_assert_uint_eq(sortd_columns_offset(c, 4, 0, j), 0);
        }
        /* past the count: the buffer's size still */
        ck_assert_uint_eq(sortd_columns_offset(c, 4, 5, 7), 144);
        /* fewer columns: the prefix of the same layout */
        ck_assert_uint_eq(sortd_columns_offset(c, 2, 5, 2), 96);
}
END_TEST

/*
 * The widest buffer check allows: eight u128 columns of N_MAX rows, each N_MAX x 16 =
 * 2^61 - 16 bytes (a multiple of 16), 2^64 - 128 in all: no wrap.
 */
START_TEST(offsets_at_the_limit)
{
        sortd_column c[SORTD_MAX_COLUMNS];

        for (unsigned i = 0; i < SORTD_MAX_COLUMNS; i++)
                c[i] = col(SORTD_KEY_U128, SORTD_ASCENDING, 0, 0);
        ck_assert_int_eq(
                sortd_columns_check(c, SORTD_MAX_COLUMNS, SORTD_PAYLOAD_NONE, N_MAX, NULL, 0),
                SORTD_OK);
        ck_assert_uint_eq(sortd_columns_offset(c, SORTD_MAX_COLUMNS, N_MAX, 1),
                          ((uint64_t)1 << 61) - 16);
        ck_assert_uint_eq(sortd_columns_offset(c, SORTD_MAX_COLUMNS, N_MAX, SORTD_MAX_COLUMNS),
                          UINT64_MAX - 127);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("columns");
        TCase *tc = tcase_create("columns");

        tcase_add_loop_test(tc, check_table, 0, (int)LEN(cases));
        tcase_add_test(tc, check_null);
        tcase_add_test(tc, offsets);
        tcase_add_test(tc, offsets_at_the_limit);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
