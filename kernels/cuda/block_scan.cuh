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

} /* namespace sortd_cuda */

#endif
