/* The engine thread (worker.c) and the hand-off of finished jobs back to the loop. */
#ifndef SORTD_DAEMON_WORKER_H
#define SORTD_DAEMON_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include <uv.h>

#include "engine.h"
#include "job.h"
#include "queue.h"

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

#endif
