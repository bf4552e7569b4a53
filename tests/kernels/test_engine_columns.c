/*
 * sortd_engine_sort_columns, and 128-bit keys through sortd_engine_sort, on the engine that
 * SORTD_TEST_ENGINE names ("cpu" when unset; the emulated build runs it on "cuda"): one column,
 * pairs and triples of key types in both orders against reference_sort_columns, the packed and
 * chained paths forced on one input agreeing bit for bit, eight columns, bit ranges, u128 and i128
 * keys (random, sharing their high 64 bits, extremes), the call's refusals, shared keys written
 * while they sort, and on a GPU engine all of it again in device memory.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "engine.h"
#include "reference.h"
#include "suite.h"
#ifdef SORTD_TEST_DEVICE_MEMORY
#include "cuda_runtime_api.h" /* tests/support/fake_cuda/c: the emulated engine's device */
#endif

#define CAPACITY 20000

static const sortd_key_type types[] = {
        SORTD_KEY_U8,  SORTD_KEY_I16, SORTD_KEY_U32, SORTD_KEY_I32,  SORTD_KEY_F32,  SORTD_KEY_U64,
        SORTD_KEY_I64, SORTD_KEY_F64, SORTD_KEY_F16, SORTD_KEY_U128, SORTD_KEY_I128,
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char *engine_kind(void)
{
        const char *k = getenv("SORTD_TEST_ENGINE");

        return k && *k ? k : "cpu";
}

/* The emulated GPU engine sorts slowly: it takes every k-th case of the larger loops. */
static unsigned stride(unsigned k)
{
        return strcmp(engine_kind(), "cpu") == 0 ? 1 : k;
}

static sortd_engine *engine_new(sortd_engine_faults faults)
{
        sortd_engine_config cfg = {.capacity = CAPACITY, .threads = 2, .faults = faults};
        sortd_engine *e = NULL;
        char why[256];

        if (sortd_engine_create(engine_kind(), &cfg, &e, why, sizeof(why)) != SORTD_OK)
                ck_abort_msg("%s engine: %s", engine_kind(), why);
        return e;
}

static uint64_t mix(uint64_t z)
{
        z += 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

/* A table of columns, its values, and the same again for the reference. */
typedef struct table {
        sortd_column cols[SORTD_MAX_COLUMNS + 1];
        unsigned count;
        sortd_payload payload;
        size_t n;
        void *keys[SORTD_MAX_COLUMNS + 1], *want[SORTD_MAX_COLUMNS + 1];
        void *vals, *want_vals;
} table;

/* Few distinct values in the first columns, so that their ties are left to the later ones. */
static void fill_column(void *k, size_t n, sortd_key_type t, unsigned j, unsigned count,
                        uint64_t seed)
{
        const size_t kb = sortd_key_size(t);

        datagen_fill(k, n, t, j + 1 < count ? DATAGEN_FEW : DATAGEN_UNIFORM, 3, seed);
        if (kb == 16 && j + 1 < count)
                for (size_t i = 0; i < n; i++) /* ties in a 128-bit column too */
                        ((uint64_t *)k)[2 * i] &= 1;
}

static void table_make(table *t, const sortd_column *cols, unsigned count, sortd_payload payload,
                       size_t n, uint64_t seed)
{
        const size_t vb = sortd_payload_size(payload);

        memset(t, 0, sizeof(*t));
        memcpy(t->cols, cols, count * sizeof(*cols));
        t->count = count;
        t->payload = payload;
        t->n = n;
        for (unsigned j = 0; j < count; j++) {
                size_t bytes = n * sortd_key_size(cols[j].key_type);

                t->keys[j] = xmalloc(bytes);
                t->want[j] = xmalloc(bytes);
                fill_column(t->keys[j], n, cols[j].key_type, j, count, seed + j);
                memcpy(t->want[j], t->keys[j], bytes);
        }
        t->vals = xmalloc(n * 8);
        t->want_vals = xmalloc(n * 8);
        if (vb && !sortd_payload_is_argsort(payload))
                datagen_fill_values(t->vals, n, (unsigned)vb, seed ^ 0xabc);
        memcpy(t->want_vals, t->vals, n * 8);
        ck_assert_int_eq(reference_sort_columns(t->cols, count, payload, t->want, t->want_vals, n),
                         SORTD_OK);
}

static void table_free(table *t)
{
        for (unsigned j = 0; j < t->count; j++) {
                free(t->keys[j]);
                free(t->want[j]);
        }
        free(t->vals);
        free(t->want_vals);
}

static void describe(const table *t, char *buf, size_t len)
{
        int at = snprintf(buf, len, "n=%zu %s:", t->n, sortd_payload_name(t->payload));

        for (unsigned j = 0; j < t->count && at > 0 && (size_t)at < len; j++)
                at += snprintf(buf + at, len - (size_t)at, " %s%s[%u,%u)",
                               sortd_key_type_name(t->cols[j].key_type),
                               t->cols[j].order == SORTD_DESCENDING ? "-desc" : "",
                               t->cols[j].begin_bit, t->cols[j].end_bit);
}

/* Whether buffers a and b differ; names the first difference. */
static void expect_same(const char *what, const char *name, const void *a, const void *b, size_t n,
                        size_t eb)
{
        for (size_t i = 0; i < n; i++)
                if (memcmp((const char *)a + i * eb, (const char *)b + i * eb, eb) != 0)
                        ck_abort_msg("%s: %s differ at row %zu of %zu", what, name, i, n);
}

/*
 * Device memory for where: the buffer itself, or for SORTD_MEMORY_DEVICE a copy of its bytes
 * in the device's memory, which back() copies home and frees.
 */
static void *there(sortd_memory where, void *host, size_t bytes)
{
        void *dev = NULL;

        if (where != SORTD_MEMORY_DEVICE)
                return host;
#ifdef SORTD_TEST_DEVICE_MEMORY
        ck_assert_int_eq(cudaMalloc(&dev, bytes ? bytes : 1), cudaSuccess);
        if (bytes)
                ck_assert_int_eq(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
#else
        (void)bytes;
        ck_abort_msg("this build has no device memory");
#endif
        return dev;
}

static void back(sortd_memory where, void *host, void *dev, size_t bytes)
{
        if (where != SORTD_MEMORY_DEVICE)
                return;
#ifdef SORTD_TEST_DEVICE_MEMORY
        if (bytes)
                ck_assert_int_eq(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_int_eq(cudaFree(dev), cudaSuccess);
#else
        (void)host, (void)dev, (void)bytes;
#endif
}

/* Sorts t on e by path, in where's memory, and checks it against the reference. */
static void expect_sorted(sortd_engine *e, table *t, sortd_columns_path path, sortd_memory where)
{
        const size_t vb = sortd_payload_size(t->payload);
        void *keys[SORTD_MAX_COLUMNS + 1], *vals;
        char what[512], col[32];
        sortd_status s;

        describe(t, what, sizeof(what));
        for (unsigned j = 0; j < t->count; j++)
                keys[j] = there(where, t->keys[j], t->n * sortd_key_size(t->cols[j].key_type));
        vals = there(where, t->vals, t->n * 8);
        s = sortd_engine_sort_columns(e, t->cols, t->count, t->payload, path, where, keys,
                                      vb ? vals : NULL, t->n);
        for (unsigned j = 0; j < t->count; j++)
                back(where, t->keys[j], keys[j], t->n * sortd_key_size(t->cols[j].key_type));
        back(where, t->vals, vals, t->n * 8);
        ck_assert_msg(s == SORTD_OK, "%s: %s", what, sortd_engine_error(e));
        for (unsigned j = 0; j < t->count; j++) {
                snprintf(col, sizeof(col), "column %u", j);
                expect_same(what, col, t->keys[j], t->want[j], t->n,
                            sortd_key_size(t->cols[j].key_type));
        }
        expect_same(what, "vals", t->vals, t->want_vals, t->n, vb);
}

static sortd_column column(sortd_key_type t, uint64_t r)
{
        return (sortd_column){t, (sortd_order)(r & 1), 0, 0};
}

/* Every pair of the types, in every order, with a payload each. */
START_TEST(pairs)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        unsigned c = 0;

        for (unsigned a = 0; a < NTYPES; a++)
                for (unsigned b = 0; b < NTYPES; b++)
                        for (unsigned o = 0; o < 4; o++, c++) {
                                const sortd_column cols[2] = {column(types[a], o),
                                                              column(types[b], o >> 1)};
                                table t;

                                if (c % stride(11))
                                        continue;
                                table_make(&t, cols, 2, (sortd_payload)(c % SORTD_PAYLOAD_COUNT),
                                           300 + c % 7, c);
                                expect_sorted(e, &t, SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST);
                                table_free(&t);
                        }
        sortd_engine_destroy(e);
}
END_TEST

/*
 * One column: argsorted by the engine's own sort of a copy of its keys when they are 8 bytes or
 * fewer, else through the layer. Every type, both orders, each payload, a bit range on half;
 * the column itself must come back unchanged from an argsort (the reference's want says so).
 */
START_TEST(one_column)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        unsigned c = 0;

        for (unsigned a = 0; a < NTYPES; a++)
                for (unsigned o = 0; o < 2; o++)
                        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++, c++) {
                                const unsigned width = 8 * (unsigned)sortd_key_size(types[a]);
                                const sortd_column col = {types[a], (sortd_order)o, c % 2 ? 3 : 0,
                                                          c % 2 ? width - 2 : 0};
                                table t;

                                if (c % stride(5))
                                        continue;
                                table_make(&t, &col, 1, (sortd_payload)p, 2000 + c, c);
                                expect_sorted(e, &t, SORTD_COLUMNS_AUTO,
                                              c % 3 ? SORTD_MEMORY_HOST : SORTD_MEMORY_SHARED);
                                table_free(&t);
                        }
        sortd_engine_destroy(e);
}
END_TEST

/* Every triple of the types, orders and payloads varying with the case. */
START_TEST(triples)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        unsigned c = 0;

        for (unsigned a = 0; a < NTYPES; a++)
                for (unsigned b = 0; b < NTYPES; b++)
                        for (unsigned d = 0; d < NTYPES; d++, c++) {
                                const uint64_t r = mix(c);
                                const sortd_column cols[3] = {column(types[a], r),
                                                              column(types[b], r >> 1),
                                                              column(types[d], r >> 2)};
                                table t;

                                if (c % stride(53))
                                        continue;
                                table_make(&t, cols, 3,
                                           (sortd_payload)(r >> 8) % SORTD_PAYLOAD_COUNT,
                                           200 + (r >> 16) % 100, r);
                                expect_sorted(e, &t, SORTD_COLUMNS_AUTO,
                                              c % 2 ? SORTD_MEMORY_SHARED : SORTD_MEMORY_HOST);
                                table_free(&t);
                        }
        sortd_engine_destroy(e);
}
END_TEST

