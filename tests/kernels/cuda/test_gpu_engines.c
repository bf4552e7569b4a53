/*
 * The CUDA engines on a real GPU, and the daemon on it. Without a GPU, or in a
 * build without CUDA, it says why and exits 77, which meson reports as skipped.
 *
 * Case "engines": each GPU engine, ours ("cuda") and CUB's ("cub", a second
 * opinion), against the CPU engine, which CI tests on every commit, and
 * against the independent reference sort (tests/support/reference.c) up to 100003
 * keys: the matrix, bit windows, 2^28 keys, the size limit, and each engine's
 * self-check, and sorts in each engine's pinned and registered host memory,
 * around the staging slot's size with pageable and pinned arrays mixed, and
 * batches (sortd_engine_sort_batch) of mixed members against the CPU engine's.
 * Device memory: sortd_engine_sort_device on arrays of exactly n keys against
 * the CPU engine, the device UUID, and CUDA IPC: a handle from this process
 * must be refused cleanly, and one from another process (this binary run
 * again as "--ipc-child", a fresh process, never a fork of one that initialised
 * CUDA) opened, sorted in and closed.
 * Segments and top-k (the cuda engine's alone): every size class, host and device memory,
 * against the CPU engine's sort of each segment.
 * No GPU engine is an oracle here.
 * Case "daemon": `sortd --engine auto` ($SORTD_BIN) must choose cuda after its
 * self-check, and sort every key type through libsortd like the reference.
 * CK_RUN_CASE=engines or daemon runs one (scripts/gpu-check runs each).
 *
 * A forked child of a process that initialised CUDA cannot use CUDA, and
 * main probes the device first: the suite runs with CK_NOFORK.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef SORTD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda_check.h"
#endif

#include "datagen.h"
#include "engine.h"
#include "harness.h"
#include "reference.h"

#define MATRIX_MAX ((size_t)1 << 20)
#define REFERENCE_MAX ((size_t)100003) /* the merge sort is slow past this */

static const char *const gpu_kinds[] = {"cuda", "cub"};
#define GPU_ENGINES 2

static const struct {
        datagen_dist dist;
        unsigned param;
} dists[] = {{DATAGEN_UNIFORM, 0}, {DATAGEN_ENTROPY, 4},  {DATAGEN_ENTROPY, 16},
             {DATAGEN_EQUAL, 0},   {DATAGEN_SORTED, 0},   {DATAGEN_REVERSE, 0},
             {DATAGEN_FEW, 16},    {DATAGEN_NEGATIVE, 0}, {DATAGEN_SPECIAL, 0}};

/* threads: the engine's, 0 for the default (a GPU engine's host copy threads, up to 8). */
static sortd_engine *make_threads(const char *kind, size_t capacity, unsigned threads)
{
        sortd_engine_config cfg = {.capacity = capacity, .threads = threads};
        sortd_engine *e = NULL;
        char why[256];
        sortd_status s = sortd_engine_create(kind, &cfg, &e, why, sizeof(why));

        ck_assert_msg(s == SORTD_OK, "%s engine: %s", kind, why);
        return e;
}

static sortd_engine *make(const char *kind, size_t capacity)
{
        return make_threads(kind, capacity, 0);
}

/* The GPU engines [0, GPU_ENGINES) and the CPU engine, for one capacity. */
struct engines {
        sortd_engine *gpu[GPU_ENGINES], *cpu;
};

static struct engines make_all_threads(size_t capacity, unsigned threads)
{
        struct engines e;

        for (int i = 0; i < GPU_ENGINES; i++)
                e.gpu[i] = make_threads(gpu_kinds[i], capacity, threads);
        e.cpu = make_threads("cpu", capacity, threads);
        return e;
}

static struct engines make_all(size_t capacity)
{
        return make_all_threads(capacity, 0);
}

static void destroy_all(struct engines *e)
{
        for (int i = 0; i < GPU_ENGINES; i++)
                sortd_engine_destroy(e->gpu[i]);
        sortd_engine_destroy(e->cpu);
}

struct run {
        void *keys, *vals;
};

static struct run copy_of(const sortd_sort_desc *d, const void *keys, const void *vals, size_t n)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        struct run r = {malloc(n * kb + 1), malloc(n * vb + 1)};

        ck_assert(r.keys && r.vals);
        memcpy(r.keys, keys, n * kb);
        memcpy(r.vals, vals, n * vb);
        return r;
}

static struct run sort_copy(sortd_engine *e, const sortd_sort_desc *d, const struct run *in,
                            size_t n)
{
        struct run r = copy_of(d, in->keys, in->vals, n);

        ck_assert_msg(sortd_engine_sort(e, d, r.keys, r.vals, n) == SORTD_OK, "%s: %s",
                      sortd_engine_kind(e), sortd_engine_error(e));
        return r;
}

static void drop(struct run *r)
{
        free(r->keys);
        free(r->vals);
}

static int same(const struct run *a, const struct run *b, const sortd_sort_desc *d, size_t n)
{
        return memcmp(a->keys, b->keys, n * sortd_key_size(d->key_type)) == 0 &&
               memcmp(a->vals, b->vals, n * sortd_payload_size(d->payload)) == 0;
}

/*
 * Free of Check, for the IPC child too: a ck_assert outside a running test, even one that
 * holds, reports to a pipe that process does not have, and exits it.
 */
static bool fill_run(const sortd_sort_desc *d, datagen_dist dist, unsigned param, size_t n,
                     uint64_t seed, struct run *in)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);

        in->keys = malloc(n * kb + 1);
        in->vals = malloc(n * vb + 1);
        if (!in->keys || !in->vals) {
                drop(in);
                return false;
        }
        datagen_fill(in->keys, n, d->key_type, dist, param, seed);
        if (vb)
                datagen_fill_values(in->vals, n, (unsigned)vb, seed + 1);
        return true;
}

static struct run generate(const sortd_sort_desc *d, datagen_dist dist, unsigned param, size_t n,
                           uint64_t seed)
{
        struct run in;

        ck_assert(fill_run(d, dist, param, n, seed, &in));
        return in;
}

