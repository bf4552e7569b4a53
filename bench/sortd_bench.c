/*
 * sortd-bench: what the daemon's inline path costs, measured in one run.
 *
 *   1. Inline overhead: 2^24 random u32 keys sorted through sortd (connect once, then
 *      sortd_sort: copy in, sort, copy out) against the same engine called in-process on the
 *      same data, each sort through sortd right after an in-process one: their medians, and the
 *      median of each pair's ratio. Then the same bytes in and out through a bare socket pair,
 *      the floor of any path that copies them.
 *   2. The shared-memory path: 2^24 and 2^26 u32 keys sorted in place in a region
 *      (sortd_sort_in_region: nothing crosses the socket but the request and its reply)
 *      against the engine in-process on the same data, and a new region's first sort.
 *      Parts 1 and 2 are in host_paths.c, and check every result.
 *   3. Small requests: 1,024-key u32 sorts from 1, 8 and 64 concurrent clients, each
 *      looping for a fixed time, inline and through a region of their own: requests per
 *      second, p50 and p99 latency; then the same 8 clients while another sorts 2^24 keys
 *      over and over (issue 17's mixed load).
 *
 * It starts its own sortd (the binary from the build, or argv[1]) on a temporary socket with
 * the same engine settings as the in-process one: `sortd-bench [SORTD] [--threads N]
 * [--paths [--n N] | --small [--engine E]] [--cpu-path-keys N]`; --paths runs parts 1 and 2
 * alone (--n N: both at N keys, 2 to 2^26, "2^K" or a number, rather than 2^24 and 2^26),
 * --small part 3 alone (on engine E, cpu by default: scripts/gpu-check runs it on cuda), and
 * --cpu-path-keys is passed on to the daemon.
 *
 * `sortd-bench --device [--n N] [SORTD]` measures the GPU's device path instead
 * (device_path.c), at N keys (2 to 2^28; default 2^28, the data-paths issue's size): exit 77
 * where there is no GPU or no CUDA engine.
 *
 * `sortd-bench --clients K [--n N] [--sorts C | --seconds S] [--device-streams A[,B]]
 * [--rounds R] [--engine E] [SORTD]` measures K clients at once, each sorting N u32 keys (2 to
 * 2^26, default 2^26) in a host region, on a daemon of engine E (auto by default: every GPU,
 * else the cpu engine), for C sorts a client or S seconds (default 3) a phase: the aggregate
 * rate and each device's share (clients.c). R rounds of phases (default 1); with A,B each
 * round has a phase on a daemon of device-streams A and one of B (R default 2), and the gain
 * of A over B ends it.
 *
 * `sortd-bench --segments [--rows R] [--row-len L] [--n N] [--k K] [--pairs P] [--engine E]
 * [SORTD]` measures rows and top-k through a daemon of engine E (cpu by default): R rows of L
 * u32 keys (default 10^4 x 1,024) in one segmented request against one request a row, and the
 * top K (default 1,000; 0: none) of N u32 keys (default 2^24) against a full sort of them, over
 * P pairs (default 5) alternated (segments.c).
 *
 * Every daemon it starts must answer within 60 s, or $SORTD_TEST_START_SECONDS.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef SORTD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "datagen.h"
#include "sortd.h"
#include "sortd_bench.h"

#ifndef SORTD_BIN
#define SORTD_BIN "sortd"
#endif

#define BIG_N ((size_t)1 << 24)
#define HUGE_N ((size_t)1 << 26)   /* the region path's larger size */
#define DEVICE_N ((size_t)1 << 28) /* --device: the size, and the daemon's capacity */
#define SMALL_N 1024
#define SMALL_SECONDS 2.0

/* --cpu-path-keys N, as passed on to the daemon ("auto" when not given). */
static const char *cpu_path_keys = "auto";

typedef struct small_client {
        pthread_t th;
        bool via_region;
        double *lat;
        size_t count, cap;
        int failed;
} small_client;

static double small_deadline;

