/*
 * Runs the CUDA engine's dispatch and kernels (kernels/cuda/) on the SIMT
 * emulator, with host memory standing in for device memory: the same code
 * path as the `cuda` engine from "keys are on the device" to "sorted keys
 * are on the device".
 */
#ifndef SORTD_TESTS_EMULATED_SORT_H
#define SORTD_TESTS_EMULATED_SORT_H

#include "simt.h" /* first: kernels compile against it */

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/dispatch.cuh" /* -I kernels/ */

namespace emulated
{

/* A host-memory stand-in for a CUDA stream. */
struct Backend {
        unsigned sms = 3;

        template <class... P, class... A>
        bool launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args)
        {
                simt::launch(grid, block, [&] { kernel(args...); });
                return true;
        }
        bool clear(void *dev, size_t bytes)
        {
                std::memset(dev, 0, bytes);
                return true;
        }
        bool to_host(void *host, const void *dev, size_t bytes)
        {
                std::memcpy(host, dev, bytes);
                return true;
        }
        unsigned sm_count() const
        {
                return sms;
        }
};

/* The plan fields the engine would derive from a desc (kernels/engine.c). */
inline sortd__key_kind key_kind(sortd_key_type t)
{
        switch (t) {
        case SORTD_KEY_I8:
        case SORTD_KEY_I16:
        case SORTD_KEY_I32:
        case SORTD_KEY_I64:
                return SORTD__KEY_SIGNED;
        case SORTD_KEY_F32:
        case SORTD_KEY_F64:
                return SORTD__KEY_FLOAT;
        default:
                return SORTD__KEY_UNSIGNED;
        }
}

/* Sorts like sortd_engine_sort() would with the cuda engine, n >= 2. */
template <class P32, class P64>
void sort(const sortd_sort_desc &d, void *keys, void *vals, size_t n)
{
        unsigned kb = (unsigned)sortd_key_size(d.key_type);
        unsigned vb = (unsigned)sortd_payload_size(d.payload);
        bool argsort = d.payload == SORTD_PAYLOAD_ARGSORT32 || d.payload == SORTD_PAYLOAD_ARGSORT64;
        std::vector<uint64_t> k0(n), k1(n), v0(n), v1(n);
        std::vector<uint32_t> hist(sortd_cuda::MAX_PLACES * sortd_cuda::RADIX),
                offsets(hist.size()), hist_host(hist.size()), tickets(sortd_cuda::MAX_PLACES),
                status(sortd_cuda::status_words<P32, P64>(n));
        sortd_cuda::DeviceBuffers b = {
                {k0.data(), k1.data()}, {v0.data(), v1.data()}, hist.data(),     offsets.data(),
                tickets.data(),         status.data(),          hist_host.data()};
        sortd_cuda::SortRequest r;
        sortd_cuda::SortResult res;
        Backend be;

        r.n = (uint32_t)n;
        r.key_bytes = kb;
        r.val_bytes = vb;
        r.argsort = argsort;
        r.tw = sortd__twiddle_make(kb, key_kind(d.key_type), d.order == SORTD_DESCENDING);
        r.begin_bit = d.begin_bit;
        r.end_bit = d.end_bit ? d.end_bit : kb * 8;
        std::memcpy(k0.data(), keys, n * kb);
        if (vb && !argsort)
                std::memcpy(v0.data(), vals, n * vb);
        if (!sortd_cuda::onesweep_sort<P32, P64>(be, b, r, &res))
                std::abort();
        std::memcpy(keys, b.keys[res.key_buf], n * kb);
        if (vb)
                std::memcpy(vals, b.vals[res.val_buf], n * vb);
}

} /* namespace emulated */

#endif
