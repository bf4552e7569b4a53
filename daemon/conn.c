/*
 * A client connection, the socket end of the data path: it reads frames (frame.c), has each
 * request decoded and checked (request.c), admits sorts against the memory limits
 * (admission.c), queues them for the engine (queue.c) and leaves the replies to its pipeline
 * (pipeline.c), which writes them in request order.
 *
 * Lifecycle: accept -> reading (frames) -> [close_after_flush: replies go out, reads stop]
 * -> conn_close (queued sorts cancelled, reads stopped, uv_close) -> on_close -> freed once
 * the engine thread no longer holds any of its jobs. Nothing is freed inside its own read
 * callback: uv_close defers the free to the close callback.
 *
 * Backpressure: reads stop while the connection waits for in-flight memory, has max-pipeline
 * requests unanswered, or has more than max-write-queue reply bytes queued; buffers never grow
 * to absorb a fast writer or a slow reader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "log.h"
#include "reply.h"
#include "request.h"
#include "server.h"

static void update_reading(sortd__conn *c);

/* ---- requests ---- */

/* A stream we can no longer parse: say why, answer what came before, then close. */
static void fatal(sortd__conn *c, sortd_status s, const char *why)
{
        c->srv->stats.protocol_errors++;
        sortd__log(SORTD__LOG_WARNING, "%s: closing: %s", c->name, why);
        sortd__pipe_refuse(&c->out, 0, s, why);
        c->out.close_after_flush = true;
}

/* A refused request whose frame is still in sync: drop its payload, or close if it is huge. */
static void skip_payload(sortd__conn *c)
{
        uint64_t len = c->fr.h.payload_len;

        if (len == 0)
                return;
        if (len <= c->srv->cfg.max_drain_bytes) {
                sortd__fr_discard(&c->fr);
                return;
        }
        sortd__log(SORTD__LOG_WARNING, "%s: closing rather than draining a %llu-byte payload",
                   c->name, (unsigned long long)len);
        c->out.close_after_flush = true;
}

/*
 * The reading sort has its memory: its payload goes to its buffer, or is dropped when there
 * was no buffer to be had (the sort is then answered with SORTD_E_NOMEM).
 */
static void take_payload(sortd__conn *c)
{
        sortd__job *j = c->reading;
        bool moves_vals = j->desc.payload == SORTD_PAYLOAD_VALUES32 ||
                          j->desc.payload == SORTD_PAYLOAD_VALUES64;

        if (!j->buf) {
                c->reading = NULL;
                sortd__fr_discard(&c->fr);
                return;
        }
        sortd__fr_sink(&c->fr, j->buf, (size_t)j->sizes.keys_bytes,
                       moves_vals ? j->buf + j->vals_off : NULL,
                       moves_vals ? (size_t)j->sizes.vals_bytes : 0);
}

void sortd__conn_admitted(sortd__waiter *w)
{
        sortd__conn *c = SORTD__CONTAINER_OF(w, sortd__conn, wait);

        take_payload(c);
        update_reading(c);
}

static void start_sort(sortd__conn *c, const sortd__request *rq)
{
        sortd__job *j = sortd__pipe_push(&c->out, rq->id);

        if (!j) {
                fatal(c, SORTD_E_NOMEM, "out of memory");
                return;
        }
        j->conn = c;
        j->is_sort = true;
        j->desc = rq->desc;
        j->n = rq->n;
        j->sizes = rq->sizes;
        j->t_frame = c->fr_started;
        if (rq->n == 0)
                return; /* done: nothing to read or sort */
        j->state = SORTD__JOB_READING;
        c->reading = j;
        if (sortd__adm_admit(&c->srv->adm, &c->wait, j))
                take_payload(c);
}

static void answer(sortd__conn *c, const sortd__request *rq)
{
        sortd__reply m;

        switch (rq->kind) {
        case SORTD__REQ_HELLO:
                if (rq->client_name[0])
                        sortd__log(SORTD__LOG_DEBUG, "%s: hello from '%s'", c->name,
                                   rq->client_name);
                sortd__reply_hello(&m, rq->id, c->srv);
                break;
        case SORTD__REQ_STATUS:
                sortd__reply_status(&m, rq->id, c->srv);
                break;
        case SORTD__REQ_PING:
                sortd__reply_ping(&m, rq->id, rq->nonce);
                break;
        case SORTD__REQ_SORT:
                start_sort(c, rq);
                return;
        case SORTD__REQ_NONE:
                return;
        }
        sortd__pipe_answer(&c->out, rq->id, &m.r);
}

