/*
 * sortd's lifecycle: SIGTERM with work in flight, socket activation through
 * systemd-socket-activate, stale and live socket files, the config file, max-connections, how
 * the engine was chosen, engine faults injected through the test hook (SORTD_TEST_FAULT), and a
 * daemon killed under a waiting client. What libsortd does when the daemon is silent or gone is
 * tests/client/test_client.c's.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "notify.h"

static struct timespec t_start;

static void timing_start(void)
{
        clock_gettime(CLOCK_MONOTONIC, &t_start);
}

/* SORTD_TEST_TIMES=1 prints each test's wall time. */
static void timing_end(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        if (getenv("SORTD_TEST_TIMES"))
                fprintf(stderr, "test took %.3f s\n",
                        (double)(t.tv_sec - t_start.tv_sec) + (t.tv_nsec - t_start.tv_nsec) / 1e9);
}

#define CLIENTS 4
#define DEPTH 3
#define N (1u << 19)

static void ping_once(const daemon_proc *d)
{
        sortd_conn *c = client_open(d);

        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        sortd_close(c);
}

/* Every request sent before SIGTERM is answered, then sortd closes and exits 0. */
START_TEST(sigterm_drains)
{
        sortd_conn *c[CLIENTS];
        sortd_request r[CLIENTS][DEPTH];
        uint64_t *keys[CLIENTS][DEPTH];
        daemon_proc d = {0};

        daemon_start(&d, NULL);
        for (int i = 0; i < CLIENTS; i++) {
                c[i] = client_open(&d);
                for (int j = 0; j < DEPTH; j++) {
                        keys[i][j] = xmalloc(N * 8);
                        for (size_t k = 0; k < N; k++)
                                keys[i][j][k] = (N - k) * 0x9e3779b97f4a7c15ull;
                        r[i][j] = (sortd_request){
                                .keys = keys[i][j], .n = N, .key_type = SORTD_KEY_U64};
                        ck_assert_int_eq(sortd_submit(c[i], &r[i][j]), SORTD_OK);
                }
        }
        /* Every request is in the daemon's socket (submit returned), most not read yet. */
        kill(d.pid, SIGTERM);
        for (int i = 0; i < CLIENTS; i++) {
                for (int j = 0; j < DEPTH; j++) {
                        ck_assert_msg(sortd_receive(c[i], &r[i][j]) == SORTD_OK, "%s",
                                      sortd_error_message(c[i]));
                        check_sorted_u64(keys[i][j], N);
                        free(keys[i][j]);
                }
                sortd_close(c[i]);
        }
        ck_assert_int_eq(daemon_stop(&d, 0), 0);
        ck_assert_msg(!d.socket_left, "sortd left its socket file behind");
}
END_TEST

/* A client that stalls in the middle of a frame cannot hold a drain past drain-timeout-ms: its
   connection is closed and sortd exits 0. An idle client is closed at once. */
