/*
 * Regions: the checks that make a client's memfd safe to map and write, and the
 * per-connection table. A shrink of a mapped file would turn the daemon's next access into
 * SIGBUS, so F_SEAL_SHRINK is required; the sort writes in place, so a write seal is refused
 * here rather than failing later; F_SEAL_GROW and F_SEAL_SEAL change nothing for us.
 */
#include <assert.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "region.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1; older headers lack it */
#endif

void sortd__regions_init(sortd__regions *t, sortd__region_limits *limits)
{
        *t = (sortd__regions){.limits = limits, .next_id = 1};
}

/* The fd is a memfd of size bytes that the daemon may map and write, or why not. */
static int check_memfd(int fd, uint64_t size, char *why, size_t why_len)
{
        struct stat st;
        int seals;

        if (size == 0 || size > SIZE_MAX) {
                snprintf(why, why_len, "region size %" PRIu64 " is not a size this daemon can map",
                         size);
                return -EINVAL;
        }
        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0) {
                snprintf(why, why_len, "the fd is not a sealable memfd (F_GET_SEALS: %s)",
                         strerror(errno));
                return -EINVAL;
        }
        if (!(seals & F_SEAL_SHRINK)) {
                snprintf(why, why_len,
                         "the memfd is not sealed against shrinking: seal it with "
                         "F_SEAL_SHRINK before registering");
                return -EINVAL;
        }
        if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) {
                snprintf(why, why_len, "the memfd is sealed against writes: sorts happen in place");
                return -EINVAL;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                snprintf(why, why_len, "the fd is not a memfd");
                return -EINVAL;
        }
        if ((uint64_t)st.st_size != size) {
                snprintf(why, why_len,
                         "the memfd has %" PRIu64 " bytes, RegisterRegion says %" PRIu64,
                         (uint64_t)st.st_size, size);
                return -EINVAL;
        }
        return 0;
}

static int check_limits(const sortd__regions *t, uint64_t size, char *why, size_t why_len)
{
        const sortd__region_limits *l = t->limits;

        if (t->count >= l->max_per_conn) {
                snprintf(why, why_len,
                         "this connection holds %" PRIu64 " regions, max-regions is %" PRIu64,
                         t->count, l->max_per_conn);
                return -EBUSY;
        }
        if (size > l->max_bytes - l->mapped_bytes) {
                snprintf(why, why_len,
                         "mapping %" PRIu64 " more bytes would pass max-region-bytes (%" PRIu64
                         ", %" PRIu64 " mapped)",
                         size, l->max_bytes, l->mapped_bytes);
                return -EBUSY;
        }
        return 0;
}

/* Links a new OPENING region of kind into t: *out, or -ENOMEM. */
static int link_new(sortd__regions *t, sortd__region_kind kind, uint64_t bytes, sortd__region **out,
                    char *why, size_t why_len)
{
        sortd__region *r = calloc(1, sizeof(*r));

        if (!r) {
                snprintf(why, why_len, "out of memory for a region");
                return -ENOMEM;
        }
        *r = (sortd__region){.next = t->head,
                             .id = t->next_id++,
                             .kind = kind,
                             .bytes = bytes,
                             .lane = -1,
                             .device = -1};
        t->head = r;
        t->count++;
        t->limits->regions++;
        *out = r;
        return 0;
}

static int map_region(sortd__regions *t, int fd, uint64_t size, sortd__region **out, char *why,
                      size_t why_len)
{
        void *base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int r;

        if (base == MAP_FAILED) {
                int err = errno;

                snprintf(why, why_len, "mapping the memfd (%" PRIu64 " bytes) failed: %s", size,
                         strerror(err));
                return -err;
        }
        r = link_new(t, SORTD__REGION_MEMFD, size, out, why, why_len);
        if (r < 0) {
                munmap(base, (size_t)size);
                return r;
        }
        /* The engine's passes over the keys want huge pages, as the client asked for them
           (shmem_enabled = advise); refused or ignored elsewhere, harmlessly. */
        madvise(base, (size_t)size, MADV_HUGEPAGE);
        (*out)->base = base;
        t->limits->mapped_bytes += size;
        return 0;
}

int sortd__regions_add(sortd__regions *t, int fd, uint64_t size, sortd__region **out, char *why,
                       size_t why_len)
{
        int r = check_memfd(fd, size, why, why_len);

        if (r == 0)
                r = check_limits(t, size, why, why_len);
        if (r == 0)
                r = map_region(t, fd, size, out, why, why_len);
        close(fd);
        return r;
}

/* Device memory is not the host's to run out of: only the region count limits it. */
int sortd__regions_add_cuda(sortd__regions *t, const uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES],
                            uint64_t offset, uint64_t size, sortd__region **out, char *why,
                            size_t why_len)
{
        int r = check_limits(t, 0, why, why_len);

        if (r == 0)
                r = link_new(t, SORTD__REGION_CUDA, size, out, why, why_len);
        if (r < 0)
                return r;
        (*out)->ipc_offset = offset;
        memcpy((*out)->ipc_handle, handle, SORTD_CUDA_IPC_HANDLE_BYTES);
        return 0;
}

