/*
 * daemon/request/request_segments.c through request.c: a Sort's segments and top-k, packed as a
 * client would, decoded against small limits: their form, where the offsets come from, the
 * payload each needs, the topk_out rules, and max-request-bytes counting offsets and results.
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

#define U32 SORTD__WIRE__KEY_TYPE__KEY_U32
#define NONE SORTD__WIRE__PAYLOAD__PAYLOAD_NONE
#define VALUES32 SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32
#define ARGSORT32 SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32
#define OFF32 SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32
#define OFF64 SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64

static void sort(message *m, Sortd__Wire__Payload p, uint64_t n)
{
        m->sort.key_type = U32;
        m->sort.payload = p;
        m->sort.n = n;
        m->sort.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        m->sort.inline_data = &m->inline_data;
        m->req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        m->req.sort = &m->sort;
}

static void region(message *m)
{
        m->sort.data_case = SORTD__WIRE__SORT__DATA_REGION;
        m->sort.region = &m->region;
        m->region.region_id = 1;
}

static void rows(message *m, uint64_t count, uint64_t row_len)
{
        m->sort.segments = &m->segments;
        m->segments.count = count;
        m->segments.row_len = row_len;
}

static void offsets(message *m, Sortd__Wire__Segments__OffsetType t, uint64_t count)
{
        m->sort.segments = &m->segments;
        m->segments.offset_type = t;
        m->segments.count = count;
}

static void topk_out(message *m, uint64_t keys_region)
{
        m->sort.topk_out = &m->topk_out;
        m->topk_out.keys_region_id = keys_region;
}

/* 10 rows of 10: 400 bytes of keys, nothing more. */
static void b_rows(message *m)
{
        sort(m, NONE, 100);
        rows(m, 10, 10);
}

static void b_rows_not_n(message *m)
{
        sort(m, NONE, 100);
        rows(m, 10, 9);
}

static void b_rows_with_region(message *m)
{
        b_rows(m);
        m->segments.offsets_region_id = 3;
}

/* 4 segments: 5 u32 offsets after the keys, 420 bytes. */
static void b_offsets(message *m)
{
        sort(m, NONE, 100);
        offsets(m, OFF32, 4);
}

static void b_offsets_values(message *m)
{
        sort(m, VALUES32, 100);
        offsets(m, OFF64, 2);
}

static void b_offsets_row_len(message *m)
{
        b_offsets(m);
        m->segments.row_len = 25;
}

static void b_offsets_unknown_type(message *m)
{
        b_offsets(m);
        m->segments.offset_type = (Sortd__Wire__Segments__OffsetType)7;
}

static void b_offsets_in_region(message *m)
{
        sort(m, NONE, 100);
        offsets(m, OFF64, 4);
        m->segments.offsets_region_id = 3;
        m->segments.offsets_offset = 16;
}

static void b_offsets_misaligned(message *m)
{
        b_offsets_in_region(m);
        m->segments.offsets_offset = 12;
}

/* 4000 bytes of keys and 101 u64 offsets: over 4096 together. */
static void b_offsets_over_limit(message *m)
{
        sort(m, NONE, 1000);
        offsets(m, OFF64, 100);
}

static void b_topk(message *m)
{
        sort(m, VALUES32, 100);
        m->sort.k = 5;
}

static void b_topk_rows_argsort(message *m)
{
        sort(m, ARGSORT32, 100);
        rows(m, 4, 25);
        m->sort.k = 3;
}

/* 4000 bytes of keys, 4000 of results. */
static void b_topk_over_limit(message *m)
{
        sort(m, NONE, 1000);
        m->sort.k = 1000;
}

static void b_topk_inline_out(message *m)
{
        b_topk(m);
        topk_out(m, 2);
}

static void b_topk_out_without_k(message *m)
{
        b_rows(m);
        topk_out(m, 2);
}

static void b_region_topk(message *m)
{
        sort(m, NONE, 100);
        region(m);
        offsets(m, OFF64, 2);
        m->sort.k = 7;
        topk_out(m, 2);
}

static void b_region_topk_no_out(message *m)
{
        b_region_topk(m);
        m->sort.topk_out = NULL;
}

static void b_region_offsets_over_limit(message *m)
{
        sort(m, NONE, 1000);
        region(m);
        offsets(m, OFF64, 600);
}