/* The CPU engine (and the reference, when n is small enough), then each GPU engine against it. */
static void check_one(const struct engines *e, const sortd_sort_desc *d, datagen_dist dist,
                      unsigned param, size_t n, uint64_t seed)
{
        struct run in = generate(d, dist, param, n, seed);
        struct run host = sort_copy(e->cpu, d, &in, n);
        char what[160], dname[32];

        datagen_name(dist, param, dname, sizeof(dname));
        snprintf(what, sizeof(what), "%s %s %s [%u,%u) %s n=%zu", sortd_key_type_name(d->key_type),
                 sortd_payload_name(d->payload), d->order ? "desc" : "asc", d->begin_bit,
                 d->end_bit, dname, n);
        if (n <= REFERENCE_MAX) {
                struct run ref = copy_of(d, in.keys, in.vals, n);
                ck_assert_int_eq(ref_sort(d, ref.keys, ref.vals, n), 0);
                ck_assert_msg(same(&host, &ref, d, n), "%s: cpu differs from the reference", what);
                drop(&ref);
        }
        for (int i = 0; i < GPU_ENGINES; i++) {
                struct run got = sort_copy(e->gpu[i], d, &in, n);
                ck_assert_msg(same(&got, &host, d, n), "%s: %s differs from cpu", what,
                              gpu_kinds[i]);
                drop(&got);
        }
        drop(&host);
        drop(&in);
}

static void run_matrix(sortd_key_type t)
{
        /* both production tiles (4096 and 3072 keys) and their neighbours */
        const size_t sizes[] = {2, 3071, 3072, 3073, 4095, 4096, 4097, 100003, MATRIX_MAX};
        struct engines e = make_all(MATRIX_MAX);
        uint64_t seed = 42;

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                        for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++)
                                for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                                        sortd_sort_desc d = {t, (sortd_payload)p, (sortd_order)o, 0,
                                                             0};
                                        check_one(&e, &d, dists[i].dist, dists[i].param, sizes[s],
                                                  ++seed);
                                }
        destroy_all(&e);
}

START_TEST(test_matrix)
{
        run_matrix((sortd_key_type)_i);
}
END_TEST

START_TEST(test_bit_ranges)
{
        const struct {
                sortd_key_type t;
                unsigned begin, end;
        } w[] = {{SORTD_KEY_U32, 0, 1},  {SORTD_KEY_U32, 3, 17},  {SORTD_KEY_F32, 20, 32},
                 {SORTD_KEY_U64, 5, 64}, {SORTD_KEY_I64, 31, 45}, {SORTD_KEY_F64, 0, 13},
                 {SORTD_KEY_I16, 4, 12}, {SORTD_KEY_U8, 7, 8}};
        size_t n = 100003;
        struct engines e = make_all(n);

        for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        sortd_sort_desc d = {w[i].t, SORTD_PAYLOAD_ARGSORT32, (sortd_order)o,
                                             w[i].begin, w[i].end};
                        check_one(&e, &d, DATAGEN_UNIFORM, 0, n, 7 + i);
                }
        destroy_all(&e);
}
END_TEST

/* n >= 2^28, against the CPU engine. */
START_TEST(test_large)
{
        size_t n = ((size_t)1 << 28) + 12345;
        struct engines e = make_all(n);
        sortd_sort_desc keys_only = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        sortd_sort_desc pairs = {SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 0, 0};

        check_one(&e, &keys_only, DATAGEN_UNIFORM, 0, n, 1);
        check_one(&e, &pairs, DATAGEN_ENTROPY, 2, n, 2);
        destroy_all(&e);
}
END_TEST

/* Past one strip of 2^30 - 2^16 keys: the cuda engine bins strip by strip
   (two here), against the CPU engine. 34 GB of device memory for the cuda
   engine alone, so cub is not made beside it. */
START_TEST(test_strips)
{
        size_t n = ((size_t)1 << 30) + ((size_t)1 << 20);
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_DESCENDING, 0, 0};
        sortd_engine *cuda = make("cuda", n), *cpu = make("cpu", n);
        struct run in = generate(&d, DATAGEN_UNIFORM, 0, n, 11);
        struct run want = sort_copy(cpu, &d, &in, n), got = sort_copy(cuda, &d, &in, n);

        ck_assert_msg(same(&got, &want, &d, n), "u32 desc n=%zu: cuda differs from cpu", n);
        drop(&got);
        drop(&want);
        drop(&in);
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Above 2^32 - 2^16 keys the engine refuses, naming the limit: never a silent overflow. */
START_TEST(test_size_limit)
{
        sortd_engine_config cfg = {.capacity = ((size_t)1 << 32) - ((size_t)1 << 16) + 1};
        sortd_engine *e = NULL;
        char why[256] = "";

        ck_assert_int_eq(sortd_engine_create("cuda", &cfg, &e, why, sizeof(why)),
                         SORTD_E_UNSUPPORTED);
        ck_assert_ptr_null(e);
        ck_assert_msg(strstr(why, "2^32") != NULL, "message names no limit: %s", why);
}
END_TEST

/* Members of a test batch: more than engine.c hands an engine at once (128). */
#define BATCH_MEMBERS 150
/* The one member that fails its checks (a bit window past its key) and must fail alone. */
#define BATCH_BAD 77

/* Member m's request and size (at most capacity): every key type, payload and order, a bit
   window for one in four, sizes from 1 key to past the cuda engine's segmented limit (4096). */
static sortd_sort_desc batch_desc(size_t m, size_t capacity, size_t *n)
{
        static const size_t sizes[] = {1, 2, 3, 100, 1000, 4095, 4096, 4097, 20000};
        sortd_sort_desc d = {(sortd_key_type)(m % SORTD_KEY_TYPE_COUNT),
                             (sortd_payload)(m / 10 % SORTD_PAYLOAD_COUNT),
                             (sortd_order)(m / 50 % SORTD_ORDER_COUNT), 0, 0};
        unsigned bits = (unsigned)sortd_key_size(d.key_type) * 8;

        if (m % 4 == 3) {
                d.begin_bit = 1;
                d.end_bit = bits - 2;
        }
        if (m == BATCH_BAD)
                d.end_bit = bits + 1;
        *n = sizes[m * 7 % 9] < capacity ? sizes[m * 7 % 9] : capacity;
        return d;
}

