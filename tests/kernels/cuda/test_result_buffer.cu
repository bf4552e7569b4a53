/*
 * The rule "which buffer holds the result" of each CUDA engine, without a GPU.
 *
 * cub: checked against cub::DoubleBuffer itself. CUB's passes each write the
 * alternate buffer and flip the selector; whatever the pair's first buffer and
 * however many passes ran, cub_result_buffer() must name the engine buffer
 * that Current() points at. The old rule (the selector taken as our index)
 * fails this for a pair that starts in keys[1], as 8/16-bit keys do.
 *
 * ours: pass_output() against the dispatch's contract (each pass reads one
 * buffer and writes the other); the emulated-kernel suites read every sorted
 * result through it end to end.
 */
#include <check.h>

#include <cub/util_type.cuh>

#include <stdint.h>

#include "cuda/result_buffer.h"
#include "suite.h"

using sortd_cuda::cub_result_buffer;
using sortd_cuda::pass_output;

START_TEST(test_cub_double_buffer)
{
        uint32_t a[1], b[1];
        uint32_t *bufs[2] = {a, b};

        for (int first = 0; first < 2; first++)
                for (int passes = 0; passes <= 8; passes++) {
                        cub::DoubleBuffer<uint32_t> db(bufs[first], bufs[first ^ 1]);
                        for (int p = 0; p < passes; p++)
                                db.selector ^= 1; /* what each of CUB's passes does */
                        ck_assert_msg(bufs[cub_result_buffer(first, db.selector)] == db.Current(),
                                      "pair from bufs[%d], %d passes: result named in bufs[%d]",
                                      first, passes, cub_result_buffer(first, db.selector));
                }
}
END_TEST

/* The cub engine's 8/16-bit path: widened keys in keys[1], values in vals[0]. */
START_TEST(test_cub_narrow_keys)
{
        uint32_t k0[1], k1[1];
        uint64_t v0[1], v1[1];
        uint32_t *keys[2] = {k0, k1};
        uint64_t *vals[2] = {v0, v1};
        cub::DoubleBuffer<uint32_t> k(keys[1], keys[0]);
        cub::DoubleBuffer<uint64_t> v(vals[0], vals[1]);

        k.selector = v.selector = 1; /* one pass: an 8-bit key's single digit */
        ck_assert(keys[cub_result_buffer(1, k.selector)] == k.Current());
        ck_assert_int_eq(cub_result_buffer(1, k.selector), 0);
        ck_assert(vals[cub_result_buffer(0, v.selector)] == v.Current());
        ck_assert_int_eq(cub_result_buffer(0, v.selector), 1);
}
END_TEST

START_TEST(test_ours_ping_pong)
{
        int buf = 0;

        /* 8-bit keys widened, two passes, narrowed: four writes, back in buffer 0 */
        for (int step = 1; step <= 4; step++) {
                int next = pass_output(buf);
                ck_assert_int_ne(next, buf);
                ck_assert(next == 0 || next == 1);
                buf = next;
                ck_assert_int_eq(buf, step & 1);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("result-buffer");
        TCase *tc = tcase_create("rules");

        tcase_add_test(tc, test_cub_double_buffer);
        tcase_add_test(tc, test_cub_narrow_keys);
        tcase_add_test(tc, test_ours_ping_pong);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
