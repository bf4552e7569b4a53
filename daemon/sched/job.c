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
#include "region.h"

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

/* Each part starts on 16 bytes: the alignment of the widest key (u128, i128). */
static uint64_t align16(uint64_t n)
{
        return (n + 15) & ~(uint64_t)15;
}

uint64_t sortd__job_parts_bytes(const sortd__job_parts *p)
{
        const uint64_t part[] = {p->keys, p->vals, p->offsets, p->out_keys, p->out_vals};
        uint64_t sum = 0;

        /* Each part is a request's, under 2^59 bytes (wire.c): no sum of five can wrap. */
        for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++)
                sum += align16(part[i]);
        return sum;
}

size_t sortd__job_buffer_bytes(const sortd__job *j)
{
        return (size_t)sortd__job_parts_bytes(&j->parts);
}

/* Points each part j has into its buffer; parts it lacks leave their pointers (a region's). */
static void lay_out(sortd__job *j)
{
        const sortd__job_parts *p = &j->parts;
        uint8_t *at = j->buf;

        if (p->keys)
                j->work.keys = at;
        at += align16(p->keys);
        if (p->vals)
                j->work.vals = at;
        at += align16(p->vals);
        if (p->offsets)
                j->work.seg.offsets = at;
        at += align16(p->offsets);
        if (p->out_keys)
                j->work.out_keys = at;
        at += align16(p->out_keys);
        if (p->out_vals)
                j->work.out_vals = at;
}

int sortd__job_buffer(sortd__job *j, sortd__hostpool *pool)
{
        size_t n = sortd__job_buffer_bytes(j);
        int missed = 0;

        j->buf = pool ? sortd__hostpool_alloc(pool, n) : NULL;
        j->pool = j->buf ? pool : NULL;
        if (!j->buf) {
                missed = pool && sortd__hostpool_on(pool);
                j->buf = heap_alloc(n);
        }
        if (!j->buf)
                return -ENOMEM;
        j->buf_bytes = n;
        lay_out(j);
        return missed;
}

uint64_t sortd__job_reply_payload(const sortd__job *j, uv_buf_t parts[2], unsigned *count)
{
        const uint8_t *keys = j->work.keys, *vals = j->work.vals;
        uint64_t kb = j->parts.keys, vb = j->parts.vals;

        *count = 0;
        /* A region sort's result is in the client's memory; an empty one has no buffer. */
        if (!sortd__job_is_sort(j) || j->work.status != SORTD_OK || !j->parts.keys)
                return 0;
        /* an argsort by columns only read them: its reply is the permutation */
        if (j->work.cols.count && sortd_payload_is_argsort(j->work.desc.payload))
                kb = 0;
        if (j->work.k) {
                keys = j->work.out_keys;
                vals = j->work.out_vals;
                kb = j->work.results * sortd_key_size(j->work.desc.key_type);
                vb = j->work.results * sortd_payload_size(j->work.desc.payload);
        }
        if (kb)
                parts[(*count)++] = (uv_buf_t){.base = (char *)keys, .len = (size_t)kb};
        if (vb)
                parts[(*count)++] = (uv_buf_t){.base = (char *)vals, .len = (size_t)vb};
        return kb + vb;
}

void sortd__job_charge(sortd__job *j, sortd__admission *a, size_t bytes)
{
        j->adm = a;
        j->charged = bytes;
}
