/*
 * A bitonic sorting network over 16-lane registers of 4-byte images (network.h). Each register
 * is sorted on its own, then runs of 1, 2, 4, ... registers are merged pairwise: the first run
 * against the second reversed is a bitonic sequence, which half-cleaners across registers and
 * then four exchanges inside each register sort. Every exchange is a shuffle, a min, a max and
 * a blend, with no branch on the keys.
 */
#include "network.h"

#if SORTD__HAVE_NETWORK
#include <immintrin.h>

#define NETWORK_TARGET __attribute__((target("avx512f")))
/* Inlined and unrolled, every shuffle and mask below is a constant. */
#define NETWORK_INLINE NETWORK_TARGET static inline __attribute__((always_inline))

/* The lanes i of a register with i & j set (j = 1, 2, 4, 8); 0 for j = 16. */
#define LANES_WITH(j)                                                                              \
        ((j) == 1 ? 0xAAAA : (j) == 2 ? 0xCCCC : (j) == 4 ? 0xF0F0 : (j) == 8 ? 0xFF00 : 0)

/* Lane i ^ j of v: in-lane shuffles for 1 and 2, 128-bit lane shuffles for 4 and 8. */
NETWORK_INLINE __m512i partner(__m512i v, unsigned j)
{
        switch (j) {
        case 1:
                return _mm512_shuffle_epi32(v, _MM_PERM_CDAB);
        case 2:
                return _mm512_shuffle_epi32(v, _MM_PERM_BADC);
        case 4:
                return _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1));
        default:
                return _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2));
        }
}

/* One exchange between lanes j apart: the lanes in take_max keep the larger image. */
NETWORK_INLINE __m512i exchange(__m512i v, unsigned j, __mmask16 take_max)
{
        __m512i p = partner(v, j);

        return _mm512_mask_blend_epi32(take_max, _mm512_min_epu32(v, p), _mm512_max_epu32(v, p));
}

/* A register sorted: bitonic runs of 2, 4, 8 lanes, alternately ascending and descending,
   merged into 16 ascending. */
NETWORK_INLINE __m512i sort_register(__m512i v)
{
#pragma GCC unroll 4
        for (unsigned k = 2; k <= 16; k *= 2)
#pragma GCC unroll 4
                for (unsigned j = k / 2; j > 0; j /= 2)
                        v = exchange(v, j, (__mmask16)(LANES_WITH(j) ^ LANES_WITH(k)));
        return v;
}

/* A bitonic register sorted ascending. */
NETWORK_INLINE __m512i merge_register(__m512i v)
{
#pragma GCC unroll 4
        for (unsigned j = 8; j > 0; j /= 2)
                v = exchange(v, j, (__mmask16)LANES_WITH(j));
        return v;
}

/* The lanes of v in reverse order. */
NETWORK_INLINE __m512i reverse(__m512i v)
{
        const __m512i down = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

        return _mm512_permutexvar_epi32(down, v);
}

/* The registers the first merges and the last steps of each merge keep in registers, loaded
   and stored once: 8 of the 32. */
#define BLOCK 8u

/*
 * The first step of merging the sorted runs a[0, m) and a[m, 2m). Register i of the first run
 * meets the reverse of register m-1-i of the second: the lower images stay at i, the higher go
 * to m+i, so each half is bitonic and no image of the first exceeds one of the second. Both
 * registers a step reads are written by the same step.
 */
NETWORK_INLINE void cross(__m512i *a, size_t m)
{
        __m512i *b = a + m;

#pragma GCC unroll 4
        for (size_t i = 0; i < (m + 1) / 2; i++) {
                size_t i2 = m - 1 - i;
                __m512i a1 = a[i], a2 = a[i2], b1 = reverse(b[i2]), b2 = reverse(b[i]);

                a[i] = _mm512_min_epu32(a1, b1);
                b[i] = _mm512_max_epu32(a1, b1);
                a[i2] = _mm512_min_epu32(a2, b2);
                b[i2] = _mm512_max_epu32(a2, b2);
        }
}

/* The half-cleaner of stride s registers over the `count` registers at a. */
NETWORK_INLINE void clean(__m512i *a, size_t count, size_t s)
{
#pragma GCC unroll 8
        for (size_t t = 0; t < count; t++)
                if (!(t & s)) {
                        __m512i x = a[t], y = a[t + s];

                        a[t] = _mm512_min_epu32(x, y);
                        a[t + s] = _mm512_max_epu32(x, y);
                }
}

/* The end of every merge: the half-cleaners of strides s down to 1 over the `count` registers
   at r, then each register merged. */
NETWORK_INLINE void clean_and_merge(__m512i *r, size_t count, size_t s)
{
#pragma GCC unroll 3
        for (; s > 0; s /= 2)
                clean(r, count, s);
#pragma GCC unroll 8
        for (size_t t = 0; t < count; t++)
                r[t] = merge_register(r[t]);
}

/* `regs` (BLOCK or fewer) registers sorted in registers: each one, then runs of 1, 2, 4
   merged. */
NETWORK_INLINE void sort_block(__m512i *a, size_t regs)
{
        __m512i r[BLOCK];

#pragma GCC unroll 8
        for (size_t t = 0; t < regs; t++)
                r[t] = sort_register(a[t]);
#pragma GCC unroll 3
        for (size_t m = 1; m < regs; m *= 2) {
#pragma GCC unroll 4
                for (size_t base = 0; base < regs; base += 2 * m)
                        cross(r + base, m);
                clean_and_merge(r, regs, m / 2);
        }
#pragma GCC unroll 8
        for (size_t t = 0; t < regs; t++)
                a[t] = r[t];
}

/* The last steps of a merge on BLOCK registers: the half-cleaners of strides BLOCK/2 to 1,
   then each register merged. */
NETWORK_INLINE void finish_block(__m512i *a)
{
        __m512i r[BLOCK];

#pragma GCC unroll 8
        for (size_t t = 0; t < BLOCK; t++)
                r[t] = a[t];
        clean_and_merge(r, BLOCK, BLOCK / 2);
#pragma GCC unroll 8
        for (size_t t = 0; t < BLOCK; t++)
                a[t] = r[t];
}

NETWORK_TARGET void sortd__network_sort(uint32_t *a, size_t n)
{
        size_t room = sortd__network_room(n), regs = room / 16;
        __m512i *v = (__m512i *)(void *)a;

        for (size_t i = n; i < room; i++)
                a[i] = UINT32_MAX;
        if (regs < BLOCK) {
                if (regs == 1)
                        sort_block(v, 1);
                else if (regs == 2)
                        sort_block(v, 2);
                else
                        sort_block(v, 4);
                return;
        }
        for (size_t b = 0; b < regs; b += BLOCK)
                sort_block(v + b, BLOCK);
        for (size_t m = BLOCK; m < regs; m *= 2)
                for (size_t base = 0; base < regs; base += 2 * m) {
                        cross(v + base, m);
                        for (size_t s = m / 2; s >= BLOCK; s /= 2)
                                clean(v + base, 2 * m, s);
                        for (size_t t = 0; t < 2 * m; t += BLOCK)
                                finish_block(v + base + t);
                }
}

bool sortd__network_available(void)
{
        return __builtin_cpu_supports("avx512f");
}
#else
void sortd__network_sort(uint32_t *a, size_t n)
{
        (void)a;
        (void)n;
        __builtin_trap(); /* sortd__network_available() said no */
}

bool sortd__network_available(void)
{
        return false;
}
#endif
