/*
 * Segments spread over the threads, and the segmented sort. A call's segments are cut into at
 * most SORTD__SEG_CHUNKS chunks of consecutive segments, which the threads take by ticket: one
 * atomic per chunk, not per segment, so that 10^6 segments of a key or two cost what their
 * keys do. Only as many threads wake as the small segments' keys (and their count) pay for, as
 * in a batch. A segment above SORTD__SMALL_KEYS is skipped there and sorted afterwards by
 * Onesweep on every thread, one such segment after another.
 */
#include "segments.h"

#include "small.h"
#include "tiny.h"

typedef struct spread {
        const sortd_segments *seg;
        uint64_t k, small_max, per_chunk, chunks;
        const uint64_t *chunk_out;
        sortd__segment_fn fn;
        void *arg;
        _Atomic uint64_t ticket;
} spread;

static uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

static void spread_worker(void *arg, unsigned tid, unsigned nth)
{
        spread *r = arg;
        uint64_t c;

        (void)nth;
        while ((c = atomic_fetch_add_explicit(&r->ticket, 1, memory_order_relaxed)) < r->chunks) {
                uint64_t first = c * r->per_chunk;
                uint64_t end = min_u64(first + r->per_chunk, r->seg->count);
                sortd__segment s = {.out = r->chunk_out[c],
                                    .begin = sortd__seg_begin(r->seg, first)};

                for (s.index = first; s.index < end; s.index++) {
                        uint64_t next = sortd__seg_begin(r->seg, s.index + 1);

                        s.len = next - s.begin;
                        if (s.len && s.len <= r->small_max)
                                r->fn(r->arg, tid, &s);
                        s.out += min_u64(r->k, s.len);
                        s.begin = next;
                }
        }
}

/* What the first scan of the segments finds. */
typedef struct survey {
        uint64_t small, small_keys; /* segments of 1 to small_max keys, and their keys */
        bool large;                 /* a segment above small_max */
} survey;

/* Every chunk's first output, and the survey; rows need no scan but their count. */
static survey scan(const sortd_segments *seg, uint64_t k, uint64_t small_max, uint64_t per_chunk,
                   uint64_t *chunk_out)
{
        survey v = {0};
        uint64_t out = 0, begin = 0;

        if (!seg->offsets) {
                bool small = seg->row_len <= small_max;

                for (uint64_t c = 0; c * per_chunk < seg->count; c++)
                        chunk_out[c] = c * per_chunk * min_u64(k, seg->row_len);
                v.small = small && seg->row_len ? seg->count : 0;
                v.small_keys = v.small * seg->row_len;
                v.large = !small && seg->count;
                return v;
        }
        for (uint64_t i = 0; i < seg->count; i++) {
                uint64_t next = sortd__seg_begin(seg, i + 1), len = next - begin;

                if (i % per_chunk == 0)
                        chunk_out[i / per_chunk] = out;
                if (len > small_max) {
                        v.large = true;
                } else if (len) {
                        v.small++;
                        v.small_keys += len;
                }
                out += min_u64(k, len);
                begin = next;
        }
        return v;
}

static void run_large(const sortd_segments *seg, uint64_t k, uint64_t small_max,
                      sortd__segment_fn large, void *arg)
{
        sortd__segment s = {0};

        for (s.index = 0; s.index < seg->count; s.index++) {
                uint64_t next = sortd__seg_begin(seg, s.index + 1);

                s.len = next - s.begin;
                if (s.len > small_max)
                        large(arg, 0, &s);
                s.out += min_u64(k, s.len);
                s.begin = next;
        }
}

void sortd__segments_run(sortd__cpu_ctx *ctx, const sortd_segments *seg, uint64_t k,
                         uint64_t small_max, sortd__segment_fn small, sortd__segment_fn large,
                         void *arg)
{
        uint64_t chunks = min_u64(seg->count, SORTD__SEG_CHUNKS);
        spread r = {.seg = seg, .k = k, .small_max = small_max, .fn = small, .arg = arg};
        survey v;
        uint64_t work, nth;

        if (!chunks)
                return;
        r.per_chunk = (seg->count + chunks - 1) / chunks;
        r.chunks = (seg->count + r.per_chunk - 1) / r.per_chunk;
        r.chunk_out = ctx->seg_chunk_out;
        v = scan(seg, k, small_max, r.per_chunk, ctx->seg_chunk_out);
        /* Waking a thread costs about as much as sorting a few thousand keys. */
        work = v.small_keys + v.small * SORTD__SEG_COST_KEYS;
        nth = work / SORTD__SMALL_SPREAD_KEYS;
        nth = nth < 1 ? 1 : nth;
        nth = min_u64(min_u64(nth, ctx->threads), r.chunks);
        atomic_init(&r.ticket, 0);
        if (v.small)
                sortd__pool_run(ctx->pool, (unsigned)nth, spread_worker, &r);
        if (v.large)
                run_large(seg, k, small_max, large, arg);
}

/* ---- the segmented sort ------------------------------------------------------------------- */

void sortd__sort_small_segment(const sortd__plan *plan, void *keys, void *vals, size_t n,
                               sortd__cpu_scratch *s)
{
        /* the network sorts a short row far faster than the insertion sort, keys alone and
           keys of up to 4 bytes with values or indices (docs/performance.md). Asked only of
           short rows: small_sort asks again of the others */
        if (n <= SORTD__TINY_KEYS && (n < 2 || !sortd__small_by_network(plan, n, s)))
                sortd__tiny_select(plan, keys, vals, n, n, keys, vals);
        else
                sortd__small_sort(plan, keys, vals, n, s);
}

typedef struct sort_job {
        sortd__cpu_ctx *ctx;
        const sortd__plan *plan;
        unsigned char *keys, *vals;
} sort_job;

static void sort_small(void *arg, unsigned tid, const sortd__segment *s)
{
        const sort_job *j = arg;

        sortd__sort_small_segment(j->plan, sortd__at(j->keys, s->begin, j->plan->key_bytes),
                                  sortd__at(j->vals, s->begin, j->plan->val_bytes), s->len,
                                  &j->ctx->scratch[tid]);
}

static void sort_large(void *arg, unsigned tid, const sortd__segment *s)
{
        const sort_job *j = arg;

        (void)tid;
        sortd__onesweep_sort(j->ctx, j->plan, sortd__at(j->keys, s->begin, j->plan->key_bytes),
                             sortd__at(j->vals, s->begin, j->plan->val_bytes), s->len);
}

void sortd__cpu_sort_segments(sortd__cpu_ctx *ctx, const sortd__plan *plan,
                              const sortd_segments *seg, void *keys, void *vals)
{
        sort_job j = {ctx, plan, keys, vals};

        sortd__segments_run(ctx, seg, UINT64_MAX, SORTD__SMALL_KEYS, sort_small, sort_large, &j);
}
