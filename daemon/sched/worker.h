/* The engine thread (worker.c) and the hand-off of finished jobs back to the loop. */
#ifndef SORTD_DAEMON_WORKER_H
#define SORTD_DAEMON_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include <uv.h>

#include "engine.h"
#include "job.h"
#include "queue.h"

typedef void (*sortd__worker_complete_fn)(sortd__job *j, void *arg);
/* The engine thread's call when its engine is lost: the one to use now, or NULL for none. */
typedef sortd_engine *(*sortd__worker_replace_fn)(sortd_engine *lost, void *arg);

/* The most sorts one batch holds: the engine thread's items array is this long. */
#define SORTD__WORKER_BATCH_MAX_JOBS 256
_Static_assert(SORTD__WORKER_BATCH_MAX_JOBS <= UINT16_MAX, "a job counts its batch in 16 bits");

typedef struct sortd__worker {
        sortd_engine *engine;
        sortd__queue *queue;
        sortd__queue_batch_limits limits;
        sortd_engine_batch_item *items; /* SORTD__WORKER_BATCH_MAX_JOBS, the engine thread's */
        uv_async_t async;
        pthread_t thread;
        bool started;
        /* Lock order: done_mu is a leaf. */
        pthread_mutex_t done_mu;
        sortd__job *done_head, *done_tail;
        sortd__worker_complete_fn complete;
        void *arg;
        sortd__worker_replace_fn replace; /* NULL: a lost engine stays */
        void *replace_arg;
        bool replace_failed; /* asked once, got none: not asked again */
} sortd__worker;

/* lim: how the engine thread batches small sorts (lim->max_jobs is capped at
   SORTD__WORKER_BATCH_MAX_JOBS); NULL for none. */
int sortd__worker_start(sortd__worker *w, uv_loop_t *loop, sortd_engine *e, sortd__queue *q,
                        const sortd__queue_batch_limits *lim, sortd__worker_complete_fn complete,
                        void *arg);
/* Before start: on a lost engine (engine.h), the engine thread asks fn for another. */
void sortd__worker_on_loss(sortd__worker *w, sortd__worker_replace_fn fn, void *arg);
/*
 * On the loop thread: runs j there, on the engine, if the engine is a CPU one, nothing is
 * queued, the engine thread is between jobs and j's turn (queue.h) has come; false (j
 * untouched) if not. A sort that waits for nobody then costs no hand-off to the engine thread
 * and back.
 */
bool sortd__worker_run_here(sortd__worker *w, sortd__job *j);
/* Closes the queue, joins the thread, delivers the last completions, closes the async. */
void sortd__worker_stop(sortd__worker *w);

#endif
