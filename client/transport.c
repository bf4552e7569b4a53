/*
 * libsortd's transport: the connection, its Unix socket, and the framed bytes on it. Blocking
 * calls over a non-blocking socket, so that every wait goes through poll() with the call's
 * deadline. Partial reads and writes continue where they stopped; EINTR retries; SIGPIPE is
 * never raised (MSG_NOSIGNAL). A library never logs: errors are returned with a message in the
 * connection. Apart from client.c so that the public calls read as requests and replies; this
 * file knows frames, not what is in them, and never calls back into client.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "transport.h"

#define SOCKET_BUFFER (4 << 20)

sortd_status sortd__transport_fail(sortd_conn *c, sortd_status s, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(c->err, sizeof(c->err), fmt, ap);
        va_end(ap);
        return s;
}

sortd_status sortd__transport_breaks(sortd_conn *c, sortd_status s)
{
        /* Whatever the shut-down socket made of the call, it was the interruption. */
        if (atomic_load(&c->interrupted))
                s = sortd__transport_fail(
                        c, SORTD_E_IO,
                        "interrupted (sortd_interrupt): the connection is shut down");
        c->broken = true;
        c->broken_status = s;
        c->replies_left = 0;
        snprintf(c->broken_err, sizeof(c->broken_err), "%s", c->err);
        return s;
}

bool sortd__transport_broken(sortd_conn *c)
{
        if (atomic_load(&c->interrupted) && (!c->broken || c->replies_left))
                sortd__transport_breaks(c, SORTD_E_IO);
        if (c->broken)
                sortd__transport_fail(c, c->broken_status, "%s", c->broken_err);
        return c->broken;
}

bool sortd__transport_replies_left(const sortd_conn *c)
{
        return c->replies_left && !atomic_load(&c->interrupted);
}

int64_t sortd__transport_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sortd__transport_start_call(sortd_conn *c)
{
        c->err[0] = '\0';
        c->deadline_ms = c->timeout_ms < 0 ? -1 : sortd__transport_now_ms() + c->timeout_ms;
}

/* Waits until fd is ready for events; SORTD_E_TIMEOUT past the deadline. */
static sortd_status wait_fd(sortd_conn *c, short events)
{
        struct pollfd p = {.fd = c->fd, .events = events};

        for (;;) {
                int left = -1, r;

                if (c->deadline_ms >= 0) {
                        int64_t d = c->deadline_ms - sortd__transport_now_ms();

                        if (d <= 0)
                                return sortd__transport_breaks(
                                        c,
                                        sortd__transport_fail(c, SORTD_E_TIMEOUT,
                                                              "no answer from sortd within %d ms",
                                                              c->timeout_ms));
                        left = d > 1000000 ? 1000000 : (int)d;
                }
                r = poll(&p, 1, left);
                if (r > 0)
                        return SORTD_OK;
                if (r < 0 && errno != EINTR)
                        return sortd__transport_breaks(
                                c,
                                sortd__transport_fail(c, SORTD_E_IO, "poll: %s", strerror(errno)));
        }
}

#define BACKLOG_RETRY_MS 5

/* A pause before the next connect while the daemon's backlog is full; SORTD_E_TIMEOUT once the
   deadline has passed. */
static sortd_status backlog_wait(sortd_conn *c)
{
        int64_t left =
                c->deadline_ms < 0 ? BACKLOG_RETRY_MS : c->deadline_ms - sortd__transport_now_ms();

        if (left <= 0)
                return sortd__transport_fail(c, SORTD_E_TIMEOUT,
                                             "sortd's queue of new connections stayed full for %d "
                                             "ms: it is overloaded, or stalled",
                                             c->timeout_ms);
        poll(NULL, 0, left < BACKLOG_RETRY_MS ? (int)left : BACKLOG_RETRY_MS);
        return SORTD_OK;
}

