/*
 * Regions (region.c): memory a client registered once and then names in its sorts, sorted in
 * place. Two kinds: a sealed memfd (host memory, mapped here) and a CUDA IPC allocation
 * (device memory of another process, opened by the engine).
 *
 * Regions belong to the connection that registered them: each connection has its own table,
 * so an id is only a name within it, and another connection's ids are simply unknown (the
 * same error, nothing learnt). A region is held by every sort that uses it; unregistering a
 * held region is refused (SORTD_E_BUSY) rather than waited for, so that a reply never depends
 * on a later request, and the client, which knows when its replies came, can simply retry.
 *
 * The engine must know a region before sorts use it (GPU engines pin a memfd's pages, or open
 * the IPC handle) and forget it before it goes, and engine calls belong to the engine thread:
 * so a region is OPENING until the engine thread has opened it (sortd__region_engine_open),
 * READY, then CLOSING from its unregister until the engine thread has closed it. Only READY
 * regions can be found. When the connection goes, every region is closed on the engine thread
 * after the connection's last sort, then the table goes: no mapping disappears under a sort.
 *
 * A sort writes its region in place, and the connection's next sort may read what it wrote:
 * the connection's sorts in regions take turns (turns.h).
 */
#ifndef SORTD_DAEMON_REGION_H
#define SORTD_DAEMON_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "sortd_types.h"

/* The limits all connections share (the server owns it; loop thread only). */
typedef struct sortd__region_limits {
        uint64_t max_per_conn; /* regions one connection may hold */
        uint64_t max_bytes;    /* host bytes mapped by all connections together (memfds) */
        uint64_t mapped_bytes; /* mapped now */
        uint64_t regions;      /* held now, all connections */
} sortd__region_limits;

typedef enum sortd__region_kind {
        SORTD__REGION_MEMFD, /* host memory: the daemon's mapping of the client's memfd */
        SORTD__REGION_CUDA,  /* device memory: a buffer in another process's allocation */
} sortd__region_kind;

typedef enum sortd__region_state {
        SORTD__REGION_OPENING, /* the engine thread has yet to open it */
        SORTD__REGION_READY,
        SORTD__REGION_CLOSING, /* unregistered: the engine thread has yet to close it */
} sortd__region_state;

typedef struct sortd__region {
        struct sortd__region *next;
        uint64_t id;
        sortd__region_kind kind;
        sortd__region_state state; /* loop thread only */
        uint8_t *base;             /* the buffer (memfd: the mapping; CUDA: once opened) */
        uint64_t bytes;
        uint64_t users; /* sorts holding it */
        int lane;       /* the engine thread that opened it (engines.c), which closes it; -1 */
        int device;     /* CUDA: the device it is on (engines.c's index), set by dispatch */
        /* Its close job for the connection's end, made with the region (dispatch.c), so
           that closing a connection never needs memory; freed with the region if unused. */
        struct sortd__job *close_job;
        /* Engine thread only, from its open to its close. */
        sortd_engine *engine; /* the engine that opened it, which closes it; NULL: not open */
        void *ipc_base;       /* CUDA: the opened allocation, which ipc_close takes */
        uint64_t ipc_offset;  /* CUDA: the buffer's place in it */
        uint8_t ipc_handle[SORTD_CUDA_IPC_HANDLE_BYTES];
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
 * Adds fd, which must be a memfd of exactly size bytes sealed against shrinking and not
 * against writes, mapped shared, as an OPENING region *out. fd is closed in every case (the
 * mapping keeps the memory). 0, or with a message in why: -EINVAL (not a memfd, unsealed,
 * write-sealed, size mismatch), -EBUSY (a limit), -ENOMEM, or mmap's errno.
 */
int sortd__regions_add(sortd__regions *t, int fd, uint64_t size, sortd__region **out, char *why,
                       size_t why_len);

/*
 * Adds the CUDA IPC buffer of size bytes at offset in the allocation of handle as an OPENING
 * region *out (the engine thread checks it against the allocation when it opens it). 0, or
 * -EBUSY for the per-connection limit, or -ENOMEM, each with a message.
 */
int sortd__regions_add_cuda(sortd__regions *t, const uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES],
                            uint64_t offset, uint64_t size, sortd__region **out, char *why,
                            size_t why_len);

/*
 * Engine thread: makes r known to the engine (memfd: sortd_engine_host_register, which pins
 * it on GPU engines; CUDA: sortd_engine_ipc_open, and the buffer must lie in the allocation).
 * On failure nothing stays open and why says what the engine said.
 */
sortd_status sortd__region_engine_open(sortd__region *r, sortd_engine *e, char *why,
                                       size_t why_len);
/*
 * Engine thread: undoes a successful sortd__region_engine_open, on the engine that opened it
 * (a lost engine is kept until the daemon stops, and releases what it holds without its
 * device); nothing if there was none.
 */
sortd_status sortd__region_engine_close(sortd__region *r, char *why, size_t why_len);

/* The engine thread has opened r: sorts may find it. */
void sortd__region_ready(sortd__region *r);

/* The READY region named id, or NULL with a message ("no region 7"). */
sortd__region *sortd__regions_find(sortd__regions *t, uint64_t id, char *why, size_t why_len);

/*
 * The count elements of elem bytes at offset in r, for `what` ("keys", "values"): the offset
 * must be a multiple of elem and the span within the region, with no overflow on the way.
 * Returns 0 and *p, or -EINVAL with a message.
 */
int sortd__region_span(const sortd__region *r, const char *what, uint64_t offset, uint64_t count,
                       size_t elem, uint8_t **p, char *why, size_t why_len);

/* The NUMA node of the page at p in a memfd region's mapping (where the client's pages are),
   or -1 when the kernel does not say. */
int sortd__region_numa_node(const void *p);

/* A sort starts or stops using r. */
void sortd__region_hold(sortd__region *r);
void sortd__region_release(sortd__region *r);
/* Lets go of every region job j holds (a region sort's, its offsets', its top-k outputs'), here
   where regions are counted: job.c frees jobs, and a region's close job is freed here. */
struct sortd__job;
void sortd__region_release_held(struct sortd__job *j);

/*
 * Unregisters id: the READY region *out becomes CLOSING, for the engine thread to close.
 * -EINVAL if unknown, -EBUSY while a sort holds it; each with a message.
 */
int sortd__regions_begin_remove(sortd__regions *t, uint64_t id, sortd__region **out, char *why,
                                size_t why_len);

/* Unmaps and forgets r (OPENING that failed to open, or CLOSING and closed). */
void sortd__regions_forget(sortd__regions *t, sortd__region *r);

/* Unmaps every region (the connection has gone, no sort holds any, the engine closed them). */
void sortd__regions_destroy(sortd__regions *t);

/* Where Linux says whether shared memory (so a region) may have transparent huge pages. */
#define SORTD__REGION_SHMEM_THP_PATH "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

/* The mode selected in a file like SORTD__REGION_SHMEM_THP_PATH ("always within_size advise [never]
   deny force"), the word in brackets, into out: 0, or a negative errno if it cannot be read
   (fopen's), or has none (-EBADMSG). */
int sortd__region_shmem_thp_mode(const char *path, char *out, size_t out_len);

#endif
