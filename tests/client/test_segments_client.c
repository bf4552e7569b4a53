/*
 * libsortd's segmented sorts and top-k against a stand-in daemon (fake_sortd.c): what they
 * say on the wire (Segments, k, TopkOut, and a payload of keys, values, then offsets), where a
 * reply's results land (a top-k's in out_keys then out_vals, nowhere else), and every request
 * the client refuses itself, with its reason, sending nothing and leaving the connection
 * usable (test_segments_sortd.c has them against sortd).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fake_sortd.h"
#include "harness.h"

static sortd_conn *connect_fake(fake_sortd *f)
{
        sortd_conn *c = NULL;
        char err[256];

        fake_start(f);
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

/* The fake saw a payload of exactly the pieces given, in order (NULL ends them). */
static void payload_is(const fake_sortd *f, const void *p1, size_t l1, const void *p2, size_t l2,
                       const void *p3, size_t l3)
{
        size_t off = 0;

        ck_assert_uint_eq(f->sort_payload_len, l1 + l2 + l3);
        ck_assert_uint_le(l1 + l2 + l3, FAKE_KEPT_BYTES);
        ck_assert_mem_eq(f->sort_payload, p1, l1);
        off += l1;
        if (l2)
                ck_assert_mem_eq(f->sort_payload + off, p2, l2);
        off += l2;
        if (l3)
                ck_assert_mem_eq(f->sort_payload + off, p3, l3);
}

/* len bytes at p are fake_result_byte(from), ... (the fake's made-up results). */
static void made_up(const void *p, size_t len, uint64_t from)
{
        const uint8_t *b = p;

        for (size_t i = 0; i < len; i++)
                ck_assert_msg(b[i] == fake_result_byte(from + i), "byte %zu of %zu: %#x", i, len,
                              b[i]);
}

static void fill(void *p, size_t len, uint8_t seed)
{
        uint8_t *b = p;

        for (size_t i = 0; i < len; i++)
                b[i] = (uint8_t)(seed + 7 * i);
}

/* Uniform rows, values moved: Segments with no offsets, keys then values, echoed back. */
START_TEST(segments_rows_inline)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        uint32_t keys[12], sent_keys[12];
        uint64_t vals[12], sent_vals[12];
        sortd_segments seg = {.count = 3, .row_len = 4};
        sortd_sort_options desc = {SORTD_DESCENDING, 0, 0};

        fill(keys, sizeof(keys), 1);
        fill(vals, sizeof(vals), 2);
        memcpy(sent_keys, keys, sizeof(keys));
        memcpy(sent_vals, vals, sizeof(vals));
        OK(c, sortd_sort_segments(c, keys, vals, 12, SORTD_KEY_U32, SORTD_PAYLOAD_VALUES64, &seg,
                                  &desc));
        ck_assert_int_eq(f.has_segments, 1);
        ck_assert_uint_eq(f.seg_count, 3);
        ck_assert_uint_eq(f.seg_row_len, 4);
        ck_assert_int_eq(f.seg_offset_type, SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_NONE);
        ck_assert_uint_eq(f.seg_offsets_region_id, 0);
        ck_assert_uint_eq(f.k, 0);
        ck_assert_int_eq(f.has_topk_out, 0);
        payload_is(&f, sent_keys, sizeof(keys), sent_vals, sizeof(vals), NULL, 0);
        /* The echo came back into the same buffers. */
        ck_assert_mem_eq(keys, sent_keys, sizeof(keys));
        ck_assert_mem_eq(vals, sent_vals, sizeof(vals));
        /* A sort without segments says nothing of them. */
        OK(c, sortd_sort(c, keys, 12, SORTD_KEY_U32, NULL));
        ck_assert_int_eq(f.has_segments, 0);
        close_fake(&f, c);
}
END_TEST

/* CSR offsets of either width follow the keys and values, whatever the keys' width leaves
   them aligned to; an argsort sends no values, and its indices come back after the keys. */
