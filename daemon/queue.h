/* The fair queue (queue.c) between the loop and the engine thread. */
#ifndef SORTD_DAEMON_QUEUE_H
#define SORTD_DAEMON_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

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

/* What the engine thread may take as one batch: small sorts in host memory, within totals. */
typedef struct sortd__batch_limits {
        uint64_t member_keys; /* a sort of up to this n may join a batch; 0: no batches */
        uint64_t max_keys;    /* of all members together */
        uint64_t max_bytes;   /* keys and values (or indices) of all members together */
        size_t max_jobs;
} sortd__batch_limits;

int sortd__fq_init(sortd__fair_queue *q);
void sortd__fq_destroy(sortd__fair_queue *q);
void sortd__fq_push(sortd__fair_queue *q, sortd__flow *f, sortd__job *j);
/* Blocks for the next job in round-robin order; NULL once closed and empty. */
sortd__job *sortd__fq_pop(sortd__fair_queue *q);
/*
 * Blocks for the next job as sortd__fq_pop does. When it is a small sort, the next jobs in
 * round-robin order join it while each is a small sort and the totals stay within lim; it
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
