/*
 * The rankers of a dominant digit, out of line (rank.h says how the others
 * rank): one digit holds nearly every key of a keys-only place.
 */
#include "rank.h"

/* A non-temporal store of one key. */
SORTD__ALWAYS_INLINE void stream_elem(unsigned char *p, size_t i, unsigned eb, uint64_t x)
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
SORTD__ALWAYS_INLINE void rank_dominant_key(const sortd__ranker r, uint32_t *next, uint32_t *at,
                                            unsigned dom, size_t i, unsigned kb, bool tw,
                                            bool direct)
{
        uint64_t y = sortd__rank_load(r, i, kb, tw);
        unsigned d = sortd__digit_of(y, r.shift, r.mask);

        if (__builtin_expect(d != dom, 0))
                sortd__rank_store(r, next[d]++, y, i, kb, 0, false, tw);
        else if (direct)
                stream_elem(r.dom_out, (*at)++ - r.dom_first, kb,
                            tw ? sortd__twiddle_inverse(r.store_tw, y) : y);
        else
                sortd__rank_store(r, (*at)++, y, i, kb, 0, false, tw);
}

/* Ranks a tile of keys only, in `parts` parts side by side as sortd__rank_parts()
   does, the next slots of part k being next[k]. */
SORTD__ALWAYS_INLINE void rank_dominant(const sortd__ranker r, uint32_t (*next)[SORTD__RADIX],
                                        unsigned parts, unsigned dom, size_t len, unsigned kb,
                                        bool tw, bool direct)
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
#define DOMINANT_FN(KB, TW, PARTS, DIRECT)                                                         \
        static __attribute__((noinline)) void rank_dominant_##KB##_##TW##_##PARTS##_##DIRECT(      \
                const sortd__ranker *r, uint32_t(*next)[SORTD__RADIX], unsigned dom, size_t len)   \
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
_Static_assert(SORTD__STREAMS == 4, "sortd__dominant_table's parts");

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
const sortd__dominant_fn sortd__dominant_table[2][2][2][4] = {
        {DOMINANT_PLANE(1, 0), DOMINANT_PLANE(1, 1)},
        {DOMINANT_PLANE(4, 0), DOMINANT_PLANE(4, 1)},
};

#if SORTD__HAVE_SPLIT
/*
 * A tile of u32 keys, not mapped, split into the dominant digit's keys and the
 * others sixteen at a time, without a branch: AVX-512 compresses a group's
 * dominant keys into their bucket and the others into a list, which is then
 * ranked as usual. The branch of rank_dominant() mispredicts on each key that
 * is not dominant (3% of q = 8 keys), and that cost more than all the rest of
 * the ranking: q = 8 keys sorted 1.56x faster with the split (2 threads,
 * 2^26 u32). Each store writes sixteen slots; those past the run are
 * garbage, overwritten when the others are ranked or never copied out
 * (plan.c leaves a tile free past the buckets).
 */
__attribute__((target("avx512f,popcnt"))) void sortd__split_dominant(const sortd__ranker *r,
                                                                     uint32_t *next, unsigned dom,
                                                                     size_t len, uint32_t *others)
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

bool sortd__can_split(void)
{
#if SORTD__HAVE_SPLIT
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt");
#else
        return false;
#endif
}
