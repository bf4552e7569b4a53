/*
 * sortd's start-up failures as systemd sees them: the exit status (1, or 2 where a restart
 * would fail again: sortd(8)), one STOPPING=1 with a STATUS= that says why and no READY=1,
 * an error in the log with no "stopped" notice after it, and no socket file left behind
 * or taken from another daemon.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "notify.h"

/* Runs sortd (cpu, 1K keys) with extra (NULL-terminated, or NULL) on socket path with
   NOTIFY_SOCKET n to its end; its exit status, its log in log and its notifications in msgs. */
static int run_notified(const char *path, const char *const *extra, notify_sock *n, char *log,
                        size_t log_len, char *msgs, size_t msgs_len)
{
        const char *argv[16] = {getenv("SORTD_BIN"), "--socket", path,          "--engine", "cpu",
                                "--capacity",        "1K",       "--log-level", "notice"};
        char log_path[] = "/tmp/sortd-log-XXXXXX";
        int fd = mkstemp(log_path), status;
        size_t i = 0;
        pid_t pid;
        ssize_t r;

        while (argv[i])
                i++;
        for (; extra && *extra; extra++) {
                ck_assert_uint_lt(i, sizeof(argv) / sizeof(argv[0]) - 1);
                argv[i++] = *extra;
        }
        ck_assert_int_ge(fd, 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(fd, 2);
                unsetenv("LISTEN_FDS");
                unsetenv("LISTEN_PID");
                setenv("NOTIFY_SOCKET", n->path, 1);
                execvp(argv[0], (char *const *)argv);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        r = pread(fd, log, log_len - 1, 0);
        log[r > 0 ? r : 0] = '\0';
        close(fd);
        unlink(log_path);
        notify_read(n, msgs, msgs_len);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A failed start with extra options: status, STATUS= holding why, nothing else sent, why
   logged as the one error and no "stopped" notice after it. */
static void failed(const char *path, const char *const *extra, int want, const char *why)
{
        char log[4096], msgs[1024];
        notify_sock n;
        int code;

        notify_open(&n);
        code = run_notified(path, extra, &n, log, sizeof(log), msgs, sizeof(msgs));
        notify_close(&n);
        ck_assert_msg(code == want, "%s: exit %d, not %d; log: %s", path, code, want, log);
        /* One datagram: STOPPING=1 and why; no READY=1 before it. */
        ck_assert_msg(strncmp(msgs, "STOPPING=1\nSTATUS=", 18) == 0 && strstr(msgs, why) &&
                              strchr(msgs, '|') == msgs + strlen(msgs) - 1,
                      "%s: notified '%s', not one STOPPING=1 with STATUS=...%s", path, msgs, why);
        ck_assert_msg(strstr(log, "error: ") && strstr(strstr(log, "error: "), why), "%s", log);
        ck_assert_msg(!strstr(strstr(log, "error: ") + 1, "error: "), "two errors: %s", log);
        ck_assert_msg(!strstr(log, "notice: stopped"), "a 'stopped' notice after an error: %s",
                      log);
}

/* Another daemon's live socket: exit 1 (it may go away; a restart may then serve), its socket
   left to it, still served. */
START_TEST(live_socket)
{
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        failed(d.sock, NULL, 1, "another daemon is listening on ");
        ck_assert_int_eq(access(d.sock, F_OK), 0);
        sortd_close(client_open(&d));
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        ck_assert_msg(!d.socket_left, "sortd left its socket file behind");
}
END_TEST

/* A socket setting no restart can bind: a missing directory, a file that is not a socket
   (left as it was), a directory nobody may write. */
START_TEST(wrong_socket_path)
{
        char dir[] = "/tmp/sortd-test-XXXXXX", path[128];
        int fd;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/missing/sortd.sock", dir);
        failed(path, NULL, 2, "cannot bind ");
        snprintf(path, sizeof(path), "%s/file", dir);
        ck_assert_int_ge(fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), 0);
        close(fd);
        failed(path, NULL, 2, "exists and is not a socket");
        ck_assert_int_eq(access(path, F_OK), 0);
        unlink(path);
        /* Even root may not make a file in /proc. */
        failed("/proc/sortd.sock", NULL, 2, "cannot bind /proc/sortd.sock: permission denied");
        rmdir(dir);
}
END_TEST

/* A sanitizer maps terabytes of address space up front: it cannot run under an address-space
   limit, so the test that needs one is left out of sanitized builds. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WITH_ADDRESS_LIMIT 1

/* Lowers resource's soft limit to v; the hard one stays, so that *old can be put back. */
static void lower_limit(int resource, rlim_t v, struct rlimit *old)
{
        struct rlimit l;

        ck_assert_int_eq(getrlimit(resource, old), 0);
        ck_assert_msg(old->rlim_max == RLIM_INFINITY || old->rlim_max >= v,
                      "hard limit %d is below %llu", resource, (unsigned long long)v);
        l = (struct rlimit){.rlim_cur = v, .rlim_max = old->rlim_max};
        ck_assert_int_eq(setrlimit(resource, &l), 0);
}

/*
 * An explicit cpu-path-keys whose engine cannot be had: exit 1 (a resource short now; a restart
 * may have it). The daemon inherits a 1 GiB stack limit, and so 1 GiB stacks for its threads,
 * and 1.5 GiB of address space: the engine's one worker thread fits, the CPU path's does not
 * (the start fails so from about 1.1 GiB to 2.1 GiB).
 */
START_TEST(cpu_path_fails)
{
        const char *extra[] = {"--threads", "2", "--cpu-path-keys", "1K", NULL};
        char dir[] = "/tmp/sortd-test-XXXXXX", path[64];
        struct rlimit stack, as;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sortd.sock", dir);
        lower_limit(RLIMIT_STACK, 1ull << 30, &stack);
        lower_limit(RLIMIT_AS, 3ull << 29, &as);
        failed(path, extra, 1,
               "cannot create the CPU path (cpu-path-keys 1024): cannot start worker threads: ");
        ck_assert_int_eq(setrlimit(RLIMIT_AS, &as), 0);
        ck_assert_int_eq(setrlimit(RLIMIT_STACK, &stack), 0);
        ck_assert_int_eq(access(path, F_OK), -1);
        rmdir(dir);
}
END_TEST
#endif

int main(void)
{
        Suite *s = suite_create("startup");
        TCase *tc = tcase_create("startup");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, live_socket);
        tcase_add_test(tc, wrong_socket_path);
#ifdef WITH_ADDRESS_LIMIT
        tcase_add_test(tc, cpu_path_fails);
#endif
        suite_add_tcase(s, tc);
        return run_suite(s);
}
