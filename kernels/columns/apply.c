/* The order found, written out: an argsort's indices, or every column and the values moved. */
#include "columns.h"

#include <string.h>

static size_t index_at(const void *perm, unsigned perm_bytes, size_t i)
{
        return perm_bytes == 4 ? ((const uint32_t *)perm)[i] : (size_t)((const uint64_t *)perm)[i];
}

static void write_indices(void *out, unsigned out_bytes, const void *perm, unsigned perm_bytes,
                          size_t n)
{
        if (out_bytes == perm_bytes) {
                memcpy(out, perm, n * perm_bytes);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                if (out_bytes == 4)
                        ((uint32_t *)out)[i] = (uint32_t)index_at(perm, perm_bytes, i);
                else
                        ((uint64_t *)out)[i] = index_at(perm, perm_bytes, i);
        }
}

/*
 * data[i] = copy[perm[i]], copy taken first: memory another process writes meanwhile is read
 * once, so the elements moved are some permutation of what was read.
 */
static void reorder(void *data, unsigned bytes, const void *perm, unsigned perm_bytes, void *gather,
                    size_t n)
{
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
}

void sortd__columns_apply(const sortd__columns_job *job, const void *perm, unsigned perm_bytes,
                          void *gather)
{
        const bool argsort = sortd_payload_is_argsort(job->payload);
        const unsigned vb = (unsigned)sortd_payload_size(job->payload);

        if (argsort)
                write_indices(job->vals, vb, perm, perm_bytes, job->n);
        if (argsort && !job->sort_keys)
                return;
        for (unsigned j = 0; j < job->count; j++)
                reorder(job->keys[j], (unsigned)sortd_key_size(job->cols[j].key_type), perm,
                        perm_bytes, gather, job->n);
        if (vb && !argsort)
                reorder(job->vals, vb, perm, perm_bytes, gather, job->n);
}
