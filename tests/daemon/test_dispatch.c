/*
 * daemon/request/dispatch.c alone, with no connection around it: what each request becomes
 * (answered in the pipeline, a sort to admit, a job for the engines, a payload to drop, a
 * stream to close) and what it counts. Its pipeline writes to one end of a socket pair on a
 * libuv loop, and the test reads the other end as a client would. The facts, the fd that
 * came with a frame and the engine thread's part are played by the test.
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

#include "dispatch.h"
#include "harness.h"
#include "hostpool.h"
#include "internal.h"
#include "message.h"
#include "suite.h"

#define CAPACITY 1000
#define MAX_REQUEST_BYTES 8192
#define MAX_DRAIN_BYTES 2048
#define PAGE 4096u

#define U8 SORTD__WIRE__KEY_TYPE__KEY_U8
#define U32 SORTD__WIRE__KEY_TYPE__KEY_U32
#define NONE SORTD__WIRE__PAYLOAD__PAYLOAD_NONE

/* The device this daemon would sort on, and its name as the refusals spell it. */
static const uint8_t our_uuid[SORTD_DEVICE_UUID_BYTES] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                          8, 9, 10, 11, 12, 13, 14, 15};
#define OUR_UUID_TEXT "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"

/* One connection's worth of what dispatch sees, and what the test saw of its calls. */
static struct {
        uv_loop_t loop;
        uv_pipe_t pipe; /* the daemon's end */
        int client;     /* the client's end */
        sortd__stats stats;
        sortd__admission adm;
        sortd__pipeline out;
        sortd__region_limits rlim;
        sortd__regions regions;
        sortd__hostpool pool; /* off: every buffer from the heap */
        sortd__dispatch_env env;
        sortd__engines engines; /* devices, and no engine thread: nothing is run */
        sortd__dispatch_ctx d;
        int facts_calls;
        int fd_result; /* what take_fd gives */
        int fd_calls;
        int writes_failed;
} fx;

static void facts(void *arg, sortd__reply_facts *f)
{
        ck_assert_ptr_eq(arg, &fx);
        fx.facts_calls++;
        *f = (sortd__reply_facts){
                .engine = "test-engine",
                .device = "test-device",
                .engine_reason = "chosen by the test",
                .capacity = CAPACITY,
                .stats = fx.stats,
                .limits = SORTD__WIRE__LIMITS__INIT, /* a message the reply packs */
        };
        f->limits.max_request_bytes = MAX_REQUEST_BYTES;
}

static int take_fd(void *arg)
{
        ck_assert_ptr_eq(arg, &fx);
        fx.fd_calls++;
        return fx.fd_result;
}

/* Only a reply the socket did not take whole comes here; none should fail. */
static void on_written(sortd__pipeline *p, int status)
{
        ck_assert_ptr_eq(p, &fx.out);
        fx.writes_failed += status < 0;
}