/* One input through both paths, each payload: both agree with the reference, so bit for bit. */
static void both_paths(sortd_engine *e, const sortd_column *cols, unsigned count, size_t n,
                       uint64_t seed)
{
        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                for (int path = SORTD_COLUMNS_PACKED; path <= SORTD_COLUMNS_CHAINED; path++) {
                        table t;

                        table_make(&t, cols, count, (sortd_payload)p, n / stride(3), seed);
                        expect_sorted(e, &t, (sortd_columns_path)path, SORTD_MEMORY_HOST);
                        table_free(&t);
                }
        }
}

START_TEST(packed_and_chained)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        const sortd_column narrow[3] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                        {SORTD_KEY_I16, SORTD_DESCENDING, 0, 0},
                                        {SORTD_KEY_F16, SORTD_ASCENDING, 0, 0}};
        const sortd_column wide[3] = {{SORTD_KEY_F64, SORTD_DESCENDING, 0, 0},
                                      {SORTD_KEY_I32, SORTD_ASCENDING, 0, 0},
                                      {SORTD_KEY_U8, SORTD_DESCENDING, 0, 0}};
        const sortd_column full[2] = {{SORTD_KEY_I64, SORTD_ASCENDING, 0, 0},
                                      {SORTD_KEY_U64, SORTD_DESCENDING, 0, 0}};
        const sortd_column ranged[2] = {{SORTD_KEY_I128, SORTD_DESCENDING, 60, 100},
                                        {SORTD_KEY_F32, SORTD_ASCENDING, 3, 29}};

        both_paths(e, narrow, 3, 5000, 1); /* 64 bits: one word */
        both_paths(e, wide, 3, 5000, 2);   /* 104 bits: two words */
        both_paths(e, full, 2, 4000, 3);   /* 128 bits exactly */
        both_paths(e, ranged, 2, 3000, 4); /* 66 bits of ranges */
        sortd_engine_destroy(e);
}
END_TEST

