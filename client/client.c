/*
 * libsortd: blocking calls over a non-blocking socket, so that every wait goes through poll()
 * with the call's deadline. Partial reads and writes continue where they stopped; EINTR
 * retries; SIGPIPE is never raised (MSG_NOSIGNAL). A library never logs: errors are returned
 * with a message in the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sortd.h"
#include "wire.h"

#define DEFAULT_TIMEOUT_MS 60000
#define SOCKET_BUFFER (4 << 20)

struct sortd_conn {
        int fd;
        int timeout_ms;
        bool broken;
        sortd_status broken_status;
        uint64_t next_id;
        uint64_t outstanding; /* submitted, not yet received */
        sortd_info info;
        int64_t deadline_ms; /* of the call in progress; -1 = none */
        uint8_t *msg;        /* SORTD__WIRE_MAX_MESSAGE bytes */
        char err[256];
};

static sortd_status fail(sortd_conn *c, sortd_status s, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static sortd_status fail(sortd_conn *c, sortd_status s, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(c->err, sizeof(c->err), fmt, ap);
        va_end(ap);
        return s;
}

/* The stream is out of sync or gone: refuse everything from now on. */
static sortd_status breaks(sortd_conn *c, sortd_status s)
{
        c->broken = true;
        c->broken_status = s;
        return s;
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void start_call(sortd_conn *c)
{
        c->err[0] = '\0';
        c->deadline_ms = c->timeout_ms < 0 ? -1 : now_ms() + c->timeout_ms;
}

/* Waits until fd is ready for events; SORTD_E_TIMEOUT past the deadline. */
static sortd_status wait_fd(sortd_conn *c, short events)
{
        struct pollfd p = {.fd = c->fd, .events = events};

        for (;;) {
                int left = -1, r;

                if (c->deadline_ms >= 0) {
                        int64_t d = c->deadline_ms - now_ms();

                        if (d <= 0)
                                return breaks(c, fail(c, SORTD_E_TIMEOUT,
                                                      "no answer from sortd within %d ms",
                                                      c->timeout_ms));
                        left = d > 1000000 ? 1000000 : (int)d;
                }
                r = poll(&p, 1, left);
                if (r > 0)
                        return SORTD_OK;
                if (r < 0 && errno != EINTR)
                        return breaks(c, fail(c, SORTD_E_IO, "poll: %s", strerror(errno)));
        }
}

static sortd_status recv_reply(sortd_conn *c, uint64_t id, Sortd__Wire__Reply **out,
                               uint64_t *payload_len);

/*
 * A send failed because the daemon closed: it may have said why first (too many connections,
 * a stream it could not parse). Read that reply if it is there, briefly.
 */
static sortd_status send_failed(sortd_conn *c, int err)
{
        Sortd__Wire__Reply *r = NULL;
        uint64_t plen;
        char msg[sizeof(c->err)];

        snprintf(msg, sizeof(msg), "sending to sortd: %s", strerror(err));
        if (err == EPIPE || err == ECONNRESET) {
                c->deadline_ms = now_ms() + 100;
                if (recv_reply(c, 0, &r, &plen) == SORTD_OK)
                        sortd__wire__reply__free_unpacked(r, NULL);
                if (c->broken && c->broken_status != SORTD_E_IO &&
                    c->broken_status != SORTD_E_TIMEOUT && c->broken_status != SORTD_E_PROTOCOL)
                        return c->broken_status; /* the daemon's own error and message */
        }
        return breaks(c, fail(c, SORTD_E_IO, "%s", msg));
}

/* Writes all of iov (modified in place). */
static sortd_status write_all(sortd_conn *c, struct iovec *iov, int iovcnt)
{
        while (iovcnt > 0) {
                struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
                ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
                sortd_status s;

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                                return send_failed(c, errno);
                        s = wait_fd(c, POLLOUT);
                        if (s != SORTD_OK)
                                return s;
                        continue;
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

static sortd_status read_all(sortd_conn *c, void *buf, size_t len)
{
        char *p = buf;

        while (len > 0) {
                ssize_t r = recv(c->fd, p, len, 0);
                sortd_status s;

                if (r > 0) {
                        p += r;
                        len -= (size_t)r;
                        continue;
                }
                if (r == 0)
                        return breaks(c, fail(c, SORTD_E_IO, "sortd closed the connection"));
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return breaks(c, fail(c, SORTD_E_IO, "receiving from sortd: %s",
                                              strerror(errno)));
                s = wait_fd(c, POLLIN);
                if (s != SORTD_OK)
                        return s;
        }
        return SORTD_OK;
}

/* Sends one request frame: header, the packed Request, then the payload pieces. */
static sortd_status send_request(sortd_conn *c, const Sortd__Wire__Request *req, void *p1,
                                 size_t l1, void *p2, size_t l2)
{
        size_t len = sortd__wire__request__get_packed_size(req);
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h = {
                .magic = SORTD__WIRE_MAGIC,
                .version = SORTD__WIRE_VERSION,
                .message_len = (uint32_t)len,
                .payload_len = (uint64_t)l1 + l2,
        };
        struct iovec iov[4];
        int n = 0;

        if (len > SORTD__WIRE_MAX_MESSAGE)
                return fail(c, SORTD_E_INVAL, "request message too large");
        sortd__wire__request__pack(req, c->msg);
        sortd__wire_header_pack(&h, hdr);
        iov[n++] = (struct iovec){hdr, sizeof(hdr)};
        iov[n++] = (struct iovec){c->msg, len};
        if (l1)
                iov[n++] = (struct iovec){p1, l1};
        if (l2)
                iov[n++] = (struct iovec){p2, l2};
        return write_all(c, iov, n);
}

/*
 * Receives one reply frame for request id: *out is the unpacked Reply (free it), *payload_len
 * the bytes that follow it and remain to be read.
 */
static sortd_status recv_reply(sortd_conn *c, uint64_t id, Sortd__Wire__Reply **out,
                               uint64_t *payload_len)
{
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h;
        Sortd__Wire__Reply *r;
        char why[160];
        sortd_status s;

        s = read_all(c, hdr, sizeof(hdr));
        if (s != SORTD_OK)
                return s;
        sortd__wire_header_unpack(hdr, &h);
        if (sortd__wire_header_check(&h, SORTD__WIRE_MAX_MESSAGE, why, sizeof(why)) != SORTD_OK)
                return breaks(c, fail(c, SORTD_E_PROTOCOL, "bad reply frame: %s", why));
        s = read_all(c, c->msg, h.message_len);
        if (s != SORTD_OK)
                return s;
        r = sortd__wire__reply__unpack(NULL, h.message_len, c->msg);
        if (!r)
                return breaks(c, fail(c, SORTD_E_PROTOCOL, "unparsable reply from sortd"));
        if (r->id == 0 && r->status != SORTD__WIRE__STATUS_CODE__OK) {
                /* The daemon's last word on this stream (a limit, or input it could not
                   parse); it closes the connection after it. */
                sortd_status st = sortd__wire_status_from(r->status);

                fail(c, st, "sortd: %s", r->error);
                sortd__wire__reply__free_unpacked(r, NULL);
                return breaks(c, st);
        }
        if (r->id != id) {
                /* id 0 is the daemon's answer to a stream it could no longer parse. */
                fail(c, SORTD_E_PROTOCOL, "reply to request %llu while waiting for %llu%s%s",
                     (unsigned long long)r->id, (unsigned long long)id, *r->error ? ": " : "",
                     r->error);
                sortd__wire__reply__free_unpacked(r, NULL);
                return breaks(c, SORTD_E_PROTOCOL);
        }
        *out = r;
        *payload_len = h.payload_len;
        return SORTD_OK;
}

/* A reply's status: OK, or the daemon's error with its message. */
static sortd_status reply_status(sortd_conn *c, const Sortd__Wire__Reply *r)
{
        sortd_status s = sortd__wire_status_from(r->status);

        if (s != SORTD_OK)
                fail(c, s, "%s", *r->error ? r->error : sortd_strerror(s));
        return s;
}

/* A request without payload whose reply has none: Hello, Ping, Status. */
static sortd_status simple_call(sortd_conn *c, Sortd__Wire__Request *req,
                                Sortd__Wire__Reply__BodyCase want, Sortd__Wire__Reply **out)
{
        uint64_t plen;
        sortd_status s;

        if (c->broken)
                return c->broken_status;
        if (c->outstanding)
                return fail(c, SORTD_E_INVAL, "%llu submitted sorts not yet received",
                            (unsigned long long)c->outstanding);
        start_call(c);
        req->id = ++c->next_id;
        s = send_request(c, req, NULL, 0, NULL, 0);
        if (s == SORTD_OK)
                s = recv_reply(c, req->id, out, &plen);
        if (s != SORTD_OK)
                return s;
        if (plen) {
                sortd__wire__reply__free_unpacked(*out, NULL);
                return breaks(c, fail(c, SORTD_E_PROTOCOL, "unexpected payload in a reply"));
        }
        s = reply_status(c, *out);
        if (s == SORTD_OK && (*out)->body_case != want)
                s = breaks(c, fail(c, SORTD_E_PROTOCOL, "reply of the wrong kind"));
        if (s != SORTD_OK) {
                sortd__wire__reply__free_unpacked(*out, NULL);
                *out = NULL;
        }
        return s;
}

static void copy_str(char *dst, size_t len, const char *src)
{
        snprintf(dst, len, "%s", src ? src : "");
}

sortd_status sortd_hello(sortd_conn *c, sortd_info *info)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Hello hello = SORTD__WIRE__HELLO__INIT;
        Sortd__Wire__Reply *r;
        Sortd__Wire__HelloReply *h;
        sortd_status s;

        if (!c)
                return SORTD_E_INVAL;
        hello.protocol_version = SORTD__WIRE_VERSION;
        hello.client_name = "libsortd";
        req.body_case = SORTD__WIRE__REQUEST__BODY_HELLO;
        req.hello = &hello;
        s = simple_call(c, &req, SORTD__WIRE__REPLY__BODY_HELLO, &r);
        if (s != SORTD_OK)
                return s;
        h = r->hello;
        c->info = (sortd_info){
                .protocol_version = h->protocol_version,
                .capacity = h->capacity,
        };
        copy_str(c->info.server_version, sizeof(c->info.server_version), h->server_version);
        copy_str(c->info.engine, sizeof(c->info.engine), h->engine);
        copy_str(c->info.device, sizeof(c->info.device), h->device);
        if (h->limits) {
                c->info.max_message_bytes = h->limits->max_message_bytes;
                c->info.max_request_bytes = h->limits->max_request_bytes;
                c->info.max_inflight_bytes = h->limits->max_inflight_bytes;
                c->info.max_connections = h->limits->max_connections;
        }
        sortd__wire__reply__free_unpacked(r, NULL);
        if (info)
                *info = c->info;
        return SORTD_OK;
}

static sortd_status connect_fd(sortd_conn *c, const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int err;
        socklen_t elen = sizeof(err);
        sortd_status s;

        if (strlen(path) >= sizeof(sa.sun_path))
                return fail(c, SORTD_E_INVAL, "socket path too long: %s", path);
        strcpy(sa.sun_path, path);
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c->fd < 0)
                return fail(c, SORTD_E_SYSTEM, "socket: %s", strerror(errno));
        /* A Unix stream socket's queue is the sender's buffer: a large one moves a big
           payload in fewer wake-ups of both sides (the kernel caps it at wmem_max). */
        setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &(int){SOCKET_BUFFER}, sizeof(int));
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                return SORTD_OK;
        if (errno != EAGAIN && errno != EINPROGRESS && errno != EINTR)
                return fail(c, SORTD_E_IO, "cannot connect to %s: %s", path, strerror(errno));
        /* A full backlog: wait for the connection to complete within the timeout. */
        s = wait_fd(c, POLLOUT);
        if (s != SORTD_OK)
                return s;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0)
                return fail(c, SORTD_E_IO, "cannot connect to %s: %s", path, strerror(err));
        return SORTD_OK;
}

