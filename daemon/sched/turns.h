/* Turns (turns.c): one connection's sorts in its regions, one at a time, in order. */
#ifndef SORTD_DAEMON_TURNS_H
#define SORTD_DAEMON_TURNS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "job.h"

struct sortd__queue;

/*
 * One connection's sorts in its regions take turns: each writes in place what the next may
 * read, and a pipelining client expects each to sort the previous one's result, so they run
 * one at a time, in the order they came, whichever thread runs them (the engine's, the CPU
 * path's, the loop). One whose turn has not come waits at the head of its flow.
 */
typedef struct sortd__turns {
        atomic_uint_fast64_t given;       /* turns handed out: written by the loop thread */
        atomic_uint_fast64_t done;        /* turns finished: written by whichever thread ran them */
        struct sortd__queue *const *wake; /* where its sorts may wait, woken as each finishes */
        unsigned n_wake;
} sortd__turns;

/* Gives j, a sort in regions, the next of t's turns; it waits in one of the n queues of wake,
   which must outlive t. */
void sortd__turns_take(sortd__turns *t, sortd__job *j, struct sortd__queue *const *wake,
                       unsigned n);
/* Whether j may start now: it has no turn, or its turn has come. Any thread. */
bool sortd__turns_now(const sortd__job *j);
/* j, sorted (or failed), ends its turn: the next may start. Any thread, no queue's lock held. */
void sortd__turns_end(sortd__job *j);

#endif
