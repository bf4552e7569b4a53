/*
 * daemon/request/request.c on its own: each kind of request, packed as a client would, decoded
 * against small limits; what it answers, the refusals in order with their status and message, and
 * the counters it bumps.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "internal.h"
#include "message.h"

#define CAPACITY 1000
#define MAX_REQUEST_BYTES 4096

static const sortd__request_limits limits = {
        .capacity = CAPACITY,
        .max_request_bytes = MAX_REQUEST_BYTES,
};

static void hello(message *m, uint32_t version)
{
        m->hello.protocol_version = version;
        m->hello.client_name = "unit test";
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_HELLO;
        m->req.hello = &m->hello;
}

static void sort(message *m, Sortd__Wire__KeyType t, Sortd__Wire__Payload p, uint64_t n)
{
        m->sort.key_type = t;
        m->sort.payload = p;
        m->sort.n = n;
        m->sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        m->sort.inline_data = &m->inline_data;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        m->req.sort = &m->sort;
}

#define U32 SORTD__WIRE__KEY_TYPE__KEY_U32
#define NONE SORTD__WIRE__PAYLOAD__PAYLOAD_NONE

static const struct request_case {
        const char *name;
        void (*build)(message *m);
        uint64_t payload_len;
        sortd__request_kind kind;
        sortd_status status[2]; /* of the refusals, SORTD_OK where there is none */
        const char *why[2];     /* a part of each refusal's message */
        uint64_t protocol_errors, sorts_failed, rejected;
} cases[];

static void b_sort_u32(message *m)
{
        sort(m, U32, NONE, 100);
}

static void b_sort_argsort(message *m)
{
        /* 4 + 4 bytes a key come back: over the limit, though 4 a key are sent */
        sort(m, U32, SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32, 600);
}

static void b_sort_empty(message *m)
{
        sort(m, U32, NONE, 0);
}

static void b_sort_at_capacity(message *m)
{
        sort(m, SORTD__WIRE__KEY_TYPE__KEY_U8, NONE, CAPACITY);
}

static void b_sort_over_capacity(message *m)
{
        sort(m, SORTD__WIRE__KEY_TYPE__KEY_U8, NONE, CAPACITY + 1);
}

static void b_sort_bad_key(message *m)
{
        sort(m, (Sortd__Wire__KeyType)99, NONE, 10);
}

static void b_sort_region(message *m)
{
        sort(m, U32, NONE, 10);
        m->sort.data_case = SORTD__WIRE__SORT__DATA_REGION;
        m->sort.region = &m->region;
        m->region.region_id = 7;
        m->region.keys_offset = 64;
}

static void b_hello(message *m)
{
        hello(m, SORTD__WIRE_VERSION);
}

static void b_hello_v5(message *m)
{
        hello(m, 5);
}

static void b_ping(message *m)
{
        m->ping.nonce = 0xfeed;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        m->req.ping = &m->ping;
}

static void b_status(message *m)
{
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_STATUS;
        m->req.status = &m->status;
}

static void b_register(message *m)
{
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        m->req.register_region = &m->reg;
        m->reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
        m->reg.size = 4096;
}

static uint8_t ipc_handle[SORTD_CUDA_IPC_HANDLE_BYTES + 1], ipc_uuid[SORTD_DEVICE_UUID_BYTES + 1];

/* A well-formed CUDA IPC registration: the handle and UUID bytes, a buffer at an offset. */
static void b_register_ipc(message *m)
{
        b_register(m);
        m->reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        m->reg.cuda_ipc_handle = (ProtobufCBinaryData){SORTD_CUDA_IPC_HANDLE_BYTES, ipc_handle};
        m->reg.device_uuid = (ProtobufCBinaryData){SORTD_DEVICE_UUID_BYTES, ipc_uuid};
        m->reg.offset = 512;
}

static void b_register_ipc_no_handle(message *m)
{
        b_register_ipc(m);
        m->reg.cuda_ipc_handle.len = 0;
}

