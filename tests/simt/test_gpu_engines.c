/*
 * The CUDA engines on a real GPU: ours ("cuda") against CUB ("cub") and the
 * CPU engine on the test matrix, bit windows, large sizes and the size
 * limit. Without a GPU, or in a build without CUDA, it says why and exits
 * 77, which meson reports as skipped.
 *
 * A forked child of a process that initialised CUDA cannot use CUDA, and
 * main probes the device first: the suite runs with CK_NOFORK.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "engine.h"
#include "reference.h"
#ifdef SORTD_HAVE_CUDA
#include "cuda/selfcheck.h"
#endif

#define MATRIX_MAX ((size_t)1 << 20)

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

struct run {
        void *keys, *vals;
};

static struct run sort_copy(sortd_engine *e, const sortd_sort_desc *d, const void *keys,
                            const void *vals, size_t n)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        struct run r = {malloc(n * kb + 1), malloc(n * vb + 1)};

        ck_assert(r.keys && r.vals);
        memcpy(r.keys, keys, n * kb);
        memcpy(r.vals, vals, n * vb);
        ck_assert_msg(sortd_engine_sort(e, d, r.keys, r.vals, n) == SORTD_OK, "%s: %s",
                      sortd_engine_kind(e), sortd_engine_error(e));
        return r;
}

static int same(const struct run *a, const struct run *b, const sortd_sort_desc *d, size_t n)
{
        return memcmp(a->keys, b->keys, n * sortd_key_size(d->key_type)) == 0 &&
               memcmp(a->vals, b->vals, n * sortd_payload_size(d->payload)) == 0;
}

/* Ours against CUB, and (when cpu is given) against the CPU engine. */
static void check_one(sortd_engine *cuda, sortd_engine *cub, sortd_engine *cpu,
                      const sortd_sort_desc *d, datagen_dist dist, unsigned param, size_t n,
                      uint64_t seed)
{
        size_t kb = sortd_key_size(d->key_type), vb = sortd_payload_size(d->payload);
        void *keys = malloc(n * kb + 1), *vals = malloc(n * vb + 1);
        char dname[32];

        ck_assert(keys && vals);
        datagen_fill(keys, n, d->key_type, dist, param, seed);
        if (vb)
                datagen_fill_values(vals, n, (unsigned)vb, seed + 1);
        struct run ours = sort_copy(cuda, d, keys, vals, n);
        struct run ref = sort_copy(cub, d, keys, vals, n);
        struct run host = cpu ? sort_copy(cpu, d, keys, vals, n) : ref;

        datagen_name(dist, param, dname, sizeof(dname));
        ck_assert_msg(same(&ours, &ref, d, n) && same(&host, &ref, d, n),
                      "%s %s %s [%u,%u) %s n=%zu: %s", sortd_key_type_name(d->key_type),
                      sortd_payload_name(d->payload), d->order ? "desc" : "asc", d->begin_bit,
                      d->end_bit, dname, n,
                      !same(&ours, &ref, d, n) ? "cuda differs from cub" : "cpu differs from cub");
        if (cpu) {
                free(host.keys);
                free(host.vals);
        }
        free(ours.keys);
        free(ours.vals);
        free(ref.keys);
        free(ref.vals);
        free(keys);
        free(vals);
}

static void run_matrix(sortd_key_type t)
{
        /* both production tiles (4096 and 3072 keys) and their neighbours */
        const size_t sizes[] = {2, 3071, 3072, 3073, 4095, 4096, 4097, 100003, MATRIX_MAX};
        sortd_engine *cuda = make("cuda", MATRIX_MAX), *cub = make("cub", MATRIX_MAX),
                     *cpu = make("cpu", MATRIX_MAX);
        uint64_t seed = 42;

        for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                        for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++)
                                for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                                        sortd_sort_desc d = {t, (sortd_payload)p, (sortd_order)o, 0,
                                                             0};
                                        check_one(cuda, cub, cpu, &d, dists[i].dist, dists[i].param,
                                                  sizes[s], ++seed);
                                }
        sortd_engine_destroy(cpu);
        sortd_engine_destroy(cub);
        sortd_engine_destroy(cuda);
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
        sortd_engine *cuda = make("cuda", n), *cub = make("cub", n);

        for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        sortd_sort_desc d = {w[i].t, SORTD_PAYLOAD_ARGSORT32, (sortd_order)o,
                                             w[i].begin, w[i].end};
                        check_one(cuda, cub, NULL, &d, DATAGEN_UNIFORM, 0, n, 7 + i);
                }
        sortd_engine_destroy(cub);
        sortd_engine_destroy(cuda);
}
END_TEST

/* n >= 2^28 (the large case), against CUB only. */
START_TEST(test_large)
{
        size_t n = ((size_t)1 << 28) + 12345;
        sortd_engine *cuda = make("cuda", n), *cub = make("cub", n);
        sortd_sort_desc keys_only = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        sortd_sort_desc pairs = {SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 0, 0};

        check_one(cuda, cub, NULL, &keys_only, DATAGEN_UNIFORM, 0, n, 1);
        check_one(cuda, cub, NULL, &pairs, DATAGEN_ENTROPY, 2, n, 2);
        sortd_engine_destroy(cub);
        sortd_engine_destroy(cuda);
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

#ifdef SORTD_HAVE_CUDA
/* What the daemon runs at start. */
START_TEST(test_selfcheck)
{
        sortd_engine *cuda = make("cuda", (size_t)1 << 20);
        char why[256];

        ck_assert_msg(sortd_cuda_selfcheck(cuda, 0, why, sizeof(why)) == SORTD_OK, "%s", why);
        sortd_engine_destroy(cuda);
}
END_TEST
#endif

static Suite *gpu_suite(void)
{
        Suite *s = suite_create("gpu-engines");
        TCase *tc = tcase_create("gpu");

        tcase_set_timeout(tc, 1800);
        tcase_add_loop_test(tc, test_matrix, 0, SORTD_KEY_TYPE_COUNT);
#ifdef SORTD_HAVE_CUDA
        tcase_add_test(tc, test_selfcheck);
#endif
        tcase_add_test(tc, test_bit_ranges);
        tcase_add_test(tc, test_large);
        tcase_add_test(tc, test_size_limit);
        suite_add_tcase(s, tc);
        return s;
}

/*
 * 77 (skipped) when there is no GPU, which must show as SORTD_E_NODEV from
 * both engines with a message saying so, or when the build has no CUDA
 * engines; any other failure to create an engine is a failure.
 */
static int probe(void)
{
        const char *kinds[] = {"cuda", "cub"};
        sortd_engine_config cfg = {2, 0, 0};
        char why[256];

        for (int i = 0; i < 2; i++) {
                sortd_engine *e = NULL;
                sortd_status s = sortd_engine_create(kinds[i], &cfg, &e, why, sizeof(why));
                if (s == SORTD_OK) {
                        sortd_engine_destroy(e);
                        continue;
                }
#ifdef SORTD_HAVE_CUDA
                if (s != SORTD_E_NODEV || strncmp(why, "no CUDA device", 14) != 0) {
                        printf("FAIL: %s engine: %s (%s)\n", kinds[i], why, sortd_strerror(s));
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
        SRunner *sr;
        int failed, rc = probe();

        if (rc != 0)
                return rc;
        sr = srunner_create(gpu_suite());
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
