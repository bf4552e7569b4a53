/* Block- and warp-level helpers shared by the agents. */
#ifndef SORTD_CUDA_BLOCK_SCAN_CUH
#define SORTD_CUDA_BLOCK_SCAN_CUH

#include "compat.cuh"
#include "policy.cuh"

namespace sortd_cuda
{

SORTD_DEVICE uint32_t warp_inclusive_sum(uint32_t x)
{
        unsigned lane = lane_id();

#pragma unroll
        for (unsigned d = 1; d < WARP_THREADS; d *= 2) {
                uint32_t y = __shfl_up_sync(FULL_MASK, x, d);
                if (lane >= d)
                        x += y;
        }
        return x;
}

/*
 * Exclusive prefix sum of RADIX counters in global memory, by one whole
 * warp: each lane sums RADIX/32 consecutive counters, the warp scans the
 * lane sums. in and out may be the same array.
 */
SORTD_DEVICE void warp_exclusive_scan_radix(const uint32_t *in, uint32_t *out)
{
        constexpr int PER_LANE = RADIX / WARP_THREADS;
        const unsigned base = lane_id() * PER_LANE;
        uint32_t x[PER_LANE], sum = 0;

#pragma unroll
        for (int i = 0; i < PER_LANE; i++) {
                x[i] = global_load(in + base + i);
                sum += x[i];
        }
        uint32_t run = warp_inclusive_sum(sum) - sum;
#pragma unroll
        for (int i = 0; i < PER_LANE; i++) {
                global_store(out + base + i, run);
                run += x[i];
        }
}

/* Bits to hold values up to max; words to hold n fields of that many bits, none split. */
constexpr int bits_for(uint32_t max)
{
        return max ? 1 + bits_for(max >> 1) : 0;
}
constexpr int packed_words(int n, int bits)
{
        return (n + 32 / bits - 1) / (32 / bits);
}

/* Small fields packed into words to save registers: field i of BITS bits.
   The words start at zero. */
template <int BITS, int N> SORTD_DEVICE void pack_put(uint32_t (&w)[N], int i, uint32_t v)
{
        constexpr int PER_WORD = 32 / BITS;

        w[i / PER_WORD] |= v << BITS * (i % PER_WORD);
}
template <int BITS, int N> SORTD_DEVICE uint32_t pack_get(const uint32_t (&w)[N], int i)
{
        constexpr int PER_WORD = 32 / BITS;

        return w[i / PER_WORD] >> BITS * (i % PER_WORD) & ((1u << BITS) - 1);
}

/* Lanes whose digit equals this lane's: one ballot per digit bit, each
   vote narrowing the set. match.any would do it in one instruction, but a
   long-latency one that stalls the warp on the MIO pipe. */
SORTD_DEVICE unsigned warp_peers(uint32_t d)
{
        unsigned peers = FULL_MASK;

#pragma unroll
        for (int b = 0; b < RADIX_BITS; b++) {
                unsigned bit = d >> b & 1u;
                unsigned vote = __ballot_sync(FULL_MASK, bit);
                peers &= bit ? vote : ~vote;
        }
        return peers;
}

/*
 * Warp-level multi-split of one key a lane, digit d: the lowest of each digit's peers bumps the
 * warp's counter for all of them (16-bit counters, two digits to a word of hist: digit 2q in the
 * low half of word q). Returns the key's rank among the keys of its digit the warp has counted:
 * lanes are counted in order, so ranks are stable.
 */
SORTD_DEVICE uint32_t warp_rank(uint32_t *hist, uint32_t d)
{
        unsigned peers = warp_peers(d);
        int leader = __ffs(peers) - 1;
        uint32_t before = shared_atomic_add_if((int)lane_id() == leader, &hist[d / 2],
                                               (unsigned)__popc(peers) << 16 * (d & 1));

        before = __shfl_sync(FULL_MASK, before, leader) >> 16 * (d & 1) & 0xffff;
        return before + __popc(peers & lanemask_lt());
}

} /* namespace sortd_cuda */

#endif
