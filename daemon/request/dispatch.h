/*
 * Dispatch (dispatch.c): what a connection's request becomes. It decodes a frame's message
 * (request.c), answers what it can at once into the connection's pipeline, and returns what
 * is left for the connection to do: admit a sort whose payload follows, hand a job to the
 * engines, drop a payload, close after the replies. It sees of its connection only the parts
 * in its context, and of the server only the facts and limits in its environment; it never
 * calls either back but through the function pointers in them.
 */
#ifndef SORTD_DAEMON_DISPATCH_H
#define SORTD_DAEMON_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engines.h"
#include "job.h"
#include "pipeline.h"
#include "region.h"
#include "reply.h"
#include "request.h"
#include "stats.h"

/* What dispatch knows of the server: fixed once it serves, but for the facts, asked for. */
typedef struct sortd__dispatch_env {
        uint64_t capacity;          /* the engine's largest n */
        uint64_t max_request_bytes; /* keys + values (or indices) of one sort */
        uint64_t max_drain_bytes;   /* a refused payload up to this size is read and dropped */
        const char *engine_kind;    /* for a refused CUDA region: what this daemon sorts on */
        sortd__engines *engines;    /* the devices served, by UUID: a CUDA region's, a sort's */
        /* Fills f with what Hello and Status report now. */
        void (*facts)(void *arg, sortd__reply_facts *f);
        void *facts_arg;
} sortd__dispatch_env;

/* The parts of one connection dispatch may use; its connection's, for as long as it lives. */
typedef struct sortd__dispatch_ctx {
        const sortd__dispatch_env *env;
        sortd__stats *stats;
        sortd__pipeline *out;
        sortd__regions *regions;
        const char *name; /* the peer, for logs */
        void *owner;      /* what its jobs' completions are for */
} sortd__dispatch_ctx;

/* One frame's message, as the connection's frame reader has it. */
typedef struct sortd__dispatch_frame {
        const uint8_t *msg;
        size_t len;
        uint64_t payload_len;
        uint64_t t_frame; /* when its first byte came */
        /* The fd that came with the frame, the caller's to give: takes it (now dispatch's),
           or returns -ENOENT when none came, or another negative errno. */
        int (*take_fd)(void *arg);
        void *take_fd_arg;
} sortd__dispatch_frame;

typedef enum sortd__dispatch_todo {
        SORTD__DISPATCH_NOTHING, /* answered (or refused) in the pipeline */
        SORTD__DISPATCH_ADMIT,   /* job's payload follows: charge its bytes, then read it */
        SORTD__DISPATCH_SUBMIT,  /* job goes to the engines now */
} sortd__dispatch_todo;

typedef struct sortd__dispatch_action {
        sortd__dispatch_todo todo;
        sortd__job *job;
        bool discard; /* the frame's payload is dropped (read, or the stream closed: see close) */
        bool close;   /* the stream cannot go on: close once the replies are out */
} sortd__dispatch_action;

/* The message of a frame: answered, or what the connection must do with it. */
sortd__dispatch_action sortd__dispatch_message(const sortd__dispatch_ctx *d,
                                               const sortd__dispatch_frame *f);
/* A stream that cannot be parsed: counted, logged and answered with status and why. */
void sortd__dispatch_broken(const sortd__dispatch_ctx *d, sortd_status s, const char *why);
/*
 * The reading sort j has its bytes charged: it gets its buffer, from pool where it has room;
 * 0, or -ENOMEM with j done (SORTD_E_NOMEM, counted), for its payload to be dropped and its
 * bytes given back.
 */
int sortd__dispatch_buffer(const sortd__dispatch_ctx *d, sortd__job *j,
                           struct sortd__hostpool *pool);
/*
 * A sort's segments and top-k (dispatch_segments.c), from its request into j: its fields, its
 * buffer's parts, the regions of its offsets and of a region top-k's results, found and held.
 * 0, or -EINVAL with j's why.
 */
int sortd__dispatch_segments(const sortd__dispatch_ctx *d, const sortd__request *rq, sortd__job *j);
/*
 * j's offsets are in its buffer, or now copied there from their region: checked, the top-k's
 * results counted and a region top-k's spans found. 0, or -EINVAL with j's why: j is then
 * refused before any engine saw it.
 */
int sortd__dispatch_segments_ready(sortd__job *j);
/*
 * A region sort by key columns (dispatch_columns.c): its keys region, *kr, with the columns'
 * buffer at keys_offset in j->work.keys, and its values region, *vr (NULL without a payload),
 * with the values or the permutation at vals_offset in j->work.vals. Both regions are of one
 * kind: memfd (host memory) or CUDA (device memory, the sort then on the region's device).
 * 0, or a negative errno with j's why.
 */
int sortd__dispatch_columns_spans(const sortd__dispatch_ctx *d, const sortd__request *rq,
                                  sortd__job *j, sortd__region **kr, sortd__region **vr);
/* The engine thread opened or closed a region for j (RegisterRegion, UnregisterRegion): the
   region is ready, or gone, and j holds its reply. */
void sortd__dispatch_region_done(const sortd__dispatch_ctx *d, sortd__job *j);
/* The connection is closing: each of its regions' close jobs, as a qnext list, for the
   engines to close them after its sorts. Nothing here can fail. */
sortd__job *sortd__dispatch_closing(const sortd__dispatch_ctx *d);

#endif
