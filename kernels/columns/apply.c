/* The order found, written out: an argsort's indices, or every column and the values moved. */
#include "columns.h"

sortd_status sortd__columns_apply(sortd_engine *e, const sortd__columns_mem *mem,
                                  const sortd__columns_job *job, const void *perm,
                                  unsigned perm_bytes, void *gather)
{
        const bool argsort = sortd_payload_is_argsort(job->payload);
        const unsigned vb = (unsigned)sortd_payload_size(job->payload);
        sortd_status s = SORTD_OK;

        if (argsort)
                s = mem->indices(e, job->vals, vb, perm, perm_bytes, job->n);
        if (s != SORTD_OK || (argsort && !job->sort_keys))
                return s;
        for (unsigned j = 0; j < job->count && s == SORTD_OK; j++)
                s = mem->reorder(e, job->keys[j], (unsigned)sortd_key_size(job->cols[j].key_type),
                                 perm, perm_bytes, gather, job->n);
        if (s == SORTD_OK && vb && !argsort)
                s = mem->reorder(e, job->vals, vb, perm, perm_bytes, gather, job->n);
        return s;
}
