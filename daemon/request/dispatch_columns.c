/*
 * A region sort by key columns as dispatch carries it out (see dispatch.h): the columns'
 * buffer and the values' span found in the connection's regions. The buffer may lie in host
 * memory (a memfd region) or in device memory (a CUDA region, sorted on its device as a plain
 * sort's keys are); the values lie in a region of the same kind, since an engine sorts in one
 * memory or the other, never across the two.
 */
#include <errno.h>
#include <stdio.h>

#include "dispatch.h"

/* The bytes a column's buffer starts on: the widest key, a u128's. */
#define COLUMNS_ALIGN 16

/* Region id, found: its span of count x elem bytes at offset goes to *p. */
static int span(const sortd__dispatch_ctx *d, sortd__job *j, uint64_t id, const char *what,
                uint64_t offset, uint64_t count, size_t elem, sortd__region **r, uint8_t **p)
{
        char *why = j->work.why;
        size_t len = sizeof(j->work.why);

        *r = sortd__regions_find(d->regions, id, why, len);
        if (!*r)
                return -EINVAL;
        return sortd__region_span(*r, what, offset, count, elem, p, why, len);
}

static const char *kind_name(const sortd__region *r)
{
        return r->kind == SORTD__REGION_CUDA ? "device memory (a CUDA region)"
                                             : "host memory (a memfd region)";
}

int sortd__dispatch_columns_spans(const sortd__dispatch_ctx *d, const sortd__request *rq,
                                  sortd__job *j, sortd__region **kr, sortd__region **vr)
{
        size_t vs = sortd_payload_size(rq->desc.payload);
        int r;

        *vr = NULL;
        /* the buffer's size is a multiple of 16: each column's end is rounded up */
        r = span(d, j, rq->region_id, "key columns", rq->keys_offset,
                 rq->sizes.keys_bytes / COLUMNS_ALIGN, COLUMNS_ALIGN, kr, &j->work.keys);
        if (r < 0 || !vs)
                return r;
        r = span(d, j, rq->vals_region_id, "values", rq->vals_offset, rq->n, vs, vr, &j->work.vals);
        if (r < 0 || (*vr)->kind == (*kr)->kind)
                return r;
        snprintf(j->work.why, sizeof(j->work.why),
                 "the key columns are in %s and the values in %s: both must be in host memory "
                 "(memfd regions) or both in device memory (CUDA regions)",
                 kind_name(*kr), kind_name(*vr));
        return -EINVAL;
}