static void setup(void)
{
        char why[128];
        int sv[2];

        memset(&fx, 0, sizeof(fx));
        ck_assert_int_eq(uv_loop_init(&fx.loop), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_int_eq(uv_pipe_init(&fx.loop, &fx.pipe, 0), 0);
        ck_assert_int_eq(uv_pipe_open(&fx.pipe, sv[0]), 0);
        fx.client = sv[1];
        sortd__admission_init(&fx.adm, 1u << 20, &fx.stats);
        sortd__pipeline_init(&fx.out, (uv_stream_t *)&fx.pipe, "test client", &fx.adm, &fx.stats,
                             on_written);
        fx.rlim = (sortd__region_limits){.max_per_conn = 4, .max_bytes = 16 * PAGE};
        sortd__regions_init(&fx.regions, &fx.rlim);
        ck_assert_int_eq(sortd__hostpool_init(&fx.pool, NULL, 0, why, sizeof(why)), 0);
        fx.env = (sortd__dispatch_env){
                .capacity = CAPACITY,
                .max_request_bytes = MAX_REQUEST_BYTES,
                .max_drain_bytes = MAX_DRAIN_BYTES,
                .engine_kind = "test-kind",
                .facts = facts,
                .facts_arg = &fx,
        };
        ck_assert_int_eq(sortd__engines_init(&fx.engines, 0), 0);
        fx.env.engines = &fx.engines;
        fx.d = (sortd__dispatch_ctx){
                .env = &fx.env,
                .stats = &fx.stats,
                .out = &fx.out,
                .regions = &fx.regions,
                .name = "test client",
                .owner = &fx,
        };
        fx.fd_result = -ENOENT;
}

/* Everything goes, the loop closes with no handle left, and the client read every reply the
   test expected and no other (the next thing it reads is the end of the stream). */
static void teardown(void)
{
        char byte;

        sortd__pipeline_close(&fx.out);
        uv_close((uv_handle_t *)&fx.pipe, NULL);
        ck_assert_int_eq(uv_run(&fx.loop, UV_RUN_DEFAULT), 0);
        ck_assert_int_eq(uv_loop_close(&fx.loop), 0);
        ck_assert_int_eq(recv(fx.client, &byte, 1, MSG_DONTWAIT), 0);
        close(fx.client);
        sortd__regions_destroy(&fx.regions);
        ck_assert_uint_eq(fx.rlim.regions, 0);
        ck_assert_uint_eq(fx.rlim.mapped_bytes, 0);
        sortd__hostpool_close(&fx.pool);
        sortd__engines_destroy(&fx.engines);
        ck_assert_uint_eq(fx.stats.inflight_bytes, 0);
        ck_assert_int_eq(fx.writes_failed, 0);
}

/* The daemon serves our device, with one lane that never runs. */
static void serve_our_device(void)
{
        ck_assert_int_eq(sortd__engines_add_device(&fx.engines, our_uuid), 0);
        ck_assert_int_eq(sortd__engines_add_lane(&fx.engines, 0, NULL, NULL), 0);
}

static void ping(message *m, uint64_t id, uint64_t nonce)
{
        message_init(m, id);
        m->ping.nonce = nonce;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        m->req.ping = &m->ping;
}

static void sort(message *m, uint64_t id, Sortd__Wire__KeyType t, uint64_t n)
{
        message_init(m, id);
        m->sort.key_type = t;
        m->sort.payload = NONE;
        m->sort.n = n;
        m->sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        m->sort.inline_data = &m->inline_data;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        m->req.sort = &m->sort;
}

/* n u32 keys at keys_offset of region region_id. */
static void region_sort(message *m, uint64_t id, uint64_t region_id, uint64_t keys_offset,
                        uint64_t n)
{
        sort(m, id, U32, n);
        m->sort.data_case = SORTD__WIRE__SORT__DATA_REGION;
        m->sort.region = &m->region;
        m->region.region_id = region_id;
        m->region.keys_offset = keys_offset;
}

static void register_memfd(message *m, uint64_t id, uint64_t size)
{
        message_init(m, id);
        m->reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
        m->reg.size = size;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        m->req.register_region = &m->reg;
}

/* A CUDA IPC buffer of size bytes on the device uuid. */
static void register_cuda(message *m, uint64_t id, const uint8_t *uuid, uint64_t size)
{
        register_memfd(m, id, size);
        m->reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        memset(m->handle, 0xab, sizeof(m->handle));
        memcpy(m->uuid, uuid, sizeof(m->uuid));
        m->reg.cuda_ipc_handle = (ProtobufCBinaryData){sizeof(m->handle), m->handle};
        m->reg.device_uuid = (ProtobufCBinaryData){sizeof(m->uuid), m->uuid};
}

static void unregister(message *m, uint64_t id, uint64_t region_id)
{
        message_init(m, id);
        m->unreg.region_id = region_id;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_UNREGISTER_REGION;
        m->req.unregister_region = &m->unreg;
}

/* m's frame, whose payload is payload_len bytes, through dispatch; a job for the engines is
   taken by them (state QUEUED, as sortd__engines_submit leaves it); then whatever replies are
   ready go out. That is the connection's order: a job still DONE from its push would be
   written as a reply that could not be packed. */
static sortd__dispatch_action dispatch(const message *m, uint64_t payload_len)
{
        uint8_t buf[4096];
        size_t len = sortd__wire__request__get_packed_size(&m->req);
        sortd__dispatch_frame f = {
                .msg = buf,
                .len = len,
                .payload_len = payload_len,
                .t_frame = uv_hrtime(),
                .take_fd = take_fd,
                .take_fd_arg = &fx,
        };
        sortd__dispatch_action a;

        ck_assert_uint_le(len, sizeof(buf));
        sortd__wire__request__pack(&m->req, buf);
        a = sortd__dispatch_message(&fx.d, &f);
        if (a.todo == SORTD__DISPATCH_SUBMIT)
                a.job->state = SORTD__JOB_QUEUED;
        sortd__pipeline_flush(&fx.out);
        return a;
}

/* dispatch, which must have answered (or refused) in the pipeline and asked nothing more. */
static void dispatch_answered(const message *m, uint64_t payload_len)
{
        sortd__dispatch_action a = dispatch(m, payload_len);

        ck_assert_int_eq(a.todo, SORTD__DISPATCH_NOTHING);
        ck_assert_ptr_null(a.job);
        ck_assert(!a.discard && !a.close);
}

/* dispatch, which must hand a job of op to the engines. */
static sortd__job *dispatch_submitted(const message *m, sortd__job_op op)
{
        sortd__dispatch_action a = dispatch(m, 0);

        ck_assert_int_eq(a.todo, SORTD__DISPATCH_SUBMIT);
        ck_assert(!a.discard && !a.close);
        ck_assert_ptr_nonnull(a.job);
        ck_assert_int_eq(a.job->work.op, op);
        ck_assert_uint_eq(a.job->id, m->req.id);
        ck_assert_ptr_eq(a.job->owner, &fx);
        return a.job;
}

/* The engine thread's outcome for j, back on the loop as the connection takes it: a sort's
   regions let go, a region's open or close to dispatch; then the replies go out. */
static void engine_gives_back(sortd__job *j, sortd_status s, const char *why)
{
        j->work.status = s;
        snprintf(j->work.why, sizeof(j->work.why), "%s", why);
        if (sortd__job_is_sort(j)) {
                sortd__region_release_held(j);
        } else {
                sortd__dispatch_region_done(&fx.d, j);
        }
        j->state = SORTD__JOB_DONE;
        sortd__pipeline_flush(&fx.out);
}

/* Runs the loop until the client has bytes to read (10 s at most): then a read cannot block. */
static void pump(void)
{
        uint64_t deadline = uv_hrtime() + 10000000000ull;
        struct pollfd p = {.fd = fx.client, .events = POLLIN};

        for (;;) {
                uv_run(&fx.loop, UV_RUN_NOWAIT);
                if (poll(&p, 1, 5) == 1)
                        return;
                ck_assert_msg(uv_hrtime() < deadline, "no reply within 10 s");
        }
}

/* Nothing has been written for the client: a reply waits in the pipeline, or none came. */
static void expect_nothing(void)
{
        struct pollfd p = {.fd = fx.client, .events = POLLIN};

        uv_run(&fx.loop, UV_RUN_NOWAIT);
        ck_assert_int_eq(poll(&p, 1, 0), 0);
}

static void expect(uint64_t id, sortd_status s, const char *text)
{
        pump();
        raw_expect_reply(fx.client, id, s, text);
}

/* The next reply, which must answer id with SORTD_OK and the body body_case. */
static Sortd__Wire__Reply *expect_body(uint64_t id, Sortd__Wire__Reply__BodyCase body_case,
                                       uint64_t *plen)
{
        Sortd__Wire__Reply *r;

        pump();
        r = raw_recv_reply(fx.client, plen);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->id, id);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "status %d (%s)", r->status,
                      r->error);
        ck_assert_int_eq(r->body_case, body_case);
        return r;
}

