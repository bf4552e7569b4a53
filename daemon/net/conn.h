/*
 * A client connection (conn.c): accept, reads, read flow control, timeouts, close. It sees of
 * the server only its context: the limits (const), the counters it may count, admission, the
 * engines, and the callback that tells its owner it has gone. The server owns the list of
 * connections; a connection never touches it.
 */
#ifndef SORTD_DAEMON_CONN_H
#define SORTD_DAEMON_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "access.h"
#include "admission.h"
#include "dispatch.h"
#include "engines.h"
#include "frame.h"
#include "hostpool.h"
#include "job.h"
#include "pipeline.h"
#include "region.h"
#include "timeouts.h"

struct sortd__conn;

/* The connection's handle has closed: its owner takes it off its list. The connection is
   freed by itself afterwards, once the engines hold none of its jobs. */
typedef void (*sortd__conn_gone_fn)(struct sortd__conn *c, void *arg);

typedef struct sortd__conn_limits {
        uint64_t max_connections;  /* one more than this is refused */
        uint64_t max_pipeline;     /* requests read but not yet answered */
        uint64_t max_write_queue;  /* reply bytes queued before reads stop */
        uint64_t frame_timeout_ms; /* a frame in progress may go this long without a byte */
        uint64_t idle_timeout_ms;  /* a connection with nothing in progress; 0: for ever */
        uint64_t write_timeout_ms; /* queued reply bytes may go this long untaken; 0: for ever */
} sortd__conn_limits;

/* What every connection shares, the server's; it outlives them all. */
typedef struct sortd__conn_ctx {
        uv_loop_t *loop;
        const sortd__conn_limits *limits;
        const sortd__access *access;
        const sortd__dispatch_env *env;
        const bool *draining; /* the server drains: no new request is taken */
        sortd__stats *stats;
        sortd__admission *adm;
        sortd__hostpool *pool;
        sortd__engines *engines;
        sortd__region_limits *regions;
        sortd__conn_gone_fn gone;
        void *gone_arg;
} sortd__conn_ctx;

/*
 * Where a connection is in its life: each state comes after the one before, never back.
 * OPEN: it reads and answers (or, with its pipeline's close_after_flush, only answers what it
 * has). CLOSING: uv_close was called; its jobs still queued were cancelled. CLOSED: its handle
 * closed and its owner told; it waits only for the engines to give back the jobs they hold.
 */
typedef enum sortd__conn_state {
        SORTD__CONN_OPEN,
        SORTD__CONN_CLOSING,
        SORTD__CONN_CLOSED,
} sortd__conn_state;

/* Flags beside the state, each true only while OPEN. */
enum {
        SORTD__CONN_READING = 1u << 0,   /* uv_read_start is on */
        SORTD__CONN_CONSUMING = 1u << 1, /* parsing the read-ahead: do not start again inside */
        SORTD__CONN_LOOP_SORT = 1u << 2, /* the read being parsed may still sort on the loop */
};

typedef struct sortd__conn {
        uv_pipe_t pipe;
        const sortd__conn_ctx *ctx;
        struct sortd__conn *prev, *next; /* the owner's list: conn.c never touches them */
        sortd__conn_state state;
        unsigned flags;
        char name[64]; /* "client pid 123 uid 1000 gid 1000" for logs */
        sortd__frame_reader fr;
        sortd__dispatch_ctx d;        /* what dispatch may use of it */
        sortd__engines_flows flows;   /* its place in the engines' queues */
        sortd__admission_waiter wait; /* in line for in-flight memory */
        sortd__pipeline out;          /* its requests, in order, until their replies are written */
        sortd__regions regions;       /* its shared-memory regions, unmapped when it is freed */
        sortd__job *reading;          /* the sort whose payload is arriving */
        size_t in_engine;             /* jobs the engines hold */
        /* Read-ahead: bytes read, not yet parsed, at ra[ra_pos, ra_len). */
        uint8_t *ra;
        size_t ra_pos, ra_len;
        uint64_t parsed;     /* stream bytes the frame reader has taken */
        uint64_t fd_mark;    /* stream offset of the last byte of the read pending fds came with */
        int fds_known;       /* fds pending once the last frame part was parsed */
        uint64_t fr_started; /* when the current frame's first byte came */
        sortd__timeouts clock; /* what its timeouts measure */
} sortd__conn;

/* A connection with ctx, not yet accepted; NULL without memory. */
sortd__conn *sortd__conn_new(const sortd__conn_ctx *ctx);
/* Accepts c from server and starts it: it reads, or is refused (access, max-connections) and
   told why; a failed accept closes it. Its owner has it on its list by now. */
void sortd__conn_start(sortd__conn *c, uv_stream_t *server);
/* The engines' callback: a job came back (j->owner is its connection). */
void sortd__conn_complete(sortd__job *j, void *arg);
/* Re-evaluates whether c should read (limits, memory, draining), writes what is ready. */
void sortd__conn_update(sortd__conn *c);
/* Starts the close of c (idempotent). */
void sortd__conn_close(sortd__conn *c);
/* Closes c if it has been quiet past frame-timeout-ms mid-frame, idle past idle-timeout-ms, or
   has left reply bytes untaken past write-timeout-ms. now: when the caller read the clock. */
void sortd__conn_check_timeouts(sortd__conn *c, uint64_t now);

#endif
