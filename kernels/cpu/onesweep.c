/*
 * Onesweep LSD radix sort on CPU threads (Adinets & Merrill, 2022), adapted:
 *
 *   histogram: one pass over the keys builds the 256-bin histogram of every
 *              digit place at once, the threads taking its tiles from an
 *              atomic ticket;
 *   scan:      exclusive scan per place; a place with one non-empty bin is
 *              skipped (every key lands where it is);
 *   binning:   per remaining place, tiles are taken from an atomic ticket, so
 *              a tile's predecessors have always started. A tile counts its
 *              digits, publishes them (flag LOCAL), looks back over its
 *              predecessors to the first INCLUSIVE prefix, publishes its own,
 *              ranks its keys by digit into a thread-local buffer (the
 *              per-digit staging) and writes each digit's run out, so writes
 *              to memory are contiguous whole cache lines but for run ends.
 *
 * Keys are stored twiddled (keys.h) between the first and the last pass; the
 * first pass applies the map when it loads, the last undoes it when it stores.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "../keys.h"
#include "histogram.h"
#include "lookback.h"
#include "onesweep.h"
#include "plan.h"
#include "tile.h"

#define ALWAYS_INLINE SORTD__ALWAYS_INLINE

struct copy_job {
        const sortd__cpu_ctx *ctx;
        unsigned char *dst_k, *dst_v;
        size_t n;
        unsigned key_bytes, val_bytes;
};

static size_t chunk_begin(size_t n, unsigned tid, unsigned nth)
{
        return (size_t)((unsigned __int128)n * tid / nth);
}

static unsigned threads_for(const sortd__cpu_ctx *ctx, size_t n)
{
        size_t t = n / SORTD__KEYS_PER_THREAD;

        if (t < 1)
                return 1;
        return t < ctx->threads ? (unsigned)t : ctx->threads;
}

/* ---- binning pass: one tile -------------------------------------------- */

/*
 * The inner loops are instantiated per key width, value width, argsort and
 * twiddle (TW: the pass maps keys on load or store), so each copy has
 * constant element sizes and no per-key branch on the request.
 */

static void sum_parts(sortd__cpu_scratch *s)
{
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint32_t t = 0;

                for (unsigned k = 0; k < SORTD__STREAMS; k++)
                        t += s->counts[k][d];
                s->total[d] = t;
        }
}

ALWAYS_INLINE void count_tile(const sortd__pass *p, sortd__cpu_scratch *s, size_t begin, size_t len,
                              unsigned kb, bool tw)
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
        sum_parts(s);
}

/* The tile's counts from the histogram pass (place 0 only). */
static void load_counts(const sortd__pass *p, sortd__cpu_scratch *s, size_t t)
{
        memcpy(s->counts, p->ctx->tile_counts[t], sizeof(s->counts));
        sum_parts(s);
}

/* Copies a digit's run of a tile from the local buffer to its place; with
   streaming stores for the whole lines in the middle of the run. */
ALWAYS_INLINE void copy_run(unsigned char *dst, const unsigned char *src, size_t bytes, bool stream)
{
#if defined(__SSE2__)
        if (stream && bytes >= 2 * SORTD__LINE) {
                size_t head = (SORTD__LINE - (uintptr_t)dst % SORTD__LINE) % SORTD__LINE;

                memcpy(dst, src, head);
                dst += head, src += head, bytes -= head;
                for (; bytes >= SORTD__LINE;
                     dst += SORTD__LINE, src += SORTD__LINE, bytes -= SORTD__LINE) {
                        const __m128i *s = (const __m128i *)src;
                        __m128i *d = (__m128i *)dst;

                        _mm_stream_si128(d, _mm_loadu_si128(s));
                        _mm_stream_si128(d + 1, _mm_loadu_si128(s + 1));
                        _mm_stream_si128(d + 2, _mm_loadu_si128(s + 2));
                        _mm_stream_si128(d + 3, _mm_loadu_si128(s + 3));
                }
        }
#endif
        memcpy(dst, src, bytes);
}

/* A tile's ranking invariants, held in registers: the loop stores through
   char pointers, so fields read from memory would be reloaded every key. */
struct ranker {
        const unsigned char *src_k, *src_v;
        unsigned char *local_k, *local_v;
        sortd__twiddle load_tw, store_tw;
        unsigned shift;
        uint64_t mask;
        size_t begin;
        /* Where the dominant digit's slot dom_first is in the output, when
           its keys are written there straight (rank_dominant(), direct). */
        unsigned char *dom_out;
        uint32_t dom_first;
};

