/*
 * The steps of a sort by key columns (columns/columns.h) on device memory, for an engine struct
 * E with members base, be (cuda_backend.cuh) and buf (dispatch.cuh): a kernel for each loop over
 * the rows, the engine's own sort of device arrays for the words. Each step
 * ends when its work on the stream does, so that a failure is the step's. Whether a fill's words
 * differ comes back through the histogram table and its pinned copy, which no sort uses between
 * its launches. Rows are counted in 32 bits, as the engine's capacity allows.
 */
#ifndef SORTD_CUDA_COLUMNS_DEVICE_CUH
#define SORTD_CUDA_COLUMNS_DEVICE_CUH

#include "../columns/columns.h"
#include "cuda_backend.cuh"
#include "segment_sort.cuh"

namespace sortd_cuda
{

/* A group's columns, their maps by value: the launch carries them. */
struct ColumnsFill {
        sortd__column_map maps[SORTD_MAX_COLUMNS];
        unsigned count, part, perm_bytes;
        const void *perm; /* NULL: rows 0..n */
        uint64_t *out;
        uint32_t *differ; /* set when a word differs from the first */
        uint32_t n;
};

template <class I> SORTD_DEVICE size_t columns_row(const I *perm, uint32_t i)
{
        return perm ? (size_t)perm[i] : i;
}

template <class I> SORTD_DEVICE bool columns_fill_rows(const ColumnsFill &f, const I *perm)
{
        const uint64_t first = sortd__group_word(f.maps, f.count, f.part, columns_row(perm, 0));
        bool differ = false;

        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < f.n;
             i += (uint64_t)blockDim.x * gridDim.x) {
                uint64_t w =
                        sortd__group_word(f.maps, f.count, f.part, columns_row(perm, (uint32_t)i));

                f.out[i] = w;
                differ |= w != first;
        }
        return differ;
}

__global__ void __launch_bounds__(CONVERT_THREADS) columns_fill_kernel(ColumnsFill f)
{
        bool differ;

        begin_kernel("columns fill");
        differ = f.perm_bytes == 8 ? columns_fill_rows(f, (const uint64_t *)f.perm)
                                   : columns_fill_rows(f, (const uint32_t *)f.perm);
        if (differ)
                *f.differ = 1; /* every writer stores the same value */
}

/* out[i] = in[i] in another index width. */
template <class To, class From>
__global__ void __launch_bounds__(CONVERT_THREADS)
        columns_indices_kernel(To *out, const From *in, uint32_t n)
{
        begin_kernel("columns indices");
        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (uint64_t)blockDim.x * gridDim.x)
                out[i] = (To)in[i];
}

/* data[i] = from[perm[i]]. */
template <class T, class I>
__global__ void __launch_bounds__(CONVERT_THREADS)
        columns_gather_kernel(T *data, const T *from, const I *perm, uint32_t n)
{
        begin_kernel("columns gather");
        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (uint64_t)blockDim.x * gridDim.x)
                data[i] = from[perm[i]];
}

/* Segments as the kernels read them: uniform rows, or count + 1 offsets in device memory. */
struct DeviceSegments {
        uint64_t count, row_len;
        const void *offsets; /* NULL: rows */
        unsigned offset_bytes;
};

SORTD_DEVICE uint64_t offset_at(const void *offsets, unsigned bytes, uint64_t i)
{
        return bytes == 4 ? ((const uint32_t *)offsets)[i] : ((const uint64_t *)offsets)[i];
}

/* The last of count offsets (never decreasing, the first 0) that is at most i: the segment
   that holds row i, empty segments at its first row being before it. */
SORTD_DEVICE uint64_t last_at_most(const void *offsets, unsigned bytes, uint64_t count, uint64_t i)
{
        uint64_t lo = 0, hi = count;

        while (hi - lo > 1) {
                uint64_t mid = lo + (hi - lo) / 2;

                if (offset_at(offsets, bytes, mid) <= i)
                        lo = mid;
                else
                        hi = mid;
        }
        return lo;
}

