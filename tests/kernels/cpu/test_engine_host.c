/*
 * Host memory on the CPU engine (engine.h: sortd_engine_host_alloc and _free, _register and
 * _unregister): what alloc promises (page-aligned, 2 MiB-aligned from 2 MiB up, zeroed,
 * writable, resident before the first touch), the sizes it refuses, sorts in its memory and in
 * registered memory against a stable qsort, and the message rules the sorts follow: set by a
 * failure, "" after a success, and left alone by free. The GPU engines' side runs in
 * tests/kernels/cuda/test_gpu_engines.c.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "suite.h"

#define HUGE_PAGE ((size_t)2 << 20)

static sortd_engine *cpu_engine(size_t capacity)
{
        sortd_engine_config cfg = {.capacity = capacity, .threads = 2};
        sortd_engine *e = NULL;
        char why[256] = "";

        ck_assert_msg(sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) == SORTD_OK, "%s",
                      why);
        return e;
}

static void expect_failed(sortd_engine *e, sortd_status got, sortd_status want, const char *what)
{
        ck_assert_msg(got == want, "%s: got %s, want %s", what, sortd_strerror(got),
                      sortd_strerror(want));
        ck_assert_msg(sortd_engine_error(e)[0] != '\0', "%s: no message", what);
}

static void expect_ok(sortd_engine *e, sortd_status got, const char *what)
{
        ck_assert_msg(got == SORTD_OK, "%s: %s: %s", what, sortd_strerror(got),
                      sortd_engine_error(e));
        ck_assert_str_eq(sortd_engine_error(e), "");
}

/* mincore(2): a page the kernel has not faulted in yet reads as not resident. */
static size_t resident_pages(void *p, size_t bytes)
{
        size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (bytes + page - 1) / page, in = 0;
        unsigned char *vec = xmalloc(pages);

        ck_assert_int_eq(mincore(p, bytes, vec), 0);
        for (size_t i = 0; i < pages; i++)
                in += vec[i] & 1;
        free(vec);
        return in;
}

/* The first j in [0, bytes) where p[j] is not (unsigned char)(j * mul + add); bytes if none. */
static size_t first_byte_not(const unsigned char *p, size_t bytes, size_t mul, size_t add)
{
        size_t j = 0;

        while (j < bytes && p[j] == (unsigned char)(j * mul + add))
                j++;
        return j;
}

