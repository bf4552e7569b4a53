/*
 * The reference sort: records of (comparison key, input position) sorted by a bottom-up stable
 * merge sort, then the permutation applied to keys and values. The key order itself is in
 * reference_order.c; 128-bit keys, too wide for a record's 64-bit key, are sorted as one
 * column by reference_sort_columns().
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "reference_order.h"

struct rec {
        uint64_t key; /* ref__rec_key() of the key */
        uint64_t idx;
};

/* Strict "a sorts before b"; mode and descending are constants where it is inlined. */
static inline __attribute__((always_inline)) bool rec_less(const struct rec *a, const struct rec *b,
                                                           enum ref_mode mode, bool descending,
                                                           unsigned bits)
{
        return ref__less(a->key, b->key, mode, descending, bits);
}

#define RUN 16 /* runs sorted by insertion before merging */

/*
 * Stable: insertion moves a record only past strictly greater ones, and a merge takes from the
 * right run only when its head is strictly less. Returns the buffer holding the result.
 */
static inline __attribute__((always_inline)) struct rec *merge_sort(struct rec *a, struct rec *tmp,
                                                                    size_t n, enum ref_mode mode,
                                                                    bool descending, unsigned bits)
{
        for (size_t lo = 0; lo < n; lo += RUN) {
                size_t hi = n - lo < RUN ? n : lo + RUN;

                for (size_t i = lo + 1; i < hi; i++) {
                        struct rec x = a[i];
                        size_t j = i;

                        for (; j > lo && rec_less(&x, &a[j - 1], mode, descending, bits); j--)
                                a[j] = a[j - 1];
                        a[j] = x;
                }
        }
        for (size_t width = RUN; width < n; width *= 2) {
                for (size_t lo = 0; lo < n; lo += 2 * width) {
                        size_t mid = n - lo < width ? n : lo + width;
                        size_t hi = n - mid < width ? n : mid + width;
                        size_t i = lo, j = mid, k = lo;

                        while (i < mid && j < hi)
                                tmp[k++] = rec_less(&a[j], &a[i], mode, descending, bits) ? a[j++]
                                                                                          : a[i++];
                        while (i < mid)
                                tmp[k++] = a[i++];
                        while (j < hi)
                                tmp[k++] = a[j++];
                }
                struct rec *t = a;
                a = tmp;
                tmp = t;
        }
        return a;
}

static struct rec *sort_recs(const struct ref_order *o, struct rec *a, struct rec *tmp, size_t n)
{
        unsigned bits = o->bits;

        switch ((o->ranged ? REF_UNSIGNED : o->mode) * 2 + o->descending) {
        case REF_SIGNED * 2:
                return merge_sort(a, tmp, n, REF_SIGNED, false, bits);
        case REF_SIGNED * 2 + 1:
                return merge_sort(a, tmp, n, REF_SIGNED, true, bits);
        case REF_FLOAT * 2:
                return merge_sort(a, tmp, n, REF_FLOAT, false, bits);
        case REF_FLOAT * 2 + 1:
                return merge_sort(a, tmp, n, REF_FLOAT, true, bits);
        case REF_UNSIGNED * 2 + 1:
                return merge_sort(a, tmp, n, REF_UNSIGNED, true, bits);
        default:
                return merge_sort(a, tmp, n, REF_UNSIGNED, false, bits);
        }
}

/* desc's key order; -1 for what ref_sort() refuses (an unknown payload too). */
static int make_order(const sortd_sort_desc *d, struct ref_order *o)
{
        if (!d || ref__payload_bytes(d->payload) < 0)
                return -1;
        return ref__order_make(d->key_type, d->order, d->begin_bit, d->end_bit, o);
}

int ref_compare(const sortd_sort_desc *desc, const void *keys, size_t i, size_t j)
{
        struct ref_order o;

        return make_order(desc, &o) == 0 ? ref__compare(&o, keys, i, j) : 0;
}

/* 128-bit keys, as one column: their order into recs' indices. Returns recs, or NULL. */
static struct rec *sort_wide(const sortd_sort_desc *desc, void *keys, struct rec *recs, size_t n)
{
        const sortd_column col = {desc->key_type, desc->order, desc->begin_bit, desc->end_bit};
        uint64_t *perm = malloc(n * sizeof(*perm));