START_TEST(segments_offsets_inline)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        uint16_t keys[7], sent_keys[7];
        uint32_t idx[7];
        uint32_t off32[4] = {0, 2, 2, 7};
        uint8_t bytes[5], sent_bytes[5];
        uint32_t vals[5], sent_vals[5];
        uint64_t off64[3] = {0, 5, 5};
        sortd_segments s32 = {.count = 3, .offsets = off32, .offset_bytes = 4};
        sortd_segments s64 = {.count = 2, .offsets = off64, .offset_bytes = 8};

        fill(keys, sizeof(keys), 3);
        memcpy(sent_keys, keys, sizeof(keys));
        OK(c, sortd_sort_segments(c, keys, idx, 7, SORTD_KEY_U16, SORTD_PAYLOAD_ARGSORT32, &s32,
                                  NULL));
        ck_assert_int_eq(f.seg_offset_type, SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32);
        ck_assert_uint_eq(f.seg_count, 3);
        ck_assert_uint_eq(f.seg_row_len, 0);
        payload_is(&f, sent_keys, sizeof(keys), off32, sizeof(off32), NULL, 0);
        ck_assert_mem_eq(keys, sent_keys, sizeof(keys));
        made_up(idx, sizeof(idx), sizeof(keys));

        fill(bytes, sizeof(bytes), 4);
        fill(vals, sizeof(vals), 5);
        memcpy(sent_bytes, bytes, sizeof(bytes));
        memcpy(sent_vals, vals, sizeof(vals));
        OK(c, sortd_sort_segments(c, bytes, vals, 5, SORTD_KEY_U8, SORTD_PAYLOAD_VALUES32, &s64,
                                  NULL));
        ck_assert_int_eq(f.seg_offset_type, SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64);
        ck_assert_uint_eq(f.seg_count, 2);
        payload_is(&f, sent_bytes, sizeof(bytes), sent_vals, sizeof(vals), off64, sizeof(off64));
        ck_assert_mem_eq(vals, sent_vals, sizeof(vals));
        close_fake(&f, c);
}
END_TEST

/* Top-k of uniform rows: k on the wire, inputs only read, count x k results packed into
   out_keys then out_vals, and not a byte past them. */
START_TEST(topk_rows_inline)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        float keys[15], sent_keys[15];
        uint32_t vals[15], sent_vals[15];
        float out_keys[6 + 1];
        uint32_t out_vals[6 + 1];
        sortd_segments seg = {.count = 3, .row_len = 5};

        fill(keys, sizeof(keys), 6);
        fill(vals, sizeof(vals), 7);
        memcpy(sent_keys, keys, sizeof(keys));
        memcpy(sent_vals, vals, sizeof(vals));
        memset(out_keys, 0xee, sizeof(out_keys));
        memset(out_vals, 0xee, sizeof(out_vals));
        OK(c, sortd_topk(c, keys, vals, 15, SORTD_KEY_F32, SORTD_PAYLOAD_VALUES32, &seg, 2,
                         out_keys, out_vals, NULL));
        ck_assert_uint_eq(f.k, 2);
        ck_assert_int_eq(f.has_topk_out, 0); /* inline: the results come in the reply */
        ck_assert_uint_eq(f.seg_row_len, 5);
        payload_is(&f, sent_keys, sizeof(keys), sent_vals, sizeof(vals), NULL, 0);
        made_up(out_keys, 6 * 4, 0);
        made_up(out_vals, 6 * 4, 6 * 4);
        ck_assert_uint_eq(((uint8_t *)&out_keys[6])[0], 0xee);
        ck_assert_uint_eq(((uint8_t *)&out_vals[6])[3], 0xee);
        ck_assert_mem_eq(keys, sent_keys, sizeof(keys));
        ck_assert_mem_eq(vals, sent_vals, sizeof(vals));
        close_fake(&f, c);
}
END_TEST