sortd_status sortd__transport_connect(sortd_conn *c, const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        sortd_status s;

        if (strlen(path) >= sizeof(sa.sun_path))
                return sortd__transport_fail(c, SORTD_E_INVAL, "socket path too long: %s", path);
        strcpy(sa.sun_path, path);
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c->fd < 0)
                return sortd__transport_fail(c, SORTD_E_SYSTEM, "socket: %s", strerror(errno));
        /* A Unix stream socket's queue is the sender's buffer: a large one moves a big
           payload in fewer wake-ups of both sides (the kernel caps it at wmem_max). */
        setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &(int){SOCKET_BUFFER}, sizeof(int));
        for (;;) {
                if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return SORTD_OK;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return sortd__transport_fail(c, SORTD_E_IO, "cannot connect to %s: %s",
                                                     path, strerror(errno));
                /* A full backlog: on a Unix socket the kernel queued nothing and will not
                   complete this connect, so try again until the deadline. */
                s = backlog_wait(c);
                if (s != SORTD_OK)
                        return s;
        }
}

void sortd__transport_interrupt(sortd_conn *c)
{
        atomic_store(&c->interrupted, true);
        if (c->fd >= 0)
                shutdown(c->fd, SHUT_RDWR);
}

void sortd__transport_disconnect(sortd_conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
}

/* One reply frame, header and message: *out is the unpacked Reply, whatever its id. */
static sortd_status read_reply(sortd_conn *c, Sortd__Wire__Reply **out, uint64_t *payload_len)
{
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h;
        char why[160];
        sortd_status s;

        s = sortd__transport_read_all(c, hdr, sizeof(hdr));
        if (s != SORTD_OK)
                return s;
        sortd__wire_header_unpack(hdr, &h);
        if (sortd__wire_header_check(&h, SORTD__WIRE_MAX_MESSAGE, why, sizeof(why)) != SORTD_OK)
                return sortd__transport_breaks(
                        c, sortd__transport_fail(c, SORTD_E_PROTOCOL, "bad reply frame: %s", why));
        s = sortd__transport_read_all(c, c->msg, h.message_len);
        if (s != SORTD_OK)
                return s;
        *out = sortd__wire__reply__unpack(NULL, h.message_len, c->msg);
        if (!*out)
                return sortd__transport_breaks(
                        c,
                        sortd__transport_fail(c, SORTD_E_PROTOCOL, "unparsable reply from sortd"));
        *payload_len = h.payload_len;
        return SORTD_OK;
}

/* What send_failed looks through for the daemon's reason. The replies in front of it are what
   the daemon wrote before it closed, which its socket buffer bounds (a few MiB at most). */
#define PEEK_MAX (16u << 20)

/*
 * The reply framed at p, of which len bytes are there: NULL when its message is not all there
 * or does not parse. *whole is the frame's length with its payload, or 0 when the payload is
 * not all there either.
 */
static Sortd__Wire__Reply *frame_at(const uint8_t *p, size_t len, size_t *whole)
{
        sortd__wire_header h;
        size_t rest;
        char why[8];

        if (len < SORTD__WIRE_HEADER_SIZE)
                return NULL;
        sortd__wire_header_unpack(p, &h);
        rest = len - SORTD__WIRE_HEADER_SIZE;
        if (sortd__wire_header_check(&h, SORTD__WIRE_MAX_MESSAGE, why, sizeof(why)) != SORTD_OK ||
            h.message_len > rest)
                return NULL;
        rest -= h.message_len;
        *whole = h.payload_len <= rest
                         ? SORTD__WIRE_HEADER_SIZE + h.message_len + (size_t)h.payload_len
                         : 0;
        return sortd__wire__reply__unpack(NULL, h.message_len, p + SORTD__WIRE_HEADER_SIZE);
}

/*
 * The daemon's refusal of request id (or its last word, id 0) among the replies it wrote
 * before it closed, found by peeking: the daemon answers in order, so the replies in front of
 * it answer requests submitted before, and they stay in the socket for sortd_receive. On
 * success *s and c->err hold its status and reason, and *before counts the replies in front.
 */