/* The most columns, packed (8 x 8 bits) and chained (8 x 64 bits, and mixed). */
START_TEST(eight_columns)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        sortd_column bytes[8], words[8], mixed[8];

        for (unsigned j = 0; j < 8; j++) {
                bytes[j] = (sortd_column){j % 2 ? SORTD_KEY_U8 : SORTD_KEY_I8,
                                          (sortd_order)(j % 3 == 0), 0, 0};
                words[j] = (sortd_column){j % 2 ? SORTD_KEY_U64 : SORTD_KEY_F64,
                                          (sortd_order)(j % 3 == 1), 0, 0};
                mixed[j] = (sortd_column){types[(j * 5) % NTYPES], (sortd_order)(j % 2), 0, 0};
        }
        both_paths(e, bytes, 8, 3000, 5);
        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                table t;

                table_make(&t, words, 8, (sortd_payload)p, 2500 / stride(3), 6 + p);
                expect_sorted(e, &t, SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST);
                table_free(&t);
                table_make(&t, mixed, 8, (sortd_payload)p, 2500 / stride(3), 16 + p);
                expect_sorted(e, &t, SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST);
                table_free(&t);
        }
        sortd_engine_destroy(e);
}
END_TEST

/* Random bit ranges of every column, 128-bit ones across bit 64 too. */
START_TEST(bit_ranges)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});

        for (unsigned c = 0; c < 120; c += stride(4)) {
                const uint64_t r = mix(c + 1000);
                sortd_column cols[3];

                for (unsigned j = 0; j < 3; j++) {
                        const uint64_t q = mix(r + j);
                        const sortd_key_type kt = types[q % NTYPES];
                        const unsigned width = 8 * (unsigned)sortd_key_size(kt);
                        const unsigned b = (unsigned)((q >> 8) % width);
                        const unsigned end = b + 1 + (unsigned)((q >> 16) % (width - b));

                        cols[j] = (sortd_column){kt, (sortd_order)((q >> 24) & 1), b,
                                                 end == width && (q >> 25) % 2 ? 0 : end};
                }
                table t;

                table_make(&t, cols, 3, (sortd_payload)(r % SORTD_PAYLOAD_COUNT),
                           500 + (r >> 32) % 500, r);
                expect_sorted(e, &t, (sortd_columns_path)((r >> 40) % SORTD_COLUMNS_PATH_COUNT),
                              SORTD_MEMORY_HOST);
                table_free(&t);
        }
        sortd_engine_destroy(e);
}
END_TEST

/* 128-bit keys of one kind of data, sorted whole by sortd_engine_sort, or in device memory by
   sortd_engine_sort_device. */
