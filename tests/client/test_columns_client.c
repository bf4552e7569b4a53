/*
 * libsortd's sorts by key columns against a stand-in daemon (fake_sortd.c): what they say on
 * the wire (Sort.columns, no key_type; a payload of each column padded to 16 bytes, then the
 * values), where the reply lands (each column back in its own array, an argsort's permutation
 * alone in vals), in regions too, and every request the client refuses itself, with its
 * reason, sending nothing and leaving the connection usable (test_columns.c in tests/e2e has
 * them against sortd).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "fake_sortd.h"
#include "harness.h"

static sortd_conn *connect_fake(fake_sortd *f, uint64_t max_request_bytes)
{
        sortd_conn *c = NULL;
        char err[256];

        fake_start(f);
        f->max_request_bytes = max_request_bytes;
        ck_assert_msg(sortd_connect(f->sock, NULL, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        return c;
}

static void close_fake(fake_sortd *f, sortd_conn *c)
{
        sortd_close(c);
        fake_stop(f);
}

#define OK(c, call) ck_assert_msg((call) == SORTD_OK, "%s", sortd_error_message(c))

/* A call the client refuses with status and a message holding text, sending nothing. */
#define REFUSED(f, c, call, status, text)                                                          \
        do {                                                                                       \
                unsigned frames_ = (f)->frames;                                                    \
                ck_assert_int_eq(call, status);                                                    \
                ck_assert_msg(strstr(sortd_error_message(c), text), "'%s' lacks '%s'",             \
                              sortd_error_message(c), text);                                       \
                ck_assert_uint_eq((f)->frames, frames_);                                           \
        } while (0)

static void fill(void *p, size_t len, uint8_t seed)
{
        uint8_t *b = p;

        for (size_t i = 0; i < len; i++)
                b[i] = (uint8_t)(seed + 7 * i);
}

/* Three columns of five rows: u8 descending, i128 over bits [3, 100), f16. */
static const sortd_column three[] = {
        {SORTD_KEY_U8, SORTD_DESCENDING, 0, 0},
        {SORTD_KEY_I128, SORTD_ASCENDING, 3, 100},
        {SORTD_KEY_F16, SORTD_ASCENDING, 0, 0},
};

typedef struct rows {
        uint8_t a[5];
        _Alignas(16) uint8_t b[80]; /* five i128 */
        uint16_t c[5];
        uint64_t v[5];
} rows;

static void rows_fill(rows *r)
{
        fill(r->a, sizeof(r->a), 1);
        fill(r->b, sizeof(r->b), 2);
        fill(r->c, sizeof(r->c), 3);
        fill(r->v, sizeof(r->v), 4);
}

/* The payload the fake kept is the columns' buffer: each column, zeros to 16 bytes, then vals. */
static void buffer_is(const fake_sortd *f, const rows *r, int with_vals)
{
        static const uint8_t zeros[16];
        const uint8_t *p = f->sort_payload;

        ck_assert_uint_eq(f->sort_payload_len, 16 + 80 + 16 + (with_vals ? 40 : 0));
        ck_assert_mem_eq(p, r->a, 5);
        ck_assert_mem_eq(p + 5, zeros, 11);
        ck_assert_mem_eq(p + 16, r->b, 80);
        ck_assert_mem_eq(p + 96, r->c, 10);
        ck_assert_mem_eq(p + 106, zeros, 6);
        if (with_vals)
                ck_assert_mem_eq(p + 112, r->v, 40);
}

static void columns_sent(const fake_sortd *f)
{
        ck_assert_uint_eq(f->n_columns, 3);
        ck_assert_int_eq(f->sort_key_type, 0);
        ck_assert_int_eq(f->columns[0].key_type, SORTD__WIRE__KEY_TYPE__KEY_U8);
        ck_assert_int_eq(f->columns[0].order, SORTD__WIRE__ORDER__DESCENDING);
        ck_assert_int_eq(f->columns[1].key_type, SORTD__WIRE__KEY_TYPE__KEY_I128);
        ck_assert_uint_eq(f->columns[1].begin_bit, 3);
        ck_assert_uint_eq(f->columns[1].end_bit, 100);
        ck_assert_int_eq(f->columns[2].key_type, SORTD__WIRE__KEY_TYPE__KEY_F16);
}

