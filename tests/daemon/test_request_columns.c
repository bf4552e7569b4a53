/*
 * daemon/request/request_columns.c through request.c: a Sort by key columns, packed as a client
 * would, decoded against small limits: the columns' checks, the payload each form needs, what
 * the daemon holds (the columns' buffer, then the values or indices) against
 * max-request-bytes, and the fields dispatch takes.
 */
#include <check.h>
#include <string.h>

#include "internal.h"
#include "message.h"
#include "suite.h"

#define CAPACITY 1000
#define MAX_REQUEST_BYTES 4096

static const sortd__request_limits limits = {
        .capacity = CAPACITY,
        .max_request_bytes = MAX_REQUEST_BYTES,
};

#define VALUES32 SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32
#define ARGSORT64 SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT64

/* n rows by a u8 column descending, then a u64 one: a buffer of 112 + 8n bytes (n = 100). */
static void columns(message *m, Sortd__Wire__Payload p, uint64_t n)
{
        m->column[0].key_type = SORTD__WIRE__KEY_TYPE__KEY_U8;
        m->column[0].order = SORTD__WIRE__ORDER__DESCENDING;
        m->column[1].key_type = SORTD__WIRE__KEY_TYPE__KEY_U64;
        m->sort.n_columns = 2;
        m->sort.columns = m->columns;
        m->sort.payload = p;
        m->sort.n = n;
        m->sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        m->sort.inline_data = &m->inline_data;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        m->req.sort = &m->sort;
}

static void b_values(message *m)
{
        columns(m, VALUES32, 100);
}

static void b_argsort(message *m)
{
        columns(m, ARGSORT64, 100);
}

static void b_region(message *m)
{
        columns(m, VALUES32, 100);
        m->sort.data_case = SORTD__WIRE__SORT__DATA_REGION;
        m->sort.region = &m->region;
        m->region.region_id = 1;
        m->region.keys_offset = 32;
}

/* 300 rows of an i128 and a u64: 4800 + 2400 bytes of columns */
static void b_over_limit(message *m)
{
        columns(m, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 300);
        m->column[0].key_type = SORTD__WIRE__KEY_TYPE__KEY_I128;
}

static void b_nine(message *m)
{
        b_values(m);
        for (unsigned i = 2; i <= SORTD_MAX_COLUMNS; i++)
                m->column[i].key_type = SORTD__WIRE__KEY_TYPE__KEY_U16;
        m->sort.n_columns = SORTD_MAX_COLUMNS + 1;
}

static void b_unknown_type(message *m)
{
        b_values(m);
        m->column[1].key_type = 15;
}

static void b_bits_past_width(message *m)
{
        b_values(m);
        m->column[0].end_bit = 9;
}

static void b_key_type_too(message *m)
{
        b_values(m);
        m->sort.key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
}

static void b_segments_too(message *m)
{
        b_values(m);
        m->sort.segments = &m->segments;
        m->segments.count = 10;
        m->segments.row_len = 10;
}

static void b_topk_too(message *m)
{
        b_values(m);
        m->sort.k = 5;
}

static void b_over_capacity(message *m)
{
        columns(m, VALUES32, CAPACITY + 1);
}

static const struct col_case {
        const char *name;
        void (*build)(message *m);
        uint64_t payload_len;
        sortd__request_kind kind;
        sortd_status status; /* of the refusal, SORTD_OK where there is none */
        const char *why;     /* a part of its message */
        uint64_t protocol_errors, sorts_failed, rejected;
        uint64_t buffer_bytes; /* what the daemon holds (kind SORT, REGION_SORT) */
} cases[] = {
        /* the columns (112 + 800 bytes), then 400 of values */
        {"values", b_values, 1312, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0, 1312},
        {"values, payload short", b_values, 1311, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "payload of 1311 bytes, but 100 rows of 2 key columns (laid out as sortd_columns_offset "
         "says) with payload v32 need 1312",
         1, 1, 0, 0},
        /* an argsort sends the columns alone; the daemon holds the indices it writes too */
        {"argsort", b_argsort, 912, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0, 912 + 800},
        {"argsort with its indices sent", b_argsort, 1712, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "need 912", 1, 1, 0, 0},
        {"region", b_region, 0, SORTD__REQUEST_REGION_SORT, 0, NULL, 0, 0, 0, 0},
        {"region with a payload", b_region, 1312, SORTD__REQUEST_NONE, SORTD_E_PROTOCOL,
         "a region sort takes no payload (1312 bytes came)", 1, 1, 0, 0},
        {"over max-request-bytes", b_over_limit, 7200, SORTD__REQUEST_NONE, SORTD_E_CAPACITY,
         "request of 7200 bytes above max-request-bytes 4096", 0, 0, 1, 0},
        {"over capacity", b_over_capacity, 0, SORTD__REQUEST_NONE, SORTD_E_CAPACITY,
         "n = 1001 above the engine's capacity 1000", 0, 0, 1, 0},
        {"nine columns", b_nine, 1312, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "9 key columns; 1 to 8 are allowed", 0, 1, 0, 0},
        {"unknown type", b_unknown_type, 1312, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "column 1: unknown key type 15", 0, 1, 0, 0},
        {"bits past the width", b_bits_past_width, 1312, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "column 0: ", 0, 1, 0, 0},
        {"key_type beside columns", b_key_type_too, 1312, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "key_type 5 is set beside 2 key columns", 0, 1, 0, 0},
        {"segments beside columns", b_segments_too, 1312, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "takes no segments", 0, 1, 0, 0},
        {"top-k beside columns", b_topk_too, 1312, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "takes no top-k (k = 5)", 0, 1, 0, 0},
};

