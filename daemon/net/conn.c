/*
 * A client connection, the socket end of the data path: it accepts, reads frames (frame.c)
 * and hands what they bring to dispatch.c (request -> admission -> queue), while its pipeline
 * (pipeline.c) writes the replies in request order. What stays here is the socket: reads, the
 * decision to read or not, and the close.
 *
 * Lifecycle: accept -> reading (frames) -> [close_after_flush: replies go out, reads stop]
 * -> conn_close (queued sorts cancelled, reads stopped, uv_close) -> on_close -> freed once
 * the engine thread no longer holds any of its jobs. Nothing is freed inside its own read
 * callback: uv_close defers the free to the close callback.
 *
 * Backpressure: reads stop while the connection waits for in-flight memory, has max-pipeline
 * requests unanswered, or has more than max-write-queue reply bytes queued; buffers never grow
 * to absorb a fast writer or a slow reader. A reader that takes none of its replies for
 * write-timeout-ms is closed: they hold in-flight memory other connections may wait for.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "conn.h"
#include "dispatch.h"
#include "fdpass.h"
#include "log.h"
#include "server.h"

static void settle(sortd__conn *c);
static bool drained(sortd__conn *c);

/* ---- reading ---- */

/*
 * Small frames are read ahead: one read takes a whole request (header, message and payload),
 * or several, into ra, and they are parsed from there. A large part (a payload of
 * READ_AHEAD_BYTES or more) is read straight into its buffer, as is every part while fds wait
 * for their frame.
 *
 * fds: the kernel ends a read after the message that carried fds, so they belong to the frame
 * that holds the last byte of the read they came with (fd_mark). Frames before it in the
 * read-ahead leave them alone; once they are pending, reads stop at the end of each part, so
 * no later frame's fds can join them.
 */
#define READ_AHEAD_BYTES (64u << 10)

/*
 * fds one connection may have pending: a frame takes one at most (RegisterRegion), and one
 * more is a client's slip that the frame's end refuses with the connection kept (dispatch.c).
 * Past that the client is piling fds up in the daemon (a long frame sent a byte at a time, an
 * fd with each byte), and every connection's fds come from the daemon's one table.
 */
#define MAX_PENDING_FDS 2

bool sortd__conn_frame_fds(sortd__conn *c)
{
        return uv_pipe_pending_count(&c->pipe) > 0 && c->fd_mark < c->parsed;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
        sortd__conn *c = h->data;
        uint8_t *base;
        size_t len;

        sortd__frame_buffer(&c->fr, &base, &len);
        if (len && len < READ_AHEAD_BYTES && uv_pipe_pending_count(&c->pipe) == 0) {
                base = c->ra;
                len = READ_AHEAD_BYTES;
        } else if (len > 64u << 20) {
                /* One read at most 64 MiB: one client's transfer cannot hold the loop long. */
                len = 64u << 20;
        }
        *buf = (uv_buf_t){.base = (char *)base, .len = len};
}

/* n more bytes of the stream are where sortd__frame_buffer said. */
static void parse(sortd__conn *c, size_t n)
{
        if (sortd__frame_at_boundary(&c->fr))
                c->fr_started = c->last_byte;
        c->parsed += n;
        sortd__dispatch(c, sortd__frame_consumed(&c->fr, n));
        c->fds_known = uv_pipe_pending_count(&c->pipe); /* what a frame took or dropped is gone */
}

/* Whether c takes more of its stream now: its limits, memory, the drain, the reader's state. */
static bool takes_bytes(sortd__conn *c)
{
        const sortd__config *cfg = &c->srv->cfg;

        return !c->closing && !c->out.close_after_flush && !c->wait.bytes &&
               c->out.length < cfg->max_pipeline &&
               uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) <= cfg->max_write_queue &&
               !drained(c) && c->fr.state != SORTD__FRAME_AWAIT_SINK &&
               c->fr.state != SORTD__FRAME_FAILED;
}