static void wide_keys(sortd_engine *e, sortd_memory where, sortd_key_type kt,
                      void (*make)(uint64_t *, size_t, uint64_t), size_t n, uint64_t seed)
{
        uint64_t *keys = xmalloc(n * 16), *want = xmalloc(n * 16);
        uint64_t *vals = xmalloc(n * 8), *want_vals = xmalloc(n * 8);

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        const sortd_sort_desc d = {kt, (sortd_payload)p, (sortd_order)o, 0, 0};
                        const size_t vb = sortd_payload_size(d.payload);

                        if ((unsigned)(p * 2 + o) % stride(3))
                                continue;
                        make(keys, n, seed + (uint64_t)p);
                        datagen_fill_values(vals, n, 8, seed);
                        memcpy(want, keys, n * 16);
                        memcpy(want_vals, vals, n * 8);
                        ck_assert_int_eq(ref_sort(&d, want, want_vals, n), 0);
                        void *k = there(where, keys, n * 16), *v = there(where, vals, n * 8);
                        sortd_status s = where == SORTD_MEMORY_DEVICE
                                                 ? sortd_engine_sort_device(e, &d, k, v, n)
                                                 : sortd_engine_sort(e, &d, k, v, n);

                        back(where, keys, k, n * 16);
                        back(where, vals, v, n * 8);
                        ck_assert_msg(s == SORTD_OK, "%s %s: %s", sortd_key_type_name(kt),
                                      sortd_payload_name(d.payload), sortd_engine_error(e));
                        expect_same(sortd_key_type_name(kt), "keys", keys, want, n, 16);
                        expect_same(sortd_key_type_name(kt), "vals", vals, want_vals, n, vb);
                }
        free(keys);
        free(want);
        free(vals);
        free(want_vals);
}

static void make_random(uint64_t *k, size_t n, uint64_t seed)
{
        for (size_t i = 0; i < 2 * n; i++)
                k[i] = mix(seed + i);
}

/* Three high words, so the sort rests on the low words. */
static void make_shared_high(uint64_t *k, size_t n, uint64_t seed)
{
        static const uint64_t high[3] = {0, 0x8000000000000000ull, 0x7fffffffffffffffull};

        for (size_t i = 0; i < n; i++) {
                k[2 * i] = mix(seed + i);
                k[2 * i + 1] = high[mix(seed ^ i) % 3];
        }
}

/* 0, 1, -1, the smallest and largest of both types, 2^64 - 1, 2^64, repeated. */
static void make_extremes(uint64_t *k, size_t n, uint64_t seed)
{
        static const uint64_t v[][2] = {
                {0, 0},
                {1, 0},
                {~0ull, ~0ull},
                {0, 0x8000000000000000ull},
                {~0ull, 0x7fffffffffffffffull},
                {~0ull, 0},
                {0, 1},
                {~0ull - 1, ~0ull},
        };

        for (size_t i = 0; i < n; i++) {
                size_t j = mix(seed + i) % (sizeof(v) / sizeof(v[0]));

                k[2 * i] = v[j][0];
                k[2 * i + 1] = v[j][1];
        }
}

START_TEST(wide_sorts)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});

        for (int kt = SORTD_KEY_U128; kt <= SORTD_KEY_I128; kt++) {
                const sortd_memory h = SORTD_MEMORY_HOST;

                wide_keys(e, h, (sortd_key_type)kt, make_random, 3000, 7);
                wide_keys(e, h, (sortd_key_type)kt, make_random, CAPACITY / stride(4),
                          8); /* past small sorts */
                wide_keys(e, h, (sortd_key_type)kt, make_shared_high, 3000, 9);
                wide_keys(e, h, (sortd_key_type)kt, make_extremes, 1000, 10);
                wide_keys(e, h, (sortd_key_type)kt, make_extremes, 2, 11);
        }
        sortd_engine_destroy(e);
}
END_TEST

/* A batch with 128-bit members among others: each sorted as alone. */
START_TEST(wide_batch)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        sortd_engine_batch_item items[4];
        uint64_t *want[4], *want_v[4];

        for (unsigned i = 0; i < 4; i++) {
                const sortd_sort_desc d = {i % 2 ? SORTD_KEY_I128 : SORTD_KEY_F32,
                                           (sortd_payload)(1 + i), (sortd_order)(i / 2), 0, 0};
                const size_t n = 100 + 50 * i, kb = sortd_key_size(d.key_type);

                items[i] = (sortd_engine_batch_item){.desc = d, .n = n};
                items[i].keys = xmalloc(n * kb);
                items[i].vals = xmalloc(n * 8);
                want[i] = xmalloc(n * kb);
                want_v[i] = xmalloc(n * 8);
                datagen_fill(items[i].keys, n, d.key_type, DATAGEN_FEW, 5, i);
                datagen_fill_values(items[i].vals, n, 8, i);
                memcpy(want[i], items[i].keys, n * kb);
                memcpy(want_v[i], items[i].vals, n * 8);
                ck_assert_int_eq(ref_sort(&d, want[i], want_v[i], n), 0);
        }
        ck_assert_msg(sortd_engine_sort_batch(e, items, 4) == SORTD_OK, "%s",
                      sortd_engine_error(e));
        for (unsigned i = 0; i < 4; i++) {
                expect_same("batch", "keys", items[i].keys, want[i], items[i].n,
                            sortd_key_size(items[i].desc.key_type));
                expect_same("batch", "vals", items[i].vals, want_v[i], items[i].n,
                            sortd_payload_size(items[i].desc.payload));
                free(items[i].keys);
                free(items[i].vals);
                free(want[i]);
                free(want_v[i]);
        }
        sortd_engine_destroy(e);
}
END_TEST

