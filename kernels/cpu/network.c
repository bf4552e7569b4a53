/*
 * A bitonic sorting network over AVX-512 registers of images (network.h): sixteen 4-byte ones a
 * register, or eight 8-byte ones. Each register is sorted on its own, then runs of 1, 2, 4, ...
 * registers are merged pairwise: the first run against the second reversed is a bitonic
 * sequence, which half-cleaners across registers and then exchanges inside each register sort.
 * Nothing branches on the keys. One code serves both widths: w, the image's bits, is a constant
 * wherever it is inlined.
 *
 * The exchanges inside registers take two registers at a time. A stage's pairs of lanes, from
 * both, are gathered into one register of the lanes that are to keep the smaller image and one
 * of their partners (two two-source permutes), and one min and one max exchange them all. The
 * images are then out of place, and the next stage's permutes gather them from where they are;
 * after the last, two more put them back. Two permutes, a min and a max a stage for two
 * registers, against a shuffle, a min, a max and a blend for each one on its own: the permutes
 * and shuffles share one port, which bounds either form (docs/performance.md).
 */
#include "network.h"

#if SORTD__HAVE_NETWORK
#include <immintrin.h>
#include <pthread.h>

#define NETWORK_TARGET __attribute__((target("avx512f")))
/* Inlined and unrolled, every width below is a constant. */
#define NETWORK_INLINE NETWORK_TARGET static inline __attribute__((always_inline))

/* A register of 16 lanes sorted takes 1 + 2 + 3 + 4 stages. */
#define MAX_STAGES 10u

/* Two-source lane indices (a lane of the second register counts from `lanes`). */
typedef union lane_index {
        _Alignas(64) uint32_t d[16];
        uint64_t q[8];
} lane_index;

/* The permutes of a sequence of stages over two registers. */
typedef struct pair_plan {
        unsigned stages;
        lane_index low[MAX_STAGES], high[MAX_STAGES]; /* each stage's two gathers */
        lane_index back[2];                           /* the lanes put back in order */
} pair_plan;

/* [w == 64][merge]: a register sorted from scratch, and a bitonic one merged. */
static pair_plan g_plans[2][2];
static pthread_once_t g_plans_once = PTHREAD_ONCE_INIT;

static void set_lane(lane_index *x, unsigned t, unsigned v, unsigned lanes)
{
        if (lanes == 16)
                x->d[t] = v;
        else
                x->q[t] = v;
}

/*
 * One stage: lanes j apart exchanged in each register, the lower lane keeping the smaller image
 * where i & k is clear (always, for k = lanes) and the larger where it is set. pos[e] is where
 * image e of the pair (register e / lanes, lane e % lanes) lies now.
 */
static void plan_stage(pair_plan *pl, unsigned lanes, unsigned j, unsigned k, unsigned *pos)
{
        unsigned next[32], t = 0, s = pl->stages++;

        for (unsigned e = 0; e < 2 * lanes; e++) {
                unsigned i = e % lanes, f = e + j;
                bool up = !(i & k);

                if (i & j)
                        continue;
                set_lane(&pl->low[s], t, pos[e], lanes);
                set_lane(&pl->high[s], t, pos[f], lanes);
                next[up ? e : f] = t;
                next[up ? f : e] = lanes + t;
                t++;
        }
        for (unsigned e = 0; e < 2 * lanes; e++)
                pos[e] = next[e];
}

static void plan_pairs(pair_plan *pl, unsigned lanes, bool merge)
{
        unsigned pos[32];

        for (unsigned e = 0; e < 2 * lanes; e++)
                pos[e] = e;
        pl->stages = 0;
        for (unsigned k = merge ? lanes : 2; k <= lanes; k *= 2)
                for (unsigned j = k / 2; j > 0; j /= 2)
                        plan_stage(pl, lanes, j, k, pos);
        for (unsigned e = 0; e < 2 * lanes; e++)
                set_lane(&pl->back[e / lanes], e % lanes, pos[e], lanes);
}

static void plan_all(void)
{
        for (unsigned merge = 0; merge < 2; merge++) {
                plan_pairs(&g_plans[0][merge], 16, merge);
                plan_pairs(&g_plans[1][merge], 8, merge);
        }
}

NETWORK_INLINE __m512i min_of(__m512i a, __m512i b, unsigned w)
{
        return w == 32 ? _mm512_min_epu32(a, b) : _mm512_min_epu64(a, b);
}