static void b_register_ipc_long_uuid(message *m)
{
        b_register_ipc(m);
        m->reg.device_uuid.len = SORTD_DEVICE_UUID_BYTES + 1;
}

static void b_register_ipc_empty(message *m)
{
        b_register_ipc(m);
        m->reg.size = 0;
}

static void b_register_ipc_wraps(message *m)
{
        b_register_ipc(m);
        m->reg.offset = UINT64_MAX - 4095;
}

static void b_register_memfd_offset(message *m)
{
        b_register(m);
        m->reg.offset = 64;
}

static void b_register_unset(message *m)
{
        b_register(m);
        m->reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__KIND_UNSET;
}

static void b_unregister(message *m)
{
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_UNREGISTER_REGION;
        m->req.unregister_region = &m->unreg;
        m->unreg.region_id = 3;
}

static void b_no_body(message *m)
{
}

static const struct request_case cases[] = {
        {"sort", b_sort_u32, 400, SORTD__REQUEST_SORT, {0}, {0}, 0, 0, 0},
        {"sort of nothing", b_sort_empty, 0, SORTD__REQUEST_SORT, {0}, {0}, 0, 0, 0},
        {"sort, payload short",
         b_sort_u32,
         399,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"payload of 399 bytes, but 100 u32 keys"},
         1,
         1,
         0},
        {"sort at capacity", b_sort_at_capacity, CAPACITY, SORTD__REQUEST_SORT, {0}, {0}, 0, 0, 0},
        {"sort, over capacity",
         b_sort_over_capacity,
         CAPACITY + 1,
         SORTD__REQUEST_NONE,
         {SORTD_E_CAPACITY},
         {"above the engine's capacity 1000"},
         0,
         0,
         1},
        {"argsort, reply over max-request-bytes",
         b_sort_argsort,
         2400,
         SORTD__REQUEST_NONE,
         {SORTD_E_CAPACITY},
         {"request of 4800 bytes above max-request-bytes 4096"},
         0,
         0,
         1},
        {"sort, bad key type",
         b_sort_bad_key,
         40,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"unknown key type 99"},
         0,
         1,
         0},
        {"sort, region", b_sort_region, 0, SORTD__REQUEST_REGION_SORT, {0}, {0}, 0, 0, 0},
        {"sort, region, with a payload",
         b_sort_region,
         40,
         SORTD__REQUEST_NONE,
         {SORTD_E_PROTOCOL},
         {"a region sort takes no payload (40 bytes came)"},
         1,
         1,
         0},
        {"hello", b_hello, 0, SORTD__REQUEST_HELLO, {0}, {0}, 0, 0, 0},
        {"hello, protocol 5",
         b_hello_v5,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_PROTOCOL},
         {"client speaks protocol version 5"},
         0,
         0,
         0},
        {"hello with a payload",
         b_hello,
         8,
         SORTD__REQUEST_HELLO,
         {SORTD_E_PROTOCOL},
         {"unexpected payload of 8 bytes"},
         1,
         0,
         0},
        {"hello, protocol 5, with a payload",
         b_hello_v5,
         8,
         SORTD__REQUEST_NONE,
         {SORTD_E_PROTOCOL, SORTD_E_PROTOCOL},
         {"client speaks protocol version 5", "unexpected payload of 8 bytes"},
         1,
         0,
         0},
        {"ping", b_ping, 0, SORTD__REQUEST_PING, {0}, {0}, 0, 0, 0},
        {"status", b_status, 0, SORTD__REQUEST_STATUS, {0}, {0}, 0, 0, 0},
        {"register region", b_register, 0, SORTD__REQUEST_REGISTER, {0}, {0}, 0, 0, 0},
        {"register a CUDA IPC region",
         b_register_ipc,
         0,
         SORTD__REQUEST_REGISTER_CUDA,
         {0},
         {0},
         0,
         0,
         0},
        {"register a CUDA IPC region without its handle",
         b_register_ipc_no_handle,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"cuda_ipc_handle has 0 bytes, a cudaIpcMemHandle_t 64"},
         0,
         0,
         0},
        {"register a CUDA IPC region, UUID of 17 bytes",
         b_register_ipc_long_uuid,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"device_uuid has 17 bytes, a device UUID 16"},
         0,
         0,
         0},
        {"register an empty CUDA IPC region",
         b_register_ipc_empty,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"a CUDA region of 0 bytes at offset 512 is empty or wraps"},
         0,
         0,
         0},
        {"register a CUDA IPC region that wraps",
         b_register_ipc_wraps,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"is empty or wraps"},
         0,
         0,
         0},
        {"register a memfd region at an offset",
         b_register_memfd_offset,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"a memfd region takes no offset, handle or device UUID"},
         0,
         0,
         0},
        {"register a region of no kind",
         b_register_unset,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_INVAL},
         {"region of unknown kind 0"},
         0,
         0,
         0},
        {"register region with a payload",
         b_register,
         16,
         SORTD__REQUEST_REGISTER,
         {SORTD_E_PROTOCOL},
         {"unexpected payload of 16 bytes"},
         1,
         0,
         0},
        {"unregister region", b_unregister, 0, SORTD__REQUEST_UNREGISTER, {0}, {0}, 0, 0, 0},
        {"no body",
         b_no_body,
         0,
         SORTD__REQUEST_NONE,
         {SORTD_E_PROTOCOL},
         {"request of an unknown kind"},
         1,
         0,
         0},
};