/* Top-k over offsets with short and empty segments: min(k, length) results each; an
   argsort's top-k sends keys and offsets only and needs no vals. One array (no segments)
   with k above n gives n results. */
START_TEST(topk_offsets_inline)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        int64_t keys[6], out_keys[4];
        uint64_t off[4] = {0, 1, 1, 6}, idx[4];
        uint32_t few[4], few_out[4 + 1];
        sortd_segments seg = {.count = 3, .offsets = off, .offset_bytes = 8};
        sortd_sort_options desc = {SORTD_DESCENDING, 0, 0};

        fill(keys, sizeof(keys), 8);
        OK(c, sortd_topk(c, keys, NULL, 6, SORTD_KEY_I64, SORTD_PAYLOAD_ARGSORT64, &seg, 3,
                         out_keys, idx, &desc));
        ck_assert_uint_eq(f.k, 3);
        payload_is(&f, keys, sizeof(keys), off, sizeof(off), NULL, 0);
        made_up(out_keys, sizeof(out_keys), 0); /* 1 + 0 + 3 results */
        made_up(idx, sizeof(idx), sizeof(out_keys));

        fill(few, sizeof(few), 9);
        memset(few_out, 0xee, sizeof(few_out));
        OK(c, sortd_topk(c, few, NULL, 4, SORTD_KEY_U32, SORTD_PAYLOAD_NONE, NULL, 10, few_out,
                         NULL, NULL));
        ck_assert_int_eq(f.has_segments, 0);
        ck_assert_uint_eq(f.k, 10);
        payload_is(&f, few, sizeof(few), NULL, 0, NULL, 0);
        made_up(few_out, 4 * 4, 0);
        ck_assert_uint_eq(few_out[4], 0xeeeeeeee);
        close_fake(&f, c);
}
END_TEST

/* Pipelined: a segmented sort and a top-k submitted together, each reply read into its own
   request's buffers. */
START_TEST(segments_pipelined)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        uint32_t a[8], b[8], sent_a[8], out[4];
        sortd_segments rows = {.count = 2, .row_len = 4};
        sortd_request r1 = {.keys = a, .n = 8, .key_type = SORTD_KEY_U32, .segments = &rows};
        sortd_request r2 = {.keys = b,
                            .n = 8,
                            .key_type = SORTD_KEY_U32,
                            .segments = &rows,
                            .k = 2,
                            .out_keys = out};

        fill(a, sizeof(a), 10);
        fill(b, sizeof(b), 11);
        memcpy(sent_a, a, sizeof(a));
        OK(c, sortd_submit(c, &r1));
        OK(c, sortd_submit(c, &r2));
        ck_assert_uint_eq(r2.id, r1.id + 1);
        OK(c, sortd_receive(c, &r1));
        ck_assert_mem_eq(a, sent_a, sizeof(a));
        OK(c, sortd_receive(c, &r2));
        made_up(out, sizeof(out), 0);
        /* A request changed between submit and receive is not the one the reply answers. */
        OK(c, sortd_submit(c, &r1));
        rows.row_len = 5;
        ck_assert_int_eq(sortd_receive(c, &r1), SORTD_E_INVAL);
        ck_assert_ptr_nonnull(strstr(sortd_error_message(c), "not the request that was submitted"));
        rows.row_len = 4;
        OK(c, sortd_receive(c, &r1));
        close_fake(&f, c);
}
END_TEST

