/*
 * sortd-bench's parts 1 and 2 (sortd_bench.c says what it measures): the inline path and the
 * shared-memory region path through a running sortd, each against the CPU engine in-process on
 * the same keys, every result checked against the in-process sort.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datagen.h"
#include "engine.h"
#include "sortd.h"
#include "sortd_bench.h"

/* The issues' targets are for 2^24 keys and more: below, the ratios print without them. */
#define TARGET_N ((size_t)1 << 24)

/*
 * What any inline path must pay here: the keys in and out through a bare Unix socket pair,
 * with a child process that echoes them and the same 4 MiB send buffers as libsortd and sortd.
 * Returns the median seconds of a round trip, or a negative number.
 */
static double socket_floor(size_t bytes)
{
        uint8_t *buf = malloc(bytes);
        double t[BENCH_RUNS];
        int sv[2], done = 0;
        pid_t pid;

        if (buf && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
                for (int i = 0; i < 2; i++)
                        setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &(int){4 << 20}, sizeof(int));
                memset(buf, 1, bytes);
                pid = fork();
                if (pid == 0) {
                        close(sv[0]);
                        for (int r = 0; r < BENCH_RUNS; r++)
                                if (bench_transfer(sv[1], buf, bytes, false) < 0 ||
                                    bench_transfer(sv[1], buf, bytes, true) < 0)
                                        _exit(1);
                        _exit(0);
                }
                close(sv[1]);
                for (; done < BENCH_RUNS && pid > 0; done++) {
                        double t0 = bench_now();

                        if (bench_transfer(sv[0], buf, bytes, true) < 0 ||
                            bench_transfer(sv[0], buf, bytes, false) < 0)
                                break;
                        t[done] = bench_now() - t0;
                }
                /* Closing our end ends a child still waiting to read. */
                close(sv[0]);
                if (pid > 0)
                        waitpid(pid, NULL, 0);
        }
        free(buf);
        return done == BENCH_RUNS ? bench_median(t, BENCH_RUNS) : -1;
}

/*
 * The paths' common set-up (paths_begin): an in-process CPU engine for n keys, a connection,
 * n random u32 keys in input (from seed) and in want the engine's sort of them, which every
 * sort through sortd must equal; keys is a buffer of n keys. After an error, which it says on
 * stderr, paths_end still frees whatever was taken.
 */
typedef struct path_bench {
        size_t n;
        sortd_engine *e;
        sortd_conn *c;
        uint32_t *input, *want, *keys;
} path_bench;

static const sortd_sort_desc u32_desc = {.key_type = SORTD_KEY_U32};

