/*
 * A client connection, the socket end of the data path: it accepts, reads frames (frame.c),
 * has dispatch (request/dispatch.c) decide what each one becomes, and does it: a sort's bytes
 * charged (admission), its payload read into its buffer, its job handed to the engines. Its
 * pipeline writes the replies in request order.
 *
 * Lifecycle (sortd__conn_state): OPEN (reading; with close_after_flush, only answering) ->
 * CLOSING (queued jobs cancelled, reads stopped, uv_close) -> CLOSED (handle closed, owner
 * told) -> freed once the engines hold none of its jobs. Nothing is freed inside its own read
 * callback: uv_close defers the free to the close callback.
 *
 * Backpressure: reads stop while the connection waits for in-flight memory, has max-pipeline
 * requests unanswered, or has more than max-write-queue reply bytes queued; buffers never grow
 * to absorb a fast writer or a slow reader. A reader that takes none of its replies for
 * write-timeout-ms is closed: they hold in-flight memory other connections may wait for.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "conn.h"
#include "fdpass.h"
#include "intake.h"
#include "log.h"

static void settle(sortd__conn *c);
static bool drained(sortd__conn *c);

static bool has(const sortd__conn *c, unsigned flag)
{
        return (c->flags & flag) != 0;
}

static void set(sortd__conn *c, unsigned flag, bool on)
{
        assert(!on || c->state == SORTD__CONN_OPEN);
        c->flags = on ? c->flags | flag : c->flags & ~flag;
}

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
 * more is a client's slip that the frame's end refuses with the connection kept. Past that the
 * client is piling fds up in the daemon (a long frame sent a byte at a time, an fd with each
 * byte), and every connection's fds come from the daemon's one table.
 */
#define MAX_PENDING_FDS 2

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
        assert(c->state == SORTD__CONN_OPEN);
        if (sortd__frame_at_boundary(&c->fr))
                c->fr_started = c->clock.last_byte;
        c->parsed += n;
        sortd__intake_frame_event(c, sortd__frame_consumed(&c->fr, n));
        c->fds_known = uv_pipe_pending_count(&c->pipe); /* what a frame took or dropped is gone */
}

/*
 * Whether c takes more of its stream now: its limits, memory, the drain, the reader's state.
 * The sort whose payload is arriving is in the pipeline already, but it is the request being
 * read, not one more: counted, it would stop its own payload at max-pipeline 1.
 */
static bool takes_bytes(sortd__conn *c)
{
        const sortd__conn_limits *lim = c->ctx->limits;

        return c->state == SORTD__CONN_OPEN && !c->out.close_after_flush && !c->wait.bytes &&
               c->out.length - (c->reading != NULL) < lim->max_pipeline &&
               uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) <= lim->max_write_queue &&
               !drained(c) && c->fr.state != SORTD__FRAME_AWAIT_SINK &&
               c->fr.state != SORTD__FRAME_FAILED;
}

/* Parses what the read-ahead holds, as far as c takes it now. */
static void consume(sortd__conn *c)
{
        set(c, SORTD__CONN_CONSUMING, true);
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
        c->flags &= ~SORTD__CONN_CONSUMING;
}

/* More fds came than c's frame can take: they are closed, and c is, as a protocol error. */
static bool too_many_fds(sortd__conn *c)
{
        int n = uv_pipe_pending_count(&c->pipe);

        if (n <= MAX_PENDING_FDS)
                return false;
        c->ctx->stats->protocol_errors++;
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
                c->ctx->stats->protocol_errors++;
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

        assert(c->state == SORTD__CONN_OPEN && has(c, SORTD__CONN_READING));
        if (nread < 0) {
                if (nread != UV_ENOBUFS) /* ENOBUFS: no sink yet, reads should have stopped */
                        on_eof(c, nread);
                settle(c);
                return;
        }
        if (nread == 0)
                return;
        c->clock.last_byte = uv_hrtime();
        c->ctx->stats->bytes_in += (uint64_t)nread;
        if (too_many_fds(c))
                return;
        if (uv_pipe_pending_count(&c->pipe) > c->fds_known)
                c->fd_mark = c->parsed + (uint64_t)nread - 1;
        /* One of its requests on the loop thread at most: the rest of a pipelining client's
           read goes through the fair queue, and other clients' reads wait for one sort only. */
        set(c, SORTD__CONN_LOOP_SORT, true);
        if (buf->base == (char *)c->ra) {
                c->ra_pos = 0;
                c->ra_len = (size_t)nread;
                consume(c);
        } else {
                parse(c, (size_t)nread);
        }
        c->flags &= ~SORTD__CONN_LOOP_SORT;
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

        if (!*c->ctx->draining || !sortd__frame_at_boundary(&c->fr) || c->reading ||
            c->ra_pos < c->ra_len)
                return false;
        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 && ioctl(fd, FIONREAD, &unread) < 0)
                unread = 0;
        return unread == 0;
}

static void maybe_finish(sortd__conn *c)
{
        if (c->state != SORTD__CONN_OPEN || !sortd__pipeline_idle(&c->out))
                return;
        if (c->out.close_after_flush || drained(c))
                sortd__conn_close(c);
}

