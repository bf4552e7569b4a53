/* What sortd-bench's parts share (toolkit.c), for sortd_bench.c, host_paths.c, small_floor.c,
   clients.c, segments.c and device_path.c where CUDA is built. */
#ifndef SORTD_BENCH_H
#define SORTD_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"

#define BENCH_RUNS 5

/* "2^K" for a power of two, else the number, in buf. */
const char *bench_count_name(size_t n, char *buf, size_t len);

/* The daemons bench_start_daemon starts get --cpu-path-keys keys ("auto" until set). */
void bench_set_cpu_path_keys(const char *keys);
/* The socket of the daemon running now (bench_start_daemon's answer). */
const char *bench_daemon_socket(void);

/*
 * The sortd a part sorts through: bin on a private socket, with the engine, capacity and
 * --threads given, the run's --cpu-path-keys, and device_streams sorts at once on a device
 * (NULL: the daemon's default). Returns its socket's path once it answers, or NULL after
 * saying why; bench_stop_daemon ends it. One at a time.
 */
const char *bench_start_daemon(const char *bin, const char *threads, const char *engine,
                               size_t capacity, const char *device_streams);
void bench_stop_daemon(void);

/* Moves len bytes through a socket, in (out false) or out (send() without SIGPIPE should the
   peer be gone): 0, or -1. */
int bench_transfer(int fd, uint8_t *buf, size_t len, bool out);

/* Requests per second and latency percentiles (seconds) of a run of concurrent clients. */
typedef struct bench_rate {
        double per_s, p50, p99;
} bench_rate;

/* Of clients' latencies lat[i][0..count[i]) over elapsed seconds. */
void bench_rate_of(double *const *lat, const size_t *count, int clients, double elapsed,
                   bench_rate *out);

/*
 * Parts 1 and 2 (host_paths.c), through the sortd listening on sock (a cpu engine of capacity n
 * or more), against a cpu engine of threads threads in-process: n u32 keys inline, or in a
 * shared-memory region. Each prints its table; 0, or -1 after saying what failed (a wrong
 * result included).
 */
int bench_inline_path(const char *sock, unsigned threads, size_t n);
int bench_region_path(const char *sock, unsigned threads, size_t n);

/*
 * The floor under the small-request rows (small_floor.c): clients (at most 64) each sending
 * 1,024-key requests, waiting for each reply, to a one-thread epoll server that echoes them
 * (sort: after sorting the keys with a one-thread cpu engine) for seconds. 0, or -1.
 */
int bench_small_floor(int clients, bool sort, double seconds, bench_rate *out);

/*
 * The device path through the sortd listening on sock, which must serve a GPU engine of
 * capacity n or more (device_path.c): prints its table; 0, or -1 after saying what failed.
 */
int bench_device_path(const char *sock, size_t n);

/* --clients (clients.c): what the command line asked for. */
typedef struct bench_clients_config {
        const char *bin, *threads, *engine; /* the daemons' */
        int clients;                        /* 1 to BENCH_MAX_CLIENTS */
        size_t n;                           /* keys per sort */
        long sorts;                         /* per client and phase; 0: for seconds instead */
        double seconds;
        const char *streams[2]; /* device-streams of the phases (NULL: the default), ... */
        int nstreams;           /* ... one setting, or two compared */
        int rounds;
} bench_clients_config;

#define BENCH_MAX_CLIENTS 64
#define BENCH_MAX_ROUNDS 100

/*
 * Runs cfg's phases, each on a daemon of its own (bench_start_daemon), and prints a line per
 * phase with a row per device, then the medians and, for two settings, the gain of the first
 * over the second: 0, or -1 after saying what failed (a wrong result included).
 */
int bench_clients(const bench_clients_config *cfg);

/* --segments (segments.c): pairs of at most SEG_MAX_PAIRS. */
#define SEG_MAX_PAIRS 21

/*
 * Through the sortd listening on sock (capacity rows x row_len and topk_n keys or more): rows
 * of row_len u32 keys in one segmented request against one request a row, then (k > 0) the
 * top-k of topk_n u32 keys against a full sort of them, each over pairs alternated pairs.
 * Prints their medians and ratios: 0, or -1 after saying what failed (a wrong result included).
 */
int bench_segments(const char *sock, size_t rows, size_t row_len, size_t topk_n, size_t k,
                   int pairs);

#endif
