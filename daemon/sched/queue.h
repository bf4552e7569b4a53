/* The fair queue (queue.c) between the loop and the engine thread. */
#ifndef SORTD_DAEMON_QUEUE_H
#define SORTD_DAEMON_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

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
        bool busy;    /* the engine thread has a job (from its pop until its next one) */
        bool claimed; /* the loop thread runs a job itself (sortd__fq_claim) */
} sortd__fair_queue;

/* What the engine thread may take as one batch: small inline sorts (never one in a region),
   within totals. */
typedef struct sortd__batch_limits {
        uint64_t member_keys; /* a sort of up to this n may join a batch; 0: no batches */
        uint64_t max_keys;    /* of all members together */
        uint64_t max_bytes;   /* keys and values (or indices) of all members together */
        size_t max_jobs;
} sortd__batch_limits;

/*
 * One connection's sorts in its regions take turns: each writes in place what the next may
 * read, and a pipelining client expects each to sort the previous one's result, so they run
 * one at a time, in the order they came, whichever thread runs them (the engine's, the CPU
 * path's, the loop). One whose turn has not come waits at the head of its flow.
 */
typedef struct sortd__turns {
        uint64_t given;             /* loop thread: turns handed out */
        atomic_uint_fast64_t done;  /* turns finished: written by whichever thread ran them */
        sortd__fair_queue *wake[2]; /* where its sorts wait, woken as each finishes */
} sortd__turns;

/* Gives j, a sort in regions, the next of t's turns; a or b is the queue it waits in. */
void sortd__turn_take(sortd__turns *t, sortd__job *j, sortd__fair_queue *a, sortd__fair_queue *b);
/* Whether j may start now: it has no turn, or its turn has come. Any thread. */
bool sortd__turn_now(const sortd__job *j);
/* j, sorted (or failed), ends its turn: the next may start. Any thread, no queue's lock held. */
void sortd__turn_end(sortd__job *j);

int sortd__fq_init(sortd__fair_queue *q);
void sortd__fq_destroy(sortd__fair_queue *q);
void sortd__fq_push(sortd__fair_queue *q, sortd__flow *f, sortd__job *j);
/* Blocks for the next job in round-robin order (a flow whose next job waits for its turn is
   passed over); NULL once closed and empty. */
sortd__job *sortd__fq_pop(sortd__fair_queue *q);
/*
 * Blocks for the next job as sortd__fq_pop does. When it is a small inline sort, the next jobs
 * in round-robin order join it while each is one and the totals stay within lim; it
 * never waits for more work. Returns them as a qnext list of *count jobs; NULL once closed
 * and empty.
 */
sortd__job *sortd__fq_pop_batch(sortd__fair_queue *q, const sortd__batch_limits *lim,
                                size_t *count);
/*
 * The loop thread's claim on the engine: true when nothing is queued and the engine thread is
 * between jobs, which it then stays until sortd__fq_release. Only the loop thread queues, so
 * while it holds the claim the engine is its alone.
 */
bool sortd__fq_claim(sortd__fair_queue *q);
void sortd__fq_release(sortd__fair_queue *q);
/* Takes every queued job of f out of the queue; returns them as a qnext list. */
sortd__job *sortd__fq_cancel(sortd__fair_queue *q, sortd__flow *f);
void sortd__fq_close(sortd__fair_queue *q);
size_t sortd__fq_length(sortd__fair_queue *q);

#endif
