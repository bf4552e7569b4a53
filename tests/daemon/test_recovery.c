/*
 * daemon/server/recovery.c alone: replacing a lost engine, and counting the loss (engines_lost)
 * whether or not another engine could be made.
 */
#include <check.h>

#include "recovery.h"
#include "suite.h"

static unsigned losses(sortd__recovery *r)
{
        return atomic_load(&r->losses);
}

/* The first engine, as the daemon opens it. */
static sortd_engine *cpu_engine(const sortd_engine_config *ec)
{
        sortd_engine *e = NULL;
        char report[512];

        ck_assert_msg(sortd__recovery_engine_open("cpu", ec, &e, report, sizeof(report)) ==
                              SORTD_OK,
                      "%s", report);
        return e;
}

/* A loss that is replaced: counted, and the new engine serves. */
START_TEST(loss_replaced)
{
        sortd_engine_config ec = {.capacity = 1000, .threads = 1};
        sortd_engine *first = cpu_engine(&ec), *next;
        sortd__recovery r;

        sortd__recovery_init(&r, SORTD__ON_LOSS_RECREATE, &ec, first, "configured cpu");
        next = sortd__recovery_replace(first, &r);
        ck_assert_ptr_nonnull(next);
        ck_assert_ptr_ne(next, first);
        ck_assert_uint_eq(losses(&r), 1);
        ck_assert_ptr_eq(sortd__recovery_current(&r)->engine, next);
        sortd__recovery_close(&r);
        ck_assert_ptr_eq(sortd__recovery_current(&r)->engine, first);
        sortd_engine_destroy(first);
}
END_TEST

/* A loss no engine can replace (a capacity of 0 makes none): counted all the same, and the
   lost engine stays the one serving. */
START_TEST(loss_not_replaced)
{
        sortd_engine_config ec = {.capacity = 1000, .threads = 1};
        sortd_engine *first = cpu_engine(&ec);
        sortd__recovery r;

        ec.capacity = 0;
        sortd__recovery_init(&r, SORTD__ON_LOSS_CPU, &ec, first, "configured cpu");
        ck_assert_ptr_null(sortd__recovery_replace(first, &r));
        ck_assert_uint_eq(losses(&r), 1);
        ck_assert_ptr_eq(sortd__recovery_current(&r)->engine, first);
        sortd__recovery_close(&r);
        sortd_engine_destroy(first);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("recovery");
        TCase *tc = tcase_create("recovery");

        tcase_add_test(tc, loss_replaced);
        tcase_add_test(tc, loss_not_replaced);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
