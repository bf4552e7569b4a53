/*
 * The CPU engine's error paths: every bad descriptor, buffer, size and configuration is refused
 * with SORTD_E_* and a message, touches no byte of the caller's buffers, and leaves the engine
 * usable; a success clears the last message.
 */
#include <check.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_check.h"
#include "reference.h"
#include "suite.h"

/* ---- error paths --------------------------------------------------------------------------- */

/*
 * A call that must fail with want: the status, a message, and not one byte changed in
 * [mem, mem + len) (the memory holding keys and vals).
 */
static void expect_rejected(sortd_engine *e, const sortd_sort_desc *d, void *keys, void *vals,
                            size_t n, const void *mem, size_t len, sortd_status want,
                            const char *what)
{
        unsigned char *before = malloc(len + 1);
        sortd_status s;

        ck_assert_ptr_nonnull(before);
        memcpy(before, mem, len);
        s = sortd_engine_sort(e, d, keys, vals, n);
        ck_assert_msg(s == want, "%s: got %s (%d), want %s", what, sortd_strerror(s), (int)s,
                      sortd_strerror(want));
        ck_assert_msg(sortd_engine_error(e) && sortd_engine_error(e)[0], "%s: no message", what);
        expect_same(what, "bytes of keys and vals", mem, before, len, 1);
        free(before);
}

/* keys then vals in one buffer of random bytes. */
static unsigned char *random_buffer(size_t len, uint64_t seed)
{
        unsigned char *b = malloc(len);

        ck_assert_ptr_nonnull(b);
        datagen_fill(b, len, SORTD_KEY_U8, DATAGEN_UNIFORM, 0, seed);
        return b;
}

START_TEST(error_capacity)
{
        const size_t cap = 1000, n = cap + 1;
        sortd_engine *e = engine_new(cap, 0);
        unsigned char *mem = random_buffer(n * 16, 1);

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                        sortd_sort_desc d = {t, p, SORTD_ASCENDING, 0, 0};

                        expect_rejected(e, &d, mem, mem + n * 8, n, mem, n * 16, SORTD_E_CAPACITY,
                                        "n above capacity");
                        expect_rejected(e, &d, mem, mem + n * 8, (size_t)-1, mem, n * 16,
                                        SORTD_E_CAPACITY, "n = SIZE_MAX");
                }
        free(mem);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(error_bit_range)
{
        const size_t n = 100;
        unsigned w = 8 * (unsigned)sortd_key_size(_i);
        const unsigned bad[][2] = {
                {0, w + 1}, {w, 0},         {w, w},    {w + 5, w + 9},  {1, 1},
                {5, 3},     {w - 1, w - 1}, {0, 1000}, {UINT32_MAX, 0},
        };
        sortd_engine *e = engine_new(n, 0);
        unsigned char *mem = random_buffer(n * 16, 2);

        for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        sortd_sort_desc d = {_i, SORTD_PAYLOAD_ARGSORT64, o, bad[b][0], bad[b][1]};
                        char what[64];

                        snprintf(what, sizeof(what), "bit range [%u,%u) of %u bits", bad[b][0],
                                 bad[b][1], w);
                        expect_rejected(e, &d, mem, mem + n * 8, n, mem, n * 16, SORTD_E_INVAL,
                                        what);
                }
        free(mem);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(error_enums)
{
        const size_t n = 100;
        const int bad[] = {-1, 1000, INT32_MIN, INT32_MAX};
        sortd_engine *e = engine_new(n, 0);
        unsigned char *mem = random_buffer(n * 16, 3);
        sortd_sort_desc ok = {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0};

        for (int i = -1; i < 4; i++) {
                int v = i < 0 ? 0 : bad[i];
                sortd_sort_desc d = ok;

                d.key_type = i < 0 ? SORTD_KEY_TYPE_COUNT : (sortd_key_type)v;
                expect_rejected(e, &d, mem, mem + n * 8, n, mem, n * 16, SORTD_E_INVAL,
                                "unknown key type");
                d = ok;
                d.payload = i < 0 ? SORTD_PAYLOAD_COUNT : (sortd_payload)v;
                expect_rejected(e, &d, mem, mem + n * 8, n, mem, n * 16, SORTD_E_INVAL,
                                "unknown payload");
                d = ok;
                d.order = i < 0 ? SORTD_ORDER_COUNT : (sortd_order)v;
                expect_rejected(e, &d, mem, mem + n * 8, n, mem, n * 16, SORTD_E_INVAL,
                                "unknown order");
        }
        expect_rejected(e, NULL, mem, mem + n * 8, n, mem, n * 16, SORTD_E_INVAL, "NULL desc");
        free(mem);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(error_null_buffers)
{
        const size_t n = 100;
        sortd_engine *e = engine_new(n, 0);
        unsigned char *mem = random_buffer(n * 16, 4);

        ck_assert_int_eq(sortd_engine_sort(NULL, NULL, mem, NULL, n), SORTD_E_INVAL);
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                        sortd_sort_desc d = {t, p, SORTD_DESCENDING, 0, 0};

                        expect_rejected(e, &d, NULL, mem + n * 8, n, mem, n * 16, SORTD_E_INVAL,
                                        "NULL keys");
                        expect_rejected(e, &d, NULL, mem + n * 8, 1, mem, n * 16, SORTD_E_INVAL,
                                        "NULL keys, n = 1");
                        if (p == SORTD_PAYLOAD_NONE)
                                continue;
                        expect_rejected(e, &d, mem, NULL, n, mem, n * 16, SORTD_E_INVAL,
                                        "NULL vals with a payload");
                        expect_rejected(e, &d, mem, NULL, 1, mem, n * 16, SORTD_E_INVAL,
                                        "NULL vals with a payload, n = 1");
                }
        free(mem);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(error_misaligned)
{
        const size_t n = 100;
        sortd_engine *e = engine_new(n, 0);
        unsigned char *mem = random_buffer(n * 16 + 64, 5);
        unsigned char *keys = mem, *vals = mem + n * 8 + 32;
        size_t len = n * 16 + 64;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++) {
                        sortd_sort_desc d = {t, p, SORTD_ASCENDING, 0, 0};
                        size_t kb = sortd_key_size(t), vb = sortd_payload_size(p);

                        for (size_t off = 1; off < kb; off++)
                                expect_rejected(e, &d, keys + off, vals, n, mem, len, SORTD_E_INVAL,
                                                "misaligned keys");
                        for (size_t off = 1; off < vb; off++)
                                expect_rejected(e, &d, keys, vals + off, n, mem, len, SORTD_E_INVAL,
                                                "misaligned vals");
                }
        free(mem);
        sortd_engine_destroy(e);
}
END_TEST