/* Reads on while c takes bytes and the read-ahead has none left. */
static void update_reading(sortd__conn *c)
{
        bool want = takes_bytes(c) && c->ra_pos == c->ra_len;
        int r = 0;

        if (want && !has(c, SORTD__CONN_READING)) {
                r = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
                c->clock.last_byte =
                        uv_hrtime(); /* the timeouts count from now, not from the stop */
        } else if (!want && has(c, SORTD__CONN_READING)) {
                uv_read_stop((uv_stream_t *)&c->pipe);
        }
        if (r < 0) {
                sortd__log(SORTD__LOG_WARNING, "%s: cannot read: %s", c->name, uv_strerror(r));
                sortd__conn_close(c);
                return;
        }
        set(c, SORTD__CONN_READING, want);
}

/* ---- what the timeouts measure ---- */

/* Nothing in progress nor unanswered: no frame begun or read ahead, no job with the engine,
   every reply written. */
static bool conn_idle(const sortd__conn *c)
{
        return sortd__frame_at_boundary(&c->fr) && !c->reading && c->ra_pos == c->ra_len &&
               c->in_engine == 0 && sortd__pipeline_idle(&c->out);
}

static void note_idle(sortd__conn *c)
{
        sortd__timeouts_idle(&c->clock, conn_idle(c), uv_hrtime());
}

static void note_writes(sortd__conn *c)
{
        sortd__timeouts_writes(&c->clock, uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe),
                               uv_hrtime());
}

/*
 * After anything that may let c parse, write, read or close: what the read-ahead holds is
 * parsed as far as c takes it, ready replies go out (a reply the socket takes whole may let
 * c take more), then reads start or stop, and a finished connection closes.
 */
static void settle(sortd__conn *c)
{
        if (c->state != SORTD__CONN_OPEN)
                return;
        note_writes(c);
        do {
                if (c->ra_pos < c->ra_len && !has(c, SORTD__CONN_CONSUMING) && takes_bytes(c))
                        consume(c);
                sortd__pipeline_flush(&c->out);
        } while (c->ra_pos < c->ra_len && !has(c, SORTD__CONN_CONSUMING) && takes_bytes(c));
        if (c->state != SORTD__CONN_OPEN)
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
                if (c->state == SORTD__CONN_OPEN) {
                        sortd__log(SORTD__LOG_INFO, "%s: write failed: %s", c->name,
                                   uv_strerror(status));
                        sortd__conn_close(c);
                }
                return;
        }
        settle(c);
}

/* The admission's callback: the reading sort's bytes are charged. */
static void on_admitted(sortd__admission_waiter *w)
{
        sortd__conn *c = SORTD__CONTAINER_OF(w, sortd__conn, wait);

        assert(c->state == SORTD__CONN_OPEN && c->reading);
        sortd__intake_read_payload(c);
        settle(c);
}

/* ---- completion and close ---- */

/* The one place a connection goes: every region was closed on the engine thread by now
   (sortd__dispatch_closing), and the engines hold none of its jobs. */
static void conn_free(sortd__conn *c)
{
        assert(c->state == SORTD__CONN_CLOSED && c->in_engine == 0);
        sortd__regions_destroy(&c->regions);
        sortd__frame_free(&c->fr);
        free(c->ra);
        free(c);
}

void sortd__conn_complete(sortd__job *j, void *arg)
{
        sortd__conn *c = j->owner;
        bool sort = sortd__job_is_sort(j);

        assert(c->in_engine > 0);
        c->in_engine--;
        if (sort)
                sortd__intake_sort_done(c, j);
        if (c->state != SORTD__CONN_OPEN) {
                sortd__job_free(j);
                if (c->state == SORTD__CONN_CLOSED && c->in_engine == 0)
                        conn_free(c);
                return;
        }
        if (!sort)
                sortd__dispatch_region_done(&c->d, j);
        j->state = SORTD__JOB_DONE;
        settle(c);
}

static void on_close(uv_handle_t *h)
{
        sortd__conn *c = h->data;
        bool idle = c->in_engine == 0;

        assert(c->state == SORTD__CONN_CLOSING);
        c->state = SORTD__CONN_CLOSED;
        /* The owner may stop the engines here (the drain's last connection), which hands back
           c's last jobs and frees c: only a c that held none is freed after. */
        c->ctx->gone(c, c->ctx->gone_arg);
        if (idle)
                conn_free(c);
}

/* Takes c's jobs that wait in the engines' queues out: they are cancelled, never sorted. */
static void cancel_queued(sortd__conn *c)
{
        for (sortd__job *j = sortd__engines_cancel(c->ctx->engines, &c->flows); j; j = j->qnext) {
                j->cancelled = true;
                c->in_engine--;
                if (sortd__job_is_sort(j))
                        c->ctx->stats->cancelled++;
        }
}

/* Each region goes to the engines to be closed, after the connection's sorts. */
static void close_regions(sortd__conn *c)
{
        sortd__job *j, *next;

        for (j = sortd__dispatch_closing(&c->d); j; j = next) {
                next = j->qnext;
                sortd__intake_submit(c, j);
        }
}