/* One sort of SMALL_N keys from input, inline or in region r; false on an error. */
static bool small_sort(sortd_conn *c, sortd_region *r, const uint32_t *input, uint32_t *keys)
{
        sortd_region_sort rs = {.keys = r, .n = SMALL_N, .key_type = SORTD_KEY_U32};

        if (!r) {
                memcpy(keys, input, SMALL_N * 4);
                return sortd_sort(c, keys, SMALL_N, SORTD_KEY_U32, NULL) == SORTD_OK;
        }
        memcpy(sortd_region_data(r), input, SMALL_N * 4);
        return sortd_sort_in_region(c, &rs) == SORTD_OK;
}

static void *small_main(void *arg)
{
        small_client *sc = arg;
        uint32_t keys[SMALL_N], input[SMALL_N];
        sortd_region *r = NULL;
        sortd_conn *c;
        char err[256];

        datagen_fill(input, SMALL_N, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, (uint64_t)(uintptr_t)sc);
        if (sortd_connect(bench_daemon_socket(), NULL, &c, err, sizeof(err)) != SORTD_OK) {
                sc->failed = 1;
                return NULL;
        }
        if (sc->via_region && sortd_region_create(c, SMALL_N * 4, &r) != SORTD_OK)
                sc->failed = 1;
        while (!sc->failed && bench_now() < small_deadline) {
                double t0 = bench_now();

                if (!small_sort(c, r, input, keys)) {
                        sc->failed = 1;
                        break;
                }
                if (sc->count == sc->cap) {
                        sc->cap = sc->cap ? sc->cap * 2 : 4096;
                        sc->lat = realloc(sc->lat, sc->cap * sizeof(double));
                }
                sc->lat[sc->count++] = bench_now() - t0;
        }
        sortd_region_destroy(c, r);
        sortd_close(c);
        return NULL;
}

static void print_rate(int clients, const char *how, const bench_rate *r, bool failed)
{
        printf("  %2d client(s), %-10s %8.0f sorts/s  p50 %7.3f ms  p99 %7.3f ms%s\n", clients, how,
               r->per_s, r->p50 * 1e3, r->p99 * 1e3, failed ? "  (errors!)" : "");
}

static int small_requests(int clients, bool via_region, double *p99)
{
        small_client *sc = calloc((size_t)clients, sizeof(*sc));
        double **lat = calloc((size_t)clients, sizeof(*lat)), t0;
        size_t *counts = calloc((size_t)clients, sizeof(*counts));
        bench_rate rate;
        int failed = 0;

        small_deadline = bench_now() + SMALL_SECONDS;
        t0 = bench_now();
        for (int i = 0; i < clients; i++) {
                sc[i].via_region = via_region;
                pthread_create(&sc[i].th, NULL, small_main, &sc[i]);
        }
        for (int i = 0; i < clients; i++) {
                pthread_join(sc[i].th, NULL);
                lat[i] = sc[i].lat;
                counts[i] = sc[i].count;
                failed |= sc[i].failed;
        }
        bench_rate_of(lat, counts, clients, bench_now() - t0, &rate);
        if (p99)
                *p99 = rate.p99;
        print_rate(clients, via_region ? "region" : "inline", &rate, failed);
        for (int i = 0; i < clients; i++)
                free(sc[i].lat);
        free(counts);
        free(lat);
        free(sc);
        return failed ? -1 : 0;
}

/* The machine's floor for the rows above (small_floor.c), beside them. */
static int small_floor(int clients)
{
        bench_rate echo, sorted;
        int r = bench_small_floor(clients, false, SMALL_SECONDS, &echo);

        r |= bench_small_floor(clients, true, SMALL_SECONDS, &sorted);
        print_rate(clients, "floor echo", &echo, r != 0);
        print_rate(clients, "floor sort", &sorted, r != 0);
        return r;
}

/* A client sorting BIG_N u32 keys in a region of its own, again and again until
   small_deadline. */
typedef struct big_client {
        pthread_t th;
        double total;
        int count, failed;
} big_client;