/* idx[i] less the first row of i's segment. */
template <class I>
__global__ void __launch_bounds__(CONVERT_THREADS)
        columns_rebase_kernel(I *idx, DeviceSegments s, uint64_t n)
{
        begin_kernel("columns rebase");
        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (uint64_t)blockDim.x * gridDim.x) {
                uint64_t first =
                        s.offsets ? offset_at(s.offsets, s.offset_bytes,
                                              last_at_most(s.offsets, s.offset_bytes, s.count, i))
                                  : i / s.row_len * s.row_len;

                idx[i] -= (I)first;
        }
}

inline dim3 columns_grid(CudaBackend &be, size_t n)
{
        return dim3(elementwise_blocks(be, (uint32_t)n));
}

/* A step's end: its work done, or drained after a failure, with the failure's status. */
inline sortd_status columns_step(CudaBackend &be, bool queued)
{
        return sort_finished(be, queued && be.wait());
}

/*
 * The workspace is stream-ordered (cudaMallocAsync): cudaFree would wait for the whole device,
 * the other lane's sort on it included, where this waits for our stream alone.
 */
template <class E> void *columns_alloc(sortd_engine *e, size_t bytes)
{
        CudaBackend &be = ((E *)e)->be;
        void *p = nullptr;

        if (!be.select())
                return nullptr;
        if (be.check(cudaMallocAsync(&p, bytes ? bytes : 1, be.stream),
                     "cudaMallocAsync (the key columns' workspace)"))
                return p;
        return nullptr;
}

template <class E> void columns_release(sortd_engine *e, void *p)
{
        CudaBackend &be = ((E *)e)->be;

        if (!be.select() || cudaFreeAsync(p, be.stream) != cudaSuccess)
                (void)cudaGetLastError();
        be.drain(); /* the memory back before the call returns */
}

template <class E>
sortd_status columns_copy(sortd_engine *e, void *to, const void *from, size_t bytes)
{
        CudaBackend &be = ((E *)e)->be;

        return columns_step(be, be.select() && be.copy_device(to, from, bytes));
}

template <class E>
sortd_status columns_fill(sortd_engine *e, const sortd__column_group *g, unsigned part,
                          const void *perm, unsigned perm_bytes, uint64_t *out, size_t n,
                          bool *differ)
{
        E *c = (E *)e;
        CudaBackend &be = c->be;
        ColumnsFill f = {};
        bool ok;

        for (unsigned j = 0; j < g->count; j++)
                f.maps[j] = g->maps[j];
        f.count = g->count;
        f.part = part;
        f.perm_bytes = perm_bytes;
        f.perm = perm;
        f.out = out;
        f.differ = c->buf.hist;
        f.n = (uint32_t)n;
        ok = be.select() && be.clear(c->buf.hist, sizeof(uint32_t)) &&
             be.launch(columns_fill_kernel, columns_grid(be, n), dim3(CONVERT_THREADS), f) &&
             be.to_host(c->buf.hist_host, c->buf.hist, sizeof(uint32_t));
        *differ = ok && c->buf.hist_host[0] != 0;
        return columns_step(be, ok);
}

template <class E>
sortd_status columns_identity(sortd_engine *e, void *perm, unsigned perm_bytes, size_t n)
{
        CudaBackend &be = ((E *)e)->be;
        dim3 grid = columns_grid(be, n), block(CONVERT_THREADS);

        return columns_step(
                be, be.select() && (perm_bytes == 4 ? be.launch(iota_kernel<uint32_t>, grid, block,
                                                                (uint32_t *)perm, (uint32_t)n)
                                                    : be.launch(iota_kernel<uint64_t>, grid, block,
                                                                (uint64_t *)perm, (uint32_t)n)));
}

template <class E>
sortd_status columns_indices(sortd_engine *e, void *out, unsigned out_bytes, const void *perm,
                             unsigned perm_bytes, size_t n)
{
        CudaBackend &be = ((E *)e)->be;
        dim3 grid = columns_grid(be, n), block(CONVERT_THREADS);
        bool ok = be.select();

        if (ok && out_bytes == perm_bytes)
                ok = be.copy_device(out, perm, n * perm_bytes);
        else if (ok && out_bytes == 8)
                ok = be.launch(columns_indices_kernel<uint64_t, uint32_t>, grid, block,
                               (uint64_t *)out, (const uint32_t *)perm, (uint32_t)n);
        else if (ok)
                ok = be.launch(columns_indices_kernel<uint32_t, uint64_t>, grid, block,
                               (uint32_t *)out, (const uint64_t *)perm, (uint32_t)n);
        return columns_step(be, ok);
}

