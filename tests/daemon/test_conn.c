/*
 * daemon/net/conn.c over real sockets: a small server built here as server.c builds its own
 * (a listening socket in a temporary directory, the connections' context, a CPU engine
 * thread), with clients that speak raw frames. The loop runs in the test's own thread, so the
 * test runs it until a client has something to read before each blocking read.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access.h"
#include "conn.h"
#include "dispatch.h"
#include "engines.h"
#include "harness.h"
#include "internal.h"
#include "suite.h"

#define CAPACITY (1u << 16)
#define PAGE 4096u
#define U32 SORTD__WIRE__KEY_TYPE__KEY_U32
#define NONE SORTD__WIRE__PAYLOAD__PAYLOAD_NONE

/* A second, in the loop's clock. */
#define SECOND_NS 1000000000ull

/* What server.c owns for its connections, and what the test saw of them. */
static struct {
        uv_loop_t loop;
        uv_pipe_t listener;
        char dir[64], path[128];
        sortd__conn_limits limits;
        sortd__access access;
        sortd__dispatch_env env;
        bool draining;
        sortd__stats stats;
        sortd__admission adm;
        sortd__hostpool pool; /* off */
        sortd__engines engines;
        sortd_engine *engine;
        sortd__region_limits regions;
        sortd__conn_ctx ctx;
        sortd__conn *conns; /* the list the server keeps: newest first */
        uint64_t gone;      /* gone callbacks */
} srv;

static void facts(void *arg, sortd__reply_facts *f)
{
        (void)arg;
        *f = (sortd__reply_facts){
                .engine = "cpu",
                .device = "test",
                .capacity = CAPACITY,
                .stats = srv.stats,
                .limits = SORTD__WIRE__LIMITS__INIT,
        };
}

/* As server.c's on_conn_gone: off the list, and counted. */
static void on_gone(sortd__conn *c, void *arg)
{
        ck_assert_ptr_eq(arg, &srv);
        ck_assert_int_eq(c->state, SORTD__CONN_CLOSED);
        if (c->prev)
                c->prev->next = c->next;
        else
                srv.conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        srv.stats.connections--;
        srv.gone++;
}

/* As server.c's on_connection (and the listener's accept): a connection, listed, started. */
static void on_connection(uv_stream_t *server, int status)
{
        sortd__conn *c;

        ck_assert_int_eq(status, 0);
        c = sortd__conn_new(&srv.ctx);
        ck_assert_ptr_nonnull(c);
        c->next = srv.conns;
        if (srv.conns)
                srv.conns->prev = c;
        srv.conns = c;
        srv.stats.connections++;
        sortd__conn_start(c, server);
}