START_TEST(alloc_promises)
{
        const size_t sizes[] = {1,
                                4095,
                                4096,
                                4097,
                                HUGE_PAGE - 1,
                                HUGE_PAGE,
                                HUGE_PAGE + 1,
                                3 * HUGE_PAGE + 12345};
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        sortd_engine *e = cpu_engine(16);

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t bytes = sizes[i], pages = (bytes + page - 1) / page;
                unsigned char *p = NULL;

                expect_ok(e, sortd_engine_host_alloc(e, bytes, (void **)&p), "host_alloc");
                ck_assert_ptr_nonnull(p);
                ck_assert_msg((uintptr_t)p % page == 0, "%zu bytes at %p: not page-aligned", bytes,
                              (void *)p);
                if (bytes >= HUGE_PAGE)
                        ck_assert_msg((uintptr_t)p % HUGE_PAGE == 0,
                                      "%zu bytes at %p: not 2 MiB-aligned", bytes, (void *)p);
                ck_assert_msg(resident_pages(p, bytes) == pages,
                              "%zu bytes: %zu of %zu pages resident before the first touch", bytes,
                              resident_pages(p, bytes), pages);
                ck_assert_msg(first_byte_not(p, bytes, 0, 0) == bytes,
                              "%zu bytes: not zeroed at %zu", bytes,
                              first_byte_not(p, bytes, 0, 0));
                for (size_t j = 0; j < bytes; j++)
                        p[j] = (unsigned char)(j * 7 + i);
                ck_assert_msg(first_byte_not(p, bytes, 7, i) == bytes,
                              "%zu bytes: byte %zu not as written", bytes,
                              first_byte_not(p, bytes, 7, i));
                sortd_engine_host_free(e, p, bytes);
        }
        sortd_engine_host_free(e, NULL, 0);
        sortd_engine_host_free(NULL, NULL, 0);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(alloc_refused)
{
        const size_t invalid[] = {0, (size_t)PTRDIFF_MAX + 1, SIZE_MAX};
        sortd_engine *e = cpu_engine(16);
        void *sentinel = &e, *p = sentinel;
        char size[32];

        for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
                expect_failed(e, sortd_engine_host_alloc(e, invalid[i], &p), SORTD_E_INVAL,
                              "host_alloc of 0 or above PTRDIFF_MAX");
                ck_assert_ptr_eq(p, sentinel);
        }
        expect_failed(e, sortd_engine_host_alloc(e, 64, NULL), SORTD_E_INVAL, "NULL out");
        ck_assert_int_eq(sortd_engine_host_alloc(NULL, 64, &p), SORTD_E_INVAL);

        /* valid, and more than an x86-64 address space holds */
        expect_failed(e, sortd_engine_host_alloc(e, PTRDIFF_MAX, &p), SORTD_E_NOMEM,
                      "host_alloc of PTRDIFF_MAX bytes");
        ck_assert_ptr_eq(p, sentinel);
        snprintf(size, sizeof(size), "%zu", (size_t)PTRDIFF_MAX);
        ck_assert_msg(strstr(sortd_engine_error(e), size), "message names no size: %s",
                      sortd_engine_error(e));

        /* free leaves the failure's message for the caller to report; a success clears it */
        expect_ok(e, sortd_engine_host_alloc(e, 100, &p), "host_alloc after a failure");
        ck_assert_int_eq(sortd_engine_host_alloc(e, 0, &p), SORTD_E_INVAL);
        sortd_engine_host_free(e, p, 100);
        ck_assert_str_ne(sortd_engine_error(e), "");
        expect_ok(e, sortd_engine_host_alloc(e, 100, &p), "host_alloc after a free");
        sortd_engine_host_free(e, p, 100);
        sortd_engine_destroy(e);
}
END_TEST

/* A key, its value and its input position: qsort by (key, position) is a stable sort. */
struct rec {
        uint64_t key, val;
        size_t pos;
};

static bool descending;

