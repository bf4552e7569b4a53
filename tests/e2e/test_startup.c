/*
 * sortd's start-up failures as systemd sees them: the exit status (1, or 2 where a restart
 * would fail again: sortd(8)), one STOPPING=1 with a STATUS= that says why and no READY=1,
 * an error in the log with no "stopped" notice after it, and no socket file left behind
 * or taken from another daemon. The socket is claimed before the engine is made, so a
 * failure there comes before any engine.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "notify.h"

/* In the child: the fds in passed (ending at -1) become 3, 4, ... with LISTEN_FDS and
   LISTEN_PID saying so, as systemd passes a socket unit's sockets. */
static void pass_fds(const int *passed)
{
        char count[16], pid[16];
        int high[8], n = 0;

        /* Moved above 3 + 8 first: dup2 onto 3 + i must not close one still to be passed. */
        for (; passed[n] >= 0 && n < 8; n++)
                high[n] = fcntl(passed[n], F_DUPFD_CLOEXEC, 16);
        for (int i = 0; i < n; i++)
                if (high[i] < 0 || dup2(high[i], 3 + i) < 0)
                        _exit(126);
        snprintf(count, sizeof(count), "%d", n);
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        setenv("LISTEN_FDS", count, 1);
        setenv("LISTEN_PID", pid, 1);
}

/* Runs sortd (cpu, 1K keys) with extra (NULL-terminated, or NULL) on socket path with
   NOTIFY_SOCKET n to its end, passing it the sockets in passed (ending at -1; NULL: none) as
   systemd would; its exit status, its log in log and its notifications in msgs. */
static int run_notified(const char *path, const char *const *extra, const int *passed,
                        notify_sock *n, char *log, size_t log_len, char *msgs, size_t msgs_len)
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
                if (passed)
                        pass_fds(passed);
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

/* A failed start with extra options and passed sockets (as run_notified): STATUS= holding
   why, nothing else sent, why logged as the one error and no "stopped" notice after it. Its
   exit status; its log in log. */
static int failed_start(const char *path, const char *const *extra, const int *passed,
                        const char *why, char *log, size_t log_len)
{
        char msgs[1024];
        notify_sock n;
        int code;

        notify_open(&n);
        code = run_notified(path, extra, passed, &n, log, log_len, msgs, sizeof(msgs));
        notify_close(&n);
        /* One datagram: STOPPING=1 and why; no READY=1 before it. */
        ck_assert_msg(strncmp(msgs, "STOPPING=1\nSTATUS=", 18) == 0 && strstr(msgs, why) &&
                              strchr(msgs, '|') == msgs + strlen(msgs) - 1,
                      "%s: notified '%s', not one STOPPING=1 with STATUS=...%s", path, msgs, why);
        ck_assert_msg(strstr(log, "error: ") && strstr(strstr(log, "error: "), why), "%s", log);
        ck_assert_msg(!strstr(strstr(log, "error: ") + 1, "error: "), "two errors: %s", log);
        ck_assert_msg(!strstr(log, "notice: stopped"), "a 'stopped' notice after an error: %s",
                      log);
        return code;
}

/*
 * A start refused as it claims its socket (as failed_start, with the sockets in passed): before
 * it makes an engine, which on a GPU takes the device's memory and seconds of self-check.
 * create_engine's notice ("engine cpu (2 CPU threads): configured cpu: ...") must be absent.
 */
static void refused_at_claim(const char *path, const int *passed, int want, const char *why)
{
        char log[4096];
        int code = failed_start(path, NULL, passed, why, log, sizeof(log));

        ck_assert_msg(code == want, "%s: exit %d, not %d; log: %s", path, code, want, log);
        ck_assert_msg(!strstr(log, "engine cpu"), "an engine was made before the refusal: %s", log);
}

/* Another daemon's live socket: exit 1 (it may go away; a restart may then serve), its socket
   left to it, still served. */
START_TEST(live_socket)
{
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        refused_at_claim(d.sock, NULL, 1, "another daemon is listening on ");
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
        refused_at_claim(path, NULL, 2, "cannot bind ");
        snprintf(path, sizeof(path), "%s/file", dir);
        ck_assert_int_ge(fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), 0);
        close(fd);
        refused_at_claim(path, NULL, 2, "exists and is not a socket");
        ck_assert_int_eq(access(path, F_OK), 0);
        unlink(path);
        /* Even root may not make a file in /proc. */
        refused_at_claim("/proc/sortd.sock", NULL, 2,
                         "cannot bind /proc/sortd.sock: permission denied");
        rmdir(dir);
}
END_TEST