static void setup(void)
{
        sortd_engine_config ec = {.capacity = CAPACITY, .threads = 1};
        char why[256];

        memset(&srv, 0, sizeof(srv));
        strcpy(srv.dir, "/tmp/sortd-conn-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(srv.dir));
        snprintf(srv.path, sizeof(srv.path), "%s/sortd.sock", srv.dir);
        srv.limits = (sortd__conn_limits){
                .max_connections = 8,
                .max_pipeline = 16,
                .max_write_queue = 1u << 20,
        };
        srv.env = (sortd__dispatch_env){
                .capacity = CAPACITY,
                .max_request_bytes = 1u << 20,
                .max_drain_bytes = 1u << 16,
                .engine_kind = "cpu",
                .facts = facts,
        };
        srv.regions = (sortd__region_limits){.max_per_conn = 4, .max_bytes = 64 * PAGE};
        sortd__admission_init(&srv.adm, 64u << 20, &srv.stats);
        ck_assert_int_eq(sortd__hostpool_init(&srv.pool, NULL, 0, why, sizeof(why)), 0);
        ck_assert_int_eq(sortd__engines_init(&srv.engines, 0), 0); /* no sort on the loop */
        ck_assert_int_eq(sortd_engine_create("cpu", &ec, &srv.engine, why, sizeof(why)), SORTD_OK);
        ck_assert_int_eq(uv_loop_init(&srv.loop), 0);
        ck_assert_int_eq(sortd__engines_add_lane(&srv.engines, -1, srv.engine, NULL), 0);
        ck_assert_int_eq(
                sortd__engines_start(&srv.engines, &srv.loop, NULL, sortd__conn_complete, NULL), 0);
        ck_assert_int_eq(uv_pipe_init(&srv.loop, &srv.listener, 0), 0);
        ck_assert_int_eq(uv_pipe_bind(&srv.listener, srv.path), 0);
        ck_assert_int_eq(uv_listen((uv_stream_t *)&srv.listener, 8, on_connection), 0);
        srv.ctx = (sortd__conn_ctx){
                .loop = &srv.loop,
                .limits = &srv.limits,
                .access = &srv.access,
                .env = &srv.env,
                .draining = &srv.draining,
                .stats = &srv.stats,
                .adm = &srv.adm,
                .pool = &srv.pool,
                .engines = &srv.engines,
                .regions = &srv.regions,
                .gone = on_gone,
                .gone_arg = &srv,
        };
}

/* Runs the loop until *v is want (10 s at most). */
static void run_until(const uint64_t *v, uint64_t want)
{
        uint64_t deadline = uv_hrtime() + 10 * SECOND_NS;

        while (*v != want) {
                uv_run(&srv.loop, UV_RUN_NOWAIT);
                ck_assert_msg(uv_hrtime() < deadline, "still %llu, not %llu after 10 s",
                              (unsigned long long)*v, (unsigned long long)want);
                usleep(1000);
        }
}

/* As the server stops: the connections closed, then the engines, then the loop's handles. */
static void teardown(void)
{
        for (sortd__conn *c = srv.conns, *next; c; c = next) {
                next = c->next; /* unlinked only in its close callback */
                sortd__conn_close(c);
        }
        run_until(&srv.stats.connections, 0);
        ck_assert_ptr_null(srv.conns);
        sortd__engines_stop(&srv.engines);
        uv_close((uv_handle_t *)&srv.listener, NULL);
        ck_assert_int_eq(uv_run(&srv.loop, UV_RUN_DEFAULT), 0);
        ck_assert_int_eq(uv_loop_close(&srv.loop), 0);
        sortd__engines_destroy(&srv.engines);
        sortd_engine_destroy(srv.engine);
        sortd__hostpool_close(&srv.pool);
        ck_assert_uint_eq(srv.stats.inflight_bytes, 0);
        ck_assert_uint_eq(srv.regions.regions, 0);
        ck_assert_uint_eq(srv.regions.mapped_bytes, 0);
        unlink(srv.path);
        rmdir(srv.dir);
}

/* A client, once the server has accepted it (it is then srv.conns, the newest); one it
   refuses is counted in connections_total too. */
static int client(void)
{
        int fd = raw_connect(srv.path);

        run_until(&srv.stats.connections_total, srv.stats.connections_total + 1);
        return fd;
}

/* Runs the loop until fd has bytes to read, or its end (10 s at most). */
static void pump(int fd)
{
        uint64_t deadline = uv_hrtime() + 10 * SECOND_NS;
        struct pollfd p = {.fd = fd, .events = POLLIN};

        for (;;) {
                uv_run(&srv.loop, UV_RUN_NOWAIT);
                if (poll(&p, 1, 5) == 1)
                        return;
                ck_assert_msg(uv_hrtime() < deadline, "nothing to read within 10 s");
        }
}

static void expect(int fd, uint64_t id, sortd_status s, const char *text)
{
        pump(fd);
        raw_expect_reply(fd, id, s, text);
}

/* A ping answered with its nonce. */
static void round_trip(int fd, uint64_t id)
{
        Sortd__Wire__Reply *r;

        raw_send_ping(fd, id);
        pump(fd);
        r = raw_recv_reply(fd, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->id, id);
        ck_assert_int_eq(r->status, SORTD__WIRE__STATUS_CODE__OK);
        ck_assert_int_eq(r->body_case, SORTD__WIRE__REPLY__BODY_PING);
        sortd__wire__reply__free_unpacked(r, NULL);
}

/* len bytes into buf, the loop run while they come: a large reply leaves in several writes. */
static void recv_payload(int fd, void *buf, size_t len)
{
        uint8_t *p = buf;

        while (len) {
                ssize_t r;

                pump(fd);
                r = recv(fd, p, len, MSG_DONTWAIT);
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                ck_assert_msg(r > 0, "connection ended in a payload");
                p += r;
                len -= (size_t)r;
        }
}

/* Sends len bytes, the loop run whenever the socket is full: more than its buffer takes
   would block a client whose daemon runs on the same thread. */
static void send_pumped(int fd, const void *buf, size_t len)
{
        const uint8_t *p = buf;

        while (len) {
                ssize_t w = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                        uv_run(&srv.loop, UV_RUN_NOWAIT);
                        continue;
                }
                ck_assert_msg(w > 0, "send: %s", strerror(errno));
                p += w;
                len -= (size_t)w;
        }
}

