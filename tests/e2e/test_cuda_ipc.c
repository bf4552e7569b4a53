/*
 * The real CUDA IPC path: this process cudaMallocs an allocation, places keys and values at
 * offsets inside it as a caching allocator would, exports the allocation's handle, and
 * registers the pieces with `sortd --engine cuda` through sortd_region_register_cuda; sortd
 * opens the handle and sorts on the device. The results, copied back, must match the
 * reference sort (tests/support/reference.c), and the bytes around the spans must be untouched.
 * A UUID that names another device is refused, and leaves nothing open: the same handle
 * registers afterwards. Segments (their offsets sent as the region sort's payload) are sorted
 * in place, and their top-k written where topk_out says, in device memory. Key columns (of
 * mixed types and orders, 16-byte keys among them, and 16-byte keys alone) are sorted in a
 * CUDA region with every payload, against reference_sort_columns, and plain u128 and i128
 * keys against the reference sort; columns whose values lie in a memfd region are refused.
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
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Where in the allocation l's keys and values start. */
static size_t keys_at(const struct layout *l)
{
        return l->keys_region + l->keys_offset;
}

static size_t vals_at(const struct layout *l)
{
        return (l->vals_region ? l->vals_region : l->keys_region) + l->vals_offset;
}

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

/*
 * rs sorted through sortd in the layout's pieces, registered for it (the values' piece given
 * when with_vals), once our writes have landed; then the whole allocation copied into host.
 */
static void sort_pieces(const struct layout *l, sortd_region_sort *rs, bool with_vals,
                        const char *what, uint8_t *host)
{
        sortd_region *kr, *vr;

        /* The daemon sorts on its own stream: our writes must have landed. */
        CUDA_OK(cudaDeviceSynchronize());
        kr = register_piece(l->keys_region, l->keys_region_size);
        vr = l->vals_region ? register_piece(l->vals_region, l->vals_region_size) : kr;
        rs->keys = kr;
        rs->vals = with_vals ? vr : NULL;
        ck_assert_msg(sortd_sort_in_region(g.conn, rs) == SORTD_OK, "%s: %s", what,
                      sortd_error_message(g.conn));
        CUDA_OK(cudaMemcpy(host, g.base, ALLOC_BYTES, cudaMemcpyDeviceToHost));
        if (vr != kr)
                ck_assert_int_eq(sortd_region_destroy(g.conn, vr), SORTD_OK);
        ck_assert_msg(sortd_region_destroy(g.conn, kr) == SORTD_OK, "%s",
                      sortd_error_message(g.conn));
}