static bool peek_refusal(sortd_conn *c, uint64_t id, sortd_status *s, uint64_t *before)
{
        int queued = 0;
        size_t len, off = 0, whole;
        uint8_t *buf = NULL;
        ssize_t got = -1;
        bool found = false;

        if (ioctl(c->fd, FIONREAD, &queued) == 0 && queued > 0) {
                len = (size_t)queued < PEEK_MAX ? (size_t)queued : PEEK_MAX;
                buf = malloc(len);
                got = buf ? recv(c->fd, buf, len, MSG_PEEK | MSG_DONTWAIT) : -1;
        }
        for (*before = 0; got > 0 && off < (size_t)got; off += whole, (*before)++) {
                Sortd__Wire__Reply *r = frame_at(buf + off, (size_t)got - off, &whole);

                if (!r)
                        break;
                found = (r->id == 0 || r->id == id) && r->status != SORTD__WIRE__STATUS_CODE__OK;
                if (found) {
                        *s = sortd__transport_fail(c, sortd__wire_status_from(r->status),
                                                   "sortd: %s", r->error);
                }
                sortd__wire__reply__free_unpacked(r, NULL);
                if (found || !whole)
                        break;
        }
        free(buf);
        return found;
}

/*
 * A send failed because the daemon closed: it may have said why first, in a last word (id 0:
 * too many connections, a stream it could not parse) or in its refusal of the request being
 * sent, id (a payload too large to drain), which were in the socket before the close. Their
 * status and reason are the call's, and the connection stays broken with them, but for the
 * replies in front of them, which sortd_receive still takes (replies_left).
 */
static sortd_status send_failed(sortd_conn *c, int err, uint64_t id)
{
        sortd_status s = SORTD_E_IO;
        uint64_t before = 0;
        bool said = (err == EPIPE || err == ECONNRESET) && peek_refusal(c, id, &s, &before);

        if (!said)
                sortd__transport_fail(c, s, "sending to sortd: %s", strerror(err));
        sortd__transport_breaks(c, s);
        if (said)
                c->replies_left = before < c->outstanding ? before : c->outstanding;
        return c->broken_status;
}

void sortd__transport_progress_begin(sortd_conn *c, sortd_progress_phase phase, uint64_t skip,
                                     uint64_t total)
{
        c->progress.total = c->progress.fn ? total : 0;
        if (!c->progress.total)
                return;
        c->progress.phase = phase;
        c->progress.skip = skip;
        c->progress.done = 0;
        c->progress.fn(c->progress.user, phase, 0, total);
}

/* n more bytes of the frame moved; the count stops once the arrays are all through. */
static void progress_moved(sortd_conn *c, uint64_t n)
{
        uint64_t skipped = n < c->progress.skip ? n : c->progress.skip;

        if (!c->progress.total)
                return;
        c->progress.skip -= skipped;
        n -= skipped;
        if (!n)
                return;
        c->progress.done += n;
        c->progress.fn(c->progress.user, c->progress.phase, c->progress.done, c->progress.total);
        if (c->progress.done >= c->progress.total)
                c->progress.total = 0;
}

/*
 * Writes all of iov (modified in place). pass_fd >= 0 travels as SCM_RIGHTS with the first
 * bytes: the kernel attaches it to the first byte a sendmsg() moves, so it goes on the first
 * sendmsg that writes anything and never again.
 */
static sortd_status write_all(sortd_conn *c, struct iovec *iov, int iovcnt, int pass_fd,
                              uint64_t id)
{
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } ctl;

        while (iovcnt > 0) {
                struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
                ssize_t w;
                sortd_status s;

                if (pass_fd >= 0) {
                        memset(&ctl, 0, sizeof(ctl));
                        mh.msg_control = ctl.buf;
                        mh.msg_controllen = sizeof(ctl.buf);
                        CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
                        CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
                        CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
                        memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &pass_fd, sizeof(int));
                }
                w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                                return send_failed(c, errno, id);
                        s = wait_fd(c, POLLOUT);
                        if (s != SORTD_OK)
                                return s;
                        continue;
                }
                if (w > 0) {
                        pass_fd = -1; /* sent with those bytes */
                        progress_moved(c, (uint64_t)w);
                }
                while (iovcnt > 0 && (size_t)w >= iov->iov_len) {
                        w -= (ssize_t)iov->iov_len;
                        iov++;
                        iovcnt--;
                }
                if (iovcnt > 0) {
                        iov->iov_base = (char *)iov->iov_base + w;
                        iov->iov_len -= (size_t)w;
                }
        }
        return SORTD_OK;
}

