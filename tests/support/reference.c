/*
 * The reference sort: records of (comparison key, input position) sorted by a bottom-up stable
 * merge sort, then the permutation applied to keys and values.
 *
 * Full-width orders compare the keys themselves: unsigned and signed integers by value, floats by
 * IEEE 754 totalOrder (sign first, then the magnitude bits, reversed for negatives). Only a
 * partial bit range goes through the order-preserving unsigned image, since that is where the
 * contract defines the range.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

enum cmp_mode {
        CMP_UNSIGNED, /* rec.key is the value (or a masked image) */
        CMP_SIGNED,   /* rec.key is the value sign-extended to 64 bits */
        CMP_FLOAT,    /* rec.key is the bit pattern; totalOrder */
};

struct rec {
        uint64_t key;
        uint64_t idx;
};

struct order {
        unsigned bits; /* key width */
        enum cmp_mode mode;
        bool descending;
        bool ranged; /* a bit range narrower than the key */
        unsigned begin, end;
};

/* The widths and kinds again, on purpose: nothing here comes from kernels/. */
static const struct {
        unsigned bytes;
        enum cmp_mode mode;
} types[SORTD_KEY_TYPE_COUNT] = {
        [SORTD_KEY_U8] = {1, CMP_UNSIGNED},  [SORTD_KEY_I8] = {1, CMP_SIGNED},
        [SORTD_KEY_U16] = {2, CMP_UNSIGNED}, [SORTD_KEY_I16] = {2, CMP_SIGNED},
        [SORTD_KEY_U32] = {4, CMP_UNSIGNED}, [SORTD_KEY_I32] = {4, CMP_SIGNED},
        [SORTD_KEY_F32] = {4, CMP_FLOAT},    [SORTD_KEY_U64] = {8, CMP_UNSIGNED},
        [SORTD_KEY_I64] = {8, CMP_SIGNED},   [SORTD_KEY_F64] = {8, CMP_FLOAT},
};

static const unsigned payload_bytes[SORTD_PAYLOAD_COUNT] = {
        [SORTD_PAYLOAD_NONE] = 0,      [SORTD_PAYLOAD_VALUES32] = 4,  [SORTD_PAYLOAD_VALUES64] = 8,
        [SORTD_PAYLOAD_ARGSORT32] = 4, [SORTD_PAYLOAD_ARGSORT64] = 8,
};

static uint64_t load(const void *base, size_t i, unsigned bytes)
{
        const unsigned char *p = (const unsigned char *)base + i * bytes;
        uint8_t b;
        uint16_t h;
        uint32_t w;
        uint64_t d;

        switch (bytes) {
        case 1:
                memcpy(&b, p, 1);
                return b;
        case 2:
                memcpy(&h, p, 2);
                return h;
        case 4:
                memcpy(&w, p, 4);
                return w;
        default:
                memcpy(&d, p, 8);
                return d;
        }
}

static void store(void *base, size_t i, unsigned bytes, uint64_t v)
{
        unsigned char *p = (unsigned char *)base + i * bytes;
        uint8_t b = (uint8_t)v;
        uint16_t h = (uint16_t)v;
        uint32_t w = (uint32_t)v;

        switch (bytes) {
        case 1:
                memcpy(p, &b, 1);
                break;
        case 2:
                memcpy(p, &h, 2);
                break;
        case 4:
                memcpy(p, &w, 4);
                break;
        default:
                memcpy(p, &v, 8);
                break;
        }
}

static int make_order(const sortd_sort_desc *d, struct order *o)
{
        unsigned bits, end;

        if ((unsigned)d->key_type >= SORTD_KEY_TYPE_COUNT ||
            (unsigned)d->payload >= SORTD_PAYLOAD_COUNT || (unsigned)d->order >= SORTD_ORDER_COUNT)
                return -1;
        bits = types[d->key_type].bytes * 8;
        end = d->end_bit ? d->end_bit : bits;
        if (end > bits || d->begin_bit >= end)
                return -1;
        *o = (struct order){
                .bits = bits,
                .mode = types[d->key_type].mode,
                .descending = d->order == SORTD_DESCENDING,
                .ranged = d->begin_bit != 0 || end != bits,
                .begin = d->begin_bit,
                .end = end,
        };
        return 0;
}

/* The bits [begin, end) of the order-preserving unsigned image of the key x. */
static uint64_t masked_image(const struct order *o, uint64_t x)
{
        uint64_t all = o->bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << o->bits) - 1;
        uint64_t sign = (uint64_t)1 << (o->bits - 1);
        unsigned width = o->end - o->begin;
        uint64_t img;

        if (o->mode == CMP_SIGNED)
                img = x ^ sign;
        else if (o->mode == CMP_FLOAT)
                img = x & sign ? ~x & all : x ^ sign;
        else
                img = x;
        img >>= o->begin;
        return width == 64 ? img : img & (((uint64_t)1 << width) - 1);
}

/* What a record compares: see enum cmp_mode. */
static struct rec make_rec(const struct order *o, uint64_t x, size_t idx)
{
        uint64_t sign = (uint64_t)1 << (o->bits - 1);

        if (o->ranged)
                x = masked_image(o, x);
        else if (o->mode == CMP_SIGNED && (x & sign))
                x |= ~(sign - 1); /* sign-extend */
        return (struct rec){x, idx};
}

/* IEEE 754 totalOrder of two bit patterns of `bits` bits: a < b. */
static inline bool total_order_less(uint64_t a, uint64_t b, unsigned bits)
{
        uint64_t sign = (uint64_t)1 << (bits - 1);
        bool na = a & sign, nb = b & sign;

        if (na != nb)
                return na;
        return na ? (a & ~sign) > (b & ~sign) : (a & ~sign) < (b & ~sign);
}

