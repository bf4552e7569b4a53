/*
 * libsortd's regions (the sorts that run in place in them are region_sort.c's). A region is one
 * of two kinds:
 *  - a sealed memfd, mapped here and registered with the daemon (the fd travels with the
 *    RegisterRegion frame): host memory shared with the daemon, so the sorted data is in the
 *    mapping when the reply arrives and no array crosses the socket;
 *  - a CUDA IPC region: a piece of another process's device allocation, named by the bytes of
 *    its cudaIpcMemHandle_t, an offset and the device's UUID. libsortd never opens it (it
 *    needs no CUDA): the bytes go to the daemon, which opens and sorts it on the device.
 *
 * Ownership: a region is owned by its creator until sortd_region_destroy; a memfd region's fd
 * and mapping are released only in release(). The connection lists its live regions so that
 * sortd_close can mark them orphaned (the daemon drops them with the connection) instead of
 * leaving destroy a dangling connection to talk to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "call.h"
#include "region.h"
#include "sortd.h"
#include "transport.h"
#include "wire.h"

/* A region holds at most 2^63 - 1 bytes, which a size_t must hold. */
_Static_assert(SIZE_MAX >= INT64_MAX, "a region's size is a size_t");

/* The seals the daemon relies on: the size can never change under its mapping (a shrink would
   SIGBUS it), and nobody can add a write seal later, since the daemon writes the sorted data. */
#define REGION_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static sortd_status sys_fail(sortd_conn *c, const char *what)
{
        int e = errno;

        return sortd__transport_fail(c, e == ENOMEM || e == ENOSPC ? SORTD_E_NOMEM : SORTD_E_SYSTEM,
                                     "%s: %s", what, strerror(e));
}

/* The one place a region's fd and mapping are released. */
static void release(sortd_region *r)
{
        if (r->data)
                munmap(r->data, r->size);
        if (r->fd >= 0)
                close(r->fd);
        free(r);
}

static void link_region(sortd_conn *c, sortd_region *r)
{
        r->conn = c;
        r->next = c->regions;
        r->pprev = &c->regions;
        if (c->regions)
                c->regions->pprev = &r->next;
        c->regions = r;
}

static void unlink_region(sortd_region *r)
{
        *r->pprev = r->next;
        if (r->next)
                r->next->pprev = r->pprev;
        r->conn = NULL;
        r->next = NULL;
        r->pprev = NULL;
}

void sortd__region_orphan_all(sortd_conn *c)
{
        while (c->regions)
                unlink_region(c->regions);
}

/* A sealed memfd of r->size bytes, mapped shared and writable. */
static sortd_status map_memfd(sortd_conn *c, sortd_region *r)
{
        void *p;

        r->fd = memfd_create("sortd-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (r->fd < 0)
                return sys_fail(c, "memfd_create");
        if (ftruncate(r->fd, (off_t)r->size) < 0)
                return sys_fail(c, "sizing the region (ftruncate)");
        if (fcntl(r->fd, F_ADD_SEALS, REGION_SEALS) < 0)
                return sys_fail(c, "sealing the region (F_ADD_SEALS)");
        p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
        if (p == MAP_FAILED)
                return sys_fail(c, "mapping the region (mmap)");
        /* Before the first touch: where shmem_enabled allows (advise), the pages are huge and
           a sort of hundreds of MiB in the region misses the TLB as little as in malloc'd
           memory. Elsewhere the advice is refused or ignored, harmlessly. */
        madvise(p, r->size, MADV_HUGEPAGE);
        r->data = p;
        return SORTD_OK;
}

/* The bounds of every region's size, whatever its kind. */
static sortd_status check_size(sortd_conn *c, uint64_t bytes)
{
        if (bytes == 0 || bytes > (uint64_t)INT64_MAX)
                return sortd__transport_fail(c, SORTD_E_INVAL,
                                             "a region holds 1 to 2^63 - 1 bytes, not %llu",
                                             (unsigned long long)bytes);
        return SORTD_OK;
}

static sortd_region *region_new(sortd_conn *c, uint64_t bytes)
{
        sortd_region *r = calloc(1, sizeof(*r));

        if (!r) {
                sortd__transport_fail(c, SORTD_E_NOMEM, "out of memory");
                return NULL;
        }
        r->fd = -1;
        r->size = (size_t)bytes;
        return r;
}

/*
 * Takes r: registers it with reg (its kind's fields filled in here; the size is r's) and fd
 * (-1: none), then hands it to the caller in *out; on failure releases it.
 */
static sortd_status register_region(sortd_conn *c, sortd_region *r,
                                    Sortd__Wire__RegisterRegion *reg, int fd, sortd_region **out)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Reply *rep;
        sortd_status s;

        reg->size = r->size;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = reg;
        s = sortd__call_request(c, &req, fd, SORTD__WIRE__REPLY__BODY_REGISTER_REGION, &rep);
        if (s == SORTD_OK) {
                r->id = rep->register_region->region_id;
                sortd__wire__reply__free_unpacked(rep, NULL);
        }
        /* 0 names "the keys' region" in a sort: a region the client cannot name is a daemon
           that does not follow the protocol. */
        if (s == SORTD_OK && r->id == 0)
                s = sortd__transport_breaks(c, sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                                                     "sortd returned region id 0"));
        if (s != SORTD_OK) {
                release(r);
                return s;
        }
        link_region(c, r);
        *out = r;
        return SORTD_OK;
}

