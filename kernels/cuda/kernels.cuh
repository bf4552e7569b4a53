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
#include "agent_select.cuh"
#include "block_scan.cuh"
#include "compat.cuh"
#include "policy.cuh"

namespace sortd_cuda
{

/* Whether this compilation is for Policy's architectures. On the device a
   kernel of another architecture's policy builds as a trap, so that each
   architecture compiles only its own policies; host code may launch any,
   and with_tuning (policy.cuh) picks the one built. The emulator builds
   them all. */
#if defined(__CUDA_ARCH__)
template <class Policy>
constexpr bool built_here = (Policy::ARCH_BEGIN <= __CUDA_ARCH__) &&
                            (__CUDA_ARCH__ < Policy::ARCH_END);
#else
template <class Policy> constexpr bool built_here = true;
#endif

/* Digit counts of every place into hist[place][digit] (cleared). */
template <class Policy, class K>
__global__ void __launch_bounds__(Policy::histogram::THREADS)
        histogram_kernel(const K *keys, uint32_t n, uint32_t *hist, sortd__twiddle tw,
                         unsigned begin_bit, unsigned end_bit, unsigned places)
{
        if constexpr (built_here<Policy>) {
                using Agent = AgentHistogram<Policy, K>;
                SORTD_SHARED(typename Agent::TempStorage, temp);
                begin_kernel("histogram");
                Agent{temp, keys, n, tw, begin_bit, end_bit, places}.run(hist);
        } else {
                not_built_here();
        }
}

/* One block of one warp per place: global exclusive bin offsets, which are
   the first strip's. (A template only so that every file including this
   one may define it.) */
template <class Policy>
__global__ void __launch_bounds__(32) scan_kernel(const uint32_t *hist, uint32_t *offsets)
{
        begin_kernel("scan");
        warp_exclusive_scan_radix(hist + blockIdx.x * RADIX, offsets + blockIdx.x * RADIX);
}

/* One binning pass: one block per tile (the tile itself comes from the
   ticket, not from blockIdx). */
template <class Policy, class K, class V>
__global__ void __launch_bounds__(AgentBinning<Policy, K, V>::THREADS,
                                  AgentBinning<Policy, K, V>::P::MIN_BLOCKS)
        binning_kernel(BinningParams<K, V> params)
{
        if constexpr (built_here<Policy>) {
                using Agent = AgentBinning<Policy, K, V>;
                auto &temp = temp_storage<typename Agent::TempStorage>();
                begin_kernel("binning");
                Agent(temp, params).process();
        } else {
                not_built_here();
        }
}

/* A batch's small members (segments.h): block b sorts segment b whole, in shared memory. */
template <class Policy, class K>
__global__ void __launch_bounds__(Policy::THREADS) segmented_sort_kernel(SegmentedParams params)
{
        using Agent = AgentBlockSort<Policy, K>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        begin_kernel("segmented");
        Agent(temp, params, global_load(params.segs + blockIdx.x)).process();
}

/* A single sort of up to one block's tile, whole, in shared memory (dispatch.cuh: small_sort): the
   segmented kernel's one block, its descriptor in the launch, so that nothing is uploaded. */
template <class Policy, class K>
__global__ void __launch_bounds__(Policy::THREADS)
        small_sort_kernel(SegmentedParams params, Segment seg)
{
        using Agent = AgentBlockSort<Policy, K>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        begin_kernel("small-sort");
        Agent(temp, params, seg).process();
}

/* Elementwise key conversion between widths, through the key map: widens
   8/16-bit keys for the kernels, narrows them back, or maps keys in place
   for CUB. */
template <class In, class Out>
__global__ void convert_keys_kernel(const In *in, Out *out, uint32_t n, sortd__twiddle tw,
                                    bool inverse)
{
        begin_kernel("convert");
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

/* Radix select (agent_select.cuh): one level's digit counts of the keys it filters, and those
   keys kept for the next level. */
template <class Policy, class K, bool MAPPED>
__global__ void __launch_bounds__(Policy::THREADS)
        select_histogram_kernel(SelectInput in, SelectLevel lv, uint32_t *hist, SelectOutput out)
{
        using Agent = AgentSelectHistogram<K, MAPPED>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        begin_kernel("select-histogram");
        Agent{temp, in, lv}.run(hist, out);
}

/* Radix select: each tile's number of keys in the cut. */
template <class Policy, class K>
__global__ void __launch_bounds__(Policy::THREADS)
        select_count_kernel(SelectInput in, SelectCut cut, uint32_t *tile_counts)
{
        using Agent = AgentSelectGather<Policy, K>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        begin_kernel("select-count");
        Agent{temp, in, cut}.count(tile_counts);
}

/* Radix select: the tiles' counts become their starts, by one warp. (A template only so that
   every file including this one may define it.) */
template <class Policy>
__global__ void __launch_bounds__(32) select_scan_kernel(uint32_t *counts, uint32_t tiles)
{
        begin_kernel("select-scan");
        warp_exclusive_scan(counts, tiles);
}

/* Radix select: the keys in the cut, and their payload, from their tile's start in order. */
template <class Policy, class K, class V>
__global__ void __launch_bounds__(Policy::THREADS)
        select_gather_kernel(SelectInput in, SelectCut cut, const uint32_t *tile_starts,
                             const V *vals_in, bool argsort, bool payload, K *keys_out, V *vals_out)
{
        using Agent = AgentSelectGather<Policy, K>;
        SORTD_SHARED(typename Agent::TempStorage, temp);
        begin_kernel("select-gather");
        Agent{temp, in, cut}.template gather<V>(tile_starts, vals_in, argsort, payload, keys_out,
                                                vals_out);
}

/* Top-k's gather (segment_sort.cuh): per_range blocks share each range of ranges (block b
   takes range b / per_range), and copy its elements from src to dst. */
template <class T>
__global__ void gather_kernel(const CopyRange *ranges, unsigned per_range, const T *src, T *dst)
{
        begin_kernel("gather");
        const CopyRange r = global_load(ranges + blockIdx.x / per_range);
        const unsigned part = blockIdx.x % per_range;

        /* block-uniform bounds, so that every lane makes every access call */
        for (uint64_t base = (uint64_t)part * blockDim.x; base < r.count;
             base += (uint64_t)blockDim.x * per_range) {
                uint64_t i = base + threadIdx.x;
                T v = global_load_if(i < r.count, src + r.src + i, T());

                global_store_if(i < r.count, dst + r.dst + i, v);
        }
}

/* argsort when no pass runs, and CUB's input permutation. */
template <class V> __global__ void iota_kernel(V *out, uint32_t n)
{
        begin_kernel("iota");
        for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < n;
             base += (uint64_t)blockDim.x * gridDim.x) {
                uint64_t i = base + threadIdx.x;
                global_store_if(i < n, out + i, (V)i);
        }
}

} /* namespace sortd_cuda */

#endif
