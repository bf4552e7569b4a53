/*
 * libsortd's segmented sorts and top-k against sortd (test_segments_client.c has the wire and
 * the refusals, against a stand-in daemon): inline and in regions, each segment comes back in
 * its stable order, a top-k's results are the first of it, and the client's bound on the bytes
 * the daemon holds for them is the daemon's own.
 */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define OK(c, call) ck_assert_msg((call) == SORTD_OK, "%s", sortd_error_message(c))

/* The stable order of keys[0..len), ascending or descending: indices into keys. */
static void stable_order(const uint32_t *keys, uint64_t len, int desc, uint64_t *idx)
{
        for (uint64_t i = 0; i < len; i++) {
                uint64_t j = i;

                while (j > 0 && (desc ? keys[i] > keys[idx[j - 1]] : keys[i] < keys[idx[j - 1]])) {
                        idx[j] = idx[j - 1];
                        j--;
                }
                idx[j] = i;
        }
}

/* Keys with many equal ones, so that stability shows. */
static void random_keys(uint32_t *keys, size_t n, unsigned seed)
{
        srand(seed);
        for (size_t i = 0; i < n; i++)
                keys[i] = (uint32_t)(rand() % 50);
}

/*
 * Checks a sort's result against in, segment by segment: keys sorted as the stable order says
 * and idx (when given) the indices within the segment; with k, only the first k of each
 * segment, packed, as top-k gives them.
 */
static void check_segments(const uint32_t *in, const sortd_segments *seg, int desc, uint64_t k,
                           const uint32_t *keys, const uint64_t *idx)
{
        static uint64_t order[4096];
        uint64_t at = 0;

        for (uint64_t s = 0; s < seg->count; s++) {
                uint64_t b = sortd_segment_begin(seg, s), len = sortd_segment_length(seg, s);
                uint64_t m = k && k < len ? k : len;

                ck_assert_uint_le(len, 4096);
                stable_order(in + b, len, desc, order);
                for (uint64_t i = 0; i < m; i++) {
                        ck_assert_msg(keys[at + i] == in[b + order[i]],
                                      "segment %llu, key %llu: %u, not %u", (unsigned long long)s,
                                      (unsigned long long)i, keys[at + i], in[b + order[i]]);
                        if (idx)
                                ck_assert_uint_eq(idx[at + i], order[i]);
                }
                at += k ? m : len;
        }
}

#define N 1000

