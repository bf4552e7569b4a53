/*
 * The engines' test hook (sortd_engine_config.faults, engine.h) on the CPU engine: which calls
 * fail, with what, and a lost engine, which fails every sort and still releases what it holds.
 * The daemon's tests drive the same hook end to end (tests/e2e/test_lifecycle.c).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "suite.h"

#define N 1000

static sortd_engine *make(sortd_engine_faults f)
{
        sortd_engine_config cfg = {.capacity = N, .threads = 2, .faults = f};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_int_eq(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)), SORTD_OK);
        return e;
}

static sortd_status sort_some(sortd_engine *e, uint32_t *k, size_t n)
{
        sortd_sort_desc d = (sortd_sort_desc){.key_type = SORTD_KEY_U32};

        for (size_t i = 0; i < n; i++)
                k[i] = (uint32_t)((n - i) * 2654435761u);
        return sortd_engine_sort(e, &d, k, NULL, n);
}

/* Every third call fails with the status asked for; calls with nothing to sort do not count. */
START_TEST(every_third_call)
{
        sortd_engine *e = make((sortd_engine_faults){.every = 3, .status = SORTD_E_NOMEM});
        static uint32_t k[N];

        for (int call = 1; call <= 9; call++) {
                sortd_status s = sort_some(e, k, N);

                if (call % 3) {
                        ck_assert_int_eq(s, SORTD_OK);
                } else {
                        ck_assert_int_eq(s, SORTD_E_NOMEM);
                        ck_assert_msg(strstr(sortd_engine_error(e), "injected fault"), "%s",
                                      sortd_engine_error(e));
                }
                ck_assert_int_eq(sort_some(e, k, 1), SORTD_OK); /* n = 1: never reaches it */
        }
        ck_assert(!sortd_engine_lost(e));
        sortd_engine_destroy(e);
}
END_TEST

/* A batch is one call: when it is the failing one, each member gets the fault. */
START_TEST(batch_is_one_call)
{
        sortd_engine *e = make((sortd_engine_faults){.every = 2, .status = SORTD_E_DEVICE});
        static uint32_t k[4][64];
        sortd_engine_batch_item items[4];

        for (int round = 1; round <= 2; round++) {
                for (int i = 0; i < 4; i++) {
                        for (int j = 0; j < 64; j++)
                                k[i][j] = (uint32_t)(64 - j);
                        items[i] = (sortd_engine_batch_item){
                                .desc = (sortd_sort_desc){.key_type = SORTD_KEY_U32},
                                .keys = k[i],
                                .n = 64};
                }
                sortd_status s = sortd_engine_sort_batch(e, items, 4);

                for (int i = 0; i < 4; i++) {
                        ck_assert_int_eq(items[i].status, round == 2 ? SORTD_E_DEVICE : SORTD_OK);
                        ck_assert_int_eq(k[i][0], round == 2 ? 64 : 1); /* untouched on error */
                        if (round == 2)
                                ck_assert_msg(strstr(items[i].why, "injected fault"), "%s",
                                              items[i].why);
                }
                ck_assert_int_eq(s, round == 2 ? SORTD_E_DEVICE : SORTD_OK);
        }
        sortd_engine_destroy(e);
}
END_TEST

/* A lost engine fails every later sort with the first failure's message, fast; its memory
   calls still work, so that its owner can release it. */
START_TEST(lost_stays_lost)
{
        sortd_engine *e =
                make((sortd_engine_faults){.every = 2, .status = SORTD_E_DEVICE, .lose_device = 1});
        static uint32_t k[N];
        void *p = NULL;

        ck_assert_int_eq(sortd_engine_host_alloc(e, 4096, &p), SORTD_OK);
        ck_assert_int_eq(sortd_engine_host_register(e, k, sizeof(k)), SORTD_OK);
        ck_assert_int_eq(sort_some(e, k, N), SORTD_OK);
        ck_assert(!sortd_engine_lost(e));
        ck_assert_int_eq(sort_some(e, k, N), SORTD_E_DEVICE);
        ck_assert(sortd_engine_lost(e));
        for (int i = 0; i < 5; i++) {
                ck_assert_int_eq(sort_some(e, k, N), SORTD_E_DEVICE);
                ck_assert_msg(strstr(sortd_engine_error(e), "lost its device earlier") &&
                                      strstr(sortd_engine_error(e), "sticky"),
                              "%s", sortd_engine_error(e));
        }
        ck_assert_int_eq(sortd_engine_host_unregister(e, k), SORTD_OK);
        sortd_engine_host_free(e, p, 4096);
        sortd_engine_destroy(e);
}
END_TEST

/* Without faults nothing fails: the hook costs a count and a compare. */
START_TEST(no_faults)
{
        sortd_engine *e = make((sortd_engine_faults){0});
        static uint32_t k[N];

        for (int i = 0; i < 20; i++)
                ck_assert_int_eq(sort_some(e, k, N), SORTD_OK);
        ck_assert(!sortd_engine_lost(e));
        ck_assert(!sortd_engine_lost(NULL));
        sortd_engine_destroy(e);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("engine_faults");
        TCase *tc = tcase_create("faults");

        tcase_add_test(tc, every_third_call);
        tcase_add_test(tc, batch_is_one_call);
        tcase_add_test(tc, lost_stays_lost);
        tcase_add_test(tc, no_faults);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
