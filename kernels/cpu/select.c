/*
 * Radix select. A key's rank is the bit range of its order-preserving image (keys.h): what
 * alone decides its place. Histogram passes over the ranks narrow, digit by digit from the top,
 * to the prefix of the k-th key's rank: `before` keys have a smaller prefix, `cnt` share it.
 * Digits are as wide as the candidates call for (SORTD__SELECT_MAX_BITS at most), so that one
 * pass over 2^24 uniform keys leaves a few thousand candidates for any small k.
 *
 * Then one gather pass takes, in index order, every key before the prefix and
 * - when the cut is exact (before + cnt = k, or no bits are left: the candidates tie, and the
 *   first k - before of them by index are the ones a stable sort puts first), exactly those k
 *   keys, straight into the outputs, sorted there;
 * - else all candidates too, into private memory, sorted there; the first k are copied out.
 * A stable sort of a gather in index order breaks ties by index, as the contract asks.
 *
 * Where the bit range ends at the key's top bit, the first pass is select_fused.c's: it may
 * gather the keys itself, sparing the gather pass, and it sees keys that are all one value.
 * Later passes see candidates that all tie (their least and greatest rank agree), which makes
 * the cut exact without narrowing through the digits left.
 *
 * Each thread histograms and gathers a contiguous part of the segment, so the threads' gathers
 * lie in index order at offsets their counts give. Every pass reads the keys anew: keys that
 * another process changes between passes make some thread's gather find other counts than its
 * histogram did, and the select starts over from a private copy of the keys. Its writes are
 * bounded by those counts all the while.
 */
#include "select.h"

#include <string.h>

#include "../keys.h"
#include "copy.h"
#include "small.h"
#include "tile.h"
#include "tiny.h"

/* What the passes have decided so far. */
typedef struct cut {
        unsigned shift;  /* the rank's bits below shift are undecided */
        uint64_t hi;     /* the rank's bits from shift up */
        uint64_t prefix; /* the k-th key's rank & hi */
        uint64_t before; /* keys whose rank & hi is below prefix */
        uint64_t cnt;    /* keys with rank & hi = prefix */
        unsigned bits;   /* the next pass's digit width */
} cut;

typedef struct pass {
        const sortd__select *s;
        const unsigned char *keys; /* s->keys, or s->copy */
        sortd__twiddle tw;
        unsigned begin_bit;
        uint64_t range;
        cut c;
        bool exact;
        unsigned char *dst_keys, *dst_vals; /* the gather's */
} pass;

#define part_begin sortd__part_begin

static void run(const pass *p, sortd__pool_fn fn)
{
        if (p->s->nth == 1)
                fn((void *)p, 0, 1);
        else
                sortd__pool_run(p->s->ctx->pool, p->s->nth, fn, (void *)p);
}

SORTD__ALWAYS_INLINE uint64_t rank_of(const pass *p, const unsigned char *keys, size_t i,
                                      unsigned kb, uint64_t *raw)
{
        *raw = sortd__load_elem(keys, i, kb);
        return (sortd__twiddle_forward(p->tw, *raw) >> p->begin_bit) & p->range;
}

/* ---- histogram ---------------------------------------------------------------------------- */

/*
 * Counts the digit of every key with the prefix, and the least and greatest such rank: when
 * they are one, every candidate ties and the cut is exact at once. The digit of the part's
 * first key is counted in a register: with many equal keys, one counter in memory would make
 * every increment wait on the one before.
 */