sortd_status sortd_region_create(sortd_conn *c, size_t bytes, sortd_region **out)
{
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
        sortd_region *r;
        sortd_status s;

        s = sortd__call_begin(c, out, "out");
        if (s == SORTD_OK)
                s = check_size(c, bytes);
        if (s != SORTD_OK)
                return s;
        r = region_new(c, bytes);
        if (!r)
                return SORTD_E_NOMEM;
        s = map_memfd(c, r);
        if (s != SORTD_OK) {
                release(r);
                return s;
        }
        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
        return register_region(c, r, &reg, r->fd, out);
}

/* What the daemon needs of a CUDA region that the client can check without CUDA. */
static sortd_status check_cuda(sortd_conn *c, const uint8_t *handle, uint64_t offset, uint64_t size,
                               const uint8_t *device_uuid)
{
        sortd_status s;

        if (!handle)
                return sortd__transport_fail(c, SORTD_E_INVAL, "handle must not be NULL");
        if (!device_uuid)
                return sortd__transport_fail(c, SORTD_E_INVAL, "device_uuid must not be NULL");
        s = check_size(c, size);
        if (s == SORTD_OK && offset > UINT64_MAX - size)
                s = sortd__transport_fail(c, SORTD_E_INVAL,
                                          "offset %llu + size %llu overflows 64 bits",
                                          (unsigned long long)offset, (unsigned long long)size);
        return s;
}

sortd_status sortd_region_register_cuda(sortd_conn *c,
                                        const uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES],
                                        uint64_t offset, uint64_t size,
                                        const uint8_t device_uuid[SORTD_DEVICE_UUID_BYTES],
                                        sortd_region **out)
{
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
        sortd_region *r;
        sortd_status s;

        s = sortd__call_begin(c, out, "out");
        if (s == SORTD_OK)
                s = check_cuda(c, handle, offset, size, device_uuid);
        if (s != SORTD_OK)
                return s;
        r = region_new(c, size);
        if (!r)
                return SORTD_E_NOMEM;
        r->device = true;
        r->offset = offset;
        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        reg.offset = offset;
        /* protobuf-c's bytes are not const, but packing only reads them. */
        reg.cuda_ipc_handle = (ProtobufCBinaryData){SORTD_CUDA_IPC_HANDLE_BYTES, (uint8_t *)handle};
        reg.device_uuid = (ProtobufCBinaryData){SORTD_DEVICE_UUID_BYTES, (uint8_t *)device_uuid};
        return register_region(c, r, &reg, -1, out);
}

void *sortd_region_data(const sortd_region *r)
{
        return r ? r->data : NULL;
}

size_t sortd_region_size(const sortd_region *r)
{
        return r ? r->size : 0;
}

static sortd_status unregister_region(sortd_conn *c, const sortd_region *r)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__UnregisterRegion un = SORTD__WIRE__UNREGISTER_REGION__INIT;
        Sortd__Wire__Reply *rep;
        sortd_status s;

        un.region_id = r->id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_UNREGISTER_REGION;
        req.unregister_region = &un;
        s = sortd__call_request(c, &req, -1, SORTD__WIRE__REPLY__BODY_UNREGISTER_REGION, &rep);
        if (s == SORTD_OK)
                sortd__wire__reply__free_unpacked(rep, NULL);
        return s;
}

sortd_status sortd_region_destroy(sortd_conn *c, sortd_region *r)
{
        sortd_status s = SORTD_OK;
        bool broken;

        if (!r)
                return SORTD_OK;
        if (r->conn) {
                if (r->conn != c)
                        return c ? sortd__transport_fail(
                                           c, SORTD_E_INVAL,
                                           "region %llu belongs to another connection",
                                           (unsigned long long)r->id)
                                 : SORTD_E_INVAL;
                /* Its memory may be the buffers of a submitted sort: keep it until received. */
                broken = sortd__transport_broken(c);
                if ((!broken || c->replies_left) && c->outstanding)
                        return sortd__transport_fail(c, SORTD_E_INVAL,
                                                     "%llu submitted sorts not yet received",
                                                     (unsigned long long)c->outstanding);
                if (!broken)
                        s = unregister_region(c, r);
                /* A broken connection's regions go when it is closed. */
                if (c->broken)
                        s = SORTD_OK;
                unlink_region(r);
        }
        release(r);
        return s;
}