/* Fills the spans, sorts them through sortd in device memory, and compares with the reference. */
static void sort_on_device(const sortd_sort_desc *d, size_t n, const struct layout *l,
                           uint64_t seed)
{
        size_t ks = sortd_key_size(d->key_type), vs = sortd_payload_size(d->payload);
        size_t ks_at = keys_at(l), vs_at = vals_at(l);
        uint8_t *keys = xmalloc(n * ks), *vals = xmalloc(n * vs), *host = xmalloc(ALLOC_BYTES);
        char what[96];
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
        snprintf(what, sizeof(what), "%s %s n=%zu", sortd_key_type_name(d->key_type),
                 sortd_payload_name(d->payload), n);
        sort_pieces(l, &rs, vs != 0, what, host);
        ck_assert_int_eq(ref_sort(d, keys, vs ? vals : NULL, n), 0);
        ck_assert_msg(memcmp(host + ks_at, keys, n * ks) == 0, "%s %s n=%zu: keys differ",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n);
        ck_assert_msg(memcmp(host + vs_at, vals, n * vs) == 0, "%s %s n=%zu: values differ",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n);
        check_guards(host, ks_at, n * ks, vs_at, n * vs);
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
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        reg.size = 64 << 10;
        reg.offset = SEG_PIECE;
        reg.cuda_ipc_handle = (ProtobufCBinaryData){sizeof(g.handle), g.handle};
        reg.device_uuid = (ProtobufCBinaryData){sizeof(g.uuid), g.uuid};
        return raw_register_region(fd, &reg, NULL, 0, 1);
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

/* ---- key columns and 128-bit keys in device memory ---- */

#define COLS_N 10000

/* Columns of one sort, and its payload: argsort32 and 64 write the permutation, none and
   values reorder the columns (and the values) in place. */
typedef struct shape {
        const char *name;
        unsigned count;
        sortd_column col[3];
        sortd_payload payload;
} shape;

#define ASC SORTD_ASCENDING
#define DESC SORTD_DESCENDING

static const shape shapes[] = {
        {"u32 desc, f64",
         2,
         {{SORTD_KEY_U32, DESC, 0, 0}, {SORTD_KEY_F64, ASC, 0, 0}},
         SORTD_PAYLOAD_ARGSORT32},
        {"i16 [2, 14), u128 desc, bf16",
         3,
         {{SORTD_KEY_I16, ASC, 2, 14}, {SORTD_KEY_U128, DESC, 0, 0}, {SORTD_KEY_BF16, ASC, 0, 0}},
         SORTD_PAYLOAD_ARGSORT64},
        {"f16 desc, i128 [60, 70), u8",
         3,
         {{SORTD_KEY_F16, DESC, 0, 0}, {SORTD_KEY_I128, ASC, 60, 70}, {SORTD_KEY_U8, ASC, 0, 0}},
         SORTD_PAYLOAD_VALUES64},
        {"u64, i32 desc",
         2,
         {{SORTD_KEY_U64, ASC, 0, 0}, {SORTD_KEY_I32, DESC, 0, 0}},
         SORTD_PAYLOAD_NONE},
        {"u128", 1, {{SORTD_KEY_U128, ASC, 0, 0}}, SORTD_PAYLOAD_ARGSORT32},
        {"i128 desc", 1, {{SORTD_KEY_I128, DESC, 0, 0}}, SORTD_PAYLOAD_VALUES32},
};

#define N_SHAPES (int)(sizeof(shapes) / sizeof(shapes[0]))

/* The columns' buffer 64 bytes into a piece that holds the values too, or at the start of a
   piece of its own, the values in another; room for 10^4 rows of 3 columns, 16-byte ones
   among them. Offsets are multiples of 16, as the buffer's must be. */
static const struct layout cols_one = {768, 512 << 10, 64, 0, 0, 256 << 10};
static const struct layout cols_two = {768, 256 << 10, 0, (1 << 20) + 512, 128 << 10, 8};

/*
 * Fills s's columns (few values each, so that ties go on to the next column) at their
 * sortd_columns_offset in the buffer and the values, sorts them through sortd in device
 * memory, and compares every column and the values or permutation with
 * reference_sort_columns; nothing outside the buffer and the values' span may change.
 */
static void columns_on_device(const shape *s, size_t n, const struct layout *l, uint64_t seed)
{
        size_t vs = sortd_payload_size(s->payload);
        size_t ks_at = keys_at(l), vs_at = vals_at(l);
        uint64_t bytes = sortd_columns_offset(s->col, s->count, n, s->count);
        uint8_t *vals = xmalloc(n * 8 + 1), *host = xmalloc(ALLOC_BYTES);
        void *want[SORTD_MAX_COLUMNS];
        char what[96];
        sortd_region_sort rs = {.keys_offset = l->keys_offset,
                                .vals_offset = l->vals_offset,
                                .n = n,
                                .payload = s->payload,
                                .columns = s->col,
                                .column_count = s->count};

        CUDA_OK(cudaMemset(g.base, GUARD, ALLOC_BYTES));
        for (unsigned j = 0; j < s->count; j++) {
                size_t len = n * sortd_key_size(s->col[j].key_type);

                want[j] = xmalloc(len + 1);
                datagen_fill(want[j], n, s->col[j].key_type, DATAGEN_FEW, 3, seed + j);
                CUDA_OK(cudaMemcpy(g.base + ks_at + sortd_columns_offset(s->col, s->count, n, j),
                                   want[j], len, cudaMemcpyHostToDevice));
        }
        if (vs && !sortd_payload_is_argsort(s->payload)) {
                datagen_fill_values(vals, n, (unsigned)vs, seed + 99);
                CUDA_OK(cudaMemcpy(g.base + vs_at, vals, n * vs, cudaMemcpyHostToDevice));
        }
        snprintf(what, sizeof(what), "%s %s n=%zu", s->name, sortd_payload_name(s->payload), n);
        sort_pieces(l, &rs, vs != 0, what, host);
        ck_assert_int_eq(reference_sort_columns(s->col, s->count, s->payload, want, vals, n),
                         SORTD_OK);
        for (unsigned j = 0; j < s->count; j++)
                ck_assert_msg(memcmp(host + ks_at + sortd_columns_offset(s->col, s->count, n, j),
                                     want[j], n * sortd_key_size(s->col[j].key_type)) == 0,
                              "%s %s n=%zu: column %u differs from the reference", s->name,
                              sortd_payload_name(s->payload), n, j);
        ck_assert_msg(memcmp(host + vs_at, vals, n * vs) == 0,
                      "%s %s n=%zu: values or permutation differ from the reference", s->name,
                      sortd_payload_name(s->payload), n);
        check_guards(host, ks_at, (size_t)bytes, vs_at, n * vs);
        for (unsigned j = 0; j < s->count; j++)
                free(want[j]);
        free(vals);
        free(host);
}

/* _i walks the shapes, the odd ones with the values in a piece of their own; the first also
   sorts no rows and one. */
START_TEST(columns_in_device_memory)
{
        const shape *s = &shapes[_i];

        columns_on_device(s, COLS_N, _i % 2 ? &cols_two : &cols_one, 1000 * (uint64_t)_i);
        if (_i == 0) {
                columns_on_device(s, 0, &cols_one, 7);
                columns_on_device(s, 1, &cols_two, 8);
        }
}
END_TEST

/* Plain sorts of u128 (_i 0) and i128 (_i 1) keys: with values in the keys' piece, argsorted
   into a piece of their own, and alone by their high words only. */
START_TEST(plain_128_in_device_memory)
{
        sortd_key_type t = _i ? SORTD_KEY_I128 : SORTD_KEY_U128;
        const sortd_sort_desc d[] = {{t, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0},
                                     {t, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0},
                                     {t, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 64, 128}};

        sort_on_device(&d[0], COLS_N, &cols_one, 50 + (uint64_t)_i);
        sort_on_device(&d[1], COLS_N, &cols_two, 60 + (uint64_t)_i);
        sort_on_device(&d[2], COLS_N, &cols_one, 70 + (uint64_t)_i);
}
END_TEST

/* A sealed memfd of bytes registered on the raw connection fd; its region id. */
static uint64_t raw_register_new_memfd(int fd, uint64_t bytes)
{
        int mfd = raw_sealed_memfd(bytes);
        uint64_t id = raw_register_memfd(fd, mfd, bytes, 3);

        close(mfd); /* the daemon has its own */
        return id;
}

/* Key columns in a CUDA region with their values in a memfd region: refused by libsortd
   before it sends, and by the daemon (a raw frame), each saying both must be of one kind;
   nothing is written, and both connections go on. */
START_TEST(columns_values_in_host_memory_refused)
{
        const sortd_column two[2] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                     {SORTD_KEY_U128, SORTD_DESCENDING, 0, 0}};
        int fd = raw_connect(g.daemon.sock);
        uint64_t cuda = raw_register_piece(fd), memfd = raw_register_new_memfd(fd, 4096);
        Sortd__Wire__Sort s = raw_sort_msg(0, SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32, 100);
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        Sortd__Wire__Column col[2] = {SORTD__WIRE__COLUMN__INIT, SORTD__WIRE__COLUMN__INIT};
        Sortd__Wire__Column *cols[2] = {&col[0], &col[1]};
        uint8_t *host = xmalloc(ALLOC_BYTES);
        sortd_region *kr, *vr = NULL;

        CUDA_OK(cudaMemset(g.base, GUARD, ALLOC_BYTES));
        CUDA_OK(cudaDeviceSynchronize());
        col[0].key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
        col[1].key_type = SORTD__WIRE__KEY_TYPE__KEY_U128;
        col[1].order = SORTD__WIRE__ORDER__DESCENDING;
        s.n_columns = 2;
        s.columns = cols;
        rd.region_id = cuda;
        rd.vals_region_id = memfd;
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &rd;
        raw_send_sort(fd, 4, &s, 0);
        raw_expect_reply(fd, 4, SORTD_E_INVAL,
                         "the key columns are in device memory (a CUDA region) and the values in "
                         "host memory (a memfd region): both must be");
        raw_expect_in_sync(fd);
        close(fd);

        kr = register_piece(SEG_PIECE, 64 << 10);
        ck_assert_int_eq(sortd_region_create(g.conn, 4096, &vr), SORTD_OK);
        sortd_region_sort rs = {.keys = kr,
                                .vals = vr,
                                .n = 100,
                                .payload = SORTD_PAYLOAD_ARGSORT32,
                                .columns = two,
                                .column_count = 2};
        ck_assert_int_eq(sortd_sort_in_region(g.conn, &rs), SORTD_E_INVAL);
        ck_assert_ptr_nonnull(strstr(sortd_error_message(g.conn),
                                     "the keys region is device memory (CUDA IPC) and the vals "
                                     "region host memory (memfd): both must be of one kind"));
        ck_assert_int_eq(sortd_ping(g.conn), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(g.conn, vr), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(g.conn, kr), SORTD_OK);
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
        tcase_add_loop_test(tc, columns_in_device_memory, 0, N_SHAPES);
        tcase_add_loop_test(tc, plain_128_in_device_memory, 0, 2);
        tcase_add_test(tc, columns_values_in_host_memory_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        int rc = cuda_probe();

        return rc != 0 ? rc : run_suite_nofork(cuda_ipc_suite());
}
