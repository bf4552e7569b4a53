/*
 * The self-check, tested where CI runs: its sample covers what engine.h
 * promises, it passes an engine that sorts right, and it catches engines that
 * sort wrong the ways a GPU engine can (the cub engine's 8/16-bit bug, a
 * stability slip, a fault only at thousands of tiles, an error, a fault only
 * on the batch path).
 *
 * The engines under test wrap the CPU engine and spoil its results.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "selfcheck.h"
#include "suite.h"

#define SAMPLE_CAPACITY ((size_t)1 << 24)

static sortd_engine *cpu_engine(size_t capacity)
{
        sortd_engine_config cfg = {.capacity = capacity, .threads = 2};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_msg(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) == SORTD_OK, "%s",
                      why);
        return e;
}

/* ---- the sample ---- */

START_TEST(sample_covers_the_contract)
{
        size_t count = sortd__selfcheck_sample(SAMPLE_CAPACITY, NULL, 0);
        sortd__selfcheck_case *c = calloc(count, sizeof(*c));
        int seen[SORTD_KEY_TYPE_COUNT][SORTD_PAYLOAD_COUNT][SORTD_ORDER_COUNT] = {{{0}}};
        size_t windows = 0, under_tile = 0, few_tiles = 0, thousands = 0;

        ck_assert_ptr_nonnull(c);
        ck_assert_uint_eq(sortd__selfcheck_sample(SAMPLE_CAPACITY, c, count), count);
        for (size_t i = 0; i < count; i++) {
                const sortd_sort_desc *d = &c[i].desc;
                seen[d->key_type][d->payload][d->order] = 1;
                windows += d->begin_bit != 0 || d->end_bit != 0;
                ck_assert_msg(c[i].n % 4 != 0, "n = %zu is a multiple of 4", c[i].n);
                /* tiles: 3072 and 4096 keys today, 7680 in CUB's sm_90 policy */
                under_tile += c[i].n < 3072;
                few_tiles += c[i].n >= 3 * 7680 && c[i].n < 16 * 3072;
                thousands += c[i].n / 4096 >= 2000;
        }
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                ck_assert_msg(seen[t][p][o], "%s %s order %d missing",
                                              sortd_key_type_name(t), sortd_payload_name(p), o);
        ck_assert_uint_ge(windows, 5);
        ck_assert_uint_ge(under_tile, 100);
        ck_assert_uint_ge(few_tiles, 100);
        ck_assert_uint_ge(thousands, 3);
        free(c);
}
END_TEST

START_TEST(sample_capped_at_capacity)
{
        sortd__selfcheck_case c[512];
        size_t count = sortd__selfcheck_sample(1000, c, 512);

        ck_assert_uint_le(count, 512);
        for (size_t i = 0; i < count; i++)
                ck_assert_uint_le(c[i].n, 1000);
        /* too small a buffer: the count is still the whole sample's */
        ck_assert_uint_eq(sortd__selfcheck_sample(1000, c, 3), count);
}
END_TEST

/* ---- right engines pass ---- */

START_TEST(cpu_against_cpu_passes)
{
        sortd_engine *a = cpu_engine(SAMPLE_CAPACITY), *b = cpu_engine(SAMPLE_CAPACITY);
        size_t count = sortd__selfcheck_sample(SAMPLE_CAPACITY, NULL, 0);
        char report[256], want[64];

        ck_assert_int_eq(sortd__selfcheck_run(a, b, report, sizeof(report)), SORTD_OK);
        snprintf(want, sizeof(want), "self-check passed: %zu sorts against the cpu engine", count);
        ck_assert_msg(strncmp(report, want, strlen(want)) == 0, "%s", report);
        ck_assert_msg(strstr(report, "n = 2..12289234"), "%s", report);
        ck_assert_msg(strstr(report, ", 7 segmented sorts and top-k, "), "%s", report);
        printf("%s\n", report);
        /* the GPU engines' operation: it makes its own cpu engine */
        ck_assert_int_eq(sortd__selfcheck_against_cpu(a, report, sizeof(report)), SORTD_OK);
        ck_assert_msg(strncmp(report, want, strlen(want)) == 0, "%s", report);
        sortd_engine_destroy(a);
        sortd_engine_destroy(b);
}
END_TEST

