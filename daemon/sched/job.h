/*
 * The unit of work (job.c): one request in a connection's pipeline, from its frame to its
 * reply. A sort travels the whole data path in it: admission charges its bytes, the fair queue
 * and an engine thread take it, the pipeline writes its reply.
 *
 * One owner: sortd__job_new makes a job and sortd__job_free is the one place it goes, with
 * the request buffer and the reply bytes it owns, and the in-flight bytes charged to it.
 *
 * Two threads touch a job, each its own part. sortd__job is the loop thread's. Its member
 * `work` (sortd__job_work) is what an engine thread reads and writes: the loop thread fills it
 * before it queues the job (state QUEUED), does not touch it while the job is queued, and
 * reads the outcome once the worker has handed the job back.
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

struct sortd__admission;
struct sortd__engines_flows;
struct sortd__hostpool;
struct sortd__region;
struct sortd__turns;

typedef enum sortd__job_state {
        SORTD__JOB_READING, /* its payload is arriving */
        SORTD__JOB_QUEUED,  /* in the fair queue or on the engine thread */
        SORTD__JOB_DONE,    /* its reply can be written */
} sortd__job_state;

/*
 * The parts of a job's buffer in bytes, 0 for those it lacks, each 16-aligned in it in this
 * order: an inline sort's keys and values (or indices), the offsets of its segments (an inline
 * or a region sort's: never the client's memory), an inline top-k's results.
 */
typedef struct sortd__job_parts {
        uint64_t keys, vals, offsets, out_keys, out_vals;
} sortd__job_parts;

/* The bytes of a buffer of those parts (UINT64_MAX if they overflow). */
uint64_t sortd__job_parts_bytes(const sortd__job_parts *p);

/* What the engine thread does with a job. */
typedef enum sortd__job_op {
        SORTD__JOB_OP_NONE,         /* nothing: a reply the loop wrote itself */
        SORTD__JOB_OP_SORT,         /* keys and vals in host memory */
        SORTD__JOB_OP_SORT_DEVICE,  /* keys and vals in the engine's device memory (CUDA regions) */
        SORTD__JOB_OP_REGION_OPEN,  /* sortd__region_engine_open(region) */
        SORTD__JOB_OP_REGION_CLOSE, /* sortd__region_engine_close(region) */
} sortd__job_op;

/* The engine thread's part of a job (see above). */
typedef struct sortd__job_work {
        sortd__job_op op;
        sortd_sort_desc desc;
        uint64_t n;
        sortd__wire_sizes sizes;
        uint8_t *keys, *vals;         /* what the engine sorts: in the buffer, or in regions */
        bool shared;                  /* keys and vals are in regions the client may write */
        struct sortd__region *region; /* REGION_OPEN, REGION_CLOSE */
        /* Segments and top-k (sortd_types.h): seg.offsets lie in the job's buffer */
        bool segmented;
        sortd_segments seg;
        uint64_t k;                   /* top-k; 0: sort */
        uint64_t results;             /* top-k: how many (sortd_topk_results) */
        uint8_t *out_keys, *out_vals; /* top-k: where they go */
        /* A sort by key columns (count > 0): keys is their buffer (sortd_columns_offset), and
           desc only says the payload */
        sortd__wire_columns cols;
        bool cpu_fallback; /* an engine without it hands it back for the CPU path (engines.c) */
        struct sortd__turns *turns; /* a region sort's place in its connection's order */
        uint64_t turn;              /* (turns.h) */
        /* written by the engine thread */
        sortd_status status;
        char why[256];
        uint64_t t_sort, t_done;
        uint64_t device_ns;  /* of those, the device's own (the engine's events); 0: unmeasured */
        uint16_t batch_size; /* members of its batch (0: sorted alone) */
        bool batch_first;    /* the batch's first member, which counts the batch */
        bool bounced;        /* not run: its engine thread has stopped sorting (worker.h) */
        bool unsupported;    /* not run: its engine has no such sort, and cpu_fallback was set */
} sortd__job_work;

