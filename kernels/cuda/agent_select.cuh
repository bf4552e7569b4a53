/*
 * Radix select: the kernels of top-k on one large segment (segment_sort.cuh: topk_select).
 *
 * A key's place in the sort's order is the unsigned order of its value: its key map
 * (sortd__twiddle, the order and the kind folded in), bits [begin_bit, end_bit). The select
 * finds the k-th value digit by digit from the top, each level one histogram of the keys whose
 * higher digits are the prefix found so far (a filter, not a binning pass: nothing moves); then
 * the keys whose value, down to the last level's digit, is at most the prefix (those certainly
 * in the top k, and the candidates that tie with the k-th there) are gathered in their input
 * order, with their input index or value: a stable sort of those puts the top k first, ties to
 * the lower index. The gather is a stable compaction: a count a tile, a scan of the counts, and
 * each tile's keys written from its start in order.
 *
 * Keys are read at their own width (1, 2, 4 or 8 bytes). The same source compiles with nvcc and
 * on the SIMT emulator.
 */
#ifndef SORTD_CUDA_AGENT_SELECT_CUH
#define SORTD_CUDA_AGENT_SELECT_CUH

#include "../keys.h"
#include "block_scan.cuh"
#include "compat.cuh"
#include "policy.cuh"

namespace sortd_cuda
{

/* The keys of a select and the order it selects in. */
struct SelectInput {
        const void *keys;
        uint32_t n;
        sortd__twiddle tw;         /* the sort's key map */
        unsigned begin_bit, width; /* the value: width bits of the mapped key from begin_bit */
};

/* One level: the keys whose value above bit `above` is prefix (every key when above is 64)
   counted by their digit (value >> shift) & mask, mask = 2^(above - shift) - 1. */
struct SelectLevel {
        unsigned above, shift;
        uint64_t prefix;
        uint32_t mask;
};

/* The gather's keys: value >> shift at most bound. */
struct SelectCut {
        unsigned shift;
        uint64_t bound;
};

template <class K> SORTD_DEVICE uint64_t select_value(const SelectInput &in, K raw)
{
        uint64_t x = sortd__twiddle_forward(in.tw, (uint64_t)raw) >> in.begin_bit;

        return in.width >= 64 ? x : x & ((1ull << in.width) - 1);
}

SORTD_DEVICE bool select_in_level(const SelectLevel &lv, uint64_t v)
{
        return lv.above >= 64 || v >> lv.above == lv.prefix;
}

SORTD_DEVICE bool select_in_cut(const SelectCut &cut, uint64_t v)
{
        return v >> cut.shift <= cut.bound;
}

/* Where a level's filter writes the keys it keeps, as values: out[*count++] (count cleared). */
struct SelectOutput {
        uint64_t *out; /* NULL: the level keeps nothing (the first, or the last) */
        uint32_t *count;
};

/*
 * One level: hist[digit] (cleared) += the level's keys of that digit, and those keys' values to
 * the output, the next level's input. Blocks walk the keys cyclically into a shared histogram,
 * then add its non-empty bins with one global atomic each. Input: the keys (K, mapped here), or
 * with MAPPED the values an earlier level kept (uint64_t).
 */
template <class K, bool MAPPED> struct AgentSelectHistogram {
        struct TempStorage {
                uint32_t bins[RADIX];
        };

        TempStorage &s;
        const SelectInput &in;
        const SelectLevel &lv;

        SORTD_DEVICE uint64_t value(bool live, uint64_t i) const
        {
                if constexpr (MAPPED)
                        return global_load_if(live, (const uint64_t *)in.keys + i, (uint64_t)0);
                else
                        return select_value(in, global_load_if(live, (const K *)in.keys + i, K()));
        }

        /* The warp's kept values, packed from one atomic reservation of its leader. */
        SORTD_DEVICE void keep(const SelectOutput &o, bool take, uint64_t v) const
        {
                unsigned vote = __ballot_sync(FULL_MASK, take);
                uint32_t base = 0;

                if (vote == 0)
                        return;
                if (lane_id() == (unsigned)(__ffs((int)vote) - 1))
                        base = atomicAdd(o.count, (unsigned)__popc(vote));
                base = __shfl_sync(FULL_MASK, base, __ffs((int)vote) - 1);
                global_store_if(take, o.out + base + __popc(vote & lanemask_lt()), v);
        }

        SORTD_DEVICE void run(uint32_t *hist, const SelectOutput &o)
        {
                for (unsigned i = threadIdx.x; i < (unsigned)RADIX; i += blockDim.x)
                        shared_store(&s.bins[i], 0u);
                __syncthreads();
                /* a block-uniform stride, so every lane makes every access call */
                for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < in.n;
                     base += (uint64_t)blockDim.x * gridDim.x) {
                        uint64_t i = base + threadIdx.x;
                        uint64_t v = value(i < in.n, i);
                        bool take = i < in.n && select_in_level(lv, v);

                        shared_atomic_add_if(take, &s.bins[(uint32_t)(v >> lv.shift) & lv.mask],
                                             1u);
                        if (o.out)
                                keep(o, take, v);
                }
                __syncthreads();
                for (unsigned i = threadIdx.x; i < (unsigned)RADIX; i += blockDim.x) {
                        uint32_t c = shared_load(&s.bins[i]);

                        if (c)
                                atomicAdd(&hist[i], c);
                }
        }
};