START_TEST(sortd_inline)
{
        daemon_proc d = {0};
        sortd_conn *c;
        static uint32_t in[N], keys[N], out_keys[N];
        static uint64_t idx[N];
        uint64_t off[6] = {0, 0, 17, 17, 400, N};
        sortd_segments csr = {.count = 5, .offsets = off, .offset_bytes = 8};
        sortd_segments rows = {.count = 10, .row_len = 100};
        sortd_sort_options desc = {SORTD_DESCENDING, 0, 0};

        daemon_start(&d, NULL);
        c = client_open(&d);
        random_keys(in, N, 1);
        memcpy(keys, in, sizeof(in));
        OK(c, sortd_sort_segments(c, keys, idx, N, SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT64, &csr,
                                  NULL));
        check_segments(in, &csr, 0, 0, keys, idx);
        memcpy(keys, in, sizeof(in));
        OK(c,
           sortd_sort_segments(c, keys, NULL, N, SORTD_KEY_U32, SORTD_PAYLOAD_NONE, &rows, &desc));
        check_segments(in, &rows, 1, 0, keys, NULL);

        OK(c, sortd_topk(c, in, NULL, N, SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT64, &csr, 7, out_keys,
                         idx, NULL));
        check_segments(in, &csr, 0, 7, out_keys, idx);
        OK(c, sortd_topk(c, in, NULL, N, SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT64, &rows, 3, out_keys,
                         idx, &desc));
        check_segments(in, &rows, 1, 3, out_keys, idx);
        OK(c, sortd_topk(c, in, NULL, N, SORTD_KEY_U32, SORTD_PAYLOAD_NONE, NULL, 5, out_keys, NULL,
                         NULL));
        check_segments(in, &(sortd_segments){.count = 1, .row_len = N}, 0, 5, out_keys, NULL);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* In regions: offsets in a region, and top-k results in another. */
START_TEST(sortd_regions)
{
        daemon_proc d = {0};
        sortd_conn *c;
        sortd_region *a = NULL, *b = NULL;
        static uint32_t in[N];
        uint32_t off[4] = {0, 333, 334, N};
        sortd_segments named = {.count = 3, .offset_bytes = 4};
        sortd_segments rows = {.count = 8, .row_len = N / 8};
        sortd_region_sort rs = {.n = N,
                                .key_type = SORTD_KEY_U32,
                                .payload = SORTD_PAYLOAD_ARGSORT64,
                                .vals_offset = 4096,
                                .segments = &named,
                                .offsets_offset = 64};
        uint8_t *am, *bm;

        daemon_start(&d, NULL);
        c = client_open(&d);
        OK(c, sortd_region_create(c, 16384, &a));
        OK(c, sortd_region_create(c, 16384, &b));
        am = sortd_region_data(a);
        bm = sortd_region_data(b);
        random_keys(in, N, 2);
        memcpy(am, in, sizeof(in));
        memcpy(bm + 64, off, sizeof(off));
        rs.keys = rs.vals = a;
        rs.offsets_region = b;
        OK(c, sortd_sort_in_region(c, &rs));
        check_segments(in, &(sortd_segments){.count = 3, .offsets = off, .offset_bytes = 4}, 0, 0,
                       (uint32_t *)am, (uint64_t *)(am + 4096));

        memcpy(am, in, sizeof(in));
        rs = (sortd_region_sort){.keys = a,
                                 .n = N,
                                 .key_type = SORTD_KEY_U32,
                                 .payload = SORTD_PAYLOAD_ARGSORT64,
                                 .segments = &rows,
                                 .k = 4,
                                 .out_keys = b,
                                 .out_keys_offset = 1024,
                                 .out_vals = b,
                                 .out_vals_offset = 8192};
        OK(c, sortd_sort_in_region(c, &rs));
        check_segments(in, &rows, 0, 4, (uint32_t *)(bm + 1024), (uint64_t *)(bm + 8192));
        ck_assert_mem_eq(am, in, sizeof(in)); /* only read */
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, b), SORTD_OK);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * The client bounds the bytes the daemon holds for a top-k as the daemon does: keys, values,
 * results, each rounded to 8 bytes. At the limit the daemon sorts; one key past it the client
 * refuses, where keys and values alone (the bound of a sort) would still fit.
 */
START_TEST(sortd_held_bytes)
{
        const char *const limit[] = {"--max-request-bytes", "4096", NULL};
        daemon_proc d = {0};
        sortd_conn *c;
        static uint32_t in[N], vals[N], out_keys[N], out_vals[N];
        uint64_t before;

        daemon_start(&d, limit);
        c = client_open(&d);
        random_keys(in, N, 3);
        /* 256 rows of one key: 1024 bytes each of keys, values, result keys, result values */
        OK(c,
           sortd_topk(c, in, vals, 256, SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32,
                      &(sortd_segments){.count = 256, .row_len = 1}, 1, out_keys, out_vals, NULL));
        ck_assert_mem_eq(out_keys, in, 1024);
        before = status_of(&d).requests_total;
        ck_assert_int_eq(sortd_topk(c, in, vals, 257, SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32,
                                    &(sortd_segments){.count = 257, .row_len = 1}, 1, out_keys,
                                    out_vals, NULL),
                         SORTD_E_CAPACITY);
        ck_assert_ptr_nonnull(strstr(sortd_error_message(c), "max-request-bytes 4096"));
        ck_assert_uint_eq(status_of(&d).requests_total, before + 2); /* hello, status */
        OK(c, sortd_ping(c));
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("segments_sortd");
        TCase *tc = tcase_create("sortd");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, sortd_inline);
        tcase_add_test(tc, sortd_regions);
        tcase_add_test(tc, sortd_held_bytes);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