static int rec_cmp(const void *a, const void *b)
{
        const struct rec *x = a, *y = b;

        if (x->key != y->key)
                return (x->key < y->key) != descending ? -1 : 1;
        return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static uint64_t next(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

/* Sorts keys and vals (width bytes each, n of them) in place and checks them against qsort. */
static void sort_and_check(sortd_engine *e, void *keys, void *vals, unsigned width, size_t n,
                           sortd_order order, uint64_t seed)
{
        sortd_sort_desc d = {width == 4 ? SORTD_KEY_U32 : SORTD_KEY_U64,
                             width == 4 ? SORTD_PAYLOAD_VALUES32 : SORTD_PAYLOAD_VALUES64, order, 0,
                             0};
        struct rec *want = xmalloc(n * sizeof(*want));

        for (size_t i = 0; i < n; i++) {
                /* few distinct keys, so stability shows */
                uint64_t k = next(&seed) % 4099 * 0x9e3779b97f4a7c15u, v = next(&seed);

                if (width == 4) {
                        ((uint32_t *)keys)[i] = (uint32_t)k;
                        ((uint32_t *)vals)[i] = (uint32_t)v;
                        want[i] = (struct rec){(uint32_t)k, (uint32_t)v, i};
                } else {
                        ((uint64_t *)keys)[i] = k;
                        ((uint64_t *)vals)[i] = v;
                        want[i] = (struct rec){k, v, i};
                }
        }
        descending = order == SORTD_DESCENDING;
        qsort(want, n, sizeof(*want), rec_cmp);
        expect_ok(e, sortd_engine_sort(e, &d, keys, vals, n), "sort");
        for (size_t i = 0; i < n; i++) {
                uint64_t k = width == 4 ? ((uint32_t *)keys)[i] : ((uint64_t *)keys)[i];
                uint64_t v = width == 4 ? ((uint32_t *)vals)[i] : ((uint64_t *)vals)[i];

                if (k != want[i].key || v != want[i].val)
                        ck_abort_msg("u%u %s n=%zu at %zu: got (%#llx, %#llx), want (%#llx, "
                                     "%#llx)",
                                     width * 8, descending ? "desc" : "asc", n, i,
                                     (unsigned long long)k, (unsigned long long)v,
                                     (unsigned long long)want[i].key,
                                     (unsigned long long)want[i].val);
        }
        free(want);
}

START_TEST(sort_in_host_memory)
{
        const size_t n = ((size_t)1 << 20) + 7;
        sortd_engine *e = cpu_engine(n);

        for (unsigned width = 4; width <= 8; width += 4) {
                void *keys = NULL, *vals = NULL;

                expect_ok(e, sortd_engine_host_alloc(e, n * width, &keys), "host_alloc keys");
                expect_ok(e, sortd_engine_host_alloc(e, n * width, &vals), "host_alloc vals");
                sort_and_check(e, keys, vals, width, n, SORTD_ASCENDING, 11 + width);
                sort_and_check(e, keys, vals, width, n, SORTD_DESCENDING, 12 + width);
                sortd_engine_host_free(e, keys, n * width);
                sortd_engine_host_free(e, vals, n * width);
        }
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(register_rules)
{
        const size_t n = 100003;
        sortd_engine *e = cpu_engine(n);
        uint64_t *keys = xmalloc(n * 8), *vals = xmalloc(n * 8);
        void *top = (void *)(UINTPTR_MAX - 15);

        expect_failed(e, sortd_engine_host_register(e, NULL, 64), SORTD_E_INVAL, "register NULL");
        expect_failed(e, sortd_engine_host_register(e, keys, 0), SORTD_E_INVAL, "register 0 bytes");
        expect_failed(e, sortd_engine_host_register(e, top, 64), SORTD_E_INVAL,
                      "register past the end of the address space");
        expect_failed(e, sortd_engine_host_register(e, keys, (size_t)PTRDIFF_MAX + 1),
                      SORTD_E_INVAL, "register above PTRDIFF_MAX");
        expect_failed(e, sortd_engine_host_unregister(e, NULL), SORTD_E_INVAL, "unregister NULL");
        ck_assert_int_eq(sortd_engine_host_register(NULL, keys, 64), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_engine_host_unregister(NULL, keys), SORTD_E_INVAL);

        expect_ok(e, sortd_engine_host_register(e, keys, n * 8), "register keys");
        ck_assert_int_eq(sortd_engine_host_register(e, vals, 0), SORTD_E_INVAL);
        expect_ok(e, sortd_engine_host_register(e, vals, n * 8), "register vals");
        sort_and_check(e, keys, vals, 8, n, SORTD_ASCENDING, 5);
        sort_and_check(e, keys, vals, 4, n, SORTD_DESCENDING, 6);
        ck_assert_int_eq(sortd_engine_host_unregister(e, NULL), SORTD_E_INVAL);
        expect_ok(e, sortd_engine_host_unregister(e, keys), "unregister keys");
        expect_ok(e, sortd_engine_host_unregister(e, vals), "unregister vals");
        free(keys);
        free(vals);
        sortd_engine_destroy(e);
}
END_TEST

static Suite *engine_host_suite(void)
{
        Suite *s = suite_create("engine-host");
        TCase *tc = tcase_create("host");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, alloc_promises);
        tcase_add_test(tc, alloc_refused);
        tcase_add_test(tc, sort_in_host_memory);
        tcase_add_test(tc, register_rules);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(engine_host_suite());
}