static void *big_main(void *arg)
{
        big_client *bc = arg;
        uint32_t *input = malloc(BIG_N * 4);
        sortd_region *r = NULL;
        sortd_conn *c = NULL;
        char err[256];

        if (!input ||
            sortd_connect(bench_daemon_socket(), NULL, &c, err, sizeof(err)) != SORTD_OK ||
            sortd_region_create(c, BIG_N * 4, &r) != SORTD_OK) {
                bc->failed = 1;
                goto out;
        }
        datagen_fill(input, BIG_N, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 44);
        while (bench_now() < small_deadline) {
                sortd_region_sort rs = {.keys = r, .n = BIG_N, .key_type = SORTD_KEY_U32};
                double t0;

                memcpy(sortd_region_data(r), input, BIG_N * 4);
                t0 = bench_now();
                if (sortd_sort_in_region(c, &rs) != SORTD_OK) {
                        bc->failed = 1;
                        break;
                }
                bc->total += bench_now() - t0;
                bc->count++;
        }
out:
        sortd_region_destroy(c, r);
        sortd_close(c);
        free(input);
        return NULL;
}

/* A phase of BIG_N-key sorts over and over, with 8 small clients (whose p99 *p99 gets) or
   without (p99 NULL): the mean large sort in seconds, or a negative number. */
static double big_phase(double *p99, int *r)
{
        big_client bc = {0};

        small_deadline = bench_now() + SMALL_SECONDS;
        pthread_create(&bc.th, NULL, big_main, &bc);
        if (p99)
                *r |= small_requests(8, true, p99);
        pthread_join(bc.th, NULL);
        return bc.failed || !bc.count ? -1.0 : bc.total / bc.count;
}

/*
 * Mixed load: 8 small clients while another sorts BIG_N keys over and over. The small sorts'
 * p99 against their unloaded p99 plus one large sort, and the large sort's mean time against
 * its own alone. This machine's speed drifts between phases seconds apart, so the two
 * alternate, MIXED_ROUNDS each, and their medians compare.
 */
#define MIXED_ROUNDS 3

static int mixed_load(double unloaded_p99)
{
        double alone[MIXED_ROUNDS], loaded[MIXED_ROUNDS], p99[MIXED_ROUNDS];
        double big_alone, big_loaded, small_p99;
        int r = 0;

        printf("mixed load: 8 small clients (region) while another client sorts 2^24 u32 keys "
               "in a region, over and over (%d rounds, each alone then loaded):\n",
               MIXED_ROUNDS);
        for (int k = 0; k < MIXED_ROUNDS; k++) {
                alone[k] = big_phase(NULL, &r);
                loaded[k] = big_phase(&p99[k], &r);
                if (alone[k] < 0 || loaded[k] < 0) {
                        fprintf(stderr, "sortd-bench: the large sorts failed\n");
                        return -1;
                }
        }
        big_alone = bench_median(alone, MIXED_ROUNDS);
        big_loaded = bench_median(loaded, MIXED_ROUNDS);
        small_p99 = bench_median(p99, MIXED_ROUNDS);
        printf("  small p99 %.3f ms, median (target < 2 x unloaded %.3f + one large sort %.1f = "
               "%.1f ms)\n",
               small_p99 * 1e3, unloaded_p99 * 1e3, big_alone * 1e3,
               (2 * unloaded_p99 + big_alone) * 1e3);
        printf("  large sort %.1f ms, alone %.1f ms, medians: %+.1f%% (target <= +10%%)\n",
               big_loaded * 1e3, big_alone * 1e3, (big_loaded / big_alone - 1) * 100);
        return r;
}

/* --device: the GPU path alone, against a daemon on the cuda engine. 77: no GPU here. */
/* Part 3: small requests from 1, 8 and 64 clients, inline and in regions, then the mixed load. */
static int small_part(void)
{
        double p99_8 = 0;
        int r = 0;

        printf("small requests, %d u32 keys each, %.0f s per row (targets, issue 17: 8 clients "
               ">= 100000/s with p99 < 0.5 ms; 64 clients >= 8 clients' rate, p99 < 2 ms):\n",
               SMALL_N, SMALL_SECONDS);
        for (int k = 0; k < 3; k++) {
                static const int clients[] = {1, 8, 64};

                r |= small_requests(clients[k], false, NULL);
                r |= small_requests(clients[k], true, clients[k] == 8 ? &p99_8 : NULL);
                r |= small_floor(clients[k]);
        }
        return r | mixed_load(p99_8);
}

