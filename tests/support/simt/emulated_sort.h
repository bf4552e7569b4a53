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
        unsigned copies = 0; /* copy_device calls */
        unsigned waits = 0;  /* to_host calls: the host waits for the stream */

        template <class... P, class... A>
        bool launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args)
        {
                simt::launch(grid, block, [&] { kernel(args...); });
                return true;
        }
        /* The emulator's shared memory has no static limit. */
        template <class... P, class... A>
        bool launch_with(size_t dynamic_shared_bytes, void (*kernel)(P...), dim3 grid, dim3 block,
                         A... args)
        {
                (void)dynamic_shared_bytes;
                return launch(kernel, grid, block, args...);
        }
        bool clear(void *dev, size_t bytes)
        {
                simt::cost_memset(dev, bytes);
                std::memset(dev, 0, bytes);
                return true;
        }
        bool to_host(void *host, const void *dev, size_t bytes)
        {
                waits++;
                std::memcpy(host, dev, bytes);
                return true;
        }
        bool copy_device(void *dst, const void *src, size_t bytes)
        {
                copies++;
                std::memcpy(dst, src, bytes);
                return true;
        }
        unsigned sm_count() const
        {
                return sms;
        }
};

/* The cuda engine's own device memory for n keys, in host memory. */
template <class P32, class P64> struct Memory {
        std::vector<uint64_t> k0, k1, v0, v1;
        std::vector<uint32_t> offsets, hist, hist_host, tickets, status;
        sortd_cuda::DeviceBuffers b;

        explicit Memory(size_t n)
            : k0(n), k1(n), v0(n), v1(n),
              offsets(sortd_cuda::strip_count<P32, P64>(n) * sortd_cuda::TABLE),
              hist(sortd_cuda::TABLE), hist_host(sortd_cuda::TABLE),
              tickets(sortd_cuda::strip_count<P32, P64>(n) * sortd_cuda::MAX_PLACES),
              status(sortd_cuda::status_words<P32, P64>(n))
        {
                b = {{k0.data(), k1.data()}, {v0.data(), v1.data()}, hist.data(),
                     offsets.data(),         tickets.data(),         status.data(),
                     hist_host.data()};
        }
};

/* The request the cuda engine makes of d (kernels/cuda/cuda_engine.cu). */
inline sortd_cuda::SortRequest request(const sortd_sort_desc &d, size_t n)
{
        sortd_cuda::SortRequest r;
        unsigned kb = (unsigned)sortd_key_size(d.key_type);

        r.n = (uint32_t)n;
        r.key_bytes = kb;
        r.val_bytes = (unsigned)sortd_payload_size(d.payload);
        r.argsort = d.payload == SORTD_PAYLOAD_ARGSORT32 || d.payload == SORTD_PAYLOAD_ARGSORT64;
        r.kind = sortd__key_kind_of(d.key_type);
        r.descending = d.order == SORTD_DESCENDING;
        r.tw = sortd__twiddle_make(kb, r.kind, r.descending);
        r.begin_bit = d.begin_bit;
        r.end_bit = d.end_bit ? d.end_bit : kb * 8;
        return r;
}

/* Sorts like sortd_engine_sort() would with the cuda engine's Onesweep, n >= 2. Returns how
   often the host waited for the stream. */
template <class P32, class P64>
unsigned sort(const sortd_sort_desc &d, void *keys, void *vals, size_t n)
{
        Memory<P32, P64> m(n);
        sortd_cuda::SortRequest r = request(d, n);
        sortd_cuda::SortResult res;
        Backend be;

        std::memcpy(m.k0.data(), keys, n * r.key_bytes);
        if (r.val_bytes && !r.argsort)
                std::memcpy(m.v0.data(), vals, n * r.val_bytes);
        if (!sortd_cuda::onesweep_sort<P32, P64>(be, m.b, r, &res))
                std::abort();
        std::memcpy(keys, m.b.keys[res.key_buf], n * r.key_bytes);
        if (r.val_bytes)
                std::memcpy(vals, m.b.vals[res.val_buf], n * r.val_bytes);
        return be.waits;
}

/*
 * Sorts like sortd_engine_sort_device() would with the cuda engine, any n: keys and vals stand
 * in for the caller's device arrays. Returns the device-to-device copies it made.
 */
template <class P32, class P64>
unsigned sort_device(const sortd_sort_desc &d, void *keys, void *vals, size_t n)
{
        Memory<P32, P64> m(n);
        Backend be;

        if (!sortd_cuda::onesweep_sort_device<P32, P64>(be, m.b, request(d, n), keys, vals))
                std::abort();
        return be.copies;
}

} /* namespace emulated */

#endif