/* Parses what the read-ahead holds, as far as c takes it now. */
static void consume(sortd__conn *c)
{
        c->consuming = true;
        while (c->ra_pos < c->ra_len && takes_bytes(c)) {
                uint8_t *base;
                size_t len;

                sortd__frame_buffer(&c->fr, &base, &len);
                if (len > c->ra_len - c->ra_pos)
                        len = c->ra_len - c->ra_pos;
                memcpy(base, c->ra + c->ra_pos, len);
                c->ra_pos += len;
                parse(c, len);
        }
        if (c->ra_pos == c->ra_len)
                c->ra_pos = c->ra_len = 0;
        c->consuming = false;
}

/* More fds came than c's frame can take: they are closed, and c is, as a protocol error. */
static bool too_many_fds(sortd__conn *c)
{
        int n = uv_pipe_pending_count(&c->pipe);

        if (n <= MAX_PENDING_FDS)
                return false;
        c->srv->stats.protocol_errors++;
        sortd__log(SORTD__LOG_WARNING,
                   "%s: %d fds came with one frame, which takes one at most: closing", c->name, n);
        sortd__fdpass_drop_all(&c->pipe);
        sortd__conn_close(c);
        return true;
}

/* Whether the client closed its socket, rather than only its sending side: a Unix stream
   socket reports POLLHUP once both directions are shut. */
static bool peer_gone(sortd__conn *c)
{
        struct pollfd p = {.events = POLLOUT};
        uv_os_fd_t fd;

        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0)
                return false;
        p.fd = fd;
        return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

static void on_eof(sortd__conn *c, ssize_t err)
{
        bool between_frames = sortd__frame_at_boundary(&c->fr) && !c->reading;

        if (err == UV_EOF && between_frames && !peer_gone(c)) {
                /* A half-close: answer what was asked, then close. */
                c->out.close_after_flush = true;
                return;
        }
        if (err == UV_EOF && between_frames) {
                /* Nobody will read the replies: what still waits for the engine is cancelled. */
                sortd__log(SORTD__LOG_DEBUG, "%s: closed by its client", c->name);
        } else if (err == UV_EOF && c->reading) {
                /* A whole request whose payload stopped: the sort is cancelled (close). */
                sortd__log(SORTD__LOG_INFO, "%s: connection closed in a sort's payload", c->name);
        } else if (err == UV_EOF) {
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
                if (nread != UV_ENOBUFS) /* ENOBUFS: no sink yet, reads should have stopped */
                        on_eof(c, nread);
                settle(c);
                return;
        }
        if (nread == 0)
                return;
        c->last_byte = uv_hrtime();
        c->srv->stats.bytes_in += (uint64_t)nread;
        if (too_many_fds(c))
                return;
        if (uv_pipe_pending_count(&c->pipe) > c->fds_known)
                c->fd_mark = c->parsed + (uint64_t)nread - 1;
        /* One of its requests on the loop thread at most: the rest of a pipelining client's
           read goes through the fair queue, and other clients' reads wait for one sort only. */
        c->loop_sort_ok = true;
        if (buf->base == (char *)c->ra) {
                c->ra_pos = 0;
                c->ra_len = (size_t)nread;
                consume(c);
        } else {
                parse(c, (size_t)nread);
        }
        c->loop_sort_ok = false;
        settle(c);
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

        if (!c->srv->draining || !sortd__frame_at_boundary(&c->fr) || c->reading ||
            c->ra_pos < c->ra_len)
                return false;
        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 && ioctl(fd, FIONREAD, &unread) < 0)
                unread = 0;
        return unread == 0;
}

static void maybe_finish(sortd__conn *c)
{
        if (c->closing || !sortd__pipeline_idle(&c->out))
                return;
        if (c->out.close_after_flush || drained(c))
                sortd__conn_close(c);
}

