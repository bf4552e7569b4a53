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

#endif
