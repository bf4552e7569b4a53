/*
 * The fused first pass of a radix select (select.h). Where the bit range ends at the key's top
 * bit, the first digit of a key's rank depends only on the raw key's top bits: the order map
 * (keys.h) flips bits by the top bit alone. So the pass counts raw top bits, a shift and an
 * increment a key, and maps the counts to digits after. A sample of the keys picks the digits
 * that lie below the k-th key with a wide margin, and the pass also copies those keys (and
 * their values or indices) to the gather buffers, each thread to its own part. The k-th key's
 * digit among them, the select compacts these gathers instead of reading the keys again: one
 * pass over the segment instead of two. The gathers and the counts come from the same reads,
 * so keys another process changes meanwhile cannot make them disagree.
 */
#include <math.h>
#include <string.h>

#include "select.h"
#include "tile.h"

/* Keys sampled, and the least segment that pays for sampling them. Not swept. */
#define SAMPLE 1024u
#define SAMPLE_MIN_LEN (16u * SAMPLE)

static uint64_t digit_of(const sortd__select *s, uint64_t top, unsigned shift, unsigned bits)
{
        const sortd__plan *p = s->plan;
        sortd__twiddle tw = sortd__twiddle_make(p->key_bytes, p->kind, p->descending);
        unsigned width = p->key_bytes * 8;

        /* the image's top bits are the digit: the range ends at the top */
        return (sortd__twiddle_forward(tw, top << shift) >> (width - bits)) &
               (((uint64_t)1 << bits) - 1);
}

/* The digit below which the sample puts the k-th key with a margin of four deviations; false
   when the keys up to it are more than an eighth of the sample (many keys in that digit, as
   with few distinct keys): gathering them would cost what a pass does. */
static bool sample_last(const sortd__select *s, const unsigned char *keys, const sortd__fused *f,
                        unsigned bits, uint64_t *last)
{
        uint16_t count[1u << SORTD__SELECT_MAX_BITS] = {0};
        double mean = (double)SAMPLE * (double)s->k / (double)s->len;
        uint64_t want = (uint64_t)ceil(mean + 4 * sqrt(mean) + 4), sum = 0;

        if (s->len < SAMPLE_MIN_LEN || want > SAMPLE / 8)
                return false;
        for (unsigned j = 0; j < SAMPLE; j++) {
                size_t i = sortd__part_begin(s->len, j, SAMPLE);

                count[f->digit[sortd__load_elem(keys, i, s->plan->key_bytes) >> f->shift]]++;
        }
        for (uint64_t d = 0; d < ((uint64_t)1 << bits); d++)
                if ((sum += count[d]) >= want) {
                        *last = d;
                        return sum <= SAMPLE / 8;
                }
        return false;
}

void sortd__fused_plan(const sortd__select *s, const unsigned char *keys, unsigned bits,
                       sortd__fused *f)
{
        const unsigned width = s->plan->key_bytes * 8;

        f->on = s->plan->end_bit == width;
        f->gathers = false;
        if (!f->on)
                return;
        f->shift = width - bits;
        for (uint64_t t = 0; t < ((uint64_t)1 << bits); t++)
                f->digit[t] = (uint16_t)digit_of(s, t, f->shift, bits);
        f->gathers = sample_last(s, keys, f, bits, &f->last);
        for (uint64_t t = 0; f->gathers && t < ((uint64_t)1 << bits); t++)
                f->take[t] = f->digit[t] <= f->last;
}

typedef struct count_job {
        const sortd__select *s;
        const unsigned char *keys;
        const sortd__fused *f;
        unsigned bits;
} count_job;