template <class T>
bool columns_gather(CudaBackend &be, void *data, const void *from, const void *perm,
                    unsigned perm_bytes, size_t n)
{
        dim3 grid = columns_grid(be, n), block(CONVERT_THREADS);

        return perm_bytes == 4
                       ? be.launch(columns_gather_kernel<T, uint32_t>, grid, block, (T *)data,
                                   (const T *)from, (const uint32_t *)perm, (uint32_t)n)
                       : be.launch(columns_gather_kernel<T, uint64_t>, grid, block, (T *)data,
                                   (const T *)from, (const uint64_t *)perm, (uint32_t)n);
}

template <class E>
sortd_status columns_reorder(sortd_engine *e, void *data, unsigned bytes, const void *perm,
                             unsigned perm_bytes, void *scratch, size_t n)
{
        CudaBackend &be = ((E *)e)->be;
        bool ok =
                be.select() && be.copy_device(scratch, data, n * bytes) &&
                with_width(bytes, [&](auto t) {
                        return columns_gather<decltype(t)>(be, data, scratch, perm, perm_bytes, n);
                });

        return columns_step(be, ok);
}

/* seg with its offsets (if any) copied to device memory for the call, at *dev (release it after
   the kernels). */
template <class E>
bool device_segments(sortd_engine *e, const sortd_segments *seg, DeviceSegments *d, void **dev)
{
        CudaBackend &be = ((E *)e)->be;
        const size_t bytes = seg->offsets ? (seg->count + 1) * seg->offset_bytes : 0;

        *d = DeviceSegments{seg->count, seg->row_len, nullptr, seg->offset_bytes};
        *dev = nullptr;
        if (!bytes)
                return true;
        *dev = columns_alloc<E>(e, bytes);
        d->offsets = *dev;
        return *dev && be.copy(*dev, seg->offsets, bytes, cudaMemcpyHostToDevice);
}

template <class E>
sortd_status columns_rebase(sortd_engine *e, void *idx, unsigned idx_bytes,
                            const sortd_segments *seg, size_t n)
{
        CudaBackend &be = ((E *)e)->be;
        DeviceSegments d;
        void *dev = nullptr;
        dim3 grid = columns_grid(be, n), block(CONVERT_THREADS);
        bool ok = be.select() && device_segments<E>(e, seg, &d, &dev);

        if (ok && idx_bytes == 4)
                ok = be.launch(columns_rebase_kernel<uint32_t>, grid, block, (uint32_t *)idx, d,
                               (uint64_t)n);
        else if (ok)
                ok = be.launch(columns_rebase_kernel<uint64_t>, grid, block, (uint64_t *)idx, d,
                               (uint64_t)n);
        ok = ok && be.wait();
        if (dev)
                columns_release<E>(e, dev);
        return columns_step(be, ok);
}

/* The top-k's gather of the cuda engine's own (segment_sort.cuh), on its descriptor chunk. */
template <class E>
sortd_status columns_take_firsts(sortd_engine *e, const sortd_segments *seg, uint64_t k,
                                 const void *keys, unsigned key_bytes, const void *vals,
                                 unsigned val_bytes, void *out_keys, void *out_vals, size_t n)
{
        E *c = (E *)e;
        sortd__plan p = {};
        SegmentedArrays sorted = {&p, seg, (unsigned char *)keys, (unsigned char *)vals, n};

        p.key_bytes = key_bytes; /* all the gather reads of the plan */
        p.val_bytes = val_bytes;
        return columns_step(c->be, c->be.select() && gather_topk(c->be, c->chunk, sorted, k,
                                                                 out_keys, out_vals));
}

} /* namespace sortd_cuda */

#endif