sortd_status sortd_connect(const char *path, const sortd_connect_options *opts, sortd_conn **out,
                           char *errbuf, size_t errbuf_len)
{
        char def[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
        sortd_conn *c;
        sortd_status s;

        if (!out) {
                if (errbuf_len)
                        snprintf(errbuf, errbuf_len, "out must not be NULL");
                return SORTD_E_INVAL;
        }
        c = calloc(1, sizeof(*c));
        if (c)
                c->msg = malloc(SORTD__WIRE_MAX_MESSAGE);
        if (!c || !c->msg) {
                if (c)
                        free(c->msg);
                free(c);
                if (errbuf_len)
                        snprintf(errbuf, errbuf_len, "out of memory");
                return SORTD_E_NOMEM;
        }
        c->fd = -1;
        c->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
        if (!path) {
                sortd__wire_default_socket(def, sizeof(def));
                path = def;
        }
        start_call(c);
        s = connect_fd(c, path);
        if (s == SORTD_OK)
                s = sortd_hello(c, NULL);
        if (s != SORTD_OK) {
                if (errbuf_len)
                        snprintf(errbuf, errbuf_len, "%s", c->err);
                sortd_close(c);
                return s;
        }
        *out = c;
        return SORTD_OK;
}

void sortd_close(sortd_conn *c)
{
        if (!c)
                return;
        if (c->fd >= 0)
                close(c->fd);
        free(c->msg);
        free(c);
}

const char *sortd_error_message(const sortd_conn *c)
{
        return c ? c->err : "no connection";
}

void sortd_set_timeout(sortd_conn *c, int timeout_ms)
{
        if (c)
                c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
}

sortd_status sortd_ping(sortd_conn *c)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Ping ping = SORTD__WIRE__PING__INIT;
        Sortd__Wire__Reply *r;
        sortd_status s;

        if (!c)
                return SORTD_E_INVAL;
        ping.nonce = (uint64_t)now_ms();
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &ping;
        s = simple_call(c, &req, SORTD__WIRE__REPLY__BODY_PING, &r);
        if (s != SORTD_OK)
                return s;
        if (r->ping->nonce != ping.nonce)
                s = breaks(c, fail(c, SORTD_E_PROTOCOL, "ping answered with another nonce"));
        sortd__wire__reply__free_unpacked(r, NULL);
        return s;
}