/* Every segmented sort and top-k the client refuses itself, inline. */
START_TEST(segments_refused_inline)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        uint64_t keys[16] = {0}, vals[16] = {0}, out[16];
        uint32_t down[4] = {0, 3, 1, 16}, short_end[3] = {0, 4, 15}, two[2] = {0, 16};
        sortd_segments rows = {.count = 4, .row_len = 4};
        sortd_segments bad;
        sortd_request r = {.keys = keys, .n = 16, .key_type = SORTD_KEY_U64};

        ck_assert_int_eq(sortd_sort_segments(NULL, keys, NULL, 16, SORTD_KEY_U64,
                                             SORTD_PAYLOAD_NONE, &rows, NULL),
                         SORTD_E_INVAL);
        ck_assert_int_eq(sortd_topk(NULL, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, NULL,
                                    1, out, NULL, NULL),
                         SORTD_E_INVAL);
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, NULL,
                                    NULL),
                SORTD_E_INVAL, "seg must not be NULL");
        bad = (sortd_segments){.count = 3, .row_len = 4};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "segments: 3 rows of 4 keys are not n = 16");
        bad = (sortd_segments){.count = 4, .row_len = 4, .offset_bytes = 4};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "offset width 4 given for uniform rows");
        bad = (sortd_segments){.count = 3, .offsets = down, .offset_bytes = 4};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "offsets[2] = 1 below offsets[1] = 3");
        bad = (sortd_segments){.count = 2, .offsets = short_end, .offset_bytes = 4};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "the last segment ends at n = 16");
        bad = (sortd_segments){.count = 1, .offsets = two, .offset_bytes = 2};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "offsets of 2 bytes: 4 (u32) or 8 (u64)");
        bad = (sortd_segments){.count = 1, .offsets = (uint8_t *)vals + 1, .offset_bytes = 8};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "offsets not aligned to 8 bytes");
        bad = (sortd_segments){.count = UINT64_MAX / 8, .offsets = keys, .offset_bytes = 8};
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad,
                                    NULL),
                SORTD_E_INVAL, "too many");
        /* A segmented sort checks its buffers as any sort does. */
        REFUSED(&f, c,
                sortd_sort_segments(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_VALUES64, &rows,
                                    NULL),
                SORTD_E_INVAL, "vals must be non-NULL");

        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &rows, 0, out,
                           NULL, NULL),
                SORTD_E_INVAL, "k must be at least 1");
        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &rows, 2, NULL,
                           NULL, NULL),
                SORTD_E_INVAL, "out_keys must be non-NULL and aligned to 8 bytes");
        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &rows, 2,
                           (uint8_t *)out + 4, NULL, NULL),
                SORTD_E_INVAL, "out_keys must be non-NULL and aligned to 8 bytes");
        REFUSED(&f, c,
                sortd_topk(c, keys, vals, 16, SORTD_KEY_U64, SORTD_PAYLOAD_VALUES32, &rows, 2, out,
                           NULL, NULL),
                SORTD_E_INVAL, "out_vals must be non-NULL and aligned to 4 bytes");
        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_VALUES32, &rows, 2, out,
                           vals, NULL),
                SORTD_E_INVAL, "vals must be non-NULL");
        /* 4 x 2 keys of 8 bytes at out, their values from out + 60: 4 bytes in common. */
        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_ARGSORT32, &rows, 2, out,
                           (uint8_t *)out + 60, NULL),
                SORTD_E_INVAL, "out_keys and out_vals overlap");
        bad = (sortd_segments){.count = 1, .offsets = (uint8_t *)vals + 4, .offset_bytes = 8};
        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, &bad, 2, out, NULL,
                           NULL),
                SORTD_E_INVAL, "segments: offsets not aligned");
        REFUSED(&f, c,
                sortd_topk(c, keys, NULL, (1u << 20) + 1, SORTD_KEY_U64, SORTD_PAYLOAD_NONE, NULL,
                           2, out, NULL, NULL),
                SORTD_E_CAPACITY, "capacity");
        r.k = 1;
        r.out_keys = out;
        r.segments = &bad;
        REFUSED(&f, c, sortd_submit(c, &r), SORTD_E_INVAL, "segments:");

        /* Nothing was sent, and the connection works: the same top-k, right, goes through. */
        OK(c, sortd_topk(c, keys, NULL, 16, SORTD_KEY_U64, SORTD_PAYLOAD_ARGSORT32, &rows, 2, out,
                         (uint8_t *)out + 64, NULL));
        ck_assert_uint_eq(f.frames, 2);
        close_fake(&f, c);
}
END_TEST