/*
 * The stable compaction of the keys in a cut, tile by tile (Policy::TILE consecutive keys a
 * block, in rounds of THREADS consecutive keys): count() writes each tile's number of them,
 * gather() writes them from their tile's start (the exclusive scan of the counts) in order.
 */
template <class Policy, class K> struct AgentSelectGather {
        static constexpr int THREADS = Policy::THREADS;
        static constexpr int ITEMS = Policy::ITEMS;
        static constexpr int WARPS = THREADS / WARP_THREADS;

        struct TempStorage {
                uint32_t warp_counts[WARPS];
        };

        TempStorage &s;
        const SelectInput &in;
        const SelectCut &cut;

        SORTD_DEVICE uint64_t index(int round) const
        {
                return (uint64_t)blockIdx.x * Policy::TILE + (uint64_t)round * THREADS +
                       threadIdx.x;
        }

        SORTD_DEVICE bool taken(uint64_t i, K *raw) const
        {
                *raw = global_load_if(i < in.n, (const K *)in.keys + i, K());
                return i < in.n && select_in_cut(cut, select_value(in, *raw));
        }

        /* The round's taken keys before this thread's and in all; a barrier at each end. */
        SORTD_DEVICE uint32_t round_scan(bool take, uint32_t *total)
        {
                unsigned vote = __ballot_sync(FULL_MASK, take);
                uint32_t before = 0;

                shared_store_if(lane_id() == 0, &s.warp_counts[warp_id()], (uint32_t)__popc(vote));
                __syncthreads();
                *total = 0;
#pragma unroll
                for (int w = 0; w < WARPS; w++) {
                        uint32_t c = shared_load(&s.warp_counts[w]);

                        before += (unsigned)w < warp_id() ? c : 0;
                        *total += c;
                }
                __syncthreads(); /* the counts are read before the next round writes them */
                return before + (uint32_t)__popc(vote & lanemask_lt());
        }

        SORTD_DEVICE void count(uint32_t *tile_counts)
        {
                uint32_t sum = 0, total;
                K raw;

#pragma unroll 1
                for (int r = 0; r < ITEMS; r++) {
                        round_scan(taken(index(r), &raw), &total);
                        sum += total;
                }
                global_store_if(threadIdx.x == 0, tile_counts + blockIdx.x, sum);
        }

        /* Keys to keys_out; with a payload, their values (vals_in) or input indices (argsort)
           to vals_out. */
        template <class V>
        SORTD_DEVICE void gather(const uint32_t *tile_starts, const V *vals_in, bool argsort,
                                 bool payload, K *keys_out, V *vals_out)
        {
                uint32_t at = global_load(tile_starts + blockIdx.x), total;
                K raw;

#pragma unroll 1
                for (int r = 0; r < ITEMS; r++) {
                        uint64_t i = index(r);
                        bool take = taken(i, &raw);
                        uint32_t pos = at + round_scan(take, &total);
                        V v = global_load_if(take && payload && !argsort, vals_in + i, (V)i);

                        global_store_if(take, keys_out + pos, raw);
                        global_store_if(take && payload, vals_out + pos, v);
                        at += total;
                }
        }
};

/* One warp: counts[0, n) become their exclusive scan, 32 at a time. */
SORTD_DEVICE void warp_exclusive_scan(uint32_t *counts, uint32_t n)
{
        uint32_t carry = 0;

        for (uint32_t base = 0; base < n; base += WARP_THREADS) {
                uint32_t i = base + lane_id();
                uint32_t x = global_load_if(i < n, counts + i, 0u);
                uint32_t inclusive = warp_inclusive_sum(x);

                global_store_if(i < n, counts + i, carry + inclusive - x);
                carry += __shfl_sync(FULL_MASK, inclusive, WARP_THREADS - 1);
        }
}

} /* namespace sortd_cuda */

#endif
