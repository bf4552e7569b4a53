/*
 * The kernels: thin entry points, one job each, that give an agent its
 * shared memory and run it. The same source compiles with nvcc and, for the
 * tests, as C++ against tests/support/simt/simt.h.
 */
#ifndef SORTD_CUDA_KERNELS_CUH
#define SORTD_CUDA_KERNELS_CUH

#include "agent_binning.cuh"
#include "agent_block_sort.cuh"
#include "agent_histogram.cuh"
#include "block_scan.cuh"
#include "compat.cuh"
#include "policy.cuh"

/* A binning policy's MIN_BLOCKS caps registers for occupancy. nvcc 13.0's
   ptxas for sm_100 spills the capped kernels (even u32 keys at a 128-register
   cap) where sm_75..sm_90 do not, so there the cap is lifted until sm_100
   has a policy tuned on one. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define SORTD_MIN_BLOCKS(...) 1
#else
#define SORTD_MIN_BLOCKS(...) (__VA_ARGS__)
#endif

namespace sortd_cuda
{

/* Digit counts of every place into hist[place][digit] (cleared). */
template <class Policy, class K>
__global__ void __launch_bounds__(Policy::histogram::THREADS)
        histogram_kernel(const K *keys, uint32_t n, uint32_t *hist, sortd__twiddle tw,
                         unsigned begin_bit, unsigned end_bit, unsigned places)
{
        using Agent = AgentHistogram<Policy, K>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        note_kernel("histogram");
        Agent{temp, keys, n, tw, begin_bit, end_bit, places}.run(hist);
}

/* One block of one warp per place: global exclusive bin offsets, which are
   the first strip's. (A template only so that every file including this
   one may define it.) */
template <class Policy>
__global__ void __launch_bounds__(32) scan_kernel(const uint32_t *hist, uint32_t *offsets)
{
        note_kernel("scan");
        warp_exclusive_scan_radix(hist + blockIdx.x * RADIX, offsets + blockIdx.x * RADIX);
}

/* One binning pass: one block per tile (the tile itself comes from the
   ticket, not from blockIdx). */
template <class Policy, class K, class V>
__global__ void __launch_bounds__(AgentBinning<Policy, K, V>::THREADS,
                                  SORTD_MIN_BLOCKS(AgentBinning<Policy, K, V>::P::MIN_BLOCKS))
        binning_kernel(BinningParams<K, V> params)
{
        using Agent = AgentBinning<Policy, K, V>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        note_kernel("binning");
        Agent(temp, params).process();
}

/* A batch's small members (segments.h): block b sorts segment b whole, in shared memory. */
template <class Policy, class K>
__global__ void __launch_bounds__(Policy::THREADS) segmented_sort_kernel(SegmentedParams params)
{
        using Agent = AgentBlockSort<Policy, K>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        note_kernel("segmented");
        Agent(temp, params).process();
}

/* Elementwise key conversion between widths, through the key map: widens
   8/16-bit keys for the kernels, narrows them back, or maps keys in place
   for CUB. */
template <class In, class Out>
__global__ void convert_keys_kernel(const In *in, Out *out, uint32_t n, sortd__twiddle tw,
                                    bool inverse)
{
        note_kernel("convert");
        /* a block-uniform stride, so every lane makes every access call;
           64-bit, so the last step cannot wrap past n */
        for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < n;
             base += (uint64_t)blockDim.x * gridDim.x) {
                uint64_t i = base + threadIdx.x;
                uint64_t x = (uint64_t)global_load_if(i < n, in + i, In());

                global_store_if(i < n, out + i,
                                (Out)(inverse ? sortd__twiddle_inverse(tw, x)
                                              : sortd__twiddle_forward(tw, x)));
        }
}

/* argsort when no pass runs, and CUB's input permutation. */
template <class V> __global__ void iota_kernel(V *out, uint32_t n)
{
        note_kernel("iota");
        for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < n;
             base += (uint64_t)blockDim.x * gridDim.x) {
                uint64_t i = base + threadIdx.x;
                global_store_if(i < n, out + i, (V)i);
        }
}

} /* namespace sortd_cuda */

#endif