ALWAYS_INLINE struct ranker make_ranker(const sortd__pass *p, sortd__cpu_scratch *s, size_t begin,
                                        unsigned kb, unsigned vb)
{
        return (struct ranker){
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

ALWAYS_INLINE uint64_t rank_load(const struct ranker r, size_t i, unsigned kb, bool tw)
{
        uint64_t y = sortd__load_elem(r.src_k, i, kb);

        return tw ? sortd__twiddle_forward(r.load_tw, y) : y;
}

/* Puts key i, loaded as y, and its value at slot j of the local buffer. */
ALWAYS_INLINE void rank_store(const struct ranker r, uint32_t j, uint64_t y, size_t i, unsigned kb,
                              unsigned vb, bool gen, bool tw)
{
        sortd__store_elem(r.local_k, j, kb, tw ? sortd__twiddle_inverse(r.store_tw, y) : y);
        if (vb)
                sortd__store_elem(r.local_v, j, vb,
                                  gen ? r.begin + i : sortd__load_elem(r.src_v, i, vb));
}

ALWAYS_INLINE void rank_key(const struct ranker r, uint32_t *lofs, size_t i, unsigned kb,
                            unsigned vb, bool gen, bool tw)
{
        uint64_t y = rank_load(r, i, kb, tw);

        rank_store(r, lofs[sortd__digit_of(y, r.shift, r.mask)]++, y, i, kb, vb, gen, tw);
}

/* Prefetches the line of keys from key i of the tile on, and their values. */
ALWAYS_INLINE void prefetch_keys(const struct ranker r, size_t i, unsigned kb, unsigned vb,
                                 bool gen)
{
        __builtin_prefetch(r.src_k + i * kb);
        if (vb && !gen)
                for (size_t b = 0; b < (size_t)SORTD__LINE / kb * vb; b += SORTD__LINE)
                        __builtin_prefetch(r.src_v + i * vb + b);
}

/* Ranks keys [0, len) of the tile in `parts` parts side by side, as
   sortd__stream_len() describes; next[k][d] is digit d's next slot in part k. Each
   part's keys SORTD__PREFETCH_KEYS ahead are prefetched a line at a time. */
ALWAYS_INLINE void rank_parts(const struct ranker r, uint32_t (*next)[SORTD__RADIX], unsigned parts,
                              size_t len, unsigned kb, unsigned vb, bool gen, bool tw)
{
        const size_t q = len / parts, line = SORTD__LINE / kb;
        size_t j = 0;

        for (; j + SORTD__PREFETCH_KEYS + line <= q; j += line) {
                for (unsigned k = 0; k < parts; k++)
                        prefetch_keys(r, k * q + j + SORTD__PREFETCH_KEYS, kb, vb, gen);
                for (size_t i = j; i < j + line; i++)
                        for (unsigned k = 0; k < parts; k++)
                                rank_key(r, next[k], k * q + i, kb, vb, gen, tw);
        }
        for (; j < q; j++)
                for (unsigned k = 0; k < parts; k++)
                        rank_key(r, next[k], k * q + j, kb, vb, gen, tw);
        for (size_t i = parts * q; i < len; i++)
                rank_key(r, next[parts - 1], i, kb, vb, gen, tw);
}

/* Asks early for the lines at the ends of a run that it only partly fills:
   copy_run() writes those with plain stores, each of which reads its line
   first, and copying the runs one after another waited on 512 such reads a
   tile (u32 uniform, 2^26: 1.03-1.06x faster with the ends asked for). */
ALWAYS_INLINE void prefetch_run_ends(unsigned char *dst, size_t bytes)
{
        if ((uintptr_t)dst % SORTD__LINE)
                __builtin_prefetch(dst, 1);
        if ((uintptr_t)(dst + bytes) % SORTD__LINE)
                __builtin_prefetch(dst + bytes - 1, 1);
}

/* Writes each digit's run of the local buffer, from the digit's first slot,
   to its place in the output. */
ALWAYS_INLINE void write_runs(const sortd__pass *p, const sortd__cpu_scratch *s,
                              const uint32_t *first, int skip, unsigned kb, unsigned vb)
{
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint32_t c = s->total[d];

                if (!c || (int)d == skip)
                        continue;
                prefetch_run_ends(p->dst_k + s->excl[d] * kb, (size_t)c * kb);
                if (vb)
                        prefetch_run_ends(p->dst_v + s->excl[d] * vb, (size_t)c * vb);
        }
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint32_t c = s->total[d];

                if (!c || (int)d == skip)
                        continue;
                copy_run(p->dst_k + s->excl[d] * kb, s->local_k + (size_t)first[d] * kb,
                         (size_t)c * kb, p->stream);
                if (vb)
                        copy_run(p->dst_v + s->excl[d] * vb, s->local_v + (size_t)first[d] * vb,
                                 (size_t)c * vb, p->stream);
        }
}

