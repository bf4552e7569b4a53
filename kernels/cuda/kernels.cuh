/*
 * The kernels: thin entry points, one job each, that give an agent its
 * shared memory and run it. The same source compiles with nvcc and, for the
 * tests, as C++ against tests/support/simt/simt.h.
 */
#ifndef SORTD_CUDA_KERNELS_CUH
#define SORTD_CUDA_KERNELS_CUH

#include "agent_binning.cuh"
#include "agent_histogram.cuh"
#include "block_scan.cuh"
#include "compat.cuh"
#include "policy.cuh"

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
        Agent{temp, keys, n, tw, begin_bit, end_bit, places}.run(hist);
}

/* One block of one warp per place: global exclusive bin offsets. (A
   template only so that every file including this one may define it.) */
template <class Policy>
__global__ void __launch_bounds__(32) scan_kernel(const uint32_t *hist, uint32_t *offsets)
{
        warp_exclusive_scan_radix(hist + blockIdx.x * RADIX, offsets + blockIdx.x * RADIX);
}

/* One binning pass: one block per tile (the tile itself comes from the
   ticket, not from blockIdx). */
template <class Policy, class K, class V>
__global__ void __launch_bounds__(Policy::binning::THREADS)
        binning_kernel(BinningParams<K, V> params)
{
        using Agent = AgentBinning<Policy, K, V>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        Agent(temp, params).process();
}

/* Elementwise key conversion between widths, through the key map: widens
   8/16-bit keys for the kernels, narrows them back, or maps keys in place
   for CUB. */
template <class In, class Out>
__global__ void convert_keys_kernel(const In *in, Out *out, uint32_t n, sortd__twiddle tw,
                                    bool inverse)
{
        for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += blockDim.x * gridDim.x) {
                uint64_t x = (uint64_t)in[i];
                out[i] = (Out)(inverse ? sortd__twiddle_inverse(tw, x)
                                       : sortd__twiddle_forward(tw, x));
        }
}

/* argsort when no pass runs, and CUB's input permutation. */
template <class V> __global__ void iota_kernel(V *out, uint32_t n)
{
        for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
                out[i] = (V)i;
}

} /* namespace sortd_cuda */

#endif
