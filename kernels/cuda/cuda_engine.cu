/*
 * The "cuda" engine: our Onesweep kernels behind kernels/engine.h. Creates
 * everything for its capacity up front (ping-pong key and value buffers,
 * histograms, offsets, status counters, tile tickets, the stream); a sort
 * uploads, dispatches (dispatch.cuh) and downloads, allocating nothing; a sort on
 * the caller's device memory dispatches with the caller's arrays as one side of
 * the ping-pong (caller_buffers.h). A batch sorts its small members together, with the
 * segmented kernel (segments.h), and its large ones one at a time. Segmented sorts and top-k
 * run segment_sort.cuh on the same buffers, with a chunk of descriptors of their own.
 */
#include <new>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columns_device.cuh"
#include "cuda_backend.cuh"
#include "graph_cache.h"
#include "memory_ops.cuh"
#include "segment_sort.cuh"

using namespace sortd_cuda;

/* Also declared by engine_impl.h's registry; repeated so this file stands alone. */
extern "C" const sortd__engine_ops sortd__cuda_engine_ops;

namespace
{

struct cuda_engine {
        sortd_engine base; /* first: the C side sees a sortd_engine */
        CudaBackend be;
        DeviceBuffers buf;
        int arch; /* of the kernels the device runs, as __CUDA_ARCH__ counts: with_tuning */
        Segment *segs_dev, *segs_host; /* a sub-batch's descriptors; the host's are pinned */
        DescriptorChunk chunk;         /* segmented sorts' and top-k's; the host's pinned */
        GraphCache graphs;             /* single sorts' launch sequences, by shape */
};

void cuda_destroy(sortd_engine *e)
{
        cuda_engine *c = (cuda_engine *)e;
        void *dev[] = {c->buf.keys[0], c->buf.keys[1], c->buf.vals[0],      c->buf.vals[1],
                       c->buf.hist,    c->buf.offsets, c->buf.tile_tickets, c->buf.status};

        (void)cudaSetDevice(c->be.device);
        c->graphs.clear();
        for (void *p : dev)
                if (p)
                        (void)cudaFree(p);
        if (c->segs_dev)
                (void)cudaFree(c->segs_dev);
        if (c->chunk.dev)
                (void)cudaFree(c->chunk.dev);
        if (c->chunk.host)
                (void)cudaFreeHost(c->chunk.host);
        if (c->buf.hist_host)
                (void)cudaFreeHost(c->buf.hist_host);
        if (c->segs_host)
                (void)cudaFreeHost(c->segs_host);
        c->be.close();
        c->~cuda_engine();
        free(c);
}

/* The code the device runs is the build's newest for it: its PTX version, which every one of
   our kernels shares, names the policies (with_tuning). The device's name says which. */
bool kernel_arch(cuda_engine *c)
{
        cudaFuncAttributes a;
        size_t len = strlen(c->base.device);

        if (!c->be.check(cudaFuncGetAttributes(&a, iota_kernel<uint32_t>), "cudaFuncGetAttributes"))
                return false;
        c->arch = a.ptxVersion * 10;
        c->be.pdl = PDL && c->arch >= PDL_MIN_ARCH;
        snprintf(c->base.device + len, sizeof(c->base.device) - len, ", kernels for sm_%d%s",
                 a.ptxVersion, SORTD_TUNE_NOTE);
        return true;
}

template <class Tuning> bool allocate(cuda_engine *c, size_t cap)
{
        using P32 = typename Tuning::P32;
        using P64 = typename Tuning::P64;
        CudaBackend &be = c->be;
        DeviceBuffers &b = c->buf;
        const size_t strips = strip_count<P32, P64>(cap);
        const size_t table = sizeof(uint32_t) * TABLE;

        c->chunk.size = chunk_descriptors(cap);

        if (!be.alloc(&b.keys[0], cap * 8, "keys") || !be.alloc(&b.keys[1], cap * 8, "keys") ||
            !be.alloc(&b.vals[0], cap * 8, "values") || !be.alloc(&b.vals[1], cap * 8, "values") ||
            !be.alloc((void **)&b.hist, table, "histograms") ||
            !be.alloc((void **)&b.offsets, strips * table, "bin offsets") ||
            !be.alloc((void **)&b.tile_tickets, sizeof(uint32_t) * strips * MAX_PLACES,
                      "tile tickets") ||
            !be.alloc((void **)&b.status, sizeof(uint32_t) * status_words<P32, P64>(cap),
                      "status counters") ||
            !be.alloc((void **)&c->segs_dev, sizeof(Segment) * BATCH_SEGMENTS, "segments") ||
            !be.alloc(&c->chunk.dev, sizeof(Segment) * c->chunk.size, "segment descriptors"))
                return false;
        return be.check(cudaMallocHost((void **)&b.hist_host, table), "cudaMallocHost") &&
               be.check(cudaMallocHost((void **)&c->segs_host, sizeof(Segment) * BATCH_SEGMENTS),
                        "cudaMallocHost") &&
               be.check(cudaMallocHost(&c->chunk.host, sizeof(Segment) * c->chunk.size),
                        "cudaMallocHost");
}

sortd_status cuda_create(const sortd_engine_config *cfg, sortd_engine **out, char *why,
                         size_t why_len)
{
        cuda_engine *c = engine_new<cuda_engine>(&sortd__cuda_engine_ops, cfg, why, why_len);
        sortd_status s;

        if (!c)
                return SORTD_E_NOMEM;
        if (cfg->capacity > MAX_KEYS) {
                sortd__engine_fail(&c->base, SORTD_E_UNSUPPORTED,
                                   "capacity %zu above the cuda engine's limit of %llu keys "
                                   "(2^32 - 2^16: 32-bit counts and indices)",
                                   cfg->capacity, (unsigned long long)MAX_KEYS);
                return create_failed(&c->base, SORTD_E_UNSUPPORTED, why, why_len, cuda_destroy);
        }
        s = c->be.open(&c->base, cfg);
        if (s == SORTD_OK && !kernel_arch(c))
                s = SORTD_E_DEVICE;
        if (s == SORTD_OK && !with_tuning(c->arch, [&](auto t) {
                    return allocate<decltype(t)>(c, cfg->capacity ? cfg->capacity : 1);
            }))
                s = SORTD_E_NOMEM;
        if (s != SORTD_OK)
                return create_failed(&c->base, s, why, why_len, cuda_destroy);
        *out = &c->base;
        return SORTD_OK;
}

sortd_status cuda_sort(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals, size_t n)
{
        cuda_engine *c = (cuda_engine *)e;
        CudaBackend &be = c->be;
        SortRequest r = sort_request(plan, n);
        SortResult res;
        auto sort = [&](SortResult *out) { return sort_tuned(c->arch, be, c->buf, r, out); };

        if (!be.select())
                return SORTD_E_DEVICE;
        return sort_finished(
                be, upload(be, plan, keys, vals, n, c->buf.keys[0], c->buf.vals[0]) &&
                            c->graphs.run(be, GraphShape{r, nullptr, nullptr}, &res, sort) &&
                            download(be, plan, keys, vals, n, c->buf.keys[res.key_buf],
                                     c->buf.vals[res.val_buf]));
}

/* A sort of the caller's device arrays; through the graph cache when graph (GraphShape: the
   arrays are part of the shape). */
sortd_status sort_arrays(cuda_engine *c, const sortd__plan *plan, void *keys, void *vals, size_t n,
                         bool graph)
{
        SortRequest r = sort_request(plan, n);
        SortResult unused; /* the results are in the caller's arrays */
        auto sort = [&](SortResult *) {
                return sort_device_tuned(c->arch, c->be, c->buf, r, keys, vals);
        };

        return sort_device(c->be, n, [&] {
                return graph ? c->graphs.run(c->be, GraphShape{r, keys, vals}, &unused, sort)
                             : sort(&unused);
        });
}

sortd_status cuda_sort_device(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals,
                              size_t n)
{
        return sort_arrays((cuda_engine *)e, plan, keys, vals, n, true);
}

/* The words of a columns sort: in the call's own workspace, which no later sort has, so a graph
   of them would never be replayed, and capturing it would push out one that would be. */
sortd_status sort_words(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals, size_t n)
{
        return sort_arrays((cuda_engine *)e, plan, keys, vals, n, false);
}

/*
 * A sub-batch's keys go to keys[0] and its values from vals[0] to vals[1] (capacity x 8 bytes
 * each), packed on the host in the two halves of the staging area; either bound holds any one
 * member of up to SegmentPolicy::TILE keys (cuda_backend.cuh: open_staging).
 */
SegmentRoom segment_room(const cuda_engine *c)
{
        size_t device = (c->base.capacity ? c->base.capacity : 1) * 8;
        size_t half = c->be.staging.slots * c->be.staging.slot_bytes / 2;
        size_t bytes = device < half ? device : half;

        return SegmentRoom{bytes, bytes, BATCH_SEGMENTS};
}

/* copy_segments over b, split among the copy threads by members once it is worth a wake-up. */
void copy_members(CudaBackend &be, const SegmentBatch &b, unsigned char *keys, unsigned char *vals,
                  bool in)
{
        struct Job {
                const SegmentBatch *b;
                unsigned char *keys, *vals;
                bool in;
        } job = {&b, keys, vals, in};
        size_t shares = (b.key_bytes + b.val_bytes) / COPY_SHARE_MIN;
        unsigned threads = sortd__pool_size(be.copy_threads);

        if (shares < 2 || b.count < 2) {
                copy_segments(b, keys, vals, in, 0, b.count);
                return;
        }
        threads = shares < threads ? (unsigned)shares : threads;
        threads = b.count < threads ? b.count : threads;
        sortd__pool_run(
                be.copy_threads, threads,
                [](void *arg, unsigned tid, unsigned n) {
                        Job *j = (Job *)arg;
                        copy_segments(*j->b, j->keys, j->vals, j->in, j->b->count * tid / n,
                                      j->b->count * (tid + 1) / n);
                },
                &job);
}

/* One sub-batch: packed into the staging area, one upload, the segmented kernel, one download. */
sortd_status sort_segments(cuda_engine *c, const SegmentBatch &b)
{
        CudaBackend &be = c->be;
        DeviceBuffers &d = c->buf;
        unsigned char *keys, *vals;

        if (!be.select() || !(keys = be.staging_area()))
                return sort_finished(be, false);
        vals = keys + segment_room(c).key_bytes;
        copy_members(be, b, keys, vals, true);
        if (!be.copy(d.keys[0], keys, b.key_bytes, cudaMemcpyHostToDevice) ||
            (b.values_in && !be.copy(d.vals[0], vals, b.val_bytes, cudaMemcpyHostToDevice)) ||
            !be.copy(c->segs_dev, c->segs_host, sizeof(Segment) * b.count,
                     cudaMemcpyHostToDevice) ||
            !segmented_sort<SegmentPolicy>(be, c->segs_dev, b.count, b.narrow, d.keys[0], d.vals[0],
                                           d.vals[1]) ||
            !be.copy(keys, d.keys[0], b.key_bytes, cudaMemcpyDeviceToHost) ||
            (b.val_bytes && !be.copy(vals, d.vals[1], b.val_bytes, cudaMemcpyDeviceToHost)) ||
            !be.wait())
                return sort_finished(be, false);
        copy_members(be, b, keys, vals, false);
        return SORTD_OK;
}

void cuda_sort_batch(sortd_engine *e, sortd__batch_job *jobs, size_t count)
{
        cuda_engine *c = (cuda_engine *)e;

        route_batch(
                jobs, count, SegmentPolicy::TILE, segment_room(c), c->segs_host,
                [&](sortd__batch_job *j) {
                        e->why[0] = '\0';
                        return cuda_sort(e, &j->plan, j->keys, j->vals, j->n);
                },
                [&](const SegmentBatch &b) {
                        e->why[0] = '\0';
                        return sort_segments(c, b);
                },
                [&](sortd__batch_job *j, sortd_status s) {
                        j->item->status = s;
                        snprintf(j->item->why, sizeof(j->item->why), "%s",
                                 s == SORTD_OK ? "" : e->why);
                });
}

/*
 * The scratch of a segmented sort of device arrays: for the caller's (device memory), all the
 * engine's buffers; for arrays in the engine's keys[0] and vals[0] (uploaded, or top-k's copy),
 * the others only. Onesweep's keys of 1 or 2 bytes ping-pong at 4 bytes between buffers of its
 * own (caller_buffers.h): keys[1] split in two then, capacity x 4 bytes each half.
 */
SegmentScratch device_scratch(cuda_engine *c)
{
        return SegmentScratch{c->buf, c->buf.vals[0]};
}

SegmentScratch staged_scratch(cuda_engine *c, const sortd__plan *plan)
{
        SegmentScratch s = {c->buf, c->buf.vals[1]};
        size_t half = (c->base.capacity ? c->base.capacity : 1) * 4;

        s.own.keys[0] = nullptr; /* the sorted keys' side, unless widened */
        s.own.vals[0] = nullptr; /* the sorted values' side, always */
        if (plan->key_bytes < 4) {
                s.own.keys[0] = c->buf.keys[1];
                s.own.keys[1] = (unsigned char *)c->buf.keys[1] + half;
        }
        return s;
}

/* Segments of keys and vals in device memory (the caller's, or the engine's keys[0] and
   vals[0] with staged scratch), sorted in place. */
bool segments_on_device(cuda_engine *c, const sortd__plan *plan, const sortd_segments *seg,
                        void *keys, void *vals, size_t n, const SegmentScratch &scratch)
{
        SegmentedArrays a = {plan, seg, (unsigned char *)keys, (unsigned char *)vals, n};

        c->chunk.pending = false;
        return sort_segments_on_device(c->be, c->arch, c->chunk, scratch, a);
}

sortd_status cuda_sort_segments(sortd_engine *e, const sortd__plan *plan, const sortd_segments *seg,
                                sortd_memory where, void *keys, void *vals, size_t n)
{
        cuda_engine *c = (cuda_engine *)e;
        CudaBackend &be = c->be;
        DeviceBuffers &d = c->buf;

        if (where == SORTD_MEMORY_DEVICE)
                return sort_device(be, n, [&] {
                        return segments_on_device(c, plan, seg, keys, vals, n, device_scratch(c));
                });
        if (!be.select())
                return SORTD_E_DEVICE;
        return sort_finished(be, upload(be, plan, keys, vals, n, d.keys[0], d.vals[0]) &&
                                         segments_on_device(c, plan, seg, d.keys[0], d.vals[0], n,
                                                            staged_scratch(c, plan)) &&
                                         download(be, plan, keys, vals, n, d.keys[0], d.vals[0]));
}

/* Top-k of the engine's copy in keys[0] and vals[0] (segment_sort.cuh: topk_on_device). */
bool topk_of_copy(cuda_engine *c, const sortd__plan *plan, const sortd_segments *seg, uint64_t k,
                  size_t n, void *out_keys, void *out_vals)
{
        DeviceBuffers &d = c->buf;
        SegmentedArrays a = {plan, seg, (unsigned char *)d.keys[0],
                             (unsigned char *)(plan->val_bytes ? d.vals[0] : nullptr), n};

        c->chunk.pending = false;
        return topk_on_device(c->be, c->arch, c->chunk, staged_scratch(c, plan), a, k, out_keys,
                              out_vals);
}

/* A radix select's buffers (segment_sort.cuh: SelectBuffers): the levels' kept keys in keys[1]
   and vals[1]; then the candidates gathered there, sorted against keys[0] and vals[0], which
   the input (the caller's, or uploaded there) has left by then; the tiles' counts in the status
   counters. */
SelectBuffers select_buffers(cuda_engine *c, const sortd__plan *plan)
{
        DeviceBuffers &d = c->buf;
        SelectBuffers b = {d.hist, d.hist_host, d.status, {}, d.keys[1], d.vals[1], d};
        size_t half = (c->base.capacity ? c->base.capacity : 1) * 4;

        b.kept[0] = (uint64_t *)d.keys[1];
        b.kept[1] = (uint64_t *)d.vals[1];
        b.own.keys[0] = nullptr; /* the gathered keys' side, unless widened */
        b.own.keys[1] = d.keys[0];
        b.own.vals[0] = nullptr;
        b.own.vals[1] = d.vals[0];
        if (plan->key_bytes < 4) {
                b.own.keys[0] = d.keys[0];
                b.own.keys[1] = (unsigned char *)d.keys[0] + half;
        }
        return b;
}

/* Top-k of one segment of more keys than the block classes take and more than k: a radix
   select (segment_sort.cuh: topk_select), its first k in keys[1] and vals[1]. */
bool selects(const sortd_segments *seg, uint64_t k, size_t n)
{
        return seg->count == 1 && n > (size_t)SegmentPolicy::TILE && k < n;
}

sortd_status topk_by_select(cuda_engine *c, const sortd__plan *plan, uint64_t k, sortd_memory where,
                            const void *keys, const void *vals, void *out_keys, void *out_vals,
                            size_t n)
{
        CudaBackend &be = c->be;
        DeviceBuffers &d = c->buf;
        SelectBuffers b = select_buffers(c, plan);
        const size_t kb = plan->key_bytes, vb = plan->val_bytes;

        if (where == SORTD_MEMORY_DEVICE)
                return sort_device(be, n, [&] {
                        return topk_select(be, c->arch, b, plan, keys, vals, n, k) &&
                               be.copy_device(out_keys, d.keys[1], k * kb) &&
                               (!vb || be.copy_device(out_vals, d.vals[1], k * vb));
                });
        if (!be.select())
                return SORTD_E_DEVICE;
        return sort_finished(
                be, upload(be, plan, keys, vals, n, d.keys[0], d.vals[0]) &&
                            topk_select(be, c->arch, b, plan, d.keys[0], d.vals[0], n, k) &&
                            download(be, plan, out_keys, out_vals, k, d.keys[1], d.vals[1]));
}

/* Many segments (or k past the one's length): a segmented sort of a copy. Device memory: the
   inputs copied to keys[0] and vals[0], the results straight to the caller's. Host memory:
   uploaded there, the results gathered into keys[1] and vals[1] (free once the sort is done)
   and downloaded from them. */
sortd_status cuda_topk(sortd_engine *e, const sortd__plan *plan, const sortd_segments *seg,
                       uint64_t k, sortd_memory where, const void *keys, const void *vals,
                       void *out_keys, void *out_vals, size_t n)
{
        cuda_engine *c = (cuda_engine *)e;
        CudaBackend &be = c->be;
        DeviceBuffers &d = c->buf;
        const size_t m = (size_t)sortd_topk_results(seg, n, k);
        const bool values_in = plan->val_bytes && !plan->argsort;

        if (selects(seg, k, n))
                return topk_by_select(c, plan, k, where, keys, vals, out_keys, out_vals, n);
        if (where == SORTD_MEMORY_DEVICE)
                return sort_device(be, n, [&] {
                        return be.copy_device(d.keys[0], keys, n * plan->key_bytes) &&
                               (!values_in ||
                                be.copy_device(d.vals[0], vals, n * plan->val_bytes)) &&
                               topk_of_copy(c, plan, seg, k, n, out_keys, out_vals);
                });
        if (!be.select())
                return SORTD_E_DEVICE;
        return sort_finished(
                be, upload(be, plan, keys, vals, n, d.keys[0], d.vals[0]) &&
                            topk_of_copy(c, plan, seg, k, n, d.keys[1], d.vals[1]) &&
                            download(be, plan, out_keys, out_vals, m, d.keys[1], d.vals[1]));
}

/* Key columns and 16-byte keys where they lie, in device memory (columns_device.cuh). */
const sortd__columns_mem cuda_columns = {
        "device",
        SORTD_MEMORY_DEVICE,
        columns_alloc<cuda_engine>,
        columns_release<cuda_engine>,
        columns_copy<cuda_engine>,
        columns_fill<cuda_engine>,
        columns_identity<cuda_engine>,
        columns_indices<cuda_engine>,
        columns_reorder<cuda_engine>,
        sort_words,
        columns_rebase<cuda_engine>,
        columns_take_firsts<cuda_engine>,
};

} /* namespace */

extern "C" const sortd__engine_ops sortd__cuda_engine_ops = {
        "cuda",
        cuda_create,
        cuda_sort,
        cuda_destroy,
        sortd__selfcheck_against_cpu,
        host_alloc<cuda_engine>,
        host_free,
        host_register<cuda_engine>,
        host_unregister<cuda_engine>,
        device_uuid<cuda_engine>,
        ipc_open<cuda_engine>,
        ipc_close<cuda_engine>,
        cuda_sort_device,
        cuda_sort_batch,
        cuda_sort_segments,
        cuda_topk,
        &cuda_columns,
};
