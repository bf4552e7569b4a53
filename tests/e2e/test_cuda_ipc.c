/*
 * The real CUDA IPC path: this process cudaMallocs an allocation, places keys and values at
 * offsets inside it as a caching allocator would, exports the allocation's handle, and
 * registers the pieces with `sortd --engine cuda` through sortd_region_register_cuda; sortd
 * opens the handle and sorts on the device. The results, copied back, must match the
 * reference sort (tests/support/reference.c), and the bytes around the spans must be untouched.
 * A UUID that names another device is refused, and leaves nothing open: the same handle
 * registers afterwards. Segments (their offsets sent as the region sort's payload) are sorted
 * in place, and their top-k written where topk_out says, in device memory.
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
#include "cuda_check.h"
#include "reference.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == SORTD_CUDA_IPC_HANDLE_BYTES,
               "libsortd's handle bytes are a cudaIpcMemHandle_t");
_Static_assert(sizeof(((struct cudaDeviceProp *)0)->uuid) == SORTD_DEVICE_UUID_BYTES,
               "libsortd's UUID bytes are a cudaUUID_t");

#define ALLOC_BYTES ((size_t)4 << 20)
#define GUARD 0xAB /* every byte of the allocation outside the spans */

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

        cuda_shared_alloc(ALLOC_BYTES, (void **)&g.base, g.handle, sizeof(g.handle), g.uuid);
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

/* ---- segments and top-k in device memory, on raw frames ---- */

#define SEG_N 3001
#define SEG_PIECE 768 /* the region: 64 KiB of the allocation from here */

/* A raw connection's CUDA region of the piece at SEG_PIECE; its id. */
static uint64_t raw_register_piece(int fd)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
        Sortd__Wire__Reply *r;
        uint64_t id;

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        reg.size = 64 << 10;
        reg.offset = SEG_PIECE;
        reg.cuda_ipc_handle = (ProtobufCBinaryData){sizeof(g.handle), g.handle};
        reg.device_uuid = (ProtobufCBinaryData){sizeof(g.uuid), g.uuid};
        req.id = 1;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = &reg;
        raw_send_request(fd, &req, 0);
        r = raw_recv_reply(fd, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "%s", r->error);
        id = r->register_region->region_id;
        sortd__wire__reply__free_unpacked(r, NULL);
        return id;
}

/*
 * Keys at 0 of the piece, values at 16 KiB, top-k results at 32 and 48 KiB; 3 segments of u32
 * offsets (one empty) sent as the payload. k = 0 sorts each segment in place, k = 5 writes the
 * first 5 of each to topk_out and leaves the inputs as they were.
 */