/* The segmentations of n = 1500 keys the 128-bit segment tests take: rows, and offsets of
   either width with empty segments, a long one and ones of 1 and 2 keys. */
#define WIDE_SEG_N 1500
static const uint32_t wide_off32[] = {0, 0, 1, 3, 3, 40, 41, 1000, 1000, 1002, 1500};
static const uint64_t wide_off64[] = {0, 700, 700, 701, 1499, 1500, 1500};
static const sortd_segments wide_segs[] = {
        {.count = 50, .row_len = 30},
        {.count = 10, .offsets = wide_off32, .offset_bytes = 4},
        {.count = 6, .offsets = wide_off64, .offset_bytes = 8},
};

/*
 * 128-bit keys sorted within segments, then their top-k (k of 1, 3, a row's length and more than
 * any segment), in where's memory, against the reference's: every payload and order.
 */
static void wide_segments(sortd_engine *e, sortd_memory where, sortd_key_type kt,
                          const sortd_segments *seg, uint64_t seed)
{
        const size_t n = WIDE_SEG_N;
        static const uint64_t ks[] = {1, 3, 30, 2000};

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                const sortd_sort_desc d = {kt, (sortd_payload)p, (sortd_order)(p % 2), 0, 0};
                const size_t vb = sortd_payload_size(d.payload);
                uint64_t *keys = xmalloc(n * 16), *vals = xmalloc(n * 8);
                uint64_t *in = xmalloc(n * 16), *in_vals = xmalloc(n * 8);
                uint64_t *want = xmalloc(n * 16), *want_vals = xmalloc(n * 8);
                void *k, *v;

                (p % 2 ? make_shared_high : make_random)(in, n, seed + (uint64_t)p);
                datagen_fill_values(in_vals, n, 8, seed);
                memcpy(keys, in, n * 16);
                memcpy(vals, in_vals, n * 8);
                memcpy(want, in, n * 16);
                memcpy(want_vals, in_vals, n * 8);
                ck_assert_int_eq(ref_sort_segments(&d, seg, want, want_vals, n), 0);
                k = there(where, keys, n * 16);
                v = there(where, vals, n * 8);
                ck_assert_msg(sortd_engine_sort_segments(e, &d, seg, where, k, vb ? v : NULL, n) ==
                                      SORTD_OK,
                              "%s %s segments: %s", sortd_key_type_name(kt),
                              sortd_payload_name(d.payload), sortd_engine_error(e));
                back(where, keys, k, n * 16);
                back(where, vals, v, n * 8);
                expect_same("segments", "keys", keys, want, n, 16);
                expect_same("segments", "vals", vals, want_vals, n, vb);
                for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
                        const uint64_t m = sortd_topk_results(seg, n, ks[i]);
                        void *ok, *ov;

                        ck_assert_int_eq(ref_topk(&d, seg, ks[i], in, in_vals, want, want_vals, n),
                                         0);
                        k = there(where, in, n * 16);
                        v = there(where, in_vals, n * 8);
                        ok = there(where, keys, m * 16);
                        ov = there(where, vals, m * 8);
                        ck_assert_msg(sortd_engine_topk(e, &d, seg, ks[i], where, k, v, ok,
                                                        vb ? ov : NULL, n) == SORTD_OK,
                                      "%s %s top-%llu: %s", sortd_key_type_name(kt),
                                      sortd_payload_name(d.payload), (unsigned long long)ks[i],
                                      sortd_engine_error(e));
                        back(where, in, k, n * 16);
                        back(where, in_vals, v, n * 8);
                        back(where, keys, ok, m * 16);
                        back(where, vals, ov, m * 8);
                        expect_same("top-k", "keys", keys, want, m, 16);
                        expect_same("top-k", "vals", vals, want_vals, m, vb);
                }
                free(keys);
                free(vals);
                free(in);
                free(in_vals);
                free(want);
                free(want_vals);
        }
}

START_TEST(wide_segments_topk)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});

        for (unsigned i = 0; i < sizeof(wide_segs) / sizeof(wide_segs[0]); i++)
                wide_segments(e, SORTD_MEMORY_HOST, i % 2 ? SORTD_KEY_I128 : SORTD_KEY_U128,
                              &wide_segs[i], 40 + i);
        sortd_engine_destroy(e);
}
END_TEST

static void expect_status(sortd_engine *e, sortd_status got, sortd_status want, const char *what,
                          const char *says)
{
        ck_assert_msg(got == want, "%s: got %s (%s), want %s", what, sortd_strerror(got),
                      sortd_engine_error(e), sortd_strerror(want));
        ck_assert_msg(strstr(sortd_engine_error(e), says), "%s: message \"%s\" lacks \"%s\"", what,
                      sortd_engine_error(e), says);
}