static int device_main(const char *bin, size_t n)
{
#ifdef SORTD_HAVE_CUDA
        int devices = 0, r;

        if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
                printf("SKIP: no CUDA device: the device path needs a GPU\n");
                return 77;
        }
        if (!bench_start_daemon(bin, "0", "cuda", n, NULL))
                return 1;
        r = bench_device_path(bench_daemon_socket(), n);
        bench_stop_daemon();
        return r ? 1 : 0;
#else
        (void)bin;
        (void)n;
        printf("SKIP: this build has no CUDA engines: the device path needs them\n");
        return 77;
#endif
}

/* --n's value: "2^K" or a decimal count, within [2, DEVICE_N]; 0 when it is not. */
static size_t parse_count(const char *s)
{
        unsigned long long v;
        char *end;

        errno = 0;
        if (s[0] == '2' && s[1] == '^') {
                v = strtoull(s + 2, &end, 10);
                v = !errno && *end == '\0' && s[2] >= '0' && s[2] <= '9' && v < 64 ? 1ull << v : 0;
        } else {
                v = strtoull(s, &end, 10);
                v = !errno && *end == '\0' && s[0] >= '0' && s[0] <= '9' ? v : 0;
        }
        return v >= 2 && v <= DEVICE_N ? (size_t)v : 0;
}

/* A whole decimal number in [lo, hi] for an option's value; -1 when it is not one. */
static long parse_long(const char *s, long lo, long hi)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        return !errno && end != s && *end == '\0' && v >= lo && v <= hi ? v : -1;
}

/* --device-streams S or S,T: each given to a daemon of its own, as the daemon checks it. */
static int parse_streams(bench_clients_config *cc, char *list)
{
        char *comma = strchr(list, ',');

        cc->streams[0] = list;
        cc->nstreams = 1;
        if (comma) {
                *comma = '\0';
                cc->streams[1] = comma + 1;
                cc->nstreams = 2;
        }
        if (!*cc->streams[0] || (comma && (!*cc->streams[1] || strchr(comma + 1, ',')))) {
                fprintf(stderr, "sortd-bench: --device-streams: give one setting, or two to "
                                "compare (2,1)\n");
                return -1;
        }
        return 1;
}

#define XSTR(x) STR_(x)
#define STR_(x) #x

/* The options of --clients alone: 1 when opt is one and has taken val, 0 when opt is none of
   them, -1 after saying what is wrong with val. */
static int clients_option(bench_clients_config *cc, const char *opt, char *val)
{
        const char *want;
        char *end;
        bool ok;

        if (strcmp(opt, "--clients") == 0) {
                ok = (cc->clients = (int)parse_long(val, 1, BENCH_MAX_CLIENTS)) > 0;
                want = "1 to " XSTR(BENCH_MAX_CLIENTS) " clients";
        } else if (strcmp(opt, "--sorts") == 0) {
                ok = (cc->sorts = parse_long(val, 1, 1000000)) > 0;
                want = "1 to 1000000 sorts a client";
        } else if (strcmp(opt, "--rounds") == 0) {
                ok = (cc->rounds = (int)parse_long(val, 1, BENCH_MAX_ROUNDS)) > 0;
                want = "1 to " XSTR(BENCH_MAX_ROUNDS) " rounds";
        } else if (strcmp(opt, "--seconds") == 0) {
                cc->seconds = strtod(val, &end);
                ok = end != val && *end == '\0' && cc->seconds > 0 && cc->seconds <= 3600;
                want = "more than 0 and up to 3600 seconds";
        } else if (strcmp(opt, "--device-streams") == 0) {
                return parse_streams(cc, val);
        } else {
                return 0;
        }
        if (ok)
                return 1;
        fprintf(stderr, "sortd-bench: %s %s: give %s\n", opt, val, want);
        return -1;
}

/* --segments: what it sorts (segments.c), 0 where an option was not given. */
typedef struct segments_config {
        bool on;
        size_t rows, row_len, k;
        int pairs;
} segments_config;