#define N_CASES (int)(sizeof(cases) / sizeof(cases[0]))

static void check_refusals(const struct request_case *k, const sortd__request *rq)
{
        unsigned expected = (k->status[0] != SORTD_OK) + (k->status[1] != SORTD_OK);

        ck_assert_uint_eq(rq->refusals, expected);
        for (unsigned i = 0; i < expected; i++) {
                ck_assert_int_eq(rq->refusal[i].status, k->status[i]);
                ck_assert_msg(strstr(rq->refusal[i].why, k->why[i]), "%s: refusal %u is '%s'",
                              k->name, i, rq->refusal[i].why);
        }
}

/* Packs m as a client would and decodes it as the connection does. */
static void pack_and_decode(const message *m, uint64_t payload_len, sortd__stats *stats,
                            sortd__request *rq)
{
        uint8_t buf[256];
        size_t len = sortd__wire__request__pack(&m->req, buf);

        sortd__request_decode(buf, len, payload_len, &limits, stats, rq);
}

START_TEST(decode)
{
        const struct request_case *k = &cases[_i];
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 1000 + (uint64_t)_i);
        k->build(&m);
        pack_and_decode(&m, k->payload_len, &stats, &rq);
        ck_assert_msg(rq.kind == k->kind, "%s: kind %d, expected %d", k->name, (int)rq.kind,
                      (int)k->kind);
        ck_assert_uint_eq(rq.id, 1000 + (uint64_t)_i);
        check_refusals(k, &rq);
        ck_assert_uint_eq(stats.requests_total, 1);
        ck_assert_uint_eq(stats.protocol_errors, k->protocol_errors);
        ck_assert_uint_eq(stats.sorts_failed, k->sorts_failed);
        ck_assert_uint_eq(stats.rejected, k->rejected);
}
END_TEST