SORTD__ALWAYS_INLINE void count_as(const pass *p, sortd__cpu_scratch *sc, size_t b, size_t e,
                                   unsigned kb)
{
        const unsigned char *keys = p->keys;
        const uint64_t hi = p->c.hi, prefix = p->c.prefix;
        const unsigned shift = p->c.shift - p->c.bits;
        const uint64_t mask = ((uint64_t)1 << p->c.bits) - 1;
        uint64_t *h = sc->sel_hist, raw, lo = UINT64_MAX, top = 0, same = 0;
        uint64_t dom = b < e ? (rank_of(p, keys, b, kb, &raw) >> shift) & mask : 0;

        for (size_t i = b; i < e; i++) {
                if (i + SORTD__PREFETCH_KEYS < e) /* as a binning pass's keys are */
                        __builtin_prefetch(keys + (i + SORTD__PREFETCH_KEYS) * kb);
                uint64_t r = rank_of(p, keys, i, kb, &raw), d = (r >> shift) & mask;

                if ((r & hi) != prefix)
                        continue;
                lo = r < lo ? r : lo;
                top = r > top ? r : top;
                if (d == dom)
                        same++;
                else
                        h[d]++;
        }
        h[dom] += same;
        sc->sel_min = lo;
        sc->sel_max = top;
}

static void count_worker(void *arg, unsigned tid, unsigned nth)
{
        const pass *p = arg;
        sortd__cpu_scratch *sc = &p->s->scratch[tid];
        size_t b = part_begin(p->s->len, tid, nth), e = part_begin(p->s->len, tid + 1, nth);

        memset(sc->sel_hist, 0, sizeof(uint64_t) << p->c.bits);
        switch (p->s->plan->key_bytes) {
        case 1:
                count_as(p, sc, b, e, 1);
                break;
        case 2:
                count_as(p, sc, b, e, 2);
                break;
        case 4:
                count_as(p, sc, b, e, 4);
                break;
        default:
                count_as(p, sc, b, e, 8);
                break;
        }
}

/* Whether the threads' keys counted all had one value: their least and greatest agree. */
static bool one_value(const sortd__select *s, uint64_t *value)
{
        uint64_t lo = UINT64_MAX, top = 0;

        for (unsigned t = 0; t < s->nth; t++) {
                lo = s->scratch[t].sel_min < lo ? s->scratch[t].sel_min : lo;
                top = s->scratch[t].sel_max > top ? s->scratch[t].sel_max : top;
        }
        *value = lo;
        return lo == top;
}

static unsigned bit_length(uint64_t x)
{
        return x ? 64 - (unsigned)__builtin_clzll(x) : 0;
}

/* A digit for cnt candidates: about 16 of them a bucket, within [4, MAX_BITS] bits. */
static unsigned digit_bits(const cut *c)
{
        unsigned b = bit_length(c->cnt);

        b = b > 8 ? b - 4 : 4;
        b = b > SORTD__SELECT_MAX_BITS ? SORTD__SELECT_MAX_BITS : b;
        return b < c->shift ? b : c->shift;
}

/*
 * The bucket of the k-th key in the threads' counts, and each thread's keys before it and in
 * it. False when the counts hold fewer than k keys: the keys changed since the last pass.
 */
static bool choose(const sortd__select *s, cut *c)
{
        const uint64_t bins = (uint64_t)1 << c->bits;
        uint64_t acc = c->before, in = 0, b;

        for (b = 0; b < bins; b++) {
                in = 0;
                for (unsigned t = 0; t < s->nth; t++)
                        in += s->scratch[t].sel_hist[b];
                if (acc + in >= s->k)
                        break;
                acc += in;
        }
        if (b == bins)
                return false;
        for (unsigned t = 0; t < s->nth; t++) {
                sortd__cpu_scratch *sc = &s->scratch[t];

                for (uint64_t d = 0; d < b; d++)
                        sc->sel_below += sc->sel_hist[d];
                sc->sel_cand = sc->sel_hist[b];
        }
        c->shift -= c->bits;
        c->prefix |= b << c->shift;
        c->hi = c->shift >= 64 ? 0 : c->hi | (((uint64_t)1 << c->bits) - 1) << c->shift;
        c->before = acc;
        c->cnt = in;
        return true;
}

/* ---- gather ------------------------------------------------------------------------------- */