/* A non-temporal store of one key. */
ALWAYS_INLINE void stream_elem(unsigned char *p, size_t i, unsigned eb, uint64_t x)
{
#if defined(__SSE2__) && defined(__x86_64__)
        if (eb == 4) {
                _mm_stream_si32((int *)(p + 4 * i), (int)x);
                return;
        }
        if (eb == 8) {
                _mm_stream_si64((long long *)(p + 8 * i), (long long)x);
                return;
        }
#endif
        sortd__store_elem(p, i, eb, x);
}

/*
 * Nearly every key of the place has digit dom (low-entropy keys): its slot
 * stays in a register and a predicted branch takes the rare other keys,
 * instead of bumping one counter in memory key after key, where each bump
 * waits on the last one's store (0.52 ns/key to count q = 8 keys against
 * 0.28 for uniform ones). Direct, dom's keys skip the local buffer and go to
 * the output with non-temporal stores: nearly the whole tile is then read
 * and written once instead of twice.
 */
ALWAYS_INLINE void rank_dominant_key(const struct ranker r, uint32_t *next, uint32_t *at,
                                     unsigned dom, size_t i, unsigned kb, bool tw, bool direct)
{
        uint64_t y = rank_load(r, i, kb, tw);
        unsigned d = sortd__digit_of(y, r.shift, r.mask);

        if (__builtin_expect(d != dom, 0))
                rank_store(r, next[d]++, y, i, kb, 0, false, tw);
        else if (direct)
                stream_elem(r.dom_out, (*at)++ - r.dom_first, kb,
                            tw ? sortd__twiddle_inverse(r.store_tw, y) : y);
        else
                rank_store(r, (*at)++, y, i, kb, 0, false, tw);
}

/* Ranks a tile of keys only, in `parts` parts side by side as rank_parts()
   does, the next slots of part k being next[k]. */
ALWAYS_INLINE void rank_dominant(const struct ranker r, uint32_t (*next)[SORTD__RADIX],
                                 unsigned parts, unsigned dom, size_t len, unsigned kb, bool tw,
                                 bool direct)
{
        const size_t q = len / parts;
        uint32_t at[SORTD__STREAMS];

        for (unsigned k = 0; k < parts; k++)
                at[k] = next[k][dom];
        for (size_t j = 0; j < q; j++)
                for (unsigned k = 0; k < parts; k++)
                        rank_dominant_key(r, next[k], &at[k], dom, k * q + j, kb, tw, direct);
        for (size_t i = parts * q; i < len; i++)
                rank_dominant_key(r, next[parts - 1], &at[parts - 1], dom, i, kb, tw, direct);
        for (unsigned k = 0; k < parts; k++)
                next[k][dom] = at[k];
}

/* Out of line, so that the loop's invariants get registers of their own
   rather than the spill slots of the pass around it: q = 8 keys sorted
   2-3% faster (2 threads, 2^26 u32). */
typedef void (*dominant_fn)(const struct ranker *r, uint32_t (*next)[SORTD__RADIX], unsigned dom,
                            size_t len);
#define DOMINANT_FN(KB, TW, PARTS, DIRECT)                                                         \
        static __attribute__((noinline)) void rank_dominant_##KB##_##TW##_##PARTS##_##DIRECT(      \
                const struct ranker *r, uint32_t(*next)[SORTD__RADIX], unsigned dom, size_t len)   \
        {                                                                                          \
                rank_dominant(*r, next, PARTS, dom, len, KB, TW, DIRECT);                          \
        }
#define DOMINANT_WIDTHS(TW, PARTS, DIRECT)                                                         \
        DOMINANT_FN(1, TW, PARTS, DIRECT)                                                          \
        DOMINANT_FN(2, TW, PARTS, DIRECT)                                                          \
        DOMINANT_FN(4, TW, PARTS, DIRECT) DOMINANT_FN(8, TW, PARTS, DIRECT)
#define DOMINANT_TWIDDLES(PARTS, DIRECT)                                                           \
        DOMINANT_WIDTHS(0, PARTS, DIRECT) DOMINANT_WIDTHS(1, PARTS, DIRECT)
DOMINANT_TWIDDLES(1, 0)
DOMINANT_TWIDDLES(1, 1)
DOMINANT_TWIDDLES(4, 0)
DOMINANT_TWIDDLES(4, 1)
_Static_assert(SORTD__STREAMS == 4, "dominant_table's parts");

#define DOMINANT_ROW(TW, PARTS, DIRECT)                                                            \
        {                                                                                          \
                rank_dominant_1_##TW##_##PARTS##_##DIRECT,                                         \
                        rank_dominant_2_##TW##_##PARTS##_##DIRECT,                                 \
                        rank_dominant_4_##TW##_##PARTS##_##DIRECT,                                 \
                        rank_dominant_8_##TW##_##PARTS##_##DIRECT                                  \
        }
