/*
 * sortd-bench --segments: through the daemon, rows of u32 keys sorted in one
 * segmented request (sortd_sort_segments) against the same rows as one request each, and the
 * top-k of n u32 keys (sortd_topk) against a full sort of the same keys (sortd_sort), the keys
 * inline (sent with the request: n x 4 bytes in for either, and out for the sort) and then in
 * shared-memory regions (sortd_sort_in_region: no keys cross the socket).
 *
 * Inline, the separate requests are pipelined (sortd_submit up to SEG_WINDOW ahead of
 * sortd_receive), their best case on one connection: a client waiting for each reply would add
 * a round trip per row. In a region each row's sort waits for its reply, as
 * sortd_sort_in_region does: libsortd has no pipelined region sort. The region part also times the
 * separate requests inline, so that each form is judged at its fastest: one segmented request in
 * a region against 10^4 pipelined inline (the target's line). Each pair of timings (one of
 * each form) is taken back to back, the order alternating from pair to pair, and the ratio reported
 * is the median of the pairs' ratios: on a shared machine the speed drifts over seconds, and pairs
 * see the same drift. The targets are printed at the issue's sizes only (10^4 x 1,024; k = 1,000 of
 * 2^24). Every result is checked: the segmented rows equal the separate ones and each row is
 * sorted; the top-k equals the full sort's first k keys.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagen.h"
#include "sortd.h"
#include "sortd_bench.h"

#define SEG_WINDOW 64 /* separate requests in flight: 64 x 4 KiB rows, well under a MiB */

typedef struct seg_bench {
        sortd_conn *c;
        uint32_t *input, *one, *many; /* the rows as generated, sorted in one request, in many */
        size_t rows, row_len;
} seg_bench;

/* The median of the ratios a[i] / b[i]: the pairs' ratio. */
static double pair_ratio(const double *a, const double *b, size_t n)
{
        double r[SEG_MAX_PAIRS];

        for (size_t i = 0; i < n; i++)
                r[i] = a[i] / b[i];
        return bench_median(r, n);
}

static bool fail(seg_bench *b, const char *what)
{
        fprintf(stderr, "sortd-bench: %s: %s\n", what, b->c ? sortd_error_message(b->c) : "");
        return false;
}

/* The rows in one request, inline or in region r; its seconds in *secs. */
static bool rows_one(seg_bench *b, sortd_region *r, double *secs)
{
        sortd_segments seg = {.count = b->rows, .row_len = b->row_len};
        size_t n = b->rows * b->row_len;
        sortd_region_sort rs = {.keys = r, .n = n, .key_type = SORTD_KEY_U32, .segments = &seg};
        sortd_status s;
        double t0;

        memcpy(r ? sortd_region_data(r) : (void *)b->one, b->input, n * 4);
        t0 = bench_now();
        s = r ? sortd_sort_in_region(b->c, &rs)
              : sortd_sort_segments(b->c, b->one, NULL, n, SORTD_KEY_U32, SORTD_PAYLOAD_NONE, &seg,
                                    NULL);
        *secs = bench_now() - t0;
        if (s != SORTD_OK)
                return fail(b, "segmented sort");
        if (r)
                memcpy(b->one, sortd_region_data(r), n * 4);
        return true;
}

/* The rows as one region sort each, one after another; its seconds in *secs. */
static bool rows_many_in_region(seg_bench *b, sortd_region *r, double *secs)
{
        size_t n = b->rows * b->row_len;
        double t0;

        memcpy(sortd_region_data(r), b->input, n * 4);
        t0 = bench_now();
        for (size_t i = 0; i < b->rows; i++) {
                sortd_region_sort rs = {.keys = r,
                                        .keys_offset = i * b->row_len * 4,
                                        .n = b->row_len,
                                        .key_type = SORTD_KEY_U32};

                if (sortd_sort_in_region(b->c, &rs) != SORTD_OK)
                        return fail(b, "separate region sort");
        }
        *secs = bench_now() - t0;
        memcpy(b->many, sortd_region_data(r), n * 4);
        return true;
}

/* The rows as one request each: inline SEG_WINDOW in flight, or in region r; its seconds in
 *secs. */