static void expect_ping(uint64_t id, uint64_t nonce)
{
        Sortd__Wire__Reply *r = expect_body(id, SORTD__WIRE__REPLY__BODY_PING, NULL);

        ck_assert_uint_eq(r->ping->nonce, nonce);
        sortd__wire__reply__free_unpacked(r, NULL);
}

/* A sort's reply: OK, n, and plen payload bytes into keys. */
static void expect_sorted(uint64_t id, uint64_t n, void *keys, uint64_t plen)
{
        uint64_t got;
        Sortd__Wire__Reply *r = expect_body(id, SORTD__WIRE__REPLY__BODY_SORT, &got);

        ck_assert_uint_eq(r->sort->n, n);
        ck_assert_uint_eq(got, plen);
        if (plen)
                raw_recv_bytes(fx.client, keys, plen);
        sortd__wire__reply__free_unpacked(r, NULL);
}

static int is_closed(int fd)
{
        return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/* A memfd of size bytes as a client registers it: sealed against shrinking only. */
static int memfd(size_t size)
{
        int fd = memfd_create("sortd-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
        ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
        return fd;
}

/* RegisterRegion id with a memfd of size bytes: the fd that came is taken and closed, and a
   REGION_OPEN job for an OPENING region goes to the engines. */
static sortd__job *register_region(uint64_t id, uint64_t size)
{
        message m;
        sortd__job *j;
        int fd = memfd(size);

        register_memfd(&m, id, size);
        fx.fd_result = fd;
        fx.fd_calls = 0;
        j = dispatch_submitted(&m, SORTD__JOB_OP_REGION_OPEN);
        ck_assert_int_eq(fx.fd_calls, 1);
        ck_assert_msg(is_closed(fd), "the memfd taken was left open");
        fx.fd_result = -ENOENT;
        ck_assert_ptr_nonnull(j->work.region);
        ck_assert_int_eq(j->work.region->kind, SORTD__REGION_MEMFD);
        ck_assert_int_eq(j->work.region->state, SORTD__REGION_OPENING);
        ck_assert_uint_eq(j->work.region->bytes, size);
        ck_assert_ptr_nonnull(j->work.region->close_job);
        return j;
}

/* A region opened as the engine thread would: its reply names it. */
static sortd__region *open_region(uint64_t id, uint64_t size, uint64_t region_id)
{
        sortd__job *j = register_region(id, size);
        sortd__region *r = j->work.region;
        Sortd__Wire__Reply *reply;

        expect_nothing(); /* the reply waits for the engine */
        engine_gives_back(j, SORTD_OK, "");
        ck_assert_int_eq(r->state, SORTD__REGION_READY);
        reply = expect_body(id, SORTD__WIRE__REPLY__BODY_REGISTER_REGION, NULL);
        ck_assert_uint_eq(reply->register_region->region_id, region_id);
        ck_assert_uint_eq(r->id, region_id);
        sortd__wire__reply__free_unpacked(reply, NULL);
        return r;
}

/* Pings are answered at once, in order, and ask nothing of the connection nor the server. */
START_TEST(pings_in_order)
{
        message m;

        for (uint64_t id = 1; id <= 3; id++) {
                ping(&m, id, 0xfeed0000 + id);
                dispatch_answered(&m, 0);
        }
        for (uint64_t id = 1; id <= 3; id++)
                expect_ping(id, 0xfeed0000 + id);
        ck_assert_uint_eq(fx.stats.requests_total, 3);
        ck_assert_int_eq(fx.facts_calls, 0);
        ck_assert_int_eq(fx.fd_calls, 0);
}
END_TEST

/* Hello and Status report what the server's facts say now, asked once each. */
START_TEST(hello_and_status_ask_the_facts)
{
        message m;
        Sortd__Wire__Reply *r;

        message_init(&m, 5);
        m.hello.protocol_version = SORTD__WIRE_VERSION;
        m.hello.client_name = "unit test";
        m.req.body_case = SORTD__WIRE__REQUEST__BODY_HELLO;
        m.req.hello = &m.hello;
        dispatch_answered(&m, 0);
        ck_assert_int_eq(fx.facts_calls, 1);
        r = expect_body(5, SORTD__WIRE__REPLY__BODY_HELLO, NULL);
        ck_assert_str_eq(r->hello->engine, "test-engine");
        ck_assert_str_eq(r->hello->device, "test-device");
        ck_assert_uint_eq(r->hello->capacity, CAPACITY);
        ck_assert_uint_eq(r->hello->limits->max_request_bytes, MAX_REQUEST_BYTES);
        sortd__wire__reply__free_unpacked(r, NULL);

        message_init(&m, 6);
        m.req.body_case = SORTD__WIRE__REQUEST__BODY_STATUS;
        m.req.status = &m.status;
        dispatch_answered(&m, 0);
        ck_assert_int_eq(fx.facts_calls, 2);
        r = expect_body(6, SORTD__WIRE__REPLY__BODY_STATUS_REPLY, NULL);
        ck_assert_str_eq(r->status_reply->engine, "test-engine");
        ck_assert_str_eq(r->status_reply->engine_reason, "chosen by the test");
        /* The counters as the facts had them: the Status itself was counted first. */
        ck_assert_uint_eq(r->status_reply->requests_total, 2);
        sortd__wire__reply__free_unpacked(r, NULL);
}
END_TEST

/*
 * An inline sort's payload follows: it is admitted with a job reading it, in its place in the
 * pipeline, so a later ping's reply waits for it. Its buffer comes from the heap (the pool is
 * off), and the sort's reply carries the buffer back.
 */
START_TEST(inline_sort_admitted_in_order)
{
        uint32_t keys[10], got[10];
        sortd__dispatch_action a;
        message m;
        sortd__job *j;

        sort(&m, 1, U32, 10);
        a = dispatch(&m, sizeof(keys));
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        ck_assert(!a.discard && !a.close);
        j = a.job;
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(j->state, SORTD__JOB_READING);
        ck_assert_int_eq(j->work.op, SORTD__JOB_OP_SORT);
        ck_assert_uint_eq(j->work.n, 10);
        ck_assert_uint_eq(j->work.sizes.keys_bytes, sizeof(keys));
        ck_assert_uint_eq(j->work.sizes.vals_bytes, 0);
        ck_assert_uint_eq(j->work.sizes.request_len, sizeof(keys));
        ck_assert_uint_eq(j->work.sizes.reply_len, sizeof(keys));
        ck_assert_ptr_eq(j->owner, &fx);
        ck_assert_uint_eq(fx.stats.sort_requests, 1);

        ping(&m, 2, 22);
        dispatch_answered(&m, 0);
        expect_nothing(); /* the ping is answered after the sort */

        ck_assert_int_eq(sortd__dispatch_buffer(&fx.d, j, &fx.pool), 0);
        ck_assert_ptr_nonnull(j->buf);
        ck_assert_ptr_eq(j->work.keys, j->buf);
        ck_assert_ptr_null(j->work.vals);
        ck_assert_uint_ge(j->buf_bytes, sizeof(keys));
        ck_assert_uint_eq(fx.stats.host_pool_misses, 0); /* an off pool misses nothing */
        for (uint32_t i = 0; i < 10; i++)
                keys[i] = 100 + i;
        memcpy(j->work.keys, keys, sizeof(keys)); /* as the engine leaves them */
        engine_gives_back(j, SORTD_OK, "");
        expect_sorted(1, 10, got, sizeof(got));
        ck_assert_mem_eq(got, keys, sizeof(keys));
        expect_ping(2, 22);
        ck_assert_uint_eq(fx.stats.sorts_failed, 0);
}
END_TEST

/* A sort of nothing has nothing to read or sort: answered at once, and counted done. */
START_TEST(empty_sort_answered_at_once)
{
        message m;

        sort(&m, 3, U32, 0);
        dispatch_answered(&m, 0);
        expect_sorted(3, 0, NULL, 0);
        ck_assert_uint_eq(fx.stats.sorts_ok, 1);
        ck_assert_uint_eq(fx.stats.sort_requests, 1);
}
END_TEST

/*
 * A refused request's payload is dropped while the stream stays in sync, unless it is larger
 * than max-drain-bytes: then the stream closes after the replies.
 */
START_TEST(refused_payload_dropped_or_closed)
{
        sortd__dispatch_action a;
        message m;

        sort(&m, 1, U8, CAPACITY + 1); /* CAPACITY + 1 bytes: drained */
        a = dispatch(&m, CAPACITY + 1);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_NOTHING);
        ck_assert(a.discard && !a.close);
        expect(1, SORTD_E_CAPACITY, "above the engine's capacity");

        sort(&m, 2, U32, CAPACITY + 1); /* 4 (CAPACITY + 1) bytes: over MAX_DRAIN_BYTES */
        a = dispatch(&m, 4 * (CAPACITY + 1));
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_NOTHING);
        ck_assert(!a.discard && a.close);
        expect(2, SORTD_E_CAPACITY, "above the engine's capacity");
        ck_assert_uint_eq(fx.stats.rejected, 2);

        /* A payload with a request that takes none: answered, refused too, and dropped. */
        ping(&m, 3, 33);
        a = dispatch(&m, 16);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_NOTHING);
        ck_assert(a.discard && !a.close);
        expect_ping(3, 33);
        expect(3, SORTD_E_PROTOCOL, "unexpected payload of 16 bytes");
        ck_assert_uint_eq(fx.stats.protocol_errors, 1);
}
END_TEST