static void on_message(sortd__conn *c)
{
        sortd__server *srv = c->srv;
        sortd__request_limits lim = {
                .capacity = sortd_engine_capacity(srv->engine),
                .max_request_bytes = srv->cfg.max_request_bytes,
        };
        sortd__request rq;

        sortd__request_decode(c->fr.msg, c->fr.h.message_len, c->fr.h.payload_len, &lim,
                              &srv->stats, &rq);
        answer(c, &rq);
        for (unsigned i = 0; i < rq.refusals; i++)
                sortd__pipe_refuse(&c->out, rq.id, rq.refusal[i].status, rq.refusal[i].why);
        if (rq.kind != SORTD__REQ_SORT)
                skip_payload(c);
}

static void on_payload(sortd__conn *c)
{
        sortd__job *j = c->reading;

        c->reading = NULL;
        if (!j)
                return;
        j->t_read = uv_hrtime();
        j->state = SORTD__JOB_QUEUED;
        c->in_engine++;
        sortd__fq_push(&c->srv->queue, &c->flow, j);
}

/* ---- read flow control ---- */

/*
 * Draining (SIGTERM) and between frames with nothing more already received: this connection
 * takes no new request. What a client sent before it learnt of the shutdown is still read
 * and answered; what arrives later is not (the close tells it).
 */
static bool drained(sortd__conn *c)
{
        uv_os_fd_t fd;
        int unread = 0;

        if (!c->srv->draining || !sortd__fr_at_boundary(&c->fr) || c->reading)
                return false;
        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 && ioctl(fd, FIONREAD, &unread) < 0)
                unread = 0;
        return unread == 0;
}

static void maybe_finish(sortd__conn *c)
{
        if (c->closing || !sortd__pipe_idle(&c->out))
                return;
        if (c->out.close_after_flush || drained(c))
                sortd__conn_close(c);
}

/* The pipeline's callback: a reply was written, or failed to be. */
static void on_written(sortd__pipeline *p, int status)
{
        sortd__conn *c = SORTD__CONTAINER_OF(p, sortd__conn, out);

        if (status < 0) {
                if (!c->closing) {
                        sortd__log(SORTD__LOG_INFO, "%s: write failed: %s", c->name,
                                   uv_strerror(status));
                        sortd__conn_close(c);
                }
                return;
        }
        update_reading(c);
        maybe_finish(c);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
        sortd__conn *c = h->data;
        uint8_t *base;
        size_t len;

        sortd__fr_buffer(&c->fr, &base, &len);
        /* One read at most 64 MiB: one client's transfer cannot hold the loop for long. */
        if (len > 64u << 20)
                len = 64u << 20;
        *buf = (uv_buf_t){.base = (char *)base, .len = len};
}

static void on_eof(sortd__conn *c, ssize_t err)
{
        if (err == UV_EOF && sortd__fr_at_boundary(&c->fr) && !c->reading) {
                /* A half-close: answer what was asked, then close. */
                c->out.close_after_flush = true;
                return;
        }
        if (err == UV_EOF) {
                c->srv->stats.protocol_errors++;
                sortd__log(SORTD__LOG_INFO, "%s: connection closed in the middle of a frame",
                           c->name);
        } else {
                sortd__log(SORTD__LOG_INFO, "%s: read failed: %s", c->name, uv_strerror((int)err));
        }
        sortd__conn_close(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
        sortd__conn *c = s->data;

        if (nread < 0) {
                if (nread == UV_ENOBUFS) { /* no sink yet: reads should have stopped */
                        update_reading(c);
                        return;
                }
                on_eof(c, nread);
                if (!c->closing) {
                        update_reading(c);
                        sortd__pipe_flush(&c->out);
                        maybe_finish(c);
                }
                return;
        }
        if (nread == 0)
                return;
        if (sortd__fr_at_boundary(&c->fr))
                c->fr_started = uv_hrtime();
        c->srv->stats.bytes_in += (uint64_t)nread;
        switch (sortd__fr_consumed(&c->fr, (size_t)nread)) {
        case SORTD__FR_MORE:
                break;
        case SORTD__FR_MESSAGE:
                on_message(c);
                break;
        case SORTD__FR_PAYLOAD:
                on_payload(c);
                break;
        case SORTD__FR_ERROR:
                fatal(c, c->fr.status, c->fr.why);
                break;
        }
        sortd__pipe_flush(&c->out);
        update_reading(c);
        maybe_finish(c);
}

static void update_reading(sortd__conn *c)
{
        const sortd__config *cfg = &c->srv->cfg;
        bool want;
        int r = 0;

        if (c->closing)
                return;
        want = !c->out.close_after_flush && !c->wait.job && c->out.length < cfg->max_pipeline &&
               uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) <= cfg->max_write_queue &&
               !drained(c) && c->fr.state != SORTD__FR_AWAIT_SINK &&
               c->fr.state != SORTD__FR_FAILED;
        if (want && !c->reading_on)
                r = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
        else if (!want && c->reading_on)
                uv_read_stop((uv_stream_t *)&c->pipe);
        if (r < 0) {
                sortd__log(SORTD__LOG_WARNING, "%s: cannot read: %s", c->name, uv_strerror(r));
                sortd__conn_close(c);
                return;
        }
        c->reading_on = want;
}