static bool rows_many(seg_bench *b, sortd_region *r, double *secs)
{
        sortd_request q[SEG_WINDOW];
        size_t sent = 0, got = 0;
        double t0;

        if (r)
                return rows_many_in_region(b, r, secs);
        memcpy(b->many, b->input, b->rows * b->row_len * 4);
        t0 = bench_now();
        while (got < b->rows) {
                if (sent < b->rows && sent - got < SEG_WINDOW) {
                        sortd_request *q_next = &q[sent % SEG_WINDOW];

                        *q_next = (sortd_request){.keys = b->many + sent * b->row_len,
                                                  .n = b->row_len,
                                                  .key_type = SORTD_KEY_U32};
                        if (sortd_submit(b->c, q_next) != SORTD_OK)
                                return fail(b, "separate request");
                        sent++;
                } else if (sortd_receive(b->c, &q[got++ % SEG_WINDOW]) != SORTD_OK) {
                        return fail(b, "separate request's reply");
                }
        }
        *secs = bench_now() - t0;
        return true;
}

static bool rows_check(const seg_bench *b)
{
        size_t n = b->rows * b->row_len;

        if (memcmp(b->one, b->many, n * 4) != 0) {
                fprintf(stderr, "sortd-bench: the segmented rows differ from the separate ones\n");
                return false;
        }
        for (size_t i = 1; i < n; i++)
                if (i % b->row_len && b->one[i - 1] > b->one[i]) {
                        fprintf(stderr, "sortd-bench: row %zu is not sorted\n", i / b->row_len);
                        return false;
                }
        return true;
}

/* One pair (or, in region r, triple) of the rows part, in an order that turns with k: the
   segmented request and the separate ones in the same place, and in a region the separate ones
   inline too, their fastest form (pipelined), which the region's segmented request is judged
   against. */
static bool rows_round(seg_bench *b, sortd_region *r, int k, double *one, double *many,
                       double *best)
{
        bool ok = k % 2 ? rows_many(b, r, many) && rows_one(b, r, one)
                        : rows_one(b, r, one) && rows_many(b, r, many);

        if (!ok || !rows_check(b))
                return false;
        return !r || (rows_many(b, NULL, best) && rows_check(b));
}

/* The rows part inline (r NULL) or in region r. */
static int rows_part(seg_bench *b, sortd_region *r, int runs)
{
        double one[SEG_MAX_PAIRS], many[SEG_MAX_PAIRS], best[SEG_MAX_PAIRS];
        bool issue_size = b->rows == 10000 && b->row_len == 1024;
        char rn[32], ln[32];

        for (int k = 0; k < runs; k++)
                if (!rows_round(b, r, k, &one[k], &many[k], &best[k]))
                        return -1;
        printf("rows: %s x %s u32 keys, %s, median of %d %s, alternated\n",
               bench_count_name(b->rows, rn, sizeof(rn)),
               bench_count_name(b->row_len, ln, sizeof(ln)), r ? "in a region" : "inline", runs,
               r ? "rounds" : "pairs");
        printf("  one segmented request  %9.2f ms\n", bench_median(one, (size_t)runs) * 1e3);
        if (r)
                printf("  separate requests      %9.2f ms  (one at a time)\n",
                       bench_median(many, (size_t)runs) * 1e3);
        else
                printf("  separate requests      %9.2f ms  (%d in flight)\n",
                       bench_median(many, (size_t)runs) * 1e3, SEG_WINDOW);
        printf("  segmented speed-up     %9.2fx  (of each pair)\n",
               pair_ratio(many, one, (size_t)runs));
        if (!r)
                return 0;
        /* Each form at its fastest: the segmented request in a region (no keys cross the
           socket), the separate requests inline and pipelined (a region sort a row waits for
           each reply). */
        printf("  separate, inline       %9.2f ms  (%d in flight)\n",
               bench_median(best, (size_t)runs) * 1e3, SEG_WINDOW);
        printf("  speed-up, each at best %9.2fx  (of each round%s)\n",
               pair_ratio(best, one, (size_t)runs), issue_size ? "; target >= 5x" : "");
        return 0;
}

/* Where the top-k part's keys lie: inline (keys NULL: sent with the request), or in regions,
   the keys in one and the top-k's results in another (nothing but the request crosses). */
typedef struct topk_where {
        sortd_region *keys, *out;
} topk_where;

static bool topk_once(seg_bench *b, const topk_where *w, size_t n, size_t k, double *secs)
{
        sortd_region_sort rs = {
                .keys = w->keys, .n = n, .key_type = SORTD_KEY_U32, .k = k, .out_keys = w->out};
        double t0;
        sortd_status s;

        if (w->keys)
                memcpy(sortd_region_data(w->keys), b->input, n * 4);
        t0 = bench_now();
        s = w->keys ? sortd_sort_in_region(b->c, &rs)
                    : sortd_topk(b->c, b->input, NULL, n, SORTD_KEY_U32, SORTD_PAYLOAD_NONE, NULL,
                                 k, b->one, NULL, NULL);
        *secs = bench_now() - t0;
        if (s != SORTD_OK)
                return fail(b, "top-k");
        if (w->keys)
                memcpy(b->one, sortd_region_data(w->out), k * 4);
        return true;
}

