/*
 * sortd-bench --device: the path for data that lives on the GPU. 2^28 u32 keys (or --n) in this
 * process's device memory, inside a larger allocation as allocators place buffers, are sorted
 * through sortd in a CUDA IPC region (the daemon, another process, opens the handle once) and,
 * alternately, by the same engine kind in-process on the same buffer
 * (sortd_engine_sort_device), whose kernel time the CUDA events give. Target: through sortd at
 * most 1.1x the kernel time plus 100 us. The daemon's reply splits its share: receiving the
 * request, the hand-off to its engine thread, the engine call; the rest of the round trip is
 * the reply's way back to the loop thread, the socket both ways and this process.
 */
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "engine.h"
#include "sortd.h"
#include "sortd_bench.h"

#define DEV_OFFSET 4096 /* where the buffer starts in its allocation */

typedef struct device_bench {
        size_t n;
        void *alloc;        /* the allocation the IPC handle names */
        uint32_t *keys;     /* the buffer sorted, DEV_OFFSET into it */
        uint32_t *pristine; /* the input, copied over keys before each sort */
        uint32_t *host;
        sortd_engine *engine;
        sortd_conn *conn;
        sortd_region *region;
} device_bench;

static bool cuda_ok(cudaError_t rc, const char *what)
{
        if (rc == cudaSuccess)
                return true;
        fprintf(stderr, "sortd-bench: %s: %s\n", what, cudaGetErrorString(rc));
        return false;
}