        if (!perm ||
            reference_sort_columns(&col, 1, SORTD_PAYLOAD_ARGSORT64, &keys, perm, n) != SORTD_OK) {
                free(perm);
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                recs[i].idx = perm[i];
        free(perm);
        return recs;
}

/* Keys and values from their copies in the order of the sorted records. */
static void apply_recs(const sortd_sort_desc *desc, const struct rec *out, void *keys,
                       const unsigned char *keys_in, void *vals, const unsigned char *vals_in,
                       size_t n, unsigned kb, unsigned vb)
{
        bool argsort = desc->payload == SORTD_PAYLOAD_ARGSORT32 ||
                       desc->payload == SORTD_PAYLOAD_ARGSORT64;

        for (size_t i = 0; i < n; i++) {
                size_t from = (size_t)out[i].idx;

                memcpy((unsigned char *)keys + i * kb, keys_in + from * kb, kb);
                if (argsort)
                        ref__store(vals, i, vb, from);
                else if (vb)
                        ref__store(vals, i, vb, ref__load(vals_in, from, vb));
        }
}

int ref_sort(const sortd_sort_desc *desc, void *keys, void *vals, size_t n)
{
        struct ref_order o;
        unsigned kb, vb;
        struct rec *recs, *tmp, *out = NULL;
        unsigned char *keys_in, *vals_in = NULL;

        if (make_order(desc, &o) != 0)
                return -1;
        if (n == 0)
                return 0;
        kb = o.bits / 8;
        vb = (unsigned)ref__payload_bytes(desc->payload);
        if (!keys || (vb && !vals))
                return -1;

        recs = malloc(n * sizeof(*recs));
        tmp = malloc(n * sizeof(*tmp));
        keys_in = malloc(n * kb);
        if (vb)
                vals_in = malloc(n * vb);
        if (recs && tmp && keys_in && (!vb || vals_in)) {
                memcpy(keys_in, keys, n * kb);
                if (vb)
                        memcpy(vals_in, vals, n * vb);
                for (size_t i = 0; o.bits <= 64 && i < n; i++)
                        recs[i] = (struct rec){ref__rec_key(&o, ref__load(keys_in, i, kb)), i};
                out = o.bits == 128 ? sort_wide(desc, keys_in, recs, n)
                                    : sort_recs(&o, recs, tmp, n);
        }
        if (out)
                apply_recs(desc, out, keys, keys_in, vals, vals_in, n, kb, vb);
        free(recs);
        free(tmp);
        free(keys_in);
        free(vals_in);
        return out ? 0 : -1;
}

/* ---- segments and top-k -------------------------------------------------------------------- */

/* Segment i's first key, read here from the offsets: not through common/segments.c. */
static uint64_t seg_start(const sortd_segments *seg, uint64_t i)
{
        if (!seg->offsets)
                return i * seg->row_len;
        return ref__load(seg->offsets, (size_t)i, seg->offset_bytes);
}

/* The request's widths, or -1 for what ref_sort() or the segments' check refuses. */
static int segment_widths(const sortd_sort_desc *desc, const sortd_segments *seg, size_t n,
                          unsigned *kb, unsigned *vb)
{
        struct ref_order o;

        if (make_order(desc, &o) != 0 || sortd_segments_check(seg, n, NULL, 0) != 0)
                return -1;
        *kb = o.bits / 8;
        *vb = (unsigned)ref__payload_bytes(desc->payload);
        return 0;
}

static bool argsort_payload(sortd_payload p)
{
        return p == SORTD_PAYLOAD_ARGSORT32 || p == SORTD_PAYLOAD_ARGSORT64;
}

int ref_sort_segments(const sortd_sort_desc *desc, const sortd_segments *seg, void *keys,
                      void *vals, size_t n)
{
        unsigned kb, vb;

        if (segment_widths(desc, seg, n, &kb, &vb) != 0 || (n && (!keys || (vb && !vals))))
                return -1;
        for (uint64_t i = 0; i < seg->count; i++) {
                uint64_t b = seg_start(seg, i), len = seg_start(seg, i + 1) - b;

                if (len && ref_sort(desc, (unsigned char *)keys + b * kb,
                                    vb ? (unsigned char *)vals + b * vb : NULL, (size_t)len) != 0)
                        return -1; /* out of memory: earlier segments are sorted */
        }
        return 0;
}

/* One segment's first m keys in desc's order, by a stable argsort of a copy of its keys. */
static int topk_one(const sortd_sort_desc *desc, const unsigned char *keys,
                    const unsigned char *vals, size_t len, size_t m, unsigned char *out_keys,
                    unsigned char *out_vals, unsigned kb, unsigned vb)
{
        sortd_sort_desc d = *desc;
        unsigned char *k = malloc(len * kb + 1);
        uint64_t *perm = malloc(len * sizeof(*perm) + 1);

        d.payload = SORTD_PAYLOAD_ARGSORT64;
        if (!k || !perm || (memcpy(k, keys, len * kb), ref_sort(&d, k, perm, len)) != 0) {
                free(k);
                free(perm);
                return -1;
        }
        for (size_t j = 0; j < m; j++) {
                memcpy(out_keys + j * kb, keys + perm[j] * kb, kb);
                if (argsort_payload(desc->payload))
                        ref__store(out_vals, j, vb, perm[j]);
                else if (vb)
                        ref__store(out_vals, j, vb, ref__load(vals, (size_t)perm[j], vb));
        }
        free(k);
        free(perm);
        return 0;
}

int ref_topk(const sortd_sort_desc *desc, const sortd_segments *seg, uint64_t k, const void *keys,
             const void *vals, void *out_keys, void *out_vals, size_t n)
{
        const sortd_segments whole = {.count = 1, .row_len = n};
        unsigned kb, vb;
        uint64_t out = 0;

        seg = seg ? seg : &whole;
        if (segment_widths(desc, seg, n, &kb, &vb) != 0)
                return -1;
        if (k && n &&
            (!keys || !out_keys || (vb && !out_vals) ||
             (vb && !argsort_payload(desc->payload) && !vals)))
                return -1;
        for (uint64_t i = 0; i < seg->count && k; i++) {
                uint64_t b = seg_start(seg, i), len = seg_start(seg, i + 1) - b;
                uint64_t m = k < len ? k : len;

                if (m == 0)
                        continue;
                if (topk_one(desc, (const unsigned char *)keys + b * kb,
                             vb && vals ? (const unsigned char *)vals + b * vb : NULL, (size_t)len,
                             (size_t)m, (unsigned char *)out_keys + out * kb,
                             vb ? (unsigned char *)out_vals + out * vb : NULL, kb, vb) != 0)
                        return -1;
                out += m;
        }
        return 0;
}
