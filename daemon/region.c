/*
 * Shared-memory regions: the checks that make a client's memfd safe to map and write, and the
 * per-connection table. A shrink of a mapped file would turn the daemon's next access into
 * SIGBUS, so F_SEAL_SHRINK is required; the sort writes in place, so a write seal is refused
 * here rather than failing later; F_SEAL_GROW and F_SEAL_SEAL change nothing for us.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "region.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1; older headers lack it */
#endif

void sortd__regions_init(sortd__regions *t, sortd__region_limits *limits)
{
        *t = (sortd__regions){.limits = limits, .next_id = 1};
}

/* The fd is a memfd of size bytes that the daemon may map and write, or why not. */
static sortd_status check_memfd(int fd, uint64_t size, char *why, size_t why_len)
{
        struct stat st;
        int seals;

        if (size == 0 || size > SIZE_MAX) {
                snprintf(why, why_len, "region size %" PRIu64 " is not a size this daemon can map",
                         size);
                return SORTD_E_INVAL;
        }
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0) {
                snprintf(why, why_len, "the fd is not a sealable memfd (F_GET_SEALS: %s)",
                         strerror(errno));
                return SORTD_E_INVAL;
        }
        if (!(seals & F_SEAL_SHRINK)) {
                snprintf(why, why_len,
                         "the memfd is not sealed against shrinking: seal it with "
                         "F_SEAL_SHRINK before registering");
                return SORTD_E_INVAL;
        }
        if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) {
                snprintf(why, why_len, "the memfd is sealed against writes: sorts happen in place");
                return SORTD_E_INVAL;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                snprintf(why, why_len, "the fd is not a memfd");
                return SORTD_E_INVAL;
        }
        if ((uint64_t)st.st_size != size) {
                snprintf(why, why_len,
                         "the memfd has %" PRIu64 " bytes, RegisterRegion says %" PRIu64,
                         (uint64_t)st.st_size, size);
                return SORTD_E_INVAL;
        }
        return SORTD_OK;
}

static sortd_status check_limits(const sortd__regions *t, uint64_t size, char *why, size_t why_len)
{
        const sortd__region_limits *l = t->limits;

        if (t->count >= l->max_per_conn) {
                snprintf(why, why_len,
                         "this connection holds %" PRIu64 " regions, max-regions is %" PRIu64,
                         t->count, l->max_per_conn);
                return SORTD_E_BUSY;
        }
        if (size > l->max_bytes - l->mapped_bytes) {
                snprintf(why, why_len,
                         "mapping %" PRIu64 " more bytes would pass max-region-bytes (%" PRIu64
                         ", %" PRIu64 " mapped)",
                         size, l->max_bytes, l->mapped_bytes);
                return SORTD_E_BUSY;
        }
        return SORTD_OK;
}

static sortd_status map_region(sortd__regions *t, int fd, uint64_t size, uint64_t *id, char *why,
                               size_t why_len)
{
        sortd__region *r = calloc(1, sizeof(*r));
        void *base;

        if (!r) {
                snprintf(why, why_len, "out of memory for a region");
                return SORTD_E_NOMEM;
        }
        base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
                snprintf(why, why_len, "mapping the memfd (%" PRIu64 " bytes) failed: %s", size,
                         strerror(errno));
                free(r);
                return SORTD_E_SYSTEM;
        }
        /* The engine's passes over the keys want huge pages, as the client asked for them
           (shmem_enabled = advise); refused or ignored elsewhere, harmlessly. */
        madvise(base, (size_t)size, MADV_HUGEPAGE);
        *r = (sortd__region){.next = t->head, .id = t->next_id++, .base = base, .bytes = size};
        t->head = r;
        t->count++;
        t->limits->mapped_bytes += size;
        t->limits->regions++;
        *id = r->id;
        return SORTD_OK;
}

sortd_status sortd__regions_add(sortd__regions *t, int fd, uint64_t size, uint64_t *id, char *why,
                                size_t why_len)
{
        sortd_status s = check_memfd(fd, size, why, why_len);

        if (s == SORTD_OK)
                s = check_limits(t, size, why, why_len);
        if (s == SORTD_OK)
                s = map_region(t, fd, size, id, why, why_len);
        close(fd);
        return s;
}

/* Where id's region is linked (*result NULL when there is none). */
static sortd__region **link_of(sortd__regions *t, uint64_t id)
{
        sortd__region **pp = &t->head;

        while (*pp && (*pp)->id != id)
                pp = &(*pp)->next;
        return pp;
}

static void unknown(uint64_t id, char *why, size_t why_len)
{
        snprintf(why, why_len, "no region %" PRIu64 " on this connection", id);
}

sortd__region *sortd__regions_find(sortd__regions *t, uint64_t id, char *why, size_t why_len)
{
        sortd__region *r = *link_of(t, id);

        if (!r)
                unknown(id, why, why_len);
        return r;
}

sortd_status sortd__region_span(const sortd__region *r, const char *what, uint64_t offset,
                                uint64_t count, size_t elem, uint8_t **p, char *why, size_t why_len)
{
        if (offset % elem != 0) {
                snprintf(why, why_len, "%s offset %" PRIu64 " is not a multiple of %zu bytes", what,
                         offset, elem);
                return SORTD_E_INVAL;
        }
        /* offset <= bytes first, then the length against what is left: no sum can wrap. */
        if (offset > r->bytes || count > (r->bytes - offset) / elem) {
                snprintf(why, why_len,
                         "%s at offset %" PRIu64 ", %" PRIu64 " x %zu bytes, pass the end of "
                         "region %" PRIu64 " (%" PRIu64 " bytes)",
                         what, offset, count, elem, r->id, r->bytes);
                return SORTD_E_INVAL;
        }
        *p = r->base + offset;
        return SORTD_OK;
}

void sortd__region_hold(sortd__region *r)
{
        r->users++;
}

void sortd__region_release(sortd__region *r)
{
        r->users--;
}

static void unmap(sortd__regions *t, sortd__region *r)
{
        munmap(r->base, (size_t)r->bytes);
        t->limits->mapped_bytes -= r->bytes;
        t->limits->regions--;
        t->count--;
        free(r);
}

sortd_status sortd__regions_remove(sortd__regions *t, uint64_t id, char *why, size_t why_len)
{
        sortd__region **pp = link_of(t, id), *r = *pp;

        if (!r) {
                unknown(id, why, why_len);
                return SORTD_E_INVAL;
        }
        if (r->users) {
                snprintf(why, why_len,
                         "region %" PRIu64 " is in use by %" PRIu64
                         " sort(s): unregister it after their replies",
                         id, r->users);
                return SORTD_E_BUSY;
        }
        *pp = r->next;
        unmap(t, r);
        return SORTD_OK;
}

void sortd__regions_destroy(sortd__regions *t)
{
        while (t->head) {
                sortd__region *r = t->head;

                t->head = r->next;
                unmap(t, r);
        }
}
