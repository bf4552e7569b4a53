/*
 * A client connection (conn.c): accept, reads, read flow control, close. The server owns the
 * list of them and wires their callbacks; a connection tells the server only through those.
 */
#ifndef SORTD_DAEMON_CONN_H
#define SORTD_DAEMON_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "admission.h"
#include "frame.h"
#include "job.h"
#include "pipeline.h"
#include "queue.h"
#include "region.h"

struct sortd__server;

/* A connection has gone (its handle is closed): the server may finish a drain. */
typedef void (*sortd__conn_gone_fn)(struct sortd__server *srv);

typedef struct sortd__conn {
        uv_pipe_t pipe;
        struct sortd__server *srv;
        struct sortd__conn *prev, *next; /* srv->conns */
        sortd__conn_gone_fn gone;
        char name[64]; /* "pid 123 uid 1000" for logs */
        sortd__frame_reader fr;
        sortd__queue_flow flow;
        sortd__queue_flow cpu_flow;   /* its sorts on the CPU path */
        sortd__admission_waiter wait; /* in line for in-flight memory */
        sortd__pipeline out;          /* its requests, in order, until their replies are written */
        sortd__regions regions;       /* its shared-memory regions, unmapped when it is freed */
        sortd__job *reading;          /* the sort whose payload is arriving */
        size_t in_engine;             /* jobs the engine thread holds */
        /* Read-ahead (conn.c): bytes read, not yet parsed, at ra[ra_pos, ra_len). */
        uint8_t *ra;
        size_t ra_pos, ra_len;
        uint64_t parsed;      /* stream bytes the frame reader has taken */
        uint64_t fd_mark;     /* stream offset of the last byte of the read pending fds came with */
        int fds_known;        /* fds pending once the last frame part was parsed */
        bool consuming;       /* parsing the read-ahead: do not start again from inside */
        bool loop_sort_ok;    /* the read being parsed may still sort one request on the loop */
        uint64_t fr_started;  /* when the current frame's first byte came */
        uint64_t last_byte;   /* when the last byte came (or reads started again) */
        uint64_t idle_since;  /* when it last became idle (conn.c), while idle is true */
        uint64_t write_since; /* when its queued reply bytes last moved, while wq_seen > 0 */
        size_t wq_seen;       /* bytes in its write queue when last looked at */
        bool idle, reading_on, closing, closed;
} sortd__conn;

/* Whether the fds pending on c came with the frame just parsed: it takes or drops them. False
   when there are none, or they came with a later frame's bytes (already read ahead). */
bool sortd__conn_frame_fds(sortd__conn *c);
/* Accepts one connection from server; gone is called once it has closed. Returns 0, or
   -ENOMEM with the connection left on server, for the caller to take off and close. */
int sortd__conn_accept(struct sortd__server *srv, uv_stream_t *server, sortd__conn_gone_fn gone);
/* The worker's callback: a job came back from the engine thread (arg: the server). */
void sortd__conn_complete(sortd__job *j, void *arg);
/* A sort the loop thread ran itself (sortd__worker_run_here): counted as the engine thread's
   are, and done; the read that brought it writes its reply. */
void sortd__conn_sorted_here(sortd__conn *c, sortd__job *j);
/* The admission's callback: a connection's reading sort got its memory. */
void sortd__conn_admitted(sortd__admission_waiter *w);
/* Re-evaluates whether c should read (limits, memory, draining), writes what is ready. */
void sortd__conn_update(sortd__conn *c);
/* Starts the close of c (idempotent). */
void sortd__conn_close(sortd__conn *c);
/* Closes c if it has been quiet past frame-timeout-ms mid-frame, idle past idle-timeout-ms, or
   has left reply bytes untaken past write-timeout-ms. now: when the caller read the clock. */
void sortd__conn_check_timeouts(sortd__conn *c, uint64_t now);

#endif