#define DOMINANT_PLANE(PARTS, DIRECT)                                                              \
        {                                                                                          \
                DOMINANT_ROW(0, PARTS, DIRECT), DOMINANT_ROW(1, PARTS, DIRECT)                     \
        }
/* Indexed [in parts][direct][twiddle][log2 key bytes]. */
static const dominant_fn dominant_table[2][2][2][4] = {
        {DOMINANT_PLANE(1, 0), DOMINANT_PLANE(1, 1)},
        {DOMINANT_PLANE(4, 0), DOMINANT_PLANE(4, 1)},
};

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SPLIT 1
#else
#define HAVE_SPLIT 0
#endif
#if HAVE_SPLIT
/*
 * A tile of u32 keys, not mapped, split into the dominant digit's keys and the
 * others sixteen at a time, without a branch: AVX-512 compresses a group's
 * dominant keys into their bucket and the others into a list, which is then
 * ranked as usual. The branch of rank_dominant() mispredicts on each key that
 * is not dominant (3% of q = 8 keys), and that cost more than all the rest of
 * the ranking: q = 8 keys sorted 1.56x faster with the split (2 threads,
 * 2^26 u32). Each store writes sixteen slots; those past the run are
 * garbage, overwritten when the others are ranked or never copied out
 * (plan_buckets() leaves a tile free past the buckets).
 */
__attribute__((target("avx512f,popcnt"))) static void
split_dominant(const struct ranker *r, uint32_t *next, unsigned dom, size_t len, uint32_t *others)
{
        const __m512i mask = _mm512_set1_epi32((int)r->mask), want = _mm512_set1_epi32((int)dom);
        const __m128i shift = _mm_cvtsi32_si128((int)r->shift);
        uint32_t *local = (uint32_t *)r->local_k, at = next[dom];
        size_t n_others = 0, i = 0;

        for (; i + 16 <= len; i += 16) {
                if (i + SORTD__PREFETCH_KEYS < len)
                        __builtin_prefetch(r->src_k + 4 * (i + SORTD__PREFETCH_KEYS));
                __m512i k = _mm512_loadu_si512(r->src_k + 4 * i);
                __m512i digit = _mm512_and_si512(_mm512_srl_epi32(k, shift), mask);
                __mmask16 is = _mm512_cmpeq_epi32_mask(digit, want);

                _mm512_storeu_si512(local + at, _mm512_maskz_compress_epi32(is, k));
                _mm512_storeu_si512(others + n_others,
                                    _mm512_maskz_compress_epi32((__mmask16)~is, k));
                at += (uint32_t)__builtin_popcount(is);
                n_others += 16 - (size_t)__builtin_popcount(is);
        }
        for (; i < len; i++) {
                uint32_t y = (uint32_t)sortd__load_elem(r->src_k, i, 4);

                if (sortd__digit_of(y, r->shift, r->mask) == dom)
                        local[at++] = y;
                else
                        others[n_others++] = y;
        }
        next[dom] = at;
        for (size_t j = 0; j < n_others; j++)
                local[next[sortd__digit_of(others[j], r->shift, r->mask)]++] = others[j];
}
#endif

/* Sets r up to write the dominant digit's keys straight to the output, slot
   `first` to its place s->excl[dom]. */
ALWAYS_INLINE void aim_dominant(const sortd__pass *p, const sortd__cpu_scratch *s, struct ranker *r,
                                uint32_t first, unsigned kb)
{
        r->dom_out = p->dst_k + s->excl[p->dominant] * kb;
        r->dom_first = first;
}

/*
 * Ranks the tile's keys by digit into the thread's local buffer (L2-resident),
 * then writes each digit's run to its place: the per-digit staging that makes
 * global writes contiguous, whole cache lines but for the ends of each run.
 */
ALWAYS_INLINE void scatter_tile(const sortd__pass *p, sortd__cpu_scratch *s, size_t begin,
                                size_t len, unsigned kb, unsigned vb, bool gen, bool tw)
{
        uint32_t(*lofs)[SORTD__RADIX] = s->local_off;
        uint32_t first[SORTD__RADIX], sum = 0;

        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                first[d] = sum;
                for (unsigned k = 0; k < SORTD__STREAMS; k++) {
                        lofs[k][d] = sum;
                        sum += s->counts[k][d];
                }
        }
        const struct ranker r = make_ranker(p, s, begin, kb, vb);
        /* The dominant digit's keys are ranked through registers here too:
           four counters bumped in turn still wait on each other's stores
           (q = 8 keys, 2 threads, 2^26 u32: 2-3%). */
        if (!vb && p->dominant >= 0) {
                struct ranker rd = r;

                if (p->direct)
                        aim_dominant(p, s, &rd, first[p->dominant], kb);
                dominant_table[1][p->direct][tw][sortd__log2_bytes(kb)](&rd, lofs,
                                                                        (unsigned)p->dominant, len);
        } else {
                rank_parts(r, lofs, SORTD__STREAMS, len, kb, vb, gen, tw);
        }
        write_runs(p, s, first, p->direct ? p->dominant : -1, kb, vb);
}

