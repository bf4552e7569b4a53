/*
 * The CPU path's choices on their own (daemon/sched/route.c): which jobs go there, and the start-up
 * calibration, run here with two CPU engines in the roles of the GPU engine and the CPU path
 * (the GPU machine runs it for real: scripts/gpu-check's daemon logs its choice); and an
 * explicit cpu-path-keys refused, as the failure line of a start (server.c) reports it.
 */
#include <check.h>
#include <string.h>

#include "route.h"
#include "server.h"
#include "suite.h"

static sortd_engine *cpu_engine(size_t capacity, unsigned threads)
{
        sortd_engine_config cfg = {.capacity = capacity, .threads = threads};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_msg(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) == SORTD_OK, "%s",
                      why);
        return e;
}

START_TEST(which_jobs)
{
        sortd__route r = {0};
        sortd__job j = {.work = {.op = SORTD__JOB_OP_SORT, .n = 100}};

        ck_assert(!sortd__route_cpu_path(&r, &j)); /* no CPU path */
        r.cpu = cpu_engine(100, 1);
        r.cpu_path_keys = 100;
        ck_assert(sortd__route_cpu_path(&r, &j));
        j.work.n = 101;
        ck_assert(!sortd__route_cpu_path(&r, &j));
        j.work.n = 1;
        j.work.op = SORTD__JOB_OP_SORT_DEVICE; /* CUDA regions: only the engine reaches them */
        ck_assert(!sortd__route_cpu_path(&r, &j));
        j.work.op = SORTD__JOB_OP_REGION_OPEN;
        ck_assert(!sortd__route_cpu_path(&r, &j));
        sortd__route_close(&r);
        ck_assert_ptr_null(r.cpu);
        ck_assert_uint_eq(r.cpu_path_keys, 0);
}
END_TEST

static int is_size(uint64_t n)
{
        for (uint64_t s = 256; s <= SORTD__ROUTE_CALIBRATE_MAX; s *= 4)
                if (n == s)
                        return 1;
        return n == 0;
}

START_TEST(calibration)
{
        sortd_engine *a = cpu_engine(SORTD__ROUTE_CALIBRATE_MAX, 1);
        sortd_engine *b = cpu_engine(SORTD__ROUTE_CALIBRATE_MAX, 2);
        sortd_engine *tiny = cpu_engine(1000, 1);
        char report[512];
        uint64_t n;

        n = sortd__route_calibrate(a, b, report, sizeof(report));
        ck_assert_msg(is_size(n), "chose %llu", (unsigned long long)n);
        ck_assert_msg(strstr(report, "u32 sort times, cpu / cpu: 256 keys "), "%s", report);
        /* The capacities bound what is tried: only 256 fits under 1000. */
        n = sortd__route_calibrate(a, tiny, report, sizeof(report));
        ck_assert_msg(n == 0 || n == 256, "chose %llu: %s", (unsigned long long)n, report);
        ck_assert_msg(!strstr(report, "1024 keys"), "%s", report);
        /* A report too short for the timings is cut, not overrun. */
        n = sortd__route_calibrate(a, b, report, 16);
        ck_assert_uint_eq(strlen(report), 15);
        sortd_engine_destroy(a);
        sortd_engine_destroy(b);
        sortd_engine_destroy(tiny);
}
END_TEST

/*
 * An explicit cpu-path-keys the CPU engine refuses (threads above its limit): why names the
 * setting, then says all the engine said. A start-up failure line (sortd__server_fail, what STATUS=
 * and the log say) holds such a reason with its status whole, even one as long as two engines'
 * reports (--engine auto's): 256 bytes cut it.
 */
START_TEST(refusal_reported_whole)
{
        sortd__route_settings rs = {.cpu_path_keys = 1000, .capacity = 1000, .threads = 2000};
        sortd__route r;
        sortd__server srv = {0};
        sortd_engine_config ec = {.capacity = 1000, .threads = 2000};
        char why[512], engine_why[256], want[512], reason[600];
        sortd_engine *e = NULL;
        size_t len;

        ck_assert_int_eq(sortd_engine_create("cpu", &ec, &e, engine_why, sizeof(engine_why)),
                         SORTD_E_INVAL);
        ck_assert_int_eq(sortd__route_open(&r, NULL, &rs, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_null(r.cpu);
        snprintf(want, sizeof(want), "cannot create the CPU path (cpu-path-keys 1000): %s",
                 engine_why);
        ck_assert_str_eq(why, want);

        memset(reason, 'r', sizeof(reason) - 1);
        reason[sizeof(reason) - 1] = '\0';
        sortd__server_fail(&srv, 1, "%s (%s)", reason, sortd_strerror(SORTD_E_NOMEM));
        ck_assert_int_eq(srv.exit_status, 1);
        len = strlen(srv.failure);
        ck_assert_uint_eq(len, sizeof(reason) - 1 + strlen(" (out of memory)"));
        ck_assert_str_eq(srv.failure + len - strlen(" (out of memory)"), " (out of memory)");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("route");
        TCase *tc = tcase_create("route");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, which_jobs);
        tcase_add_test(tc, calibration);
        tcase_add_test(tc, refusal_reported_whole);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