/* Reads on while c takes bytes and the read-ahead has none left. */
static void update_reading(sortd__conn *c)
{
        bool want = takes_bytes(c) && c->ra_pos == c->ra_len;
        int r = 0;

        if (want && !c->reading_on) {
                r = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
                c->last_byte = uv_hrtime(); /* the timeouts count from now, not from the stop */
        } else if (!want && c->reading_on)
                uv_read_stop((uv_stream_t *)&c->pipe);
        if (r < 0) {
                sortd__log(SORTD__LOG_WARNING, "%s: cannot read: %s", c->name, uv_strerror(r));
                sortd__conn_close(c);
                return;
        }
        c->reading_on = want;
}

/* ---- what the timeouts measure ---- */

/* Nothing in progress nor unanswered: no frame begun or read ahead, no job with the engine,
   every reply written. */
static bool conn_idle(const sortd__conn *c)
{
        return sortd__frame_at_boundary(&c->fr) && !c->reading && c->ra_pos == c->ra_len &&
               c->in_engine == 0 && sortd__pipeline_idle(&c->out);
}

/* idle-timeout-ms counts from when c became idle, not from its last byte: a request that took
   longer than the timeout must not cost the client the next one it sends. */
static void note_idle(sortd__conn *c)
{
        bool idle = conn_idle(c);

        if (idle && !c->idle)
                c->idle_since = uv_hrtime();
        c->idle = idle;
}

/*
 * write-timeout-ms counts from when c's queued reply bytes last moved (or began to wait).
 * libuv's write queue grows only in sortd__pipeline_flush (in settle) and shrinks only as the
 * socket takes bytes, so looking before and after each flush, and at each check, sees every
 * move: a queue smaller than it was last seen.
 */
static void note_writes(sortd__conn *c)
{
        size_t q = uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);

        if (q && (q < c->wq_seen || c->wq_seen == 0))
                c->write_since = uv_hrtime();
        c->wq_seen = q;
}

/*
 * After anything that may let c parse, write, read or close: what the read-ahead holds is
 * parsed as far as c takes it, ready replies go out (a reply the socket takes whole may let
 * c take more), then reads start or stop, and a finished connection closes.
 */
static void settle(sortd__conn *c)
{
        if (c->closing)
                return;
        note_writes(c);
        do {
                if (c->ra_pos < c->ra_len && !c->consuming && takes_bytes(c))
                        consume(c);
                sortd__pipeline_flush(&c->out);
        } while (c->ra_pos < c->ra_len && !c->consuming && takes_bytes(c));
        if (c->closing)
                return;
        note_writes(c);
        update_reading(c);
        note_idle(c);
        maybe_finish(c);
}

void sortd__conn_update(sortd__conn *c)
{
        settle(c);
}

/* ---- resuming: the pipeline's and the admission's callbacks ---- */

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
        settle(c);
}

void sortd__conn_admitted(sortd__admission_waiter *w)
{
        sortd__conn *c = SORTD__CONTAINER_OF(w, sortd__conn, wait);

        sortd__dispatch_admitted(c);
        settle(c);
}

/* ---- completion and close ---- */

/* Every region was closed on the engine thread by now (sortd__dispatch_closing). */
static void conn_free(sortd__conn *c)
{
        sortd__regions_destroy(&c->regions);
        sortd__frame_free(&c->fr);
        free(c->ra);
        free(c);
}

/* A sort came back: its regions are free again, and the counters learn how it went. */
static void sort_done(sortd__server *srv, sortd__conn *c, sortd__job *j)
{
        if (j->keys_rg)
                sortd__region_release(j->keys_rg);
        if (j->vals_rg)
                sortd__region_release(j->vals_rg);
        /* Each sort ends counted once: a client that left before its reply was sent cancelled
           it, however the engine did. */
        if (c->closing) {
                srv->stats.cancelled++;
        } else if (j->work.status == SORTD_OK) {
                srv->stats.sorts_ok++;
                srv->stats.keys_sorted += j->work.n;
        } else {
                srv->stats.sorts_failed++;
        }
        srv->stats.cpu_path_sorts += j->cpu_path;
        if (j->work.batch_size) {
                srv->stats.batched++;
                srv->stats.batches += j->work.batch_first;
        }
}

