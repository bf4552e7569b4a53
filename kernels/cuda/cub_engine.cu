/*
 * The "cub" engine: CUB's DeviceRadixSort behind kernels/engine.h, a
 * benchmark peer for our kernels and a second opinion in the GPU suite. It is
 * never an oracle: like ours it is checked against the CPU engine (its
 * self-check, and tests/kernels/cuda/test_gpu_engines). It sorts the same mapped keys
 * as ours (keys.h, applied by convert_keys_kernel), so both engines agree bit
 * for bit; temporary storage is sized once, at create, for the largest
 * request the capacity allows. A sort on the caller's device memory gives
 * CUB's DoubleBuffers the caller's arrays as one side (caller_buffers.h).
 */
#include <cub/device/device_radix_sort.cuh>

#include <new>
#include <stdlib.h>

#include "cuda_backend.cuh"
#include "memory_ops.cuh"
#include "result_buffer.h"

using namespace sortd_cuda;

extern "C" const sortd__engine_ops sortd__cub_engine_ops;

namespace
{

/* A ping-pong pair of key and of value buffers: the engine's own, or with the caller's arrays
   in place of buffer 0 (caller_buffers.h). */
struct Buffers {
        void *keys[2], *vals[2];
};

struct cub_engine {
        sortd_engine base; /* first: the C side sees a sortd_engine */
        CudaBackend be;
        Buffers own;
        void *temp;
        size_t temp_bytes;
};

void cub_destroy(sortd_engine *e)
{
        cub_engine *c = (cub_engine *)e;
        void *dev[] = {c->own.keys[0], c->own.keys[1], c->own.vals[0], c->own.vals[1], c->temp};

        (void)cudaSetDevice(c->be.device);
        for (void *p : dev)
                if (p)
                        (void)cudaFree(p);
        c->be.close();
        c->~cub_engine();
        free(c);
}

/* Temporary bytes CUB needs to sort n keys K with values V (void: none). */
template <class K, class V> size_t temp_bytes_for(size_t n)
{
        size_t bytes = 0;
        cub::DoubleBuffer<K> k(nullptr, nullptr);

        if constexpr (std::is_same<V, void>::value) {
                (void)cub::DeviceRadixSort::SortKeys(nullptr, bytes, k, (int)n);
        } else {
                cub::DoubleBuffer<V> v(nullptr, nullptr);
                (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, (int)n);
        }
        return bytes;
}

size_t max_temp_bytes(size_t n)
{
        size_t sizes[] = {
                temp_bytes_for<uint32_t, void>(n),     temp_bytes_for<uint32_t, uint32_t>(n),
                temp_bytes_for<uint32_t, uint64_t>(n), temp_bytes_for<uint64_t, void>(n),
                temp_bytes_for<uint64_t, uint32_t>(n), temp_bytes_for<uint64_t, uint64_t>(n)};
        size_t m = 0;

        for (size_t s : sizes)
                m = s > m ? s : m;
        return m;
}

sortd_status cub_create(const sortd_engine_config *cfg, sortd_engine **out, char *why,
                        size_t why_len)
{
        cub_engine *c = engine_new<cub_engine>(&sortd__cub_engine_ops, cfg, why, why_len);
        size_t cap = cfg->capacity ? cfg->capacity : 1;
        sortd_status s;

        if (!c)
                return SORTD_E_NOMEM;
        if (cfg->capacity > (size_t)INT32_MAX) {
                sortd__engine_fail(&c->base, SORTD_E_UNSUPPORTED,
                                   "capacity %zu above the cub engine's limit of 2^31 - 1 keys",
                                   cfg->capacity);
                return create_failed(&c->base, SORTD_E_UNSUPPORTED, why, why_len, cub_destroy);
        }
        s = c->be.open(&c->base, cfg);
        if (s == SORTD_OK) {
                c->temp_bytes = max_temp_bytes(cap);
                if (!c->be.alloc(&c->own.keys[0], cap * 8, "keys") ||
                    !c->be.alloc(&c->own.keys[1], cap * 8, "keys") ||
                    !c->be.alloc(&c->own.vals[0], cap * 8, "values") ||
                    !c->be.alloc(&c->own.vals[1], cap * 8, "values") ||
                    !c->be.alloc(&c->temp, c->temp_bytes, "CUB temporary storage"))
                        s = SORTD_E_NOMEM;
        }
        if (s != SORTD_OK)
                return create_failed(&c->base, s, why, why_len, cub_destroy);
        *out = &c->base;
        return SORTD_OK;
}

/* Keys are mapped (and 8/16-bit keys widened) into b.keys[*key_buf]; values are in
   b.vals[*val_buf]. Both indices are updated to where CUB leaves the result. */
template <class K, class V>
bool cub_sort_typed(cub_engine *c, const Buffers &b, const sortd__plan *plan, uint32_t n,
                    int *key_buf, int *val_buf)
{
        cub::DoubleBuffer<K> k((K *)b.keys[*key_buf], (K *)b.keys[*key_buf ^ 1]);
        size_t bytes = c->temp_bytes;
        cudaError_t rc;

        if constexpr (std::is_same<V, void>::value) {
                rc = cub::DeviceRadixSort::SortKeys(c->temp, bytes, k, (int)n, (int)plan->begin_bit,
                                                    (int)plan->end_bit, c->be.stream);
        } else {
                cub::DoubleBuffer<V> v((V *)b.vals[*val_buf], (V *)b.vals[*val_buf ^ 1]);
                rc = cub::DeviceRadixSort::SortPairs(c->temp, bytes, k, v, (int)n,
                                                     (int)plan->begin_bit, (int)plan->end_bit,
                                                     c->be.stream);
                *val_buf = cub_result_buffer(*val_buf, v.selector);
        }
        *key_buf = cub_result_buffer(*key_buf, k.selector);
        return c->be.check(rc, "cub::DeviceRadixSort");
}

template <class K>
bool cub_sort_values(cub_engine *c, const Buffers &b, const sortd__plan *plan, uint32_t n, int *kb,
                     int *vb)
{
        switch (plan->val_bytes) {
        case 4:
                return cub_sort_typed<K, uint32_t>(c, b, plan, n, kb, vb);
        case 8:
                return cub_sort_typed<K, uint64_t>(c, b, plan, n, kb, vb);
        default:
                return cub_sort_typed<K, void>(c, b, plan, n, kb, vb);
        }
}

/* Maps keys into (widened) kernel keys, or back: in place for 32/64-bit
   keys, between the two buffers for 8/16-bit ones. */
template <class Narrow, class Wide>
bool map_keys(cub_engine *c, const Buffers &b, sortd__twiddle tw, uint32_t n, int *kb, bool inverse)
{
        CudaBackend &be = c->be;
        dim3 grid(elementwise_blocks(be, n)), block(CONVERT_THREADS);
        int from = *kb, to = sizeof(Narrow) == sizeof(Wide) ? from : from ^ 1;

        /* Unsigned ascending 32/64-bit keys need no map, so the device time
           sortbench reports for them is DeviceRadixSort's alone. */
        if (from == to && sortd__twiddle_is_identity(tw))
                return true;
        bool ok =
                inverse ? be.launch(convert_keys_kernel<Wide, Narrow>, grid, block,
                                    (const Wide *)b.keys[from], (Narrow *)b.keys[to], n, tw, true)
                        : be.launch(convert_keys_kernel<Narrow, Wide>, grid, block,
                                    (const Narrow *)b.keys[from], (Wide *)b.keys[to], n, tw, false);
        *kb = to;
        return ok;
}

template <class Narrow, class Wide>
bool cub_sort_keys(cub_engine *c, const Buffers &b, const sortd__plan *plan, uint32_t n, int *kb,
                   int *vb)
{
        sortd__twiddle tw = sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending);

