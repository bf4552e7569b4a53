/*
 * Upfront histogram: one read of the keys counts the digits of every place.
 * Blocks walk the tiles cyclically into a block-private shared histogram,
 * then merge it into the global one with one atomic per non-empty bin.
 */
#ifndef SORTD_CUDA_AGENT_HISTOGRAM_CUH
#define SORTD_CUDA_AGENT_HISTOGRAM_CUH

#include "../keys.h"
#include "compat.cuh"
#include "policy.cuh"

namespace sortd_cuda
{

/* The digit of one place: bits [shift, shift + width) of a key. */
struct DigitPlace {
        unsigned shift;
        uint32_t mask;
};

SORTD_HOST_DEVICE DigitPlace digit_place(unsigned begin_bit, unsigned end_bit, unsigned place)
{
        unsigned shift = begin_bit + place * RADIX_BITS;
        unsigned width = end_bit - shift < (unsigned)RADIX_BITS ? end_bit - shift : RADIX_BITS;

        return DigitPlace{shift, (1u << width) - 1u};
}

template <class K> SORTD_DEVICE uint32_t digit_of(K key, DigitPlace p)
{
        return (uint32_t)(key >> p.shift) & p.mask;
}

template <class K> SORTD_DEVICE K twiddle_in(sortd__twiddle t, K x)
{
        return (K)sortd__twiddle_forward(t, (uint64_t)x);
}

template <class K> SORTD_DEVICE K twiddle_out(sortd__twiddle t, K x)
{
        return (K)sortd__twiddle_inverse(t, (uint64_t)x);
}

template <class Policy, class K> struct AgentHistogram {
        using P = typename Policy::histogram;
        static constexpr int PLACES = (int)sizeof(K); /* 8-bit digits */

        struct TempStorage {
                uint32_t bins[PLACES][RADIX];
        };

        TempStorage &s;
        const K *keys;
        uint32_t n;
        sortd__twiddle tw;
        unsigned begin_bit, end_bit, places;

        SORTD_DEVICE void clear()
        {
                static_assert(PLACES * RADIX % P::THREADS == 0, "every lane clears");
#pragma unroll
                for (int i = 0; i < PLACES * RADIX / P::THREADS; i++)
                        shared_store(&s.bins[0][0] + i * P::THREADS + threadIdx.x, 0u);
        }

        SORTD_DEVICE void count_tile(uint32_t base)
        {
                K k[P::ITEMS];

                /* blocked-striped: consecutive threads read consecutive keys */
#pragma unroll
                for (int i = 0; i < P::ITEMS; i++) {
                        uint32_t idx = base + i * P::THREADS + threadIdx.x;
                        k[i] = twiddle_in(tw, global_load_if(idx < n, keys + idx, K()));
                }
#pragma unroll
                for (int i = 0; i < P::ITEMS; i++) {
                        bool in = base + i * P::THREADS + threadIdx.x < n;
#pragma unroll
                        for (int p = 0; p < PLACES; p++)
                                if ((unsigned)p < places)
                                        shared_atomic_add_if(
                                                in,
                                                &s.bins[p][digit_of(
                                                        k[i], digit_place(begin_bit, end_bit, p))],
                                                1u);
                }
        }

        /* One global atomic per non-empty bin: a sparse histogram merges
           cheaply. */
        SORTD_DEVICE void merge(uint32_t *hist)
        {
                const uint32_t *flat = &s.bins[0][0];

                for (unsigned i = threadIdx.x; i < places * RADIX; i += P::THREADS) {
                        uint32_t c = shared_load(flat + i);
                        if (c)
                                atomicAdd(&hist[i], c);
                }
        }

        SORTD_DEVICE void run(uint32_t *hist)
        {
                clear();
                __syncthreads();
                for (uint32_t t = blockIdx.x; (uint64_t)t * P::TILE < n; t += gridDim.x)
                        count_tile(t * P::TILE);
                __syncthreads();
                merge(hist);
        }
};

} /* namespace sortd_cuda */

#endif
