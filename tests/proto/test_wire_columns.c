/*
 * proto/wire_columns.c on its own: a Sort by key columns, checked and sized as both sides
 * check it, and each fault named.
 */
#include <check.h>
#include <string.h>

#include "suite.h"
#include "wire.h"

/* A message of count columns whose pointers point into cols. */
typedef struct msg {
        Sortd__Wire__Sort s;
        Sortd__Wire__Column col[SORTD_MAX_COLUMNS + 1];
        Sortd__Wire__Column *ptr[SORTD_MAX_COLUMNS + 1];
        Sortd__Wire__InlineData inl;
} msg;

/* Columns u8 descending, i128, f16 (all ascending but the first), 10 rows with 8-byte values. */
static void good(msg *m, unsigned count)
{
        static const Sortd__Wire__KeyType types[] = {SORTD__WIRE__KEY_TYPE__KEY_U8,
                                                     SORTD__WIRE__KEY_TYPE__KEY_I128,
                                                     SORTD__WIRE__KEY_TYPE__KEY_F16};

        m->s = (Sortd__Wire__Sort)SORTD__WIRE__SORT__INIT;
        m->inl = (Sortd__Wire__InlineData)SORTD__WIRE__INLINE_DATA__INIT;
        for (unsigned i = 0; i < count; i++) {
                m->col[i] = (Sortd__Wire__Column)SORTD__WIRE__COLUMN__INIT;
                m->col[i].key_type = types[i % 3];
                m->col[i].order =
                        i == 0 ? SORTD__WIRE__ORDER__DESCENDING : SORTD__WIRE__ORDER__ASCENDING;
                m->ptr[i] = &m->col[i];
        }
        m->s.n_columns = count;
        m->s.columns = m->ptr;
        m->s.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64;
        m->s.n = 10;
        m->s.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        m->s.inline_data = &m->inl;
}

static sortd_status check(const msg *m, char *why, size_t len)
{
        sortd__wire_columns c;
        sortd__wire_sizes z;
        sortd_payload p;

        return sortd__wire_columns_check(&m->s, &c, &p, &z, why, len);
}

/* The check refuses m with a message that contains want. */
static void refused(const msg *m, const char *want)
{
        char why[256] = "";

        ck_assert_int_eq(check(m, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_msg(strstr(why, want), "'%s' does not say '%s'", why, want);
}

START_TEST(good_columns_convert_and_size)
{
        msg m;
        sortd__wire_columns c;
        sortd__wire_sizes z;
        sortd_payload p;
        char why[256];

        good(&m, 3);
        m.col[2].begin_bit = 2;
        m.col[2].end_bit = 14;
        ck_assert_int_eq(sortd__wire_columns_check(&m.s, &c, &p, &z, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(c.count, 3);
        ck_assert_int_eq(c.col[0].key_type, SORTD_KEY_U8);
        ck_assert_int_eq(c.col[0].order, SORTD_DESCENDING);
        ck_assert_int_eq(c.col[1].key_type, SORTD_KEY_I128);
        ck_assert_int_eq(c.col[2].key_type, SORTD_KEY_F16);
        ck_assert_uint_eq(c.col[2].begin_bit, 2);
        ck_assert_uint_eq(c.col[2].end_bit, 14);
        ck_assert_int_eq(p, SORTD_PAYLOAD_VALUES64);
        /* 10 u8 (16 with padding), 160 of i128, 20 of f16 (32 with padding) */
        ck_assert_uint_eq(z.keys_bytes, 16 + 160 + 32);
        ck_assert_uint_eq(z.vals_bytes, 80);
        ck_assert_uint_eq(z.request_len, 208 + 80);
        ck_assert_uint_eq(z.reply_len, 208 + 80);

        /* an argsort sends the columns alone and gets the permutation alone back */
        m.s.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32;
        ck_assert_int_eq(sortd__wire_columns_check(&m.s, &c, &p, &z, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(z.request_len, 208);
        ck_assert_uint_eq(z.reply_len, 40);
        /* a region sort: where the buffer lies is the daemon's to find */
        m.s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        ck_assert_int_eq(sortd__wire_columns_check(&m.s, &c, &p, &z, why, sizeof(why)), SORTD_OK);
        good(&m, SORTD_MAX_COLUMNS);
        ck_assert_int_eq(sortd__wire_columns_check(&m.s, &c, &p, &z, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(c.count, SORTD_MAX_COLUMNS);
}
END_TEST

START_TEST(faults_are_named)
{
        msg m;

        good(&m, SORTD_MAX_COLUMNS + 1);
        refused(&m, "9 key columns; 1 to 8");
        good(&m, 2);
        m.col[1].key_type = SORTD__WIRE__KEY_TYPE__KEY_I128 + 1;
        refused(&m, "column 1: unknown key type 15");
        good(&m, 2);
        m.col[1].key_type = 0;
        refused(&m, "column 1: unknown key type 0");
        good(&m, 2);
        m.col[0].order = 2;
        refused(&m, "column 0: unknown order 2");
        good(&m, 2);
        m.col[0].end_bit = 9; /* past a u8 */
        refused(&m, "column 0:");
        good(&m, 2);
        m.col[1].begin_bit = 128; /* an i128's bits are [0, 128) */
        refused(&m, "column 1:");
        good(&m, 2);
        m.s.key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
        refused(&m, "key_type 5 is set beside 2 key columns");
        good(&m, 2);
        m.s.order = SORTD__WIRE__ORDER__DESCENDING;
        refused(&m, "each column's order and bit range");
        good(&m, 2);
        m.s.end_bit = 8;
        refused(&m, "each column's order and bit range");
        good(&m, 2);
        Sortd__Wire__Segments seg = SORTD__WIRE__SEGMENTS__INIT;
        m.s.segments = &seg;
        refused(&m, "takes no segments");
        good(&m, 2);
        m.s.k = 3;
        refused(&m, "takes no top-k (k = 3)");
        good(&m, 2);
        m.s.payload = 0;
        refused(&m, "unknown payload kind 0");
        good(&m, 2);
        m.s.data_case = SORTD__WIRE__SORT__DATA__NOT_SET;
        refused(&m, "no data location");
}
END_TEST

START_TEST(too_many_rows)
{
        msg m;

        good(&m, 2);
        m.s.n = UINT64_MAX / 4;
        refused(&m, "too many");
        /* below what the layout counts, above what a request may hold */
        good(&m, SORTD_MAX_COLUMNS);
        for (unsigned i = 0; i < SORTD_MAX_COLUMNS; i++)
                m.col[i].key_type = SORTD__WIRE__KEY_TYPE__KEY_U128;
        m.s.n = UINT64_C(1) << 54;
        refused(&m, "is too large");
        /* an argsort's 32-bit indices number 2^32 rows at most */
        good(&m, 1);
        m.s.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32;
        m.s.n = (UINT64_C(1) << 32) + 1;
        refused(&m, "column 0:");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("wire_columns");
        TCase *tc = tcase_create("columns");

        tcase_add_test(tc, good_columns_convert_and_size);
        tcase_add_test(tc, faults_are_named);
        tcase_add_test(tc, too_many_rows);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