static void segments_on_device(int fd, uint64_t region, uint64_t k)
{
        static const uint32_t off[4] = {0, 1000, 1000, SEG_N};
        sortd_sort_desc d = {.key_type = SORTD_KEY_U32, .payload = SORTD_PAYLOAD_VALUES32};
        uint32_t keys[SEG_N], vals[SEG_N], want_k[SEG_N], want_v[SEG_N];
        uint8_t *host = xmalloc(ALLOC_BYTES);
        Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                           SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32, SEG_N);
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        Sortd__Wire__Segments seg = SORTD__WIRE__SEGMENTS__INIT;
        Sortd__Wire__TopkOut out = SORTD__WIRE__TOPK_OUT__INIT;
        uint8_t *at = host + SEG_PIECE;
        size_t m = 0;

        datagen_fill(keys, SEG_N, SORTD_KEY_U32, DATAGEN_FEW, 0, 7 + k);
        datagen_fill_values(vals, SEG_N, 4, 8 + k);
        CUDA_OK(cudaMemset(g.base, GUARD, ALLOC_BYTES));
        CUDA_OK(cudaMemcpy(g.base + SEG_PIECE, keys, sizeof(keys), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(g.base + SEG_PIECE + (16 << 10), vals, sizeof(vals),
                           cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        rd.region_id = region;
        rd.vals_offset = 16 << 10;
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &rd;
        seg.offset_type = SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32;
        seg.count = 3;
        s.segments = &seg;
        s.k = k;
        if (k) {
                out.keys_region_id = region;
                out.keys_offset = 32 << 10;
                out.vals_offset = 48 << 10;
                s.topk_out = &out;
        }
        raw_send_sort(fd, 2, &s, sizeof(off));
        raw_send_bytes(fd, off, sizeof(off));
        raw_expect_reply(fd, 2, SORTD_OK, NULL);
        memcpy(want_k, keys, sizeof(keys));
        memcpy(want_v, vals, sizeof(vals));
        for (int i = 0; i < 3; i++) {
                size_t len = off[i + 1] - off[i], take = k && k < len ? k : len;

                if (len)
                        ck_assert_int_eq(ref_sort(&d, want_k + off[i], want_v + off[i], len), 0);
                memmove(want_k + m, want_k + off[i], take * 4);
                memmove(want_v + m, want_v + off[i], take * 4);
                m += take;
        }
        CUDA_OK(cudaMemcpy(host, g.base, ALLOC_BYTES, cudaMemcpyDeviceToHost));
        if (k) {
                ck_assert_uint_eq(m, 10);
                ck_assert_msg(memcmp(at + (32 << 10), want_k, m * 4) == 0, "top-k keys differ");
                ck_assert_msg(memcmp(at + (48 << 10), want_v, m * 4) == 0, "top-k values differ");
                ck_assert_msg(memcmp(at, keys, sizeof(keys)) == 0 &&
                                      memcmp(at + (16 << 10), vals, sizeof(vals)) == 0,
                              "a top-k wrote its input");
                /* the inputs are as they were: only the results' spans may differ from GUARD */
                memset(at, GUARD, sizeof(keys));
                memset(at + (16 << 10), GUARD, sizeof(vals));
                check_guards(host, SEG_PIECE + (32 << 10), m * 4, SEG_PIECE + (48 << 10), m * 4);
        } else {
                ck_assert_msg(memcmp(at, want_k, sizeof(keys)) == 0, "segment keys differ");
                ck_assert_msg(memcmp(at + (16 << 10), want_v, sizeof(vals)) == 0,
                              "segment values differ");
                check_guards(host, SEG_PIECE, sizeof(keys), SEG_PIECE + (16 << 10), sizeof(vals));
        }
        free(host);
}

START_TEST(segments_in_device_memory)
{
        int fd = raw_connect(g.daemon.sock);
        uint64_t region = raw_register_piece(fd);

        segments_on_device(fd, region, 0);
        segments_on_device(fd, region, 5);
        raw_expect_in_sync(fd);
        close(fd);
}
END_TEST

/* Key columns are sorted in host memory: a CUDA region's are refused, by the daemon (a raw
   frame) and by libsortd before it sends, both with SORTD_E_UNSUPPORTED; nothing is written. */
START_TEST(columns_refused_in_device_memory)
{
        int fd = raw_connect(g.daemon.sock);
        uint64_t region = raw_register_piece(fd);
        Sortd__Wire__Sort s = raw_sort_msg(0, SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32, 100);
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        Sortd__Wire__Column col[2] = {SORTD__WIRE__COLUMN__INIT, SORTD__WIRE__COLUMN__INIT};
        Sortd__Wire__Column *cols[2] = {&col[0], &col[1]};
        const sortd_column two[2] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                     {SORTD_KEY_U128, SORTD_DESCENDING, 0, 0}};
        uint8_t *host = xmalloc(ALLOC_BYTES);
        sortd_region *r;

        CUDA_OK(cudaMemset(g.base, GUARD, ALLOC_BYTES));
        CUDA_OK(cudaDeviceSynchronize());
        col[0].key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
        col[1].key_type = SORTD__WIRE__KEY_TYPE__KEY_U128;
        s.n_columns = 2;
        s.columns = cols;
        rd.region_id = region;
        rd.vals_offset = 16 << 10;
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &rd;
        raw_send_sort(fd, 2, &s, 0);
        raw_expect_reply(fd, 2, SORTD_E_UNSUPPORTED, "key columns are sorted in host memory");
        raw_expect_in_sync(fd);
        close(fd);

        r = register_piece(SEG_PIECE, 64 << 10);
        sortd_region_sort rs = {.keys = r,
                                .vals = r,
                                .vals_offset = 16 << 10,
                                .n = 100,
                                .payload = SORTD_PAYLOAD_ARGSORT32,
                                .columns = two,
                                .column_count = 2};
        ck_assert_int_eq(sortd_sort_in_region(g.conn, &rs), SORTD_E_UNSUPPORTED);
        ck_assert_ptr_nonnull(
                strstr(sortd_error_message(g.conn), "key columns are sorted in host memory"));
        ck_assert_int_eq(sortd_region_destroy(g.conn, r), SORTD_OK);
        CUDA_OK(cudaMemcpy(host, g.base, ALLOC_BYTES, cudaMemcpyDeviceToHost));
        check_guards(host, 0, 0, 0, 0);
        free(host);
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
        tcase_add_test(tc, segments_in_device_memory);
        tcase_add_test(tc, columns_refused_in_device_memory);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        int rc = cuda_probe();

        return rc != 0 ? rc : run_suite_nofork(cuda_ipc_suite());
}
