/*
 * libFuzzer target for region registration and the span checks of region sorts
 * (daemon/sched/region.c): the input is a program of operations on one connection's table under
 * small limits: add a memfd (its size, its seals, the size the request claims), or an fd that is no
 * memfd; take a span of a region (offset, count, element size) and write all of it; hold,
 * release and unregister. A span the table accepts must lie inside its mapping: the write
 * would fault otherwise. The counts the limits keep must match the table at every step.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "region.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input read as fields; zeros once it runs out. */
typedef struct reader {
        const uint8_t *p;
        size_t left;
} reader;

static uint64_t take(reader *r, unsigned bytes)
{
        uint64_t v = 0;

        for (unsigned i = 0; i < bytes && r->left; i++, r->left--)
                v |= (uint64_t)*r->p++ << (8 * i);
        return v;
}

static int make_fd(reader *r, uint64_t *actual)
{
        unsigned what = (unsigned)take(r, 1);
        int fd, seals = 0;

        if (what % 8 == 0) {
                *actual = 0;
                return open("/dev/null", O_RDWR | O_CLOEXEC); /* not a memfd */
        }
        fd = memfd_create("fuzz", MFD_CLOEXEC | (what & 2 ? MFD_ALLOW_SEALING : 0));
        if (fd < 0)
                return -1;
        *actual = take(r, 2) % 65537;
        if (ftruncate(fd, (off_t)*actual) < 0) {
                close(fd);
                return -1;
        }
        if (what & 4)
                seals |= F_SEAL_SHRINK;
        if (what & 8)
                seals |= F_SEAL_GROW;
        if (what & 16)
                seals |= F_SEAL_WRITE;
        if (what & 32)
                seals |= F_SEAL_SEAL;
        if (seals)
                (void)fcntl(fd, F_ADD_SEALS, seals);
        return fd;
}

static void check_counts(const sortd__regions *t, const sortd__region_limits *lim)
{
        uint64_t n = 0, bytes = 0;

        for (const sortd__region *r = t->head; r; r = r->next) {
                n++;
                bytes += r->bytes;
        }
        if (n != t->count || lim->regions != n || lim->mapped_bytes != bytes ||
            n > lim->max_per_conn || bytes > lim->max_bytes)
                abort();
}

static void add(sortd__regions *t, reader *r)
{
        uint64_t actual, claimed;
        int fd = make_fd(r, &actual);
        sortd__region *rg;
        char why[256];

        if (fd < 0)
                return;
        claimed = take(r, 1) & 1 ? take(r, 8) : actual;
        if (sortd__regions_add(t, fd, claimed, &rg, why, sizeof(why)) == 0) {
                if (rg->bytes != actual || rg->bytes != claimed)
                        abort();
                sortd__region_ready(rg);
        } else if (!why[0]) {
                abort();
        }
}

static void span(sortd__regions *t, reader *r)
{
        static const size_t elems[] = {1, 2, 4, 8};
        uint64_t id = take(r, 1), offset = take(r, 1) & 1 ? take(r, 8) : take(r, 2);
        uint64_t count = take(r, 1) & 1 ? take(r, 8) : take(r, 2);
        size_t elem = elems[take(r, 1) % 4];
        sortd__region *rg = sortd__regions_find(t, id, (char[64]){0}, 64);
        uint8_t *p;
        char why[256];

        if (!rg)
                return;
        if (sortd__region_span(rg, "keys", offset, count, elem, &p, why, sizeof(why)) != 0)
                return;
        if (p < rg->base || (uint64_t)(p - rg->base) + count * elem > rg->bytes ||
            (uint64_t)(p - rg->base) % elem != 0)
                abort();
        memset(p, 0x5a, count * elem); /* faults if the span left the mapping */
}

static void remove_one(sortd__regions *t, reader *r)
{
        sortd__region *rg;
        char why[256];

        if (sortd__regions_begin_remove(t, take(r, 1), &rg, why, sizeof(why)) == 0)
                sortd__regions_forget(t, rg);
}

static void hold_release(sortd__regions *t, reader *r)
{
        sortd__region *rg = sortd__regions_find(t, take(r, 1), (char[64]){0}, 64);
        sortd__region *busy;
        char why[256];

        if (!rg)
                return;
        sortd__region_hold(rg);
        /* Held: it cannot go. */
        if (sortd__regions_begin_remove(t, rg->id, &busy, why, sizeof(why)) != -EBUSY)
                abort();
        sortd__region_release(rg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        reader r = {data, size};
        sortd__region_limits lim = {.max_per_conn = 4, .max_bytes = 3 * 65536};
        sortd__regions t;

        sortd__regions_init(&t, &lim);
        for (int step = 0; step < 64 && r.left; step++) {
                switch (take(&r, 1) % 4) {
                case 0:
                        add(&t, &r);
                        break;
                case 1:
                        span(&t, &r);
                        break;
                case 2:
                        remove_one(&t, &r);
                        break;
                default:
                        hold_release(&t, &r);
                        break;
                }
                check_counts(&t, &lim);
        }
        sortd__regions_destroy(&t);
        if (lim.regions || lim.mapped_bytes)
                abort();
        return 0;
}
