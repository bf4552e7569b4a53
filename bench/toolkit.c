/*
 * What sortd-bench's parts share (sortd_bench.h): the daemon each run
 * starts and stops, the socket copy every inline path is measured against, and the rates of
 * clients' latencies.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sortd.h"
#include "sortd_bench.h"

const char *bench_count_name(size_t n, char *buf, size_t len)
{
        if (n && !(n & (n - 1)))
                snprintf(buf, len, "2^%d", __builtin_ctzll(n));
        else
                snprintf(buf, len, "%zu", n);
        return buf;
}

static char sock_path[128], sock_dir[64];
static pid_t daemon_pid;

/* --cpu-path-keys N: passed on to the daemon ("auto" when not given). */
static const char *cpu_path_keys = "auto";

void bench_set_cpu_path_keys(const char *keys)
{
        cpu_path_keys = keys;
}

const char *bench_daemon_socket(void)
{
        return sock_path;
}

/* How long a daemon may take to answer: 60 s, or $SORTD_TEST_START_SECONDS as the tests' harness
   reads it (an emulated GPU's self-check takes tens of seconds on a busy machine). */
static double start_seconds(void)
{
        const char *s = getenv("SORTD_TEST_START_SECONDS");
        double v = s ? atof(s) : 0;

        return v > 0 ? v : 60;
}

const char *bench_start_daemon(const char *bin, const char *threads, const char *engine,
                               size_t capacity, const char *device_streams)
{
        char cap[32];
        const char *argv[] = {bin,
                              "--socket",
                              sock_path,
                              "--engine",
                              engine,
                              "--capacity",
                              cap,
                              "--threads",
                              threads,
                              "--cpu-path-keys",
                              cpu_path_keys,
                              "--log-level",
                              "warning",
                              device_streams ? "--device-streams" : NULL,
                              device_streams,
                              NULL};

        snprintf(sock_dir, sizeof(sock_dir), "/tmp/sortd-bench-XXXXXX");
        if (!mkdtemp(sock_dir))
                return NULL;
        snprintf(sock_path, sizeof(sock_path), "%s/sortd.sock", sock_dir);
        snprintf(cap, sizeof(cap), "%zu", capacity);
        daemon_pid = fork();
        if (daemon_pid == 0) {
                execv(bin, (char *const *)argv);
                perror(bin);
                _exit(127);
        }
        /* A large capacity's buffers are faulted in at start-up: seconds on a busy machine. */
        for (double end = bench_now() + start_seconds(); bench_now() < end;) {
                sortd_conn *c;
                char err[256];
                int status;

                if (sortd_connect(sock_path, NULL, &c, err, sizeof(err)) == SORTD_OK) {
                        sortd_close(c);
                        return sock_path;
                }
                if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
                        fprintf(stderr, "sortd-bench: sortd exited during start-up\n");
                        return NULL;
                }
                usleep(10000);
        }
        fprintf(stderr, "sortd-bench: sortd did not start within %.0f s\n", start_seconds());
        bench_stop_daemon(); /* it would hold the output of whoever runs this */
        return NULL;
}

void bench_stop_daemon(void)
{
        int status;

        kill(daemon_pid, SIGTERM);
        waitpid(daemon_pid, &status, 0);
        unlink(sock_path);
        rmdir(sock_dir);
}

int bench_transfer(int fd, uint8_t *buf, size_t len, bool out)
{
        for (size_t done = 0; done < len;) {
                ssize_t r = out ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
                                : recv(fd, buf + done, len - done, 0);

                if (r <= 0)
                        return -1;
                done += (size_t)r;
        }
        return 0;
}

void bench_rate_of(double *const *lat, const size_t *count, int clients, double elapsed,
                   bench_rate *out)
{
        size_t total = 0, k = 0;
        double *all;

        for (int i = 0; i < clients; i++)
                total += count[i];
        *out = (bench_rate){.per_s = elapsed > 0 ? (double)total / elapsed : 0};
        all = malloc((total ? total : 1) * sizeof(double));
        if (!all || !total) {
                free(all);
                return;
        }
        for (int i = 0; i < clients; i++) {
                memcpy(all + k, lat[i], count[i] * sizeof(double));
                k += count[i];
        }
        bench_sort_doubles(all, total);
        out->p50 = all[total / 2];
        out->p99 = all[total * 99 / 100];
        free(all);
}