static int paths_begin(path_bench *b, const char *sock, unsigned threads, size_t n, uint64_t seed)
{
        sortd_engine_config ec = {.capacity = n, .threads = threads};
        char err[256] = "out of memory";

        *b = (path_bench){.n = n};
        b->input = malloc(n * 4);
        b->want = malloc(n * 4);
        b->keys = malloc(n * 4);
        if (!b->input || !b->want || !b->keys ||
            sortd_engine_create("cpu", &ec, &b->e, err, sizeof(err)) != SORTD_OK ||
            sortd_connect(sock, NULL, &b->c, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: setup failed: %s\n", err);
                return -1;
        }
        datagen_fill(b->input, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        memcpy(b->want, b->input, n * 4);
        if (sortd_engine_sort(b->e, &u32_desc, b->want, NULL, n) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: the engine in-process: %s\n",
                        sortd_engine_error(b->e));
                return -1;
        }
        return 0;
}

static void paths_end(path_bench *b)
{
        sortd_close(b->c);
        sortd_engine_destroy(b->e);
        free(b->input);
        free(b->want);
        free(b->keys);
}

/* Seconds of one in-process sort of the input, in b->keys. */
static double local_once(path_bench *b)
{
        double t0;

        memcpy(b->keys, b->input, b->n * 4);
        t0 = bench_now();
        sortd_engine_sort(b->e, &u32_desc, b->keys, NULL, b->n);
        return bench_now() - t0;
}

/* Whether sortd's result got equals the in-process sort; says where it does not. */
static bool same_result(const path_bench *b, const uint32_t *got, const char *path)
{
        for (size_t i = 0; i < b->n; i++)
                if (got[i] != b->want[i]) {
                        fprintf(stderr,
                                "sortd-bench: WRONG RESULT through the %s path: key %zu is %u, "
                                "the engine in-process gave %u\n",
                                path, i, got[i], b->want[i]);
                        return false;
                }
        return true;
}

/*
 * The runs of a path: each sort through sortd right after an in-process sort of the same keys.
 * This VM's speed drifts by the minute and jumps between runs by a fifth, so the ratio is the
 * median of each pair's ratio: a pair shares its stretch of time, where two medians of their own
 * can each come from another. Nine pairs, where five read 1.00-1.23x at 2^26 from one build.
 */
#define PATH_RUNS 9

static double paired_ratio(const double *local, const double *remote)
{
        double r[PATH_RUNS];

        for (int k = 0; k < PATH_RUNS; k++)
                r[k] = remote[k] / local[k];
        return bench_median(r, PATH_RUNS);
}

/*
 * A path's table: its title, the in-process and through-sortd medians l and rm (seconds; so
 * the daemon's own sort), and the median of their paired ratios with that many decimals, beside
 * the target where n is as large as the size.
 */
static void print_path(const char *title, size_t n, unsigned threads, double l, double rm,
                       double so, double ratio, double target, int decimals)
{
        char name[32];

        printf("%s, %s u32 keys, %u engine threads (median of %d, verified):\n", title,
               bench_count_name(n, name, sizeof(name)), threads, PATH_RUNS);
        printf("  in-process engine  %8.1f ms  %7.1f Mkeys/s\n", l * 1e3, n / l * 1e-6);
        printf("  through sortd      %8.1f ms  %7.1f Mkeys/s  (daemon's sort %.1f ms)\n", rm * 1e3,
               n / rm * 1e-6, so * 1e3);
        printf("  ratio              %8.*fx  (of each pair", decimals, ratio);
        if (n >= TARGET_N)
                printf("; target <= %.2fx", target);
        printf(")\n");
}

int bench_inline_path(const char *sock, unsigned threads, size_t n)
{
        double local[PATH_RUNS], remote[PATH_RUNS], sort_only[PATH_RUNS];
        path_bench b;
        int r = -1;

        if (paths_begin(&b, sock, threads, n, 42) < 0)
                goto out;
        for (int k = 0; k < PATH_RUNS; k++) {
                sortd_request q = {.keys = b.keys, .n = n, .key_type = SORTD_KEY_U32};
                double t0;

                local[k] = local_once(&b);
                memcpy(b.keys, b.input, n * 4);
                t0 = bench_now();
                if (sortd_submit(b.c, &q) != SORTD_OK || sortd_receive(b.c, &q) != SORTD_OK) {
                        fprintf(stderr, "sortd-bench: %s\n", sortd_error_message(b.c));
                        goto out;
                }
                remote[k] = bench_now() - t0;
                sort_only[k] = (double)q.timings.sort_ns * 1e-9;
                if (!same_result(&b, b.keys, "inline"))
                        goto out;
        }
        double ratio = paired_ratio(local, remote);
        double l = bench_median(local, PATH_RUNS), rm = bench_median(remote, PATH_RUNS);

        print_path("inline overhead", n, threads, l, rm, bench_median(sort_only, PATH_RUNS), ratio,
                   1.35, 2);
        double floor = socket_floor(n * 4);

        if (floor > 0)
                printf("  bare socket pair   %8.1f ms  %.1f MiB each way; engine + it: %.2fx\n",
                       floor * 1e3, n * 4 / 1048576.0, (l + floor) / l);
        r = 0;
out:
        paths_end(&b);
        return r;
}

/* One sort of the input through region r, copied in untimed and verified: seconds, or -1. */
static double region_once(path_bench *b, sortd_region *r, double *sort_only)
{
        sortd_region_sort rs = {.keys = r, .n = b->n, .key_type = SORTD_KEY_U32};
        double t0, t;

        memcpy(sortd_region_data(r), b->input, b->n * 4);
        t0 = bench_now();
        if (sortd_sort_in_region(b->c, &rs) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: region: %s\n", sortd_error_message(b->c));
                return -1;
        }
        t = bench_now() - t0;
        *sort_only = (double)rs.timings.sort_ns * 1e-9;
        return same_result(b, sortd_region_data(r), "region") ? t : -1;
}

/*
 * The region path against the engine in-process, in pairs as above. The first sort in a new
 * region maps its pages into the daemon: what a client that sorts once per region pays, so it
 * is reported on its own, and the medians and ratio are of the sorts after it.
 */
int bench_region_path(const char *sock, unsigned threads, size_t n)
{
        double local[PATH_RUNS + 1], remote[PATH_RUNS + 1], sort_only[PATH_RUNS + 1], l, rm;
        sortd_region *rg = NULL;
        path_bench b;
        int r = -1;

        if (paths_begin(&b, sock, threads, n, 43) < 0)
                goto out;
        if (sortd_region_create(b.c, n * 4, &rg) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: setup failed: %s\n", sortd_error_message(b.c));
                goto out;
        }
        for (int k = 0; k <= PATH_RUNS; k++) {
                local[k] = local_once(&b);
                remote[k] = region_once(&b, rg, &sort_only[k]);
                if (remote[k] < 0)
                        goto out;
        }
        double ratio = paired_ratio(local + 1, remote + 1);

        l = bench_median(local + 1, PATH_RUNS);
        rm = bench_median(remote + 1, PATH_RUNS);
        print_path("shared-memory region", n, threads, l, rm,
                   bench_median(sort_only + 1, PATH_RUNS), ratio, 1.03, 3);
        printf("  first, new region  %8.1f ms  %7.1f Mkeys/s  (%.2fx the median)\n",
               remote[0] * 1e3, n / remote[0] * 1e-6, remote[0] / rm);
        r = 0;
out:
        if (rg)
                sortd_region_destroy(b.c, rg);
        paths_end(&b);
        return r;
}