/* A memfd region whose fd did not come, or could not be taken: refused, nothing registered. */
START_TEST(register_without_its_fd)
{
        message m;

        register_memfd(&m, 1, PAGE);
        fx.fd_result = -ENOENT;
        dispatch_answered(&m, 0);
        expect(1, SORTD_E_INVAL, "without its memfd");

        register_memfd(&m, 2, PAGE);
        fx.fd_result = -EBADF;
        dispatch_answered(&m, 0);
        expect(2, SORTD_E_SYSTEM, strerror(EBADF));
        ck_assert_int_eq(fx.fd_calls, 2);
        ck_assert_uint_eq(fx.regions.count, 0);
        ck_assert_uint_eq(fx.rlim.regions, 0);
}
END_TEST

/*
 * A memfd region: its open goes to the engines and its reply waits for them; once open, a
 * sort finds it and holds it; when the connection closes, its own close job (made with it)
 * comes back to be handed to the engines.
 */
START_TEST(memfd_region_opened_used_and_closed)
{
        sortd__region *r = open_region(7, 4 * PAGE, 1);
        sortd__job *j;
        message m;

        ck_assert_uint_eq(fx.rlim.regions, 1);
        ck_assert_uint_eq(fx.rlim.mapped_bytes, 4 * PAGE);

        region_sort(&m, 8, 1, 64, 16);
        j = dispatch_submitted(&m, SORTD__JOB_OP_SORT);
        ck_assert(j->work.shared);
        ck_assert_ptr_eq(j->keys_rg, r);
        ck_assert_ptr_eq(j->work.keys, r->base + 64);
        ck_assert_uint_eq(r->users, 1);
        engine_gives_back(j, SORTD_OK, "");
        expect_sorted(8, 16, NULL, 0); /* the keys stay in the client's memory */
        ck_assert_uint_eq(r->users, 0);

        j = sortd__dispatch_closing(&fx.d);
        ck_assert_ptr_nonnull(j);
        ck_assert_ptr_null(j->qnext); /* one region, one close */
        ck_assert_int_eq(j->work.op, SORTD__JOB_OP_REGION_CLOSE);
        ck_assert_ptr_eq(j->work.region, r);
        ck_assert_ptr_eq(j->owner, &fx);
        ck_assert_ptr_null(r->close_job); /* the caller's now */
        sortd__job_free(j);
}
END_TEST