/* The daemon closed fd's connection with nothing more to say; its close callback ran, the
   gone-th. */
static void expect_closed(int fd, uint64_t gone)
{
        char byte;
        ssize_t r;

        pump(fd);
        r = recv(fd, &byte, 1, MSG_DONTWAIT);
        ck_assert_msg(r == 0 || (r < 0 && errno == ECONNRESET), "not closed: %zd", r);
        run_until(&srv.gone, gone);
        close(fd);
}

/* The connection is still served: a ping gets its answer. */
static void expect_open(int fd, uint64_t gone)
{
        round_trip(fd, 99);
        ck_assert_uint_eq(srv.gone, gone);
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return (x > y) - (x < y);
}

/* n u32 keys of request seed, in no order. */
static void keys_of(uint32_t *k, size_t n, uint32_t seed)
{
        uint32_t x = seed * 2654435761u + 1;

        for (size_t i = 0; i < n; i++) {
                x = x * 1664525u + 1013904223u;
                k[i] = x;
        }
}

/* Appends to buf at *off an inline u32 sort's frame, id and n keys, then its keys. */
static void pack_sort(uint8_t *buf, size_t cap, size_t *off, uint64_t id, const uint32_t *keys,
                      size_t n)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Sort s = raw_sort_msg(U32, NONE, n);

        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = &s;
        *off += raw_pack_request(&req, n * 4, buf + *off, cap - *off);
        ck_assert_uint_le(*off + n * 4, cap);
        memcpy(buf + *off, keys, n * 4);
        *off += n * 4;
}

/* The next reply answers sort id: sorted, n keys; its payload's length. */
static uint64_t expect_sort_reply(int fd, uint64_t id, size_t n)
{
        Sortd__Wire__Reply *r;
        uint64_t plen;

        pump(fd);
        r = raw_recv_reply(fd, &plen);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->id, id);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "sort %llu: %s",
                      (unsigned long long)id, r->error);
        ck_assert_int_eq(r->body_case, SORTD__WIRE__REPLY__BODY_SORT);
        ck_assert_uint_eq(r->sort->n, n);
        sortd__wire__reply__free_unpacked(r, NULL);
        return plen;
}

/* The next reply answers the inline sort id with keys (n of them) in ascending order. */
static void expect_sorted(int fd, uint64_t id, const uint32_t *keys, size_t n)
{
        uint32_t *want = malloc(n * 4), *got = malloc(n * 4);

        ck_assert(want && got);
        ck_assert_uint_eq(expect_sort_reply(fd, id, n), n * 4);
        recv_payload(fd, got, n * 4);
        memcpy(want, keys, n * 4);
        qsort(want, n, 4, cmp_u32);
        ck_assert_mem_eq(got, want, n * 4);
        free(want);
        free(got);
}

/* A ping and its answer; the connection counted while it lasts, and gone once closed. */
START_TEST(ping_round_trip)
{
        int fd = client();

        ck_assert_uint_eq(srv.stats.connections_total, 1);
        ck_assert_uint_eq(srv.stats.connections, 1);
        ck_assert_ptr_nonnull(srv.conns);
        round_trip(fd, 1);
        ck_assert_uint_eq(srv.stats.requests_total, 1);
        ck_assert_uint_gt(srv.stats.bytes_in, SORTD__WIRE_HEADER_SIZE);
        ck_assert_uint_gt(srv.stats.bytes_out, SORTD__WIRE_HEADER_SIZE);
        close(fd);
        run_until(&srv.gone, 1);
        ck_assert_uint_eq(srv.stats.connections, 0);
        ck_assert_uint_eq(srv.stats.protocol_errors, 0);
}
END_TEST

