/*
 * daemon/server/recovery.c alone: replacing a lost engine, and counting the loss (engines_lost)
 * whether or not another engine could be made.
 */
#include <check.h>
#include <string.h>

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

/*
 * Two lanes on one device: the first to see its engine lost counts the loss and makes the
 * other's engine stale, which is replaced before it fails a sort, and not counted again.
 * Without a cpu fallback, a loss no engine of the kind can replace is given up, saying why.
 */
START_TEST(shared_device_loss)
{
        sortd_engine_config ec = {.capacity = 1000, .threads = 1};
        sortd_engine *a = cpu_engine(&ec), *b = cpu_engine(&ec);
        sortd__recovery_device dev;
        sortd__recovery ra, rb;

        atomic_init(&dev.epoch, 0);
        sortd__recovery_init(&ra, SORTD__ON_LOSS_RECREATE, &ec, a, "lane a");
        sortd__recovery_init(&rb, SORTD__ON_LOSS_RECREATE, &ec, b, "lane b");
        sortd__recovery_share(&ra, &dev, false);
        sortd__recovery_share(&rb, &dev, false);
        ck_assert(!sortd__recovery_stale(a, &ra) && !sortd__recovery_stale(b, &rb));
        ck_assert_ptr_nonnull(sortd__recovery_replace(a, &ra));
        ck_assert(!sortd__recovery_stale(sortd__recovery_current(&ra)->engine, &ra));
        ck_assert(sortd__recovery_stale(b, &rb));
        ck_assert_ptr_nonnull(sortd__recovery_replace(b, &rb));
        ck_assert(!sortd__recovery_stale(sortd__recovery_current(&rb)->engine, &rb));
        ck_assert_uint_eq(losses(&ra) + losses(&rb), 1);
        ck_assert(!atomic_load(&ra.gave_up));

        ra.ec.capacity = 0; /* no engine can be made now */
        ck_assert_ptr_null(sortd__recovery_replace(sortd__recovery_current(&ra)->engine, &ra));
        ck_assert(atomic_load(&ra.gave_up));
        ck_assert_msg(strstr(ra.gave_up_reason, "no engine can replace it"), "%s",
                      ra.gave_up_reason);
        ck_assert_uint_eq(losses(&ra) + losses(&rb), 2);
        sortd__recovery_close(&ra);
        sortd__recovery_close(&rb);
        sortd_engine_destroy(a);
        sortd_engine_destroy(b);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("recovery");
        TCase *tc = tcase_create("recovery");

        tcase_add_test(tc, loss_replaced);
        tcase_add_test(tc, loss_not_replaced);
        tcase_add_test(tc, shared_device_loss);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