SORTD__ALWAYS_INLINE void count_as(const count_job *j, sortd__cpu_scratch *sc, size_t b, size_t e,
                                   unsigned kb, unsigned vb, bool gathers)
{
        const unsigned char *keys = j->keys, *vals = j->s->vals, *take = j->f->take;
        unsigned char *gk = j->s->gather_keys, *gv = j->s->gather_vals;
        const unsigned shift = j->f->shift;
        uint64_t *h = sc->sel_hist, lo = UINT64_MAX, hi = 0, same = 0;
        uint64_t dom = b < e ? sortd__load_elem(keys, b, kb) >> shift : 0;
        size_t at = b;

        /* the first key's top bits in a register, as select.c's count_as() does; the keys
           prefetched as a binning pass's are */
        for (size_t i = b; i < e; i++) {
                if (i + SORTD__PREFETCH_KEYS < e)
                        __builtin_prefetch(keys + (i + SORTD__PREFETCH_KEYS) * kb);
                uint64_t x = sortd__load_elem(keys, i, kb), top = x >> shift;

                lo = x < lo ? x : lo;
                hi = x > hi ? x : hi;
                if (top == dom)
                        same++;
                else
                        h[top]++;
                if (!gathers || !take[top])
                        continue;
                sortd__store_elem(gk, at, kb, x);
                if (vb)
                        sortd__store_elem(gv, at, vb, vals ? sortd__load_elem(vals, i, vb) : i);
                at++;
        }
        h[dom] += same;
        sc->sel_fused = at - b;
        sc->sel_min = lo;
        sc->sel_max = hi;
}

#define COUNT_VB(kb)                                                                               \
        do {                                                                                       \
                if (!j->f->gathers)                                                                \
                        count_as(j, sc, b, e, kb, 0, false);                                       \
                else if (vb == 0)                                                                  \
                        count_as(j, sc, b, e, kb, 0, true);                                        \
                else if (vb == 4)                                                                  \
                        count_as(j, sc, b, e, kb, 4, true);                                        \
                else                                                                               \
                        count_as(j, sc, b, e, kb, 8, true);                                        \
        } while (0)

static void count_worker(void *arg, unsigned tid, unsigned nth)
{
        const count_job *j = arg;
        sortd__cpu_scratch *sc = &j->s->scratch[tid];
        size_t b = sortd__part_begin(j->s->len, tid, nth),
               e = sortd__part_begin(j->s->len, tid + 1, nth);
        unsigned vb = j->s->plan->val_bytes;

        memset(sc->sel_hist, 0, sizeof(uint64_t) << j->bits);
        switch (j->s->plan->key_bytes) {
        case 1:
                COUNT_VB(1);
                break;
        case 2:
                COUNT_VB(2);
                break;
        case 4:
                COUNT_VB(4);
                break;
        default:
                COUNT_VB(8);
                break;
        }
}

/* A thread's counts of raw top bits, as counts of digits. */
static void to_digits(uint64_t *h, const sortd__fused *f, unsigned bits)
{
        uint64_t raw[1u << SORTD__SELECT_MAX_BITS];
        const uint64_t bins = (uint64_t)1 << bits;

        memcpy(raw, h, bins * sizeof(uint64_t));
        memset(h, 0, bins * sizeof(uint64_t));
        for (uint64_t t = 0; t < bins; t++)
                h[f->digit[t]] += raw[t];
}

void sortd__fused_count(const sortd__select *s, const unsigned char *keys, unsigned bits,
                        const sortd__fused *f)
{
        count_job j = {s, keys, f, bits};

        if (s->nth == 1)
                count_worker(&j, 0, 1);
        else
                sortd__pool_run(s->ctx->pool, s->nth, count_worker, &j);
        for (unsigned t = 0; t < s->nth; t++)
                to_digits(s->scratch[t].sel_hist, f, bits);
}

uint64_t sortd__fused_compact(const sortd__select *s, const sortd__keep *keep,
                              unsigned char *dst_keys, unsigned char *dst_vals)
{
        const unsigned kb = s->plan->key_bytes, vb = s->plan->val_bytes;
        uint64_t w = 0, take = keep->take;

        /* w never passes the item it reads: a thread's gather is no longer than its part */
        for (unsigned t = 0; t < s->nth; t++) {
                size_t base = sortd__part_begin(s->len, t, s->nth);

                for (size_t i = base; i < base + s->scratch[t].sel_fused; i++) {
                        uint64_t x = sortd__load_elem(s->gather_keys, i, kb);
                        uint64_t r = (sortd__twiddle_forward(keep->tw, x) >> keep->begin_bit) &
                                     keep->range & keep->hi;

                        if (r > keep->prefix)
                                continue;
                        if (r == keep->prefix && take == 0)
                                continue;
                        take -= r == keep->prefix;
                        sortd__store_elem(dst_keys, w, kb, x);
                        if (vb)
                                sortd__store_elem(dst_vals, w, vb,
                                                  sortd__load_elem(s->gather_vals, i, vb));
                        w++;
                }
        }
        return w;
}