START_TEST(cpu_engine_needs_none)
{
        sortd_engine *e = cpu_engine(1024);
        char report[256];

        ck_assert_int_eq(sortd_engine_selfcheck(e, report, sizeof(report)), SORTD_OK);
        ck_assert_msg(strstr(report, "no self-check: the cpu engine is the oracle"), "%s", report);
        ck_assert_int_eq(sortd_engine_selfcheck(NULL, report, sizeof(report)), SORTD_E_INVAL);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(tiny_capacity_skips)
{
        sortd_engine *a = cpu_engine(1), *b = cpu_engine(1);
        char report[256];

        ck_assert_int_eq(sortd__selfcheck_run(a, b, report, sizeof(report)), SORTD_OK);
        ck_assert_msg(strstr(report, "self-check skipped"), "%s", report);
        /* A GPU engine takes capacity 0, which the cpu oracle refuses: skipped before it is
           made. */
        for (size_t cap = 0; cap < 2; cap++) {
                a->capacity = cap;
                ck_assert_int_eq(sortd__selfcheck_against_cpu(a, report, sizeof(report)), SORTD_OK);
                ck_assert_msg(strstr(report, "self-check skipped"), "%s", report);
        }
        a->capacity = 1;
        sortd_engine_destroy(a);
        sortd_engine_destroy(b);
}
END_TEST

/* ---- wrong engines fail ---- */

enum fault {
        NARROW_UNSORTED,     /* 8/16-bit keys come back as they went in: the cub bug */
        DESCENDING_UNSTABLE, /* descending v32: two equal keys' values swapped */
        LARGE_ONLY,          /* past a million keys, the last key is off by one */
        F32_ERROR,           /* f32 sorts fail with a device error */
        BATCH_ONLY,          /* a batch's members of 1001 keys come back with a bit flipped */
        SEGMENTS_ONLY,       /* a segmented sort's last key comes back with a bit flipped */
        TOPK_ONLY,           /* a top-k's last result comes back with a bit flipped */
};

struct faulty {
        sortd_engine base;
        sortd_engine *inner;
        enum fault fault;
};

static void swap_equal_neighbours(const sortd__plan *p, void *keys, void *vals, size_t n)
{
        for (size_t i = 0; i + 1 < n; i++) {
                char *k = (char *)keys + i * p->key_bytes, *v = (char *)vals + i * p->val_bytes;
                uint32_t t;
                if (memcmp(k, k + p->key_bytes, p->key_bytes) != 0 || memcmp(v, v + 4, 4) == 0)
                        continue;
                memcpy(&t, v, 4);
                memmove(v, v + 4, 4);
                memcpy(v + 4, &t, 4);
                return;
        }
}

static sortd_status faulty_sort(sortd_engine *e, const sortd__plan *p, void *keys, void *vals,
                                size_t n)
{
        struct faulty *f = (struct faulty *)e;
        sortd_status s;

        if (f->fault == NARROW_UNSORTED && p->key_bytes <= 2)
                return SORTD_OK;
        if (f->fault == F32_ERROR && p->kind == SORTD__KEY_FLOAT && p->key_bytes == 4)
                return sortd__engine_fail(e, SORTD_E_DEVICE, "injected: an illegal address");
        s = f->inner->ops->sort(f->inner, p, keys, vals, n);
        if (s != SORTD_OK)
                return s;
        if (f->fault == DESCENDING_UNSTABLE && p->descending && p->val_bytes == 4 && !p->argsort)
                swap_equal_neighbours(p, keys, vals, n);
        if (f->fault == LARGE_ONLY && n > ((size_t)1 << 20))
                ((unsigned char *)keys)[(n - 1) * p->key_bytes] ^= 1;
        return SORTD_OK;
}

/* A batch path of its own, as the cuda engine has: the members one by one through
   faulty_sort, spoiled there only for BATCH_ONLY. */
static void faulty_sort_batch(sortd_engine *e, sortd__batch_job *jobs, size_t count)
{
        struct faulty *f = (struct faulty *)e;

        for (size_t i = 0; i < count; i++) {
                sortd__batch_job *j = &jobs[i];

                e->why[0] = '\0';
                j->item->status = faulty_sort(e, &j->plan, j->keys, j->vals, j->n);
                snprintf(j->item->why, sizeof(j->item->why), "%s", e->why);
                if (f->fault == BATCH_ONLY && j->n == 1001)
                        ((unsigned char *)j->keys)[0] ^= 1;
        }
}

static sortd_status faulty_sort_segments(sortd_engine *e, const sortd__plan *p,
                                         const sortd_segments *seg, sortd_memory where, void *keys,
                                         void *vals, size_t n)
{
        struct faulty *f = (struct faulty *)e;
        sortd_status s = f->inner->ops->sort_segments(f->inner, p, seg, where, keys, vals, n);

        if (s == SORTD_OK && f->fault == SEGMENTS_ONLY)
                ((unsigned char *)keys)[(n - 1) * p->key_bytes] ^= 1;
        return s;
}

static sortd_status faulty_topk(sortd_engine *e, const sortd__plan *p, const sortd_segments *seg,
                                uint64_t k, sortd_memory where, const void *keys, const void *vals,
                                void *out_keys, void *out_vals, size_t n)
{
        struct faulty *f = (struct faulty *)e;
        sortd_status s =
                f->inner->ops->topk(f->inner, p, seg, k, where, keys, vals, out_keys, out_vals, n);
        uint64_t m = sortd_topk_results(seg, n, k);

        if (s == SORTD_OK && f->fault == TOPK_ONLY)
                ((unsigned char *)out_keys)[(m - 1) * p->key_bytes] ^= 1;
        return s;
}

static void faulty_destroy(sortd_engine *e)
{
        struct faulty *f = (struct faulty *)e;

        sortd_engine_destroy(f->inner);
        free(f);
}

static const sortd__engine_ops faulty_ops = {
        .kind = "faulty",
        .sort = faulty_sort,
        .destroy = faulty_destroy,
        .selfcheck = sortd__selfcheck_against_cpu,
        .sort_batch = faulty_sort_batch,
        .sort_segments = faulty_sort_segments,
        .topk = faulty_topk,
};

static sortd_engine *faulty_engine(enum fault fault)
{
        struct faulty *f = calloc(1, sizeof(*f));

        ck_assert_ptr_nonnull(f);
        f->inner = cpu_engine(SAMPLE_CAPACITY);
        f->fault = fault;
        f->base.ops = &faulty_ops;
        f->base.capacity = SAMPLE_CAPACITY;
        return &f->base;
}

/* The engine's self-check (through engine.h, as the daemon calls it) fails as want says. */
static void expect_failure(enum fault fault, sortd_status want, const char *const *words)
{
        sortd_engine *e = faulty_engine(fault);
        char report[256];
        sortd_status s = sortd_engine_selfcheck(e, report, sizeof(report));

        ck_assert_msg(s == want, "fault %d: got %s: %s", (int)fault, sortd_strerror(s), report);
        for (; *words; words++)
                ck_assert_msg(strstr(report, *words), "fault %d: '%s' not in: %s", (int)fault,
                              *words, report);
        printf("fault %d: %s\n", (int)fault, report);
        sortd_engine_destroy(e);
}

START_TEST(catches_unsorted_narrow_keys)
{
        const char *words[] = {"self-check failed: faulty and cpu differ sorting",
                               " u8 keys (none, ascending, bits [0, 8))", NULL};
        expect_failure(NARROW_UNSORTED, SORTD_E_SELFCHECK, words);
}
END_TEST

START_TEST(catches_instability)
{
        const char *words[] = {"v32, descending", "first at position", NULL};
        expect_failure(DESCENDING_UNSTABLE, SORTD_E_SELFCHECK, words);
}
END_TEST

START_TEST(catches_a_fault_at_thousands_of_tiles)
{
        const char *words[] = {"sorting 12289234 u32 keys", "first at position 12289233", NULL};
        expect_failure(LARGE_ONLY, SORTD_E_SELFCHECK, words);
}
END_TEST

START_TEST(reports_an_engine_error)
{
        const char *words[] = {"the faulty engine failed sorting 2 f32 keys",
                               "injected: an illegal address", NULL};
        expect_failure(F32_ERROR, SORTD_E_DEVICE, words);
}
END_TEST

START_TEST(catches_a_fault_in_batches_only)
{
        const char *words[] = {"self-check failed: faulty and cpu differ sorting 1001 u8 keys",
                               "in a batch of", "first at position 0", NULL};
        expect_failure(BATCH_ONLY, SORTD_E_SELFCHECK, words);
}
END_TEST

START_TEST(catches_a_fault_in_segmented_sorts_only)
{
        const char *words[] = {"self-check failed: faulty and cpu differ in a segmented sort of "
                               "60013 u32 keys (v32, ascending) in ",
                               "segments (u32 offsets)", "first at position 60012", NULL};
        expect_failure(SEGMENTS_ONLY, SORTD_E_SELFCHECK, words);
}
END_TEST

START_TEST(catches_a_fault_in_topk_only)
{
        const char *words[] = {"self-check failed: faulty and cpu differ in top-k of 100003 u32 "
                               "keys (argsort32, ascending) in one array, k = 1000",
                               "first at position 999", NULL};
        expect_failure(TOPK_ONLY, SORTD_E_SELFCHECK, words);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("selfcheck");
        TCase *tc = tcase_create("selfcheck");

        /* the full sample sorts 12M keys several times over: a minute under ASan on 2 cores */
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, sample_covers_the_contract);
        tcase_add_test(tc, sample_capped_at_capacity);
        tcase_add_test(tc, cpu_against_cpu_passes);
        tcase_add_test(tc, cpu_engine_needs_none);
        tcase_add_test(tc, tiny_capacity_skips);
        tcase_add_test(tc, catches_unsorted_narrow_keys);
        tcase_add_test(tc, catches_instability);
        tcase_add_test(tc, catches_a_fault_at_thousands_of_tiles);
        tcase_add_test(tc, reports_an_engine_error);
        tcase_add_test(tc, catches_a_fault_in_batches_only);
        tcase_add_test(tc, catches_a_fault_in_segmented_sorts_only);
        tcase_add_test(tc, catches_a_fault_in_topk_only);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