/* A region the engine could not open is refused with the engine's reason, and gone. */
START_TEST(region_open_failed)
{
        sortd__job *j = register_region(4, PAGE);

        engine_gives_back(j, SORTD_E_DEVICE, "pinning refused by the test");
        expect(4, SORTD_E_DEVICE, "pinning refused by the test");
        ck_assert_uint_eq(fx.regions.count, 0);
        ck_assert_uint_eq(fx.rlim.regions, 0);
        ck_assert_uint_eq(fx.rlim.mapped_bytes, 0);
        ck_assert_ptr_null(sortd__dispatch_closing(&fx.d));
}
END_TEST

/* Unregistering: refused while a sort holds the region, then closed by the engines, gone. */
START_TEST(unregister_after_its_sorts)
{
        sortd__region *r = open_region(1, PAGE, 1);
        sortd__job *held, *j;
        message m;

        region_sort(&m, 2, 1, 0, 8);
        held = dispatch_submitted(&m, SORTD__JOB_OP_SORT);
        unregister(&m, 3, 1);
        dispatch_answered(&m, 0);
        unregister(&m, 4, 99);
        dispatch_answered(&m, 0);
        engine_gives_back(held, SORTD_OK, "");
        expect_sorted(2, 8, NULL, 0);
        expect(3, SORTD_E_BUSY, "in use");
        expect(4, SORTD_E_INVAL, "no region 99");

        unregister(&m, 5, 1);
        j = dispatch_submitted(&m, SORTD__JOB_OP_REGION_CLOSE);
        ck_assert_ptr_eq(j->work.region, r);
        ck_assert_int_eq(r->state, SORTD__REGION_CLOSING);
        engine_gives_back(j, SORTD_OK, "");
        sortd__wire__reply__free_unpacked(
                expect_body(5, SORTD__WIRE__REPLY__BODY_UNREGISTER_REGION, NULL), NULL);
        ck_assert_uint_eq(fx.regions.count, 0);
        ck_assert_uint_eq(fx.rlim.mapped_bytes, 0);
        ck_assert_ptr_null(sortd__dispatch_closing(&fx.d));
}
END_TEST

/*
 * A CUDA region: refused by a daemon that sorts in host memory (naming what it sorts on), and
 * by one on another device (naming both); on this daemon's device it goes to the engines,
 * bound to that device, with no fd asked for.
 */
START_TEST(cuda_region_device)
{
        static const uint8_t other[SORTD_DEVICE_UUID_BYTES] = {0xff};
        sortd__job *j;
        message m;

        register_cuda(&m, 1, our_uuid, PAGE);
        dispatch_answered(&m, 0);
        expect(1, SORTD_E_UNSUPPORTED, "(test-kind)");

        serve_our_device();
        register_cuda(&m, 2, other, PAGE);
        dispatch_answered(&m, 0);
        expect(2, SORTD_E_INVAL,
               "on device GPU-ff000000-0000-0000-0000-000000000000, which this daemon does not "
               "serve; it serves " OUR_UUID_TEXT);
        ck_assert_uint_eq(fx.regions.count, 0);

        register_cuda(&m, 3, our_uuid, PAGE);
        j = dispatch_submitted(&m, SORTD__JOB_OP_REGION_OPEN);
        ck_assert_int_eq(j->device, 0);
        ck_assert_int_eq(j->work.region->device, 0);
        ck_assert_int_eq(j->work.region->kind, SORTD__REGION_CUDA);
        ck_assert_uint_eq(j->work.region->bytes, PAGE);
        ck_assert_mem_eq(j->work.region->ipc_handle, m.handle, sizeof(m.handle));
        engine_gives_back(j, SORTD_E_DEVICE, "no such allocation");
        expect(3, SORTD_E_DEVICE, "no such allocation");
        ck_assert_uint_eq(fx.regions.count, 0);
        ck_assert_int_eq(fx.fd_calls, 0);
}
END_TEST

/*
 * A sort that chooses its device: one the daemon serves is where it goes; one it does not is
 * refused naming both, its payload dropped, the sort failed; a UUID of the wrong length is a
 * bad request.
 */
START_TEST(sort_chooses_device)
{
        static const uint8_t other[SORTD_DEVICE_UUID_BYTES] = {0xee};
        sortd__dispatch_action a;
        message m;

        serve_our_device();
        sort(&m, 1, U32, 10);
        m.sort.device_uuid.data = (uint8_t *)our_uuid;
        m.sort.device_uuid.len = sizeof(our_uuid);
        a = dispatch(&m, 40);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        ck_assert_int_eq(a.job->device, 0);
        engine_gives_back(a.job, SORTD_E_DEVICE, "given back");

        sort(&m, 2, U32, 10);
        m.sort.device_uuid.data = (uint8_t *)other;
        m.sort.device_uuid.len = sizeof(other);
        a = dispatch(&m, 40);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_NOTHING);
        ck_assert(a.discard && !a.close);
        expect(1, SORTD_E_DEVICE, "given back");
        expect(2, SORTD_E_INVAL, "which this daemon does not serve; it serves " OUR_UUID_TEXT);

        sort(&m, 3, U32, 10);
        m.sort.device_uuid.data = (uint8_t *)other;
        m.sort.device_uuid.len = 3;
        a = dispatch(&m, 40);
        ck_assert(a.discard);
        expect(3, SORTD_E_INVAL, "device_uuid has 3 bytes");
        ck_assert_uint_eq(fx.stats.sorts_failed, 2);
}
END_TEST

/* A region sort naming a region this connection does not have: refused, and failed. */
START_TEST(region_sort_unknown_region)
{
        message m;

        region_sort(&m, 9, 7, 0, 16);
        dispatch_answered(&m, 0);
        expect(9, SORTD_E_INVAL, "no region 7");
        ck_assert_uint_eq(fx.stats.sorts_failed, 1);
        ck_assert_uint_eq(fx.stats.sort_requests, 1);
        ck_assert_uint_eq(fx.stats.sorts_ok, 0);
}
END_TEST