NETWORK_INLINE __m512i max_of(__m512i a, __m512i b, unsigned w)
{
        return w == 32 ? _mm512_max_epu32(a, b) : _mm512_max_epu64(a, b);
}

/* The lanes i of a register of `lanes` with i & j set; none for j = lanes. */
NETWORK_INLINE unsigned lanes_with(unsigned j, unsigned lanes)
{
        unsigned all = j == 1 ? 0xAAAA : j == 2 ? 0xCCCC : j == 4 ? 0xF0F0 : j == 8 ? 0xFF00 : 0;

        return j < lanes ? all & ((1u << lanes) - 1) : 0;
}

/* Lane i ^ j of v, lanes w bits wide: in-lane shuffles within 128 bits, 128-bit lane shuffles
   across them. */
NETWORK_INLINE __m512i partner(__m512i v, unsigned j, unsigned w)
{
        switch (j * w / 32) { /* the distance in 4-byte words */
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
NETWORK_INLINE __m512i exchange(__m512i v, unsigned j, unsigned take_max, unsigned w)
{
        __m512i p = partner(v, j, w), lo = min_of(v, p, w), hi = max_of(v, p, w);

        return w == 32 ? _mm512_mask_blend_epi32((__mmask16)take_max, lo, hi)
                       : _mm512_mask_blend_epi64((__mmask8)take_max, lo, hi);
}

/* A register on its own, sorted (merge false: bitonic runs of 2, 4, ... lanes, alternately
   ascending and descending, merged into one ascending run) or merged from bitonic. */
NETWORK_INLINE __m512i one_register(__m512i v, bool merge, unsigned w)
{
        const unsigned lanes = 512 / w;

#pragma GCC unroll 4
        for (unsigned k = merge ? lanes : 2; k <= lanes; k *= 2)
#pragma GCC unroll 4
                for (unsigned j = k / 2; j > 0; j /= 2)
                        v = exchange(v, j, lanes_with(j, lanes) ^ lanes_with(k, lanes), w);
        return v;
}

/* The lanes of x and y that ix names. */
NETWORK_INLINE __m512i gather2(__m512i x, const lane_index *ix, __m512i y, unsigned w)
{
        __m512i i = _mm512_load_si512(ix);

        return w == 32 ? _mm512_permutex2var_epi32(x, i, y) : _mm512_permutex2var_epi64(x, i, y);
}

/*
 * The `count` (1, 2 or a multiple of 4) registers at r, each sorted (merge false) or each merged
 * from bitonic. One or two registers take their exchanges one register at a time: the chain of
 * a stage is then a shuffle, a min and a blend, shorter than the pair's permute and min,
 * and with so few registers the chain, not the port, bounds the time.
 */
NETWORK_INLINE void in_registers(__m512i *r, size_t count, bool merge, unsigned w)
{
        const pair_plan *pl = &g_plans[w == 64][merge];

        if (count <= 2) {
#pragma GCC unroll 2
                for (size_t t = 0; t < count; t++)
                        r[t] = one_register(r[t], merge, w);
                return;
        }

        for (unsigned s = 0; s < pl->stages; s++)
#pragma GCC unroll 4
                for (size_t t = 0; t < count; t += 2) {
                        __m512i lo = gather2(r[t], &pl->low[s], r[t + 1], w);
                        __m512i hi = gather2(r[t], &pl->high[s], r[t + 1], w);

                        r[t] = min_of(lo, hi, w);
                        r[t + 1] = max_of(lo, hi, w);
                }
#pragma GCC unroll 4
        for (size_t t = 0; t < count; t += 2) {
                __m512i x = r[t], y = r[t + 1];

                r[t] = gather2(x, &pl->back[0], y, w);
                r[t + 1] = gather2(x, &pl->back[1], y, w);
        }
}

/* The lanes of v in reverse order. */
NETWORK_INLINE __m512i reverse(__m512i v, unsigned w)
{
        if (w == 64)
                return _mm512_permutexvar_epi64(_mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), v);
        return _mm512_permutexvar_epi32(
                _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), v);
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
NETWORK_INLINE void cross(__m512i *a, size_t m, unsigned w)
{
        __m512i *b = a + m;

#pragma GCC unroll 4
        for (size_t i = 0; i < (m + 1) / 2; i++) {
                size_t i2 = m - 1 - i;
                __m512i a1 = a[i], a2 = a[i2], b1 = reverse(b[i2], w), b2 = reverse(b[i], w);

                a[i] = min_of(a1, b1, w);
                b[i] = max_of(a1, b1, w);
                a[i2] = min_of(a2, b2, w);
                b[i2] = max_of(a2, b2, w);
        }
}

/* The half-cleaner of stride s registers over the `count` registers at a. */
NETWORK_INLINE void clean(__m512i *a, size_t count, size_t s, unsigned w)
{
#pragma GCC unroll 8
        for (size_t t = 0; t < count; t++)
                if (!(t & s)) {
                        __m512i x = a[t], y = a[t + s];

                        a[t] = min_of(x, y, w);
                        a[t + s] = max_of(x, y, w);
                }
}

/* The end of every merge: the half-cleaners of strides s down to 1 over the `count` registers
   at r, then each register merged. */
NETWORK_INLINE void clean_and_merge(__m512i *r, size_t count, size_t s, unsigned w)
{
#pragma GCC unroll 3
        for (; s > 0; s /= 2)
                clean(r, count, s, w);
        in_registers(r, count, true, w);
}

/* `regs` (BLOCK or fewer) registers sorted in registers: each one, then runs of 1, 2, 4
   merged. */
NETWORK_INLINE void sort_block(__m512i *a, size_t regs, unsigned w)
{
        __m512i r[BLOCK];

#pragma GCC unroll 8
        for (size_t t = 0; t < regs; t++)
                r[t] = a[t];
        in_registers(r, regs, false, w);
#pragma GCC unroll 3
        for (size_t m = 1; m < regs; m *= 2) {
#pragma GCC unroll 4
                for (size_t base = 0; base < regs; base += 2 * m)
                        cross(r + base, m, w);
                clean_and_merge(r, regs, m / 2, w);
        }
#pragma GCC unroll 8
        for (size_t t = 0; t < regs; t++)
                a[t] = r[t];
}

/* The last steps of a merge on BLOCK registers: the half-cleaners of strides BLOCK/2 to 1,
   then each register merged. */
NETWORK_INLINE void finish_block(__m512i *a, unsigned w)
{
        __m512i r[BLOCK];

#pragma GCC unroll 8
        for (size_t t = 0; t < BLOCK; t++)
                r[t] = a[t];
        clean_and_merge(r, BLOCK, BLOCK / 2, w);
#pragma GCC unroll 8
        for (size_t t = 0; t < BLOCK; t++)
                a[t] = r[t];
}

/* The n images at a, of w bits, padded to the room n takes with the largest image, sorted. */
NETWORK_INLINE void sort_images(void *a, size_t n, unsigned w)
{
        size_t room = sortd__network_room(n), regs = room * w / 512;
        __m512i *v = a;

        for (size_t i = n; i < room; i++)
                if (w == 32)
                        ((uint32_t *)a)[i] = UINT32_MAX;
                else
                        ((uint64_t *)a)[i] = UINT64_MAX;
        if (regs < BLOCK) {
                if (regs == 1)
                        sort_block(v, 1, w);
                else if (regs == 2)
                        sort_block(v, 2, w);
                else
                        sort_block(v, 4, w);
                return;
        }
        for (size_t b = 0; b < regs; b += BLOCK)
                sort_block(v + b, BLOCK, w);
        for (size_t m = BLOCK; m < regs; m *= 2)
                for (size_t base = 0; base < regs; base += 2 * m) {
                        cross(v + base, m, w);
                        for (size_t s = m / 2; s >= BLOCK; s /= 2)
                                clean(v + base, 2 * m, s, w);
                        for (size_t t = 0; t < 2 * m; t += BLOCK)
                                finish_block(v + base + t, w);
                }
}

NETWORK_TARGET void sortd__network_sort(uint32_t *a, size_t n)
{
        pthread_once(&g_plans_once, plan_all);
        sort_images(a, n, 32);
}

NETWORK_TARGET void sortd__network_sort64(uint64_t *a, size_t n)
{
        pthread_once(&g_plans_once, plan_all);
        sort_images(a, n, 64);
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

void sortd__network_sort64(uint64_t *a, size_t n)
{
        (void)a;
        (void)n;
        __builtin_trap();
}

bool sortd__network_available(void)
{
        return false;
}
#endif