static void batch_items(sortd_engine_batch_item *items, const struct run *in, size_t capacity)
{
        for (size_t m = 0; m < BATCH_MEMBERS; m++) {
                items[m].desc = batch_desc(m, capacity, &items[m].n);
                struct run r = copy_of(&items[m].desc, in[m].keys, in[m].vals, items[m].n);
                items[m].keys = r.keys;
                items[m].vals = r.vals;
        }
}

static void batch_free(sortd_engine_batch_item *items)
{
        for (size_t m = 0; m < BATCH_MEMBERS; m++) {
                free(items[m].keys);
                free(items[m].vals);
        }
}

/*
 * sortd_engine_sort_batch on each GPU engine against the CPU engine's, member by member: status
 * and message, keys and payload. The bad member fails with SORTD_E_INVAL and the batch with it,
 * every other member is sorted.
 */
static void check_batch(size_t capacity, uint64_t seed)
{
        struct engines e = make_all(capacity);
        struct run in[BATCH_MEMBERS];
        sortd_engine_batch_item *want = calloc(BATCH_MEMBERS, sizeof(*want));
        sortd_engine_batch_item *got = calloc(BATCH_MEMBERS, sizeof(*got));

        ck_assert(want && got);
        for (size_t m = 0; m < BATCH_MEMBERS; m++) {
                size_t n;
                sortd_sort_desc d = batch_desc(m, capacity, &n);
                in[m] = generate(&d, dists[m % 9].dist, dists[m % 9].param, n, seed + m);
        }
        batch_items(want, in, capacity);
        ck_assert_int_eq(sortd_engine_sort_batch(e.cpu, want, BATCH_MEMBERS), SORTD_E_INVAL);
        for (int g = 0; g < GPU_ENGINES; g++) {
                batch_items(got, in, capacity);
                ck_assert_int_eq(sortd_engine_sort_batch(e.gpu[g], got, BATCH_MEMBERS),
                                 SORTD_E_INVAL);
                for (size_t m = 0; m < BATCH_MEMBERS; m++) {
                        const sortd_engine_batch_item *w = &want[m], *x = &got[m];
                        struct run a = {x->keys, x->vals}, b = {w->keys, w->vals};

                        ck_assert_msg(x->status == (m == BATCH_BAD ? SORTD_E_INVAL : SORTD_OK),
                                      "%s, capacity %zu, member %zu (%s %s n=%zu): %s",
                                      gpu_kinds[g], capacity, m,
                                      sortd_key_type_name(x->desc.key_type),
                                      sortd_payload_name(x->desc.payload), x->n, x->why);
                        ck_assert_msg(
                                m == BATCH_BAD || same(&a, &b, &x->desc, x->n),
                                "%s, capacity %zu, member %zu: %s %s %s [%u,%u) n=%zu "
                                "differs from cpu",
                                gpu_kinds[g], capacity, m, sortd_key_type_name(x->desc.key_type),
                                sortd_payload_name(x->desc.payload), x->desc.order ? "desc" : "asc",
                                x->desc.begin_bit, x->desc.end_bit, x->n);
                        ck_assert_str_eq(x->why, w->why);
                }
                batch_free(got);
        }
        batch_free(want);
        for (size_t m = 0; m < BATCH_MEMBERS; m++)
                drop(&in[m]);
        free(want);
        free(got);
        destroy_all(&e);
}

/* A batch on engines of ample capacity, then on engines of 5000 keys, whose staging area holds
   a few members at a time: the cuda engine splits the batch into several uploads. */
START_TEST(test_batch)
{
        check_batch((size_t)1 << 16, 1000);
        check_batch(5000, 2000);
}
END_TEST

/* Copies in into at, where g sorts it; the result must equal want (the CPU engine's). */
static void sort_in_place(sortd_engine *g, const sortd_sort_desc *d, const struct run *in,
                          const struct run *want, struct run at, size_t n, const char *where)
{
        memcpy(at.keys, in->keys, n * sortd_key_size(d->key_type));
        memcpy(at.vals, in->vals, n * sortd_payload_size(d->payload));
        ck_assert_msg(sortd_engine_sort(g, d, at.keys, at.vals, n) == SORTD_OK, "%s, %s: %s",
                      sortd_engine_kind(g), where, sortd_engine_error(g));
        ck_assert_msg(same(&at, want, d, n), "%s, %s: differs from cpu", sortd_engine_kind(g),
                      where);
}

/* Each GPU engine sorts in its own pinned memory and in malloc'd memory it registered. */
START_TEST(test_host_memory)
{
        const size_t n = 100003, kb = 8, vb = 4;
        sortd_sort_desc d = {SORTD_KEY_U64, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING, 0, 0};
        struct engines e = make_all(n);
        struct run in = generate(&d, DATAGEN_ENTROPY, 4, n, 99);
        struct run want = sort_copy(e.cpu, &d, &in, n);

        for (int i = 0; i < GPU_ENGINES; i++) {
                sortd_engine *g = e.gpu[i];
                struct run pinned = {NULL, NULL}, reg = copy_of(&d, in.keys, in.vals, n);

                ck_assert_int_eq(sortd_engine_host_alloc(g, 0, &pinned.keys), SORTD_E_INVAL);
                ck_assert_msg(sortd_engine_host_alloc(g, n * kb, &pinned.keys) == SORTD_OK &&
                                      sortd_engine_host_alloc(g, n * vb, &pinned.vals) == SORTD_OK,
                              "%s: host_alloc: %s", gpu_kinds[i], sortd_engine_error(g));
                sort_in_place(g, &d, &in, &want, pinned, n, "in host_alloc'd memory");
                sortd_engine_host_free(g, pinned.keys, n * kb);
                sortd_engine_host_free(g, pinned.vals, n * vb);

                ck_assert_msg(sortd_engine_host_register(g, reg.keys, n * kb) == SORTD_OK &&
                                      sortd_engine_host_register(g, reg.vals, n * vb) == SORTD_OK,
                              "%s: host_register: %s", gpu_kinds[i], sortd_engine_error(g));
                ck_assert_int_ne(sortd_engine_host_register(g, reg.keys, n * kb), SORTD_OK);
                ck_assert_msg(strstr(sortd_engine_error(g), "cudaHostRegister"),
                              "%s: registering twice: %s", gpu_kinds[i], sortd_engine_error(g));
                sort_in_place(g, &d, &in, &want, reg, n, "in registered memory");
                ck_assert_msg(sortd_engine_host_unregister(g, reg.keys) == SORTD_OK &&
                                      sortd_engine_host_unregister(g, reg.vals) == SORTD_OK,
                              "%s: host_unregister: %s", gpu_kinds[i], sortd_engine_error(g));
                drop(&reg);
        }
        drop(&want);
        drop(&in);
        destroy_all(&e);
}
END_TEST

