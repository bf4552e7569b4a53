/*
 * Sorts by key columns through a real sortd: inline and in memfd regions, of 2, 3 and 8 columns
 * of mixed key types and orders (128-bit keys and 16-bit floats among them, bit ranges too),
 * argsort and reordered in place with values, each checked against reference_sort_columns;
 * plain sorts of u128 and i128 keys inline and in regions against the reference sort; and the
 * daemon's refusals of bad requests on raw frames (9 columns, an unknown key type, a bit range
 * past a column's width, a key_type beside columns, a short payload), each with its reason, the
 * stream in sync. Columns in a CUDA region are test_cuda_ipc.c's, which has device memory.
 *
 * SORTD_COLUMNS_ARGS (space-separated) start the daemon otherwise: the emulated GPU daemon runs
 * the same test, its engine sorting the columns in host memory (inline, memfd regions).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datagen.h"
#include "harness.h"
#include "reference.h"

#define N 1000

static daemon_proc g_daemon;
static sortd_conn *g_conn;

static void setup(void)
{
        static char args[512];
        const char *extra[32] = {NULL};
        const char *env = getenv("SORTD_COLUMNS_ARGS");
        int n = 0;

        if (env) {
                snprintf(args, sizeof(args), "%s", env);
                for (char *save, *t = strtok_r(args, " ", &save); t && n < 31;
                     t = strtok_r(NULL, " ", &save))
                        extra[n++] = t;
        }
        daemon_start(&g_daemon, extra);
        g_conn = client_open(&g_daemon);
}

static void teardown(void)
{
        sortd_close(g_conn);
        ck_assert_int_eq(daemon_stop(&g_daemon, SIGTERM), 0);
}

#define OK(call) ck_assert_msg((call) == SORTD_OK, "%s", sortd_error_message(g_conn))

typedef struct shape {
        const char *name;
        unsigned count;
        sortd_column col[SORTD_MAX_COLUMNS];
} shape;

#define ASC SORTD_ASCENDING
#define DESC SORTD_DESCENDING

static const shape shapes[] = {
        {"u32 desc, f64", 2, {{SORTD_KEY_U32, DESC, 0, 0}, {SORTD_KEY_F64, ASC, 0, 0}}},
        {"i16 [2, 14), u128 desc, bf16",
         3,
         {{SORTD_KEY_I16, ASC, 2, 14}, {SORTD_KEY_U128, DESC, 0, 0}, {SORTD_KEY_BF16, ASC, 0, 0}}},
        {"f16 desc, i128 [60, 70), u8",
         3,
         {{SORTD_KEY_F16, DESC, 0, 0}, {SORTD_KEY_I128, ASC, 60, 70}, {SORTD_KEY_U8, ASC, 0, 0}}},
        {"eight",
         8,
         {{SORTD_KEY_U8, ASC, 0, 0},
          {SORTD_KEY_I8, DESC, 0, 0},
          {SORTD_KEY_U16, ASC, 0, 0},
          {SORTD_KEY_F16, DESC, 0, 0},
          {SORTD_KEY_I32, ASC, 0, 0},
          {SORTD_KEY_F32, ASC, 0, 0},
          {SORTD_KEY_U64, DESC, 0, 0},
          {SORTD_KEY_I128, ASC, 0, 0}}},
};

#define N_SHAPES (int)(sizeof(shapes) / sizeof(shapes[0]))

/* Rows with few values a column, so that ties go on to the next columns. */
static void fill_column(void *keys, size_t n, sortd_key_type t, uint64_t seed)
{
        datagen_fill(keys, n, t, DATAGEN_FEW, 3, seed);
}

/* n rows of s: each column's keys in got and the same in want; values likewise. */
typedef struct rows {
        void *got[SORTD_MAX_COLUMNS], *want[SORTD_MAX_COLUMNS];
        uint8_t *got_vals, *want_vals;
} rows;

