/*
 * libsortd against a daemon, and without one: its own checks refuse bad calls before anything
 * is sent, signals do not break its waits, a silent listener times out, and a daemon that dies
 * leaves a clear, lasting error.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* Bad calls are refused in the client: nothing reaches the daemon, and the connection lives. */
START_TEST(client_validation)
{
        sortd_conn *c;
        sortd_sort_options bad_bits = {SORTD_ASCENDING, 8, 8};
        uint32_t keys[4] = {3, 1, 2, 0}, vals[4];
        uint64_t before;
        char *p = (char *)keys;
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        c = client_open(&d);
        before = status_of(&d).requests_total;
        ck_assert_int_eq(sortd_sort(c, NULL, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, p + 1, 2, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, keys, 4, (sortd_key_type)99, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, keys, 4, SORTD_KEY_U32, &bad_bits), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort_pairs(c, keys, vals, 3, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort_pairs(c, keys, NULL, 4, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_argsort(c, keys, vals, 2, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort(c, keys, (1u << 20) + 1, SORTD_KEY_U32, NULL),
                         SORTD_E_CAPACITY);
        ck_assert_ptr_nonnull(strstr(sortd_error_message(c), "capacity"));
        ck_assert_int_eq(sortd_receive(c, &(sortd_request){0}), SORTD_E_INVAL);
        /* Nothing reached the daemon, and the connection still works. */
        ck_assert_uint_eq(status_of(&d).requests_total, before + 2); /* hello, status */
        ck_assert_int_eq(sortd_argsort(c, keys, vals, 4, 4, SORTD_KEY_U32, NULL), SORTD_OK);
        ck_assert_uint_eq(keys[0], 0);
        ck_assert_uint_eq(vals[0], 3);
        ck_assert_int_eq(sortd_sort(NULL, keys, 4, SORTD_KEY_U32, NULL), SORTD_E_INVAL);
        sortd_close(c);
        sortd_close(NULL);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
        alarms++;
}

/* Signals every 200 us (no SA_RESTART) interrupt the client's waits: every call still works. */
START_TEST(client_eintr)
{
        struct sigaction sa = {.sa_handler = on_alarm}; /* sa_flags = 0: no SA_RESTART */
        struct itimerval it = {{0, 200}, {0, 200}};
        size_t n = 1u << 20;
        uint64_t *keys = xmalloc(n * 8), *vals = xmalloc(n * 8);
        sortd_conn *c;
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        c = client_open(&d);
        sigaction(SIGALRM, &sa, NULL);
        setitimer(ITIMER_REAL, &it, NULL);
        for (int round = 0; round < 3; round++) {
                for (size_t i = 0; i < n; i++) {
                        keys[i] = (n - i) * 0x9e3779b97f4a7c15ull;
                        vals[i] = i;
                }
                ck_assert_msg(sortd_sort_pairs(c, keys, vals, 8, n, SORTD_KEY_U64, NULL) ==
                                      SORTD_OK,
                              "%s", sortd_error_message(c));
                check_sorted_u64(keys, n);
                ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        }
        memset(&it, 0, sizeof(it));
        setitimer(ITIMER_REAL, &it, NULL);
        ck_assert_int_gt(alarms, 10);
        sortd_close(c);
        free(keys);
        free(vals);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* A listener that never answers: connect's Hello times out instead of hanging. */
START_TEST(client_timeout)
{
        char dir[] = "/tmp/sortd-test-XXXXXX", path[128], err[256];
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        sortd_connect_options o = {.timeout_ms = 200};
        sortd_conn *c = NULL;
        struct timespec t0, t1;
        int fd;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/mute.sock", dir);
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, 4), 0);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ck_assert_int_eq(sortd_connect(path, &o, &c, err, sizeof(err)), SORTD_E_TIMEOUT);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ck_assert_ptr_null(c);
        ck_assert_msg(strstr(err, "200 ms"), "%s", err);
        ck_assert_int_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
                         2000);
        close(fd);
        unlink(path);
        rmdir(dir);
        /* Nobody there at all. */
        ck_assert_int_eq(sortd_connect(path, &o, &c, err, sizeof(err)), SORTD_E_IO);
}
END_TEST

/* The daemon dies under a client: a clear error, no hang, then the connection stays broken. */
START_TEST(daemon_goes_away)
{
        uint32_t keys[100] = {0};
        sortd_conn *c;
        daemon_proc d = {0};
        sortd_status s;

        daemon_start(&d, NULL);
        c = client_open(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGKILL), -1);
        s = sortd_sort(c, keys, 100, SORTD_KEY_U32, NULL);
        ck_assert_int_eq(s, SORTD_E_IO);
        ck_assert_msg(*sortd_error_message(c), "no message");
        ck_assert_int_eq(sortd_ping(c), SORTD_E_IO);
        sortd_close(c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("client");
        TCase *tc = tcase_create("client");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, client_validation);
        tcase_add_test(tc, client_eintr);
        tcase_add_test(tc, client_timeout);
        tcase_add_test(tc, daemon_goes_away);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