SORTD__ALWAYS_INLINE void gather_as(const pass *p, sortd__cpu_scratch *sc, size_t b, size_t e,
                                    unsigned kb, unsigned vb)
{
        const unsigned char *keys = p->keys, *vals = p->s->vals;
        const uint64_t hi = p->c.hi, prefix = p->c.prefix;
        const uint64_t below = sc->sel_below, take = sc->sel_take;
        uint64_t at = sc->sel_off, got_below = 0, got_cand = 0, raw;

        for (size_t i = b; i < e; i++) {
                uint64_t r = rank_of(p, keys, i, kb, &raw) & hi;

                if (r > prefix)
                        continue;
                if (r < prefix ? got_below++ >= below : got_cand++ >= take)
                        continue;
                sortd__store_elem(p->dst_keys, at, kb, raw);
                if (vb)
                        sortd__store_elem(p->dst_vals, at, vb,
                                          vals ? sortd__load_elem(vals, i, vb) : i);
                at++;
        }
        sc->sel_torn = got_below != below || got_cand != sc->sel_cand;
}

#define GATHER_KB(kb)                                                                              \
        do {                                                                                       \
                if (vb == 0)                                                                       \
                        gather_as(p, sc, b, e, kb, 0);                                             \
                else if (vb == 4)                                                                  \
                        gather_as(p, sc, b, e, kb, 4);                                             \
                else                                                                               \
                        gather_as(p, sc, b, e, kb, 8);                                             \
        } while (0)

static void gather_worker(void *arg, unsigned tid, unsigned nth)
{
        const pass *p = arg;
        sortd__cpu_scratch *sc = &p->s->scratch[tid];
        size_t b = part_begin(p->s->len, tid, nth), e = part_begin(p->s->len, tid + 1, nth);
        unsigned vb = p->s->plan->val_bytes;

        switch (p->s->plan->key_bytes) {
        case 1:
                GATHER_KB(1);
                break;
        case 2:
                GATHER_KB(2);
                break;
        case 4:
                GATHER_KB(4);
                break;
        default:
                GATHER_KB(8);
                break;
        }
}

/* Each thread's share of the gather: how many candidates it takes, and where it writes. */
static uint64_t plan_gather(const pass *p)
{
        uint64_t off = 0, left = p->s->k - p->c.before;

        for (unsigned t = 0; t < p->s->nth; t++) {
                sortd__cpu_scratch *sc = &p->s->scratch[t];

                sc->sel_take = sc->sel_cand;
                if (p->exact) {
                        sc->sel_take = sc->sel_cand < left ? sc->sel_cand : left;
                        left -= sc->sel_take;
                }
                sc->sel_off = off;
                off += sc->sel_below + sc->sel_take;
        }
        return off;
}

/* Whether a thread's gather found other keys than its counts: the keys changed. */
static bool gather(const pass *p)
{
        plan_gather(p);
        run(p, gather_worker);
        for (unsigned t = 0; t < p->s->nth; t++)
                if (p->s->scratch[t].sel_torn)
                        return false;
        return true;
}

/* ---- sorting the gather ------------------------------------------------------------------- */

/* Sorts n gathered keys in place: their values, or their indices, move with them. */
static void sort_gathered(const pass *p, unsigned char *keys, unsigned char *vals, size_t n,
                          bool shared)
{
        sortd__plan plan = *p->s->plan;

        plan.argsort = false;
        plan.shared = shared;
        if (n <= SORTD__TINY_KEYS)
                sortd__tiny_select(&plan, keys, vals, n, n, keys, vals);
        else if (n <= SORTD__SMALL_KEYS)
                sortd__small_sort(&plan, keys, vals, n, &p->s->scratch[0]);
        else
                sortd__onesweep_sort(p->s->ctx, &plan, keys, vals, n);
}

static void copy_out(const pass *p, void *dst, const void *src, size_t bytes)
{
        if (p->s->nth == 1)
                memcpy(dst, src, bytes);
        else
                sortd__pool_copy(p->s->ctx->pool, dst, src, bytes, SORTD__SELECT_COPY_MIN, false);
}