/* A sort whose buffer cannot be had is done with SORTD_E_NOMEM, answered in its place. */
START_TEST(buffer_unavailable)
{
        sortd__dispatch_action a;
        message m;

        sort(&m, 6, U32, 10);
        a = dispatch(&m, 40);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        a.job->parts.keys = (uint64_t)1 << 60; /* more than any system gives */
        ck_assert_int_eq(sortd__dispatch_buffer(&fx.d, a.job, &fx.pool), -ENOMEM);
        ck_assert_int_eq(a.job->state, SORTD__JOB_DONE);
        ck_assert_int_eq(a.job->work.status, SORTD_E_NOMEM);
        ck_assert_ptr_null(a.job->buf);
        ck_assert_uint_eq(fx.stats.sorts_failed, 1);
        sortd__pipeline_flush(&fx.out);
        expect(6, SORTD_E_NOMEM, "cannot allocate");
}
END_TEST

/* A stream that cannot be parsed: counted, and answered with id 0 and why. */
START_TEST(broken_stream)
{
        sortd__dispatch_broken(&fx.d, SORTD_E_PROTOCOL, "bad frame magic from the test");
        sortd__pipeline_flush(&fx.out);
        ck_assert_uint_eq(fx.stats.protocol_errors, 1);
        expect(0, SORTD_E_PROTOCOL, "bad frame magic from the test");
}
END_TEST

/* ---- segments and top-k (dispatch_segments.c) ---- */

#define OFF32 SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32
#define OFF64 SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64

static void with_offsets(message *m, Sortd__Wire__Segments__OffsetType t, uint64_t count,
                         uint64_t region_id, uint64_t offset)
{
        m->sort.segments = &m->segments;
        m->segments.offset_type = t;
        m->segments.count = count;
        m->segments.offsets_region_id = region_id;
        m->segments.offsets_offset = offset;
}

/* The sort's reply is written once its job is done: status s. */
static void finish(sortd__job *j, sortd_status s)
{
        j->work.status = s;
        j->state = SORTD__JOB_DONE;
        sortd__pipeline_flush(&fx.out);
}

/* An inline sort's offsets follow its keys into the daemon's buffer, and are checked there. */
START_TEST(inline_offsets_checked_in_the_buffer)
{
        static const uint32_t good[3] = {0, 3, 8}, bad[3] = {0, 9, 8};
        sortd__dispatch_action a;
        message m;

        sort(&m, 1, U32, 8);
        with_offsets(&m, OFF32, 2, 0, 0);
        a = dispatch(&m, 32 + 12);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        ck_assert(a.job->work.segmented);
        ck_assert_uint_eq(a.job->parts.keys, 32);
        ck_assert_uint_eq(a.job->parts.offsets, 12);
        ck_assert_uint_eq(sortd__job_buffer_bytes(a.job), 32 + 16);
        ck_assert_int_eq(sortd__dispatch_buffer(&fx.d, a.job, &fx.pool), 0);
        ck_assert_ptr_eq(a.job->work.seg.offsets, a.job->buf + 32);
        memcpy((void *)a.job->work.seg.offsets, good, sizeof(good));
        ck_assert_int_eq(sortd__dispatch_segments_ready(a.job), 0);
        memcpy((void *)a.job->work.seg.offsets, bad, sizeof(bad));
        ck_assert_int_eq(sortd__dispatch_segments_ready(a.job), -EINVAL);
        ck_assert_msg(strstr(a.job->work.why, "offsets[1] = 9 past n = 8"), "%s", a.job->work.why);
        finish(a.job, SORTD_E_INVAL);
        expect(1, SORTD_E_INVAL, "offsets[1] = 9 past n = 8");
}
END_TEST

/* An inline top-k's reply is its results: k keys of each segment, no more. */
START_TEST(inline_topk_replies_its_results)
{
        static const uint32_t results[2] = {3, 4};
        sortd__dispatch_action a;
        uint32_t got[2];
        message m;

        sort(&m, 2, U32, 8);
        m.sort.k = 2;
        a = dispatch(&m, 32);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        ck_assert_int_eq(sortd__dispatch_buffer(&fx.d, a.job, &fx.pool), 0);
        ck_assert_int_eq(sortd__dispatch_segments_ready(a.job), 0);
        ck_assert_uint_eq(a.job->work.results, 2);
        ck_assert_ptr_nonnull(a.job->work.out_keys);
        ck_assert_ptr_null(a.job->work.out_vals);
        memcpy(a.job->work.out_keys, results, sizeof(results));
        finish(a.job, SORTD_OK);
        expect_sorted(2, 8, got, sizeof(got));
        ck_assert_mem_eq(got, results, sizeof(results));
}
END_TEST

/* A region sort whose offsets lie in a region: admitted for their copy's bytes, then given its
   buffer as any sort (intake.c), the offsets copied there and checked. */
static sortd__job *admit_region_offsets(const message *m)
{
        sortd__dispatch_action a = dispatch(m, 0);

        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        ck_assert(!a.discard && !a.close);
        ck_assert_int_eq(sortd__dispatch_buffer(&fx.d, a.job, &fx.pool), 0);
        return a.job;
}

/* Offsets in a memfd region are copied before they are checked: what the client writes there
   afterwards is not what the engine reads. Outside the region, or wrong, they are refused. */
