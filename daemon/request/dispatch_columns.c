/*
 * A region sort by key columns as dispatch carries it out (see dispatch.h): the columns'
 * buffer and the values' span found in the connection's regions. The engines sort columns in
 * host memory only, so a CUDA region is refused here, before any engine sees the sort.
 */
#include <errno.h>
#include <stdio.h>

#include "dispatch.h"

/* The bytes a column's buffer starts on: the widest key, a u128's. */
#define COLUMNS_ALIGN 16

/* Region id, found, of host memory: its span of count x elem bytes at offset goes to *p. */
static int host_span(const sortd__dispatch_ctx *d, sortd__job *j, uint64_t id, const char *what,
                     uint64_t offset, uint64_t count, size_t elem, sortd__region **r, uint8_t **p)
{
        char *why = j->work.why;
        size_t len = sizeof(j->work.why);

        *r = sortd__regions_find(d->regions, id, why, len);
        if (!*r)
                return -EINVAL;
        if ((*r)->kind != SORTD__REGION_MEMFD) {
                snprintf(why, len,
                         "key columns are sorted in host memory: the %s' region %llu is device "
                         "memory (a CUDA IPC region); put them in a memfd region",
                         what, (unsigned long long)id);
                return -ENOTSUP;
        }
        return sortd__region_span(*r, what, offset, count, elem, p, why, len);
}

int sortd__dispatch_columns_spans(const sortd__dispatch_ctx *d, const sortd__request *rq,
                                  sortd__job *j, sortd__region **kr, sortd__region **vr)
{
        size_t vs = sortd_payload_size(rq->desc.payload);
        int r;

        *vr = NULL;
        /* the buffer's size is a multiple of 16: each column's end is rounded up */
        r = host_span(d, j, rq->region_id, "key columns", rq->keys_offset,
                      rq->sizes.keys_bytes / COLUMNS_ALIGN, COLUMNS_ALIGN, kr, &j->work.keys);
        if (r < 0 || !vs)
                return r;
        return host_span(d, j, rq->vals_region_id, "values", rq->vals_offset, rq->n, vs, vr,
                         &j->work.vals);
}