/* Three sorts in one write, each with its payload: answered in request order, sorted. */
START_TEST(pipelined_sorts_in_order)
{
        static const size_t n[3] = {1000, 37, 5000};
        uint32_t *keys[3];
        size_t off = 0, cap = 64 * 1024;
        uint8_t *buf = malloc(cap);
        int fd = client();

        ck_assert_ptr_nonnull(buf);
        for (int i = 0; i < 3; i++) {
                keys[i] = malloc(n[i] * 4);
                ck_assert_ptr_nonnull(keys[i]);
                keys_of(keys[i], n[i], (uint32_t)i);
                pack_sort(buf, cap, &off, (uint64_t)i + 1, keys[i], n[i]);
        }
        raw_send_bytes(fd, buf, off);
        for (int i = 0; i < 3; i++)
                expect_sorted(fd, (uint64_t)i + 1, keys[i], n[i]);
        run_until(&srv.stats.sorts_ok, 3);
        ck_assert_uint_eq(srv.stats.keys_sorted, n[0] + n[1] + n[2]);
        ck_assert_uint_eq(srv.stats.sorts_failed, 0);
        expect_open(fd, 0);
        for (int i = 0; i < 3; i++)
                free(keys[i]);
        free(buf);
        close(fd);
}
END_TEST

/*
 * max-pipeline 1 and 2: of three sorts in one write, each one's payload waits in the
 * read-ahead until enough earlier ones are answered. At 1 the sort whose payload is arriving
 * must not count against the limit, or it stops its own payload for good.
 */
START_TEST(pipeline_limit_resumes)
{
        static const size_t n[3] = {300, 3000, 30};
        uint32_t *keys[3];
        size_t off = 0, cap = 64 * 1024;
        uint8_t *buf = malloc(cap);
        int fd;

        ck_assert_ptr_nonnull(buf);
        for (uint64_t limit = 1; limit <= 2; limit++) {
                srv.limits.max_pipeline = limit;
                fd = client();
                off = 0;
                for (int i = 0; i < 3; i++) {
                        keys[i] = malloc(n[i] * 4);
                        ck_assert_ptr_nonnull(keys[i]);
                        keys_of(keys[i], n[i], (uint32_t)i + 10);
                        pack_sort(buf, cap, &off, (uint64_t)i + 1, keys[i], n[i]);
                }
                raw_send_bytes(fd, buf, off);
                for (int i = 0; i < 3; i++)
                        expect_sorted(fd, (uint64_t)i + 1, keys[i], n[i]);
                expect_open(fd, limit - 1);
                for (int i = 0; i < 3; i++)
                        free(keys[i]);
                close(fd);
                run_until(&srv.gone, limit);
        }
        free(buf);
}
END_TEST

/* loop-sort-keys: a small sort that waits for nobody is sorted on the loop thread itself,
   one per read; the others of the same read go to the engine thread, answered in order. */
START_TEST(small_sort_on_the_loop)
{
        enum { N = 64 };
        uint32_t keys[3][N];
        uint8_t buf[4096];
        size_t off = 0;
        int fd = client();

        srv.engines.loop_sort_keys = N;
        for (int i = 0; i < 3; i++) {
                keys_of(keys[i], N, (uint32_t)i + 20);
                pack_sort(buf, sizeof(buf), &off, (uint64_t)i + 1, keys[i], N);
        }
        raw_send_bytes(fd, buf, off);
        for (int i = 0; i < 3; i++)
                expect_sorted(fd, (uint64_t)i + 1, keys[i], N);
        run_until(&srv.stats.sorts_ok, 3);
        ck_assert_uint_eq(srv.stats.loop_sorts, 1);
        close(fd);
}
END_TEST

/* A client that closes its socket with its sort still at the engine: the sort is cancelled,
   never answered nor counted done, and the connection goes once the engine gives it back. */
