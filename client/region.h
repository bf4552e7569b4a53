/* What libsortd's regions (region.c) offer the rest of the library (region_sort.c, client.c):
   nothing here is exported. */
#ifndef SORTD_CLIENT_REGION_H
#define SORTD_CLIENT_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sortd.h"

/* A region as region.c made it; region_sort.c reads it to check and name a sort's spans. */
struct sortd_region {
        sortd_conn *conn;                   /* NULL once the connection was closed */
        struct sortd_region *next, **pprev; /* in conn->regions */
        uint64_t id;                        /* the daemon's name for it; never 0 */
        bool device;                        /* CUDA IPC: no fd, no mapping here */
        int fd;
        void *data;
        size_t size;
        uint64_t offset; /* in its CUDA allocation, whose base CUDA aligns to 256 bytes; 0 for a
                            memfd, mapped page-aligned */
};

/* sortd_close: the daemon drops c's regions with the connection; the client keeps their
   mappings until sortd_region_destroy, which then only unmaps and closes. */
void sortd__region_orphan_all(sortd_conn *c);

#endif