START_TEST(region_offsets_copied_then_checked)
{
        sortd__region *r = open_region(1, 4 * PAGE, 1);
        uint64_t *shared = (uint64_t *)(void *)(r->base + 1024);
        sortd__job *j;
        message m;

        shared[0] = 0, shared[1] = 5, shared[2] = 16;
        region_sort(&m, 2, 1, 0, 16);
        with_offsets(&m, OFF64, 2, 1, 1024);
        j = admit_region_offsets(&m);
        ck_assert_uint_eq(sortd__job_buffer_bytes(j), 32); /* the copy's, on 16 bytes */
        ck_assert_int_eq(sortd__dispatch_segments_ready(j), 0);
        ck_assert_ptr_ne(j->work.seg.offsets, shared);
        shared[1] = 99; /* the client's process writes on */
        ck_assert_uint_eq(((const uint64_t *)j->work.seg.offsets)[1], 5);
        ck_assert_uint_eq(r->users, 2); /* the keys', the offsets' */
        engine_gives_back(j, SORTD_OK, "");
        expect_sorted(2, 16, NULL, 0); /* no payload: the buffer held offsets only */
        ck_assert_uint_eq(r->users, 0);

        region_sort(&m, 3, 1, 0, 16); /* 99 > n */
        with_offsets(&m, OFF64, 2, 1, 1024);
        j = admit_region_offsets(&m);
        ck_assert_int_eq(sortd__dispatch_segments_ready(j), -EINVAL);
        sortd__region_release_held(j);
        finish(j, SORTD_E_INVAL);
        expect(3, SORTD_E_INVAL, "offsets[1] = 99 past n = 16");
        region_sort(&m, 4, 1, 0, 16);
        with_offsets(&m, OFF64, 2, 1, 4 * PAGE - 16);
        dispatch_answered(&m, 0);
        expect(4, SORTD_E_INVAL, "pass the end of region 1");
        region_sort(&m, 5, 1, 0, 16);
        with_offsets(&m, OFF64, 2, 7, 0);
        dispatch_answered(&m, 0);
        expect(5, SORTD_E_INVAL, "no region 7");
        ck_assert_uint_eq(r->users, 0);
        ck_assert_uint_eq(fx.stats.sorts_failed, 2); /* refused by dispatch; intake counts the
                                                        third */
        sortd__job_free(sortd__dispatch_closing(&fx.d));
}
END_TEST

/* A region sort's payload is its offsets: admitted, read, then checked like any. */
START_TEST(region_offsets_in_the_payload)
{
        static const uint32_t offsets[3] = {0, 10, 16};
        sortd__region *r = open_region(1, PAGE, 1);
        sortd__dispatch_action a;
        message m;

        region_sort(&m, 2, 1, 0, 16);
        with_offsets(&m, OFF32, 2, 0, 0);
        a = dispatch(&m, 12);
        ck_assert_int_eq(a.todo, SORTD__DISPATCH_ADMIT);
        ck_assert(!a.discard);
        ck_assert_uint_eq(sortd__job_buffer_bytes(a.job), 16); /* the offsets alone */
        ck_assert_uint_eq(r->users, 1);
        ck_assert_int_eq(sortd__dispatch_buffer(&fx.d, a.job, &fx.pool), 0);
        ck_assert_ptr_eq(a.job->work.keys, r->base); /* the keys stay the client's */
        memcpy((void *)a.job->work.seg.offsets, offsets, sizeof(offsets));
        ck_assert_int_eq(sortd__dispatch_segments_ready(a.job), 0);
        engine_gives_back(a.job, SORTD_OK, "");
        expect_sorted(2, 16, NULL, 0);
        ck_assert_uint_eq(r->users, 0);
        sortd__job_free(sortd__dispatch_closing(&fx.d));
}
END_TEST

/* A region top-k's results: their spans found once the results are counted, within their
   region, apart from the inputs; its regions held until it is done. */
START_TEST(region_topk_out_spans)
{
        sortd__region *r = open_region(1, 4 * PAGE, 1);
        sortd__job *j;
        message m;

        region_sort(&m, 2, 1, 0, 16);
        m.sort.segments = &m.segments;
        m.segments.count = 2;
        m.segments.row_len = 8;
        m.sort.k = 3;
        m.sort.topk_out = &m.topk_out;
        m.topk_out.keys_region_id = 1;
        m.topk_out.keys_offset = 1024;
        j = dispatch_submitted(&m, SORTD__JOB_OP_SORT);
        ck_assert_uint_eq(j->work.results, 6);
        ck_assert_ptr_eq(j->work.out_keys, r->base + 1024);
        ck_assert_uint_eq(r->users, 2);
        engine_gives_back(j, SORTD_OK, "");
        expect_sorted(2, 16, NULL, 0);

        m.req.id = 3;
        m.topk_out.keys_offset = 32; /* inside the keys */
        dispatch_answered(&m, 0);
        expect(3, SORTD_E_INVAL, "overlaps the sort's keys");
        m.req.id = 4;
        m.topk_out.keys_offset = 4 * PAGE - 20; /* 6 x 4 bytes do not fit */
        dispatch_answered(&m, 0);
        expect(4, SORTD_E_INVAL, "pass the end of region 1");
        m.req.id = 5;
        m.topk_out.keys_region_id = 9;
        dispatch_answered(&m, 0);
        expect(5, SORTD_E_INVAL, "no region 9 on this connection (top-k keys)");
        ck_assert_uint_eq(r->users, 0);
        sortd__job_free(sortd__dispatch_closing(&fx.d));
}
END_TEST

/* Our device served, memfd region 1 (into *hr) and CUDA region 2 (returned), which the engine
   opened at 0x10000. */
static sortd__region *memfd_and_cuda_regions(message *m, sortd__region **hr)
{
        sortd__job *j;
        sortd__region *cr;

        serve_our_device();
        *hr = open_region(1, PAGE, 1);
        register_cuda(m, 2, our_uuid, PAGE);
        j = dispatch_submitted(m, SORTD__JOB_OP_REGION_OPEN);
        cr = j->work.region;
        cr->base = (uint8_t *)0x10000; /* where the engine opened it */
        engine_gives_back(j, SORTD_OK, "");
        sortd__wire__reply__free_unpacked(
                expect_body(2, SORTD__WIRE__REPLY__BODY_REGISTER_REGION, NULL), NULL);
        return cr;
}

/* The connection closed: its regions' jobs freed, the CUDA region cr's closed by the engine. */
static void close_regions(sortd__region *cr)
{
        for (sortd__job *c = sortd__dispatch_closing(&fx.d), *next; c; c = next) {
                next = c->qnext;
                if (c->work.region == cr)
                        cr->base = NULL; /* the engine closes it: nothing to unmap here */
                sortd__job_free(c);
        }
}