/* Values moved: the buffer and the values go out, and the echo lands back in each array. */
START_TEST(columns_inline_values)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, 0);
        rows r, sent;
        void *keys[3] = {r.a, r.b, r.c};

        rows_fill(&r);
        sent = r;
        OK(c, sortd_sort_columns(c, three, 3, keys, r.v, 5, SORTD_PAYLOAD_VALUES64));
        columns_sent(&f);
        buffer_is(&f, &sent, 1);
        ck_assert_mem_eq(&r, &sent, sizeof(r));
        /* a one-array sort after it says nothing of columns */
        OK(c, sortd_sort(c, r.c, 5, SORTD_KEY_F16, NULL));
        ck_assert_uint_eq(f.n_columns, 0);
        close_fake(&f, c);
}
END_TEST

/* An argsort sends the columns alone, leaves them as they are, and takes the permutation. */
START_TEST(columns_inline_argsort)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, 0);
        rows r, sent;
        void *keys[3] = {r.a, r.b, r.c};
        uint32_t idx[5];

        rows_fill(&r);
        sent = r;
        OK(c, sortd_sort_columns(c, three, 3, keys, idx, 5, SORTD_PAYLOAD_ARGSORT32));
        buffer_is(&f, &sent, 0);
        ck_assert_mem_eq(&r, &sent, sizeof(r));
        for (size_t i = 0; i < sizeof(idx); i++)
                ck_assert_uint_eq(((uint8_t *)idx)[i], fake_result_byte(i));
        close_fake(&f, c);
}
END_TEST

/* Submitted together, received in order, each into its own arrays. */
START_TEST(columns_pipelined)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, 0);
        rows r1, r2, s1, s2;
        void *k1[3] = {r1.a, r1.b, r1.c}, *k2[3] = {r2.a, r2.b, r2.c};
        uint64_t idx[5];
        sortd_request q1 = {.vals = r1.v,
                            .n = 5,
                            .payload = SORTD_PAYLOAD_VALUES64,
                            .columns = three,
                            .column_count = 3,
                            .column_keys = k1};
        sortd_request q2 = {.vals = idx,
                            .n = 5,
                            .payload = SORTD_PAYLOAD_ARGSORT64,
                            .columns = three + 1,
                            .column_count = 2,
                            .column_keys = k2 + 1};

        rows_fill(&r1);
        rows_fill(&r2);
        s1 = r1;
        s2 = r2;
        OK(c, sortd_submit(c, &q1));
        OK(c, sortd_submit(c, &q2));
        OK(c, sortd_receive(c, &q1));
        OK(c, sortd_receive(c, &q2));
        ck_assert_mem_eq(&r1, &s1, sizeof(r1));
        ck_assert_mem_eq(&r2, &s2, sizeof(r2));
        for (size_t i = 0; i < sizeof(idx); i++)
                ck_assert_uint_eq(((uint8_t *)idx)[i], fake_result_byte(i));
        ck_assert_uint_eq(f.n_columns, 2);
        close_fake(&f, c);
}
END_TEST

