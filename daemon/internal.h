/*
 * sortd's internals, shared only inside daemon/.
 *
 * Data path: socket -> frame (frame.c) -> admission and dispatch (conn.c) -> fair queue
 * (queue.c) -> engine thread (worker.c) -> completion back on the loop -> reply (conn.c).
 * Everything here runs on the loop thread except what queue.c and worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_INTERNAL_H
#define SORTD_DAEMON_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "counters.h"
#include "engine.h"
#include "sortd_version.h"
#include "wire.h"

/* ---- log.c ---- */

enum {
        SORTD__LOG_ERR = 3,
        SORTD__LOG_WARNING = 4,
        SORTD__LOG_NOTICE = 5,
        SORTD__LOG_INFO = 6,
        SORTD__LOG_DEBUG = 7
};

void sortd__log_set_level(int level);
void sortd__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "error", "warning", "notice", "info", "debug"; -1 if unknown. */
int sortd__log_level_parse(const char *name);

/* ---- config.c ---- */

typedef struct sortd__config {
        char socket[256];
        char engine[16];
        uint64_t capacity;
        uint64_t threads;
        uint64_t max_request_bytes;
        uint64_t max_inflight_bytes;
        uint64_t max_connections;
        uint64_t max_pipeline;    /* requests read but not yet answered, per connection */
        uint64_t max_write_queue; /* reply bytes queued to one connection before reads stop */
        uint64_t max_drain_bytes; /* a refused payload up to this size is read and dropped */
        uint64_t drain_timeout_ms;
        int log_level;
} sortd__config;

/*
 * Fills cfg from the defaults, then --config FILE, then the command line. Returns 0, 1 when
 * the program should exit 0 (--help, --version) or -1 on error (already reported on stderr).
 */
int sortd__config_load(sortd__config *cfg, int argc, char **argv);

/* ---- frame.c: the incremental frame reader ---- */

typedef enum sortd__fr_event {
        SORTD__FR_MORE,    /* keep reading */
        SORTD__FR_MESSAGE, /* header and message are in: decode, then sink or discard a payload */
        SORTD__FR_PAYLOAD, /* the payload is complete in the sink */
        SORTD__FR_ERROR,   /* the stream cannot be trusted any more; see status and why */
} sortd__fr_event;

typedef struct sortd__frame_reader {
        enum {
                SORTD__FR_HEADER,
                SORTD__FR_BODY,
                SORTD__FR_AWAIT_SINK,
                SORTD__FR_SINK,
                SORTD__FR_DISCARD,
                SORTD__FR_FAILED
        } state;
        uint32_t max_message;
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h;
        uint8_t *msg; /* max_message bytes; also the scratch of a discarded payload */
        size_t got;   /* bytes of the current header or message */
        struct {
                uint8_t *base;
                size_t len;
        } seg[2];
        unsigned cur;  /* segment being filled */
        uint64_t left; /* payload bytes still to come */
        sortd_status status;
        char why[160];
} sortd__frame_reader;

int sortd__fr_init(sortd__frame_reader *fr, uint32_t max_message);
void sortd__fr_free(sortd__frame_reader *fr);
/* Where the next bytes of the stream go; *len == 0 while a sink is awaited or after an error. */
void sortd__fr_buffer(sortd__frame_reader *fr, uint8_t **base, size_t *len);
/* n bytes were written at the place sortd__fr_buffer gave. */
sortd__fr_event sortd__fr_consumed(sortd__frame_reader *fr, size_t n);
/* After SORTD__FR_MESSAGE with a payload: it goes to a then b (lengths must add up to it). */
void sortd__fr_sink(sortd__frame_reader *fr, void *a, size_t alen, void *b, size_t blen);
/* After SORTD__FR_MESSAGE with a payload: read it and drop it. */
void sortd__fr_discard(sortd__frame_reader *fr);
/* Between frames (nothing of the next one read yet). */
bool sortd__fr_at_boundary(const sortd__frame_reader *fr);

/* ---- the unit of work: one request in a connection's pipeline ---- */

struct sortd__conn;

typedef enum sortd__job_state {
        SORTD__JOB_READING, /* its payload is arriving */
        SORTD__JOB_QUEUED,  /* in the fair queue or on the engine thread */
        SORTD__JOB_DONE,    /* its reply can be written */
} sortd__job_state;

typedef struct sortd__job {
        struct sortd__job *next;  /* the connection's pipeline, in request order */
        struct sortd__job *qnext; /* fair queue or completion list (queue.c, worker.c) */
        struct sortd__conn *conn;
        sortd__job_state state;
        uint64_t id;
        bool is_sort;
        bool cancelled; /* its connection went away while the engine had it */
        sortd_status status;
        char why[200];
        /* a sort */
        sortd_sort_desc desc;
        uint64_t n;
        sortd__wire_sizes sizes;
        uint8_t *buf; /* keys, then values at vals_off */
        size_t vals_off;
        size_t buf_bytes;
        size_t charged; /* bytes counted against max-inflight-bytes */
        uint64_t t_frame, t_read, t_sort, t_done;
        /* the reply: its packed header and message (the payload is buf) */
        uint8_t *out;
        size_t out_len;
        Sortd__Wire__Reply *reply; /* a non-sort reply built at dispatch; freed after packing */
        uv_write_t wreq;
} sortd__job;