#ifdef SORTD_HAVE_CUDA

/* A CUDA call the test makes itself, outside the engines. */
/* in's keys and values in device arrays of exactly n keys and values. */
static struct run to_device(const sortd_sort_desc *d, const struct run *in, size_t n)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        struct run dev = {NULL, NULL};

        CUDA_OK(cudaMalloc(&dev.keys, n * kb));
        CUDA_OK(cudaMemcpy(dev.keys, in->keys, n * kb, cudaMemcpyHostToDevice));
        if (vb) {
                CUDA_OK(cudaMalloc(&dev.vals, n * vb));
                CUDA_OK(cudaMemcpy(dev.vals, in->vals, n * vb, cudaMemcpyHostToDevice));
        }
        /* a pageable copy may still be in flight, and the engines' streams do not wait for it */
        CUDA_OK(cudaDeviceSynchronize());
        return dev;
}

/* The device arrays' contents in host memory. */
static struct run from_device(const sortd_sort_desc *d, const struct run *dev, size_t n)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        struct run r = {malloc(n * kb + 1), malloc(n * vb + 1)};

        ck_assert(r.keys && r.vals);
        CUDA_OK(cudaMemcpy(r.keys, dev->keys, n * kb, cudaMemcpyDeviceToHost));
        if (vb)
                CUDA_OK(cudaMemcpy(r.vals, dev->vals, n * vb, cudaMemcpyDeviceToHost));
        return r;
}

/* sort_device of the device arrays at dev, holding in, against want (the CPU engine's). */
static void sort_on_device(sortd_engine *g, const sortd_sort_desc *d, struct run dev,
                           const struct run *want, size_t n, const char *what)
{
        struct run got;

        ck_assert_msg(sortd_engine_sort_device(g, d, dev.keys, dev.vals, n) == SORTD_OK,
                      "%s: %s sort_device: %s", what, sortd_engine_kind(g), sortd_engine_error(g));
        ck_assert_msg(n < 2 || sortd_engine_last_device_seconds(g) > 0,
                      "%s: %s sort_device measured no device time", what, sortd_engine_kind(g));
        got = from_device(d, &dev, n);
        ck_assert_msg(same(&got, want, d, n), "%s: %s sort_device differs from cpu", what,
                      sortd_engine_kind(g));
        drop(&got);
}

static void check_device(const struct engines *e, const sortd_sort_desc *d, size_t n, uint64_t seed)
{
        struct run in = generate(d, DATAGEN_UNIFORM, 0, n, seed);
        struct run want = sort_copy(e->cpu, d, &in, n);
        char what[128];

        snprintf(what, sizeof(what), "%s %s %s [%u,%u) n=%zu", sortd_key_type_name(d->key_type),
                 sortd_payload_name(d->payload), d->order ? "desc" : "asc", d->begin_bit,
                 d->end_bit, n);
        for (int i = 0; i < GPU_ENGINES; i++) {
                struct run dev = to_device(d, &in, n);

                /* 128-bit keys go through the key columns' device steps, which cub lacks */
                if (sortd_key_size(d->key_type) == 16 && strcmp(gpu_kinds[i], "cub") == 0)
                        ck_assert_msg(sortd_engine_sort_device(e->gpu[i], d, dev.keys, dev.vals,
                                                               n) == SORTD_E_UNSUPPORTED,
                                      "%s: cub sorted 128-bit keys in device memory", what);
                else
                        sort_on_device(e->gpu[i], d, dev, &want, n, what);
                CUDA_OK(cudaFree(dev.keys));
                CUDA_OK(cudaFree(dev.vals));
        }
        drop(&want);
        drop(&in);
}

/*
 * Every key type x payload on arrays of exactly their size: n = 1 (an argsort's index 0 is
 * written on the device), tile edges, and windows with an odd number of passes, whose result
 * ends in the engine's buffer and is copied back.
 */
START_TEST(test_sort_device)
{
        const size_t sizes[] = {1, 2, 3071, 4097, 100003};
        struct engines e = make_all(100003);
        uint64_t seed = 4242;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                        unsigned bits = 8 * (unsigned)sortd_key_size((sortd_key_type)t);
                        sortd_sort_desc odd = {(sortd_key_type)t, (sortd_payload)p,
                                               SORTD_DESCENDING, 1, bits > 8 ? bits - 8 : 7};

                        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                                sortd_sort_desc d = {(sortd_key_type)t, (sortd_payload)p,
                                                     (sortd_order)(s & 1), 0, 0};
                                check_device(&e, &d, sizes[s], ++seed);
                        }
                        check_device(&e, &odd, 100003, ++seed);
                }
        destroy_all(&e);
}
END_TEST

/*
 * Key columns in device memory on the cuda engine, against the cpu engine's sort of the same
 * columns in host memory: an argsort of u32 ascending then f64 descending (packed: 96 bits),
 * and three columns with 64-bit values moved (chained: 208 bits), at a tile's edge and past it.
 */