/* The options of --segments alone (--n is the top-k's keys): as clients_option. */
static int segments_option(segments_config *sc, const char *opt, char *val)
{
        const char *want;
        long v;

        if (strcmp(opt, "--rows") == 0) {
                sc->rows = (size_t)(v = parse_long(val, 1, 1 << 24));
                want = "1 to 2^24 rows";
        } else if (strcmp(opt, "--row-len") == 0) {
                sc->row_len = (size_t)(v = parse_long(val, 1, 1 << 24));
                want = "1 to 2^24 keys a row";
        } else if (strcmp(opt, "--k") == 0) {
                sc->k = (size_t)(v = parse_long(val, 0, 1 << 24));
                want = "0 (no top-k) to 2^24";
        } else if (strcmp(opt, "--pairs") == 0) {
                sc->pairs = (int)(v = parse_long(val, 1, SEG_MAX_PAIRS));
                want = "1 to " XSTR(SEG_MAX_PAIRS) " pairs";
        } else {
                return 0;
        }
        if (v >= 0)
                return 1;
        fprintf(stderr, "sortd-bench: %s %s: give %s\n", opt, val, want);
        return -1;
}

/* --segments: alone, on its own daemon; defaults are the targets' sizes (10^4 x 1,024, top 1,000
   of 2^24). */
static int segments_main(segments_config *sc, const char *bin, const char *threads,
                         const char *engine, bool other_part, size_t n)
{
        if (other_part) {
                fprintf(stderr, "sortd-bench: --segments runs alone: without --paths, --small, "
                                "--device and --clients\n");
                return 2;
        }
        size_t rows = sc->rows ? sc->rows : 10000, row_len = sc->row_len ? sc->row_len : 1024;
        size_t topk_n = n ? n : BIG_N, k = sc->k == (size_t)-1 ? 1000 : sc->k;

        if (rows * row_len > HUGE_N || topk_n > HUGE_N || k > topk_n) {
                fprintf(stderr, "sortd-bench: --segments sorts up to 2^26 keys (rows x row-len, "
                                "--n), and k <= --n\n");
                return 2;
        }
        engine = engine ? engine : "cpu";
        if (!bench_start_daemon(bin, threads, engine,
                                rows * row_len > topk_n ? rows * row_len : topk_n, NULL))
                return 1;
        printf("sortd on the %s engine, cpu-path-keys %s\n", engine, cpu_path_keys);
        int r = bench_segments(bench_daemon_socket(), rows, row_len, topk_n, k,
                               sc->pairs ? sc->pairs : BENCH_RUNS);
        bench_stop_daemon();
        return r ? 1 : 0;
}

/* --clients: alone, with its own defaults (2^26 keys, the auto engine, 3 s a phase). */
static int clients_main(bench_clients_config *cc, bool other_part, size_t n)
{
        if (other_part) {
                fprintf(stderr, "sortd-bench: --clients runs alone: without --paths, --small "
                                "and --device\n");
                return 2;
        }
        if (n > HUGE_N) {
                fprintf(stderr, "sortd-bench: --n %zu: --clients sorts 2 to 2^26 keys\n", n);
                return 2;
        }
        if (cc->sorts && cc->seconds) {
                fprintf(stderr, "sortd-bench: --sorts and --seconds each end a phase: give "
                                "one\n");
                return 2;
        }
        cc->n = n ? n : HUGE_N;
        cc->engine = cc->engine ? cc->engine : "auto";
        cc->seconds = cc->sorts || cc->seconds ? cc->seconds : 3.0;
        cc->rounds = cc->rounds ? cc->rounds : cc->nstreams == 2 ? 2 : 1;
        printf("sortd on the %s engine, cpu-path-keys %s\n", cc->engine, cpu_path_keys);
        return bench_clients(cc) ? 1 : 0;
}

