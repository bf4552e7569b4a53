/*
 * The rankers of a binning pass: they put a tile's keys, and their values, in
 * the thread's local buffer by digit (L2-resident), from where binning.c
 * copies each digit's run out.
 *
 *   counted tile: counted first (sortd__count_tile(), or the histogram
 *                 pass's counts for place 0), then ranked in four parts side
 *                 by side (sortd__rank_parts());
 *   buckets:      ranked straight into buckets sized from the place's global
 *                 histogram, not counted first (sortd__rank_buckets());
 *   dominant:     a keys-only place where one digit holds nearly every key
 *                 keeps that digit's slot in a register (rank.c), or with
 *                 AVX-512 splits its keys from the others without a branch
 *                 (sortd__split_dominant()).
 *
 * The loops are inlined into each of binning.c's variants, which fix key
 * width, value width, argsort and twiddle, so every copy has constant element
 * sizes and no per-key branch on the request.
 */
#ifndef SORTD_CPU_RANK_H
#define SORTD_CPU_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "../keys.h"
#include "lookback.h"
#include "onesweep.h"
#include "plan.h"
#include "tile.h"

/* A tile's ranking invariants, held in registers: the loop stores through
   char pointers, so fields read from memory would be reloaded every key. */
typedef struct sortd__ranker {
        const unsigned char *src_k, *src_v;
        unsigned char *local_k, *local_v;
        sortd__twiddle load_tw, store_tw;
        unsigned shift;
        uint64_t mask;
        size_t begin;
        /* Where the dominant digit's slot dom_first is in the output, when
           its keys are written there straight (rank.c's rank_dominant()). */
        unsigned char *dom_out;
        uint32_t dom_first;
} sortd__ranker;

SORTD__ALWAYS_INLINE sortd__ranker sortd__make_ranker(const sortd__pass *p, sortd__cpu_scratch *s,
                                                      size_t begin, unsigned kb, unsigned vb)
{
        return (sortd__ranker){
                .src_k = p->src_k + begin * kb,
                .src_v = p->src_v + begin * vb,
                .local_k = s->local_k,
                .local_v = s->local_v,
                .load_tw = p->load_tw,
                .store_tw = p->store_tw,
                .shift = p->shift,
                .mask = p->mask,
                .begin = begin,
        };
}

SORTD__ALWAYS_INLINE uint64_t sortd__rank_load(const sortd__ranker r, size_t i, unsigned kb,
                                               bool tw)
{
        uint64_t y = sortd__load_elem(r.src_k, i, kb);

        return tw ? sortd__twiddle_forward(r.load_tw, y) : y;
}

/* Puts key i, loaded as y, and its value at slot j of the local buffer. */
SORTD__ALWAYS_INLINE void sortd__rank_store(const sortd__ranker r, uint32_t j, uint64_t y, size_t i,
                                            unsigned kb, unsigned vb, bool gen, bool tw)
{
        sortd__store_elem(r.local_k, j, kb, tw ? sortd__twiddle_inverse(r.store_tw, y) : y);
        if (vb)
                sortd__store_elem(r.local_v, j, vb,
                                  gen ? r.begin + i : sortd__load_elem(r.src_v, i, vb));
}

SORTD__ALWAYS_INLINE void sortd__rank_key(const sortd__ranker r, uint32_t *lofs, size_t i,
                                          unsigned kb, unsigned vb, bool gen, bool tw)
{
        uint64_t y = sortd__rank_load(r, i, kb, tw);

        sortd__rank_store(r, lofs[sortd__digit_of(y, r.shift, r.mask)]++, y, i, kb, vb, gen, tw);
}

/* Prefetches the line of keys from key i of the tile on, and their values. */
SORTD__ALWAYS_INLINE void sortd__prefetch_keys(const sortd__ranker r, size_t i, unsigned kb,
                                               unsigned vb, bool gen)
{
        __builtin_prefetch(r.src_k + i * kb);
        if (vb && !gen)
                for (size_t b = 0; b < (size_t)SORTD__LINE / kb * vb; b += SORTD__LINE)
                        __builtin_prefetch(r.src_v + i * vb + b);
}

/* Ranks keys [0, len) of the tile in `parts` parts side by side, as
   sortd__stream_len() describes; next[k][d] is digit d's next slot in part k. Each
   part's keys SORTD__PREFETCH_KEYS ahead are prefetched a line at a time. */
SORTD__ALWAYS_INLINE void sortd__rank_parts(const sortd__ranker r, uint32_t (*next)[SORTD__RADIX],
                                            unsigned parts, size_t len, unsigned kb, unsigned vb,
                                            bool gen, bool tw)
{
        const size_t q = len / parts, line = SORTD__LINE / kb;
        size_t j = 0;

        for (; j + SORTD__PREFETCH_KEYS + line <= q; j += line) {
                for (unsigned k = 0; k < parts; k++)
                        sortd__prefetch_keys(r, k * q + j + SORTD__PREFETCH_KEYS, kb, vb, gen);
                for (size_t i = j; i < j + line; i++)
                        for (unsigned k = 0; k < parts; k++)
                                sortd__rank_key(r, next[k], k * q + i, kb, vb, gen, tw);
        }
        for (; j < q; j++)
                for (unsigned k = 0; k < parts; k++)
                        sortd__rank_key(r, next[k], k * q + j, kb, vb, gen, tw);
        for (size_t i = parts * q; i < len; i++)
                sortd__rank_key(r, next[parts - 1], i, kb, vb, gen, tw);
}