void sortd__conn_sorted_here(sortd__conn *c, sortd__job *j)
{
        c->srv->stats.loop_sorts++;
        sort_done(c->srv, c, j);
        j->state = SORTD__JOB_DONE;
}

void sortd__conn_complete(sortd__job *j, void *arg)
{
        sortd__conn *c = j->owner;
        sortd__server *srv = arg;
        bool sort = sortd__job_is_sort(j);

        c->in_engine--;
        if (sort)
                sort_done(srv, c, j);
        if (c->closing) {
                sortd__job_free(j);
                if (c->closed && c->in_engine == 0)
                        conn_free(c);
                return;
        }
        if (!sort)
                sortd__dispatch_region_done(c, j);
        j->state = SORTD__JOB_DONE;
        sortd__conn_update(c);
}

static void on_close(uv_handle_t *h)
{
        sortd__conn *c = h->data;
        sortd__server *srv = c->srv;
        sortd__conn_gone_fn gone;

        c->closed = true;
        if (c->prev)
                c->prev->next = c->next;
        else
                srv->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        srv->stats.connections--;
        gone = c->gone; /* c may be freed next */
        if (c->in_engine == 0)
                conn_free(c);
        gone(srv);
}

/* Takes c's jobs that wait in q (flow f) out of it: they are cancelled, never sorted. */
static void cancel_queued(sortd__conn *c, sortd__queue *q, sortd__queue_flow *f)
{
        for (sortd__job *j = sortd__queue_cancel(q, f); j; j = j->qnext) {
                j->cancelled = true;
                c->in_engine--;
                if (sortd__job_is_sort(j))
                        c->srv->stats.cancelled++;
        }
}

void sortd__conn_close(sortd__conn *c)
{
        sortd__server *srv = c->srv;

        if (c->closing)
                return;
        c->closing = true;
        sortd__log(SORTD__LOG_DEBUG, "%s: closing", c->name);
        sortd__admission_leave(&srv->adm, &c->wait);
        if (c->reading_on)
                uv_read_stop((uv_stream_t *)&c->pipe);
        c->reading_on = false;
        cancel_queued(c, &srv->queue, &c->flow);
        cancel_queued(c, &srv->cpu_queue, &c->cpu_flow);
        sortd__dispatch_closing(c);
        sortd__pipeline_close(&c->out);
        if (c->reading)
                srv->stats.cancelled++; /* its payload never came whole */
        c->reading = NULL;
        uv_close((uv_handle_t *)&c->pipe, on_close);
}

/* ---- timeouts ---- */

/*
 * The reaper reads the clock once for every connection, and closing one of them can wake
 * another in the same pass (the memory it frees admits a waiter, whose reads start and stamp
 * its times after now): a time after now is no time gone by, not a wrap to 584 years.
 */
static uint64_t ms_since(uint64_t now, uint64_t t)
{
        return now > t ? (now - t) / 1000000 : 0;
}

/* Whether c has run past one of its timeouts at now; why says which. */
static bool timed_out(sortd__conn *c, uint64_t now, char *why, size_t len)
{
        const sortd__config *cfg = &c->srv->cfg;
        bool mid_frame = !sortd__frame_at_boundary(&c->fr) || c->reading;
        uint64_t ms;

        note_writes(c);
        ms = ms_since(now, c->write_since);
        if (c->wq_seen && cfg->write_timeout_ms && ms >= cfg->write_timeout_ms) {
                snprintf(why, len,
                         "none of its %zu queued reply bytes taken for %llu ms (write-timeout-ms)",
                         c->wq_seen, (unsigned long long)ms);
                return true;
        }
        /* Reads the daemon stopped itself (limits, memory) are no stall of the client's. */
        if (!c->reading_on)
                return false;
        ms = ms_since(now, c->last_byte);
        if (mid_frame && cfg->frame_timeout_ms && ms >= cfg->frame_timeout_ms) {
                snprintf(why, len, "no byte of its request for %llu ms (frame-timeout-ms)",
                         (unsigned long long)ms);
                return true;
        }
        /* A request answered at once (a ping) never shows c busy to note_idle: its last byte
           starts the count again. */
        ms = ms_since(now, c->idle_since > c->last_byte ? c->idle_since : c->last_byte);
        if (c->idle && conn_idle(c) && cfg->idle_timeout_ms && ms >= cfg->idle_timeout_ms) {
                snprintf(why, len, "idle for %llu ms (idle-timeout-ms)", (unsigned long long)ms);
                return true;
        }
        return false;
}