sortd_status sortd_query_status(sortd_conn *c, sortd_server_status *st)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Status status = SORTD__WIRE__STATUS__INIT;
        Sortd__Wire__Reply *r;
        Sortd__Wire__StatusReply *x;
        sortd_status s;

        if (!c || !st)
                return c ? fail(c, SORTD_E_INVAL, "st must not be NULL") : SORTD_E_INVAL;
        req.body_case = SORTD__WIRE__REQUEST__BODY_STATUS;
        req.status = &status;
        s = simple_call(c, &req, SORTD__WIRE__REPLY__BODY_STATUS_REPLY, &r);
        if (s != SORTD_OK)
                return s;
        x = r->status_reply;
        *st = (sortd_server_status){.capacity = x->capacity,
                                    .uptime_ms = x->uptime_ms,
#define COPY(name, wire_type, label) .name = x->name,
                                    SORTD_STATUS_COUNTERS(COPY)
#undef COPY
        };
        copy_str(st->engine, sizeof(st->engine), x->engine);
        copy_str(st->device, sizeof(st->device), x->device);
        copy_str(st->engine_reason, sizeof(st->engine_reason), x->engine_reason);
        sortd__wire__reply__free_unpacked(r, NULL);
        return SORTD_OK;
}

/* ---- sorts ---- */