START_TEST(drain_timeout_closes_stalled)
{
        const char *extra[] = {"--drain-timeout-ms", "300", "--log-level", "warning", NULL};
        uint8_t half_header[5] = {0};
        struct timespec t0, t1;
        daemon_proc d = {0};
        char log[4096];
        int stalled, idle;
        double secs;

        daemon_start(&d, extra);
        stalled = raw_connect(d.sock);
        idle = raw_connect(d.sock);
        raw_expect_in_sync(stalled);
        raw_send_bytes(stalled, half_header, sizeof(half_header));
        clock_gettime(CLOCK_MONOTONIC, &t0);
        kill(d.pid, SIGTERM);
        ck_assert(raw_wait_eof(idle, 200));
        ck_assert(raw_wait_eof(stalled, 10000));
        daemon_log(&d, log, sizeof(log));
        ck_assert_int_eq(daemon_stop(&d, 0), 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        ck_assert_msg(secs >= 0.29 && secs < 10, "drained in %.3f s", secs);
        ck_assert_msg(strstr(log, "drain timeout: closing the remaining connections"), "%s", log);
        close(stalled);
        close(idle);
}
END_TEST

/* A second SIGTERM (or SIGINT) during a drain ends it at once, as its timeout would: the
   stalled client is closed long before drain-timeout-ms, and sortd exits 0. */
START_TEST(second_signal_ends_the_drain)
{
        const char *extra[] = {"--drain-timeout-ms", "60000", "--log-level", "warning", NULL};
        uint8_t half_header[5] = {0};
        daemon_proc d = {0};
        char log[4096];
        int stalled;

        daemon_start(&d, extra);
        stalled = raw_connect(d.sock);
        raw_expect_in_sync(stalled);
        raw_send_bytes(stalled, half_header, sizeof(half_header));
        kill(d.pid, SIGTERM);
        ck_assert(!raw_wait_eof(stalled, 300)); /* the drain waits for it */
        kill(d.pid, SIGINT);
        ck_assert(raw_wait_eof(stalled, 10000));
        daemon_log(&d, log, sizeof(log));
        ck_assert_int_eq(daemon_stop(&d, 0), 0);
        ck_assert_msg(strstr(log, "Interrupt: closing the remaining connections"), "%s", log);
        close(stalled);
}
END_TEST

/* SIGHUP reloads nothing and ends nothing: sortd says so and serves on (sortd(8)). */
START_TEST(sighup_ignored)
{
        daemon_proc d = {0};
        char log[4096] = "";

        daemon_start(&d, NULL);
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        for (int i = 0; i < 200 && !strstr(log, "SIGHUP ignored"); i++) {
                usleep(10000);
                daemon_log(&d, log, sizeof(log));
        }
        ck_assert_msg(strstr(log, "SIGHUP ignored: sortd does not reload"), "%s", log);
        ck_assert(daemon_alive(&d));
        ping_once(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * Spawns sortd with a 16M-key cpu engine (0.7 s to start here; seconds on a GPU) and returns
 * once its socket file is there, the engine not yet up: clients and scripts already see the
 * daemon, and a signal sent now comes while it starts. At log level notice, so that "serving
 * on" shows a daemon that came up first.
 */
static void spawn_until_bound(daemon_proc *d)
{
        const char *const large[] = {"--capacity", "16M", "--log-level", "notice", NULL};
        char log[4096];
        struct stat st;

        daemon_spawn(d, large);
        for (int i = 0; i < 30000 && lstat(d->sock, &st) < 0 && daemon_alive(d); i++)
                usleep(1000);
        daemon_log(d, log, sizeof(log));
        ck_assert_msg(!strstr(log, "serving on"), "up before the signal could be sent: %s", log);
}

/* A SIGHUP while the engine starts: ignored from the start, as the loop's handler ignores it
   later. */
START_TEST(sighup_during_start)
{
        daemon_proc d = {0};

        spawn_until_bound(&d);
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        daemon_wait_ready(&d);
        ck_assert(daemon_alive(&d));
        ping_once(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * A SIGTERM (_i 0) or SIGINT (_i 1) while the engine starts: sortd stops before it serves,
 * exits 0 as a drain would, and removes the socket file it bound. By their default action the
 * signals ended it there and left the file.
 */
START_TEST(stop_during_start)
{
        const int sig = _i ? SIGINT : SIGTERM;
        daemon_proc d = {0};
        char log[4096], want[64];

        spawn_until_bound(&d);
        ck_assert_int_eq(kill(d.pid, sig), 0);
        for (int i = 0; i < 3000 && daemon_alive(&d); i++)
                usleep(10000);
        daemon_log(&d, log, sizeof(log));
        ck_assert_int_eq(daemon_stop(&d, 0), 0);
        ck_assert_msg(!d.socket_left, "sortd left its socket file behind: %s", log);
        snprintf(want, sizeof(want), "%s during start-up: stopping", strsignal(sig));
        ck_assert_msg(strstr(log, want), "%s", log);
        ck_assert_msg(!strstr(log, "serving on"), "%s", log);
}
END_TEST

/* Type=notify: READY=1 with a STATUS= line, watchdog pings, STOPPING=1. */
START_TEST(systemd_notify)
{
        daemon_proc d = {0};
        notify_sock n;
        char msg[512];

        notify_open(&n);
        d.notify_socket = n.path;
        d.watchdog_usec = "100000";
        daemon_start(&d, NULL);
        ck_assert_msg(notify_wait(&n, "READY=1", msg, sizeof(msg)), "no READY=1");
        ck_assert_msg(strstr(msg, "STATUS=serving with engine cpu"), "%s", msg);
        ck_assert_msg(notify_wait(&n, "WATCHDOG=1", msg, sizeof(msg)), "no watchdog ping");
        kill(d.pid, SIGTERM);
        ck_assert_msg(notify_wait(&n, "STOPPING=1", msg, sizeof(msg)), "no STOPPING=1");
        ck_assert_int_eq(daemon_stop(&d, 0), 0);
        notify_close(&n);
}
END_TEST

START_TEST(socket_activation)
{
        uint32_t keys[1000];
        sortd_conn *c;
        daemon_proc d = {0};
        sortd_info info;

        daemon_start_activated(&d, NULL);
        c = client_open(&d);
        ck_assert_int_eq(sortd_hello(c, &info), SORTD_OK);
        for (uint32_t i = 0; i < 1000; i++)
                keys[i] = 999 - i;
        ck_assert_int_eq(sortd_sort(c, keys, 1000, SORTD_KEY_U32, NULL), SORTD_OK);
        for (uint32_t i = 0; i < 1000; i++)
                ck_assert_uint_eq(keys[i], i);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        ck_assert_msg(d.socket_left, "sortd removed the socket file systemd bound");
}
END_TEST

/* A socket of type at path, connected (or, for a datagram socket, written to) once it exists,
   so that systemd-socket-activate starts what it holds. */
static void poke(const char *path, int type)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        bool done = false;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        /* The file appears at bind, a moment before the socket listens: try for 5 s. */
        for (int i = 0; i < 500 && !done; i++) {
                done = type == SOCK_DGRAM
                               ? sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa)) == 1
                               : connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
                if (!done)
                        usleep(10000);
        }
        ck_assert_msg(done, "cannot reach %s: %s", path, strerror(errno));
        close(fd);
}

/* Runs argv to its end (after poking poke_path, when not NULL, with a socket of poke_type);
   its exit code, and what it wrote on stdout and stderr in err (when not NULL). */
static int run_capture(const char *const *argv, const char *poke_path, int poke_type, char *err,
                       size_t len)
{
        int status, pipefd[2];
        char chunk[256];
        size_t got = 0;
        ssize_t r;
        pid_t pid;

        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        pid = fork();
        if (pid == 0) {
                dup2(pipefd[1], 1);
                dup2(pipefd[1], 2);
                execvp(argv[0], (char *const *)argv);
                _exit(127);
        }
        close(pipefd[1]);
        if (poke_path)
                poke(poke_path, poke_type);
        while ((r = read(pipefd[0], chunk, sizeof(chunk))) > 0) {
                size_t room = err && got + 1 < len ? len - 1 - got : 0;
                size_t k = (size_t)r < room ? (size_t)r : room;

                if (k)
                        memcpy(err + got, chunk, k);
                got += k;
        }
        close(pipefd[0]);
        if (err)
                err[got] = '\0';
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs sortd with args to its end; its exit code, and what it wrote in err (when not NULL). */
static int run_sortd_err(const char *const *args, char *err, size_t len)
{
        const char *argv[32] = {getenv("SORTD_BIN")};
        int n = 1;

        for (; *args; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        return run_capture(argv, NULL, 0, err, len);
}

static int run_sortd(const char *const *args)
{
        return run_sortd_err(args, NULL, 0);
}

/* sortd (cpu, 1K keys) under systemd-socket-activate with its listen options, started by a
   poke of a socket of type at the first; as run_capture. */
static int run_activated(const char *const *listen, int type, char *err, size_t len)
{
        const char *argv[16] = {"systemd-socket-activate"};
        const char *sortd[] = {getenv("SORTD_BIN"), "--engine", "cpu", "--capacity", "1K", NULL};
        const char *first = NULL;
        int n = 1;

        for (; *listen; listen++) {
                if (!first && strcmp(listen[0], "-l") == 0)
                        first = listen[1];
                argv[n++] = *listen;
        }
        for (const char *const *p = sortd; *p; p++)
                argv[n++] = *p;
        argv[n] = NULL;
        return run_capture(argv, first, type, err, len);
}

/* What systemd passes must be one listening Unix stream socket: two sockets, or a datagram
   socket, stop sortd with a message saying so, and exit 2 (sortd.socket is wrong: a restart
   would get the same). */
START_TEST(socket_activation_refusals)
{
        char dir[] = "/tmp/sortd-test-XXXXXX", a[96], b[96], err[4096];

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(a, sizeof(a), "%s/a.sock", dir);
        snprintf(b, sizeof(b), "%s/b.sock", dir);
        ck_assert_int_eq(run_activated((const char *[]){"-l", a, "-l", b, NULL}, SOCK_STREAM, err,
                                       sizeof(err)),
                         2);
        ck_assert_msg(strstr(err, "systemd passed 2 sockets; expected one"), "%s", err);
        unlink(a);
        unlink(b);
        ck_assert_int_eq(run_activated((const char *[]){"--datagram", "-l", a, NULL}, SOCK_DGRAM,
                                       err, sizeof(err)),
                         2);
        ck_assert_msg(strstr(err, "the passed fd is not a listening Unix stream socket"), "%s",
                      err);
        unlink(a);
        rmdir(dir);
}
END_TEST

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(fputs(text, f), 0);
        ck_assert_int_eq(fclose(f), 0);
}

/* Reads at most len - 1 bytes of path into buf, NUL-terminated; returns how many. */
static ssize_t read_text(const char *path, char *buf, size_t len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        ck_assert_int_ge(fd, 0);
        n = read(fd, buf, len - 1);
        close(fd);
        ck_assert_int_ge(n, 0);
        buf[n] = '\0';
        return n;
}

/* sortd refuses args at start-up with exit 2 and a message holding words. */
static void refused(const char *const *args, const char *words)
{
        char err[1024];
        int code = run_sortd_err(args, err, sizeof(err));

        ck_assert_msg(code == 2 && strstr(err, words), "sortd %s: exit %d, '%s' not in: %s",
                      args[0], code, words, err);
}

START_TEST(live_socket_refused_stale_removed)
{
        daemon_proc a = {0}, b = {0};
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        const char *args[] = {"--socket", NULL, "--engine", "cpu", "--capacity", "1K", NULL};
        int fd;

        daemon_start(&a, NULL);
        args[1] = a.sock;
        ck_assert_int_ne(run_sortd(args), 0); /* another daemon is live on it */
        ping_once(&a);
        ck_assert_int_eq(daemon_stop(&a, SIGTERM), 0);

        /* A socket file nobody listens on is stale: the next daemon replaces it. */
        strcpy(b.dir, "/tmp/sortd-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(b.dir));
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sortd.sock", b.dir);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        close(fd);
        daemon_start_in(&b, NULL);
        ping_once(&b);
        ck_assert_int_eq(daemon_stop(&b, SIGTERM), 0);
        /* A file that is not a socket is left alone, and sortd says why it will not start. */
        {
                char dir[] = "/tmp/sortd-test-XXXXXX", path[160], err[1024];
                const char *a3[] = {"--socket", path, "--engine", "cpu", "--capacity", "1K", NULL};

                ck_assert_ptr_nonnull(mkdtemp(dir));
                snprintf(path, sizeof(path), "%s/data", dir);
                write_text(path, "precious\n");
                ck_assert_int_eq(run_sortd_err(a3, err, sizeof(err)), 2);
                ck_assert_msg(strstr(err, "data exists and is not a socket"), "%s", err);
                ck_assert_int_eq(read_text(path, err, sizeof(err)), 9);
                ck_assert_str_eq(err, "precious\n");
                unlink(path);
                /* A missing directory is said to be missing. */
                snprintf(path, sizeof(path), "%s/missing/sortd.sock", dir);
                ck_assert_int_eq(run_sortd_err(a3, err, sizeof(err)), 2);
                ck_assert_msg(strstr(err, "missing/sortd.sock: no such file or directory"), "%s",
                              err);
                rmdir(dir);
        }
        /* A path that does not fit sockaddr_un is refused, not truncated: as a setting (exit
           2, where it is set), before the engine is made. */
        {
                char longpath[200];
                const char *a2[] = {"--socket",   longpath, "--engine", "cpu",
                                    "--capacity", "1K",     NULL};

                memset(longpath, 'x', sizeof(longpath) - 1);
                longpath[0] = '/';
                longpath[sizeof(longpath) - 1] = '\0';
                refused(a2, "command line: socket is too long (at most 107 bytes)");
        }
}
END_TEST

/*
 * A config line is read whole up to its cap (64 KiB): an allow-uid list of 64 entries (over
 * 700 bytes) with this user last is taken, and this user is served; a value over its setting's
 * limit is refused for its length at its own line.
 */
static void long_lines(const char *path)
{
        char text[2048] = "allow-uid = ";
        const char *args[] = {"--config", path, NULL};
        daemon_proc d = {0};

        for (int i = 0; i < 63; i++)
                snprintf(text + strlen(text), sizeof(text) - strlen(text), "%010d,", 4000000 + i);
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%u\n", (unsigned)getuid());
        ck_assert_uint_gt(strlen(text), 512);
        write_text(path, text);
        daemon_start(&d, args);
        ping_once(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        strcpy(text, "# a comment\nallow-gid = ");
        memset(text + strlen(text), '1', 1100);
        strcpy(text + strlen(text) + 1100, "\n");
        write_text(path, text);
        refused(args, ":2: allow-gid is too long (at most 1023 bytes)");
}

START_TEST(config_file_and_bad_options)
{
        char path[] = "/tmp/sortd-conf-XXXXXX", bad_path[] = "/tmp/sortd-conf-XXXXXX";
        char many_gids[512] = "1";
        int fd = mkstemp(path);
        const char text[] = "# test\ncapacity = 1000\n  max-connections=3\nlog-level = error\n"
                            "host-pool = 2M\nmax-region-bytes = 1T\n";
        const char *extra[] = {"--config", path, NULL};
        const char *help[] = {"--help", NULL};
        /* A file that was named must exist, unless it was named as optional. */
        const char *optional[] = {"--config-if-exists", "/nonexistent/sortd.conf", NULL};
        const struct {
                const char *args[6], *words;
        } bad[] = {
                {{"--capacity", "lots"}, "capacity = 'lots' is not a number of keys"},
                {{"--no-such-option", "1"}, "unknown option '--no-such-option'"},
                {{"--max-request-bytes", "2G", "--max-inflight-bytes", "1G"},
                 "max-request-bytes (2147483648) must not exceed max-inflight-bytes"},
                {{"--host-pool", "most"}, "host-pool = 'most' is not a number of bytes"},
                {{"--log-level", "loud"}, "log-level = 'loud' is none of error, warning"},
                {{"--capacity"}, "--capacity needs a value"},
                {{"--config"}, "--config needs a file"},
                {{"stray"}, "unexpected argument 'stray'"},
                {{"--engine", "a-sixteen-bytes+"}, "engine = 'a-sixteen-bytes+' is none of"},
                {{"--allow-gid", many_gids}, "allow-gid lists more than 64 entries"},
                {{"--config", "/nonexistent/sortd.conf"},
                 "cannot open config file /nonexistent/sortd.conf"},
                {{"--config", bad_path}, ":2: expected 'name = value'"},
                {{"--config", "/dev/zero"},
                 "config file /dev/zero is a character device, not a regular file"},
                {{"--print-config=yaml"}, "unknown format 'yaml'"},
        };
        sortd_info info;
        sortd_conn *c;
        daemon_proc d = {0};

        ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
        close(fd);
        daemon_start(&d, extra); /* the harness's --capacity 1M comes first: the file's... */
        c = client_open(&d);
        ck_assert_int_eq(sortd_hello(c, &info), SORTD_OK);
        /* ...but the command line wins over the file. */
        ck_assert_uint_eq(info.capacity, 1u << 20);
        ck_assert_uint_eq(info.max_connections, 3);
        ck_assert_uint_eq(info.max_region_bytes, 1ull << 40);
        sortd_close(c);
        ck_assert_uint_eq(status_of(&d).host_pool_bytes, 2u << 20);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        unlink(path);

        ck_assert_int_ge(fd = mkstemp(bad_path), 0);
        close(fd);
        write_text(bad_path, "capacity = 1K\ncapacity 1000\n");
        for (int i = 2; i <= 65; i++)
                snprintf(many_gids + strlen(many_gids), sizeof(many_gids) - strlen(many_gids),
                         ",%d", i);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                refused(bad[i].args, bad[i].words);
        write_text(bad_path, "frobs = 2\n");
        refused((const char *[]){"--config", bad_path, NULL}, ":1: unknown setting 'frobs'");
        long_lines(bad_path);
        unlink(bad_path);
        ck_assert_int_eq(run_sortd(help), 0);
        daemon_start(&d, optional);
        ping_once(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * --check-config reads the file and the whole command line as a start does and runs every
 * check a start runs before it takes the engine and the socket: exit 0 with one line, while a
 * daemon serves on the same socket, or 2 with the message a start would give. --version reads
 * no file, wherever it stands.
 */
START_TEST(check_config)
{
        char conf[] = "/tmp/sortd-conf-XXXXXX", out[4096];
        const char *check[] = {"--config", conf, "--socket", NULL, "--check-config", NULL};
        const char *version[][4] = {{"--config", "/nonexistent/sortd.conf", "--version"},
                                    {"--version", "--config", "/nonexistent/sortd.conf"}};
        daemon_proc d = {0};
        int fd = mkstemp(conf);

        ck_assert_int_ge(fd, 0);
        close(fd);
        write_text(conf, "engine = cpu\ncapacity = 1K\nallow-uid = root\n");
        daemon_start(&d, NULL);
        check[3] = d.sock;
        ck_assert_int_eq(run_sortd_err(check, out, sizeof(out)), 0);
        ck_assert_str_eq(out, "sortd: configuration OK\n");
        ping_once(&d);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        write_text(conf, "engine = cpu\nmax-request-bytes = 2G\n");
        refused(check, "max-request-bytes (2147483648) must not exceed max-inflight-bytes");
        write_text(conf, "allow-gid = no-such-group-here\n");
        refused(check, ":1: allow-gid: 'no-such-group-here' is no group id");
        refused((const char *[]){"-t", "--config", conf, NULL}, "no-such-group-here");
        for (size_t i = 0; i < 2; i++) {
                ck_assert_int_eq(run_sortd_err(version[i], out, sizeof(out)), 0);
                ck_assert_msg(strncmp(out, "sortd ", 6) == 0, "%s", out);
        }
        unlink(conf);
}
END_TEST

/* What --print-config (--help, --version, --check-config) prints must be written: a full disk
   under "sortd --print-config >sortd.conf" is no success (it was exit 0, with a cut file). */
START_TEST(output_written_or_exit_1)
{
        char out[1024];

        ck_assert_int_eq(run_capture((const char *[]){"sh", "-c",
                                                      "exec \"$SORTD_BIN\" --print-config "
                                                      ">/dev/full",
                                                      NULL},
                                     NULL, 0, out, sizeof(out)),
                         1);
        ck_assert_msg(strstr(out, "cannot write the standard output: No space left on device"),
                      "%s", out);
}
END_TEST

/* --engine auto says which engine it took and why, in its log and in Status; a named engine
   that is absent is fatal (exit 1: the host lacks it), a name that is no engine is a
   configuration error (exit 2, as every other bad setting). */
START_TEST(engine_choice)
{
        const char *extra[] = {"--engine", "auto", "--log-level", "notice", NULL};
        const char *named_cpu[] = {"--engine", "cpu", NULL};
        const char *cuda[] = {"--engine",   "cuda", "--socket", "/tmp/sortd-never.sock",
                              "--capacity", "1K",   NULL};
        const char *bogus[] = {"--engine",   "quantum", "--socket", "/tmp/sortd-never.sock",
                               "--capacity", "1K",      NULL};
        char log[4096] = "";
        sortd_info info;
        sortd_server_status st;
        sortd_conn *c;
        daemon_proc d = {0};

        daemon_start(&d, extra);
        c = client_open(&d);
        ck_assert_int_eq(sortd_hello(c, &info), SORTD_OK);
        sortd_close(c);
        st = status_of(&d);
        ck_assert_str_eq(st.engine, info.engine);
        daemon_log(&d, log, sizeof(log));
        ck_assert_msg(strstr(log, st.engine_reason), "log lacks '%s': %s", st.engine_reason, log);
        if (strcmp(info.engine, "cpu") == 0) {
                ck_assert_msg(strstr(st.engine_reason, "auto chose cpu: cuda cannot serve ("), "%s",
                              st.engine_reason);
        } else {
                ck_assert_str_eq(info.engine, "cuda");
                ck_assert_msg(strstr(st.engine_reason, "auto chose cuda: self-check passed: "),
                              "%s", st.engine_reason);
        }
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        daemon_start(&d, named_cpu);
        st = status_of(&d);
        ck_assert_msg(strstr(st.engine_reason, "configured cpu: no self-check: the cpu engine is "
                                               "the oracle"),
                      "%s", st.engine_reason);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        if (strcmp(info.engine, "cpu") == 0) { /* no usable CUDA here: asking for it fails */
                /* Without CUDA in the build that is a setting no restart mends (2); with it, a
                   device that may come back (1). The error says which. */
                char err[2048];
                int rc = run_sortd_err(cuda, err, sizeof(err));

                ck_assert_msg(strstr(err, "cannot create engine cuda: "), "%s", err);
                ck_assert_int_eq(rc, strstr(err, "this build has no CUDA engines") ? 2 : 1);
        }
        refused(bogus, "command line: engine = 'quantum' is none of auto, cpu, cuda or cub");
}
END_TEST

START_TEST(max_connections)
{
        const char *extra[] = {"--max-connections", "2", NULL};
        sortd_conn *a, *b, *c = NULL;
        char err[256];
        daemon_proc d = {0};
        sortd_server_status st;
        uint64_t refused = 1;

        daemon_start(&d, extra);
        a = client_open(&d);
        b = client_open(&d);
        ck_assert_int_eq(sortd_connect(d.sock, NULL, &c, err, sizeof(err)), SORTD_E_BUSY);
        ck_assert_msg(strstr(err, "too many connections"), "%s", err);
        ck_assert_ptr_null(c);
        ck_assert_int_eq(sortd_ping(a), SORTD_OK);
        sortd_close(a);
        /* A slot is free again once the daemon sees the close. */
        for (int k = 0; k < 100 && !c; k++) {
                if (sortd_connect(d.sock, NULL, &c, err, sizeof(err)) != SORTD_OK) {
                        refused++;
                        usleep(10000);
                }
        }
        ck_assert_ptr_nonnull(c);
        /* Each refusal counted once, as a connection: no sort was refused. */
        ck_assert_int_eq(sortd_query_status(c, &st), SORTD_OK);
        ck_assert_uint_eq(st.connections_refused, refused);
        ck_assert_uint_eq(st.rejected, 0);
        sortd_close(b);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* What connecting to d gives this process: the status, and the message in err. */
static sortd_status try_connect(const daemon_proc *d, char *err, size_t len)
{
        sortd_conn *c = NULL;
        sortd_status s = sortd_connect(d->sock, NULL, &c, err, len);

        if (s == SORTD_OK)
                ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        sortd_close(c);
        return s;
}

/* The same from a child process running as uid and gid, in the ngroups supplementary groups;
   the child's status is its exit code. */
static sortd_status connect_as(const daemon_proc *d, uid_t uid, gid_t gid, size_t ngroups,
                               const gid_t *groups)
{
        int status;
        pid_t pid;

        /* The socket's own mode (0660, root's) would keep that user out before the daemon. */
        ck_assert_int_eq(chmod(d->dir, 0711), 0);
        ck_assert_int_eq(chmod(d->sock, 0666), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char err[256];

                if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
                        _exit(100);
                _exit((int)try_connect(d, err, sizeof(err)));
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_ne(WEXITSTATUS(status), 100);
        return (sortd_status)WEXITSTATUS(status);
}

/* allow-uid and allow-gid: who is not listed is refused with a reply naming them. */
START_TEST(access_control)
{
        char me[32], my_gid[32], err[256];
        const char *deny[] = {"--allow-uid", "4000000000", NULL};
        const char *by_uid[] = {"--allow-uid", me, NULL};
        const char *by_gid[] = {"--allow-uid", "4000000000", "--allow-gid", my_gid, NULL};
        const char *bad[] = {"--allow-uid", "no-such-user-here", NULL};
        daemon_proc d = {0};
        sortd_server_status st;

        snprintf(me, sizeof(me), "%u", (unsigned)getuid());
        snprintf(my_gid, sizeof(my_gid), "%u", (unsigned)getgid());
        daemon_start(&d, deny);
        ck_assert_int_eq(try_connect(&d, err, sizeof(err)), SORTD_E_DENIED);
        ck_assert_msg(strstr(err, "is not served") && strstr(err, me), "%s", err);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        daemon_start(&d, by_uid);
        ck_assert_int_eq(try_connect(&d, err, sizeof(err)), SORTD_OK);
        /* Another user, where this test may switch to one (as root): refused, counted. */
        if (getuid() == 0) {
                ck_assert_int_eq(connect_as(&d, 65534, 65534, 0, NULL), SORTD_E_DENIED);
                st = status_of(&d);
                ck_assert_uint_eq(st.connections_refused, 1);
                ck_assert_uint_eq(st.rejected, 0); /* no sort was refused */
        } else {
                fprintf(stderr, "access_control: not root: no client under another uid\n");
        }
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        daemon_start(&d, by_gid);
        ck_assert_int_eq(try_connect(&d, err, sizeof(err)), SORTD_OK);
        if (getuid() == 0)
                ck_assert_int_eq(connect_as(&d, 65534, getgid(), 0, NULL),
                                 SORTD_OK); /* by its group */
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        /* A name that resolves to nobody stops the daemon at start-up. */
        refused(bad, "allow-uid: 'no-such-user-here' is no user id nor a known user name");
}
END_TEST

/* allow-uid and allow-gid by name, and a peer served by one of its supplementary groups, also
   when it has more of them than the daemon's first try makes room for. Needs root, to run a
   client as another user in chosen groups. */
START_TEST(access_by_name_and_group)
{
        enum { MANY = 100, ALLOWED = 4000000001u };
        char by_user[64], by_group[64];
        const char *names[] = {"--allow-uid", by_user, "--allow-gid", "4000000000", NULL};
        const char *groups[] = {"--allow-uid", "4000000000", "--allow-gid", by_group, NULL};
        const char *supplementary[] = {"--allow-uid", "4000000000", "--allow-gid", "4000000001",
                                       NULL};
        struct passwd *pw = getpwuid(65534);
        struct group *gr = getgrgid(65534);
        gid_t many[MANY];
        daemon_proc d = {0};

        if (getuid() != 0 || !pw || !gr) {
                fprintf(stderr, "access_by_name_and_group: needs root and uid/gid 65534 "
                                "(nobody) with names: skipped\n");
                return;
        }
        snprintf(by_user, sizeof(by_user), "%s", pw->pw_name);
        snprintf(by_group, sizeof(by_group), "%s", gr->gr_name);
        for (unsigned i = 0; i < MANY; i++)
                many[i] = 4000000100u + i;

        daemon_start(&d, names);
        ck_assert_int_eq(connect_as(&d, 65534, 1, 0, NULL), SORTD_OK);
        ck_assert_int_eq(connect_as(&d, 1, 1, 0, NULL), SORTD_E_DENIED);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        daemon_start(&d, groups);
        ck_assert_int_eq(connect_as(&d, 1, 65534, 0, NULL), SORTD_OK);
        ck_assert_int_eq(connect_as(&d, 1, 1, 0, NULL), SORTD_E_DENIED);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);

        daemon_start(&d, supplementary);
        ck_assert_int_eq(connect_as(&d, 1, 1, MANY, many), SORTD_E_DENIED);
        many[MANY - 1] = ALLOWED;
        ck_assert_int_eq(connect_as(&d, 1, 1, MANY, many), SORTD_OK);
        ck_assert_int_eq(connect_as(&d, 1, 1, 3, many + MANY - 3), SORTD_OK);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * allow-gid names a group of hundreds of members, whose entry takes more than the 4 KiB a
 * lookup is first given: the daemon starts, and the group's members are served. Needs root, to
 * put such a group in /etc/group in a mount namespace of this test's own.
 */
START_TEST(access_large_group)
{
        enum { MEMBERS = 600 };
        char path[] = "/tmp/sortd-group-XXXXXX", err[256];
        const char *allow[] = {"--allow-uid", "4000000000", "--allow-gid", "sortd-test-big", NULL};
        daemon_proc d = {0};
        FILE *in, *out;
        int fd, ch, last = '\n';

        if (getuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
            access("/var/run/nscd/socket", F_OK) == 0) {
                fprintf(stderr, "access_large_group: needs root, a mount namespace and no nscd: "
                                "skipped\n");
                return;
        }
        /* Nothing mounted here reaches the rest of the system. */
        ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        ck_assert_int_ge(fd = mkstemp(path), 0);
        ck_assert_ptr_nonnull(out = fdopen(fd, "w"));
        ck_assert_ptr_nonnull(in = fopen("/etc/group", "r"));
        while ((ch = getc(in)) != EOF)
                putc(last = ch, out);
        fclose(in);
        fprintf(out, "%ssortd-test-big:x:%u:", last == '\n' ? "" : "\n", (unsigned)getgid());
        for (int i = 0; i < MEMBERS; i++)
                fprintf(out, "%smember%04d", i ? "," : "", i);
        fprintf(out, "\n");
        ck_assert_int_eq(fclose(out), 0);
        ck_assert_int_eq(chmod(path, 0644), 0);
        ck_assert_int_eq(mount(path, "/etc/group", NULL, MS_BIND, NULL), 0);

        daemon_start(&d, allow);
        ck_assert_int_eq(try_connect(&d, err, sizeof(err)), SORTD_OK);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        ck_assert_int_eq(umount2("/etc/group", 0), 0);
        unlink(path);
}
END_TEST

/* ---- faults: the engine's test hook (SORTD_TEST_FAULT), and a daemon that dies ---- */

#define FAULT_CLIENTS 4
#define FAULT_DEPTH 10
#define FAULT_N 4096u

static void fill_keys(uint64_t *k, size_t n, uint64_t seed)
{
        for (size_t i = 0; i < n; i++)
                k[i] = (seed + i) * 0x9e3779b97f4a7c15ull;
}

static void start_with_fault(daemon_proc *d, const char *fault, const char *const *extra)
{
        ck_assert_int_eq(setenv("SORTD_TEST_FAULT", fault, 1), 0);
        daemon_start(d, extra);
        unsetenv("SORTD_TEST_FAULT");
}

/*
 * Every fourth engine call fails (one sort each: no batches), as a device error or a device
 * out of memory: exactly those requests get an error naming the injected fault, with the
 * engine's status, and every other one, from every client, comes back sorted.
 */
START_TEST(injected_engine_errors)
{
        static const struct {
                const char *spec;
                sortd_status status;
        } faults[] = {{"device:4", SORTD_E_DEVICE}, {"nomem:4", SORTD_E_NOMEM}};
        const char *extra[] = {"--batch-member-keys", "0", NULL};
        sortd_conn *c[FAULT_CLIENTS];
        sortd_request r[FAULT_CLIENTS][FAULT_DEPTH];
        uint64_t *keys = xmalloc((size_t)FAULT_CLIENTS * FAULT_DEPTH * FAULT_N * 8);
        unsigned failed = 0;
        daemon_proc d = {0};
        sortd_server_status st;

        start_with_fault(&d, faults[_i].spec, extra);
        for (int i = 0; i < FAULT_CLIENTS; i++) {
                c[i] = client_open(&d);
                for (int j = 0; j < FAULT_DEPTH; j++) {
                        uint64_t *k = keys + ((size_t)i * FAULT_DEPTH + j) * FAULT_N;

                        fill_keys(k, FAULT_N, (uint64_t)i * 1000 + (uint64_t)j);
                        r[i][j] =
                                (sortd_request){.keys = k, .n = FAULT_N, .key_type = SORTD_KEY_U64};
                        ck_assert_int_eq(sortd_submit(c[i], &r[i][j]), SORTD_OK);
                }
        }
        for (int i = 0; i < FAULT_CLIENTS; i++) {
                for (int j = 0; j < FAULT_DEPTH; j++) {
                        sortd_status s = sortd_receive(c[i], &r[i][j]);

                        if (s == SORTD_OK) {
                                check_sorted_u64(r[i][j].keys, FAULT_N);
                                continue;
                        }
                        ck_assert_int_eq(s, faults[_i].status);
                        ck_assert_msg(strstr(sortd_error_message(c[i]), "injected fault"), "%s",
                                      sortd_error_message(c[i]));
                        failed++;
                }
                ck_assert_int_eq(sortd_ping(c[i]), SORTD_OK); /* the connection lives on */
                sortd_close(c[i]);
        }
        ck_assert_uint_eq(failed, FAULT_CLIENTS * FAULT_DEPTH / 4);
        st = status_of(&d);
        ck_assert_uint_eq(st.sorts_failed, failed);
        ck_assert_uint_eq(st.sorts_ok, FAULT_CLIENTS * FAULT_DEPTH - failed);
        ck_assert_uint_eq(st.engines_lost, 0);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        free(keys);
}
END_TEST

/*
 * The third engine call loses the device: that request fails naming it, the daemon makes a new
 * engine as on-device-loss says, logs it, counts it, and every later sort is served. In
 * batches too: the lost call's members all fail, later batches are sorted.
 */
START_TEST(engine_lost_and_replaced)
{
        const char *policy = _i % 2 ? "cpu" : "recreate";
        const char *extra[] = {"--on-device-loss", policy, "--batch-member-keys",
                               _i < 2 ? "0" : "64K", NULL};
        uint64_t *keys = xmalloc((size_t)FAULT_DEPTH * FAULT_N * 8);
        sortd_request r[FAULT_DEPTH];
        unsigned failed = 0;
        daemon_proc d = {0};
        sortd_server_status st;
        char log[16384];
        sortd_region *rg;
        sortd_region_sort rs;
        sortd_conn *c;

        start_with_fault(&d, "lost:3", extra);
        c = client_open(&d);
        /* A region the lost engine opened: sorted in by the new one, and closed by the old. */
        ck_assert_int_eq(sortd_region_create(c, FAULT_N * 8, &rg), SORTD_OK);
        /* One at a time up to the loss, then a pipeline the engine may take as batches. */
        for (int j = 0; j < FAULT_DEPTH; j++) {
                fill_keys(keys + (size_t)j * FAULT_N, FAULT_N, (uint64_t)j);
                r[j] = (sortd_request){.keys = keys + (size_t)j * FAULT_N,
                                       .n = FAULT_N,
                                       .key_type = SORTD_KEY_U64};
                ck_assert_int_eq(sortd_submit(c, &r[j]), SORTD_OK);
                if (j >= 3)
                        continue;
                if (sortd_receive(c, &r[j]) == SORTD_OK) {
                        check_sorted_u64(r[j].keys, FAULT_N);
                        continue;
                }
                ck_assert_msg(strstr(sortd_error_message(c), "the device is lost"), "%s",
                              sortd_error_message(c));
                ck_assert_int_eq(j, 2);
                failed++;
        }
        for (int j = 3; j < FAULT_DEPTH; j++) {
                ck_assert_msg(sortd_receive(c, &r[j]) == SORTD_OK, "%s", sortd_error_message(c));
                check_sorted_u64(r[j].keys, FAULT_N);
        }
        ck_assert_uint_eq(failed, 1);
        fill_keys(sortd_region_data(rg), FAULT_N, 99);
        rs = (sortd_region_sort){.keys = rg, .n = FAULT_N, .key_type = SORTD_KEY_U64};
        ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s", sortd_error_message(c));
        check_sorted_u64(sortd_region_data(rg), FAULT_N);
        ck_assert_int_eq(sortd_region_destroy(c, rg), SORTD_OK);
        st = status_of(&d);
        ck_assert_uint_eq(st.engines_lost, 1);
        ck_assert_uint_eq(st.regions, 0);
        ck_assert_uint_eq(st.sorts_failed, 1);
        ck_assert_str_eq(st.engine, "cpu");
        ck_assert_msg(strstr(st.engine_reason, "lost its device") &&
                              strstr(st.engine_reason, policy),
                      "%s", st.engine_reason);
        daemon_log(&d, log, sizeof(log));
        ck_assert_msg(strstr(log, "lost its device") && strstr(log, "now sorting on cpu"), "%s",
                      log);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        free(keys);
}
END_TEST

/* A test hook that says nothing sensible stops the daemon at start-up. */
START_TEST(bad_fault_spec)
{
        static const char *const bad[] = {"device", "device:0", "melt:3",   "lost:3x",
                                          ":3",     "lost:-1",  "nomem: 4", "device:99999999999"};
        const char *args[] = {"--engine", "cpu", "--capacity", "1K", NULL};

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(setenv("SORTD_TEST_FAULT", bad[i], 1), 0);
                ck_assert_msg(run_sortd(args) == 2, "SORTD_TEST_FAULT=%s", bad[i]);
        }
        unsetenv("SORTD_TEST_FAULT");
        const char *bad_policy[] = {"--on-device-loss", "pray", NULL};

        refused(bad_policy, "command line: on-device-loss = 'pray' is none of recreate or cpu");
}
END_TEST

/*
 * A daemon killed with SIGKILL while a client waits: the client gets a clear error at once, not
 * a hang; a new daemon starts on the same socket path (the dead one's file is stale) and serves.
 */
START_TEST(daemon_killed_then_restarted)
{
        uint64_t *keys = xmalloc((size_t)N * 8);
        sortd_request r;
        struct timespec t0, t1;
        daemon_proc d = {0};
        sortd_conn *c;
        sortd_status s;
        int status;

        daemon_start(&d, NULL);
        c = client_open(&d);
        fill_keys(keys, N, 7);
        r = (sortd_request){.keys = keys, .n = N, .key_type = SORTD_KEY_U64};
        ck_assert_int_eq(sortd_submit(c, &r), SORTD_OK);
        kill(d.pid, SIGKILL);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        s = sortd_receive(c, &r);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* A reply may have made it out before the kill; if not, the loss is named. */
        if (s != SORTD_OK) {
                ck_assert_int_eq(s, SORTD_E_IO);
                ck_assert_msg(strlen(sortd_error_message(c)) > 0, "no message");
        }
        ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 5);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert(WIFSIGNALED(status));
        ck_assert_int_eq(access(d.sock, F_OK), 0); /* the dead daemon's socket file is left */
        ck_assert_int_ne(sortd_ping(c), SORTD_OK);
        sortd_close(c);
        daemon_start_in(&d, NULL);
        c = client_open(&d);
        fill_keys(keys, N, 8);
        ck_assert_int_eq(sortd_sort(c, keys, N, SORTD_KEY_U64, NULL), SORTD_OK);
        check_sorted_u64(keys, N);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        free(keys);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("lifecycle");
        TCase *tc = tcase_create("lifecycle");

        tcase_set_timeout(tc, 60);
        tcase_add_checked_fixture(tc, timing_start, timing_end);
        tcase_add_test(tc, sigterm_drains);
        tcase_add_test(tc, drain_timeout_closes_stalled);
        tcase_add_test(tc, second_signal_ends_the_drain);
        tcase_add_test(tc, sighup_ignored);
        tcase_add_test(tc, sighup_during_start);
        tcase_add_loop_test(tc, stop_during_start, 0, 2);
        tcase_add_test(tc, socket_activation);
        tcase_add_test(tc, socket_activation_refusals);
        tcase_add_test(tc, systemd_notify);
        tcase_add_test(tc, live_socket_refused_stale_removed);
        tcase_add_test(tc, config_file_and_bad_options);
        tcase_add_test(tc, check_config);
        tcase_add_test(tc, output_written_or_exit_1);
        tcase_add_test(tc, engine_choice);
        tcase_add_test(tc, max_connections);
        tcase_add_test(tc, access_control);
        tcase_add_test(tc, access_by_name_and_group);
        tcase_add_test(tc, access_large_group);
        tcase_add_loop_test(tc, injected_engine_errors, 0, 2);
        tcase_add_loop_test(tc, engine_lost_and_replaced, 0, 4);
        tcase_add_test(tc, bad_fault_spec);
        tcase_add_test(tc, daemon_killed_then_restarted);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