START_TEST(client_gone_cancels_its_sort)
{
        size_t n = CAPACITY, off = 0, cap = n * 4 + 256;
        uint32_t *keys = malloc(n * 4);
        uint8_t *buf = malloc(cap);
        int fd = client();

        ck_assert(keys && buf);
        keys_of(keys, n, 9);
        pack_sort(buf, cap, &off, 1, keys, n);
        send_pumped(fd, buf, off);
        close(fd);
        run_until(&srv.gone, 1);
        run_until(&srv.stats.cancelled, 1);
        ck_assert_uint_eq(srv.stats.sorts_ok, 0);
        ck_assert_uint_eq(srv.stats.sorts_failed, 0);
        ck_assert_uint_eq(srv.stats.protocol_errors, 0);
        free(keys);
        free(buf);
}
END_TEST

/* An fd that came with a frame that takes none is closed and refused; the stream goes on. */
START_TEST(stray_fd_refused)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Ping ping = SORTD__WIRE__PING__INIT;
        int fd = client(), stray = memfd_create("sortd-stray", MFD_CLOEXEC);

        ck_assert_int_ge(stray, 0);
        req.id = 1;
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &ping;
        raw_send_request_fds(fd, &req, &stray, 1);
        expect(fd, 1, SORTD_OK, NULL);
        expect(fd, 0, SORTD_E_PROTOCOL, "came with a frame that takes none");
        ck_assert_uint_eq(srv.stats.protocol_errors, 1);
        expect_open(fd, 0);
        close(stray);
        close(fd);
}
END_TEST

/* A client that shuts its sending side after its requests still gets every reply (a sort's
   from the engine thread, after the end of its stream), then the close. */
START_TEST(half_close_answers_then_closes)
{
        uint32_t keys[2000];
        size_t off = 0;
        uint8_t buf[16 * 1024];
        int fd = client();

        keys_of(keys, 2000, 7);
        pack_sort(buf, sizeof(buf), &off, 1, keys, 2000);
        raw_send_bytes(fd, buf, off);
        raw_send_ping(fd, 2);
        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        expect_sorted(fd, 1, keys, 2000);
        pump(fd);
        raw_expect_reply(fd, 2, SORTD_OK, NULL);
        expect_closed(fd, 1);
        ck_assert_uint_eq(srv.stats.connections, 0);
        ck_assert_uint_eq(srv.stats.cancelled, 0);
        ck_assert_uint_eq(srv.stats.sorts_ok, 1);
        /* Once only: nothing more comes for it. */
        for (int i = 0; i < 10; i++)
                uv_run(&srv.loop, UV_RUN_NOWAIT);
        ck_assert_uint_eq(srv.gone, 1);
}
END_TEST

/* A header that is no frame's: answered with id 0 and why, then the connection closes. */
START_TEST(bad_frame_header_closes)
{
        int fd = client();

        raw_send_frame(fd, 0xdeadbeef, SORTD__WIRE_VERSION, 4, 0, "abcd", 4);
        expect(fd, 0, SORTD_E_PROTOCOL, "bad frame magic 0xdeadbeef");
        expect_closed(fd, 1);
        ck_assert_uint_eq(srv.stats.protocol_errors, 1);
        ck_assert_uint_eq(srv.stats.requests_total, 0);
}
END_TEST

/* allow-uid names someone else: the client is told it is not served, then closed. */
START_TEST(access_denied)
{
        char uid[32], why[256];
        int fd;

        snprintf(uid, sizeof(uid), "%u", (unsigned)getuid() + 1);
        ck_assert_int_eq(sortd__access_set(&srv.access, false, uid, why, sizeof(why)), 0);
        fd = client();
        expect(fd, 0, SORTD_E_DENIED, NULL);
        expect_closed(fd, 1);
        ck_assert_uint_eq(srv.stats.connections_refused, 1);
        ck_assert_uint_eq(srv.stats.connections, 0);
        ck_assert_uint_eq(srv.stats.requests_total, 0);
}
END_TEST