static inline void sortd__sum_parts(sortd__cpu_scratch *s)
{
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint32_t t = 0;

                for (unsigned k = 0; k < SORTD__STREAMS; k++)
                        t += s->counts[k][d];
                s->total[d] = t;
        }
}

SORTD__ALWAYS_INLINE void sortd__count_tile(const sortd__pass *p, sortd__cpu_scratch *s,
                                            size_t begin, size_t len, unsigned kb, bool tw)
{
        const unsigned char *src = p->src_k + begin * kb;
        const sortd__twiddle ltw = p->load_tw;
        const unsigned shift = p->shift;
        const uint64_t mask = p->mask;
        const size_t q = sortd__stream_len(len);
        uint32_t(*c)[SORTD__RADIX] = s->counts;

#define LOAD_DIGIT(j)                                                                              \
        sortd__digit_of(tw ? sortd__twiddle_forward(ltw, sortd__load_elem(src, (j), kb))           \
                           : sortd__load_elem(src, (j), kb),                                       \
                        shift, mask)
        /* Two counter sets per part, alternating, halve the chains again. */
        uint32_t(*c2)[SORTD__RADIX] = s->counts2;
        size_t j = 0;

        memset(c, 0, sizeof(s->counts));
        memset(c2, 0, sizeof(s->counts2));
        for (; j + 2 <= q; j += 2)
                for (unsigned k = 0; k < SORTD__STREAMS; k++) {
                        c[k][LOAD_DIGIT(k * q + j)]++;
                        c2[k][LOAD_DIGIT(k * q + j + 1)]++;
                }
        for (; j < q; j++)
                for (unsigned k = 0; k < SORTD__STREAMS; k++)
                        c[k][LOAD_DIGIT(k * q + j)]++;
        for (size_t i = SORTD__STREAMS * q; i < len; i++)
                c[SORTD__STREAMS - 1][LOAD_DIGIT(i)]++;
#undef LOAD_DIGIT
        for (unsigned k = 0; k < SORTD__STREAMS; k++)
                for (unsigned d = 0; d < SORTD__RADIX; d++)
                        c[k][d] += c2[k][d];
        sortd__sum_parts(s);
}

/* The tile's counts from the histogram pass (place 0 only). */
static inline void sortd__load_counts(const sortd__pass *p, sortd__cpu_scratch *s, size_t t)
{
        memcpy(s->counts, p->ctx->tile_counts[t], sizeof(s->counts));
        sortd__sum_parts(s);
}

/* Ranks a keys-only tile through a register for digit dom, nearly every key
   (rank.c): in SORTD__STREAMS parts where `parts`, its keys straight to the
   output where `direct` (r aimed by sortd__aim_dominant()). The table is
   indexed [in parts][direct][twiddle][log2 key bytes]. */
typedef void (*sortd__dominant_fn)(const sortd__ranker *r, uint32_t (*next)[SORTD__RADIX],
                                   unsigned dom, size_t len);
extern const sortd__dominant_fn sortd__dominant_table[2][2][2][4];

SORTD__ALWAYS_INLINE void sortd__rank_dominant(const sortd__ranker *r,
                                               uint32_t (*next)[SORTD__RADIX], bool parts,
                                               bool direct, unsigned dom, size_t len, unsigned kb,
                                               bool tw)
{
        sortd__dominant_table[parts][direct][tw][sortd__log2_bytes(kb)](r, next, dom, len);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SORTD__HAVE_SPLIT 1
/* Ranks a tile of u32 keys, not mapped, whose digit dom is nearly every key,
   with AVX-512F (rank.c); `others` holds a tile. */
void sortd__split_dominant(const sortd__ranker *r, uint32_t *next, unsigned dom, size_t len,
                           uint32_t *others);
#else
#define SORTD__HAVE_SPLIT 0
#endif
/* Whether this CPU can run sortd__split_dominant(). */
bool sortd__can_split(void);

/* Sets r up to write the dominant digit's keys straight to the output, slot
   `first` to its place s->excl[dom]. */
SORTD__ALWAYS_INLINE void sortd__aim_dominant(const sortd__pass *p, const sortd__cpu_scratch *s,
                                              sortd__ranker *r, uint32_t first, unsigned kb)
{
        r->dom_out = p->dst_k + s->excl[p->dominant] * kb;
        r->dom_first = first;
}

/*
 * Ranks a counted tile (s->counts) in SORTD__STREAMS parts; first[d] is
 * digit d's first slot. The dominant digit's keys are ranked through
 * registers here too: four counters bumped in turn still wait on each other's
 * stores (q = 8 keys, 2 threads, 2^26 u32: 2-3%).
 */
SORTD__ALWAYS_INLINE void sortd__rank_counted(const sortd__pass *p, sortd__cpu_scratch *s,
                                              size_t begin, size_t len, uint32_t *first,
                                              unsigned kb, unsigned vb, bool gen, bool tw)
{
        uint32_t(*lofs)[SORTD__RADIX] = s->local_off;
        uint32_t sum = 0;

        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                first[d] = sum;
                for (unsigned k = 0; k < SORTD__STREAMS; k++) {
                        lofs[k][d] = sum;
                        sum += s->counts[k][d];
                }
        }
        const sortd__ranker r = sortd__make_ranker(p, s, begin, kb, vb);
        if (!vb && p->dominant >= 0) {
                sortd__ranker rd = r;

                if (p->direct)
                        sortd__aim_dominant(p, s, &rd, first[p->dominant], kb);
                sortd__rank_dominant(&rd, lofs, true, p->direct, (unsigned)p->dominant, len, kb,
                                     tw);
        } else {
                sortd__rank_parts(r, lofs, SORTD__STREAMS, len, kb, vb, gen, tw);
        }
}