#define N_CASES (int)(sizeof(cases) / sizeof(cases[0]))

static void pack_and_decode(const message *m, uint64_t payload_len, sortd__stats *stats,
                            sortd__request *rq)
{
        uint8_t buf[512];
        size_t len = sortd__wire__request__pack(&m->req, buf);

        sortd__request_decode(buf, len, payload_len, &limits, stats, rq);
}

START_TEST(decode)
{
        const struct col_case *k = &cases[_i];
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 77);
        k->build(&m);
        pack_and_decode(&m, k->payload_len, &stats, &rq);
        ck_assert_msg(rq.kind == k->kind, "%s: kind %d, expected %d", k->name, (int)rq.kind,
                      (int)k->kind);
        if (k->status == SORTD_OK) {
                ck_assert_msg(rq.refusals == 0, "%s: refused: %s", k->name, rq.refusal[0].why);
                ck_assert_msg(rq.seg.buffer_bytes == k->buffer_bytes, "%s: %llu bytes held",
                              k->name, (unsigned long long)rq.seg.buffer_bytes);
        } else {
                ck_assert_uint_eq(rq.refusals, 1);
                ck_assert_int_eq(rq.refusal[0].status, k->status);
                ck_assert_msg(strstr(rq.refusal[0].why, k->why), "%s: refusal is '%s'", k->name,
                              rq.refusal[0].why);
        }
        ck_assert_uint_eq(stats.sort_requests, 1);
        ck_assert_uint_eq(stats.protocol_errors, k->protocol_errors);
        ck_assert_uint_eq(stats.sorts_failed, k->sorts_failed);
        ck_assert_uint_eq(stats.rejected, k->rejected);
}
END_TEST

/* What dispatch needs comes through: the columns, the payload, the sizes, the region's place. */
START_TEST(fields)
{
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 1);
        b_region(&m);
        m.column[1].begin_bit = 8;
        m.column[1].end_bit = 40;
        pack_and_decode(&m, 0, &stats, &rq);
        ck_assert_uint_eq(rq.cols.count, 2);
        ck_assert_int_eq(rq.cols.col[0].key_type, SORTD_KEY_U8);
        ck_assert_int_eq(rq.cols.col[0].order, SORTD_DESCENDING);
        ck_assert_int_eq(rq.cols.col[1].key_type, SORTD_KEY_U64);
        ck_assert_int_eq(rq.cols.col[1].order, SORTD_ASCENDING);
        ck_assert_uint_eq(rq.cols.col[1].begin_bit, 8);
        ck_assert_uint_eq(rq.cols.col[1].end_bit, 40);
        ck_assert_int_eq(rq.desc.payload, SORTD_PAYLOAD_VALUES32);
        ck_assert_uint_eq(rq.sizes.keys_bytes, 912);
        ck_assert_uint_eq(rq.sizes.vals_bytes, 400);
        ck_assert_uint_eq(rq.keys_offset, 32);
        ck_assert_uint_eq(rq.n, 100);
        /* a one-array sort has none */
        message_init(&m, 2);
        m.sort.key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
        m.sort.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_NONE;
        m.sort.n = 10;
        m.sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        m.sort.inline_data = &m.inline_data;
        m.req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        m.req.sort = &m.sort;
        pack_and_decode(&m, 40, &stats, &rq);
        ck_assert_int_eq(rq.kind, SORTD__REQUEST_SORT);
        ck_assert_uint_eq(rq.cols.count, 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("request_columns");
        TCase *tc = tcase_create("decode");

        tcase_add_loop_test(tc, decode, 0, N_CASES);
        tcase_add_test(tc, fields);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
