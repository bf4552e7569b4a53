/*
 * The self-check's segmented sorts and top-k (selfcheck.h): the same engines on a few shapes of
 * each, whose lengths cross every size class an engine may sort segments by (a warp's, a
 * block's, Onesweep's) and whose k cross a tile, compared bit for bit. A GPU engine's segmented
 * and select kernels are separate code from its sort, so they are checked on the device that
 * runs them, as the sort is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "selfcheck.h"

/* offset_bytes 0 and row_len 0: one array (a top-k of the whole). */
static const struct shape {
        sortd_key_type t;
        sortd_payload p;
        sortd_order o;
        unsigned offset_bytes;
        size_t row_len;
        uint64_t k; /* 0: a segmented sort */
        size_t n;
} shapes[] = {
        {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 4, 0, 0, 60013},
        {SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 0, 300, 0, 30000},
        {SORTD_KEY_I16, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 8, 0, 0, 20011},
        {SORTD_KEY_U32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0, 1000, 100003},
        {SORTD_KEY_I64, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 513, 10, 513 * 64},
        {SORTD_KEY_F32, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 4, 0, 257, 40009},
        {SORTD_KEY_F16, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING, 0, 700, 5, 700 * 8},
};

/* Segment lengths in turn: empty, one key, about a warp's, a block's and a tile's bounds. */
static const uint64_t lengths[] = {0, 1, 2, 33, 256, 257, 1500, 4096, 4097, 9001};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* One shape's inputs and both engines' outputs. */
struct run {
        sortd_sort_desc desc;
        sortd_segments seg;
        const sortd_segments *segp; /* NULL: one array */
        size_t n, kb, vb;
        uint64_t m; /* top-k results */
        void *offsets, *keys[2], *vals[2], *out_keys[2], *out_vals[2];
};

/* The offsets of lengths in turn over n keys, the last segment cut to fit. */
static void *csr(unsigned width, size_t n, uint64_t *count)
{
        uint64_t at = 0, c = 0;
        unsigned char *o;

        for (; at < n; c++)
                at += lengths[c % COUNT(lengths)];
        o = malloc((c + 1) * width);
        if (!o)
                return NULL;
        at = 0;
        for (uint64_t i = 0; i <= c; i++) {
                uint64_t v = at < n ? at : n;

                memcpy(o + i * width, &v, width); /* little-endian: the low bytes */
                at += lengths[i % COUNT(lengths)];
        }
        *count = c;
        return o;
}

static void free_run(struct run *r)
{
        free(r->offsets);
        for (int i = 0; i < 2; i++) {
                free(r->keys[i]);
                free(r->vals[i]);
                free(r->out_keys[i]);
                free(r->out_vals[i]);
        }
}

/* Lays out shape s for an engine of capacity cap; false when out of memory. */
static bool prepare(const struct shape *s, size_t cap, uint64_t seed, struct run *r)
{
        *r = (struct run){.desc = {s->t, s->p, s->o, 0, 0}, .n = s->n < cap ? s->n : cap};
        r->kb = sortd_key_size(s->t);
        r->vb = sortd_payload_size(s->p);
        if (s->row_len) {
                r->seg = (sortd_segments){.count = r->n / s->row_len, .row_len = s->row_len};
                r->n = r->seg.count * s->row_len;
                r->segp = &r->seg;
        } else if (s->offset_bytes) {
                r->offsets = csr(s->offset_bytes, r->n, &r->seg.count);
                r->seg.offsets = r->offsets;
                r->seg.offset_bytes = s->offset_bytes;
                r->segp = &r->seg;
                if (!r->offsets)
                        return false;
        }
        r->m = s->k ? sortd_topk_results(r->segp, r->n, s->k) : 0;
        for (int i = 0; i < 2; i++) {
                r->keys[i] = malloc(r->n * r->kb + 1);
                r->vals[i] = malloc(r->n * r->vb + 1);
                r->out_keys[i] = malloc(r->m * r->kb + 1);
                r->out_vals[i] = malloc(r->m * r->vb + 1);
                if (!r->keys[i] || !r->vals[i] || !r->out_keys[i] || !r->out_vals[i])
                        return false;
        }
        sortd__selfcheck_fill(r->keys[0], r->vals[0], r->n, (unsigned)r->kb, (unsigned)r->vb, seed);
        memcpy(r->keys[1], r->keys[0], r->n * r->kb);
        memcpy(r->vals[1], r->vals[0], r->n * r->vb);
        return true;
}