static sortd_status open_cuda(sortd__region *r, sortd_engine *e, char *why, size_t why_len)
{
        void *base;
        size_t alloc;
        sortd_status s = sortd_engine_ipc_open(e, r->ipc_handle, &base, &alloc);

        if (s != SORTD_OK) {
                snprintf(why, why_len, "cannot open the CUDA IPC handle: %s",
                         sortd_engine_error(e));
                return s;
        }
        if (r->ipc_offset > alloc || r->bytes > alloc - r->ipc_offset) {
                snprintf(why, why_len,
                         "the buffer (offset %" PRIu64 ", %" PRIu64
                         " bytes) passes the end of its allocation (%zu bytes)",
                         r->ipc_offset, r->bytes, alloc);
                (void)sortd_engine_ipc_close(e, base);
                return SORTD_E_INVAL;
        }
        r->ipc_base = base;
        r->base = (uint8_t *)base + r->ipc_offset;
        return SORTD_OK;
}

sortd_status sortd__region_engine_open(sortd__region *r, sortd_engine *e, char *why, size_t why_len)
{
        sortd_status s;

        if (r->kind == SORTD__REGION_CUDA) {
                s = open_cuda(r, e, why, why_len);
        } else {
                s = sortd_engine_host_register(e, r->base, (size_t)r->bytes);
                if (s != SORTD_OK)
                        snprintf(why, why_len, "the engine cannot register the memfd: %s",
                                 sortd_engine_error(e));
        }
        r->engine = s == SORTD_OK ? e : NULL;
        return s;
}

sortd_status sortd__region_engine_close(sortd__region *r, char *why, size_t why_len)
{
        sortd_engine *e = r->engine;
        sortd_status s;

        if (!e)
                return SORTD_OK;
        r->engine = NULL;
        s = r->kind == SORTD__REGION_CUDA ? sortd_engine_ipc_close(e, r->ipc_base)
                                          : sortd_engine_host_unregister(e, r->base);
        if (s != SORTD_OK)
                snprintf(why, why_len, "the engine could not release region %" PRIu64 ": %s", r->id,
                         sortd_engine_error(e));
        return s;
}

int sortd__region_numa_node(const void *p)
{
        int node = -1;

        /* get_mempolicy(2) with MPOL_F_NODE | MPOL_F_ADDR (3): no libnuma for one call. */
        if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, p, 3UL) != 0)
                return -1;
        return node;
}

void sortd__region_ready(sortd__region *r)
{
        r->state = SORTD__REGION_READY;
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

        if (r && r->state == SORTD__REGION_READY)
                return r;
        unknown(id, why, why_len);
        return NULL;
}

int sortd__region_span(const sortd__region *r, const char *what, uint64_t offset, uint64_t count,
                       size_t elem, uint8_t **p, char *why, size_t why_len)
{
        if (offset % elem != 0) {
                snprintf(why, why_len, "%s offset %" PRIu64 " is not a multiple of %zu bytes", what,
                         offset, elem);
                return -EINVAL;
        }
        /* offset <= bytes first, then the length against what is left: no sum can wrap. */
        if (offset > r->bytes || count > (r->bytes - offset) / elem) {
                snprintf(why, why_len,
                         "%s at offset %" PRIu64 ", %" PRIu64 " x %zu bytes, pass the end of "
                         "region %" PRIu64 " (%" PRIu64 " bytes)",
                         what, offset, count, elem, r->id, r->bytes);
                return -EINVAL;
        }
        *p = r->base + offset;
        return 0;
}

void sortd__region_hold(sortd__region *r)
{
        r->users++;
}

void sortd__region_release(sortd__region *r)
{
        r->users--;
}

void sortd__region_release_held(struct sortd__job *j)
{
        sortd__region **held[] = {&j->keys_rg, &j->vals_rg, &j->out_rg[0], &j->out_rg[1],
                                  &j->offsets_rg};

        for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
                if (*held[i])
                        sortd__region_release(*held[i]);
                *held[i] = NULL;
        }
}

static void unmap(sortd__regions *t, sortd__region *r)
{
        if (r->kind == SORTD__REGION_MEMFD) {
                munmap(r->base, (size_t)r->bytes);
                t->limits->mapped_bytes -= r->bytes;
        }
        t->limits->regions--;
        t->count--;
        sortd__job_free(r->close_job);
        free(r);
}

int sortd__regions_begin_remove(sortd__regions *t, uint64_t id, sortd__region **out, char *why,
                                size_t why_len)
{
        sortd__region *r = sortd__regions_find(t, id, why, why_len);

        if (!r)
                return -EINVAL;
        if (r->users) {
                snprintf(why, why_len,
                         "region %" PRIu64 " is in use by %" PRIu64
                         " sort(s): unregister it after their replies",
                         id, r->users);
                return -EBUSY;
        }
        r->state = SORTD__REGION_CLOSING;
        *out = r;
        return 0;
}

void sortd__regions_forget(sortd__regions *t, sortd__region *r)
{
        sortd__region **pp = link_of(t, r->id);

        assert(*pp == r); /* a region is forgotten once: its open failed, or its close ran */
        *pp = r->next;
        unmap(t, r);
}

void sortd__regions_destroy(sortd__regions *t)
{
        while (t->head) {
                sortd__region *r = t->head;

                t->head = r->next;
                unmap(t, r);
        }
}

int sortd__region_shmem_thp_mode(const char *path, char *out, size_t out_len)
{
        char text[256];
        const char *open, *close;
        size_t got, len;
        FILE *f = fopen(path, "re");

        if (!f)
                return -errno;
        got = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[got] = '\0';
        open = strchr(text, '[');
        close = open ? strchr(open, ']') : NULL;
        if (!close)
                return -EBADMSG;
        len = (size_t)(close - open - 1);
        if (len == 0 || len >= out_len)
                return -EBADMSG;
        memcpy(out, open + 1, len);
        out[len] = '\0';
        return 0;
}