void sortd__conn_check_timeouts(sortd__conn *c, uint64_t now)
{
        char why[128];

        if (c->closing || !timed_out(c, now, why, sizeof(why)))
                return;
        sortd__log(SORTD__LOG_INFO, "%s: %s: closing", c->name, why);
        c->srv->stats.timed_out++;
        sortd__conn_close(c);
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

/* A connection the daemon does not serve: it is told why, then closed. */
static void refuse(sortd__conn *c, sortd_status s, const char *why)
{
        c->srv->stats.connections_refused++;
        sortd__log(SORTD__LOG_NOTICE, "%s: refused: %s", c->name, why);
        sortd__pipeline_refuse(&c->out, 0, s, why);
        c->out.close_after_flush = true;
}

/* Who is connecting, and whether there is room for them. */
static void admit_peer(sortd__conn *c)
{
        sortd__server *srv = c->srv;
        char why[256];
        uv_os_fd_t fd;

        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
            !sortd__access_allows(&srv->cfg.access, fd, why, sizeof(why))) {
                refuse(c, SORTD_E_DENIED, why);
        } else if (srv->stats.connections > srv->cfg.max_connections) {
                snprintf(why, sizeof(why), "too many connections (max-connections = %llu)",
                         (unsigned long long)srv->cfg.max_connections);
                refuse(c, SORTD_E_BUSY, why);
        }
}

int sortd__conn_accept(sortd__server *srv, uv_stream_t *server, sortd__conn_gone_fn gone)
{
        sortd__conn *c = calloc(1, sizeof(*c));
        int r;

        if (!c || sortd__frame_init(&c->fr, SORTD__WIRE_MAX_MESSAGE) < 0 ||
            !(c->ra = malloc(READ_AHEAD_BYTES))) {
                if (c) {
                        sortd__frame_free(&c->fr);
                        free(c->ra);
                }
                free(c);
                return -ENOMEM;
        }
        c->srv = srv;
        c->gone = gone;
        uv_pipe_init(srv->loop, &c->pipe, 1); /* ipc: regions' fds come with SCM_RIGHTS */
        sortd__regions_init(&c->regions, &srv->regions);
        c->pipe.data = c;
        sortd__pipeline_init(&c->out, (uv_stream_t *)&c->pipe, c->name, &srv->adm, &srv->stats,
                             on_written);
        r = uv_accept(server, (uv_stream_t *)&c->pipe);
        c->next = srv->conns;
        if (srv->conns)
                srv->conns->prev = c;
        srv->conns = c;
        srv->stats.connections++;
        if (r < 0) {
                sortd__log(SORTD__LOG_WARNING, "accept failed: %s", uv_strerror(r));
                sortd__conn_close(c);
                return 0;
        }
        srv->stats.connections_total++;
        peer_name(c);
        /* Replies leave through the daemon's send buffer: as in libsortd, a large one moves a
           big result in fewer wake-ups (the kernel caps it at net.core.wmem_max). */
        uv_send_buffer_size((uv_handle_t *)&c->pipe, &(int){4 << 20});
        sortd__log(SORTD__LOG_INFO, "%s: connected", c->name);
        admit_peer(c);
        sortd__conn_update(c);
        return 0;
}