static void check_columns_device(const struct engines *e, const sortd_column *cols, unsigned count,
                                 sortd_payload payload, size_t n, uint64_t seed)
{
        const size_t vb = sortd_payload_size(payload);
        void *host[SORTD_MAX_COLUMNS], *dev[SORTD_MAX_COLUMNS], *got = malloc(n * 16 + 1);
        void *vals = malloc(n * 8 + 1), *dvals = NULL;

        ck_assert(got && vals);
        datagen_fill_values(vals, n, 8, seed);
        CUDA_OK(cudaMalloc(&dvals, n * 8 + 1));
        CUDA_OK(cudaMemcpy(dvals, vals, n * 8, cudaMemcpyHostToDevice));
        for (unsigned j = 0; j < count; j++) {
                size_t kb = sortd_key_size(cols[j].key_type);

                host[j] = malloc(n * kb + 1);
                ck_assert(host[j]);
                datagen_fill(host[j], n, cols[j].key_type,
                             j + 1 < count ? DATAGEN_FEW : DATAGEN_UNIFORM, 3, seed + j);
                CUDA_OK(cudaMalloc(&dev[j], n * kb + 1));
                CUDA_OK(cudaMemcpy(dev[j], host[j], n * kb, cudaMemcpyHostToDevice));
        }
        CUDA_OK(cudaDeviceSynchronize());
        ck_assert_msg(sortd_engine_sort_columns(e->gpu[0], cols, count, payload, SORTD_COLUMNS_AUTO,
                                                SORTD_MEMORY_DEVICE, dev, vb ? dvals : NULL,
                                                n) == SORTD_OK,
                      "cuda: columns in device memory: %s", sortd_engine_error(e->gpu[0]));
        ck_assert_msg(sortd_engine_sort_columns(e->cpu, cols, count, payload, SORTD_COLUMNS_AUTO,
                                                SORTD_MEMORY_HOST, host, vb ? vals : NULL,
                                                n) == SORTD_OK,
                      "cpu: %s", sortd_engine_error(e->cpu));
        for (unsigned j = 0; j < count; j++) {
                size_t kb = sortd_key_size(cols[j].key_type);

                CUDA_OK(cudaMemcpy(got, dev[j], n * kb, cudaMemcpyDeviceToHost));
                ck_assert_msg(memcmp(got, host[j], n * kb) == 0,
                              "n=%zu: column %u in device memory differs from cpu", n, j);
                CUDA_OK(cudaFree(dev[j]));
                free(host[j]);
        }
        CUDA_OK(cudaMemcpy(got, dvals, n * vb, cudaMemcpyDeviceToHost));
        ck_assert_msg(memcmp(got, vals, n * vb) == 0, "n=%zu: %s in device memory differs from cpu",
                      n, sortd_payload_name(payload));
        CUDA_OK(cudaFree(dvals));
        free(vals);
        free(got);
}

START_TEST(test_columns_device)
{
        const sortd_column two[2] = {{SORTD_KEY_U32, SORTD_ASCENDING, 0, 0},
                                     {SORTD_KEY_F64, SORTD_DESCENDING, 0, 0}};
        const sortd_column three[3] = {{SORTD_KEY_I16, SORTD_DESCENDING, 0, 0},
                                       {SORTD_KEY_U128, SORTD_ASCENDING, 0, 0},
                                       {SORTD_KEY_F32, SORTD_ASCENDING, 0, 0}};
        struct engines e = make_all(100003);

        for (size_t n = 3071; n <= 100003; n += 96932) {
                check_columns_device(&e, two, 2, SORTD_PAYLOAD_ARGSORT32, n, n);
                check_columns_device(&e, three, 3, SORTD_PAYLOAD_VALUES64, n, n + 1);
        }
        ck_assert_int_eq(sortd_engine_sort_columns(e.gpu[1], two, 2, SORTD_PAYLOAD_NONE,
                                                   SORTD_COLUMNS_AUTO, SORTD_MEMORY_DEVICE,
                                                   (void *const[]){NULL, NULL}, NULL, 1),
                         SORTD_E_UNSUPPORTED);
        destroy_all(&e);
}
END_TEST

/*
 * Segments and top-k on the cuda engine (cub has neither yet): 2^20 keys in segments of every
 * size class (up to 256, up to 4096, Onesweep's), empty ones among them, against the CPU
 * engine's sortd_engine_sort of each segment alone; in pageable and in device memory. Top-k of
 * those segments, and of one array of 2^22 keys by radix select, as each sort's first k.
 */
#define SEG_N ((size_t)1 << 20)
#define SELECT_N ((size_t)1 << 22)

/* Offsets (u64) of segments over SEG_N keys, lengths mixed over the size classes. */
static uint64_t *segment_offsets(uint64_t seed, uint64_t *count)
{
        uint64_t *off = malloc(sizeof(uint64_t) * (SEG_N + 1)), at = 0, x = seed | 1, c = 0;

        ck_assert_ptr_nonnull(off);
        off[0] = 0;
        while (at < SEG_N) {
                uint64_t len;

                x = x * 6364136223846793005ull + 1442695040888963407ull;
                switch ((x >> 33) % 8) {
                case 0:
                        len = 0;
                        break;
                case 1:
                case 2:
                case 3:
                        len = (x >> 40) % 257;
                        break;
                case 4:
                case 5:
                        len = 257 + (x >> 40) % 3840;
                        break;
                default:
                        len = (x >> 40) % 60000;
                }
                len = len < SEG_N - at ? len : SEG_N - at;
                off[++c] = at += len;
        }
        *count = c;
        return off;
}

/* The oracle: each segment of r sorted alone by the CPU engine. */
static void cpu_sort_segments(sortd_engine *cpu, const sortd_sort_desc *d, struct run *r,
                              const uint64_t *off, uint64_t count)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);

        for (uint64_t i = 0; i < count; i++) {
                size_t len = off[i + 1] - off[i];

                if (len)
                        ck_assert_int_eq(
                                sortd_engine_sort(cpu, d, (char *)r->keys + off[i] * kb,
                                                  vb ? (char *)r->vals + off[i] * vb : NULL, len),
                                SORTD_OK);
        }
}