/* How many of the tile's keys have digit d; four at a time where they are
   u32 and not mapped on load. */
ALWAYS_INLINE uint32_t count_digit(const struct ranker r, unsigned d, size_t len, unsigned kb,
                                   bool tw)
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
                c += sortd__digit_of(rank_load(r, i, kb, tw), r.shift, r.mask) == d;
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
ALWAYS_INLINE bool rank_buckets(const sortd__pass *p, sortd__cpu_scratch *s, size_t t, size_t begin,
                                size_t len, unsigned kb, unsigned vb, bool gen, bool tw,
                                int *scanned)
{
        uint32_t *next = s->local_off[0];
        /* const, and copied for the out-of-line call below, or the plain
           loop reads its fields from the stack (-10% for uniform keys). */
        const struct ranker r = make_ranker(p, s, begin, kb, vb);
        bool fit = true;

        *scanned = -1;
        memcpy(next, p->bucket_start, SORTD__RADIX * sizeof(*next));
        /* plan_buckets() names a dominant digit for keys only; testing vb, a
           constant, also keeps the second loop out of the variants that move
           values, where its mere presence cost the plain loop 15% (u32
           argsort, 2^25, 2 threads: 305 -> 258 Mkeys/s). */
        if (!vb && p->dominant >= 0) {
                const unsigned dom = (unsigned)p->dominant;
                struct ranker rd = r;

#if HAVE_SPLIT
                if (kb == 4 && !tw && p->split)
                        split_dominant(&r, next, dom, len, (uint32_t *)s->local_v);
                else
#endif
                {
                        if (p->direct) {
                                sortd__look_back_digit(p, s, t, dom,
                                                       count_digit(r, dom, len, kb, tw));
                                *scanned = (int)dom;
                                aim_dominant(p, s, &rd, next[dom], kb);
                        }
                        dominant_table[0][p->direct][tw][sortd__log2_bytes(kb)](&rd, s->local_off,
                                                                                dom, len);
                }
        } else {
                rank_parts(r, s->local_off, 1, len, kb, vb, gen, tw);
        }
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                s->total[d] = next[d] - p->bucket_start[d];
                fit &= s->total[d] <= p->bucket_cap[d];
        }
        return fit;
}

/* Every key of the tile has one digit: the tile moves as one block. */
ALWAYS_INLINE void copy_tile(const sortd__pass *p, size_t begin, size_t len, uint64_t at,
                             unsigned kb, unsigned vb, bool gen, bool tw)
{
        if (tw) {
                for (size_t i = 0; i < len; i++) {
                        uint64_t y = sortd__twiddle_forward(
                                p->load_tw, sortd__load_elem(p->src_k, begin + i, kb));

                        sortd__store_elem(p->dst_k, at + i, kb,
                                          sortd__twiddle_inverse(p->store_tw, y));
                }
        } else {
                memcpy(p->dst_k + at * kb, p->src_k + begin * kb, len * kb);
        }
        if (vb && gen)
                for (size_t i = 0; i < len; i++)
                        sortd__store_elem(p->dst_v, at + i, vb, begin + i);
        else if (vb)
                memcpy(p->dst_v + at * vb, p->src_v + begin * vb, len * vb);
}

static int single_digit(const sortd__cpu_scratch *s, size_t len)
{
        for (unsigned d = 0; d < SORTD__RADIX; d++)
                if (s->total[d])
                        return s->total[d] == len ? (int)d : -1;
        return -1;
}