START_TEST(columns_refused)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, 4096);
        rows r;
        void *keys[SORTD_MAX_COLUMNS + 1] = {r.a, r.b, r.c};
        sortd_column nine[SORTD_MAX_COLUMNS + 1], bad[3];
        sortd_segments seg = {.count = 1, .row_len = 5};
        static uint64_t big[4096 / 8];
        static uint32_t idx[1000];
        void *bigs[1] = {big};
        sortd_request q = {.vals = r.v,
                           .n = 5,
                           .payload = SORTD_PAYLOAD_VALUES64,
                           .columns = three,
                           .column_count = 3,
                           .column_keys = keys};

        rows_fill(&r);
        for (unsigned i = 0; i <= SORTD_MAX_COLUMNS; i++) {
                nine[i] = (sortd_column){SORTD_KEY_U8, SORTD_ASCENDING, 0, 0};
                keys[i] = keys[i] ? keys[i] : r.a;
        }
        ck_assert_int_eq(sortd_sort_columns(NULL, three, 3, keys, r.v, 5, SORTD_PAYLOAD_NONE),
                         SORTD_E_INVAL);
        REFUSED(&f, c, sortd_sort_columns(c, NULL, 3, keys, r.v, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "NULL columns");
        REFUSED(&f, c, sortd_sort_columns(c, three, 0, keys, r.v, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "0 key columns; 1 to 8 are allowed");
        REFUSED(&f, c, sortd_sort_columns(c, nine, 9, keys, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "9 key columns; 1 to 8 are allowed");
        memcpy(bad, three, sizeof(bad));
        bad[1].key_type = SORTD_KEY_TYPE_COUNT;
        REFUSED(&f, c, sortd_sort_columns(c, bad, 3, keys, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "column 1: ");
        memcpy(bad, three, sizeof(bad));
        bad[2].end_bit = 17; /* an f16 has 16 */
        REFUSED(&f, c, sortd_sort_columns(c, bad, 3, keys, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "column 2: ");
        REFUSED(&f, c, sortd_sort_columns(c, three, 3, NULL, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "column_keys must not be NULL");
        keys[1] = NULL;
        REFUSED(&f, c, sortd_sort_columns(c, three, 3, keys, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "column_keys[1] must be non-NULL and aligned to its 16-byte keys");
        keys[1] = r.b + 8;
        REFUSED(&f, c, sortd_sort_columns(c, three, 3, keys, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "column_keys[1] must be non-NULL and aligned");
        keys[1] = r.b;
        keys[2] = r.a;
        REFUSED(&f, c, sortd_sort_columns(c, three, 3, keys, NULL, 5, SORTD_PAYLOAD_NONE),
                SORTD_E_INVAL, "column_keys[0] and [2] overlap");
        keys[2] = r.c;
        REFUSED(&f, c, sortd_sort_columns(c, three, 3, keys, NULL, 5, SORTD_PAYLOAD_VALUES32),
                SORTD_E_INVAL, "vals must be non-NULL and aligned to 4 bytes (v32)");
        REFUSED(&f, c,
                sortd_sort_columns(c, three, 3, keys, (uint8_t *)r.v + 2, 5,
                                   SORTD_PAYLOAD_ARGSORT32),
                SORTD_E_INVAL, "vals must be non-NULL and aligned to 4 bytes");
        REFUSED(&f, c, sortd_sort_columns(c, three, 3, keys, r.b, 5, SORTD_PAYLOAD_VALUES64),
                SORTD_E_INVAL, "column_keys[1] and vals overlap");
        q.segments = &seg;
        REFUSED(&f, c, sortd_sort_request(c, &q), SORTD_E_INVAL,
                "a sort by key columns takes no segments");
        q.segments = NULL;
        q.k = 2;
        REFUSED(&f, c, sortd_sort_request(c, &q), SORTD_E_INVAL,
                "a sort by key columns takes no top-k");
        q.k = 0;
        REFUSED(&f, c,
                sortd_sort_columns(c, three, 3, keys, NULL, (1u << 20) + 1, SORTD_PAYLOAD_NONE),
                SORTD_E_CAPACITY, "above the daemon's capacity");
        /* 4096 u8 keys are the 4096 bytes the daemon holds at most; one more is padded to 16,
           and an argsort's indices are held beside the keys */
        OK(c, sortd_sort_columns(c, nine, 1, bigs, NULL, 4096, SORTD_PAYLOAD_NONE));
        REFUSED(&f, c, sortd_sort_columns(c, nine, 1, bigs, NULL, 4097, SORTD_PAYLOAD_NONE),
                SORTD_E_CAPACITY, "request of 4112 bytes above the daemon's max-request-bytes");
        REFUSED(&f, c, sortd_sort_columns(c, nine, 1, bigs, idx, 1000, SORTD_PAYLOAD_ARGSORT32),
                SORTD_E_CAPACITY, "request of 5008 bytes above");
        /* refused, and still usable */
        OK(c, sortd_sort_request(c, &q));
        close_fake(&f, c);
}
END_TEST

static sortd_region *region(sortd_conn *c, size_t bytes)
{
        sortd_region *r = NULL;

        OK(c, sortd_region_create(c, bytes, &r));
        return r;
}

/* In a memfd region and in a CUDA region: Sort.columns and the spans, no payload; refusals of
   the spans, and of values in a region of the other kind. */
START_TEST(columns_region)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f, 0);
        sortd_region *a = region(c, 4096), *b = region(c, 4096), *d = NULL, *e = NULL;
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES] = {1}, uuid[SORTD_DEVICE_UUID_BYTES] = {2};
        sortd_region_sort base = {.keys = a,
                                  .keys_offset = 64,
                                  .vals = b,
                                  .vals_offset = 8,
                                  .n = 5,
                                  .payload = SORTD_PAYLOAD_ARGSORT64,
                                  .columns = three,
                                  .column_count = 3};
        sortd_region_sort rs = base;

        OK(c, sortd_sort_in_region(c, &rs));
        columns_sent(&f);
        ck_assert_uint_eq(f.region_id, 1); /* the fake numbers regions 1, 2, ... */
        ck_assert_uint_eq(f.keys_offset, 64);
        ck_assert_uint_eq(f.vals_region_id, 2);
        ck_assert_uint_eq(f.vals_offset, 8);
        ck_assert_uint_eq(f.sort_payload_len, 0);
        rs.keys_offset = 8;
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "keys_offset 8 is not a multiple of the 16-byte element");
        rs.keys_offset = 4096 - 96; /* 112 bytes of columns */
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "keys: 112 bytes at offset 4000 run past the end");
        rs = base;
        rs.vals = a;
        rs.vals_offset = 160; /* inside the columns, [64, 176) */
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "the keys and vals spans overlap");
        rs.vals_offset = 176;
        OK(c, sortd_sort_in_region(c, &rs));
        rs.k = 1;
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "a sort by key columns takes no top-k");
        /* in device memory: sent as in host memory, the values in a region of that kind */
        OK(c, sortd_region_register_cuda(c, handle, 0, 4096, uuid, &d));
        rs = base;
        rs.keys = d;
        rs.vals = d;
        rs.vals_offset = 176;
        OK(c, sortd_sort_in_region(c, &rs));
        columns_sent(&f);
        ck_assert_uint_eq(f.region_id, 3);
        ck_assert_uint_eq(f.keys_offset, 64);
        ck_assert_uint_eq(f.vals_region_id, 0); /* the keys' own */
        ck_assert_uint_eq(f.vals_offset, 176);
        rs.vals = b;
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "the keys region is device memory (CUDA IPC) and the vals region host memory "
                "(memfd): both must be of one kind");
        rs = base;
        rs.vals = d;
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "the keys region is host memory (memfd) and the vals region device memory");
        /* the device reads the columns at base + offset: 16-byte aligned there too */
        OK(c, sortd_region_register_cuda(c, handle, 8, 4096, uuid, &e));
        rs.keys = e;
        rs.vals = e;
        rs.vals_offset = 192;
        REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_INVAL,
                "the keys region starts at offset 8 of its CUDA allocation, not a multiple of "
                "the 16-byte element");
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, b), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, d), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, e), SORTD_OK);
        close_fake(&f, c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("columns_client");
        TCase *tc = tcase_create("fake");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, columns_inline_values);
        tcase_add_test(tc, columns_inline_argsort);
        tcase_add_test(tc, columns_pipelined);
        tcase_add_test(tc, columns_refused);
        tcase_add_test(tc, columns_region);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