/* Overlapping keys and vals are refused; touching ones are fine. */
START_TEST(error_overlap)
{
        const size_t n = 64;
        sortd_engine *e = engine_new(n, 0);
        size_t len = n * 16 * 2;
        unsigned char *mem = random_buffer(len, 6);
        struct tally tl = {0, 0};

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = SORTD_PAYLOAD_VALUES32; p < SORTD_PAYLOAD_COUNT; p++) {
                        sortd_sort_desc d = {t, p, SORTD_ASCENDING, 0, 0};
                        size_t kb = sortd_key_size(t), vb = sortd_payload_size(p);
                        unsigned char *k = mem + 8 * n, *v;

                        expect_rejected(e, &d, k, k, n, mem, len, SORTD_E_INVAL, "vals == keys");
                        v = k + n * kb / 2;
                        expect_rejected(e, &d, k, v, n, mem, len, SORTD_E_INVAL,
                                        "vals start inside keys");
                        v = k + n * kb - vb;
                        expect_rejected(e, &d, k, v, n, mem, len, SORTD_E_INVAL,
                                        "the last key overlaps the first value");
                        v = k - n * vb + vb;
                        expect_rejected(e, &d, k, v, n, mem, len, SORTD_E_INVAL,
                                        "the last value overlaps the first key");
                        v = k - n * vb / 2;
                        expect_rejected(e, &d, k, v, n, mem, len, SORTD_E_INVAL,
                                        "keys start inside vals");

                        /* adjacent both ways: valid, and sorted like the reference */
                        for (int side = 0; side < 2; side++) {
                                unsigned char *want = malloc(n * (kb + vb));
                                struct sort_case c =
                                        make_case(t, p, SORTD_ASCENDING, all_dists[0], n);
                                char name[256];

                                ck_assert_ptr_nonnull(want);
                                v = side ? k + n * kb : k - n * vb;
                                datagen_fill(k, n, t, DATAGEN_UNIFORM, 0, c.seed);
                                datagen_fill_values(v, n, (unsigned)vb, c.seed);
                                memcpy(want, k, n * kb);
                                memcpy(want + n * kb, v, n * vb);
                                ck_assert_int_eq(ref_sort(&d, want, want + n * kb, n), 0);
                                describe(&c, name, sizeof(name));
                                ck_assert_msg(sortd_engine_sort(e, &d, k, v, n) == SORTD_OK,
                                              "%s: adjacent keys and vals: %s", name,
                                              sortd_engine_error(e));
                                expect_same(name, "keys", k, want, n, kb);
                                expect_same(name, "vals", v, want + n * kb, n, vb);
                                free(want);
                                tl.cases++;
                        }
                }
        ck_assert_uint_eq(tl.cases, SORTD_KEY_TYPE_COUNT * 4 * 2);
        free(mem);
        sortd_engine_destroy(e);
}
END_TEST