ALWAYS_INLINE void bin_tiles(const sortd__pass *p, sortd__cpu_scratch *s, unsigned kb, unsigned vb,
                             bool gen, bool tw)
{
        bool buckets = p->bucket_start != NULL;
        unsigned overruns = 0;

        for (;;) {
                size_t t = atomic_fetch_add_explicit(&p->ctx->ticket, 1, memory_order_relaxed);

                if (t >= p->ntiles)
                        break;
                size_t begin = t * SORTD__CPU_TILE_KEYS, len = sortd__tile_len(p->n, t);

                int skip = -1; /* a digit whose chained scan the tile ran early */

                if (buckets) {
                        if (rank_buckets(p, s, t, begin, len, kb, vb, gen, tw, &skip)) {
                                sortd__look_back(p, s, t, skip);
                                write_runs(p, s, p->bucket_start, skip, kb, vb);
                                continue;
                        }
                        /* Keys that overrun buckets again and again cluster:
                           stop trying for the rest of the pass. */
                        if (++overruns == SORTD__MAX_OVERRUNS)
                                buckets = false;
                }
                if (p->precounted)
                        load_counts(p, s, t);
                else
                        count_tile(p, s, begin, len, kb, tw);
                sortd__look_back(p, s, t, skip);
                int one = single_digit(s, len);

                if (one >= 0)
                        copy_tile(p, begin, len, s->excl[one], kb, vb, gen, tw);
                else
                        scatter_tile(p, s, begin, len, kb, vb, gen, tw);
        }
#if defined(__SSE2__)
        /* Streaming stores are weakly ordered: make them visible before the
           pool's join publishes this pass as done. */
        _mm_sfence();
#endif
}

/*
 * One function per (key width, payload, twiddle): each inner loop is compiled
 * on its own, so its invariants stay in registers.
 */
typedef void (*bin_fn)(const sortd__pass *p, sortd__cpu_scratch *s);

#define BIN_FN(KB, VB, GEN, TW)                                                                    \
        static void bin_##KB##_##VB##_##GEN##_##TW(const sortd__pass *p, sortd__cpu_scratch *s)    \
        {                                                                                          \
                bin_tiles(p, s, KB, VB, GEN, TW);                                                  \
        }
#define BIN_PAYLOADS(KB, TW)                                                                       \
        BIN_FN(KB, 0, 0, TW)                                                                       \
        BIN_FN(KB, 4, 0, TW) BIN_FN(KB, 4, 1, TW) BIN_FN(KB, 8, 0, TW) BIN_FN(KB, 8, 1, TW)
#define BIN_KEYS(TW) BIN_PAYLOADS(1, TW) BIN_PAYLOADS(2, TW) BIN_PAYLOADS(4, TW) BIN_PAYLOADS(8, TW)
BIN_KEYS(0)
BIN_KEYS(1)

#define BIN_ROW(KB, TW)                                                                            \
        {                                                                                          \
                bin_##KB##_0_0_##TW, bin_##KB##_4_0_##TW, bin_##KB##_4_1_##TW,                     \
                        bin_##KB##_8_0_##TW, bin_##KB##_8_1_##TW                                   \
        }
/* Indexed [twiddle][log2 key bytes][payload: none, v32, i32, v64, i64]. */
static const bin_fn bin_table[2][4][5] = {
        {BIN_ROW(1, 0), BIN_ROW(2, 0), BIN_ROW(4, 0), BIN_ROW(8, 0)},
        {BIN_ROW(1, 1), BIN_ROW(2, 1), BIN_ROW(4, 1), BIN_ROW(8, 1)},
};

static void bin_worker(void *arg, unsigned tid, unsigned nth)
{
        const sortd__pass *p = arg;
        unsigned payload = p->val_bytes == 0 ? 0 : (p->val_bytes == 4 ? 1 : 3) + p->gen_index;

        bin_table[p->twiddle][sortd__log2_bytes(p->key_bytes)][payload](p, &p->ctx->scratch[tid]);
}

/* ---- the sort ---------------------------------------------------------- */

static void copy_worker(void *arg, unsigned tid, unsigned nth)
{
        const struct copy_job *j = arg;
        size_t b = chunk_begin(j->n, tid, nth), e = chunk_begin(j->n, tid + 1, nth);

        memcpy(j->dst_k + b * j->key_bytes, (unsigned char *)j->ctx->alt_keys + b * j->key_bytes,
               (e - b) * j->key_bytes);
        if (j->val_bytes)
                memcpy(j->dst_v + b * j->val_bytes,
                       (unsigned char *)j->ctx->alt_vals + b * j->val_bytes,
                       (e - b) * j->val_bytes);
}

/* Digit mask of place k: 8 bits, or fewer for the last place of a range. */
static uint64_t place_mask(const sortd__plan *plan, unsigned k)
{
        unsigned shift = plan->begin_bit + 8 * k;
        unsigned width = plan->end_bit - shift < 8 ? plan->end_bit - shift : 8;

        return ((uint64_t)1 << width) - 1;
}

static void fill_identity(unsigned char *vals, size_t n, unsigned eb)
{
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(vals, i, eb, i);
}

/* floor(sqrt(x)) for x < 2^32, a bit at a time: planning runs per pass,
   and a small sort must not pay a loop per unit of the root. */