static void check_segments(sortd_engine *g, sortd_engine *cpu, const sortd_sort_desc *d,
                           uint64_t seed)
{
        uint64_t count, *off = segment_offsets(seed, &count);
        sortd_segments seg = {.count = count, .offsets = off, .offset_bytes = 8};
        size_t vb = sortd_payload_size(d->payload);
        struct run in = generate(d, DATAGEN_FEW, 1000, SEG_N, seed);
        struct run want = copy_of(d, in.keys, in.vals, SEG_N);
        struct run got = copy_of(d, in.keys, in.vals, SEG_N);
        struct run dev = to_device(d, &in, SEG_N), back;

        cpu_sort_segments(cpu, d, &want, off, count);
        ck_assert_msg(sortd_engine_sort_segments(g, d, &seg, SORTD_MEMORY_HOST, got.keys,
                                                 vb ? got.vals : NULL, SEG_N) == SORTD_OK,
                      "%s", sortd_engine_error(g));
        ck_assert_msg(same(&got, &want, d, SEG_N), "%s %s: segments differ from cpu's",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload));
        ck_assert_msg(sortd_engine_sort_segments(g, d, &seg, SORTD_MEMORY_DEVICE, dev.keys,
                                                 dev.vals, SEG_N) == SORTD_OK,
                      "%s", sortd_engine_error(g));
        back = from_device(d, &dev, SEG_N);
        ck_assert_msg(same(&back, &want, d, SEG_N), "%s %s: device segments differ from cpu's",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload));
        CUDA_OK(cudaFree(dev.keys));
        CUDA_OK(cudaFree(dev.vals));
        drop(&back);
        drop(&got);
        drop(&want);
        drop(&in);
        free(off);
}

/* Top-k of n keys in segs (NULL: all), host memory, against the CPU engine's sorted segments. */
static void check_topk(sortd_engine *g, sortd_engine *cpu, const sortd_sort_desc *d, size_t n,
                       const uint64_t *off, uint64_t count, uint64_t k, uint64_t seed)
{
        const uint64_t whole[2] = {0, n};
        sortd_segments seg = {.count = count, .offsets = off, .offset_bytes = 8};
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        bool argsort = sortd_payload_is_argsort(d->payload);
        struct run in = generate(d, DATAGEN_FEW, 1000, n, seed);
        struct run sorted = copy_of(d, in.keys, in.vals, n);
        uint64_t m = sortd_topk_results(off ? &seg : NULL, n, k), at = 0;
        char *want_k = malloc(m * kb + 1), *want_v = malloc(m * vb + 1);
        char *got_k = malloc(m * kb + 1), *got_v = malloc(m * vb + 1);

        ck_assert(want_k && want_v && got_k && got_v);
        off = off ? off : whole;
        count = count ? count : 1;
        cpu_sort_segments(cpu, d, &sorted, off, count);
        for (uint64_t i = 0; i < count; i++) {
                uint64_t len = off[i + 1] - off[i], take = k < len ? k : len;

                memcpy(want_k + at * kb, (char *)sorted.keys + off[i] * kb, take * kb);
                memcpy(want_v + at * vb, (char *)sorted.vals + off[i] * vb, take * vb);
                at += take;
        }
        ck_assert_msg(sortd_engine_topk(g, d, count > 1 ? &seg : NULL, k, SORTD_MEMORY_HOST,
                                        in.keys, argsort ? NULL : in.vals, got_k, vb ? got_v : NULL,
                                        n) == SORTD_OK,
                      "%s", sortd_engine_error(g));
        ck_assert_msg(memcmp(got_k, want_k, m * kb) == 0 && memcmp(got_v, want_v, m * vb) == 0,
                      "%s %s k=%llu n=%zu: top-k differs from cpu's",
                      sortd_key_type_name(d->key_type), sortd_payload_name(d->payload),
                      (unsigned long long)k, n);
        free(want_k);
        free(want_v);
        free(got_k);
        free(got_v);
        drop(&sorted);
        drop(&in);
}

START_TEST(test_segments_topk)
{
        sortd_engine *g = make("cuda", SELECT_N), *cpu = make("cpu", SELECT_N);
        uint64_t seed = 9000;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p += 2) {
                        sortd_sort_desc d = {(sortd_key_type)t, (sortd_payload)p,
                                             (sortd_order)(t & 1), 0, 0};
                        if (sortd_key_size(d.key_type) ==
                            16) /* no segments (test_engine_columns) */
                                continue;
                        uint64_t count, *off = segment_offsets(++seed, &count);

                        check_segments(g, cpu, &d, seed);
                        check_topk(g, cpu, &d, SEG_N, off, count, 1 + seed % 300, seed);
                        check_topk(g, cpu, &d, SELECT_N, NULL, 0, seed % 2 ? 1000 : SELECT_N / 2,
                                   seed);
                        free(off);
                }
        sortd_engine_destroy(g);
        sortd_engine_destroy(cpu);
}
END_TEST

START_TEST(test_device_uuid)
{
        struct cudaDeviceProp prop;
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];

        CUDA_OK(cudaGetDeviceProperties(&prop, 0));
        for (int i = 0; i < GPU_ENGINES; i++) {
                sortd_engine *g = make(gpu_kinds[i], 2);

                ck_assert_msg(sortd_engine_device_uuid(g, uuid) == SORTD_OK, "%s: %s", gpu_kinds[i],
                              sortd_engine_error(g));
                ck_assert_msg(memcmp(uuid, prop.uuid.bytes, sizeof(uuid)) == 0,
                              "%s: not device 0's UUID", gpu_kinds[i]);
                sortd_engine_destroy(g);
        }
}
END_TEST

/* The driver refuses a handle from this same process: a clean SORTD_E_INVAL naming the error. */
START_TEST(test_ipc_same_process)
{
        cudaIpcMemHandle_t h;
        void *mem;

        CUDA_OK(cudaMalloc(&mem, 4096));
        CUDA_OK(cudaIpcGetMemHandle(&h, mem));
        for (int i = 0; i < GPU_ENGINES; i++) {
                sortd_engine *g = make(gpu_kinds[i], 2);
                void *base = &h;
                size_t bytes = 7;
                sortd_status s = sortd_engine_ipc_open(g, (const uint8_t *)&h, &base, &bytes);
                const char *why = sortd_engine_error(g);

                printf("%s: ipc_open of our own handle: %s: %s\n", gpu_kinds[i], sortd_strerror(s),
                       why);
                ck_assert_msg(s == SORTD_E_INVAL, "%s: %s: %s", gpu_kinds[i], sortd_strerror(s),
                              why);
                ck_assert_msg(strstr(why, "cudaIpcOpenMemHandle: ") && strstr(why, "(cudaError"),
                              "%s: the message names no CUDA error: %s", gpu_kinds[i], why);
                ck_assert_msg(base == &h && bytes == 7, "%s: outputs written on failure",
                              gpu_kinds[i]);
                sortd_engine_destroy(g);
        }
        CUDA_OK(cudaFree(mem));
}
END_TEST

