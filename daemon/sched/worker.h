/* The engine thread (worker.c) and the hand-off of finished jobs back to the loop. */
#ifndef SORTD_DAEMON_WORKER_H
#define SORTD_DAEMON_WORKER_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <uv.h>

#include "engine.h"
#include "job.h"
#include "queue.h"

typedef void (*sortd__worker_complete_fn)(sortd__job *j, void *arg);
/* The engine thread's call when its engine is lost: the one to use now, or NULL for none. */
typedef sortd_engine *(*sortd__worker_replace_fn)(sortd_engine *lost, void *arg);

/*
 * What the engine thread does when its engine is lost (engine.h). replace gives another, or
 * NULL for none (NULL: the lost engine stays). stale, asked before each job, says whether the
 * engine is lost though it has not failed yet (another engine on its device failed for good):
 * then it is replaced before it fails a sort. When replace has none: without drop the lost
 * engine stays, and fails every sort fast with its message; with drop the thread stops
 * sorting (dropped, for the loop to read) and hands every job back unrun, work.bounced set,
 * for another engine thread to take; only a region's close still runs, which a lost engine
 * can do.
 */
typedef struct sortd__worker_loss {
        sortd__worker_replace_fn replace;
        bool (*stale)(const sortd_engine *e, void *arg);
        void *arg;
        bool drop;
} sortd__worker_loss;

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
        sortd__worker_loss loss;
        bool replace_failed; /* asked once, got none: not asked again */
        atomic_bool dropped; /* loss.drop, and it did: every job but a close comes back unrun */
        bool pinned;         /* the thread runs on cpus only (its device's NUMA node) */
        cpu_set_t cpus;
} sortd__worker;

/* lim: how the engine thread batches small sorts (lim->max_jobs is capped at
   SORTD__WORKER_BATCH_MAX_JOBS); NULL for none. */
int sortd__worker_start(sortd__worker *w, uv_loop_t *loop, sortd_engine *e, sortd__queue *q,
                        const sortd__queue_batch_limits *lim, sortd__worker_complete_fn complete,
                        void *arg);
/* Before start: the engine thread runs on cpus only (its device's NUMA node's). */
void sortd__worker_on_cpus(sortd__worker *w, const cpu_set_t *cpus);
/* Before start: what happens when the engine is lost (see sortd__worker_loss). */
void sortd__worker_on_loss(sortd__worker *w, const sortd__worker_loss *loss);
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