/* The checks every call starts with; then the call's deadline starts. */
static sortd_status begin_call(sortd_conn *c, const void *arg, const char *what)
{
        if (!c)
                return SORTD_E_INVAL;
        if (!arg)
                return fail(c, SORTD_E_INVAL, "%s must not be NULL", what);
        if (c->broken)
                return c->broken_status;
        start_call(c);
        return SORTD_OK;
}

static bool misaligned(const void *p, size_t align)
{
        return (uintptr_t)p % align != 0;
}

/* Everything the daemon would refuse, refused here before a byte is sent. */
static sortd_status validate(sortd_conn *c, const sortd_request *r, sortd__wire_sizes *sizes)
{
        const sortd_sort_options *o = &r->opts;
        sortd_sort_desc d = {r->key_type, r->payload, o->order, o->begin_bit, o->end_bit};
        size_t ks = sortd_key_size(r->key_type), vs = sortd_payload_size(r->payload);
        char why[128];

        if (sortd_sort_desc_check(&d, r->n, why, sizeof(why)) != SORTD_OK)
                return fail(c, SORTD_E_INVAL, "%s", why);
        if (sortd__wire_sizes_of(&d, r->n, sizes) != SORTD_OK)
                return fail(c, SORTD_E_INVAL, "n = %zu is too large", r->n);
        if (r->n && (!r->keys || misaligned(r->keys, ks)))
                return fail(c, SORTD_E_INVAL, "keys must be non-NULL and aligned to %zu bytes", ks);
        if (r->n && vs && (!r->vals || misaligned(r->vals, vs)))
                return fail(c, SORTD_E_INVAL, "vals must be non-NULL and aligned to %zu bytes", vs);
        if (r->n > c->info.capacity)
                return fail(c, SORTD_E_CAPACITY, "n = %zu above the daemon's capacity %llu", r->n,
                            (unsigned long long)c->info.capacity);
        if (c->info.max_request_bytes && sizes->reply_len > c->info.max_request_bytes)
                return fail(c, SORTD_E_CAPACITY,
                            "request of %llu bytes above the daemon's max-request-bytes %llu",
                            (unsigned long long)sizes->reply_len,
                            (unsigned long long)c->info.max_request_bytes);
        return SORTD_OK;
}

