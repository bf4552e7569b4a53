/*
 * The unit of work: one request in a connection's pipeline, from its frame to its reply. A
 * sort travels the whole data path in it: admission gives it a buffer, the fair queue and the
 * engine thread take it, the pipeline writes its reply.
 */
#ifndef SORTD_DAEMON_JOB_H
#define SORTD_DAEMON_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "engine.h"
#include "wire.h"

/* The struct that holds member m at p: how a callback handed a member finds its owner. */
#define SORTD__CONTAINER_OF(p, type, m) ((type *)(void *)((char *)(p)-offsetof(type, m)))

struct sortd__conn;
struct sortd__turns;

typedef enum sortd__job_state {
        SORTD__JOB_READING, /* its payload is arriving */
        SORTD__JOB_QUEUED,  /* in the fair queue or on the engine thread */
        SORTD__JOB_DONE,    /* its reply can be written */
} sortd__job_state;

/* What the engine thread does with a job. */
typedef enum sortd__job_op {
        SORTD__JOB_OP_NONE,         /* nothing: a reply the loop wrote itself */
        SORTD__JOB_OP_SORT,         /* keys and vals in host memory */
        SORTD__JOB_OP_SORT_DEVICE,  /* keys and vals in the engine's device memory (CUDA regions) */
        SORTD__JOB_OP_REGION_OPEN,  /* sortd__region_engine_open(region) */
        SORTD__JOB_OP_REGION_CLOSE, /* sortd__region_engine_close(region) */
} sortd__job_op;

typedef struct sortd__job {
        struct sortd__job *next;  /* the connection's pipeline, in request order */
        struct sortd__job *qnext; /* fair queue or completion list (queue.c, worker.c) */
        struct sortd__conn *conn;
        sortd__job_state state;
        uint64_t id;
        sortd__job_op op;
        struct sortd__region *region; /* REGION_OPEN, REGION_CLOSE */
        bool cancelled;               /* its connection went away while the engine had it */
        sortd_status status;
        char why[256];
        /* a sort */
        sortd_sort_desc desc;
        uint64_t n;
        sortd__wire_sizes sizes;
        uint8_t *buf; /* an inline sort's request buffer: keys, then values at vals_off */
        size_t vals_off;
        uint8_t *keys, *vals;                    /* what the engine sorts: in buf, or in regions */
        struct sortd__region *keys_rg, *vals_rg; /* a region sort's regions, held until done */
        struct sortd__turns *turns;              /* a region sort's place in its connection's */
        uint64_t turn;                           /* order (queue.h) */
        size_t buf_bytes;
        bool buf_pooled; /* buf is from the host pool (else the heap): where it goes back */
        size_t charged;  /* bytes counted against max-inflight-bytes */
        uint64_t t_frame, t_read, t_sort, t_done;
        uint16_t batch_size; /* the engine thread's: members of its batch (0: sorted alone) */
        bool batch_first;    /* the batch's first member, which counts the batch */
        bool cpu_path;       /* queued for the CPU path, not the engine */
        /* the reply: its packed header and message (the payload is buf; none from regions) */
        uint8_t *out;
        size_t out_len;
        uv_write_t wreq;
} sortd__job;

/* Whether j is a sort (its reply a SortReply), as against a region's open or close. */
static inline bool sortd__job_is_sort(const sortd__job *j)
{
        return j->op == SORTD__JOB_OP_SORT || j->op == SORTD__JOB_OP_SORT_DEVICE;
}

/* Whether j sorts in its connection's regions, memory its other sorts may name too, as against
   its own request buffer, which no other sort sees. */
static inline bool sortd__job_in_regions(const sortd__job *j)
{
        return j->keys_rg != NULL;
}

#endif
