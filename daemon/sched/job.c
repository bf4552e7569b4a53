/*
 * Jobs (see job.h): made in one place, freed in one place, with what they own.
 *
 * Request buffers come from the host pool where it has room: on a GPU engine they are then
 * pinned, and the engine moves them at full speed. The rest come from the heap. Heap buffers
 * of 4 MiB and more are their own mappings with transparent huge pages asked for: the
 * engine's passes over them then miss the TLB far less, and a freed one goes back to the
 * system at once (the RSS follows the in-flight bytes).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "admission.h"
#include "hostpool.h"
#include "job.h"

#define MAPPED_MIN (4u << 20)

static uint8_t *heap_alloc(size_t n)
{
        void *p;

        if (n < MAPPED_MIN)
                return aligned_alloc(64, (n + 63) & ~(size_t)63);
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        madvise(p, n, MADV_HUGEPAGE);
        return p;
}

static void heap_free(uint8_t *p, size_t n)
{
        if (!p)
                return;
        if (n < MAPPED_MIN)
                free(p);
        else
                munmap(p, n);
}

sortd__job *sortd__job_new(uint64_t id)
{
        sortd__job *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->id = id;
        j->state = SORTD__JOB_DONE;
        j->lane = j->device = j->numa_node = -1;
        return j;
}

void sortd__job_free(sortd__job *j)
{
        sortd__admission *a;
        size_t charged;

        if (!j)
                return;
        if (j->pool)
                sortd__hostpool_free(j->pool, j->buf, j->buf_bytes);
        else
                heap_free(j->buf, j->buf_bytes);
        a = j->adm;
        charged = j->charged;
        free(j->out);
        free(j);
        /* Last: the bytes given back may admit a waiting sort, whose buffer may reuse these. */
        if (a && charged)
                sortd__admission_uncharge(a, charged);
}

/* Values start 8-aligned: u8 keys may leave the keys an odd length. */
static size_t vals_offset(const sortd__job *j)
{
        return (size_t)((j->work.sizes.keys_bytes + 7) & ~(uint64_t)7);
}

size_t sortd__job_buffer_bytes(const sortd__job *j)
{
        return vals_offset(j) + (size_t)j->work.sizes.vals_bytes;
}

int sortd__job_buffer(sortd__job *j, sortd__hostpool *pool)
{
        size_t n = sortd__job_buffer_bytes(j);
        int missed = 0;

        j->vals_off = vals_offset(j);
        j->buf = pool ? sortd__hostpool_alloc(pool, n) : NULL;
        j->pool = j->buf ? pool : NULL;
        if (!j->buf) {
                missed = pool && sortd__hostpool_on(pool);
                j->buf = heap_alloc(n);
        }
        if (!j->buf)
                return -ENOMEM;
        j->buf_bytes = n;
        j->work.keys = j->buf;
        j->work.vals = j->work.desc.payload == SORTD_PAYLOAD_NONE ? NULL : j->buf + j->vals_off;
        return missed;
}

void sortd__job_charge(sortd__job *j, sortd__admission *a, size_t bytes)
{
        j->adm = a;
        j->charged = bytes;
}