/*
 * The bytes the daemon would hold for a top-k (keys, values, results, each rounded to 8), not
 * only its keys and values, are bounded by the max-request-bytes Hello said: at the limit the
 * request goes, one key past it the client refuses it.
 */
START_TEST(topk_held_bytes)
{
        fake_sortd f;
        sortd_conn *c = NULL;
        char err[256];
        static uint32_t keys[257], vals[257], out_keys[257], out_vals[257];
        sortd_segments seg = {.count = 256, .row_len = 1};

        fake_start(&f);
        f.max_request_bytes = 4096;
        ck_assert_msg(sortd_connect(f.sock, NULL, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        OK(c, sortd_topk(c, keys, vals, 256, SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, &seg, 1,
                         out_keys, out_vals, NULL));
        seg = (sortd_segments){.count = 257, .row_len = 1};
        REFUSED(&f, c,
                sortd_topk(c, keys, vals, 257, SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, &seg, 1,
                           out_keys, out_vals, NULL),
                SORTD_E_CAPACITY,
                "request of 4160 bytes above the daemon's max-request-bytes 4096");
        /* A sort of as many keys and values is held to those alone. */
        OK(c, sortd_sort_pairs(c, keys, vals, 4, 257, SORTD_KEY_U32, NULL));
        /* A region sort's daemon holds a copy of its offsets, nothing more. */
        {
                static uint64_t off[513];
                sortd_region *r = NULL;
                sortd_region_sort rs = {.n = 511,
                                        .key_type = SORTD_KEY_U8,
                                        .segments = &(sortd_segments){
                                                .count = 511, .offsets = off, .offset_bytes = 8}};

                for (unsigned i = 0; i < 512; i++)
                        off[i] = i;
                OK(c, sortd_region_create(c, 4096, &r));
                rs.keys = r;
                OK(c, sortd_sort_in_region(c, &rs)); /* 512 offsets: 4096 bytes */
                off[512] = 512;
                rs.n = 512;
                rs.segments = &(sortd_segments){.count = 512, .offsets = off, .offset_bytes = 8};
                REFUSED(&f, c, sortd_sort_in_region(c, &rs), SORTD_E_CAPACITY,
                        "offsets of 4112 bytes above the daemon's max-request-bytes 4096");
                ck_assert_int_eq(sortd_region_destroy(c, r), SORTD_OK);
        }
        close_fake(&f, c);
}
END_TEST

/* ---- regions ---- */

static sortd_region *region(sortd_conn *c, size_t bytes)
{
        sortd_region *r = NULL;

        OK(c, sortd_region_create(c, bytes, &r));
        return r;
}

static sortd_region *cuda_region(sortd_conn *c, uint64_t offset, uint64_t size)
{
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES] = {1}, uuid[SORTD_DEVICE_UUID_BYTES] = {2};
        sortd_region *r = NULL;

        OK(c, sortd_region_register_cuda(c, handle, offset, size, uuid, &r));
        return r;
}

/* The RegionData the fake saw: keys region and offset, vals region and offset. */
static void region_data_is(const fake_sortd *f, uint64_t keys_id, uint64_t keys_off,
                           uint64_t vals_id, uint64_t vals_off)
{
        ck_assert_uint_eq(f->region_id, keys_id);
        ck_assert_uint_eq(f->keys_offset, keys_off);
        ck_assert_uint_eq(f->vals_region_id, vals_id);
        ck_assert_uint_eq(f->vals_offset, vals_off);
}

/* Segments in regions: offsets sent as the payload (memfd and CUDA regions alike), or named
   in a memfd region (no payload); rows send none. */
START_TEST(segments_region_wire)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        sortd_region *a = region(c, 4096), *b = region(c, 4096), *d = cuda_region(c, 256, 4096);
        uint32_t off[4] = {0, 10, 10, 32};
        sortd_segments rows = {.count = 4, .row_len = 8};
        sortd_segments csr = {.count = 3, .offsets = off, .offset_bytes = 4};
        sortd_segments named = {.count = 3, .offset_bytes = 8}; /* its offsets: in b */
        sortd_region_sort rs = {.keys = a,
                                .keys_offset = 128,
                                .vals = a,
                                .vals_offset = 1024,
                                .n = 32,
                                .key_type = SORTD_KEY_F64,
                                .payload = SORTD_PAYLOAD_VALUES64,
                                .segments = &rows};

        OK(c, sortd_sort_in_region(c, &rs));
        region_data_is(&f, 1, 128, 0, 1024);
        ck_assert_int_eq(f.has_segments, 1);
        ck_assert_uint_eq(f.seg_count, 4);
        ck_assert_uint_eq(f.seg_row_len, 8);
        ck_assert_uint_eq(f.sort_payload_len, 0);
        ck_assert_int_eq(f.has_topk_out, 0);

        rs.segments = &csr;
        OK(c, sortd_sort_in_region(c, &rs));
        ck_assert_int_eq(f.seg_offset_type, SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32);
        ck_assert_uint_eq(f.seg_offsets_region_id, 0);
        payload_is(&f, off, sizeof(off), NULL, 0, NULL, 0);

        memcpy((uint8_t *)sortd_region_data(b) + 64, (uint64_t[]){0, 30, 31, 32}, 32);
        rs.segments = &named;
        rs.offsets_region = b;
        rs.offsets_offset = 64;
        OK(c, sortd_sort_in_region(c, &rs));
        ck_assert_int_eq(f.seg_offset_type, SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64);
        ck_assert_uint_eq(f.seg_count, 3);
        ck_assert_uint_eq(f.seg_offsets_region_id, 2);
        ck_assert_uint_eq(f.seg_offsets_offset, 64);
        ck_assert_uint_eq(f.sort_payload_len, 0);

        /* Device keys, offsets from host memory after the frame. */
        rs = (sortd_region_sort){.keys = d,
                                 .n = 32,
                                 .key_type = SORTD_KEY_U32,
                                 .payload = SORTD_PAYLOAD_ARGSORT32,
                                 .vals = d,
                                 .vals_offset = 2048,
                                 .segments = &csr};
        OK(c, sortd_sort_in_region(c, &rs));
        region_data_is(&f, 3, 0, 0, 2048);
        payload_is(&f, off, sizeof(off), NULL, 0, NULL, 0);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, b), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, d), SORTD_OK);
        close_fake(&f, c);
}
END_TEST