static uint32_t isqrt(uint64_t x)
{
        uint64_t r = 0;

        for (uint64_t bit = (uint64_t)1 << 16; bit; bit >>= 1)
                if ((r + bit) * (r + bit) <= x)
                        r += bit;
        return (uint32_t)r;
}

/* The slots of a bucket whose digit a tile expects `expect` times. */
static uint32_t bucket_cap(uint64_t expect)
{
        if (!expect)
                return 0;
        return (uint32_t)(expect + SORTD__BUCKET_SIGMAS * isqrt(expect) + SORTD__BUCKET_SLACK);
}

/*
 * Sizes the buckets of rank_buckets() for a place from its global histogram:
 * per digit, a full tile's expected count plus five standard deviations and a
 * line. Returns false when they would not fit in the local buffer beside a
 * tile of overrun, or when ranking by buckets would not pay: on a skewed
 * place one counter is bumped key after key, which the four-part ranking of
 * a counted tile spreads. The exception, in a keys-only sort, is a place
 * where one digit holds nearly every key: *dominant names it, and its keys
 * are ranked through a register (rank_dominant()), in buckets or in a counted
 * tile. *dominant is -1 otherwise, and whenever this returns false.
 */
static bool plan_buckets(const uint64_t *goff, size_t n, bool keys_only, uint32_t *start,
                         uint32_t *cap, int *dominant)
{
        const uint64_t tile = SORTD__CPU_TILE_KEYS;
        uint64_t expect[SORTD__RADIX], sum = 0, most = 0;
        unsigned top = 0;
        int dom;

        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint64_t c = (d + 1 < SORTD__RADIX ? goff[d + 1] : n) - goff[d];

                expect[d] = (c * tile + n - 1) / n;
                if (expect[d] > most)
                        most = expect[d], top = d;
        }
        *dominant = -1;
        dom = keys_only && most >= tile - tile / SORTD__DOMINANT_MIN_SHARE ? (int)top : -1;
        if (dom < 0 && most * SORTD__BUCKETS_MAX_SHARE > tile)
                return false;
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                start[d] = (uint32_t)sum;
                cap[d] = bucket_cap(expect[d]);
                /* A dominant digit may well fill a tile: sorted by the place below,
                   a run of tiles can hold no other digit. */
                if ((int)d == dom)
                        cap[d] = (uint32_t)tile;
                sum += cap[d];
        }
        if (sum + tile > SORTD__LOCAL_KEYS)
                return false;
        *dominant = dom;
        return true;
}

/* Collects the threads' histograms, turns them into exclusive offsets and
   lists the places that need a pass. Returns how many do. */
static unsigned plan_places(const sortd__cpu_ctx *ctx, unsigned nth, unsigned nplaces,
                            uint64_t (*goff)[SORTD__RADIX], unsigned *places)
{
        unsigned np = 0;

        for (unsigned k = 0; k < nplaces; k++) {
                uint64_t sum = 0;
                unsigned nonempty = 0;

                for (unsigned d = 0; d < SORTD__RADIX; d++) {
                        uint64_t c = 0;

                        for (unsigned t = 0; t < nth; t++)
                                c += ctx->scratch[t].hist[k][d];
                        goff[k][d] = sum;
                        sum += c;
                        nonempty += c != 0;
                }
                if (nonempty > 1)
                        places[np++] = k;
        }
        return np;
}