static bool setup(device_bench *b, const char *sock)
{
        sortd_engine_config ec = {.capacity = b->n};
        cudaIpcMemHandle_t handle;
        struct cudaDeviceProp prop;
        int dev = 0;
        char err[256] = "";

        b->host = malloc(b->n * 4);
        if (!b->host || !cuda_ok(cudaGetDevice(&dev), "cudaGetDevice") ||
            !cuda_ok(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties") ||
            !cuda_ok(cudaMalloc(&b->alloc, DEV_OFFSET + b->n * 4), "cudaMalloc") ||
            !cuda_ok(cudaMalloc((void **)&b->pristine, b->n * 4), "cudaMalloc") ||
            !cuda_ok(cudaIpcGetMemHandle(&handle, b->alloc), "cudaIpcGetMemHandle"))
                return false;
        b->keys = (uint32_t *)((char *)b->alloc + DEV_OFFSET);
        datagen_fill(b->host, b->n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 44);
        if (!cuda_ok(cudaMemcpy(b->pristine, b->host, b->n * 4, cudaMemcpyHostToDevice),
                     "cudaMemcpy"))
                return false;
        if (sortd_engine_create("cuda", &ec, &b->engine, err, sizeof(err)) != SORTD_OK ||
            sortd_connect(sock, NULL, &b->conn, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: setup failed: %s\n", err);
                return false;
        }
        if (sortd_region_register_cuda(b->conn, (const uint8_t *)handle.reserved, DEV_OFFSET,
                                       b->n * 4, (const uint8_t *)prop.uuid.bytes,
                                       &b->region) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: registering the CUDA region: %s\n",
                        sortd_error_message(b->conn));
                return false;
        }
        return true;
}

static void teardown(device_bench *b)
{
        sortd_region_destroy(b->conn, b->region);
        sortd_close(b->conn);
        sortd_engine_destroy(b->engine);
        cudaFree(b->alloc);
        cudaFree(b->pristine);
        free(b->host);
}

static bool reset(device_bench *b)
{
        return cuda_ok(cudaMemcpy(b->keys, b->pristine, b->n * 4, cudaMemcpyDeviceToDevice),
                       "cudaMemcpy") &&
               cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* The buffer holds the input's keys, ascending: the sum and xor of the input, in order. */
static bool verify(device_bench *b, const char *who)
{
        uint64_t sum_in = 0, sum_out = 0, xor_in = 0, xor_out = 0;
        uint32_t *out = malloc(b->n * 4);
        bool ok = out &&
                  cuda_ok(cudaMemcpy(out, b->keys, b->n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");

        for (size_t i = 0; ok && i < b->n; i++) {
                sum_in += b->host[i];
                xor_in ^= b->host[i] * 0x9e3779b97f4a7c15ull;
                sum_out += out[i];
                xor_out ^= out[i] * 0x9e3779b97f4a7c15ull;
                if (i && out[i - 1] > out[i]) {
                        fprintf(stderr, "sortd-bench: %s: keys %zu and %zu out of order\n", who,
                                i - 1, i);
                        ok = false;
                }
        }
        if (ok && (sum_in != sum_out || xor_in != xor_out)) {
                fprintf(stderr, "sortd-bench: %s: the sorted keys are not the input's\n", who);
                ok = false;
        }
        free(out);
        return ok;
}

/* The daemon's phases of one request, from its reply (sortd_timings), in seconds. */
enum { PH_REQUEST, PH_SWITCH, PH_SORT, PH_REST, PHASES };

static void phases_of(const sortd_timings *t, double remote, double ph[PHASES])
{
        ph[PH_REQUEST] = (double)t->transfer_ns * 1e-9;
        ph[PH_SWITCH] = (double)t->queued_ns * 1e-9;
        ph[PH_SORT] = (double)t->sort_ns * 1e-9;
        ph[PH_REST] = remote - ph[PH_REQUEST] - ph[PH_SWITCH] - ph[PH_SORT];
}

static bool one_round(device_bench *b, double *kernel, double *local, double *remote,
                      double ph[PHASES])
{
        sortd_sort_desc d = {.key_type = SORTD_KEY_U32};
        sortd_region_sort rs = {.keys = b->region, .n = b->n, .key_type = SORTD_KEY_U32};
        double t0;

        if (!reset(b))
                return false;
        t0 = bench_now();
        if (sortd_engine_sort_device(b->engine, &d, b->keys, NULL, b->n) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: in-process: %s\n", sortd_engine_error(b->engine));
                return false;
        }
        *local = bench_now() - t0;
        *kernel = sortd_engine_last_device_seconds(b->engine);
        if (!verify(b, "in-process") || !reset(b))
                return false;
        t0 = bench_now();
        if (sortd_sort_in_region(b->conn, &rs) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: through sortd: %s\n", sortd_error_message(b->conn));
                return false;
        }
        *remote = bench_now() - t0;
        phases_of(&rs.timings, *remote, ph);
        return verify(b, "through sortd");
}

/* One line, for scripts/gpu-check: each phase's median as "NAME 0.123 ms". */
static void print_phases(double ph[PHASES][BENCH_RUNS])
{
        static const char *const name[PHASES] = {"request", "switch", "sort", "rest"};

        printf("  daemon phases     ");
        for (int p = 0; p < PHASES; p++)
                printf("  %s %.3f ms", name[p], bench_median(ph[p], BENCH_RUNS) * 1e3);
        printf("\n");
}

int bench_device_path(const char *sock, size_t n)
{
        device_bench b = {.n = n};
        double kernel[BENCH_RUNS], local[BENCH_RUNS], remote[BENCH_RUNS], ph[PHASES][BENCH_RUNS];
        double one[PHASES], k, rm, limit;
        int r = -1;

        if (setup(&b, sock)) {
                r = 0;
                for (int i = 0; i < BENCH_RUNS; i++) {
                        if (!one_round(&b, &kernel[i], &local[i], &remote[i], one)) {
                                r = -1;
                                break;
                        }
                        for (int p = 0; p < PHASES; p++)
                                ph[p][i] = one[p];
                }
        }
        if (r == 0) {
                k = bench_median(kernel, BENCH_RUNS);
                rm = bench_median(remote, BENCH_RUNS);
                limit = 1.1 * k + 100e-6;
                printf("device path, %zu u32 keys in a CUDA IPC region (median of %d, every "
                       "result verified):\n",
                       n, BENCH_RUNS);
                printf("  kernel time        %8.3f ms  %7.2f GKeys/s\n", k * 1e3, n / k * 1e-9);
                printf("  in-process call    %8.3f ms  %7.2f GKeys/s\n",
                       bench_median(local, BENCH_RUNS) * 1e3,
                       n / bench_median(local, BENCH_RUNS) * 1e-9);
                printf("  through sortd      %8.3f ms  %7.2f GKeys/s\n", rm * 1e3, n / rm * 1e-9);
                print_phases(ph);
                printf("  target             %8.3f ms  (1.1 x kernel + 0.1 ms): %s\n", limit * 1e3,
                       rm <= limit ? "met" : "MISSED");
        }
        teardown(&b);
        return r;
}
