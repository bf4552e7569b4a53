/*
 * The host copies of kernels/cpu/copy.c: sortd__copy_stream at every alignment
 * and length around the cache line it streams by, and sortd__pool_copy's split
 * into shares (one memcpy below two shares, whole pages per thread, the last
 * share short), streamed and not. Each copy lands in a buffer with guard bytes
 * on both sides, which must come out untouched.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/copy.h"
#include "suite.h"

#define GUARD 256u
#define FILL 0xa5

/* A source whose every byte differs from its neighbours and from FILL's. */
static unsigned char *source(size_t bytes)
{
        unsigned char *p = malloc(bytes + 1);

        ck_assert_ptr_nonnull(p);
        for (size_t i = 0; i < bytes; i++) {
                unsigned char b = (unsigned char)(i * 7 + i / 251 + 1);

                p[i] = b == FILL ? 0 : b;
        }
        return p;
}

/* dst[GUARD + at, ... + bytes) must equal src and the rest of dst FILL. One
   assertion a copy: Check's cost is per assertion, not per byte. */
static void check_copy(const unsigned char *dst, size_t at, const unsigned char *src, size_t bytes,
                       size_t total)
{
        size_t i = 0;
        unsigned char want = FILL;

        for (; i < total; i++) {
                bool inside = i >= GUARD + at && i < GUARD + at + bytes;

                want = inside ? src[i - GUARD - at] : FILL;
                if (dst[i] != want)
                        break;
        }
        ck_assert_msg(i == total, "byte %zu of %zu (copy of %zu at +%zu): %#x, not %#x", i, total,
                      bytes, at, i < total ? dst[i] : 0, want);
}

START_TEST(stream_every_alignment)
{
        static const size_t lengths[] = {0, 1, 63, 64, 65, 127, 128, 129, 191, 200, 4096, 4097};
        unsigned char *src = source(4096 + 64 + 1);
        size_t total = 2 * GUARD + 4096 + 64 + 1;
        unsigned char *dst = aligned_alloc(64, (total + 63) / 64 * 64);

        ck_assert_ptr_nonnull(dst);
        for (size_t at = 0; at < 64; at++)
                for (size_t s = 0; s < 64; s += 13)
                        for (size_t l = 0; l < sizeof(lengths) / sizeof(*lengths); l++) {
                                memset(dst, FILL, total);
                                sortd__copy_stream(dst + GUARD + at, src + s, lengths[l]);
                                sortd__copy_fence();
                                check_copy(dst, at, src + s, lengths[l], total);
                        }
        free(dst);
        free(src);
}
END_TEST

/* (bytes, share_min, at) through pools of 1, 3 and 4 threads, streamed and not. */
START_TEST(pool_shares)
{
        static const struct {
                size_t bytes, share_min, at;
        } cases[] = {
                {0, 4096, 0},                /* nothing */
                {8191, 4096, 0},             /* under two shares: the caller's memcpy */
                {8192, 4096, 0},             /* two shares of a page */
                {3 * 4096 + 1, 4096, 0},     /* the last page short */
                {40000, 4096, 3},            /* more shares than threads; dst off the line */
                {100 * 4096 + 17, 8192, 61}, /* shares of two pages at least */
                {5000, 1, 0},                /* share_min under a page: a page */
                {1 << 20, 1 << 20, 5},       /* one share */
        };
        static const unsigned sizes[] = {1, 3, 4};

        for (size_t p = 0; p < sizeof(sizes) / sizeof(*sizes); p++) {
                sortd__pool *pool;

                ck_assert_int_eq(sortd__pool_create(sizes[p], &pool), 0);
                for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++)
                        for (int stream = 0; stream < 2; stream++) {
                                size_t total = 2 * GUARD + cases[c].at + cases[c].bytes;
                                unsigned char *src = source(cases[c].bytes);
                                unsigned char *dst = malloc(total);

                                ck_assert_ptr_nonnull(dst);
                                memset(dst, FILL, total);
                                sortd__pool_copy(pool, dst + GUARD + cases[c].at, src,
                                                 cases[c].bytes, cases[c].share_min, stream);
                                check_copy(dst, cases[c].at, src, cases[c].bytes, total);
                                free(dst);
                                free(src);
                        }
                sortd__pool_destroy(pool);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cpu-copy");
        TCase *tc = tcase_create("copy");

        tcase_add_test(tc, stream_every_alignment);
        tcase_add_test(tc, pool_shares);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