static sortd_status call(sortd_engine *e, const struct shape *s, struct run *r, int i)
{
        if (!s->k)
                return sortd_engine_sort_segments(e, &r->desc, r->segp, SORTD_MEMORY_HOST,
                                                  r->keys[i], r->vals[i], r->n);
        return sortd_engine_topk(e, &r->desc, r->segp, s->k, SORTD_MEMORY_HOST, r->keys[i],
                                 r->vals[i], r->out_keys[i], r->out_vals[i], r->n);
}

static void describe(char *buf, size_t len, const struct shape *s, const struct run *r)
{
        char layout[64], k[32] = "";

        if (!r->segp)
                snprintf(layout, sizeof(layout), "one array");
        else if (s->row_len)
                snprintf(layout, sizeof(layout), "rows of %zu", s->row_len);
        else
                snprintf(layout, sizeof(layout), "%llu segments (u%u offsets)",
                         (unsigned long long)r->seg.count, s->offset_bytes * 8);
        if (s->k)
                snprintf(k, sizeof(k), ", k = %llu", (unsigned long long)s->k);
        snprintf(buf, len, "%s of %zu %s keys (%s, %s) in %s%s",
                 s->k ? "top-k" : "a segmented sort", r->n, sortd_key_type_name(s->t),
                 sortd_payload_name(s->p), s->o == SORTD_DESCENDING ? "descending" : "ascending",
                 layout, k);
}

/* The first position where the engines' results differ, in keys then values; the count of
   results when they agree. */
static size_t difference(const struct shape *s, const struct run *r)
{
        size_t count = s->k ? r->m : r->n, at;
        void *const *k = s->k ? r->out_keys : r->keys, *const *v = s->k ? r->out_vals : r->vals;

        at = sortd__selfcheck_first_difference(k[0], k[1], count, r->kb);
        if (at == count && r->vb)
                at = sortd__selfcheck_first_difference(v[0], v[1], count, r->vb);
        return at;
}

/* Both engines on shape s; *unsupported when the subject has no such call. */
static sortd_status check_shape(sortd_engine *e[2], const struct shape *s, size_t cap,
                                uint64_t seed, bool *unsupported, char *report, size_t len)
{
        struct run r;
        sortd_status st = SORTD_OK;
        size_t at;
        char what[128];

        if (!prepare(s, cap, seed, &r)) {
                free_run(&r);
                return sortd__selfcheck_say(report, len, SORTD_E_NOMEM,
                                            "self-check: out of memory for %s",
                                            s->k ? "a top-k" : "a segmented sort");
        }
        describe(what, sizeof(what), s, &r);
        for (int i = 0; i < 2 && st == SORTD_OK; i++) {
                st = call(e[i], s, &r, i);
                if (st == SORTD_E_UNSUPPORTED && i == 0) {
                        *unsupported = true;
                        free_run(&r);
                        return SORTD_OK;
                }
                if (st != SORTD_OK)
                        sortd__selfcheck_say(
                                report, len, st, "self-check: the %s engine failed %s: %s",
                                sortd_engine_kind(e[i]), what, sortd_engine_error(e[i]));
        }
        if (st == SORTD_OK && (at = difference(s, &r)) != (s->k ? r.m : r.n))
                st = sortd__selfcheck_say(
                        report, len, SORTD_E_SELFCHECK,
                        "self-check failed: %s and %s differ in %s, first at position %zu",
                        sortd_engine_kind(e[0]), sortd_engine_kind(e[1]), what, at);
        free_run(&r);
        return st;
}

sortd_status sortd__selfcheck_shapes(sortd_engine *e[2], size_t cap, size_t *checked, char *report,
                                     size_t len)
{
        bool segments_unsupported = false, topk_unsupported = false;

        *checked = 0;
        for (size_t i = 0; i < COUNT(shapes); i++) {
                bool *unsupported = shapes[i].k ? &topk_unsupported : &segments_unsupported;
                sortd_status s;

                if (*unsupported)
                        continue;
                s = check_shape(e, &shapes[i], cap, 1000 + i, unsupported, report, len);
                if (s != SORTD_OK)
                        return s;
                *checked += !*unsupported;
        }
        return SORTD_OK;
}