typedef struct sortd__job {
        struct sortd__job *next;  /* the connection's pipeline, in request order */
        struct sortd__job *qnext; /* fair queue or completion list (queue.c, worker.c) */
        void *owner;              /* the connection: what a completion is for */
        sortd__job_state state;
        uint64_t id;
        bool cancelled; /* its connection went away while the engine had it */
        /* The job's buffer: an inline sort's request and reply, segments' offsets (parts). */
        uint8_t *buf;
        size_t buf_bytes;
        sortd__job_parts parts;
        struct sortd__hostpool *pool; /* where buf came from; NULL: the heap */
        /* Bytes counted against max-inflight-bytes, given back when the job goes. */
        struct sortd__admission *adm;
        size_t charged;
        struct sortd__region *keys_rg, *vals_rg; /* a region sort's regions, held until done */
        struct sortd__region *out_rg[2];         /* a region top-k's outputs', held too */
        uint64_t out_offset[2];                  /* where in them (spans found once the
                                                    offsets say how many results) */
        struct sortd__region *offsets_rg;        /* the memfd region of its offsets, held */
        const uint8_t *offsets_src;              /* until they are copied from there */
        uint64_t t_frame, t_read;
        bool cpu_path; /* queued for the CPU path, not the engine */
        /* Where the engines queued it (engines.c): a lane, or -1 (the CPU path, or not yet);
           the device it must run on (a CUDA region's, or the client's choice), or -1 for any;
           and the flows of its connection, for a move to another lane. */
        int lane, device;
        struct sortd__engines_flows *flows;
        int numa_node; /* where its keys lie (a memfd region's pages), or -1: unknown */
        /* the reply: its packed header and message (the payload is buf; none from regions) */
        uint8_t *out;
        size_t out_len;
        uv_write_t wreq;
        sortd__job_work work;
} sortd__job;

/* A job for request id, done (a reply the loop writes itself until a sort fills it in); NULL
   without memory. */
sortd__job *sortd__job_new(uint64_t id);
/* Frees j, its buffer and its reply bytes, and gives back the bytes charged to it (which may
   admit a waiting connection's sort). NULL is fine. */
void sortd__job_free(sortd__job *j);

/* The size of j's buffer (j->parts). */
size_t sortd__job_buffer_bytes(const sortd__job *j);
/*
 * j's buffer, from pool where it has room (NULL or an off pool: the heap), with j->work's
 * pointers to the parts it has (keys and vals, seg.offsets, out_keys and out_vals) into it. 0;
 * 1 when the pool is on but had no room (a miss: the buffer came from the heap); -ENOMEM when
 * none could be had.
 */
int sortd__job_buffer(sortd__job *j, struct sortd__hostpool *pool);
/* j holds bytes of a's in-flight memory: sortd__job_free gives them back. */
void sortd__job_charge(sortd__job *j, struct sortd__admission *a, size_t bytes);

/* The payload of j's reply, into parts (two at most): an inline sort's sorted keys and values
   (an argsort by columns: the permutation alone), or its top-k results; none for a region sort
   or a failed one. Returns its bytes. */
uint64_t sortd__job_reply_payload(const sortd__job *j, uv_buf_t parts[2], unsigned *count);

/* Whether j sorts plain arrays: no segments, no top-k, no key columns (what batches and the
   loop may take). */
static inline bool sortd__job_plain(const sortd__job *j)
{
        return !j->work.segmented && !j->work.k && !j->work.cols.count;
}

/* Where j's keys lie, as the engine's segmented and top-k calls take it. */
static inline sortd_memory sortd__job_memory(const sortd__job *j)
{
        if (j->work.op == SORTD__JOB_OP_SORT_DEVICE)
                return SORTD_MEMORY_DEVICE;
        return j->work.shared ? SORTD_MEMORY_SHARED : SORTD_MEMORY_HOST;
}

/* Whether j is a sort (its reply a SortReply), as against a region's open or close. */
static inline bool sortd__job_is_sort(const sortd__job *j)
{
        return j->work.op == SORTD__JOB_OP_SORT || j->work.op == SORTD__JOB_OP_SORT_DEVICE;
}

#endif
