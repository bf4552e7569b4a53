/* sortd_sort_desc_check() alone: the one validation client, daemon and engines share. */
#include <check.h>
#include <string.h>

#include "desc_cases.h"
#include "suite.h"

START_TEST(table)
{
        const desc_case *c = &desc_cases[_i];
        char why[128] = "untouched";
        sortd_status s = sortd_sort_desc_check(&c->desc, c->n, why, sizeof(why));

        ck_assert_msg(s == c->want, "%s: got %s (%s)", c->name, sortd_strerror(s), why);
        if (c->why)
                ck_assert_msg(strstr(why, c->why), "%s: '%s' not in '%s'", c->name, c->why, why);
        else
                ck_assert_str_eq(why, "untouched"); /* success writes no message */
}
END_TEST

START_TEST(null_and_no_room)
{
        sortd_sort_desc bad = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 40, 0};
        char why[8];

        ck_assert_int_eq(sortd_sort_desc_check(NULL, 1, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_str_eq(why, "NULL de"); /* truncated, terminated */
        ck_assert_int_eq(sortd_sort_desc_check(&bad, 1, NULL, 0), SORTD_E_INVAL);
}
END_TEST

/* Every key type's width is what the bit range is checked against. */
START_TEST(widths)
{
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++) {
                unsigned w = (unsigned)sortd_key_size((sortd_key_type)t) * 8;
                sortd_sort_desc top = {(sortd_key_type)t, SORTD_PAYLOAD_NONE, SORTD_ASCENDING,
                                       w - 1, w};
                sortd_sort_desc over = top;

                over.end_bit = w + 1;
                ck_assert_int_eq(sortd_sort_desc_check(&top, 3, NULL, 0), SORTD_OK);
                ck_assert_int_eq(sortd_sort_desc_check(&over, 3, NULL, 0), SORTD_E_INVAL);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("desc-check");
        TCase *tc = tcase_create("desc-check");

        tcase_add_loop_test(tc, table, 0, (int)(sizeof(desc_cases) / sizeof(desc_cases[0])));
        tcase_add_test(tc, null_and_no_room);
        tcase_add_test(tc, widths);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