/* The gather's place: the outputs (exact), the segment's private memory, or own_keys. */
static void place_gather(pass *p, uint64_t g)
{
        const sortd__select *s = p->s;
        size_t kbytes = (g * s->plan->key_bytes + 7) / 8 * 8;

        if (p->exact) {
                p->dst_keys = s->out_keys;
                p->dst_vals = s->out_vals;
        } else if (g <= SORTD__SMALL_KEYS) {
                p->dst_keys = s->gather_keys;
                p->dst_vals = s->gather_vals;
        } else {
                p->dst_keys = s->ctx->own_keys;
                p->dst_vals = (unsigned char *)s->ctx->own_keys + kbytes;
        }
}

/* Sorts what the gather wrote and writes the first k results. */
static void finish(const pass *p, uint64_t g)
{
        const sortd__select *s = p->s;
        const unsigned kb = s->plan->key_bytes, vb = s->plan->val_bytes;

        /* The outputs lie in the inputs' memory: shared, they may change under that sort. */
        sort_gathered(p, p->dst_keys, p->dst_vals, g, p->exact && s->plan->shared);
        if (p->exact)
                return;
        copy_out(p, s->out_keys, p->dst_keys, s->k * kb);
        if (vb)
                copy_out(p, s->out_vals, p->dst_vals, s->k * vb);
}

/* ---- the select --------------------------------------------------------------------------- */

/* The largest gather sorted rather than narrowed further, and where it may lie. */
static uint64_t gather_limit(const pass *p, bool own_keys)
{
        const sortd__select *s = p->s;
        uint64_t limit = SORTD__SELECT_GATHER_KEYS;

        limit = limit > 2 * s->k ? limit : 2 * s->k;
        limit = limit > s->len / SORTD__SELECT_GATHER_SHARE ? limit
                                                            : s->len / SORTD__SELECT_GATHER_SHARE;
        /* own_keys holds the keys and values of up to len / 2 keys: 16 bytes each at most */
        if (own_keys)
                return limit < s->len / 2 ? limit : s->len / 2;
        return limit < SORTD__SMALL_KEYS ? limit : SORTD__SMALL_KEYS;
}

/* The fused first pass gathered every key the select needs (select_fused.c): they go where a
   gather pass would have put them, without reading the keys again. */
static bool finish_fused(pass *p, uint64_t g)
{
        const sortd__select *s = p->s;
        sortd__keep keep = {
                .tw = p->tw,
                .begin_bit = p->begin_bit,
                .range = p->range,
                .hi = p->c.hi,
                .prefix = p->c.prefix,
                .take = p->exact ? s->k - p->c.before : UINT64_MAX,
        };

        g = p->exact ? s->k : g;
        p->dst_keys = p->exact ? s->out_keys : s->gather_keys;
        p->dst_vals = p->exact ? s->out_vals : s->gather_vals;
        if (sortd__fused_compact(s, &keep, p->dst_keys, p->dst_vals) != g)
                return false; /* the counts and the gathers come from the same reads: never */
        finish(p, g);
        return true;
}

static bool select_from(const sortd__select *s, const unsigned char *keys, bool own_keys);

/*
 * The fused first pass gathered every candidate, but too many to sort (few distinct keys, say):
 * the select goes on over them alone, compacted in index order at the gather buffers' start,
 * with its own gathers in own_keys, rather than read the whole segment again for each digit.
 * The gathered indices of an argsort are values to it.
 */
static bool narrow_fused(pass *p, uint64_t g)
{
        const sortd__select *s = p->s;
        const unsigned kb = s->plan->key_bytes, vb = s->plan->val_bytes;
        unsigned char *own = s->ctx->own_keys;
        sortd__plan plan = *s->plan;
        sortd__keep keep = {
                .tw = p->tw,
                .begin_bit = p->begin_bit,
                .range = p->range,
                .hi = p->c.hi,
                .prefix = p->c.prefix,
                .take = UINT64_MAX,
        };
        sortd__select sub;

        if (sortd__fused_compact(s, &keep, s->gather_keys, s->gather_vals) != g)
                return false; /* never: see finish_fused() */
        plan.argsort = false;
        sub = (sortd__select){
                .ctx = s->ctx,
                .plan = &plan,
                .keys = s->gather_keys,
                .vals = vb ? s->gather_vals : NULL,
                .len = g,
                .k = s->k,
                .out_keys = s->out_keys,
                .out_vals = s->out_vals,
                /* g <= len / 2 keys and values: 16 bytes each at most */
                .gather_keys = own,
                .gather_vals = own + (g * kb + 7) / 8 * 8,
                .nth = s->nth,
                .scratch = s->scratch,
        };
        return select_from(&sub, sub.keys, false);
}