/* A top-k in regions: TopkOut names the results' regions and offsets (ids, never 0), an
   argsort's top-k names no input values, and k and its segments go with it. */
START_TEST(topk_region_wire)
{
        fake_sortd f;
        sortd_conn *c = connect_fake(&f);
        sortd_region *a = region(c, 4096), *b = region(c, 4096), *d = cuda_region(c, 0, 8192),
                     *e = cuda_region(c, 4096, 4096);
        sortd_segments rows = {.count = 4, .row_len = 16};
        sortd_region_sort rs = {.keys = a,
                                .vals = a,
                                .vals_offset = 512,
                                .n = 64,
                                .key_type = SORTD_KEY_I32,
                                .payload = SORTD_PAYLOAD_VALUES64,
                                .segments = &rows,
                                .k = 3,
                                .out_keys = b,
                                .out_keys_offset = 16,
                                .out_vals = b,
                                .out_vals_offset = 64};

        OK(c, sortd_sort_in_region(c, &rs));
        region_data_is(&f, 1, 0, 0, 512);
        ck_assert_uint_eq(f.k, 3);
        ck_assert_int_eq(f.has_topk_out, 1);
        ck_assert_uint_eq(f.out_keys_region_id, 2);
        ck_assert_uint_eq(f.out_keys_offset, 16);
        ck_assert_uint_eq(f.out_vals_region_id, 2);
        ck_assert_uint_eq(f.out_vals_offset, 64);

        /* Results beside the inputs in their own region, 4 x 3 keys and indices after them. */
        rs.payload = SORTD_PAYLOAD_ARGSORT32;
        rs.vals = NULL;
        rs.out_keys = rs.out_vals = a;
        rs.out_keys_offset = 256;
        rs.out_vals_offset = 304;
        OK(c, sortd_sort_in_region(c, &rs));
        region_data_is(&f, 1, 0, 0, 0);
        ck_assert_uint_eq(f.out_keys_region_id, 1);
        ck_assert_uint_eq(f.out_keys_offset, 256);
        ck_assert_uint_eq(f.out_vals_region_id, 1);
        ck_assert_uint_eq(f.out_vals_offset, 304);

        /* Keys only, one array, in device memory. */
        rs = (sortd_region_sort){.keys = d,
                                 .keys_offset = 4096,
                                 .n = 64,
                                 .key_type = SORTD_KEY_I32,
                                 .k = 100,
                                 .out_keys = e};
        OK(c, sortd_sort_in_region(c, &rs));
        region_data_is(&f, 3, 4096, 0, 0);
        ck_assert_int_eq(f.has_segments, 0);
        ck_assert_uint_eq(f.out_keys_region_id, 4);
        ck_assert_uint_eq(f.out_vals_region_id, 0);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, b), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, d), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, e), SORTD_OK);
        close_fake(&f, c);
}
END_TEST