/* A CUDA region sort: its offsets must come from host memory, its results go to device
   memory; and it runs on its device, as any sort of that region. */
START_TEST(cuda_region_segments)
{
        sortd__job *j;
        sortd__region *cr, *hr;
        message m;

        cr = memfd_and_cuda_regions(&m, &hr);

        region_sort(&m, 3, 2, 0, 16);
        with_offsets(&m, OFF64, 2, 2, 0);
        dispatch_answered(&m, 0);
        expect(3, SORTD_E_INVAL, "must lie in a memfd region");

        region_sort(&m, 4, 2, 0, 16);
        m.sort.k = 2;
        m.sort.topk_out = &m.topk_out;
        m.topk_out.keys_region_id = 1; /* host memory */
        dispatch_answered(&m, 0);
        expect(4, SORTD_E_INVAL, "region of the inputs' kind");

        region_sort(&m, 5, 2, 0, 16);
        m.sort.k = 2;
        m.sort.topk_out = &m.topk_out;
        m.topk_out.keys_region_id = 2;
        m.topk_out.keys_offset = 1024;
        j = dispatch_submitted(&m, SORTD__JOB_OP_SORT_DEVICE);
        ck_assert_int_eq(sortd__job_memory(j), SORTD_MEMORY_DEVICE);
        ck_assert_ptr_eq(j->work.out_keys, cr->base + 1024);
        engine_gives_back(j, SORTD_OK, "");
        expect_sorted(5, 16, NULL, 0);
        ck_assert_uint_eq(cr->users + hr->users, 0);
        close_regions(cr);
}
END_TEST

/* A region sort by a u32 and a u128 column of 16 rows (64 + 256 bytes of columns at
   keys_offset), their permutation (argsort32) in vals_region at vals_offset. */
static void columns_sort(message *m, uint64_t id, uint64_t region_id, uint64_t keys_offset,
                         uint64_t vals_region, uint64_t vals_offset)
{
        region_sort(m, id, region_id, keys_offset, 16);
        m->sort.key_type = SORTD__WIRE__KEY_TYPE__KEY_TYPE_UNSET;
        m->sort.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32;
        m->sort.n_columns = 2;
        m->sort.columns = m->columns;
        m->column[0].key_type = U32;
        m->column[1].key_type = SORTD__WIRE__KEY_TYPE__KEY_U128;
        m->column[1].order = SORTD__WIRE__ORDER__DESCENDING;
        m->region.vals_region_id = vals_region;
        m->region.vals_offset = vals_offset;
}

/* Key columns in a CUDA region: sorted in device memory on its device, the permutation in
   that region too; with it in a memfd region, or the columns in one and the permutation in
   the CUDA region, refused before any engine sees it, naming both kinds. */
START_TEST(cuda_region_columns)
{
        sortd__job *j;
        sortd__region *cr, *hr;
        message m;

        cr = memfd_and_cuda_regions(&m, &hr);

        columns_sort(&m, 3, 2, 64, 0, 512);
        j = dispatch_submitted(&m, SORTD__JOB_OP_SORT_DEVICE);
        ck_assert_int_eq(sortd__job_memory(j), SORTD_MEMORY_DEVICE);
        ck_assert_uint_eq(j->work.cols.count, 2);
        ck_assert_ptr_eq(j->work.keys, cr->base + 64);
        ck_assert_ptr_eq(j->work.vals, cr->base + 512);
        ck_assert_ptr_eq(j->keys_rg, cr);
        ck_assert_ptr_eq(j->vals_rg, cr);
        ck_assert_uint_eq(cr->users, 2);
        engine_gives_back(j, SORTD_OK, "");
        expect_sorted(3, 16, NULL, 0);

        columns_sort(&m, 4, 2, 64, 1, 512);
        dispatch_answered(&m, 0);
        expect(4, SORTD_E_INVAL,
               "the key columns are in device memory (a CUDA region) and the values in host "
               "memory (a memfd region): both must be in host memory (memfd regions) or both in "
               "device memory (CUDA regions)");
        columns_sort(&m, 5, 1, 64, 2, 512);
        dispatch_answered(&m, 0);
        expect(5, SORTD_E_INVAL,
               "the key columns are in host memory (a memfd region) and the values in device "
               "memory (a CUDA region)");
        /* the columns' buffer is checked in the CUDA region as in a memfd one */
        columns_sort(&m, 6, 2, PAGE - 304, 0, 0);
        dispatch_answered(&m, 0);
        expect(6, SORTD_E_INVAL, "key columns at offset 3792, 20 x 16 bytes, pass the end");
        ck_assert_uint_eq(fx.stats.sorts_failed, 3);
        ck_assert_uint_eq(cr->users + hr->users, 0);
        close_regions(cr);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("dispatch");
        TCase *tc = tcase_create("dispatch");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, pings_in_order);
        tcase_add_test(tc, hello_and_status_ask_the_facts);
        tcase_add_test(tc, inline_sort_admitted_in_order);
        tcase_add_test(tc, empty_sort_answered_at_once);
        tcase_add_test(tc, refused_payload_dropped_or_closed);
        tcase_add_test(tc, register_without_its_fd);
        tcase_add_test(tc, memfd_region_opened_used_and_closed);
        tcase_add_test(tc, region_open_failed);
        tcase_add_test(tc, unregister_after_its_sorts);
        tcase_add_test(tc, cuda_region_device);
        tcase_add_test(tc, region_sort_unknown_region);
        tcase_add_test(tc, sort_chooses_device);
        tcase_add_test(tc, buffer_unavailable);
        tcase_add_test(tc, broken_stream);
        tcase_add_test(tc, inline_offsets_checked_in_the_buffer);
        tcase_add_test(tc, inline_topk_replies_its_results);
        tcase_add_test(tc, region_offsets_copied_then_checked);
        tcase_add_test(tc, region_offsets_in_the_payload);
        tcase_add_test(tc, region_topk_out_spans);
        tcase_add_test(tc, cuda_region_segments);
        tcase_add_test(tc, cuda_region_columns);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