START_TEST(refusals)
{
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        sortd_column cols[SORTD_MAX_COLUMNS + 1];
        uint64_t *a = xmalloc(64 * 16), *b = xmalloc(64 * 16), *v = xmalloc(64 * 8);
        void *keys[SORTD_MAX_COLUMNS + 1];
        const sortd_sort_desc wide = {SORTD_KEY_U128, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        const sortd_segments rows = {.count = 2, .row_len = 32};

        for (unsigned j = 0; j <= SORTD_MAX_COLUMNS; j++) {
                cols[j] = (sortd_column){SORTD_KEY_U64, SORTD_ASCENDING, 0, 0};
                keys[j] = j % 2 ? b : a;
        }
        datagen_fill(a, 64, SORTD_KEY_U128, DATAGEN_UNIFORM, 0, 1);
        memcpy(b, a, 64 * 16);
        if (strcmp(engine_kind(), "cpu") == 0)
                expect_status(e,
                              sortd_engine_sort_columns(e, cols, 1, SORTD_PAYLOAD_NONE,
                                                        SORTD_COLUMNS_AUTO, SORTD_MEMORY_DEVICE,
                                                        keys, NULL, 64),
                              SORTD_E_UNSUPPORTED, "device memory", "not in device memory");
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 3, SORTD_PAYLOAD_ARGSORT32,
                                                SORTD_COLUMNS_PACKED, SORTD_MEMORY_HOST,
                                                (void *const[]){a, b, v}, v, 64),
                      SORTD_E_INVAL, "192 bits packed", "192");
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, SORTD_MAX_COLUMNS + 1, SORTD_PAYLOAD_NONE,
                                                SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST, keys, NULL,
                                                64),
                      SORTD_E_INVAL, "nine columns", "9 key columns");
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 2, SORTD_PAYLOAD_NONE, SORTD_COLUMNS_AUTO,
                                                SORTD_MEMORY_HOST, (void *const[]){a, a}, NULL, 64),
                      SORTD_E_INVAL, "one buffer twice", "overlap");
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 1, SORTD_PAYLOAD_NONE, SORTD_COLUMNS_AUTO,
                                                SORTD_MEMORY_HOST, (void *const[]){(char *)a + 4},
                                                NULL, 64),
                      SORTD_E_INVAL, "misaligned", "aligned");
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 1, SORTD_PAYLOAD_ARGSORT32,
                                                SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST,
                                                (void *const[]){a}, NULL, 64),
                      SORTD_E_INVAL, "NULL vals", "vals is NULL");
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 1, SORTD_PAYLOAD_NONE, SORTD_COLUMNS_AUTO,
                                                SORTD_MEMORY_HOST, (void *const[]){a}, NULL,
                                                CAPACITY + 1),
                      SORTD_E_CAPACITY, "above capacity", "capacity");
        ck_assert_msg(memcmp(a, b, 64 * 16) == 0, "a refused call wrote the keys");
        if (strcmp(engine_kind(), "cpu") == 0)
                expect_status(e,
                              sortd_engine_sort_segments(e, &wide, &rows, SORTD_MEMORY_DEVICE, a,
                                                         NULL, 64),
                              SORTD_E_UNSUPPORTED, "segments of u128 in device memory", "device");
        if (strcmp(engine_kind(), "cpu") == 0)
                ck_assert_int_ne(sortd_engine_sort_device(e, &wide, a, NULL, 64), SORTD_OK);
        /* n = 1: an argsort's index 0, the column as it was */
        v[0] = 77;
        ck_assert_int_eq(sortd_engine_sort_columns(e, cols, 1, SORTD_PAYLOAD_ARGSORT64,
                                                   SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST,
                                                   (void *const[]){a}, v, 1),
                         SORTD_OK);
        ck_assert_uint_eq(v[0], 0);
        ck_assert_int_eq(sortd_engine_sort_columns(e, cols, 1, SORTD_PAYLOAD_NONE,
                                                   SORTD_COLUMNS_AUTO, SORTD_MEMORY_HOST,
                                                   (void *const[]){NULL}, NULL, 0),
                         SORTD_OK);
        ck_assert_msg(memcmp(a, b, 64 * 16) == 0, "n = 0 or 1 moved keys");
        free(a);
        free(b);
        free(v);
        sortd_engine_destroy(e);
}
END_TEST

/* A sort of columns is one sorting call for the test faults, whatever its passes. */
START_TEST(one_sorting_call)
{
        sortd_engine *e = engine_new((sortd_engine_faults){2, SORTD_E_DEVICE, 0});
        const sortd_column cols[2] = {{SORTD_KEY_U64, SORTD_ASCENDING, 0, 0},
                                      {SORTD_KEY_U128, SORTD_DESCENDING, 0, 0}};
        table t;

        table_make(&t, cols, 2, SORTD_PAYLOAD_VALUES32, 1000, 3);
        expect_sorted(e, &t, SORTD_COLUMNS_CHAINED, SORTD_MEMORY_HOST); /* call 1: 3 passes */
        for (unsigned j = 0; j < 2; j++)
                memcpy(t.want[j], t.keys[j], 1000 * sortd_key_size(cols[j].key_type));
        memcpy(t.want_vals, t.vals, 1000 * 4);
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 2, t.payload, SORTD_COLUMNS_CHAINED,
                                                SORTD_MEMORY_HOST, t.keys, t.vals, 1000),
                      SORTD_E_DEVICE, "call 2", "injected");
        for (unsigned j = 0; j < 2; j++)
                expect_same("after the fault", "keys", t.keys[j], t.want[j], 1000,
                            sortd_key_size(cols[j].key_type));
        table_free(&t);
        sortd_engine_destroy(e);
}
END_TEST

/* Keys another process writes while they sort: random bytes into every column until told. */
typedef struct writer {
        unsigned char *cols[2];
        size_t bytes[2];
        atomic_int stop;
} writer;