static void rows_make(rows *r, const shape *s, size_t n, sortd_payload p, uint64_t seed)
{
        size_t vs = sortd_payload_size(p);

        for (unsigned j = 0; j < s->count; j++) {
                size_t bytes = n * sortd_key_size(s->col[j].key_type);

                r->got[j] = xmalloc(bytes);
                r->want[j] = xmalloc(bytes);
                fill_column(r->got[j], n, s->col[j].key_type, seed + j);
                memcpy(r->want[j], r->got[j], bytes);
        }
        r->got_vals = xmalloc(n * 8);
        r->want_vals = xmalloc(n * 8);
        if (vs)
                datagen_fill_values(r->got_vals, n, (unsigned)vs, seed + 99);
        if (sortd_payload_is_argsort(p)) /* made by the sort: nothing of this may remain */
                memset(r->got_vals, 0xee, n * 8);
        memcpy(r->want_vals, r->got_vals, n * 8);
}

static void rows_free(rows *r, const shape *s)
{
        for (unsigned j = 0; j < s->count; j++) {
                free(r->got[j]);
                free(r->want[j]);
        }
        free(r->got_vals);
        free(r->want_vals);
}

/* The reference's result, and the columns of got (at col[j] in a buffer, or its own arrays)
   and its values, compared. */
static void check_rows(const shape *s, sortd_payload p, rows *r, size_t n, void *const *got_cols,
                       const uint8_t *got_vals, const char *where)
{
        size_t vs = sortd_payload_size(p);

        ck_assert_int_eq(reference_sort_columns(s->col, s->count, p, r->want, r->want_vals, n),
                         SORTD_OK);
        for (unsigned j = 0; j < s->count; j++)
                ck_assert_msg(memcmp(got_cols[j], r->want[j],
                                     n * sortd_key_size(s->col[j].key_type)) == 0,
                              "%s, %s, %s: column %u differs from the reference", where, s->name,
                              sortd_payload_name(p), j);
        ck_assert_msg(memcmp(got_vals, r->want_vals, n * vs) == 0,
                      "%s, %s, %s: values or permutation differ from the reference", where, s->name,
                      sortd_payload_name(p));
}

static const sortd_payload payloads[] = {SORTD_PAYLOAD_ARGSORT32, SORTD_PAYLOAD_VALUES64,
                                         SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_ARGSORT64,
                                         SORTD_PAYLOAD_VALUES32};

/* Each shape with two payloads (the eight columns with all five): inline. */
START_TEST(columns_inline)
{
        const shape *s = &shapes[_i];
        unsigned np = s->count == SORTD_MAX_COLUMNS ? 5 : 2;

        for (unsigned k = 0; k < np; k++) {
                sortd_payload p = payloads[(k + (unsigned)_i) % 5];
                rows r;

                rows_make(&r, s, N, p, 100 * (uint64_t)_i + k);
                OK(sortd_sort_columns(g_conn, s->col, s->count, r.got, r.got_vals, N, p));
                check_rows(s, p, &r, N, r.got, r.got_vals, "inline");
                rows_free(&r, s);
        }
}
END_TEST

/* Each shape in a memfd region: the columns' buffer at 64 bytes in, the values after it. */
START_TEST(columns_region)
{
        const shape *s = &shapes[_i];
        sortd_payload p = payloads[(unsigned)_i % 2 ? 1 : 0];
        uint64_t bytes = sortd_columns_offset(s->col, s->count, N, s->count);
        size_t vals_at = 64 + (size_t)bytes;
        sortd_region *rg = NULL;
        void *cols[SORTD_MAX_COLUMNS];
        uint8_t *base;
        rows r;

        rows_make(&r, s, N, p, 7000 + (uint64_t)_i);
        OK(sortd_region_create(g_conn, vals_at + N * 8, &rg));
        base = sortd_region_data(rg);
        for (unsigned j = 0; j < s->count; j++) {
                cols[j] = base + 64 + sortd_columns_offset(s->col, s->count, N, j);
                memcpy(cols[j], r.got[j], N * sortd_key_size(s->col[j].key_type));
        }
        memcpy(base + vals_at, r.got_vals, N * 8);
        sortd_region_sort rs = {.keys = rg,
                                .keys_offset = 64,
                                .vals = rg,
                                .vals_offset = vals_at,
                                .n = N,
                                .payload = p,
                                .columns = s->col,
                                .column_count = s->count};
        OK(sortd_sort_in_region(g_conn, &rs));
        check_rows(s, p, &r, N, cols, base + vals_at, "region");
        ck_assert_int_eq(sortd_region_destroy(g_conn, rg), SORTD_OK);
        rows_free(&r, s);
}
END_TEST