void sortd__conn_close(sortd__conn *c)
{
        if (c->state != SORTD__CONN_OPEN)
                return;
        sortd__log(SORTD__LOG_DEBUG, "%s: closing", c->name);
        sortd__admission_leave(c->ctx->adm, &c->wait);
        if (has(c, SORTD__CONN_READING))
                uv_read_stop((uv_stream_t *)&c->pipe);
        c->flags = 0;
        /* A region sort whose offsets were still coming holds its regions, which close now. */
        if (c->reading)
                sortd__region_release_held(c->reading);
        cancel_queued(c);
        close_regions(c);
        c->state = SORTD__CONN_CLOSING;
        sortd__pipeline_close(&c->out);
        if (c->reading)
                c->ctx->stats->cancelled++; /* its payload never came whole */
        c->reading = NULL;
        uv_close((uv_handle_t *)&c->pipe, on_close);
}

/* ---- timeouts ---- */

/* Whether c has run past one of its timeouts at now; why says which. */
static bool timed_out(sortd__conn *c, uint64_t now, char *why, size_t len)
{
        const sortd__conn_limits *lim = c->ctx->limits;
        const sortd__timeouts_limits tl = {.frame_ms = lim->frame_timeout_ms,
                                           .idle_ms = lim->idle_timeout_ms,
                                           .write_ms = lim->write_timeout_ms};
        const sortd__timeouts_now seen = {
                .reading = has(c, SORTD__CONN_READING),
                .mid_frame = !sortd__frame_at_boundary(&c->fr) || c->reading,
                .idle = conn_idle(c),
        };

        note_writes(c);
        return sortd__timeouts_passed(&c->clock, &tl, &seen, now, why, len);
}

void sortd__conn_check_timeouts(sortd__conn *c, uint64_t now)
{
        char why[128];

        if (c->state != SORTD__CONN_OPEN || !timed_out(c, now, why, sizeof(why)))
                return;
        sortd__log(SORTD__LOG_INFO, "%s: %s: closing", c->name, why);
        c->ctx->stats->timed_out++;
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
        c->ctx->stats->connections_refused++;
        sortd__log(SORTD__LOG_NOTICE, "%s: refused: %s", c->name, why);
        sortd__pipeline_refuse(&c->out, 0, s, why);
        c->out.close_after_flush = true;
}

/* Who is connecting, and whether there is room for them. */
static void admit_peer(sortd__conn *c)
{
        const sortd__conn_ctx *ctx = c->ctx;
        char why[256];
        uv_os_fd_t fd;

        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
            !sortd__access_allows(ctx->access, fd, why, sizeof(why))) {
                refuse(c, SORTD_E_DENIED, why);
        } else if (ctx->stats->connections > ctx->limits->max_connections) {
                snprintf(why, sizeof(why), "too many connections (max-connections = %llu)",
                         (unsigned long long)ctx->limits->max_connections);
                refuse(c, SORTD_E_BUSY, why);
        }
}

sortd__conn *sortd__conn_new(const sortd__conn_ctx *ctx)
{
        sortd__conn *c = calloc(1, sizeof(*c));

        if (!c || sortd__frame_init(&c->fr, SORTD__WIRE_MAX_MESSAGE) < 0 ||
            !(c->ra = malloc(READ_AHEAD_BYTES))) {
                if (c) {
                        sortd__frame_free(&c->fr);
                        free(c->ra);
                }
                free(c);
                return NULL;
        }
        c->ctx = ctx;
        c->state = SORTD__CONN_OPEN;
        uv_pipe_init(ctx->loop, &c->pipe, 1); /* ipc: regions' fds come with SCM_RIGHTS */
        c->pipe.data = c;
        sortd__regions_init(&c->regions, ctx->regions);
        sortd__pipeline_init(&c->out, (uv_stream_t *)&c->pipe, c->name, ctx->adm, ctx->stats,
                             on_written);
        c->d = (sortd__dispatch_ctx){.env = ctx->env,
                                     .stats = ctx->stats,
                                     .out = &c->out,
                                     .regions = &c->regions,
                                     .name = c->name,
                                     .owner = c};
        c->wait.admitted = on_admitted;
        return c;
}

void sortd__conn_start(sortd__conn *c, uv_stream_t *server)
{
        int r = uv_accept(server, (uv_stream_t *)&c->pipe);

        if (r < 0) {
                sortd__log(SORTD__LOG_WARNING, "accept failed: %s", uv_strerror(r));
                sortd__conn_close(c);
                return;
        }
        c->ctx->stats->connections_total++;
        peer_name(c);
        /* Replies leave through the daemon's send buffer: as in libsortd, a large one moves a
           big result in fewer wake-ups (the kernel caps it at net.core.wmem_max). */
        uv_send_buffer_size((uv_handle_t *)&c->pipe, &(int){4 << 20});
        sortd__log(SORTD__LOG_INFO, "%s: connected", c->name);
        admit_peer(c);
        settle(c);
}
