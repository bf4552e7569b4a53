/* The steps of a columns sort that touch its rows, for rows in host memory. */
#include "columns.h"

#include <stdlib.h>
#include <string.h>

static void *host_alloc(sortd_engine *e, size_t bytes)
{
        (void)e;
        return malloc(bytes);
}

static void host_release(sortd_engine *e, void *p)
{
        (void)e;
        free(p);
}

static sortd_status host_copy(sortd_engine *e, void *to, const void *from, size_t bytes)
{
        (void)e;
        memcpy(to, from, bytes);
        return SORTD_OK;
}

static sortd_status host_fill(sortd_engine *e, const sortd__column_group *g, unsigned part,
                              const void *perm, unsigned perm_bytes, uint64_t *out, size_t n,
                              bool *differ)
{
        (void)e;
        *differ = sortd__group_fill(g, part, perm, perm_bytes, out, n);
        return SORTD_OK;
}

static sortd_status host_identity(sortd_engine *e, void *perm, unsigned perm_bytes, size_t n)
{
        (void)e;
        for (size_t i = 0; i < n; i++) {
                if (perm_bytes == 4)
                        ((uint32_t *)perm)[i] = (uint32_t)i;
                else
                        ((uint64_t *)perm)[i] = i;
        }
        return SORTD_OK;
}

static size_t index_at(const void *perm, unsigned perm_bytes, size_t i)
{
        return perm_bytes == 4 ? ((const uint32_t *)perm)[i] : (size_t)((const uint64_t *)perm)[i];
}

static sortd_status host_indices(sortd_engine *e, void *out, unsigned out_bytes, const void *perm,
                                 unsigned perm_bytes, size_t n)
{
        (void)e;
        if (out_bytes == perm_bytes) {
                memcpy(out, perm, n * perm_bytes);
                return SORTD_OK;
        }
        for (size_t i = 0; i < n; i++) {
                if (out_bytes == 4)
                        ((uint32_t *)out)[i] = (uint32_t)index_at(perm, perm_bytes, i);
                else
                        ((uint64_t *)out)[i] = index_at(perm, perm_bytes, i);
        }
        return SORTD_OK;
}

static sortd_status host_reorder(sortd_engine *e, void *data, unsigned bytes, const void *perm,
                                 unsigned perm_bytes, void *gather, size_t n)
{
        (void)e;
        memcpy(gather, data, n * bytes);
        for (size_t i = 0; i < n; i++) {
                size_t from = index_at(perm, perm_bytes, i);

                switch (bytes) {
                case 1:
                        ((uint8_t *)data)[i] = ((const uint8_t *)gather)[from];
                        break;
                case 2:
                        ((uint16_t *)data)[i] = ((const uint16_t *)gather)[from];
                        break;
                case 4:
                        ((uint32_t *)data)[i] = ((const uint32_t *)gather)[from];
                        break;
                case 8:
                        ((uint64_t *)data)[i] = ((const uint64_t *)gather)[from];
                        break;
                default:
                        memcpy((unsigned char *)data + i * bytes,
                               (const unsigned char *)gather + from * bytes, bytes);
                        break;
                }
        }
        return SORTD_OK;
}

static sortd_status host_sort(sortd_engine *e, const sortd__plan *p, void *keys, void *vals,
                              size_t n)
{
        return e->ops->sort(e, p, keys, vals, n);
}

static sortd_status host_rebase(sortd_engine *e, void *idx, unsigned idx_bytes,
                                const sortd_segments *seg, size_t n)
{
        (void)e, (void)n;
        for (uint64_t s = 0; s < seg->count; s++) {
                uint64_t at = sortd_segment_begin(seg, s), len = sortd_segment_length(seg, s);

                for (uint64_t i = at; i < at + len; i++) {
                        if (idx_bytes == 4)
                                ((uint32_t *)idx)[i] -= (uint32_t)at;
                        else
                                ((uint64_t *)idx)[i] -= at;
                }
        }
        return SORTD_OK;
}

static void take(void *out, const void *in, unsigned bytes, const sortd_segments *seg, uint64_t k)
{
        unsigned char *to = out;

        for (uint64_t s = 0; s < seg->count; s++) {
                uint64_t len = sortd_segment_length(seg, s), take = k < len ? k : len;

                memcpy(to, (const unsigned char *)in + sortd_segment_begin(seg, s) * bytes,
                       take * bytes);
                to += take * bytes;
        }
}

static sortd_status host_take_firsts(sortd_engine *e, const sortd_segments *seg, uint64_t k,
                                     const void *keys, unsigned key_bytes, const void *vals,
                                     unsigned val_bytes, void *out_keys, void *out_vals, size_t n)
{
        (void)e, (void)n;
        take(out_keys, keys, key_bytes, seg, k);
        if (val_bytes)
                take(out_vals, vals, val_bytes, seg, k);
        return SORTD_OK;
}

const sortd__columns_mem sortd__columns_host = {
        .where = "host",
        .memory = SORTD_MEMORY_HOST,
        .alloc = host_alloc,
        .release = host_release,
        .copy = host_copy,
        .fill = host_fill,
        .identity = host_identity,
        .indices = host_indices,
        .reorder = host_reorder,
        .sort = host_sort,
        .rebase = host_rebase,
        .take_firsts = host_take_firsts,
};