int main(int argc, char **argv)
{
        const char *bin = SORTD_BIN, *threads = "0", *engine = NULL;
        bool device = false, small_only = false, paths_only = false;
        bench_clients_config cc = {0};
        segments_config sc = {.k = (size_t)-1};
        size_t n = 0; /* --n: the paths' one size (0 = 2^24 and 2^26), or the device path's */
        int r = 0, took;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
                        threads = argv[++i];
                else if (strcmp(argv[i], "--device") == 0)
                        device = true;
                else if (strcmp(argv[i], "--small") == 0)
                        small_only = true;
                else if (strcmp(argv[i], "--paths") == 0)
                        paths_only = true;
                else if (strcmp(argv[i], "--segments") == 0)
                        sc.on = true;
                else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
                        if (!(n = parse_count(argv[++i]))) {
                                fprintf(stderr,
                                        "sortd-bench: --n %s: give 2 to 2^28 keys, as "
                                        "a number or 2^K\n",
                                        argv[i]);
                                return 2;
                        }
                } else if (strcmp(argv[i], "--cpu-path-keys") == 0 && i + 1 < argc) {
                        cpu_path_keys = argv[++i];
                        bench_set_cpu_path_keys(cpu_path_keys);
                } else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
                        engine = argv[++i];
                else if (i + 1 < argc && (took = clients_option(&cc, argv[i], argv[i + 1]))) {
                        if (took < 0)
                                return 2;
                        i++;
                } else if (i + 1 < argc && (took = segments_option(&sc, argv[i], argv[i + 1]))) {
                        if (took < 0)
                                return 2;
                        i++;
                } else
                        bin = argv[i];
        }
        if (sc.on)
                return segments_main(&sc, bin, threads, engine,
                                     device || small_only || paths_only || cc.clients, n);
        if (sc.rows || sc.row_len || sc.pairs || sc.k != (size_t)-1) {
                fprintf(stderr, "sortd-bench: --rows, --row-len, --k and --pairs are for "
                                "--segments\n");
                return 2;
        }
        if (cc.clients) {
                cc.bin = bin;
                cc.threads = threads;
                cc.engine = engine;
                return clients_main(&cc, device || small_only || paths_only, n);
        }
        if (cc.sorts || cc.seconds || cc.rounds || cc.nstreams) {
                fprintf(stderr, "sortd-bench: --sorts, --seconds, --rounds and --device-streams "
                                "are for --clients\n");
                return 2;
        }
        if (device)
                return device_main(bin, n ? n : DEVICE_N);
        if (n && !paths_only) {
                fprintf(stderr, "sortd-bench: --n is for --paths, --device and --clients: part "
                                "3's sizes are fixed\n");
                return 2;
        }
        if (n > HUGE_N) {
                fprintf(stderr, "sortd-bench: --n %zu: --paths sorts 2 to 2^26 keys\n", n);
                return 2;
        }
        if (small_only && paths_only) {
                fprintf(stderr, "sortd-bench: --paths and --small each run one part: give one, "
                                "or neither for both\n");
                return 2;
        }
        if (engine && !small_only && strcmp(engine, "cpu") != 0) {
                fprintf(stderr, "sortd-bench: --engine is for --small and --clients: parts 1 "
                                "and 2 compare the daemon with the CPU engine in-process\n");
                return 2;
        }
        engine = engine ? engine : "cpu";
        /* The largest sort the run makes: a smaller capacity starts the daemon sooner. */
        size_t capacity = small_only ? BIG_N : n ? n : HUGE_N;

        if (!paths_only && capacity < BIG_N)
                capacity = BIG_N;
        if (!bench_start_daemon(bin, threads, engine, capacity, NULL))
                return 1;
        printf("sortd on the %s engine, cpu-path-keys %s\n", engine, cpu_path_keys);
        if (!small_only) {
                r |= bench_inline_path(bench_daemon_socket(), (unsigned)atoi(threads),
                                       n ? n : BIG_N);
                r |= bench_region_path(bench_daemon_socket(), (unsigned)atoi(threads),
                                       n ? n : BIG_N);
                if (!n)
                        r |= bench_region_path(bench_daemon_socket(), (unsigned)atoi(threads),
                                               HUGE_N);
        }
        if (!paths_only)
                r |= small_part();
        bench_stop_daemon();
        return r ? 1 : 0;
}
