/*
 * The engines as the connections see them (engines.c): where a job goes to be sorted. The
 * engine's queue and thread, the CPU path's (route.c) beside it, and the loop thread itself
 * for a small sort that waits for nobody. A connection hands a job in and gets it back through
 * the completion callback its owner gave sortd__engines_start; it never sees which engine ran
 * it. Loop thread, but what queue.c and worker.c say otherwise.
 */
#ifndef SORTD_DAEMON_ENGINES_H
#define SORTD_DAEMON_ENGINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "job.h"
#include "queue.h"
#include "route.h"
#include "turns.h"
#include "worker.h"

typedef struct sortd__engines {
        sortd__queue queue; /* the engine's */
        sortd__worker worker;
        sortd__queue cpu_queue; /* the CPU path's */
        sortd__worker cpu_worker;
        sortd__route route;      /* which sorts take the CPU path */
        uint64_t loop_sort_keys; /* sorts up to this n may run on the loop thread; 0: none */
} sortd__engines;

/* A connection's place at the engines: its flow in each queue, and its region sorts' turns. */
typedef struct sortd__engines_flows {
        sortd__queue_flow flow, cpu_flow;
        sortd__turns turns;
} sortd__engines_flows;

/* The queues, empty; 0 or a negative errno. e->route is opened apart (sortd__route_open), before or
   after, and closed apart. */
int sortd__engines_init(sortd__engines *e, uint64_t loop_sort_keys);
void sortd__engines_destroy(sortd__engines *e);
/*
 * Starts the engine thread on engine, and the CPU path's on e->route.cpu if there is one: each
 * finished job comes back to complete(j, arg) on loop. lim: how small sorts are batched.
 * replace: what a lost engine is replaced with (worker.h), or NULL. 0 or a negative errno, with
 * nothing started.
 */
int sortd__engines_start(sortd__engines *e, uv_loop_t *loop, sortd_engine *engine,
                         const sortd__queue_batch_limits *lim, sortd__worker_complete_fn complete,
                         sortd__worker_replace_fn replace, void *replace_arg);
/* Joins the threads; the last completions are delivered first. */
void sortd__engines_stop(sortd__engines *e);
/*
 * Hands j (its work filled in, a region sort's shared set) to an engine from f. Returns true
 * when it was sorted now, on the loop thread (here: the caller allows one, and the CPU engine
 * was idle and j small), j then done; false when it was queued, to come back through the
 * completion callback.
 */
bool sortd__engines_submit(sortd__engines *e, sortd__engines_flows *f, sortd__job *j, bool here);
/* Takes f's queued jobs back, never to be sorted: a qnext list. */
sortd__job *sortd__engines_cancel(sortd__engines *e, sortd__engines_flows *f);
/* Jobs waiting in the queues. */
size_t sortd__engines_queued(sortd__engines *e);

#endif