        return map_keys<Narrow, Wide>(c, b, tw, n, kb, false) &&
               cub_sort_values<Wide>(c, b, plan, n, kb, vb) &&
               map_keys<Narrow, Wide>(c, b, tw, n, kb, true);
}

/* Sorts the keys (and values) in b.keys[0] (b.vals[0]); *kb and *vb name where the result is. */
bool cub_sort_in(cub_engine *c, const Buffers &b, const sortd__plan *plan, uint32_t n, int *kb,
                 int *vb)
{
        CudaBackend &be = c->be;
        dim3 grid(elementwise_blocks(be, n)), block(CONVERT_THREADS);

        *kb = *vb = 0;
        if (plan->argsort &&
            !(plan->val_bytes == 4
                      ? be.launch(iota_kernel<uint32_t>, grid, block, (uint32_t *)b.vals[0], n)
                      : be.launch(iota_kernel<uint64_t>, grid, block, (uint64_t *)b.vals[0], n)))
                return false;
        switch (plan->key_bytes) {
        case 1:
                return cub_sort_keys<uint8_t, uint32_t>(c, b, plan, n, kb, vb);
        case 2:
                return cub_sort_keys<uint16_t, uint32_t>(c, b, plan, n, kb, vb);
        case 4:
                return cub_sort_keys<uint32_t, uint32_t>(c, b, plan, n, kb, vb);
        default:
                return cub_sort_keys<uint64_t, uint64_t>(c, b, plan, n, kb, vb);
        }
}

sortd_status cub_sort(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals, size_t n)
{
        cub_engine *c = (cub_engine *)e;
        CudaBackend &be = c->be;
        int kb = 0, vb = 0;

        if (!be.select())
                return SORTD_E_DEVICE;
        return sort_finished(
                be, upload(be, plan, keys, vals, n, c->own.keys[0], c->own.vals[0]) &&
                            cub_sort_in(c, c->own, plan, (uint32_t)n, &kb, &vb) &&
                            download(be, plan, keys, vals, n, c->own.keys[kb], c->own.vals[vb]));
}

sortd_status cub_sort_device(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals,
                             size_t n)
{
        cub_engine *c = (cub_engine *)e;
        CallerArrays arrays = caller_arrays(plan, keys, vals, n);

        return sort_device(c->be, n, [&] {
                return sort_in_caller_buffers(
                        c->be, c->own, arrays, [&](const Buffers &b, int *kb, int *vb) {
                                return cub_sort_in(c, b, plan, (uint32_t)n, kb, vb);
                        });
        });
}

} /* namespace */

extern "C" const sortd__engine_ops sortd__cub_engine_ops = {
        "cub",
        cub_create,
        cub_sort,
        cub_destroy,
        sortd__selfcheck_against_cpu,
        host_alloc<cub_engine>,
        host_free,
        host_register<cub_engine>,
        host_unregister<cub_engine>,
        device_uuid<cub_engine>,
        ipc_open<cub_engine>,
        ipc_close<cub_engine>,
        cub_sort_device,
        nullptr, /* sort_batch: one sort at a time, for now */
        nullptr, /* sort_segments: SORTD_E_UNSUPPORTED until DeviceSegmentedSort is wired in */
        nullptr, /* topk: likewise */
        nullptr, /* columns_device: key columns and 16-byte keys in host memory only */
};