/* ---- queue.c: the fair queue between the loop and the engine thread ---- */

/* One connection's queue of sorts. Owned by the connection, linked into the ring. */
typedef struct sortd__flow {
        sortd__job *head, *tail;
        struct sortd__flow *ring_next;
        bool in_ring;
} sortd__flow;

/*
 * Round-robin over the flows that have work. Lock order: the queue's mutex is a leaf (nothing
 * else is locked while it is held).
 */
typedef struct sortd__fair_queue {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        sortd__flow *ring_head, *ring_tail;
        size_t queued;
        bool closing;
} sortd__fair_queue;

int sortd__fq_init(sortd__fair_queue *q);
void sortd__fq_destroy(sortd__fair_queue *q);
void sortd__fq_push(sortd__fair_queue *q, sortd__flow *f, sortd__job *j);
/* Blocks for the next job in round-robin order; NULL once closed and empty. */
sortd__job *sortd__fq_pop(sortd__fair_queue *q);
/* Takes every queued job of f out of the queue; returns them as a qnext list. */
sortd__job *sortd__fq_cancel(sortd__fair_queue *q, sortd__flow *f);
void sortd__fq_close(sortd__fair_queue *q);
size_t sortd__fq_length(sortd__fair_queue *q);

/* ---- worker.c: the engine thread and the hand-off back to the loop ---- */

typedef void (*sortd__complete_fn)(sortd__job *j, void *arg);

typedef struct sortd__worker {
        sortd_engine *engine;
        sortd__fair_queue *queue;
        uv_async_t async;
        pthread_t thread;
        bool started;
        /* Lock order: done_mu is a leaf. */
        pthread_mutex_t done_mu;
        sortd__job *done_head, *done_tail;
        sortd__complete_fn complete;
        void *arg;
} sortd__worker;

int sortd__worker_start(sortd__worker *w, uv_loop_t *loop, sortd_engine *e, sortd__fair_queue *q,
                        sortd__complete_fn complete, void *arg);
/* Closes the queue, joins the thread, delivers the last completions, closes the async. */
void sortd__worker_stop(sortd__worker *w);

/* ---- server.c and conn.c ---- */

/* The counters Status reports (counters.h); queued stays 0 here: it is the queue's length. */
typedef struct sortd__stats {
#define SORTD__STAT(name, wire_type, label) uint64_t name;
        SORTD_STATUS_COUNTERS(SORTD__STAT)
#undef SORTD__STAT
} sortd__stats;

typedef struct sortd__server {
        uv_loop_t *loop;
        sortd__config cfg;
        sortd_engine *engine;
        char engine_reason[1024]; /* how it was chosen and its self-check: logs, Status */
        sortd__fair_queue queue;
        sortd__worker worker;
        uv_pipe_t listener;
        bool listening;
        uv_signal_t sigterm, sigint;
        uv_timer_t watchdog, drain_timer;
        bool watchdog_on, draining;
        uint64_t started_ns;
        struct sortd__conn *conns;     /* every open connection */
        struct sortd__conn *wait_head; /* waiting for in-flight memory, first come first served */
        struct sortd__conn *wait_tail;
        sortd__stats stats;
} sortd__server;

typedef struct sortd__conn {
        uv_pipe_t pipe;
        sortd__server *srv;
        struct sortd__conn *prev, *next; /* srv->conns */
        struct sortd__conn *wait_next;
        bool waiting_memory;
        char name[64]; /* "pid 123 uid 1000" for logs */
        sortd__frame_reader fr;
        sortd__flow flow;
        sortd__job *pipe_head, *pipe_tail; /* requests not yet replied to, in order */
        sortd__job *reading;               /* the sort whose payload is arriving */
        size_t pipelined;                  /* jobs in the pipeline */
        size_t in_engine;                  /* jobs the engine thread holds */
        size_t writes;                     /* replies handed to uv_write */
        uint64_t fr_started;               /* when the current frame's first byte came */
        bool reading_on, closing, closed, close_after_flush;
} sortd__conn;

/* Accepts one connection from the listener. */
void sortd__conn_accept(sortd__server *srv);
/* A job came back from the engine thread. */
void sortd__conn_complete(sortd__job *j, void *arg);
/* Re-evaluates whether c should read (limits, memory, draining). */
void sortd__conn_update(sortd__conn *c);
/* Starts the close of c (idempotent). */
void sortd__conn_close(sortd__conn *c);
/* Memory was released: admit connections waiting for it. */
void sortd__server_memory_freed(sortd__server *srv);
/* A connection went away: finish the drain when it was the last. */
void sortd__server_conn_gone(sortd__server *srv);
void sortd__status_fill(sortd__server *srv, Sortd__Wire__StatusReply *r, Sortd__Wire__Limits *l);
void sortd__limits_fill(const sortd__server *srv, Sortd__Wire__Limits *l);

/* main.c's whole body. */
int sortd__run(int argc, char **argv);

#endif
