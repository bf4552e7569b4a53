/* The in-order write pipeline (see pipeline.h). */
#include <string.h>

#include "log.h"
#include "pipeline.h"
#include "reply.h"

void sortd__pipeline_init(sortd__pipeline *p, uv_stream_t *stream, const char *name,
                          sortd__admission *adm, sortd__stats *stats,
                          sortd__pipeline_written_fn written)
{
        *p = (sortd__pipeline){
                .stream = stream,
                .name = name,
                .adm = adm,
                .stats = stats,
                .written = written,
        };
}

sortd__job *sortd__pipeline_push(sortd__pipeline *p, uint64_t id)
{
        sortd__job *j = sortd__job_new(id);

        if (!j)
                return NULL;
        if (p->tail)
                p->tail->next = j;
        else
                p->head = j;
        p->tail = j;
        p->length++;
        return j;
}

void sortd__pipeline_fill(sortd__pipeline *p, sortd__job *j, const Sortd__Wire__Reply *r)
{
        if (!j || sortd__reply_pack(j, r, 0) < 0) {
                sortd__log(SORTD__LOG_ERR, "%s: out of memory for a reply", p->name);
                p->close_after_flush = true;
                if (j)
                        j->out_len = 0; /* written as nothing */
        }
}

void sortd__pipeline_answer(sortd__pipeline *p, uint64_t id, const Sortd__Wire__Reply *r)
{
        sortd__pipeline_fill(p, sortd__pipeline_push(p, id), r);
}

void sortd__pipeline_error(const sortd__pipeline *p, sortd__reply *m, uint64_t id, sortd_status s,
                           const char *why)
{
        sortd__log(SORTD__LOG_INFO, "%s: request %llu: %s: %s", p->name, (unsigned long long)id,
                   sortd_strerror(s), why);
        sortd__reply_error(m, id, s, why);
}

void sortd__pipeline_refuse(sortd__pipeline *p, uint64_t id, sortd_status s, const char *why)
{
        sortd__reply m;

        sortd__pipeline_error(p, &m, id, s, why);
        sortd__pipeline_answer(p, id, &m.r);
}

/* The reply's bytes written so far (status 0) or not (status < 0): counted, job freed. */
static void reply_gone(sortd__pipeline *p, sortd__job *j, int status)
{
        uv_buf_t parts[2];
        unsigned n;

        if (status == 0)
                p->stats->bytes_out += j->out_len + sortd__job_reply_payload(j, parts, &n);
        sortd__job_free(j);
}

static void on_write(uv_write_t *req, int status)
{
        sortd__pipeline *p = req->data;
        sortd__job *j = SORTD__CONTAINER_OF(req, sortd__job, wreq);

        p->writes--;
        reply_gone(p, j, status);
        p->written(p, status);
}

/*
 * Writes what the socket takes now (uv_try_write: a small reply leaves in this call, with no
 * poller change) and drops it from bufs; true if nothing is left. Any error is left to uv_write
 * to report through on_write, where every failed write goes.
 */
static bool write_now(sortd__pipeline *p, uv_buf_t *bufs, unsigned *nbufs)
{
        int r = uv_try_write(p->stream, bufs, *nbufs);
        size_t done = r > 0 ? (size_t)r : 0;
        unsigned k = 0;

        while (k < *nbufs && done >= bufs[k].len)
                done -= bufs[k++].len;
        if (k == *nbufs)
                return true;
        bufs[k].base += done;
        bufs[k].len -= done;
        memmove(bufs, bufs + k, (*nbufs - k) * sizeof(*bufs));
        *nbufs -= k;
        return false;
}

/* Hands j's reply to the socket: written whole now (j freed, nothing called back), or queued
   (on_write calls back). */
static void write_job(sortd__pipeline *p, sortd__job *j)
{
        uv_buf_t bufs[3];
        unsigned nbufs = 0, n;
        int r;

        if (sortd__job_is_sort(j) && sortd__reply_pack_sort(j, uv_hrtime()) < 0)
                j->out_len = 0;
        if (j->out_len == 0) { /* no memory for the reply: the stream would lose sync */
                sortd__job_free(j);
                p->close_after_flush = true;
                return;
        }
        bufs[nbufs++] = (uv_buf_t){.base = (char *)j->out, .len = j->out_len};
        /* An inline sort's result goes back from its buffer; a region's stays put. */
        sortd__job_reply_payload(j, bufs + nbufs, &n);
        nbufs += n;
        if (write_now(p, bufs, &nbufs)) {
                reply_gone(p, j, 0);
                return;
        }
        j->wreq.data = p;
        r = uv_write(&j->wreq, p->stream, bufs, nbufs, on_write);
        if (r < 0) {
                sortd__job_free(j);
                p->written(p, r);
                return;
        }
        /* The first reply left waiting for the client: if its connection is in line for
           memory, it no longer holds the line (admission.c). */
        if (++p->writes == 1)
                sortd__admission_replies_wait(p->adm);
}

void sortd__pipeline_flush(sortd__pipeline *p)
{
        while (!p->closed && p->head && p->head->state == SORTD__JOB_DONE) {
                sortd__job *j = p->head;

                p->head = j->next;
                if (!p->head)
                        p->tail = NULL;
                p->length--;
                j->next = NULL;
                write_job(p, j);
        }
}

bool sortd__pipeline_idle(const sortd__pipeline *p)
{
        return !p->head && p->writes == 0;
}

void sortd__pipeline_close(sortd__pipeline *p)
{
        sortd__job *j, *next;

        p->closed = true;
        /* The engine thread may hold one job right now: its completion frees it. */
        for (j = p->head; j; j = next) {
                next = j->next;
                if (j->state == SORTD__JOB_QUEUED && !j->cancelled)
                        continue;
                sortd__job_free(j);
        }
        p->head = p->tail = NULL;
        p->length = 0;
}
