/*
 * Admission (admission.c): request buffers (from the host pool, or the heap when it has no
 * room), the bytes in flight they hold, and the line of connections waiting for them. A sort's
 * payload is read only into a buffer charged against max-inflight-bytes; while the limit says
 * no, its connection waits in line (reads stopped), and buffers never grow to absorb a fast
 * writer. A connection that leaves its replies unread waits in line without holding it.
 */
#ifndef SORTD_DAEMON_ADMISSION_H
#define SORTD_DAEMON_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "hostpool.h"
#include "job.h"
#include "stats.h"

struct sortd__pipeline;

/* A place in the line, embedded in its owner (the connection). */
typedef struct sortd__admission_waiter {
        struct sortd__admission_waiter *next;
        sortd__job *job; /* the sort waiting for its buffer; NULL when not in line */
        const struct sortd__pipeline *replies; /* its connection's: are they read? */
} sortd__admission_waiter;

/*
 * Memory came back and w's job, first in line, took it: w has left the line. job->buf is its
 * buffer, or NULL when the allocation failed (the job is then done, with SORTD_E_NOMEM).
 */
typedef void (*sortd__admission_admitted_fn)(sortd__admission_waiter *w);

typedef struct sortd__admission {
        uint64_t max_inflight_bytes;
        sortd__hostpool *pool; /* request buffers come from here first; the server's */
        sortd__stats *stats;   /* inflight_bytes and inflight_peak are kept here */
        sortd__admission_waiter *head, *tail;
        sortd__admission_admitted_fn admitted;
} sortd__admission;

void sortd__admission_init(sortd__admission *a, uint64_t max_inflight_bytes, sortd__hostpool *pool,
                           sortd__stats *stats, sortd__admission_admitted_fn admitted);
/*
 * Gives the sort j its buffer now and returns true (j->buf NULL and j done with
 * SORTD_E_NOMEM, counted as failed, when the allocation failed), or puts w in line for it and
 * returns false. replies: the pipeline of w's connection, whose unread replies let those
 * behind w in line go first.
 */
bool sortd__admission_admit(sortd__admission *a, sortd__admission_waiter *w, sortd__job *j,
                            const struct sortd__pipeline *replies);
/* Takes w out of the line; nothing when it is not in it. */
void sortd__admission_leave(sortd__admission *a, sortd__admission_waiter *w);
/* Frees j with its buffer and reply; the bytes it held may admit those in line. */
void sortd__admission_release(sortd__admission *a, sortd__job *j);
/* A connection's replies began to wait for its client: if it is in line, those behind it may
   go now. */
void sortd__admission_replies_wait(sortd__admission *a);

#endif