/* One more than max-connections is told the daemon is busy, then closed. */
START_TEST(over_max_connections)
{
        int fd;

        srv.limits.max_connections = 0;
        fd = client();
        expect(fd, 0, SORTD_E_BUSY, "too many connections (max-connections = 0)");
        expect_closed(fd, 1);
        ck_assert_uint_eq(srv.stats.connections_refused, 1);
}
END_TEST

/* idle-timeout-ms: a connection with nothing in progress past it is closed, and counted. */
START_TEST(idle_timeout_closes)
{
        sortd__conn *c;
        int fd;

        srv.limits.idle_timeout_ms = 60000;
        fd = client();
        c = srv.conns;
        round_trip(fd, 1);
        sortd__conn_check_timeouts(c, uv_hrtime()); /* not idle that long yet */
        ck_assert_uint_eq(srv.stats.timed_out, 0);
        expect_open(fd, 0);
        sortd__conn_check_timeouts(c, uv_hrtime() + 120 * SECOND_NS);
        ck_assert_uint_eq(srv.stats.timed_out, 1);
        expect_closed(fd, 1);
}
END_TEST

/* frame-timeout-ms: a frame begun and left unfinished past it closes the connection. */
START_TEST(frame_timeout_closes)
{
        uint8_t half[SORTD__WIRE_HEADER_SIZE / 2] = {0x53, 0x52, 0x54, 0x44};
        sortd__conn *c;
        int fd;

        srv.limits.frame_timeout_ms = 60000;
        fd = client();
        c = srv.conns;
        raw_send_bytes(fd, half, sizeof(half));
        run_until(&srv.stats.bytes_in, sizeof(half));
        sortd__conn_check_timeouts(c, uv_hrtime());
        ck_assert_uint_eq(srv.stats.timed_out, 0);
        sortd__conn_check_timeouts(c, uv_hrtime() + 120 * SECOND_NS);
        ck_assert_uint_eq(srv.stats.timed_out, 1);
        expect_closed(fd, 1);
}
END_TEST

/* write-timeout-ms: a client that leaves its reply bytes untaken past it is closed; the reply
   still queued goes with the connection, and the memory it held comes back. */
START_TEST(write_timeout_closes_a_reader_that_stopped)
{
        size_t n = CAPACITY, off = 0, cap = n * 4 + 256;
        uint32_t *keys = malloc(n * 4);
        uint8_t *buf = malloc(cap);
        sortd__conn *c;
        int fd;

        ck_assert(keys && buf);
        srv.limits.write_timeout_ms = 60000;
        fd = client();
        c = srv.conns;
        /* The daemon's socket buffer made small (the daemon asks for 4 MiB, and wmem_max may
           grant it): most of the reply then waits in the write queue. */
        ck_assert_int_eq(uv_send_buffer_size((uv_handle_t *)&c->pipe, &(int){4096}), 0);
        keys_of(keys, n, 5);
        pack_sort(buf, cap, &off, 1, keys, n);
        send_pumped(fd, buf, off);
        run_until(&srv.stats.sorts_ok, 1);
        ck_assert_uint_gt(uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe), 0);
        sortd__conn_check_timeouts(c, uv_hrtime());
        ck_assert_uint_eq(srv.stats.timed_out, 0);
        sortd__conn_check_timeouts(c, uv_hrtime() + 120 * SECOND_NS);
        ck_assert_uint_eq(srv.stats.timed_out, 1);
        ck_assert(raw_wait_eof(fd, 10000)); /* what was sent, then the end */
        run_until(&srv.gone, 1);
        ck_assert_uint_eq(srv.stats.inflight_bytes, 0);
        close(fd);
        free(keys);
        free(buf);
}
END_TEST

/* With no timeouts set, however long a connection waits it stays. */
START_TEST(no_timeouts_leave_it_alone)
{
        sortd__conn *c;
        int fd = client();

        c = srv.conns;
        round_trip(fd, 1);
        sortd__conn_check_timeouts(c, uv_hrtime() + 3600 * SECOND_NS);
        ck_assert_uint_eq(srv.stats.timed_out, 0);
        expect_open(fd, 0);
        close(fd);
}
END_TEST