/* How many of the tile's keys have digit d; four at a time where they are
   u32 and not mapped on load. */
SORTD__ALWAYS_INLINE uint32_t sortd__count_digit(const sortd__ranker r, unsigned d, size_t len,
                                                 unsigned kb, bool tw)
{
        uint32_t c = 0;
        size_t i = 0;

#if defined(__SSE2__)
        if (kb == 4 && (!tw || sortd__twiddle_is_identity(r.load_tw))) {
                const __m128i mask = _mm_set1_epi32((int)r.mask), want = _mm_set1_epi32((int)d);
                const __m128i shift = _mm_cvtsi32_si128((int)r.shift);
                __m128i acc = _mm_setzero_si128();
                uint32_t lanes[4];

                for (; i + 4 <= len; i += 4) {
                        __m128i k = _mm_loadu_si128((const __m128i *)(r.src_k + 4 * i));
                        __m128i digit = _mm_and_si128(_mm_srl_epi32(k, shift), mask);

                        acc = _mm_sub_epi32(acc, _mm_cmpeq_epi32(digit, want));
                }
                _mm_storeu_si128((__m128i *)lanes, acc);
                c = lanes[0] + lanes[1] + lanes[2] + lanes[3];
        }
#endif
        for (; i < len; i++)
                c += sortd__digit_of(sortd__rank_load(r, i, kb, tw), r.shift, r.mask) == d;
        return c;
}

/*
 * Ranks the tile straight into per-digit buckets sized from the place's
 * global histogram, so the tile is read once and not counted first: counting
 * cost a quarter of a binning pass's instructions. Buckets hold the expected
 * count plus five standard deviations, so independent keys overrun one only
 * by the rarest chance; keys that cluster (sorted input) do overrun, which is
 * seen after the tile and answered by counting first. Returns whether every
 * key fit.
 *
 * A dominant digit written direct needs its place before the ranking: the
 * tile counts that digit alone (cheap: one compare a key, no counter in
 * memory) and runs the chained scan for it first; *scanned names it then,
 * and is -1 otherwise.
 */
SORTD__ALWAYS_INLINE bool sortd__rank_buckets(const sortd__pass *p, sortd__cpu_scratch *s, size_t t,
                                              size_t begin, size_t len, unsigned kb, unsigned vb,
                                              bool gen, bool tw, int *scanned)
{
        uint32_t *next = s->local_off[0];
        /* const, and copied for the out-of-line call below, or the plain
           loop reads its fields from the stack (-10% for uniform keys). */
        const sortd__ranker r = sortd__make_ranker(p, s, begin, kb, vb);
        bool fit = true;

        *scanned = -1;
        memcpy(next, p->bucket_start, SORTD__RADIX * sizeof(*next));
        /* sortd__pass_make() names a dominant digit for keys only; testing vb, a
           constant, also keeps the second loop out of the variants that move
           values, where its mere presence cost the plain loop 15% (u32
           argsort, 2^25, 2 threads: 305 -> 258 Mkeys/s). */
        if (!vb && p->dominant >= 0) {
                const unsigned dom = (unsigned)p->dominant;
                sortd__ranker rd = r;

#if SORTD__HAVE_SPLIT
                if (kb == 4 && !tw && p->split)
                        sortd__split_dominant(&r, next, dom, len, (uint32_t *)s->local_v);
                else
#endif
                {
                        if (p->direct) {
                                sortd__look_back_digit(p, s, t, dom,
                                                       sortd__count_digit(r, dom, len, kb, tw));
                                *scanned = (int)dom;
                                sortd__aim_dominant(p, s, &rd, next[dom], kb);
                        }
                        sortd__rank_dominant(&rd, s->local_off, false, p->direct, dom, len, kb, tw);
                }
        } else {
                sortd__rank_parts(r, s->local_off, 1, len, kb, vb, gen, tw);
        }
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                s->total[d] = next[d] - p->bucket_start[d];
                fit &= s->total[d] <= p->bucket_cap[d];
        }
        return fit;
}

#endif
