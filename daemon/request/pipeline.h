/*
 * The write pipeline (pipeline.c): one connection's requests in arrival order, each answered
 * once its reply is ready and every earlier one has been handed to uv_write. A sort's reply
 * goes out from its own buffer, with no copy.
 */
#ifndef SORTD_DAEMON_PIPELINE_H
#define SORTD_DAEMON_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "admission.h"
#include "job.h"
#include "reply.h"
#include "stats.h"

struct sortd__pipeline;

/* A queued write ended, its job already freed; status < 0: it failed, and the owner closes.
   A reply the socket took whole in sortd__pipeline_flush is not called back: the caller of the
   flush goes on from there. */
typedef void (*sortd__pipeline_written_fn)(struct sortd__pipeline *p, int status);

typedef struct sortd__pipeline {
        uv_stream_t *stream;
        const char *name;      /* the peer, for logs */
        sortd__admission *adm; /* told when a reply begins to wait for its client */
        sortd__stats *stats;   /* bytes_out */
        sortd__pipeline_written_fn written;
        sortd__job *head, *tail; /* requests not yet replied to, in order */
        size_t length;           /* jobs in it */
        size_t writes;           /* replies queued to uv_write and not yet written */
        /* No request is taken after those queued: the owner closes once they are out (a bad
           stream, or a reply that could not be packed and would leave the client out of step). */
        bool close_after_flush;
        bool closed; /* nothing more is written */
} sortd__pipeline;

void sortd__pipeline_init(sortd__pipeline *p, uv_stream_t *stream, const char *name,
                          sortd__admission *adm, sortd__stats *stats,
                          sortd__pipeline_written_fn written);
/* Appends a job for request id, done with nothing packed (a sort fills it in); NULL if no memory.
 */
sortd__job *sortd__pipeline_push(sortd__pipeline *p, uint64_t id);
/* Packs r into j, a job of this pipeline (NULL: pushing it found no memory). Without memory the
   stream ends after what is queued. */
void sortd__pipeline_fill(sortd__pipeline *p, sortd__job *j, const Sortd__Wire__Reply *r);
/* Appends request id's reply r, packed now (push, then fill). */
void sortd__pipeline_answer(sortd__pipeline *p, uint64_t id, const Sortd__Wire__Reply *r);
/* Makes *m request id's error reply, and logs the refusal. */
void sortd__pipeline_error(const sortd__pipeline *p, sortd__reply *m, uint64_t id, sortd_status s,
                           const char *why);
/* Appends an error reply to request id, and logs it. */
void sortd__pipeline_refuse(sortd__pipeline *p, uint64_t id, sortd_status s, const char *why);
/* Writes every reply at the head that is ready, in request order. */
void sortd__pipeline_flush(sortd__pipeline *p);
/* Every reply is written and none waits. */
bool sortd__pipeline_idle(const sortd__pipeline *p);
/* Writes nothing more; frees every job but those the engine thread holds (their completion
   frees them). In-flight writes still end through written. */
void sortd__pipeline_close(sortd__pipeline *p);

#endif