/* After a failure the message is set; after the next success it is "" again. */
START_TEST(error_message_cleared)
{
        sortd_engine *e = engine_new(10, 0);
        uint32_t keys[11] = {5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 10};
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};

        ck_assert_int_eq(sortd_engine_sort(e, &d, keys, NULL, 11), SORTD_E_CAPACITY);
        ck_assert_str_ne(sortd_engine_error(e), "");
        ck_assert_int_eq(sortd_engine_sort(e, &d, keys, NULL, 10), SORTD_OK);
        ck_assert_str_eq(sortd_engine_error(e), "");
        for (uint32_t i = 0; i < 10; i++)
                ck_assert_uint_eq(keys[i], i);
        ck_assert_uint_eq(keys[10], 10);
        sortd_engine_destroy(e);
}
END_TEST

START_TEST(error_create)
{
        sortd_engine_config cfg = {.capacity = 100, .threads = 1};
        sortd_engine *sentinel = (sortd_engine *)&cfg, *e = sentinel;
        char why[256];

        memset(why, 0, sizeof(why));
        ck_assert_int_eq(sortd_engine_create("no-such-engine", &cfg, &e, why, sizeof(why)),
                         SORTD_E_INVAL);
        ck_assert_ptr_eq(e, sentinel);
        ck_assert_str_ne(why, "");
        memset(why, 0, sizeof(why));
        ck_assert_int_eq(sortd_engine_create("", &cfg, &e, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_eq(e, sentinel);
        ck_assert_str_ne(why, "");
        ck_assert_int_eq(sortd_engine_create("CPU", &cfg, &e, NULL, 0), SORTD_E_INVAL);
        ck_assert_ptr_eq(e, sentinel);
        memset(why, 0, sizeof(why));
        ck_assert_int_eq(sortd_engine_create(NULL, &cfg, &e, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_eq(e, sentinel);
        ck_assert_str_ne(why, "");
        memset(why, 0, sizeof(why));
        ck_assert_int_eq(sortd_engine_create("cpu", NULL, &e, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_eq(e, sentinel);
        ck_assert_str_ne(why, "");
        ck_assert_int_eq(sortd_engine_create("cpu", &cfg, NULL, why, sizeof(why)), SORTD_E_INVAL);
        sortd_engine_destroy(NULL);
}
END_TEST

/* The CPU engine has no device: each device-memory call says so and writes nothing. */
START_TEST(error_no_device)
{
        sortd_engine *e = engine_new(10, 0);
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES], handle[SORTD_CUDA_IPC_HANDLE_BYTES] = {0};
        uint32_t keys[4] = {3, 2, 1, 0};
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        void *base = &d;
        size_t bytes = 7;

        memset(uuid, 0xa5, sizeof(uuid));
        ck_assert_int_eq(sortd_engine_device_uuid(e, uuid), SORTD_E_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(sortd_engine_error(e), "GPU engine"));
        for (size_t i = 0; i < sizeof(uuid); i++)
                ck_assert_uint_eq(uuid[i], 0xa5);
        ck_assert_int_eq(sortd_engine_ipc_open(e, handle, &base, &bytes), SORTD_E_UNSUPPORTED);
        ck_assert_ptr_eq(base, &d);
        ck_assert_uint_eq(bytes, 7);
        ck_assert_int_eq(sortd_engine_ipc_close(e, keys), SORTD_E_UNSUPPORTED);
        ck_assert_int_eq(sortd_engine_sort_device(e, &d, keys, NULL, 4), SORTD_E_UNSUPPORTED);
        ck_assert_str_ne(sortd_engine_error(e), "");
        ck_assert_uint_eq(keys[0], 3);
        ck_assert_int_eq(sortd_engine_device_uuid(NULL, uuid), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_engine_sort_device(NULL, &d, keys, NULL, 4), SORTD_E_INVAL);
        sortd_engine_destroy(e);
}
END_TEST

static Suite *cpu_errors_suite(void)
{
        Suite *s = suite_create("cpu-errors");
        TCase *tc;

        tc = tcase_create("errors");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, error_capacity);
        tcase_add_loop_test(tc, error_bit_range, 0, SORTD_KEY_TYPE_COUNT);
        tcase_add_test(tc, error_enums);
        tcase_add_test(tc, error_null_buffers);
        tcase_add_test(tc, error_misaligned);
        tcase_add_test(tc, error_overlap);
        tcase_add_test(tc, error_message_cleared);
        tcase_add_test(tc, error_create);
        tcase_add_test(tc, error_no_device);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        cpu_check_seed_from_env();
        return run_suite(cpu_errors_suite());
}