static const struct seg_case {
        const char *name;
        void (*build)(message *m);
        uint64_t payload_len;
        sortd__request_kind kind;
        sortd_status status; /* of the refusal, SORTD_OK where there is none */
        const char *why;     /* a part of its message */
        uint64_t protocol_errors, sorts_failed, rejected;
        uint64_t buffer_bytes; /* what the daemon holds (kind SORT, REGION_SORT) */
} cases[] = {
        {"rows", b_rows, 400, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0, 400},
        {"rows not n", b_rows_not_n, 400, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "10 rows of 9 keys are not n = 100", 0, 1, 0, 0},
        {"rows with an offsets region", b_rows_with_region, 400, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "uniform rows take no offsets", 0, 1, 0, 0},
        {"offsets", b_offsets, 420, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0, 400 + 32},
        {"offsets, payload short", b_offsets, 419, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "payload of 419 bytes, but 100 u32 keys with payload none and 5 offsets of 4 bytes "
         "need 420",
         1, 1, 0, 0},
        {"offsets missing", b_offsets, 400, SORTD__REQUEST_NONE, SORTD_E_INVAL, "need 420", 1, 1, 0,
         0},
        {"offsets after values", b_offsets_values, 824, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0, 832},
        {"offsets with a row length", b_offsets_row_len, 420, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "take no row_len (25 came)", 0, 1, 0, 0},
        {"offsets of an unknown type", b_offsets_unknown_type, 420, SORTD__REQUEST_NONE,
         SORTD_E_INVAL, "unknown offset_type 7", 0, 1, 0, 0},
        {"offsets in a region", b_offsets_in_region, 400, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0,
         448},
        {"offsets in a region, payload too", b_offsets_in_region, 440, SORTD__REQUEST_NONE,
         SORTD_E_INVAL, "need 400", 1, 1, 0, 0},
        {"offsets in a region, misaligned", b_offsets_misaligned, 400, SORTD__REQUEST_NONE,
         SORTD_E_INVAL, "offsets_offset 12 is not a multiple of their width 8", 0, 1, 0, 0},
        {"offsets over max-request-bytes", b_offsets_over_limit, 4808, SORTD__REQUEST_NONE,
         SORTD_E_CAPACITY, "request of 4816 bytes above max-request-bytes 4096", 0, 0, 1, 0},
        /* keys, values, 5 result keys and 5 values (each part 8-aligned) */
        {"top-k", b_topk, 800, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0, 400 + 400 + 32 + 32},
        /* an argsort top-k reads no values: keys, then 12 results and 12 indices */
        {"top-k of rows, argsort", b_topk_rows_argsort, 400, SORTD__REQUEST_SORT, 0, NULL, 0, 0, 0,
         400 + 48 + 48},
        {"top-k over max-request-bytes", b_topk_over_limit, 4000, SORTD__REQUEST_NONE,
         SORTD_E_CAPACITY, "request of 8000 bytes above max-request-bytes 4096", 0, 0, 1, 0},
        {"inline top-k with topk_out", b_topk_inline_out, 800, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "topk_out is for a region sort", 0, 1, 0, 0},
        {"topk_out without k", b_topk_out_without_k, 400, SORTD__REQUEST_NONE, SORTD_E_INVAL,
         "topk_out without k", 0, 1, 0, 0},
        {"region top-k", b_region_topk, 24, SORTD__REQUEST_REGION_SORT, 0, NULL, 0, 0, 0, 32},
        {"region top-k, offsets not sent", b_region_topk, 0, SORTD__REQUEST_NONE, SORTD_E_PROTOCOL,
         "a region sort's payload is its 3 offsets of 8 bytes, 24 bytes (0 came)", 1, 1, 0, 0},
        {"region top-k without topk_out", b_region_topk_no_out, 24, SORTD__REQUEST_NONE,
         SORTD_E_INVAL, "a region top-k needs topk_out", 0, 1, 0, 0},
        {"region offsets over max-request-bytes", b_region_offsets_over_limit, 4808,
         SORTD__REQUEST_NONE, SORTD_E_CAPACITY,
         "offsets of 4816 bytes above max-request-bytes 4096", 0, 0, 1, 0},
};

#define N_CASES (int)(sizeof(cases) / sizeof(cases[0]))

static void pack_and_decode(const message *m, uint64_t payload_len, sortd__stats *stats,
                            sortd__request *rq)
{
        uint8_t buf[256];
        size_t len = sortd__wire__request__pack(&m->req, buf);

        sortd__request_decode(buf, len, payload_len, &limits, stats, rq);
}

START_TEST(decode)
{
        const struct seg_case *k = &cases[_i];
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

/* What dispatch needs comes through: the form, the offsets' place, k and the outputs. */
START_TEST(fields)
{
        sortd__stats stats = {0};
        sortd__request rq;
        message m;

        message_init(&m, 1);
        b_offsets_in_region(&m);
        pack_and_decode(&m, 400, &stats, &rq);
        ck_assert(rq.seg.on);
        ck_assert_uint_eq(rq.seg.count, 4);
        ck_assert_uint_eq(rq.seg.offset_bytes, 8);
        ck_assert_uint_eq(rq.seg.offsets_bytes, 40);
        ck_assert_uint_eq(rq.seg.offsets_region, 3);
        ck_assert_uint_eq(rq.seg.offsets_offset, 16);
        ck_assert(!sortd__request_segments_payload(&rq.seg));
        message_init(&m, 2);
        b_region_topk(&m);
        m.topk_out.keys_offset = 64;
        m.topk_out.vals_offset = 128;
        pack_and_decode(&m, 24, &stats, &rq);
        ck_assert(sortd__request_segments_payload(&rq.seg));
        ck_assert_uint_eq(rq.seg.k, 7);
        ck_assert_uint_eq(rq.seg.results_max, 14);
        ck_assert_uint_eq(rq.seg.out_region[0], 2);
        ck_assert_uint_eq(rq.seg.out_region[1], 2); /* the keys' unless named */
        ck_assert_uint_eq(rq.seg.out_offset[0], 64);
        ck_assert_uint_eq(rq.seg.out_offset[1], 128);
        /* an old client's sort: no segments, no k, the limits as ever */
        message_init(&m, 3);
        sort(&m, VALUES32, 3);
        pack_and_decode(&m, 24, &stats, &rq);
        ck_assert_int_eq(rq.kind, SORTD__REQUEST_SORT);
        ck_assert(!rq.seg.on);
        ck_assert_uint_eq(rq.seg.k, 0);
        ck_assert_uint_eq(rq.seg.buffer_bytes, 24);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("request_segments");
        TCase *tc = tcase_create("decode");

        tcase_add_loop_test(tc, decode, 0, N_CASES);
        tcase_add_test(tc, fields);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
