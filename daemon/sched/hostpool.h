/*
 * The host pool (hostpool.c): one arena of the engine's host memory, taken once at start-up,
 * and the allocator that carves inline requests' buffers out of it. On a GPU engine the arena
 * is pinned, so a request received into it moves to the device at full speed and the socket
 * read is its only copy. The engine is called only to take the arena and to give it back,
 * before its thread starts and after it stops: no call here races a sort.
 *
 * The allocator: first fit over the free extents in address order, coalesced on free. Its
 * bookkeeping lives outside the arena, so a buffer holds nothing but its request. Loop thread
 * only.
 */
#ifndef SORTD_DAEMON_HOSTPOOL_H
#define SORTD_DAEMON_HOSTPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Every buffer starts on a 64-byte boundary (a cache line; more than any element needs). */
#define SORTD__HOSTPOOL_ALIGN ((size_t)64)

typedef struct sortd__hostpool_extent {
        size_t off, len; /* from the arena's start; multiples of SORTD__HOSTPOOL_ALIGN */
} sortd__hostpool_extent;

typedef struct sortd__hostpool {
        uint8_t *base;        /* the arena; NULL when the pool is off */
        size_t bytes;         /* its size as given (a tail under the alignment goes unused) */
        sortd_engine *engine; /* the arena's owner; NULL when the caller owns it */
        sortd__hostpool_extent *free; /* free extents by address, no two adjacent */
        size_t nfree, cap;
        size_t live; /* buffers handed out and not yet back */
        size_t used; /* their bytes, each rounded up to the alignment */
        size_t peak; /* the most used has been: what sizing the pool needs to know */
} sortd__hostpool;

/*
 * The allocator over [base, base + bytes), which the caller owns and must keep until
 * sortd__hostpool_close. base must be SORTD__HOSTPOOL_ALIGN-aligned; bytes 0 makes a pool that
 * is off (every allocation misses). *p is written in every case. 0, or -EINVAL (base is
 * misaligned) or -ENOMEM (the free list), with the pool off and why saying what went wrong.
 */
int sortd__hostpool_init(sortd__hostpool *p, void *base, size_t bytes, char *why, size_t why_len);
/*
 * Takes bytes of e's host memory (sortd_engine_host_alloc) as the arena; the pool owns it from
 * here and gives it back in sortd__hostpool_close, which must come before e is destroyed. bytes
 * 0 is a pool that is off, and no call to e. On an error *p is off and why has the engine's
 * reason.
 */
sortd_status sortd__hostpool_open(sortd__hostpool *p, sortd_engine *e, size_t bytes, char *why,
                                  size_t why_len);
/* Whether the pool has an arena: a request that does not get a buffer from it is a miss. */
bool sortd__hostpool_on(const sortd__hostpool *p);
/*
 * A buffer of n bytes, SORTD__HOSTPOOL_ALIGN-aligned; NULL when no free extent holds n (or n is
 * 0). O(free extents).
 */
void *sortd__hostpool_alloc(sortd__hostpool *p, size_t n);
/* Gives back buf, from sortd__hostpool_alloc(p, n) with the same n. O(free extents). */
void sortd__hostpool_free(sortd__hostpool *p, void *buf, size_t n);
/* Frees the bookkeeping, and the arena when the pool owns it; every buffer must be back. The
   pool is off afterwards; a pool that is off already is fine. */
void sortd__hostpool_close(sortd__hostpool *p);

#endif