/* No rows, and one: nothing to move, and the one row as it was. */
START_TEST(columns_small)
{
        const shape *s = &shapes[1];
        rows r;

        rows_make(&r, s, 1, SORTD_PAYLOAD_ARGSORT32, 5);
        OK(sortd_sort_columns(g_conn, s->col, s->count, r.got, r.got_vals, 0,
                              SORTD_PAYLOAD_VALUES64));
        OK(sortd_sort_columns(g_conn, s->col, s->count, r.got, r.got_vals, 1,
                              SORTD_PAYLOAD_ARGSORT32));
        check_rows(s, SORTD_PAYLOAD_ARGSORT32, &r, 1, r.got, r.got_vals, "one row");
        rows_free(&r, s);
}
END_TEST

/* Plain sorts of 16-byte keys: inline with values and argsort, and in a region. */
START_TEST(plain_128)
{
        sortd_key_type t = _i ? SORTD_KEY_I128 : SORTD_KEY_U128;
        sortd_sort_desc d = {t, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0};
        sortd_sort_options desc = {SORTD_DESCENDING, 0, 0};
        uint8_t *keys = xmalloc(N * 16), *want = xmalloc(N * 16);
        uint64_t *vals = xmalloc(N * 8), *want_vals = xmalloc(N * 8);
        sortd_region *rg = NULL;
        uint8_t *base;

        datagen_fill(keys, N, t, DATAGEN_UNIFORM, 0, 40 + (uint64_t)_i);
        datagen_fill_values(vals, N, 8, 41);
        memcpy(want, keys, N * 16);
        memcpy(want_vals, vals, N * 8);
        OK(sortd_sort_pairs(g_conn, keys, vals, 8, N, t, &desc));
        ck_assert_int_eq(ref_sort(&d, want, want_vals, N), 0);
        ck_assert_mem_eq(keys, want, N * 16);
        ck_assert_mem_eq(vals, want_vals, N * 8);

        /* argsort of the sorted keys ascending: the reference's permutation */
        d = (sortd_sort_desc){t, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0};
        memset(vals, 0xee, N * 8);
        memcpy(want_vals, vals, N * 8);
        OK(sortd_argsort(g_conn, keys, vals, 4, N, t, NULL));
        ck_assert_int_eq(ref_sort(&d, want, want_vals, N), 0);
        ck_assert_mem_eq(keys, want, N * 16);
        ck_assert_mem_eq(vals, want_vals, N * 4);

        /* in a region at a 16-byte offset, bits [64, 128) only: the high words decide */
        datagen_fill(keys, N, t, DATAGEN_FEW, 8, 42 + (uint64_t)_i);
        memcpy(want, keys, N * 16);
        OK(sortd_region_create(g_conn, 16 + N * 16, &rg));
        base = sortd_region_data(rg);
        memcpy(base + 16, keys, N * 16);
        sortd_region_sort rs = {.keys = rg,
                                .keys_offset = 16,
                                .n = N,
                                .key_type = t,
                                .payload = SORTD_PAYLOAD_NONE,
                                .opts = {SORTD_ASCENDING, 64, 128}};
        OK(sortd_sort_in_region(g_conn, &rs));
        d = (sortd_sort_desc){t, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 64, 128};
        ck_assert_int_eq(ref_sort(&d, want, NULL, N), 0);
        ck_assert_mem_eq(base + 16, want, N * 16);
        ck_assert_int_eq(sortd_region_destroy(g_conn, rg), SORTD_OK);
        free(keys);
        free(want);
        free(vals);
        free(want_vals);
}
END_TEST

/* ---- refusals, on raw frames: what the daemon itself says ---- */