/* The cross-process case's data: one allocation, keys then values. */
#define IPC_N ((size_t)100003)
static const sortd_sort_desc ipc_desc = {SORTD_KEY_U64, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0,
                                         0};

/*
 * The exporting process (main, given "--ipc-child"): allocates and fills the case's arrays,
 * writes their handle to stdout, and frees them when stdin ends. Exit 0 on success.
 */
static int ipc_child(void)
{
        struct run in;
        size_t kbytes = IPC_N * 8, vbytes = IPC_N * 4;
        cudaIpcMemHandle_t h;
        char *mem = NULL, c;
        cudaError_t rc;

        if (!fill_run(&ipc_desc, DATAGEN_UNIFORM, 0, IPC_N, 77, &in)) {
                fprintf(stderr, "ipc child: out of memory\n");
                return 1;
        }
        if ((rc = cudaMalloc((void **)&mem, kbytes + vbytes)) != cudaSuccess ||
            (rc = cudaMemcpy(mem, in.keys, kbytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
            (rc = cudaMemcpy(mem + kbytes, in.vals, vbytes, cudaMemcpyHostToDevice)) !=
                    cudaSuccess ||
            (rc = cudaDeviceSynchronize()) != cudaSuccess ||
            (rc = cudaIpcGetMemHandle(&h, mem)) != cudaSuccess) {
                fprintf(stderr, "ipc child: %s\n", cudaGetErrorString(rc));
                return 1;
        }
        if (write(1, &h, sizeof(h)) != (ssize_t)sizeof(h))
                return 1;
        while (read(0, &c, 1) > 0)
                ;
        drop(&in);
        return cudaFree(mem) == cudaSuccess ? 0 : 1;
}

/* Runs this binary as the IPC child; *to and *from are its stdin and stdout. */
static pid_t spawn_ipc_child(int *to, int *from)
{
        extern char **environ;
        char *argv[] = {"/proc/self/exe", "--ipc-child", NULL};
        posix_spawn_file_actions_t fa;
        int in[2], out[2];
        pid_t pid;

        ck_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        ck_assert_int_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        *to = in[1];
        *from = out[0];
        return pid;
}

/* Another process's allocation, opened by each engine, sorted in place and closed. */
START_TEST(test_ipc_cross_process)
{
        struct engines e = make_all(IPC_N);
        struct run in = generate(&ipc_desc, DATAGEN_UNIFORM, 0, IPC_N, 77);
        struct run want = sort_copy(e.cpu, &ipc_desc, &in, IPC_N);
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        size_t got = 0, kbytes = IPC_N * 8;
        int to, from, status;
        pid_t pid = spawn_ipc_child(&to, &from);
        ssize_t r;

        while (got < sizeof(handle) && (r = read(from, handle + got, sizeof(handle) - got)) > 0)
                got += (size_t)r;
        ck_assert_msg(got == sizeof(handle), "the IPC child sent no handle (see its stderr)");
        for (int i = 0; i < GPU_ENGINES; i++) {
                sortd_engine *g = e.gpu[i];
                void *base = NULL;
                size_t bytes = 0;

                ck_assert_msg(sortd_engine_ipc_open(g, handle, &base, &bytes) == SORTD_OK,
                              "%s: ipc_open: %s", gpu_kinds[i], sortd_engine_error(g));
                ck_assert_msg(bytes >= kbytes + IPC_N * 4, "%s: %zu bytes opened, %zu allocated",
                              gpu_kinds[i], bytes, kbytes + IPC_N * 4);
                if (i > 0) /* the engine before sorted it */
                        CUDA_OK(cudaMemcpy(base, in.keys, kbytes, cudaMemcpyHostToDevice));
                if (i > 0)
                        CUDA_OK(cudaMemcpy((char *)base + kbytes, in.vals, IPC_N * 4,
                                           cudaMemcpyHostToDevice));
                CUDA_OK(cudaDeviceSynchronize());
                sort_on_device(g, &ipc_desc, (struct run){base, (char *)base + kbytes}, &want,
                               IPC_N, "another process's allocation");
                ck_assert_msg(sortd_engine_ipc_close(g, base) == SORTD_OK, "%s: ipc_close: %s",
                              gpu_kinds[i], sortd_engine_error(g));
        }
        close(to);
        close(from);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "IPC child: status %#x",
                      status);
        drop(&want);
        drop(&in);
        destroy_all(&e);
}
END_TEST

#endif /* SORTD_HAVE_CUDA */

/*
 * Transfers around the engines' 8 MiB staging slot (2^21 u32 keys, 2^20 values), with pageable
 * and pinned arrays in one sort: each array takes its own path (staged or direct). _i: the
 * engines' threads, 0 (up to 8 copy threads) or 1 (the caller copies every chunk alone).
 */
START_TEST(test_staged_transfers)
{
        const size_t slot_keys = (size_t)1 << 21, n_max = 3 * slot_keys + 5;
        const size_t sizes[] = {slot_keys - 1, slot_keys, slot_keys + 1, n_max};
        const sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0};
        struct engines e = make_all_threads(n_max, (unsigned)_i);

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t n = sizes[i];
                struct run in = generate(&d, DATAGEN_ENTROPY, 16, n, 500 + i);
                struct run want = sort_copy(e.cpu, &d, &in, n);

                for (int g = 0; g < GPU_ENGINES; g++) {
                        struct run mixed = copy_of(&d, in.keys, in.vals, n);
                        void *pinned = NULL;

                        ck_assert_msg(sortd_engine_host_alloc(e.gpu[g], n * 8, &pinned) == SORTD_OK,
                                      "%s: %s", gpu_kinds[g], sortd_engine_error(e.gpu[g]));
                        sort_in_place(e.gpu[g], &d, &in, &want, (struct run){mixed.keys, pinned}, n,
                                      "pageable keys, pinned values");
                        sort_in_place(e.gpu[g], &d, &in, &want, (struct run){pinned, mixed.vals}, n,
                                      "pinned keys, pageable values");
                        sortd_engine_host_free(e.gpu[g], pinned, n * 8);
                        drop(&mixed);
                }
                drop(&want);
                drop(&in);
        }
        destroy_all(&e);
}
END_TEST

