/* Segments (sortd_types.h): the one check of rows and offsets, and the top-k result count. */
#include <string.h>

#include "sortd_types.h"
#include "suite.h"

static sortd_segments rows(uint64_t count, uint64_t row_len)
{
        return (sortd_segments){.count = count, .row_len = row_len};
}

static sortd_segments csr32(const uint32_t *o, uint64_t count)
{
        return (sortd_segments){.count = count, .offsets = o, .offset_bytes = 4};
}

static sortd_segments csr64(const uint64_t *o, uint64_t count)
{
        return (sortd_segments){.count = count, .offsets = o, .offset_bytes = 8};
}

/* s over n is refused with a message that holds needle. */
static void refused(const sortd_segments *s, uint64_t n, const char *needle)
{
        char why[256] = "";

        ck_assert_int_eq(sortd_segments_check(s, n, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_msg(strstr(why, needle), "'%s' lacks '%s'", why, needle);
}

START_TEST(rows_accepted)
{
        const sortd_segments cases[] = {rows(4, 3), rows(1, 12), rows(0, 0), rows(5, 0)};
        const uint64_t n[] = {12, 12, 0, 0};

        for (unsigned i = 0; i < 4; i++)
                ck_assert_int_eq(sortd_segments_check(&cases[i], n[i], NULL, 0), SORTD_OK);
        ck_assert_uint_eq(sortd_segment_begin(&cases[0], 2), 6);
        ck_assert_uint_eq(sortd_segment_length(&cases[0], 3), 3);
}
END_TEST

START_TEST(rows_refused)
{
        sortd_segments s = rows(4, 3);

        refused(&s, 13, "4 rows of 3 keys are not n = 13");
        s = rows(UINT64_MAX / 2, 3);
        refused(&s, 0, "overflow");
        s = rows(2, 6);
        s.offset_bytes = 4;
        refused(&s, 12, "offset width 4 given for uniform rows");
        refused(NULL, 0, "NULL segments");
}
END_TEST

START_TEST(offsets_accepted)
{
        const uint32_t o32[] = {0, 0, 3, 3, 7, 7};
        const uint64_t o64[] = {0, 5, 5, 9};
        const uint32_t none[] = {0};
        sortd_segments a = csr32(o32, 5), b = csr64(o64, 3), c = csr32(none, 0);

        ck_assert_int_eq(sortd_segments_check(&a, 7, NULL, 0), SORTD_OK);
        ck_assert_int_eq(sortd_segments_check(&b, 9, NULL, 0), SORTD_OK);
        ck_assert_int_eq(sortd_segments_check(&c, 0, NULL, 0), SORTD_OK);
        ck_assert_uint_eq(sortd_segment_begin(&a, 2), 3);
        ck_assert_uint_eq(sortd_segment_length(&a, 0), 0);
        ck_assert_uint_eq(sortd_segment_length(&a, 3), 4);
        ck_assert_uint_eq(sortd_segment_begin(&b, 3), 9);
        ck_assert_uint_eq(sortd_segment_length(&b, 2), 4);
}
END_TEST

START_TEST(offsets_refused)
{
        const uint32_t first[] = {1, 3, 7}, down[] = {0, 4, 3, 7}, past[] = {0, 8, 9},
                       short_[] = {0, 3, 6};
        uint64_t aligned[3] = {0, 2, 7};
        sortd_segments s;

        s = csr32(first, 2);
        refused(&s, 7, "offsets[0] = 1");
        s = csr32(down, 3);
        refused(&s, 7, "offsets[2] = 3 below offsets[1] = 4");
        s = csr32(past, 2);
        refused(&s, 7, "offsets[1] = 8 past n = 7");
        s = csr32(short_, 2);
        refused(&s, 7, "offsets[2] = 6: the last segment ends at n = 7");
        s = csr32(first, 2);
        s.offset_bytes = 2;
        refused(&s, 7, "offsets of 2 bytes");
        s = csr64((const uint64_t *)(const void *)((const char *)aligned + 4), 1);
        refused(&s, 7, "not aligned to 8 bytes");
        s = csr64(aligned, 2);
        s.row_len = 3;
        refused(&s, 7, "row length 3 given with offsets");
        s = csr64(aligned, UINT64_MAX);
        refused(&s, 7, "too many");
}
END_TEST

START_TEST(topk_results)
{
        const uint32_t o[] = {0, 0, 3, 10, 11};
        const sortd_segments r = rows(4, 5), c = csr32(o, 4);

        ck_assert_uint_eq(sortd_topk_results(NULL, 10, 3), 3);
        ck_assert_uint_eq(sortd_topk_results(NULL, 10, 30), 10);
        ck_assert_uint_eq(sortd_topk_results(NULL, 10, 0), 0);
        ck_assert_uint_eq(sortd_topk_results(&r, 20, 2), 8);
        ck_assert_uint_eq(sortd_topk_results(&r, 20, 9), 20);
        ck_assert_uint_eq(sortd_topk_results(&c, 11, 4), 0 + 3 + 4 + 1);
        ck_assert_uint_eq(sortd_topk_results(&c, 11, 0), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("segments");
        TCase *tc = tcase_create("segments");

        tcase_add_test(tc, rows_accepted);
        tcase_add_test(tc, rows_refused);
        tcase_add_test(tc, offsets_accepted);
        tcase_add_test(tc, offsets_refused);
        tcase_add_test(tc, topk_results);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