/* A full sort; its first k keys into b->many. */
static bool full_once(seg_bench *b, const topk_where *w, size_t n, size_t k, double *secs)
{
        sortd_region_sort rs = {.keys = w->keys, .n = n, .key_type = SORTD_KEY_U32};
        double t0;
        sortd_status s;

        memcpy(w->keys ? sortd_region_data(w->keys) : b->many, b->input, n * 4);
        t0 = bench_now();
        s = w->keys ? sortd_sort_in_region(b->c, &rs)
                    : sortd_sort(b->c, b->many, n, SORTD_KEY_U32, NULL);
        *secs = bench_now() - t0;
        if (s != SORTD_OK)
                return fail(b, "full sort");
        if (w->keys)
                memcpy(b->many, sortd_region_data(w->keys), k * 4);
        return true;
}

static int topk_part(seg_bench *b, const topk_where *w, size_t n, size_t k, int runs)
{
        double topk[SEG_MAX_PAIRS] = {0}, full[SEG_MAX_PAIRS] = {0};
        char nn[32];

        for (int r = 0; r < runs; r++) {
                bool ok =
                        r % 2 ? full_once(b, w, n, k, &full[r]) && topk_once(b, w, n, k, &topk[r])
                              : topk_once(b, w, n, k, &topk[r]) && full_once(b, w, n, k, &full[r]);
                if (!ok)
                        return -1;
                if (memcmp(b->one, b->many, k * 4) != 0) {
                        fprintf(stderr, "sortd-bench: the top-k differs from the full sort's "
                                        "first k\n");
                        return -1;
                }
        }
        double ratio = pair_ratio(topk, full, (size_t)runs);

        printf("top-k: k = %zu of %s u32 keys, %s, median of %d pairs, alternated\n", k,
               bench_count_name(n, nn, sizeof(nn)), w->keys ? "in regions" : "inline", runs);
        printf("  top-k                  %9.2f ms\n", bench_median(topk, (size_t)runs) * 1e3);
        printf("  full sort              %9.2f ms\n", bench_median(full, (size_t)runs) * 1e3);
        printf("  top-k / full sort      %9.3fx  (of each pair%s)\n", ratio,
               n == (size_t)1 << 24 && k == 1000 ? "; target <= 0.3x" : "");
        return 0;
}

/* The top-k part inline, then in regions. */
static int topk_parts(seg_bench *b, size_t n, size_t k, int runs)
{
        topk_where w = {0};
        int r;

        datagen_fill(b->input, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 40);
        if ((r = topk_part(b, &w, n, k, runs)) != 0)
                return r;
        if (sortd_region_create(b->c, n * 4, &w.keys) == SORTD_OK &&
            sortd_region_create(b->c, k * 4, &w.out) == SORTD_OK)
                r = topk_part(b, &w, n, k, runs);
        else
                r = fail(b, "region") ? 0 : -1; /* fail() says why, and is false */
        sortd_region_destroy(b->c, w.keys);
        sortd_region_destroy(b->c, w.out);
        return r;
}

int bench_segments(const char *sock, size_t rows, size_t row_len, size_t topk_n, size_t k, int runs)
{
        size_t most = rows * row_len > topk_n ? rows * row_len : topk_n;
        seg_bench b = {.rows = rows, .row_len = row_len};
        char err[256];
        int r = -1;

        b.input = malloc(most * 4);
        b.one = malloc(most * 4);
        b.many = malloc(most * 4);
        if (!b.input || !b.one || !b.many) {
                fprintf(stderr, "sortd-bench: out of memory\n");
                goto out;
        }
        if (sortd_connect(sock, NULL, &b.c, err, sizeof(err)) != SORTD_OK) {
                fprintf(stderr, "sortd-bench: connect: %s\n", err);
                goto out;
        }
        datagen_fill(b.input, rows * row_len, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 39);
        r = rows_part(&b, NULL, runs);
        if (r == 0) {
                sortd_region *region = NULL;

                if (sortd_region_create(b.c, rows * row_len * 4, &region) == SORTD_OK)
                        r = rows_part(&b, region, runs);
                else
                        r = fail(&b, "region") ? 0 : -1;
                sortd_region_destroy(b.c, region);
        }
        if (r == 0 && k)
                r = topk_parts(&b, topk_n, k, runs);
        sortd_close(b.c);
out:
        free(b.input);
        free(b.one);
        free(b.many);
        return r;
}