static void *scribble(void *arg)
{
        writer *w = arg;
        uint64_t r = 1;

        while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
                r = mix(r);
                unsigned j = r & 1;

                ((volatile unsigned char *)w->cols[j])[(r >> 8) % w->bytes[j]] = (unsigned char)r;
        }
        return NULL;
}

/* A permutation of 0..n-1, whatever order the keys changing under the sort gave. */
static void expect_permutation(const char *what, const uint64_t *p, size_t n)
{
        unsigned char *seen = calloc(n, 1);

        ck_assert_ptr_nonnull(seen);
        for (size_t i = 0; i < n; i++) {
                if (p[i] >= n || seen[p[i]])
                        ck_abort_msg("%s: %llu at row %zu repeats or is out of range", what,
                                     (unsigned long long)p[i], i);
                seen[p[i]] = 1;
        }
        free(seen);
}

START_TEST(shared_written_meanwhile)
{
        const size_t n = 20000 / stride(4);
        const sortd_column cols[2] = {{SORTD_KEY_U128, SORTD_DESCENDING, 0, 100},
                                      {SORTD_KEY_F64, SORTD_ASCENDING, 36, 64}}; /* 128 bits */
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        writer w = {{xmalloc(n * 16), xmalloc(n * 8)}, {n * 16, n * 8}, 0};
        uint64_t *v = xmalloc(n * 8);
        pthread_t t;

        datagen_fill(w.cols[0], n, SORTD_KEY_U128, DATAGEN_FEW, 4, 1);
        datagen_fill(w.cols[1], n, SORTD_KEY_F64, DATAGEN_UNIFORM, 0, 2);
        ck_assert_int_eq(pthread_create(&t, NULL, scribble, &w), 0);
        for (int p = SORTD_PAYLOAD_VALUES64; p <= SORTD_PAYLOAD_ARGSORT64; p += 2)
                for (int path = SORTD_COLUMNS_PACKED; path <= SORTD_COLUMNS_CHAINED; path++) {
                        for (size_t i = 0; i < n; i++) /* the values are the rows */
                                v[i] = i;
                        ck_assert_msg(sortd_engine_sort_columns(
                                              e, cols, 2, (sortd_payload)p,
                                              (sortd_columns_path)path, SORTD_MEMORY_SHARED,
                                              (void *const[]){w.cols[0], w.cols[1]}, v,
                                              n) == SORTD_OK,
                                      "%s", sortd_engine_error(e));
                        expect_permutation(sortd_payload_name((sortd_payload)p), v, n);
                }
        atomic_store(&w.stop, 1);
        pthread_join(t, NULL);
        free(w.cols[0]);
        free(w.cols[1]);
        free(v);
        sortd_engine_destroy(e);
}
END_TEST

#ifdef SORTD_TEST_DEVICE_MEMORY
/*
 * Columns and 128-bit keys in device memory, where a GPU engine's caller holds them: one column
 * of each type (its own sort of a copy, or the layer), pairs, both paths forced on one input,
 * eight columns, bit ranges, 128-bit keys sorted whole, and one row.
 */
START_TEST(device_memory)
{
        const sortd_memory dev = SORTD_MEMORY_DEVICE;
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        const sortd_column narrow[3] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                        {SORTD_KEY_I16, SORTD_DESCENDING, 0, 0},
                                        {SORTD_KEY_F16, SORTD_ASCENDING, 0, 0}};
        const sortd_column ranged[2] = {{SORTD_KEY_I128, SORTD_DESCENDING, 60, 100},
                                        {SORTD_KEY_F32, SORTD_ASCENDING, 3, 29}};
        sortd_column mixed[8];
        uint64_t one[2] = {5, 6}, index = 77;
        table t;

        for (unsigned a = 0; a < NTYPES; a++) {
                const sortd_column col = column(types[a], a);
                const sortd_column pair[2] = {column(types[a], a),
                                              column(types[(a + 4) % NTYPES], a >> 1)};

                table_make(&t, &col, 1, (sortd_payload)(a % SORTD_PAYLOAD_COUNT), 700 + a, a);
                expect_sorted(e, &t, SORTD_COLUMNS_AUTO, dev);
                table_free(&t);
                table_make(&t, pair, 2, (sortd_payload)((a + 1) % SORTD_PAYLOAD_COUNT), 500 + a, a);
                expect_sorted(e, &t, SORTD_COLUMNS_AUTO, dev);
                table_free(&t);
        }
        for (int path = SORTD_COLUMNS_PACKED; path <= SORTD_COLUMNS_CHAINED; path++) {
                table_make(&t, narrow, 3, SORTD_PAYLOAD_VALUES64, 1500, 1);
                expect_sorted(e, &t, (sortd_columns_path)path, dev);
                table_free(&t);
                table_make(&t, ranged, 2, SORTD_PAYLOAD_ARGSORT32, 1000, 4);
                expect_sorted(e, &t, (sortd_columns_path)path, dev);
                table_free(&t);
        }
        for (unsigned j = 0; j < 8; j++)
                mixed[j] = (sortd_column){types[(j * 5) % NTYPES], (sortd_order)(j % 2), 0, 0};
        table_make(&t, mixed, 8, SORTD_PAYLOAD_ARGSORT64, 800, 16);
        expect_sorted(e, &t, SORTD_COLUMNS_AUTO, dev);
        table_free(&t);
        for (unsigned i = 0; i < sizeof(wide_segs) / sizeof(wide_segs[0]); i++)
                wide_segments(e, dev, i % 2 ? SORTD_KEY_U128 : SORTD_KEY_I128, &wide_segs[i],
                              50 + i);
        for (int kt = SORTD_KEY_U128; kt <= SORTD_KEY_I128; kt++) {
                wide_keys(e, dev, (sortd_key_type)kt, make_random, 2000, 7);
                wide_keys(e, dev, (sortd_key_type)kt, make_shared_high, 1000, 9);
                wide_keys(e, dev, (sortd_key_type)kt, make_extremes, 500, 10);
        }
        /* one row: an argsort's index 0, the key as it was */
        {
                const sortd_sort_desc d = {SORTD_KEY_I128, SORTD_PAYLOAD_ARGSORT64,
                                           SORTD_DESCENDING, 0, 0};
                void *k = there(dev, one, 16), *v = there(dev, &index, 8);

                ck_assert_int_eq(sortd_engine_sort_device(e, &d, k, v, 1), SORTD_OK);
                back(dev, one, k, 16);
                back(dev, &index, v, 8);
                ck_assert_uint_eq(index, 0);
                ck_assert(one[0] == 5 && one[1] == 6);
        }
        sortd_engine_destroy(e);
}
END_TEST