void sortd__conn_update(sortd__conn *c)
{
        update_reading(c);
        sortd__pipe_flush(&c->out);
        maybe_finish(c);
}

/* ---- completion and close ---- */

static void conn_free(sortd__conn *c)
{
        sortd__fr_free(&c->fr);
        free(c);
}

void sortd__conn_complete(sortd__job *j, void *arg)
{
        sortd__conn *c = j->conn;
        sortd__server *srv = arg;

        c->in_engine--;
        if (j->status == SORTD_OK) {
                srv->stats.sorts_ok++;
                srv->stats.keys_sorted += j->n;
        } else {
                srv->stats.sorts_failed++;
        }
        if (c->closing) {
                srv->stats.cancelled++;
                sortd__adm_release(&srv->adm, j);
                if (c->closed && c->in_engine == 0)
                        conn_free(c);
                return;
        }
        j->state = SORTD__JOB_DONE;
        sortd__conn_update(c);
}

static void on_close(uv_handle_t *h)
{
        sortd__conn *c = h->data;
        sortd__server *srv = c->srv;

        c->closed = true;
        if (c->prev)
                c->prev->next = c->next;
        else
                srv->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        srv->stats.connections--;
        if (c->in_engine == 0)
                conn_free(c);
        sortd__server_conn_gone(srv);
}

void sortd__conn_close(sortd__conn *c)
{
        sortd__server *srv = c->srv;
        sortd__job *j, *cancelled;

        if (c->closing)
                return;
        c->closing = true;
        sortd__log(SORTD__LOG_DEBUG, "%s: closing", c->name);
        sortd__adm_leave(&srv->adm, &c->wait);
        if (c->reading_on)
                uv_read_stop((uv_stream_t *)&c->pipe);
        c->reading_on = false;
        cancelled = sortd__fq_cancel(&srv->queue, &c->flow);
        for (j = cancelled; j; j = j->qnext) {
                j->cancelled = true;
                c->in_engine--;
                srv->stats.cancelled++;
        }
        sortd__pipe_close(&c->out);
        c->reading = NULL;
        uv_close((uv_handle_t *)&c->pipe, on_close);
}

/* ---- accept ---- */

static void peer_name(sortd__conn *c)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        uv_os_fd_t fd;

        snprintf(c->name, sizeof(c->name), "client");
        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
                snprintf(c->name, sizeof(c->name), "client pid %d uid %u gid %u", (int)cred.pid,
                         (unsigned)cred.uid, (unsigned)cred.gid);
}

/* One connection too many: it is told why, then closed. */
static void refuse_busy(sortd__conn *c)
{
        char why[96];

        c->srv->stats.rejected++;
        snprintf(why, sizeof(why), "too many connections (max-connections = %llu)",
                 (unsigned long long)c->srv->cfg.max_connections);
        sortd__pipe_refuse(&c->out, 0, SORTD_E_BUSY, why);
        c->out.close_after_flush = true;
}

void sortd__conn_accept(sortd__server *srv)
{
        sortd__conn *c = calloc(1, sizeof(*c));
        int r;

        if (!c || sortd__fr_init(&c->fr, SORTD__WIRE_MAX_MESSAGE) < 0) {
                sortd__log(SORTD__LOG_ERR, "out of memory accepting a connection");
                if (c)
                        sortd__fr_free(&c->fr);
                free(c);
                return;
        }
        c->srv = srv;
        uv_pipe_init(srv->loop, &c->pipe, 0);
        c->pipe.data = c;
        sortd__pipe_init(&c->out, (uv_stream_t *)&c->pipe, c->name, &srv->adm, &srv->stats,
                         on_written);
        r = uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->pipe);
        c->next = srv->conns;
        if (srv->conns)
                srv->conns->prev = c;
        srv->conns = c;
        srv->stats.connections++;
        if (r < 0) {
                sortd__log(SORTD__LOG_WARNING, "accept failed: %s", uv_strerror(r));
                sortd__conn_close(c);
                return;
        }
        srv->stats.connections_total++;
        peer_name(c);
        /* Replies leave through the daemon's send buffer: as in libsortd, a large one moves a
           big result in fewer wake-ups (the kernel caps it at net.core.wmem_max). */
        uv_send_buffer_size((uv_handle_t *)&c->pipe, &(int){4 << 20});
        sortd__log(SORTD__LOG_INFO, "%s: connected", c->name);
        if (srv->stats.connections > srv->cfg.max_connections) {
                srv->stats.rejected++;
                refuse_busy(c);
        }
        sortd__conn_update(c);
}
