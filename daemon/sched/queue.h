/* The fair queue (queue.c) between the loop and the engine thread. */
#ifndef SORTD_DAEMON_QUEUE_H
#define SORTD_DAEMON_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "turns.h"

/* One connection's queue of sorts. Owned by the connection, linked into the ring. */
typedef struct sortd__queue_flow {
        sortd__job *head, *tail;
        struct sortd__queue_flow *ring_next;
        bool in_ring;
} sortd__queue_flow;

/*
 * Round-robin over the flows that have work. Lock order: the queue's mutex is a leaf (nothing
 * else is locked while it is held).
 */
typedef struct sortd__queue {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        sortd__queue_flow *ring_head, *ring_tail;
        size_t queued;
        bool closing;
        bool busy;    /* the engine thread has a job (from its pop until its next one) */
        bool claimed; /* the loop thread runs a job itself (sortd__queue_claim) */
} sortd__queue;

/* What the engine thread may take as one batch: small inline sorts (never one in a region),
   within totals. */
typedef struct sortd__queue_batch_limits {
        uint64_t member_keys; /* a sort of up to this n may join a batch; 0: no batches */
        uint64_t max_keys;    /* of all members together */
        uint64_t max_bytes;   /* keys and values (or indices) of all members together */
        size_t max_jobs;
} sortd__queue_batch_limits;

/* 0, or a negative errno (pthread_mutex_init, pthread_cond_init). */
int sortd__queue_init(sortd__queue *q);
void sortd__queue_destroy(sortd__queue *q);
void sortd__queue_push(sortd__queue *q, sortd__queue_flow *f, sortd__job *j);
/* Blocks for the next job in round-robin order (a flow whose next job waits for its turn is
   passed over); NULL once closed and empty. */
sortd__job *sortd__queue_pop(sortd__queue *q);
/*
 * Blocks for the next job as sortd__queue_pop does. When it is a small inline sort, the next jobs
 * in round-robin order join it while each is one and the totals stay within lim; it
 * never waits for more work. Returns them as a qnext list of *count jobs; NULL once closed
 * and empty.
 */
sortd__job *sortd__queue_pop_batch(sortd__queue *q, const sortd__queue_batch_limits *lim,
                                   size_t *count);
/*
 * The loop thread's claim on the engine: true when nothing is queued and the engine thread is
 * between jobs, which it then stays until sortd__queue_release. Only the loop thread queues, so
 * while it holds the claim the engine is its alone.
 */
bool sortd__queue_claim(sortd__queue *q);
void sortd__queue_release(sortd__queue *q);
/* Takes every queued job of f out of the queue; returns them as a qnext list. */
sortd__job *sortd__queue_cancel(sortd__queue *q, sortd__queue_flow *f);
void sortd__queue_close(sortd__queue *q);
size_t sortd__queue_length(sortd__queue *q);

#endif
