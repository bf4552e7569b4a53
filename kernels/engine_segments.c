/*
 * The segmented and top-k entries of the engine interface (engine.h): their checks, shared by
 * every engine, then the engine's own operation (engine_impl.h), which an engine may lack; for
 * 16-byte keys the columns layer (columns/columns.h) over the engine's segmented sort.
 */
#include <stdio.h>

#include "columns/columns.h"

/*
 * The checks of where, and that the engine has what the call needs for these keys: op, or for
 * 16-byte keys its segmented sort, which the columns layer sorts their words with (in device
 * memory through its columns_device steps).
 */
static sortd_status check_memory(sortd_engine *e, const sortd__plan *p, sortd_memory where,
                                 const void *op, const char *what)
{
        if ((unsigned)where >= SORTD_MEMORY_COUNT)
                return sortd__engine_fail(e, SORTD_E_INVAL, "unknown memory kind %d", (int)where);
        if (where == SORTD_MEMORY_DEVICE && !e->ops->device_uuid)
                return sortd__engine_no_device(e);
        if (p->key_bytes == 16 && where == SORTD_MEMORY_DEVICE && !e->ops->columns_device)
                return sortd__engine_fail(e, SORTD_E_UNSUPPORTED,
                                          "the %s engine has no %s of 16-byte keys (u128, i128) "
                                          "in device memory",
                                          e->ops->kind, what);
        if (p->key_bytes == 16)
                op = (const void *)e->ops->sort_segments;
        if (!op)
                return sortd__engine_fail(e, SORTD_E_UNSUPPORTED, "the %s engine has no %s",
                                          e->ops->kind, what);
        return SORTD_OK;
}

/* Where the columns layer sorts 16-byte keys of where's memory. */
static const sortd__columns_mem *wide_mem(const sortd_engine *e, sortd_memory where)
{
        return where == SORTD_MEMORY_DEVICE ? e->ops->columns_device : &sortd__columns_host;
}

sortd_status sortd_engine_sort_segments(sortd_engine *e, const sortd_sort_desc *desc,
                                        const sortd_segments *seg, sortd_memory where, void *keys,
                                        void *vals, size_t n)
{
        sortd__plan p;
        sortd_status s;

        if (!e)
                return SORTD_E_INVAL;
        s = sortd__engine_begin(e, desc, keys, vals, n, &p);
        if (s != SORTD_OK)
                return s;
        if (sortd_segments_check(seg, n, e->why, sizeof(e->why)) != SORTD_OK)
                return SORTD_E_INVAL;
        s = check_memory(e, &p, where, (const void *)e->ops->sort_segments, "segmented sort");
        if (s != SORTD_OK || n == 0)
                return s;
        p.shared = where == SORTD_MEMORY_SHARED;
        s = sortd__engine_sorting_call(e);
        if (s != SORTD_OK)
                return s;
        if (p.key_bytes == 16)
                return sortd__columns_sort_wide(e, wide_mem(e, where), desc, seg, keys, vals, n);
        return e->ops->sort_segments(e, &p, seg, where, keys, vals, n);
}

/* The top-k buffers: the inputs as a sort's (vals only for values: argsort reads none), the m
   results' apart from them and from each other. */
static sortd_status check_topk_buffers(sortd_engine *e, const sortd__plan *p, const void *keys,
                                       const void *vals, const void *out_keys, const void *out_vals,
                                       size_t n, uint64_t m)
{
        const size_t kb = p->key_bytes, vb = p->val_bytes;
        const void *in_vals = p->argsort ? NULL : vals;

        if (!out_keys)
                return sortd__engine_fail(e, SORTD_E_INVAL, "out_keys is NULL");
        if (sortd__misaligned(out_keys, kb))
                return sortd__engine_fail(e, SORTD_E_INVAL, "out_keys not aligned to %zu bytes",
                                          kb);
        if (sortd__overlap(out_keys, m * kb, keys, n * kb) ||
            (in_vals && sortd__overlap(out_keys, m * kb, in_vals, n * vb)))
                return sortd__engine_fail(e, SORTD_E_INVAL, "out_keys overlaps the input");
        if (!vb)
                return SORTD_OK;
        if (!out_vals)
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "out_vals is NULL but the payload needs it");
        if (sortd__misaligned(out_vals, vb))
                return sortd__engine_fail(e, SORTD_E_INVAL, "out_vals not aligned to %zu bytes",
                                          vb);
        if (sortd__overlap(out_vals, m * vb, keys, n * kb) ||
            (in_vals && sortd__overlap(out_vals, m * vb, in_vals, n * vb)) ||
            sortd__overlap(out_vals, m * vb, out_keys, m * kb))
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "out_vals overlaps the input or out_keys");
        return SORTD_OK;
}

sortd_status sortd_engine_topk(sortd_engine *e, const sortd_sort_desc *desc,
                               const sortd_segments *seg, uint64_t k, sortd_memory where,
                               const void *keys, const void *vals, void *out_keys, void *out_vals,
                               size_t n)
{
        const sortd_segments whole = {.count = 1, .row_len = n};
        sortd__plan p;
        sortd_status s;
        uint64_t m;

        if (!e)
                return SORTD_E_INVAL;
        /* argsort reads no vals: the checks of the inputs see keys alone then */
        s = sortd__engine_begin(e, desc, keys, NULL, 0, &p);
        if (s == SORTD_OK && n > e->capacity)
                s = sortd__engine_fail(e, SORTD_E_CAPACITY, "n = %zu above capacity %zu", n,
                                       e->capacity);
        if (s != SORTD_OK)
                return s;
        if (seg && sortd_segments_check(seg, n, e->why, sizeof(e->why)) != SORTD_OK)
                return SORTD_E_INVAL;
        seg = seg ? seg : &whole;
        m = sortd_topk_results(seg, n, k);
        if (n && !keys)
                return sortd__engine_fail(e, SORTD_E_INVAL, "keys is NULL");
        if (n && sortd__misaligned(keys, p.key_bytes))
                return sortd__engine_fail(e, SORTD_E_INVAL, "keys not aligned to %u bytes",
                                          p.key_bytes);
        if (n && p.val_bytes && !p.argsort &&
            (!vals || sortd__misaligned(vals, p.val_bytes) ||
             sortd__overlap(keys, n * p.key_bytes, vals, n * p.val_bytes)))
                return sortd__engine_fail(e, SORTD_E_INVAL,
                                          "vals NULL, not aligned to %u bytes, or overlapping keys",
                                          p.val_bytes);
        if (m && (s = check_topk_buffers(e, &p, keys, vals, out_keys, out_vals, n, m)) != SORTD_OK)
                return s;
        s = check_memory(e, &p, where, (const void *)e->ops->topk, "top-k");
        if (s != SORTD_OK || m == 0)
                return s;
        p.shared = where == SORTD_MEMORY_SHARED;
        s = sortd__engine_sorting_call(e);
        if (s != SORTD_OK)
                return s;
        if (p.key_bytes == 16)
                return sortd__columns_topk(e, wide_mem(e, where), desc, seg, k, keys, vals,
                                           out_keys, out_vals, n);
        return e->ops->topk(e, &p, seg, k, where, keys, vals, out_keys, out_vals, n);
}
