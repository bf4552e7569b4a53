/*
 * The real CUDA IPC path: this process cudaMallocs an allocation, places keys and values at
 * offsets inside it as a caching allocator would, exports the allocation's handle, and
 * registers the pieces with `sortd --engine cuda` through sortd_region_register_cuda; sortd
 * opens the handle and sorts on the device. The results, copied back, must match the
 * reference sort (tests/support/reference.c), and the bytes around the spans must be untouched.
 * A UUID that names another device is refused, and leaves nothing open: the same handle
 * registers afterwards.
 *
 * Built with CUDA, against a GPU: without a CUDA device it says why and exits 77, which meson
 * reports as skipped. Built everywhere against the stand-in runtime (tests/support/fake_cuda,
 * whose c/cuda_runtime_api.h comes first on its include path), against sortd-emulated-cuda:
 * the same path with the kernels on the SIMT emulator. main initialises CUDA to find the
 * device, and a forked child of a process that did cannot use CUDA: the suite runs with
 * CK_NOFORK.
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "harness.h"
#include "reference.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == SORTD_CUDA_IPC_HANDLE_BYTES,
               "libsortd's handle bytes are a cudaIpcMemHandle_t");
_Static_assert(sizeof(((struct cudaDeviceProp *)0)->uuid) == SORTD_DEVICE_UUID_BYTES,
               "libsortd's UUID bytes are a cudaUUID_t");

#define ALLOC_BYTES ((size_t)4 << 20)
#define GUARD 0xAB /* every byte of the allocation outside the spans */

#define CUDA_OK(call)                                                                              \
        do {                                                                                       \
                cudaError_t e_ = (call);                                                           \
                ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));         \
        } while (0)

/* One device allocation, what a caller sends for it, and the daemon serving it. */
static struct {
        daemon_proc daemon;
        sortd_conn *conn;
        uint8_t *base; /* device memory */
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
} g;

static void setup(void)
{
        /* A small capacity keeps the emulated daemon's self-check at start short. */
        const char *const extra[] = {"--engine", "cuda", "--capacity", "16K", NULL};
        struct cudaDeviceProp prop;
        cudaIpcMemHandle_t h;
        int dev;

        CUDA_OK(cudaGetDevice(&dev));
        CUDA_OK(cudaGetDeviceProperties(&prop, dev));
        memcpy(g.uuid, prop.uuid.bytes, sizeof(g.uuid));
        CUDA_OK(cudaMalloc((void **)&g.base, ALLOC_BYTES));
        /* A handle names a whole allocation: the base's, whatever piece is registered. */
        CUDA_OK(cudaIpcGetMemHandle(&h, g.base));
        memcpy(g.handle, &h, sizeof(g.handle));
        daemon_start(&g.daemon, extra);
        g.conn = client_open(&g.daemon);
}

static void teardown(void)
{
        sortd_close(g.conn);
        ck_assert_int_eq(daemon_stop(&g.daemon, SIGTERM), 0);
        CUDA_OK(cudaFree(g.base));
}

static sortd_region *register_piece(uint64_t offset, uint64_t size)
{
        sortd_region *r = NULL;

        ck_assert_msg(sortd_region_register_cuda(g.conn, g.handle, offset, size, g.uuid, &r) ==
                              SORTD_OK,
                      "offset %llu size %llu: %s", (unsigned long long)offset,
                      (unsigned long long)size, sortd_error_message(g.conn));
        ck_assert_ptr_null(sortd_region_data(r));
        return r;
}

/* Where one sort's data lies: the keys and values regions, as offsets in the allocation. */
struct layout {
        uint64_t keys_region, keys_region_size, keys_offset; /* keys_offset: in the region */
        uint64_t vals_region, vals_region_size, vals_offset; /* vals_region 0: the keys' */
};

/* The whole allocation is GUARD but for the spans a sort may write. */
static void check_guards(const uint8_t *host, size_t ks_at, size_t ks_len, size_t vs_at,
                         size_t vs_len)
{
        for (size_t i = 0; i < ALLOC_BYTES; i++) {
                int in_span =
                        (i >= ks_at && i < ks_at + ks_len) || (i >= vs_at && i < vs_at + vs_len);

                if (!in_span && host[i] != GUARD)
                        ck_abort_msg("byte %zu of the allocation changed (keys at %zu, values at "
                                     "%zu)",
                                     i, ks_at, vs_at);
        }
}