/*
 * Device memory that runs out, then a kernel that faults, in a sort of columns in device memory:
 * out of memory is the call's error and leaves the columns and the engine as they were; a fault
 * is the device's and loses the engine. The fault is sticky on the stand-in's device, as on a
 * GPU, so this case runs last.
 */
START_TEST(device_faults)
{
        const sortd_memory dev = SORTD_MEMORY_DEVICE;
        const sortd_column cols[2] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                      {SORTD_KEY_I64, SORTD_DESCENDING, 0, 0}};
        sortd_engine *e = engine_new((sortd_engine_faults){0});
        void *keys[2], *vals;
        table t;

        table_make(&t, cols, 2, SORTD_PAYLOAD_ARGSORT32, 3000, 5);
        for (unsigned j = 0; j < 2; j++)
                keys[j] = there(dev, t.keys[j], t.n * sortd_key_size(cols[j].key_type));
        vals = there(dev, t.vals, t.n * 8);
        fake_cuda_c_fail_malloc_at(2); /* the workspace's second part */
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 2, t.payload, SORTD_COLUMNS_AUTO, dev,
                                                keys, vals, t.n),
                      SORTD_E_NOMEM, "workspace out of memory", "of device memory");
        ck_assert(!sortd_engine_lost(e));
        for (unsigned j = 0; j < 2; j++) {
                size_t bytes = t.n * sortd_key_size(cols[j].key_type);
                void *was = xmalloc(bytes);

                memcpy(was, t.keys[j], bytes);
                back(dev, t.keys[j], keys[j], bytes);
                ck_assert_msg(memcmp(was, t.keys[j], bytes) == 0, "column %u changed", j);
                free(was);
        }
        back(dev, t.vals, vals, t.n * 8);
        expect_sorted(e, &t, SORTD_COLUMNS_AUTO, dev);
        table_free(&t);

        table_make(&t, cols, 2, SORTD_PAYLOAD_VALUES32, 3000, 6);
        for (unsigned j = 0; j < 2; j++)
                keys[j] = there(dev, t.keys[j], t.n * sortd_key_size(cols[j].key_type));
        vals = there(dev, t.vals, t.n * 8);
        fake_cuda_c_fail_launch_at(1);
        expect_status(e,
                      sortd_engine_sort_columns(e, cols, 2, t.payload, SORTD_COLUMNS_AUTO, dev,
                                                keys, vals, t.n),
                      SORTD_E_DEVICE, "a kernel's fault", "illegal memory access");
        ck_assert(sortd_engine_lost(e));
        for (unsigned j = 0; j < 2; j++) /* the device's copies fail now: only freed */
                (void)cudaFree(keys[j]);
        (void)cudaFree(vals);
        table_free(&t);
        sortd_engine_destroy(e);
}
END_TEST
#endif

int main(void)
{
        Suite *s = suite_create("engine-columns");
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {
                {"one-column", one_column},
                {"pairs", pairs},
                {"triples", triples},
                {"packed-and-chained", packed_and_chained},
                {"eight-columns", eight_columns},
                {"bit-ranges", bit_ranges},
                {"wide", wide_sorts},
                {"wide-batch", wide_batch},
                {"wide-segments-topk", wide_segments_topk},
                {"refusals", refusals},
                {"one-sorting-call", one_sorting_call},
                {"shared-written-meanwhile", shared_written_meanwhile},
#ifdef SORTD_TEST_DEVICE_MEMORY
                {"device-memory", device_memory},
                {"device-faults", device_faults}, /* last: its fault is sticky */
#endif
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                TCase *tc = tcase_create(cases[i].name);

                tcase_set_timeout(tc, 600);
                tcase_add_test(tc, cases[i].test);
                suite_add_tcase(s, tc);
        }
        return strcmp(engine_kind(), "cpu") == 0 ? run_suite(s) : run_suite_nofork(s);
}