/* Strict "a sorts before b"; mode and descending are constants where it is inlined. */
static inline __attribute__((always_inline)) bool rec_less(const struct rec *a, const struct rec *b,
                                                           enum cmp_mode mode, bool descending,
                                                           unsigned bits)
{
        if (descending) {
                const struct rec *t = a;
                a = b;
                b = t;
        }
        switch (mode) {
        case CMP_SIGNED:
                return (int64_t)a->key < (int64_t)b->key;
        case CMP_FLOAT:
                return total_order_less(a->key, b->key, bits);
        default:
                return a->key < b->key;
        }
}

#define RUN 16 /* runs sorted by insertion before merging */

/*
 * Stable: insertion moves a record only past strictly greater ones, and a merge takes from the
 * right run only when its head is strictly less. Returns the buffer holding the result.
 */
static inline __attribute__((always_inline)) struct rec *merge_sort(struct rec *a, struct rec *tmp,
                                                                    size_t n, enum cmp_mode mode,
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

static struct rec *sort_recs(const struct order *o, struct rec *a, struct rec *tmp, size_t n)
{
        unsigned bits = o->bits;

        switch ((o->ranged ? CMP_UNSIGNED : o->mode) * 2 + o->descending) {
        case CMP_SIGNED * 2:
                return merge_sort(a, tmp, n, CMP_SIGNED, false, bits);
        case CMP_SIGNED * 2 + 1:
                return merge_sort(a, tmp, n, CMP_SIGNED, true, bits);
        case CMP_FLOAT * 2:
                return merge_sort(a, tmp, n, CMP_FLOAT, false, bits);
        case CMP_FLOAT * 2 + 1:
                return merge_sort(a, tmp, n, CMP_FLOAT, true, bits);
        case CMP_UNSIGNED * 2 + 1:
                return merge_sort(a, tmp, n, CMP_UNSIGNED, true, bits);
        default:
                return merge_sort(a, tmp, n, CMP_UNSIGNED, false, bits);
        }
}

int ref_compare(const sortd_sort_desc *desc, const void *keys, size_t i, size_t j)
{
        struct order o;
        struct rec a, b;

        if (make_order(desc, &o) != 0)
                return 0;
        a = make_rec(&o, load(keys, i, o.bits / 8), i);
        b = make_rec(&o, load(keys, j, o.bits / 8), j);
        if (o.ranged)
                o.mode = CMP_UNSIGNED;
        if (rec_less(&a, &b, o.mode, o.descending, o.bits))
                return -1;
        return rec_less(&b, &a, o.mode, o.descending, o.bits) ? 1 : 0;
}

int ref_sort(const sortd_sort_desc *desc, void *keys, void *vals, size_t n)
{
        struct order o;
        unsigned kb, vb;
        struct rec *recs, *tmp, *out;
        unsigned char *keys_in, *vals_in = NULL;

        if (!desc || make_order(desc, &o) != 0)
                return -1;
        if (n == 0)
                return 0;
        kb = o.bits / 8;
        vb = payload_bytes[desc->payload];
        if (!keys || (vb && !vals))
                return -1;

        recs = malloc(n * sizeof(*recs));
        tmp = malloc(n * sizeof(*tmp));
        keys_in = malloc(n * kb);
        if (vb)
                vals_in = malloc(n * vb);
        if (!recs || !tmp || !keys_in || (vb && !vals_in)) {
                free(recs);
                free(tmp);
                free(keys_in);
                free(vals_in);
                return -1;
        }
        memcpy(keys_in, keys, n * kb);
        if (vb)
                memcpy(vals_in, vals, n * vb);

        for (size_t i = 0; i < n; i++)
                recs[i] = make_rec(&o, load(keys_in, i, kb), i);
        out = sort_recs(&o, recs, tmp, n);

        for (size_t i = 0; i < n; i++) {
                size_t from = (size_t)out[i].idx;

                store(keys, i, kb, load(keys_in, from, kb));
                if (desc->payload == SORTD_PAYLOAD_ARGSORT32 ||
                    desc->payload == SORTD_PAYLOAD_ARGSORT64)
                        store(vals, i, vb, from);
                else if (vb)
                        store(vals, i, vb, load(vals_in, from, vb));
        }
        free(recs);
        free(tmp);
        free(keys_in);
        free(vals_in);
        return 0;
}

/* ---- segments and top-k -------------------------------------------------------------------- */

/* Segment i's first key, read here from the offsets: not through common/segments.c. */
static uint64_t seg_start(const sortd_segments *seg, uint64_t i)
{
        if (!seg->offsets)
                return i * seg->row_len;
        return load(seg->offsets, (size_t)i, seg->offset_bytes);
}

/* The request's widths, or -1 for what ref_sort() or the segments' check refuses. */
static int segment_widths(const sortd_sort_desc *desc, const sortd_segments *seg, size_t n,
                          unsigned *kb, unsigned *vb)
{
        struct order o;

        if (!desc || make_order(desc, &o) != 0 || sortd_segments_check(seg, n, NULL, 0) != 0)
                return -1;
        *kb = o.bits / 8;
        *vb = payload_bytes[desc->payload];
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
                store(out_keys, j, kb, load(keys, (size_t)perm[j], kb));
                if (argsort_payload(desc->payload))
                        store(out_vals, j, vb, perm[j]);
                else if (vb)
                        store(out_vals, j, vb, load(vals, (size_t)perm[j], vb));
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