/* Fills the spans, sorts them through sortd in device memory, and compares with the reference. */
static void sort_on_device(const sortd_sort_desc *d, size_t n, const struct layout *l,
                           uint64_t seed)
{
        size_t ks = sortd_key_size(d->key_type), vs = sortd_payload_size(d->payload);
        size_t ks_at = l->keys_region + l->keys_offset;
        size_t vs_at = (l->vals_region ? l->vals_region : l->keys_region) + l->vals_offset;
        uint8_t *keys = xmalloc(n * ks), *vals = xmalloc(n * vs), *host = xmalloc(ALLOC_BYTES);
        sortd_region *kr, *vr;
        sortd_region_sort rs = {.keys_offset = l->keys_offset,
                                .vals_offset = l->vals_offset,
                                .n = n,
                                .key_type = d->key_type,
                                .payload = d->payload,
                                .opts = {d->order, d->begin_bit, d->end_bit}};

        datagen_fill(keys, n, d->key_type, DATAGEN_FEW, 0, seed);
        if (vs)
                datagen_fill_values(vals, n, (unsigned)vs, seed + 1);
        CUDA_OK(cudaMemset(g.base, GUARD, ALLOC_BYTES));
        CUDA_OK(cudaMemcpy(g.base + ks_at, keys, n * ks, cudaMemcpyHostToDevice));
        if (vs && !sortd_payload_is_argsort(d->payload))
                CUDA_OK(cudaMemcpy(g.base + vs_at, vals, n * vs, cudaMemcpyHostToDevice));
        /* The daemon sorts on its own stream: our writes must have landed. */
        CUDA_OK(cudaDeviceSynchronize());
        kr = register_piece(l->keys_region, l->keys_region_size);
        vr = l->vals_region ? register_piece(l->vals_region, l->vals_region_size) : kr;
        rs.keys = kr;
        rs.vals = vs ? vr : NULL;
        ck_assert_msg(sortd_sort_in_region(g.conn, &rs) == SORTD_OK, "%s %s n=%zu: %s",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n,
                      sortd_error_message(g.conn));
        CUDA_OK(cudaMemcpy(host, g.base, ALLOC_BYTES, cudaMemcpyDeviceToHost));
        ck_assert_int_eq(ref_sort(d, keys, vs ? vals : NULL, n), 0);
        ck_assert_msg(memcmp(host + ks_at, keys, n * ks) == 0, "%s %s n=%zu: keys differ",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n);
        ck_assert_msg(memcmp(host + vs_at, vals, n * vs) == 0, "%s %s n=%zu: values differ",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n);
        check_guards(host, ks_at, n * ks, vs_at, n * vs);
        if (vr != kr)
                ck_assert_int_eq(sortd_region_destroy(g.conn, vr), SORTD_OK);
        ck_assert_msg(sortd_region_destroy(g.conn, kr) == SORTD_OK, "%s",
                      sortd_error_message(g.conn));
        free(keys);
        free(vals);
        free(host);
}

/*
 * _i walks u32 and u64 keys x every payload x both orders, with keys and values in one piece
 * of the allocation (768 bytes in, as a caching allocator hands out) or in two pieces.
 */
START_TEST(sorts_in_device_memory)
{
        const sortd_key_type types[] = {SORTD_KEY_U32, SORTD_KEY_U64};
        sortd_sort_desc d = {.key_type = types[_i / (SORTD_PAYLOAD_COUNT * 2)],
                             .payload = (sortd_payload)(_i / 2 % SORTD_PAYLOAD_COUNT),
                             .order = (sortd_order)(_i % 2)};
        const size_t n = 3001, sizes[] = {0, 1, 2, 257};
        const struct layout one = {768, 64 << 10, 64, 0, 0, 32 << 10};
        const struct layout two = {768, 32 << 10, 0, (1 << 20) + 512, 32 << 10, 8};

        sort_on_device(&d, n, &one, (uint64_t)_i);
        sort_on_device(&d, n, &two, (uint64_t)_i + 100);
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
                sort_on_device(&d, sizes[k], &two, (uint64_t)_i + 200 + k);
}
END_TEST

/* A UUID of another device is refused, and the handle is not left open in the daemon. */
START_TEST(wrong_uuid_refused)
{
        uint8_t wrong[SORTD_DEVICE_UUID_BYTES];
        sortd_region *r = (sortd_region *)1;
        sortd_status s;

        memcpy(wrong, g.uuid, sizeof(wrong));
        wrong[0] ^= 0xFF;
        s = sortd_region_register_cuda(g.conn, g.handle, 0, 4096, wrong, &r);
        ck_assert_msg(s != SORTD_OK, "a region on another device was accepted");
        ck_assert_str_ne(sortd_error_message(g.conn), "");
        printf("wrong UUID: %s: %s\n", sortd_strerror(s), sortd_error_message(g.conn));
        ck_assert_ptr_eq(r, (sortd_region *)1);
        ck_assert_uint_eq(status_of(&g.daemon).regions, 0);
        ck_assert_int_eq(sortd_ping(g.conn), SORTD_OK);
        r = register_piece(0, 4096);
        ck_assert_int_eq(sortd_region_destroy(g.conn, r), SORTD_OK);
}
END_TEST

static Suite *cuda_ipc_suite(void)
{
        Suite *s = suite_create("cuda_ipc");
        TCase *tc = tcase_create("cuda_ipc");

        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_loop_test(tc, sorts_in_device_memory, 0, 2 * SORTD_PAYLOAD_COUNT * 2);
        tcase_add_test(tc, wrong_uuid_refused);
        suite_add_tcase(s, tc);
        return s;
}

/* 77 (skipped) without a CUDA device: any error from the runtime here means none. */
static int probe(void)
{
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);

        if (e != cudaSuccess || count == 0) {
                printf("SKIP: no CUDA device: %s\n",
                       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
                return 77;
        }
        return 0;
}

int main(void)
{
        int rc = probe();

        return rc != 0 ? rc : run_suite_nofork(cuda_ipc_suite());
}