typedef struct raw_columns {
        Sortd__Wire__Sort sort;
        Sortd__Wire__Column col[SORTD_MAX_COLUMNS + 1];
        Sortd__Wire__Column *ptr[SORTD_MAX_COLUMNS + 1];
} raw_columns;

/* An inline Sort of count u32 columns of n rows, no payload but the columns. */
static void raw_columns_msg(raw_columns *m, unsigned count, uint64_t n)
{
        m->sort = raw_sort_msg(0, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, n);
        for (unsigned j = 0; j < count; j++) {
                m->col[j] = (Sortd__Wire__Column)SORTD__WIRE__COLUMN__INIT;
                m->col[j].key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
                m->ptr[j] = &m->col[j];
        }
        m->sort.n_columns = count;
        m->sort.columns = m->ptr;
}

/* The refusal of m, its payload (plen zeros) dropped, and the stream still in sync. */
static void raw_refused(int fd, raw_columns *m, uint64_t plen, sortd_status s, const char *text)
{
        static uint64_t id = 100;

        raw_send_sort(fd, ++id, &m->sort, plen);
        raw_send_zeros(fd, (size_t)plen);
        raw_expect_reply(fd, id, s, text);
        raw_expect_in_sync(fd);
}

START_TEST(columns_refused)
{
        int fd = raw_connect(g_daemon.sock);
        raw_columns m;

        raw_columns_msg(&m, SORTD_MAX_COLUMNS + 1, 4);
        raw_refused(fd, &m, 9 * 16, SORTD_E_INVAL, "9 key columns; 1 to 8 are allowed");
        raw_columns_msg(&m, 2, 4);
        m.col[1].key_type = SORTD__WIRE__KEY_TYPE__KEY_I128 + 1;
        raw_refused(fd, &m, 32, SORTD_E_INVAL, "column 1: unknown key type 15");
        raw_columns_msg(&m, 2, 4);
        m.col[0].end_bit = 33;
        raw_refused(fd, &m, 32, SORTD_E_INVAL, "column 0: ");
        raw_columns_msg(&m, 2, 4);
        m.sort.key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
        raw_refused(fd, &m, 32, SORTD_E_INVAL, "key_type 5 is set beside 2 key columns");
        raw_columns_msg(&m, 2, 4);
        raw_refused(fd, &m, 31, SORTD_E_INVAL, "payload of 31 bytes, but 4 rows of 2 key columns");
        /* and the right one is sorted */
        raw_columns_msg(&m, 2, 4);
        raw_send_sort(fd, 200, &m.sort, 32);
        raw_send_zeros(fd, 32);
        {
                uint64_t plen;
                Sortd__Wire__Reply *r = raw_recv_reply(fd, &plen);

                ck_assert_ptr_nonnull(r);
                ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "%s", r->error);
                ck_assert_uint_eq(plen, 32);
                raw_skip(fd, plen);
                sortd__wire__reply__free_unpacked(r, NULL);
        }
        close(fd);
        /* libsortd refuses the same before sending, with the same words */
        {
                sortd_column nine[SORTD_MAX_COLUMNS + 1] = {{SORTD_KEY_U32, ASC, 0, 0}};
                uint32_t a[4] = {0};
                void *keys[SORTD_MAX_COLUMNS + 1] = {a, a, a, a, a, a, a, a, a};

                ck_assert_int_eq(
                        sortd_sort_columns(g_conn, nine, 9, keys, NULL, 4, SORTD_PAYLOAD_NONE),
                        SORTD_E_INVAL);
                ck_assert_ptr_nonnull(strstr(sortd_error_message(g_conn), "9 key columns"));
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("columns");
        TCase *tc = tcase_create("columns");

        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_loop_test(tc, columns_inline, 0, N_SHAPES);
        tcase_add_loop_test(tc, columns_region, 0, N_SHAPES);
        tcase_add_test(tc, columns_small);
        tcase_add_loop_test(tc, plain_128, 0, 2);
        tcase_add_test(tc, columns_refused);
        suite_add_tcase(s, tc);
        return run_suite_nofork(s);
}
