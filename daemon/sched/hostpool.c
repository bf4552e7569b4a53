/*
 * The host pool (see hostpool.h). First fit in address order: it keeps the arena's high end
 * free for as long as the low end can serve, which is what lets a large request still find
 * room among many small ones; and the in-flight limit bounds the live buffers, so the linear
 * scans stay short.
 */
#include <errno.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostpool.h"

#define ALIGN SORTD__HOSTPOOL_ALIGN
#define INITIAL_EXTENTS 16

static size_t align_up(size_t n)
{
        return (n + ALIGN - 1) & ~(ALIGN - 1);
}

/* The arena's usable length: its size down to the alignment. */
static size_t arena_len(const sortd__hostpool *p)
{
        return p->bytes & ~(ALIGN - 1);
}

static void remove_extent(sortd__hostpool *p, size_t i)
{
        memmove(&p->free[i], &p->free[i + 1], (p->nfree - i - 1) * sizeof(p->free[0]));
        p->nfree--;
}

static void insert_extent(sortd__hostpool *p, size_t i, sortd__hostpool_extent e)
{
        memmove(&p->free[i + 1], &p->free[i], (p->nfree - i) * sizeof(p->free[0]));
        p->free[i] = e;
        p->nfree++;
}

int sortd__hostpool_init(sortd__hostpool *p, void *base, size_t bytes, char *why, size_t why_len)
{
        *p = (sortd__hostpool){0};
        if ((uintptr_t)base % ALIGN) {
                snprintf(why, why_len, "the arena at %p is not %zu-byte aligned", base, ALIGN);
                return -EINVAL;
        }
        if (bytes < ALIGN)
                return 0; /* off: not one buffer would fit */
        p->free = malloc(INITIAL_EXTENTS * sizeof(p->free[0]));
        if (!p->free) {
                snprintf(why, why_len, "cannot allocate the host pool's free list");
                return -ENOMEM;
        }
        p->base = base;
        p->bytes = bytes;
        p->cap = INITIAL_EXTENTS;
        p->free[0] = (sortd__hostpool_extent){.off = 0, .len = arena_len(p)};
        p->nfree = 1;
        return 0;
}

sortd_status sortd__hostpool_open(sortd__hostpool *p, sortd_engine *e, size_t bytes, char *why,
                                  size_t why_len)
{
        void *base;
        sortd_status s;

        *p = (sortd__hostpool){0};
        if (bytes < ALIGN)
                return SORTD_OK;
        s = sortd_engine_host_alloc(e, bytes, &base);
        if (s != SORTD_OK) {
                snprintf(why, why_len, "%s", sortd_engine_error(e));
                return s;
        }
        /* The engine gives page-aligned memory: only the free list can fail here. */
        if (sortd__hostpool_init(p, base, bytes, why, why_len) < 0) {
                sortd_engine_host_free(e, base, bytes);
                return SORTD_E_NOMEM;
        }
        p->engine = e;
        return SORTD_OK;
}

bool sortd__hostpool_on(const sortd__hostpool *p)
{
        return p->base != NULL;
}

/*
 * Free extents are never adjacent, so a live buffer lies between each one and the next: with
 * live buffers there are at most live + 1 extents. Making room for one more buffer's worth
 * here, where a failure is only a miss, means that a free never needs memory.
 */
static bool reserve_extent(sortd__hostpool *p)
{
        size_t want = p->live + 2, cap = p->cap;
        sortd__hostpool_extent *f;

        if (cap >= want)
                return true;
        while (cap < want)
                cap *= 2;
        f = realloc(p->free, cap * sizeof(*f));
        if (!f)
                return false;
        p->free = f;
        p->cap = cap;
        return true;
}

void *sortd__hostpool_alloc(sortd__hostpool *p, size_t n)
{
        size_t need, i = 0, off;
        sortd__hostpool_extent *e;

        /* n above the arena's size cannot fit, and rounding it up cannot wrap. */
        if (n == 0 || n > p->bytes)
                return NULL;
        need = align_up(n);
        while (i < p->nfree && p->free[i].len < need)
                i++;
        if (i == p->nfree || !reserve_extent(p))
                return NULL;
        e = &p->free[i];
        off = e->off;
        e->off += need;
        e->len -= need;
        if (e->len == 0)
                remove_extent(p, i);
        p->live++;
        p->used += need;
        if (p->used > p->peak)
                p->peak = p->used;
        return p->base + off;
}

void sortd__hostpool_free(sortd__hostpool *p, void *buf, size_t n)
{
        size_t off = (size_t)((uintptr_t)buf - (uintptr_t)p->base), len = align_up(n), i = 0;
        bool joins_prev, joins_next;

        /* A buffer given back twice, or with another size, would be handed out twice: stop
           here rather than corrupt two requests later. */
        assert(p->live > 0 && off % ALIGN == 0 && len && len <= arena_len(p) &&
               off <= arena_len(p) - len);
        while (i < p->nfree && p->free[i].off < off)
                i++;
        assert(i == 0 || p->free[i - 1].off + p->free[i - 1].len <= off);
        assert(i == p->nfree || off + len <= p->free[i].off);
        joins_prev = i > 0 && p->free[i - 1].off + p->free[i - 1].len == off;
        joins_next = i < p->nfree && off + len == p->free[i].off;
        if (joins_prev && joins_next) {
                p->free[i - 1].len += len + p->free[i].len;
                remove_extent(p, i);
        } else if (joins_prev) {
                p->free[i - 1].len += len;
        } else if (joins_next) {
                p->free[i].off = off;
                p->free[i].len += len;
        } else {
                insert_extent(p, i, (sortd__hostpool_extent){.off = off, .len = len});
        }
        p->live--;
        p->used -= len;
}

void sortd__hostpool_close(sortd__hostpool *p)
{
        /* The server closes the pool once the engine thread has stopped and every job is
           freed: a buffer still out would be read after its memory went back. */
        assert(p->live == 0);
        free(p->free);
        if (p->engine)
                sortd_engine_host_free(p->engine, p->base, p->bytes);
        *p = (sortd__hostpool){0};
}