/* Draining: a connection between frames with nothing pending closes at once. */
START_TEST(draining_closes_idle)
{
        sortd__conn *c;
        int fd = client();

        c = srv.conns;
        round_trip(fd, 1);
        srv.draining = true;
        sortd__conn_update(c);
        ck_assert_int_ne(c->state, SORTD__CONN_OPEN);
        expect_closed(fd, 1);
        ck_assert_uint_eq(srv.stats.timed_out, 0);
}
END_TEST

/* Draining: a request the client sent before it knew is still read and answered, then the
   connection closes. */
START_TEST(draining_answers_what_came)
{
        sortd__conn *c;
        int fd = client();

        c = srv.conns;
        round_trip(fd, 1);
        raw_send_ping(fd, 2); /* in the daemon's socket now, not yet read */
        srv.draining = true;
        sortd__conn_update(c);
        ck_assert_int_eq(c->state, SORTD__CONN_OPEN);
        expect(fd, 2, SORTD_OK, NULL);
        expect_closed(fd, 1);
        ck_assert_uint_eq(srv.stats.requests_total, 2);
}
END_TEST

/*
 * A memfd region over the socket (its fd with the frame): registered, sorted in place, and
 * when the client goes, closed on the engine thread and unmapped with the connection.
 */
START_TEST(memfd_region_lives_with_its_connection)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        Sortd__Wire__Sort s = raw_sort_msg(U32, NONE, PAGE / 4);
        uint32_t keys[PAGE / 4], got[PAGE / 4];
        Sortd__Wire__Reply *r;
        int fd = client(), mfd = memfd_create("sortd-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        ck_assert_int_ge(mfd, 0);
        ck_assert_int_eq(ftruncate(mfd, PAGE), 0);
        ck_assert_int_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
        keys_of(keys, PAGE / 4, 3);
        ck_assert_int_eq(pwrite(mfd, keys, PAGE, 0), PAGE);

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
        reg.size = PAGE;
        req.id = 1;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = &reg;
        raw_send_request_fds(fd, &req, &mfd, 1);
        pump(fd);
        r = raw_recv_reply(fd, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "%s", r->error);
        ck_assert_int_eq(r->body_case, SORTD__WIRE__REPLY__BODY_REGISTER_REGION);
        ck_assert_uint_eq(r->register_region->region_id, 1);
        sortd__wire__reply__free_unpacked(r, NULL);
        ck_assert_uint_eq(srv.regions.regions, 1);

        rd.region_id = 1;
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &rd;
        raw_send_sort(fd, 2, &s, 0);
        ck_assert_uint_eq(expect_sort_reply(fd, 2, PAGE / 4), 0); /* the keys stay put */
        ck_assert_int_eq(pread(mfd, got, PAGE, 0), PAGE);
        qsort(keys, PAGE / 4, 4, cmp_u32);
        ck_assert_mem_eq(got, keys, PAGE);

        close(fd);
        run_until(&srv.gone, 1);
        run_until(&srv.regions.regions, 0); /* once the engine thread has closed it */
        ck_assert_uint_eq(srv.regions.mapped_bytes, 0);
        close(mfd);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("conn");
        TCase *tc = tcase_create("conn");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, ping_round_trip);
        tcase_add_test(tc, pipelined_sorts_in_order);
        tcase_add_test(tc, pipeline_limit_resumes);
        tcase_add_test(tc, small_sort_on_the_loop);
        tcase_add_test(tc, client_gone_cancels_its_sort);
        tcase_add_test(tc, stray_fd_refused);
        tcase_add_test(tc, half_close_answers_then_closes);
        tcase_add_test(tc, bad_frame_header_closes);
        tcase_add_test(tc, access_denied);
        tcase_add_test(tc, over_max_connections);
        tcase_add_test(tc, idle_timeout_closes);
        tcase_add_test(tc, frame_timeout_closes);
        tcase_add_test(tc, write_timeout_closes_a_reader_that_stopped);
        tcase_add_test(tc, no_timeouts_leave_it_alone);
        tcase_add_test(tc, draining_closes_idle);
        tcase_add_test(tc, draining_answers_what_came);
        tcase_add_test(tc, memfd_region_lives_with_its_connection);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
