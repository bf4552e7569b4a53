/*
 * The segments and top-k of a Sort message (see request.h): what the message alone can tell.
 * The offsets' values are checked where they are copied to (dispatch), never in the client's
 * memory, which its process may still write.
 */
#include <stdarg.h>
#include <stdio.h>

#include "job.h"
#include "request.h"

static sortd_status fail(char *why, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static sortd_status fail(char *why, size_t len, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
        return SORTD_E_INVAL;
}

/* Uniform rows: count x row_len = n, no offsets anywhere. */
static sortd_status check_rows(const Sortd__Wire__Segments *w, uint64_t n,
                               sortd__request_segments *g, char *why, size_t len)
{
        const sortd_segments s = {.count = w->count, .row_len = w->row_len};

        if (w->offsets_region_id || w->offsets_offset)
                return fail(why, len,
                            "segments of uniform rows take no offsets (offsets_region_id %llu, "
                            "offsets_offset %llu)",
                            (unsigned long long)w->offsets_region_id,
                            (unsigned long long)w->offsets_offset);
        if (sortd_segments_check(&s, n, why, len) != SORTD_OK)
                return SORTD_E_INVAL;
        g->count = w->count;
        g->row_len = w->row_len;
        return SORTD_OK;
}

/* CSR offsets: their width and number; where they lie is the caller's. */
static sortd_status check_offsets(const Sortd__Wire__Segments *w, sortd__request_segments *g,
                                  char *why, size_t len)
{
        g->offset_bytes = w->offset_type == SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32 ? 4 : 8;
        if (w->row_len)
                return fail(why, len, "segments with offsets take no row_len (%llu came)",
                            (unsigned long long)w->row_len);
        /* count + 1 offsets of 8 bytes at most: below 2^59 they cannot overflow */
        if (w->count >= (UINT64_C(1) << 59))
                return fail(why, len, "%llu segments: too many offsets",
                            (unsigned long long)w->count);
        if (w->offsets_region_id && w->offsets_offset % g->offset_bytes)
                return fail(why, len, "offsets_offset %llu is not a multiple of their width %u",
                            (unsigned long long)w->offsets_offset, g->offset_bytes);
        g->count = w->count;
        g->offsets_bytes = (w->count + 1) * g->offset_bytes;
        g->offsets_region = w->offsets_region_id;
        g->offsets_offset = w->offsets_offset;
        return SORTD_OK;
}

static sortd_status check_form(const Sortd__Wire__Segments *w, uint64_t n,
                               sortd__request_segments *g, char *why, size_t len)
{
        switch (w->offset_type) {
        case SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_NONE:
                return check_rows(w, n, g, why, len);
        case SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32:
        case SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64:
                return check_offsets(w, g, why, len);
        default:
                return fail(why, len, "segments of unknown offset_type %d", (int)w->offset_type);
        }
}

/* The most results top-k may give: exact for uniform rows, else at most k a segment and n. */
static uint64_t results_max(const sortd__request_segments *g, uint64_t n)
{
        const sortd_segments rows = {.count = g->count, .row_len = g->row_len};

        if (!g->on)
                return sortd_topk_results(NULL, n, g->k);
        if (!g->offset_bytes)
                return sortd_topk_results(&rows, n, g->k);
        return g->k >= n || g->count >= n / g->k ? n : g->count * g->k;
}

/* A region top-k's outputs: where they go (the spans are found once the results are known). */
static sortd_status check_topk_out(const Sortd__Wire__Sort *s, sortd__request_segments *g,
                                   char *why, size_t len)
{
        const Sortd__Wire__TopkOut *o = s->topk_out;
        bool region = s->data_case == SORTD__WIRE__SORT__DATA_REGION;

        if (!g->k && o)
                return fail(why, len, "topk_out without k");
        if (!g->k)
                return SORTD_OK;
        if (!region && o)
                return fail(why, len,
                            "topk_out is for a region sort: an inline top-k's results come in "
                            "its reply");
        if (!region)
                return SORTD_OK;
        if (!o || !o->keys_region_id)
                return fail(why, len,
                            "a region top-k needs topk_out: the region its results go to");
        g->out_region[0] = o->keys_region_id;
        g->out_offset[0] = o->keys_offset;
        g->out_region[1] = o->vals_region_id ? o->vals_region_id : o->keys_region_id;
        g->out_offset[1] = o->vals_offset;
        return SORTD_OK;
}

void sortd__request_segments_parts(const sortd__request *rq, bool region, sortd__job_parts *p)
{
        const sortd__request_segments *g = &rq->seg;
        uint64_t ks = sortd_key_size(rq->desc.key_type), vs = sortd_payload_size(rq->desc.payload);

        *p = (sortd__job_parts){.offsets = g->offset_bytes ? g->offsets_bytes : 0};
        if (region)
                return;
        p->keys = rq->sizes.keys_bytes;
        /* a top-k reads the values it moves, and an argsort's indices are its results */
        p->vals = g->k && sortd_payload_is_argsort(rq->desc.payload) ? 0 : rq->sizes.vals_bytes;
        p->out_keys = g->results_max * ks;
        p->out_vals = g->results_max * vs;
}

/* What the daemon holds and reads of the sort: its buffer and the payload after the frame. */
static void sizes(const Sortd__Wire__Sort *s, const sortd__request *rq, sortd__request_segments *g)
{
        bool region = s->data_case == SORTD__WIRE__SORT__DATA_REGION;
        uint64_t offsets = sortd__request_segments_payload(g) ? g->offsets_bytes : 0;
        sortd__job_parts p;

        if (!region && !g->on && !g->k) { /* as ever: what the reply carries */
                g->buffer_bytes = rq->sizes.reply_len;
                g->payload_bytes = rq->sizes.request_len;
                return;
        }
        sortd__request_segments_parts(rq, region, &p);
        g->buffer_bytes = sortd__job_parts_bytes(&p);
        g->payload_bytes = region ? offsets : rq->sizes.request_len + offsets;
}

sortd_status sortd__request_segments_check(const Sortd__Wire__Sort *s, sortd__request *rq,
                                           char *why, size_t why_len)
{
        sortd__request_segments *g = &rq->seg;
        sortd_status st = SORTD_OK;

        *g = (sortd__request_segments){.on = s->segments != NULL, .k = s->k};
        if (g->on)
                st = check_form(s->segments, s->n, g, why, why_len);
        if (st == SORTD_OK)
                st = check_topk_out(s, g, why, why_len);
        if (st != SORTD_OK)
                return st;
        g->results_max = g->k ? results_max(g, s->n) : 0;
        sizes(s, rq, g);
        return SORTD_OK;
}