/* A region sort's ids and offsets come through; values default to the keys' region. */
START_TEST(region_fields)
{
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 5);
        b_sort_region(&m);
        m.region.vals_offset = 128;
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_int_eq(rq.kind, SORTD__REQUEST_REGION_SORT);
        ck_assert_uint_eq(rq.region_id, 7);
        ck_assert_uint_eq(rq.vals_region_id, 7);
        ck_assert_uint_eq(rq.keys_offset, 64);
        ck_assert_uint_eq(rq.vals_offset, 128);
        ck_assert_uint_eq(rq.n, 10);
        m.region.vals_region_id = 9;
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_uint_eq(rq.vals_region_id, 9);
        message_init(&m, 6);
        b_register(&m);
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_uint_eq(rq.region_size, 4096);
        for (unsigned i = 0; i < sizeof(ipc_handle); i++)
                ipc_handle[i] = (uint8_t)(i * 7 + 1);
        for (unsigned i = 0; i < sizeof(ipc_uuid); i++)
                ipc_uuid[i] = (uint8_t)(0xf0 - i);
        message_init(&m, 7);
        b_register_ipc(&m);
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_int_eq(rq.kind, SORTD__REQUEST_REGISTER_CUDA);
        ck_assert_uint_eq(rq.region_size, 4096);
        ck_assert_uint_eq(rq.region_offset, 512);
        ck_assert_mem_eq(rq.ipc_handle, ipc_handle, SORTD_CUDA_IPC_HANDLE_BYTES);
        ck_assert_mem_eq(rq.device_uuid, ipc_uuid, SORTD_DEVICE_UUID_BYTES);
}
END_TEST

START_TEST(sort_fields)
{
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 7);
        sort(&m, SORTD__WIRE__KEY_TYPE__KEY_F64, SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32, 50);
        m.sort.order = SORTD__WIRE__ORDER__DESCENDING;
        m.sort.begin_bit = 3;
        m.sort.end_bit = 60;
        pack_and_decode(&m, 50 * 12, &stats, &rq);
        ck_assert_int_eq(rq.kind, SORTD__REQUEST_SORT);
        ck_assert_int_eq(rq.desc.key_type, SORTD_KEY_F64);
        ck_assert_int_eq(rq.desc.payload, SORTD_PAYLOAD_VALUES32);
        ck_assert_int_eq(rq.desc.order, SORTD_DESCENDING);
        ck_assert_uint_eq(rq.desc.begin_bit, 3);
        ck_assert_uint_eq(rq.desc.end_bit, 60);
        ck_assert_uint_eq(rq.n, 50);
        ck_assert_uint_eq(rq.sizes.keys_bytes, 400);
        ck_assert_uint_eq(rq.sizes.vals_bytes, 200);
        ck_assert_uint_eq(rq.sizes.request_len, 600);
        ck_assert_uint_eq(rq.sizes.reply_len, 600);
}
END_TEST

START_TEST(hello_and_ping_fields)
{
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 1);
        b_hello(&m);
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_str_eq(rq.client_name, "unit test");
        /* The name is logged: control bytes become '?', and 64 bytes are kept. */
        message_init(&m, 1);
        b_hello(&m);
        m.hello.client_name = "a\nfake: log line\x1b[2J\x7f"
                              "0123456789012345678901234567890123456789012345678901234567890123";
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_str_eq(rq.client_name,
                         "a?fake: log line?[2J?0123456789012345678901234567890123456789012");
        message_init(&m, 2);
        b_ping(&m);
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_uint_eq(rq.nonce, 0xfeed);
        ck_assert_uint_eq(stats.requests_total, 3);
}
END_TEST

/* Bytes protobuf-c cannot parse: refused with id 0 (there is none to echo) and counted. */
START_TEST(unparsable)
{
        static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        sortd__stats stats = {0};
        sortd__request rq;

        sortd__request_decode(junk, sizeof(junk), 16, &limits, &stats, &rq);
        ck_assert_int_eq(rq.kind, SORTD__REQUEST_NONE);
        ck_assert_uint_eq(rq.id, 0);
        ck_assert_uint_eq(rq.refusals, 1);
        ck_assert_int_eq(rq.refusal[0].status, SORTD_E_PROTOCOL);
        ck_assert_str_eq(rq.refusal[0].why, "unparsable request message (10 bytes)");
        ck_assert_uint_eq(stats.requests_total, 1);
        ck_assert_uint_eq(stats.protocol_errors, 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("request");
        TCase *tc = tcase_create("decode");

        tcase_add_loop_test(tc, decode, 0, N_CASES);
        tcase_add_test(tc, sort_fields);
        tcase_add_test(tc, region_fields);
        tcase_add_test(tc, hello_and_ping_fields);
        tcase_add_test(tc, unparsable);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
