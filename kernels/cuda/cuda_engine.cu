/*
 * The "cuda" engine: our Onesweep kernels behind kernels/engine.h. Creates
 * everything for its capacity up front (ping-pong key and value buffers,
 * histograms, offsets, status counters, tile tickets, the stream); a sort
 * uploads, dispatches (dispatch.cuh) and downloads, allocating nothing; a sort on
 * the caller's device memory dispatches with the caller's arrays as one side of
 * the ping-pong (caller_buffers.h).
 */
#include <new>
#include <stdlib.h>

#include "cuda_backend.cuh"
#include "memory_ops.cuh"

using namespace sortd_cuda;

/* Also declared by engine_impl.h's registry; repeated so this file stands alone. */
extern "C" const sortd__engine_ops sortd__cuda_engine_ops;

namespace
{

struct cuda_engine {
        sortd_engine base; /* first: the C side sees a sortd_engine */
        CudaBackend be;
        DeviceBuffers buf;
};

void cuda_destroy(sortd_engine *e)
{
        cuda_engine *c = (cuda_engine *)e;
        void *dev[] = {c->buf.keys[0], c->buf.keys[1], c->buf.vals[0],      c->buf.vals[1],
                       c->buf.hist,    c->buf.offsets, c->buf.tile_tickets, c->buf.status};

        (void)cudaSetDevice(c->be.device);
        for (void *p : dev)
                if (p)
                        (void)cudaFree(p);
        if (c->buf.hist_host)
                (void)cudaFreeHost(c->buf.hist_host);
        c->be.close();
        c->~cuda_engine();
        free(c);
}

bool allocate(cuda_engine *c, size_t cap)
{
        CudaBackend &be = c->be;
        DeviceBuffers &b = c->buf;
        const size_t strips = strip_count<Policy32, Policy64>(cap);
        const size_t table = sizeof(uint32_t) * TABLE;

        if (!be.alloc(&b.keys[0], cap * 8, "keys") || !be.alloc(&b.keys[1], cap * 8, "keys") ||
            !be.alloc(&b.vals[0], cap * 8, "values") || !be.alloc(&b.vals[1], cap * 8, "values") ||
            !be.alloc((void **)&b.hist, table, "histograms") ||
            !be.alloc((void **)&b.offsets, strips * table, "bin offsets") ||
            !be.alloc((void **)&b.tile_tickets, sizeof(uint32_t) * strips * MAX_PLACES,
                      "tile tickets") ||
            !be.alloc((void **)&b.status, sizeof(uint32_t) * status_words<Policy32, Policy64>(cap),
                      "status counters"))
                return false;
        return be.check(cudaMallocHost((void **)&b.hist_host, table), "cudaMallocHost");
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
        if (s == SORTD_OK && !allocate(c, cfg->capacity ? cfg->capacity : 1))
                s = SORTD_E_NOMEM;
        if (s != SORTD_OK)
                return create_failed(&c->base, s, why, why_len, cuda_destroy);
        *out = &c->base;
        return SORTD_OK;
}

SortRequest request(const sortd__plan *plan, size_t n)
{
        SortRequest r;

        r.n = (uint32_t)n;
        r.key_bytes = plan->key_bytes;
        r.val_bytes = plan->val_bytes;
        r.argsort = plan->argsort;
        r.tw = sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending);
        r.begin_bit = plan->begin_bit;
        r.end_bit = plan->end_bit;
        return r;
}

sortd_status cuda_sort(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals, size_t n)
{
        cuda_engine *c = (cuda_engine *)e;
        CudaBackend &be = c->be;
        SortRequest r = request(plan, n);
        SortResult res;

        if (!be.select())
                return SORTD_E_DEVICE;
        return sort_finished(be, upload(be, plan, keys, vals, n, c->buf.keys[0], c->buf.vals[0]) &&
                                         onesweep_sort<Policy32, Policy64>(be, c->buf, r, &res) &&
                                         download(be, plan, keys, vals, n, c->buf.keys[res.key_buf],
                                                  c->buf.vals[res.val_buf]));
}

sortd_status cuda_sort_device(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals,
                              size_t n)
{
        cuda_engine *c = (cuda_engine *)e;
        SortRequest r = request(plan, n);

        return sort_device(c->be, n, [&] {
                return onesweep_sort_device<Policy32, Policy64>(c->be, c->buf, r, keys, vals);
        });
}

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
        nullptr, /* sort_batch: one sort at a time, for now */
};
