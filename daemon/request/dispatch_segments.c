/*
 * A sort's segments and top-k as dispatch carries them out (see dispatch.h): the job's fields
 * and buffer, the regions its offsets and results lie in, then, once the offsets are in the
 * daemon's memory, their checks and the results' spans. The offsets are checked only there:
 * in a region they are shared memory that the client's process may write at any time.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dispatch.h"

/* The region of id for `what`, held by j in *slot: 0, or -EINVAL with j's why. */
static int hold(const sortd__dispatch_ctx *d, sortd__job *j, uint64_t id, const char *what,
                sortd__region **slot)
{
        sortd__region *r = sortd__regions_find(d->regions, id, j->work.why, sizeof(j->work.why));

        if (!r) {
                size_t used = strlen(j->work.why);

                snprintf(j->work.why + used, sizeof(j->work.why) - used, " (%s)", what);
                return -EINVAL;
        }
        sortd__region_hold(r);
        *slot = r;
        return 0;
}

/* The memfd region of the offsets, and their span in it. */
static int offsets_region(const sortd__dispatch_ctx *d, const sortd__request_segments *g,
                          sortd__job *j)
{
        uint8_t *p;
        int r = hold(d, j, g->offsets_region, "the segments' offsets", &j->offsets_rg);

        if (r < 0)
                return r;
        if (j->offsets_rg->kind != SORTD__REGION_MEMFD) {
                snprintf(j->work.why, sizeof(j->work.why),
                         "the segments' offsets must lie in a memfd region: region %llu is in "
                         "device memory",
                         (unsigned long long)g->offsets_region);
                return -EINVAL;
        }
        r = sortd__region_span(j->offsets_rg, "offsets", g->offsets_offset, g->count + 1,
                               g->offset_bytes, &p, j->work.why, sizeof(j->work.why));
        j->offsets_src = p;
        return r;
}

/* The regions a region top-k's results go to: of the connection, of the inputs' kind. */
static int out_regions(const sortd__dispatch_ctx *d, const sortd__request *rq, sortd__job *j)
{
        static const char *const what[2] = {"top-k keys", "top-k values"};
        unsigned outs = sortd_payload_size(rq->desc.payload) ? 2 : 1;

        for (unsigned i = 0; i < outs; i++) {
                if (hold(d, j, rq->seg.out_region[i], what[i], &j->out_rg[i]) < 0)
                        return -EINVAL;
                if (j->out_rg[i]->kind != j->keys_rg->kind) {
                        snprintf(j->work.why, sizeof(j->work.why),
                                 "the %s must go to a region of the inputs' kind (%s): region "
                                 "%llu is not",
                                 what[i],
                                 j->keys_rg->kind == SORTD__REGION_CUDA ? "device memory"
                                                                        : "a memfd region",
                                 (unsigned long long)rq->seg.out_region[i]);
                        return -EINVAL;
                }
                j->out_offset[i] = rq->seg.out_offset[i];
        }
        return 0;
}

int sortd__dispatch_segments(const sortd__dispatch_ctx *d, const sortd__request *rq, sortd__job *j)
{
        const sortd__request_segments *g = &rq->seg;
        int r = 0;

        j->work.segmented = g->on;
        j->work.k = g->k;
        j->work.seg = (sortd_segments){
                .count = g->count, .row_len = g->row_len, .offset_bytes = g->offset_bytes};
        /* key columns take no segments (their check): their buffer is their sizes' */
        if (sortd__job_plain(j) || j->work.cols.count)
                return 0;
        sortd__request_segments_parts(rq, rq->kind == SORTD__REQUEST_REGION_SORT, &j->parts);
        if (g->on && g->offsets_region)
                r = offsets_region(d, g, j);
        if (r == 0 && g->k && rq->kind == SORTD__REQUEST_REGION_SORT)
                r = out_regions(d, rq, j);
        return r;
}

static bool overlap(const uint8_t *a, uint64_t alen, const uint8_t *b, uint64_t blen)
{
        return alen && blen && a < b + blen && b < a + alen;
}

/* A region top-k's results: within their regions, aligned, apart from the inputs and each
   other (an engine would refuse them too, but the client learns which is wrong). */
static int out_spans(sortd__job *j)
{
        uint64_t n = j->work.n, m = j->work.results;
        size_t ks = sortd_key_size(j->work.desc.key_type),
               vs = sortd_payload_size(j->work.desc.payload);
        uint64_t in_vals = sortd_payload_is_argsort(j->work.desc.payload) ? 0 : n * vs;
        char *why = j->work.why;
        size_t len = sizeof(j->work.why);

        if (sortd__region_span(j->out_rg[0], "top-k keys", j->out_offset[0], m, ks,
                               &j->work.out_keys, why, len) < 0)
                return -EINVAL;
        if (vs && sortd__region_span(j->out_rg[1], "top-k values", j->out_offset[1], m, vs,
                                     &j->work.out_vals, why, len) < 0)
                return -EINVAL;
        if (overlap(j->work.out_keys, m * ks, j->work.keys, n * ks) ||
            overlap(j->work.out_keys, m * ks, j->work.vals, in_vals)) {
                snprintf(why, len, "the top-k keys' span overlaps the sort's keys or values");
                return -EINVAL;
        }
        if (vs && (overlap(j->work.out_vals, m * vs, j->work.keys, n * ks) ||
                   overlap(j->work.out_vals, m * vs, j->work.vals, in_vals) ||
                   overlap(j->work.out_vals, m * vs, j->work.out_keys, m * ks))) {
                snprintf(why, len,
                         "the top-k values' span overlaps the sort's keys or values, or the top-k "
                         "keys'");
                return -EINVAL;
        }
        return 0;
}

int sortd__dispatch_segments_ready(sortd__job *j)
{
        const sortd_segments *seg = j->work.segmented ? &j->work.seg : NULL;

        if (sortd__job_plain(j) || j->work.cols.count)
                return 0;
        /* The client's process may write its region still: the copy is what is checked. */
        if (j->offsets_src)
                memcpy((void *)j->work.seg.offsets, j->offsets_src, (size_t)j->parts.offsets);
        j->offsets_src = NULL;
        if (seg &&
            sortd_segments_check(seg, j->work.n, j->work.why, sizeof(j->work.why)) != SORTD_OK)
                return -EINVAL;
        if (!j->work.k)
                return 0;
        j->work.results = sortd_topk_results(seg, j->work.n, j->work.k);
        return j->keys_rg ? out_spans(j) : 0;
}
