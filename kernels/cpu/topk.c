/*
 * The CPU engine's top-k over segments. A segment of k keys or fewer is copied to the outputs
 * and sorted there whole; a few dozen keys are selected by the insertion sort; any other by a
 * radix select (select.c). Small segments are spread over the threads as the segmented sort
 * spreads them (segments.c), each selected by the thread that took it in private memory at the
 * segment's own offset of the engine's buffers, so the threads never share a byte; large ones
 * are selected one after another by every thread.
 */
#include <string.h>

#include "copy.h"
#include "segments.h"
#include "select.h"
#include "small.h"
#include "tiny.h"

typedef struct topk_job {
        sortd__cpu_ctx *ctx;
        const sortd__plan *plan;
        uint64_t k;
        const unsigned char *keys, *vals; /* vals: value payloads only, else NULL */
        unsigned char *out_keys, *out_vals;
} topk_job;

#define at sortd__at

static sortd__select select_of(const topk_job *j, const sortd__segment *s)
{
        const unsigned kb = j->plan->key_bytes, vb = j->plan->val_bytes;

        return (sortd__select){
                .ctx = j->ctx,
                .plan = j->plan,
                .keys = at(j->keys, s->begin, kb),
                .vals = at(j->vals, s->begin, vb),
                .len = s->len,
                .k = j->k,
                .out_keys = at(j->out_keys, s->out, kb),
                .out_vals = at(j->out_vals, s->out, vb),
                .gather_keys = at(j->ctx->alt_keys, s->begin, kb),
                .gather_vals = at(j->ctx->alt_vals, s->begin, vb),
                .copy = at(j->ctx->own_keys, s->begin, kb),
        };
}

/* The whole segment, copied to the outputs: values too, an argsort's indices are the sort's. */
static void copy_whole(const topk_job *j, const sortd__segment *s, bool threads)
{
        const unsigned kb = j->plan->key_bytes, vb = j->plan->val_bytes;
        size_t kbytes = s->len * kb, vbytes = s->len * vb;

        if (!threads) {
                memcpy(at(j->out_keys, s->out, kb), at(j->keys, s->begin, kb), kbytes);
                if (j->vals)
                        memcpy(at(j->out_vals, s->out, vb), at(j->vals, s->begin, vb), vbytes);
                return;
        }
        sortd__pool_copy(j->ctx->pool, at(j->out_keys, s->out, kb), at(j->keys, s->begin, kb),
                         kbytes, SORTD__SELECT_COPY_MIN, false);
        if (j->vals)
                sortd__pool_copy(j->ctx->pool, at(j->out_vals, s->out, vb),
                                 at(j->vals, s->begin, vb), vbytes, SORTD__SELECT_COPY_MIN, false);
}

static void topk_small(void *arg, unsigned tid, const sortd__segment *s)
{
        const topk_job *j = arg;
        const unsigned kb = j->plan->key_bytes, vb = j->plan->val_bytes;
        sortd__select sel;

        if (j->k >= s->len) {
                /* The outputs are the inputs' memory: the sorts read them once (shared). */
                copy_whole(j, s, false);
                sortd__sort_small_segment(j->plan, at(j->out_keys, s->out, kb),
                                          at(j->out_vals, s->out, vb), s->len,
                                          &j->ctx->scratch[tid]);
                return;
        }
        if (s->len <= SORTD__TINY_KEYS) {
                sortd__tiny_select(j->plan, at(j->keys, s->begin, kb), at(j->vals, s->begin, vb),
                                   s->len, j->k, at(j->out_keys, s->out, kb),
                                   at(j->out_vals, s->out, vb));
                return;
        }
        sel = select_of(j, s);
        sel.nth = 1;
        sel.scratch = &j->ctx->scratch[tid];
        sortd__select_topk(&sel);
}

static unsigned select_threads(const sortd__cpu_ctx *ctx, uint64_t len)
{
        uint64_t nth = len / SORTD__SELECT_KEYS_PER_THREAD;

        nth = nth < 1 ? 1 : nth;
        return nth < ctx->threads ? (unsigned)nth : ctx->threads;
}

static void topk_large(void *arg, unsigned tid, const sortd__segment *s)
{
        const topk_job *j = arg;
        const unsigned kb = j->plan->key_bytes, vb = j->plan->val_bytes;
        sortd__select sel;

        (void)tid;
        if (j->k >= s->len) {
                copy_whole(j, s, true);
                sortd__onesweep_sort(j->ctx, j->plan, at(j->out_keys, s->out, kb),
                                     at(j->out_vals, s->out, vb), s->len);
                return;
        }
        /* The engine is this segment's alone: its buffers from their start. */
        sel = select_of(j, &(sortd__segment){.len = s->len});
        sel.keys = at(j->keys, s->begin, kb);
        sel.vals = at(j->vals, s->begin, vb);
        sel.out_keys = at(j->out_keys, s->out, kb);
        sel.out_vals = at(j->out_vals, s->out, vb);
        sel.nth = select_threads(j->ctx, s->len);
        sel.scratch = j->ctx->scratch;
        sel.may_use_own_keys = true;
        sortd__select_topk(&sel);
}

void sortd__cpu_topk(sortd__cpu_ctx *ctx, const sortd__plan *plan, const sortd_segments *seg,
                     uint64_t k, const void *keys, const void *vals, void *out_keys, void *out_vals)
{
        topk_job j = {
                .ctx = ctx,
                .plan = plan,
                .k = k,
                .keys = keys,
                .vals = plan->val_bytes && !plan->argsort ? vals : NULL,
                .out_keys = out_keys,
                .out_vals = plan->val_bytes ? out_vals : NULL,
        };

        sortd__segments_run(ctx, seg, k, SORTD__SMALL_KEYS, topk_small, topk_large, &j);
}