/* Keys that are all one value: the first k by index are the k first. */
static void write_first(const sortd__select *s, const unsigned char *keys)
{
        const unsigned kb = s->plan->key_bytes, vb = s->plan->val_bytes;

        memcpy(s->out_keys, keys, s->k * kb);
        for (size_t i = 0; vb && i < s->k; i++)
                sortd__store_elem(s->out_vals, i, vb,
                                  s->vals ? sortd__load_elem(s->vals, i, vb) : i);
}

/* The first pass: fused where it applies. True when it found the keys all equal and wrote the
   results: one pass for what would otherwise narrow through every digit. */
static bool count_first(pass *p, sortd__fused *f)
{
        uint64_t v;

        sortd__fused_plan(p->s, p->keys, p->c.bits, f);
        if (!f->on) {
                run(p, count_worker);
                return false;
        }
        sortd__fused_count(p->s, p->keys, p->c.bits, f);
        if (!one_value(p->s, &v))
                return false;
        write_first(p->s, p->keys);
        return true;
}

/* Selects from keys; false when they changed between the passes (nothing written then). */
static bool select_from(const sortd__select *s, const unsigned char *keys, bool own_keys)
{
        unsigned width = s->plan->end_bit - s->plan->begin_bit;
        pass p = {
                .s = s,
                .keys = keys,
                .tw = sortd__twiddle_make(s->plan->key_bytes, s->plan->kind, s->plan->descending),
                .begin_bit = s->plan->begin_bit,
                .range = width == 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1,
                .c = {.shift = width, .cnt = s->len},
        };
        uint64_t g, limit = gather_limit(&p, own_keys);
        sortd__fused f;
        bool first = true;
        uint64_t v;

        for (unsigned t = 0; t < s->nth; t++)
                s->scratch[t].sel_below = 0;
        do {
                p.c.bits = digit_bits(&p.c);
                if (first && count_first(&p, &f))
                        return true;
                if (!first)
                        run(&p, count_worker);
                if (!choose(s, &p.c))
                        return false;
                if (!first && one_value(s, &v)) {
                        /* the candidates tie: their rank is the k-th key's */
                        p.c.shift = 0;
                        p.c.hi = p.range;
                        p.c.prefix = v;
                }
                g = p.c.before + p.c.cnt;
                p.exact = g == s->k || p.c.shift == 0;
                if (first && f.gathers && (p.c.prefix >> p.c.shift) <= f.last) {
                        if (p.exact || g <= SORTD__SMALL_KEYS)
                                return finish_fused(&p, g);
                        if (own_keys && g <= s->len / 2)
                                return narrow_fused(&p, g);
                }
                first = false;
        } while (!p.exact && g > limit);
        if (p.exact)
                g = s->k;
        place_gather(&p, g);
        if (!gather(&p))
                return false;
        finish(&p, g);
        return true;
}

void sortd__select_topk(const sortd__select *s)
{
        if (select_from(s, s->keys, s->may_use_own_keys))
                return;
        /* Only keys another process writes change between passes: a private copy cannot. */
        if (s->nth == 1)
                memcpy(s->copy, s->keys, s->len * s->plan->key_bytes);
        else
                sortd__pool_copy(s->ctx->pool, s->copy, s->keys, s->len * s->plan->key_bytes,
                                 SORTD__SELECT_COPY_MIN, false);
        select_from(s, s->copy, false);
}
