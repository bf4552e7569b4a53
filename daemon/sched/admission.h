/*
 * Admission (admission.c): the bytes in flight, and the line of connections waiting for them.
 * A sort's payload is read only into a buffer whose bytes were charged against
 * max-inflight-bytes; while the limit says no, its connection waits in line (reads stopped),
 * and buffers never grow to absorb a fast writer. A connection that leaves its replies unread
 * waits in line without holding it. Admission counts bytes only: the buffers are the jobs'
 * (job.c), which give their bytes back as they go. Loop thread only.
 */
#ifndef SORTD_DAEMON_ADMISSION_H
#define SORTD_DAEMON_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "stats.h"

struct sortd__admission_waiter;

/* Memory came back and w, first in line, has its bytes charged now: w has left the line. */
typedef void (*sortd__admission_admitted_fn)(struct sortd__admission_waiter *w);

/* A place in the line, embedded in its owner (the connection), which sets admitted. */
typedef struct sortd__admission_waiter {
        struct sortd__admission_waiter *next;
        size_t bytes;               /* what it waits for; 0 when not in line */
        const uv_stream_t *replies; /* its connection's socket: are its replies read? */
        sortd__admission_admitted_fn admitted;
} sortd__admission_waiter;

typedef struct sortd__admission {
        uint64_t max_inflight_bytes;
        sortd__stats *stats; /* inflight_bytes and inflight_peak are kept here */
        sortd__admission_waiter *head, *tail;
} sortd__admission;

void sortd__admission_init(sortd__admission *a, uint64_t max_inflight_bytes, sortd__stats *stats);
/*
 * Charges bytes for w now and returns true, or puts w in line for them and returns false (its
 * w->admitted comes once they are charged). replies: the socket of w's connection, whose
 * unread replies let those behind w in line go first.
 */
bool sortd__admission_charge(sortd__admission *a, sortd__admission_waiter *w, size_t bytes,
                             const uv_stream_t *replies);
/* Takes w out of the line; nothing when it is not in it. */
void sortd__admission_leave(sortd__admission *a, sortd__admission_waiter *w);
/* Gives back bytes charged before; those in line may go now. */
void sortd__admission_uncharge(sortd__admission *a, size_t bytes);
/* A connection's replies began to wait for its client: if it is in line, those behind it may
   go now. */
void sortd__admission_replies_wait(sortd__admission *a);

#endif