/* What the daemon runs at start, for each GPU engine; it prints its account. */
START_TEST(test_selfcheck)
{
        for (int i = 0; i < GPU_ENGINES; i++) {
                sortd_engine *e = make(gpu_kinds[i], (size_t)1 << 24);
                char report[256];

                ck_assert_msg(sortd_engine_selfcheck(e, report, sizeof(report)) == SORTD_OK,
                              "%s: %s", gpu_kinds[i], report);
                ck_assert_msg(strncmp(report, "self-check passed: ", 19) == 0, "%s", report);
                printf("%s: %s\n", gpu_kinds[i], report);
                sortd_engine_destroy(e);
        }
}
END_TEST

/* One request of type t through libsortd, rotating payloads and orders, against the reference. */
static void sort_through_daemon(sortd_conn *c, sortd_key_type t, size_t n, uint64_t seed)
{
        const sortd_payload pls[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                     SORTD_PAYLOAD_ARGSORT32, SORTD_PAYLOAD_VALUES64,
                                     SORTD_PAYLOAD_ARGSORT64};
        sortd_sort_desc d = {t, pls[seed % 5], (sortd_order)(seed & 1), 0, 0};
        sortd_sort_options o = {d.order, 0, 0};
        size_t vb = sortd_payload_size(d.payload);
        struct run in = generate(&d, DATAGEN_ENTROPY, 4, n, seed);
        struct run ref = copy_of(&d, in.keys, in.vals, n);
        sortd_status s;

        ck_assert_int_eq(ref_sort(&d, ref.keys, ref.vals, n), 0);
        if (d.payload == SORTD_PAYLOAD_NONE)
                s = sortd_sort(c, in.keys, n, t, &o);
        else if (d.payload == SORTD_PAYLOAD_VALUES32 || d.payload == SORTD_PAYLOAD_VALUES64)
                s = sortd_sort_pairs(c, in.keys, in.vals, vb, n, t, &o);
        else
                s = sortd_argsort(c, in.keys, in.vals, vb, n, t, &o);
        ck_assert_msg(s == SORTD_OK, "%s: %s", sortd_strerror(s), sortd_error_message(c));
        ck_assert_msg(same(&in, &ref, &d, n),
                      "through sortd: %s %s %s n=%zu differs from the "
                      "reference",
                      sortd_key_type_name(t), sortd_payload_name(d.payload),
                      d.order ? "desc" : "asc", n);
        drop(&ref);
        drop(&in);
}

START_TEST(test_daemon_auto)
{
        const char *extra[] = {"--engine",    "auto",   "--capacity", "16M",
                               "--log-level", "notice", NULL};
        daemon_proc d = {0};
        sortd_server_status st;
        sortd_conn *c;

        daemon_start(&d, extra);
        st = status_of(&d);
        printf("sortd --engine auto: %s (%s): %s\n", st.engine, st.device, st.engine_reason);
        ck_assert_msg(strcmp(st.engine, "cuda") == 0, "auto chose %s: %s", st.engine,
                      st.engine_reason);
        ck_assert_msg(strstr(st.engine_reason, "auto chose cuda: self-check passed: "), "%s",
                      st.engine_reason);
        c = client_open(&d);
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++) {
                sort_through_daemon(c, (sortd_key_type)t, 4099, 2 * (uint64_t)t + 1);
                sort_through_daemon(c, (sortd_key_type)t, REFERENCE_MAX, 2 * (uint64_t)t + 2);
        }
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

static Suite *gpu_suite(void)
{
        Suite *s = suite_create("gpu-engines");
        TCase *engines = tcase_create("engines"), *daemon = tcase_create("daemon");

        tcase_set_timeout(engines, 1800);
        tcase_add_loop_test(engines, test_matrix, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_test(engines, test_selfcheck);
        tcase_add_test(engines, test_bit_ranges);
        tcase_add_test(engines, test_large);
        tcase_add_test(engines, test_size_limit);
        tcase_add_test(engines, test_strips);
        tcase_add_test(engines, test_host_memory);
        tcase_add_loop_test(engines, test_staged_transfers, 0, 2);
        tcase_add_test(engines, test_batch);
#ifdef SORTD_HAVE_CUDA
        tcase_add_test(engines, test_sort_device);
        tcase_add_test(engines, test_columns_device);
        tcase_add_test(engines, test_segments_topk);
        tcase_add_test(engines, test_device_uuid);
        tcase_add_test(engines, test_ipc_same_process);
        tcase_add_test(engines, test_ipc_cross_process);
#endif
        suite_add_tcase(s, engines);
        tcase_set_timeout(daemon, 300);
        tcase_add_test(daemon, test_daemon_auto);
        suite_add_tcase(s, daemon);
        return s;
}

/*
 * 77 (skipped) when there is no GPU, which must show as SORTD_E_NODEV from
 * both engines with a message saying so, or when the build has no CUDA
 * engines; any other failure to create an engine is a failure.
 */
static int probe(void)
{
        sortd_engine_config cfg = {.capacity = 2};
        char why[256];

        for (int i = 0; i < GPU_ENGINES; i++) {
                sortd_engine *e = NULL;
                sortd_status s = sortd_engine_create(gpu_kinds[i], &cfg, &e, why, sizeof(why));
                if (s == SORTD_OK) {
                        sortd_engine_destroy(e);
                        continue;
                }
#ifdef SORTD_HAVE_CUDA
                if (s != SORTD_E_NODEV || strncmp(why, "no CUDA device", 14) != 0) {
                        printf("FAIL: %s engine: %s (%s)\n", gpu_kinds[i], why, sortd_strerror(s));
                        return 1;
                }
#endif
                printf("SKIP: %s\n", why);
                return 77;
        }
        return 0;
}

int main(int argc, char **argv)
{
        int rc;

#ifdef SORTD_HAVE_CUDA
        if (argc == 2 && strcmp(argv[1], "--ipc-child") == 0)
                return ipc_child();
#endif
        (void)argc;
        (void)argv;
        rc = probe();
        return rc != 0 ? rc : run_suite_nofork(gpu_suite());
}