sortd_status sortd__transport_read_all(sortd_conn *c, void *buf, size_t len)
{
        char *p = buf;

        while (len > 0) {
                ssize_t r = recv(c->fd, p, len, 0);
                sortd_status s;

                if (r > 0) {
                        p += r;
                        len -= (size_t)r;
                        progress_moved(c, (uint64_t)r);
                        continue;
                }
                if (r == 0)
                        return sortd__transport_breaks(
                                c, sortd__transport_fail(c, SORTD_E_IO,
                                                         "sortd closed the connection"));
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return sortd__transport_breaks(
                                c, sortd__transport_fail(c, SORTD_E_IO, "receiving from sortd: %s",
                                                         strerror(errno)));
                s = wait_fd(c, POLLIN);
                if (s != SORTD_OK)
                        return s;
        }
        return SORTD_OK;
}

sortd_status sortd__transport_send_request(sortd_conn *c, const Sortd__Wire__Request *req,
                                           int pass_fd, const sortd__transport_piece *pieces,
                                           int count)
{
        size_t len = sortd__wire__request__get_packed_size(req);
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h = {
                .magic = SORTD__WIRE_MAGIC,
                .version = SORTD__WIRE_VERSION,
                .message_len = (uint32_t)len,
        };
        struct iovec iov[2 + SORTD__TRANSPORT_MAX_PIECES];
        int n = 0;
        sortd_status s;

        if (len > SORTD__WIRE_MAX_MESSAGE)
                return sortd__transport_fail(c, SORTD_E_INVAL, "request message too large");
        sortd__wire__request__pack(req, c->msg);
        iov[n++] = (struct iovec){hdr, sizeof(hdr)};
        iov[n++] = (struct iovec){c->msg, len};
        /* sendmsg only reads the pieces: iovec's base is not const, but nothing writes it. */
        for (int i = 0; i < count && i < SORTD__TRANSPORT_MAX_PIECES; i++) {
                h.payload_len += pieces[i].len;
                if (pieces[i].len)
                        iov[n++] = (struct iovec){(void *)pieces[i].data, pieces[i].len};
        }
        sortd__wire_header_pack(&h, hdr);
        sortd__transport_progress_begin(c, SORTD_PROGRESS_SENDING, sizeof(hdr) + len,
                                        h.payload_len);
        s = write_all(c, iov, n, pass_fd, req->id);
        c->progress.total = 0; /* a failed send counts no further */
        return s;
}

sortd_status sortd__transport_recv_reply(sortd_conn *c, uint64_t id, Sortd__Wire__Reply **out,
                                         uint64_t *payload_len)
{
        Sortd__Wire__Reply *r;
        uint64_t plen;
        sortd_status s;

        s = read_reply(c, &r, &plen);
        if (s != SORTD_OK)
                return s;
        if (r->id == 0 && r->status != SORTD__WIRE__STATUS_CODE__OK) {
                /* The daemon's last word on this stream (a limit, or input it could not
                   parse); it closes the connection after it. */
                sortd_status st = sortd__wire_status_from(r->status);

                sortd__transport_fail(c, st, "sortd: %s", r->error);
                sortd__wire__reply__free_unpacked(r, NULL);
                return sortd__transport_breaks(c, st);
        }
        if (r->id != id) {
                /* id 0 is the daemon's answer to a stream it could no longer parse. */
                sortd__transport_fail(c, SORTD_E_PROTOCOL,
                                      "reply to request %llu while waiting for %llu%s%s",
                                      (unsigned long long)r->id, (unsigned long long)id,
                                      *r->error ? ": " : "", r->error);
                sortd__wire__reply__free_unpacked(r, NULL);
                return sortd__transport_breaks(c, SORTD_E_PROTOCOL);
        }
        *out = r;
        *payload_len = plen;
        return SORTD_OK;
}