/* A Unix socket of type bound at dir/name, listening when it is a stream: what a socket unit
   passes. */
static int unit_socket(const char *dir, const char *name, int type)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        if (type == SOCK_STREAM)
                ck_assert_int_eq(listen(fd, 8), 0);
        return fd;
}

/* A sortd.socket that passes other than one listening Unix stream socket: exit 2 (a restart
   gets the same sockets), before any engine, and the socket setting's path left alone. */
START_TEST(wrong_passed_sockets)
{
        char dir[] = "/tmp/sortd-test-XXXXXX", path[64];
        int two[3], dgram[2];

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sortd.sock", dir);
        two[0] = unit_socket(dir, "a.sock", SOCK_STREAM);
        two[1] = unit_socket(dir, "b.sock", SOCK_STREAM);
        two[2] = -1;
        refused_at_claim(path, two, 2, "systemd passed 2 sockets; expected one");
        dgram[0] = unit_socket(dir, "c.sock", SOCK_DGRAM);
        dgram[1] = -1;
        refused_at_claim(path, dgram, 2, "the passed fd is not a listening Unix stream socket");
        ck_assert_int_eq(access(path, F_OK), -1);
        for (const char *const *name = (const char *const[]){"a.sock", "b.sock", "c.sock", NULL};
             *name; name++) {
                snprintf(path, sizeof(path), "%s/%s", dir, *name);
                unlink(path);
        }
        close(two[0]);
        close(two[1]);
        close(dgram[0]);
        rmdir(dir);
}
END_TEST

/*
 * An engine that cannot be made after the socket was claimed: the socket file goes with the
 * daemon, also where a stale one (a killed daemon's) was replaced as it was claimed; a socket
 * systemd passed keeps its file.
 * CUDA_VISIBLE_DEVICES=-1 hides every GPU from a build with CUDA, and a build without it has
 * no cuda engine: either way --engine cuda fails, exit 1 (no device) or 2 (no CUDA).
 */
START_TEST(engine_fails_after_claim)
{
        const char *extra[] = {"--engine", "cuda", NULL};
        char dir[] = "/tmp/sortd-test-XXXXXX", path[64], log[4096];
        int code;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sortd.sock", dir);
        ck_assert_int_eq(setenv("CUDA_VISIBLE_DEVICES", "-1", 1), 0);
        for (int stale = 0; stale < 2; stale++) {
                if (stale)
                        close(unit_socket(dir, "sortd.sock", SOCK_STREAM));
                code = failed_start(path, extra, NULL, "cannot create engine cuda: ", log,
                                    sizeof(log));
                ck_assert_int_eq(code, strstr(log, "this build has no CUDA engines") ? 2 : 1);
                ck_assert_msg(access(path, F_OK) == -1, "%s left behind (stale: %d); log: %s", path,
                              stale, log);
        }
        /* A socket systemd passed is the socket unit's: its file stays, also where it is the
           socket setting's path, as where sortd.socket and sortd.conf agree. */
        {
                int passed[2] = {unit_socket(dir, "unit.sock", SOCK_STREAM), -1};
                char unit[64];

                snprintf(unit, sizeof(unit), "%s/unit.sock", dir);
                code = failed_start(unit, extra, passed, "cannot create engine cuda: ", log,
                                    sizeof(log));
                ck_assert_int_eq(code, strstr(log, "this build has no CUDA engines") ? 2 : 1);
                ck_assert_msg(access(unit, F_OK) == 0, "the passed socket's file went: %s", log);
                close(passed[0]);
                unlink(unit);
        }
        unsetenv("CUDA_VISIBLE_DEVICES");
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
        char dir[] = "/tmp/sortd-test-XXXXXX", path[64], log[4096];
        struct rlimit stack, as;
        int code;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sortd.sock", dir);
        lower_limit(RLIMIT_STACK, 1ull << 30, &stack);
        lower_limit(RLIMIT_AS, 3ull << 29, &as);
        code = failed_start(
                path, extra, NULL,
                "cannot create the CPU path (cpu-path-keys 1024): cannot start worker threads: ",
                log, sizeof(log));
        ck_assert_msg(code == 1, "exit %d, not 1; log: %s", code, log);
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
        tcase_add_test(tc, wrong_passed_sockets);
        tcase_add_test(tc, engine_fails_after_claim);
#ifdef WITH_ADDRESS_LIMIT
        tcase_add_test(tc, cpu_path_fails);
#endif
        suite_add_tcase(s, tc);
        return run_suite(s);
}