sortd_status sortd_submit(sortd_conn *c, sortd_request *r)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Sort sort = SORTD__WIRE__SORT__INIT;
        Sortd__Wire__InlineData inl = SORTD__WIRE__INLINE_DATA__INIT;
        bool argsort;
        sortd__wire_sizes sizes;
        sortd_status s;

        s = begin_call(c, r, "request");
        if (s == SORTD_OK)
                s = validate(c, r, &sizes);
        if (s != SORTD_OK)
                return s;
        argsort = sortd_payload_is_argsort(r->payload);
        sort.key_type = sortd__wire_key_type(r->key_type);
        sort.payload = sortd__wire_payload(r->payload);
        sort.order = (Sortd__Wire__Order)r->opts.order;
        sort.begin_bit = r->opts.begin_bit;
        sort.end_bit = r->opts.end_bit;
        sort.n = r->n;
        sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        sort.inline_data = &inl;
        req.id = r->id = ++c->next_id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = &sort;
        s = send_request(c, &req, r->keys, (size_t)sizes.keys_bytes, argsort ? NULL : r->vals,
                         argsort ? 0 : (size_t)sizes.vals_bytes);
        if (s == SORTD_OK)
                c->outstanding++;
        return s;
}

sortd_status sortd_receive(sortd_conn *c, sortd_request *r)
{
        Sortd__Wire__Reply *rep;
        sortd__wire_sizes sizes;
        uint64_t plen;
        sortd_status s;

        s = begin_call(c, r, "request");
        if (s != SORTD_OK)
                return s;
        if (!c->outstanding)
                return fail(c, SORTD_E_INVAL, "no submitted request to receive");
        sortd_sort_desc d = {r->key_type, r->payload, r->opts.order, 0, 0};

        if (sortd__wire_sizes_of(&d, r->n, &sizes) != SORTD_OK)
                return fail(c, SORTD_E_INVAL, "not the request that was submitted");
        s = recv_reply(c, r->id, &rep, &plen);
        if (s != SORTD_OK)
                return s;
        c->outstanding--;
        s = reply_status(c, rep);
        if (s == SORTD_OK && (rep->body_case != SORTD__WIRE__REPLY__BODY_SORT ||
                              rep->sort->n != r->n || plen != sizes.reply_len)) {
                s = breaks(c, fail(c, SORTD_E_PROTOCOL, "sort reply does not match the request"));
        } else if (s != SORTD_OK && plen) {
                s = breaks(c, fail(c, SORTD_E_PROTOCOL, "error reply with a payload"));
        }
        if (s == SORTD_OK && rep->sort->timings)
                r->timings = (sortd_timings){
                        .queued_ns = rep->sort->timings->queued_ns,
                        .transfer_ns = rep->sort->timings->transfer_ns,
                        .sort_ns = rep->sort->timings->sort_ns,
                };
        sortd__wire__reply__free_unpacked(rep, NULL);
        if (s != SORTD_OK)
                return s;
        s = read_all(c, r->keys, (size_t)sizes.keys_bytes);
        if (s == SORTD_OK && sizes.vals_bytes)
                s = read_all(c, r->vals, (size_t)sizes.vals_bytes);
        return s;
}