void sortd__onesweep_sort(sortd__cpu_ctx *ctx, const sortd__plan *plan, void *keys, void *vals,
                          size_t n)
{
        const unsigned nth = threads_for(ctx, n);
        const unsigned bits = plan->end_bit - plan->begin_bit;
        const unsigned nplaces = (bits + 7) / 8;
        const sortd__twiddle tw =
                sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending);
        uint64_t goff[SORTD__MAX_PLACES][SORTD__RADIX];
        unsigned places[SORTD__MAX_PLACES];
        const sortd__twiddle identity = sortd__twiddle_identity();

        sortd__histogram(ctx, nth, plan, keys, n);
        unsigned np = plan_places(ctx, nth, nplaces, goff, places);

        if (np == 0) {
                /* Every key has the same bits in range: input order is sorted. */
                if (plan->argsort)
                        fill_identity(vals, n, plan->val_bytes);
                return;
        }

        uint32_t bucket_start[SORTD__RADIX], bucket_cap[SORTD__RADIX];
        unsigned char *buf_k[2] = {keys, ctx->alt_keys};
        unsigned char *buf_v[2] = {vals, ctx->alt_vals};
        size_t moved = n * (plan->key_bytes + plan->val_bytes);

        for (unsigned i = 0; i < np; i++) {
                unsigned k = places[i];
                unsigned shift = plan->begin_bit + 8 * k;
                sortd__pass p = {
                        .ctx = ctx,
                        .src_k = buf_k[i & 1],
                        .src_v = buf_v[i & 1],
                        .dst_k = buf_k[(i + 1) & 1],
                        .dst_v = buf_v[(i + 1) & 1],
                        .n = n,
                        .ntiles = sortd__tile_count(n),
                        .key_bytes = plan->key_bytes,
                        .val_bytes = plan->val_bytes,
                        .gen_index = plan->argsort && i == 0,
                        .precounted = i == 0 && k == 0,
                        .stream = moved >= SORTD__STREAM_MIN_BYTES,
                        .shift = shift,
                        .mask = place_mask(plan, k),
                        .load_tw = i == 0 ? tw : identity,
                        .store_tw = i == np - 1 ? tw : identity,
                        .goff = goff[k],
                        .dominant = -1,
                };

                /* The first pass ranks into buckets too where they fit:
                   ranking a counted tile in four parts was slower (2^26
                   u32 uniform 1.03x, q8 1.18x with buckets, where the
                   AVX-512 split then applies). Its tiles' counts from the
                   histogram pass serve where buckets do not. */
                if (n >= SORTD__BUCKETS_MIN_KEYS &&
                    plan_buckets(goff[k], n, !p.val_bytes, bucket_start, bucket_cap, &p.dominant)) {
                        p.bucket_start = bucket_start;
                        p.bucket_cap = bucket_cap;
                }
                p.twiddle = !sortd__twiddle_is_identity(p.load_tw) ||
                            !sortd__twiddle_is_identity(p.store_tw);
                p.split = ctx->split512 && p.bucket_start && p.dominant >= 0 && p.key_bytes == 4 &&
                          !p.twiddle;
                /* Whole keys in the caller's buffer too: a key across a
                   line would split its non-temporal store. Split tiles
                   stage their keys. */
                p.direct = p.dominant >= 0 && p.stream && p.key_bytes >= 4 &&
                           (uintptr_t)keys % p.key_bytes == 0 && !p.split;
                p.epoch = sortd__look_back_start(ctx);
                atomic_store_explicit(&ctx->ticket, 0, memory_order_relaxed);
                sortd__pool_run(ctx->pool, nth, bin_worker, &p);
        }
        if (np & 1) {
                struct copy_job cj = {ctx, keys, vals, n, plan->key_bytes, plan->val_bytes};
                sortd__pool_run(ctx->pool, nth, copy_worker, &cj);
        }
}

/* ---- buffers ----------------------------------------------------------- */

static void *alloc_prefaulted(size_t bytes)
{
        /* 2 MiB alignment lets the kernel back the ping-pong buffers with huge
           pages; touching them now keeps page faults out of every sort. */
        size_t align = (size_t)2 << 20;
        size_t rounded = (bytes + align - 1) / align * align;
        void *p = aligned_alloc(align, rounded ? rounded : align);

        if (!p)
                return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, rounded, MADV_HUGEPAGE);
#endif
        memset(p, 0, rounded);
        return p;
}

int sortd__cpu_ctx_init(sortd__cpu_ctx *ctx, size_t capacity, unsigned threads)
{
        int r;

        ctx->capacity = capacity;
        ctx->threads = threads;
        ctx->max_tiles = sortd__tile_count(capacity);
        ctx->epoch = 0;
#if HAVE_SPLIT
        ctx->split512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt");
#else
        ctx->split512 = false;
#endif
        atomic_init(&ctx->ticket, 0);
        ctx->alt_bytes = capacity * sizeof(uint64_t);
        ctx->alt_keys = alloc_prefaulted(ctx->alt_bytes);
        ctx->alt_vals = alloc_prefaulted(ctx->alt_bytes);
        ctx->status = alloc_prefaulted(ctx->max_tiles * SORTD__RADIX * sizeof(uint64_t));
        ctx->scratch = alloc_prefaulted(threads * sizeof(sortd__cpu_scratch));
        ctx->tile_counts = alloc_prefaulted(ctx->max_tiles * sizeof(*ctx->tile_counts));
        _Static_assert(sizeof(sortd__cpu_scratch) % SORTD__LINE == 0, "scratch keeps alignment");
        if (!ctx->alt_keys || !ctx->alt_vals || !ctx->status || !ctx->scratch || !ctx->tile_counts)
                return -ENOMEM;
        r = sortd__pool_create(threads, &ctx->pool);
        return r;
}

void sortd__cpu_ctx_free(sortd__cpu_ctx *ctx)
{
        sortd__pool_destroy(ctx->pool);
        free(ctx->alt_keys);
        free(ctx->alt_vals);
        free((void *)ctx->status);
        free(ctx->scratch);
        free(ctx->tile_counts);
}