#define REGION_REFUSED(f, c, rs, text)                                                             \
        REFUSED(f, c, sortd_sort_in_region(c, rs), SORTD_E_INVAL, text)

/* Every segmented or top-k region sort the client refuses itself. */
START_TEST(region_refusals)
{
        fake_sortd f, g;
        sortd_conn *c = connect_fake(&f), *c2 = connect_fake(&g);
        sortd_region *a = region(c, 4096), *b = region(c, 4096), *d = cuda_region(c, 0, 4096),
                     *o = region(c2, 4096);
        uint64_t off[3] = {0, 5, 16};
        sortd_segments rows = {.count = 2, .row_len = 8}, named = {.count = 2, .offset_bytes = 8};
        sortd_region_sort base = {.keys = a,
                                  .n = 16,
                                  .key_type = SORTD_KEY_U64,
                                  .segments = &named,
                                  .offsets_region = b,
                                  .offsets_offset = 8};
        sortd_region_sort rs = base;

        memcpy((uint8_t *)sortd_region_data(b) + 8, off, sizeof(off));
        rs.segments = NULL;
        REGION_REFUSED(&f, c, &rs, "offsets_region given without segments");
        rs.segments = &rows;
        REGION_REFUSED(&f, c, &rs, "offsets_region given for uniform rows");
        rs = base;
        rs.offsets_region = d;
        REGION_REFUSED(&f, c, &rs, "the offsets region is device memory (CUDA IPC)");
        rs.offsets_region = o;
        REGION_REFUSED(&f, c, &rs, "the offsets region is not registered on this connection");
        rs = base;
        rs.offsets_offset = 4;
        REGION_REFUSED(&f, c, &rs, "offsets_offset 4 is not a multiple of the 8-byte element");
        rs.offsets_offset = 4096 - 16;
        REGION_REFUSED(&f, c, &rs, "offsets: 24 bytes at offset 4080 run past the end");
        rs = base;
        rs.n = 15; /* the region's offsets end at 16 */
        REGION_REFUSED(&f, c, &rs, "segments: offsets[2] = 16 past n = 15");
        rs = base;
        named.offset_bytes = 2;
        REGION_REFUSED(&f, c, &rs, "offsets of 2 bytes");
        named.offset_bytes = 8;
        rs = base;
        rs.offsets_region = NULL;
        rs.segments = &(sortd_segments){.count = 2, .offsets = off, .offset_bytes = 8};
        rs.n = 17;
        REGION_REFUSED(&f, c, &rs, "the last segment ends at n = 17");

        /* Top-k: where its results go. */
        base = (sortd_region_sort){.keys = a,
                                   .n = 16,
                                   .key_type = SORTD_KEY_U64,
                                   .payload = SORTD_PAYLOAD_VALUES32,
                                   .vals = a,
                                   .vals_offset = 128,
                                   .segments = &rows,
                                   .k = 3,
                                   .out_keys = b,
                                   .out_vals = b,
                                   .out_vals_offset = 64};
        rs = base;
        OK(c, sortd_sort_in_region(c, &rs)); /* as it stands, right */
        rs.out_keys = NULL;
        REGION_REFUSED(&f, c, &rs, "the out_keys region must not be NULL");
        rs = base;
        rs.out_vals = NULL;
        REGION_REFUSED(&f, c, &rs, "the out_vals region must not be NULL");
        rs = base;
        rs.out_keys = o;
        REGION_REFUSED(&f, c, &rs, "the out_keys region is not registered on this connection");
        rs = base;
        rs.out_keys_offset = 4;
        REGION_REFUSED(&f, c, &rs, "out_keys_offset 4 is not a multiple of the 8-byte element");
        rs = base;
        rs.out_vals_offset = 4096 - 20; /* 6 values of 4 bytes */
        REGION_REFUSED(&f, c, &rs, "out_vals: 24 bytes at offset 4076 run past the end");
        rs = base;
        rs.out_keys = d;
        REGION_REFUSED(&f, c, &rs,
                       "the keys region is host memory (memfd) and the out_keys region device "
                       "memory (CUDA IPC): both must be of one kind");
        rs = base;
        rs.out_vals = d;
        REGION_REFUSED(&f, c, &rs, "and the out_vals region device memory");
        rs = base;
        rs.out_keys = a;
        rs.out_keys_offset = 120; /* 6 keys up to 168: into the values at 128 */
        REGION_REFUSED(&f, c, &rs, "a top-k's results overlap its keys or vals");
        rs.out_keys_offset = 64; /* into the keys, [0, 128) */
        REGION_REFUSED(&f, c, &rs, "a top-k's results overlap its keys or vals");
        rs = base;
        rs.out_vals = a;
        rs.out_vals_offset = 100;
        REGION_REFUSED(&f, c, &rs, "a top-k's results overlap its keys or vals");
        rs = base;
        rs.out_vals_offset = 40; /* keys [0, 48) */
        REGION_REFUSED(&f, c, &rs, "the out_keys and out_vals spans overlap");
        rs = base;
        rs.vals = NULL;
        REGION_REFUSED(&f, c, &rs, "the vals region must not be NULL");
        rs.payload = SORTD_PAYLOAD_ARGSORT32; /* no input values: vals unused */
        OK(c, sortd_sort_in_region(c, &rs));

        ck_assert_int_eq(sortd_region_destroy(c2, o), SORTD_OK);
        close_fake(&g, c2);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, b), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, d), SORTD_OK);
        close_fake(&f, c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("segments_client");
        TCase *tc = tcase_create("fake");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, segments_rows_inline);
        tcase_add_test(tc, segments_offsets_inline);
        tcase_add_test(tc, topk_rows_inline);
        tcase_add_test(tc, topk_offsets_inline);
        tcase_add_test(tc, segments_pipelined);
        tcase_add_test(tc, segments_refused_inline);
        tcase_add_test(tc, topk_held_bytes);
        tcase_add_test(tc, segments_region_wire);
        tcase_add_test(tc, topk_region_wire);
        tcase_add_test(tc, region_refusals);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