static sortd_status call(sortd_conn *c, sortd_request *r)
{
        sortd_status s;

        if (c && c->outstanding)
                return fail(c, SORTD_E_INVAL, "%llu submitted sorts not yet received",
                            (unsigned long long)c->outstanding);
        s = sortd_submit(c, r);
        return s == SORTD_OK ? sortd_receive(c, r) : s;
}

/* One call for every payload: the 4-byte or the 8-byte form of it, by size (0 = none). */
static sortd_status sort_call(sortd_conn *c, void *keys, void *vals, size_t size, size_t n,
                              sortd_key_type t, const sortd_sort_options *opts, sortd_payload p4,
                              sortd_payload p8)
{
        sortd_request r = {.keys = keys, .vals = vals, .n = n, .key_type = t};

        if (size && size != 4 && size != 8)
                return c ? fail(c, SORTD_E_INVAL, "value/index size must be 4 or 8, not %zu", size)
                         : SORTD_E_INVAL;
        r.payload = size == 0 ? SORTD_PAYLOAD_NONE : size == 4 ? p4 : p8;
        r.opts = opts ? *opts : (sortd_sort_options){SORTD_ASCENDING, 0, 0};
        return call(c, &r);
}

sortd_status sortd_sort(sortd_conn *c, void *keys, size_t n, sortd_key_type t,
                        const sortd_sort_options *opts)
{
        return sort_call(c, keys, NULL, 0, n, t, opts, SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_NONE);
}

sortd_status sortd_sort_pairs(sortd_conn *c, void *keys, void *vals, size_t val_size, size_t n,
                              sortd_key_type t, const sortd_sort_options *opts)
{
        if (val_size == 0)
                return c ? fail(c, SORTD_E_INVAL, "val_size must be 4 or 8") : SORTD_E_INVAL;
        return sort_call(c, keys, vals, val_size, n, t, opts, SORTD_PAYLOAD_VALUES32,
                         SORTD_PAYLOAD_VALUES64);
}

sortd_status sortd_argsort(sortd_conn *c, void *keys, void *idx, size_t idx_size, size_t n,
                           sortd_key_type t, const sortd_sort_options *opts)
{
        if (idx_size == 0)
                return c ? fail(c, SORTD_E_INVAL, "idx_size must be 4 or 8") : SORTD_E_INVAL;
        return sort_call(c, keys, idx, idx_size, n, t, opts, SORTD_PAYLOAD_ARGSORT32,
                         SORTD_PAYLOAD_ARGSORT64);
}
