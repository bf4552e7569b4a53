/*
 * Shared-memory regions (region.c): a client's sealed memfd, mapped once and sorted in place.
 *
 * Regions belong to the connection that registered them: each connection has its own table,
 * so an id is only a name within it, and another connection's ids are simply unknown (the
 * same error, nothing learnt). A region is held by every sort that uses it; unregistering a
 * held region is refused (SORTD_E_BUSY) rather than waited for, so that a reply never depends
 * on a later request, and the client, which knows when its replies came, can simply retry.
 * When the connection goes, its table goes with it: the connection frees it only once the
 * engine holds none of its sorts, so no mapping disappears under a sort.
 */
#ifndef SORTD_DAEMON_REGION_H
#define SORTD_DAEMON_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

/* The limits all connections share (the server owns it; loop thread only). */
typedef struct sortd__region_limits {
        uint64_t max_per_conn; /* regions one connection may hold */
        uint64_t max_bytes;    /* bytes mapped by all connections together */
        uint64_t mapped_bytes; /* mapped now */
        uint64_t regions;      /* held now, all connections */
} sortd__region_limits;

typedef struct sortd__region {
        struct sortd__region *next;
        uint64_t id;
        uint8_t *base;
        uint64_t bytes;
        uint64_t users; /* sorts holding it */
} sortd__region;

/* One connection's regions. */
typedef struct sortd__regions {
        sortd__region_limits *limits;
        sortd__region *head;
        uint64_t count;
        uint64_t next_id; /* ids start at 1 and are never reused within a connection */
} sortd__regions;

void sortd__regions_init(sortd__regions *t, sortd__region_limits *limits);

/*
 * Registers fd, which must be a memfd of exactly size bytes sealed against shrinking and not
 * against writes, mapped shared: *id names it. fd is closed in every case (the mapping keeps
 * the memory). Errors: SORTD_E_INVAL (not a memfd, unsealed, write-sealed, size mismatch),
 * SORTD_E_BUSY (a limit), SORTD_E_SYSTEM (the mapping failed), each with a message.
 */
sortd_status sortd__regions_add(sortd__regions *t, int fd, uint64_t size, uint64_t *id, char *why,
                                size_t why_len);

/* The region named id, or NULL with SORTD_E_INVAL's message ("no region 7"). */
sortd__region *sortd__regions_find(sortd__regions *t, uint64_t id, char *why, size_t why_len);

/*
 * The count elements of elem bytes at offset in r, for `what` ("keys", "values"): the offset
 * must be a multiple of elem and the span within the region, with no overflow on the way.
 * Returns SORTD_OK and *p, or SORTD_E_INVAL with a message.
 */
sortd_status sortd__region_span(const sortd__region *r, const char *what, uint64_t offset,
                                uint64_t count, size_t elem, uint8_t **p, char *why,
                                size_t why_len);

/* A sort starts or stops using r. */
void sortd__region_hold(sortd__region *r);
void sortd__region_release(sortd__region *r);

/* Unmaps and forgets id: SORTD_E_INVAL if unknown, SORTD_E_BUSY while a sort holds it. */
sortd_status sortd__regions_remove(sortd__regions *t, uint64_t id, char *why, size_t why_len);

/* Unmaps every region (the connection has gone and no sort holds any). */
void sortd__regions_destroy(sortd__regions *t);

#endif
