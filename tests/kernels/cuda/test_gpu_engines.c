/*
 * The CUDA engines on a real GPU, and the daemon on it. Without a GPU, or in a
 * build without CUDA, it says why and exits 77, which meson reports as skipped.
 *
 * Case "engines": each GPU engine, ours ("cuda") and CUB's ("cub", a second
 * opinion), against the CPU engine, which CI tests on every commit, and
 * against the independent reference sort (tests/support/reference.c) up to 100003
 * keys: the matrix, bit windows, 2^28 keys, the size limit, and each engine's
 * self-check, and sorts in each engine's pinned and registered host memory.
 * No GPU engine is an oracle here.
 * Case "daemon": `sortd --engine auto` ($SORTD_BIN) must choose cuda after its
 * self-check, and sort every key type through libsortd like the reference.
 * CK_RUN_CASE=engines or daemon runs one (scripts/gpu-check runs each).
 *
 * A forked child of a process that initialised CUDA cannot use CUDA, and
 * main probes the device first: the suite runs with CK_NOFORK.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static sortd_engine *make(const char *kind, size_t capacity)
{
        sortd_engine_config cfg = {capacity, 0, 0};
        sortd_engine *e = NULL;
        char why[256];
        sortd_status s = sortd_engine_create(kind, &cfg, &e, why, sizeof(why));

        ck_assert_msg(s == SORTD_OK, "%s engine: %s", kind, why);
        return e;
}

/* The GPU engines [0, GPU_ENGINES) and the CPU engine, for one capacity. */
struct engines {
        sortd_engine *gpu[GPU_ENGINES], *cpu;
};

static struct engines make_all(size_t capacity)
{
        struct engines e;

        for (int i = 0; i < GPU_ENGINES; i++)
                e.gpu[i] = make(gpu_kinds[i], capacity);
        e.cpu = make("cpu", capacity);
        return e;
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

static struct run generate(const sortd_sort_desc *d, datagen_dist dist, unsigned param, size_t n,
                           uint64_t seed)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        struct run in = {malloc(n * kb + 1), malloc(n * vb + 1)};

        ck_assert(in.keys && in.vals);
        datagen_fill(in.keys, n, d->key_type, dist, param, seed);
        if (vb)
                datagen_fill_values(in.vals, n, (unsigned)vb, seed + 1);
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

/* Above 2^30 keys the engine refuses, naming the limit: never a silent overflow. */
START_TEST(test_size_limit)
{
        sortd_engine_config cfg = {((size_t)1 << 30) + 1, 0, 0};
        sortd_engine *e = NULL;
        char why[256] = "";

        ck_assert_int_eq(sortd_engine_create("cuda", &cfg, &e, why, sizeof(why)),
                         SORTD_E_UNSUPPORTED);
        ck_assert_ptr_null(e);
        ck_assert_msg(strstr(why, "2^30") != NULL, "message names no limit: %s", why);
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
        tcase_add_test(engines, test_host_memory);
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
        sortd_engine_config cfg = {2, 0, 0};
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

int main(void)
{
        int rc = probe();

        return rc != 0 ? rc : run_suite_nofork(gpu_suite());
}
