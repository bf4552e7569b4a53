/*
 * sortd on a GPU engine, without a GPU: sortd-emulated-cuda runs the cuda engine's own code on
 * the stand-in CUDA runtime (tests/support/fake_cuda), its kernels on the SIMT emulator. What a
 * daemon does only with a GPU engine is tested here end to end, with every result checked
 * against the reference sort:
 *   - inline sorts received into the engine's pinned host pool and sorted on the device (the
 *     CPU path off, so none is sorted on the host);
 *   - memfd regions registered with the engine (cudaHostRegister) and sorted in place;
 *   - small sorts pipelined, taken in batches (the segmented kernel);
 *   - a kernel that faults: the sort fails with the device's error, the engine is lost, no new
 *     cuda engine can be made in a process whose context died, and the daemon serves on with
 *     the CPU engine.
 * (test_cuda_ipc-emulated runs the CUDA IPC regions on the same daemon.)
 */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datagen.h"
#include "harness.h"
#include "reference.h"

static daemon_proc g_daemon;
static sortd_conn *g_conn;
static char g_fault_file[64];

static void setup(void)
{
        const char *const extra[] = {
                "--engine", "cuda",        "--capacity", "16K", "--cpu-path-keys",
                "0",        "--host-pool", "8M",         NULL};

        snprintf(g_fault_file, sizeof(g_fault_file), "/tmp/sortd-fake-fault-%d", (int)getpid());
        unlink(g_fault_file);
        setenv("FAKE_CUDA_FAULT_FILE", g_fault_file, 1);
        daemon_start(&g_daemon, extra);
        g_conn = client_open(&g_daemon);
}

static void teardown(void)
{
        sortd_close(g_conn);
        ck_assert_int_eq(daemon_stop(&g_daemon, SIGTERM), 0);
        unlink(g_fault_file);
}

static const sortd_key_type types[] = {SORTD_KEY_U8,  SORTD_KEY_I16, SORTD_KEY_U32,
                                       SORTD_KEY_F32, SORTD_KEY_I64, SORTD_KEY_F64};
static const size_t sizes[] = {1, 2, 1000, 16384};

/* Sorts keys (and values) of d inline through sortd; the reference's answer, else fails. */
static sortd_status sort_inline(const sortd_sort_desc *d, size_t n, uint64_t seed, bool expect)
{
        size_t ks = sortd_key_size(d->key_type), vs = sortd_payload_size(d->payload);
        uint8_t *keys = xmalloc(n * ks), *vals = xmalloc(n * vs + 1);
        uint8_t *want_k = xmalloc(n * ks), *want_v = xmalloc(n * vs + 1);
        sortd_sort_options o = {d->order, d->begin_bit, d->end_bit};
        sortd_status s;

        datagen_fill(keys, n, d->key_type, DATAGEN_FEW, 0, seed);
        if (vs && !sortd_payload_is_argsort(d->payload))
                datagen_fill_values(vals, n, (unsigned)vs, seed + 1);
        memcpy(want_k, keys, n * ks);
        memcpy(want_v, vals, n * vs);
        if (sortd_payload_is_argsort(d->payload))
                s = sortd_argsort(g_conn, keys, vals, vs, n, d->key_type, &o);
        else if (vs)
                s = sortd_sort_pairs(g_conn, keys, vals, vs, n, d->key_type, &o);
        else
                s = sortd_sort(g_conn, keys, n, d->key_type, &o);
        if (expect) {
                ck_assert_msg(s == SORTD_OK, "%s %s n=%zu: %s", sortd_key_type_name(d->key_type),
                              sortd_payload_name(d->payload), n, sortd_error_message(g_conn));
                ck_assert_int_eq(ref_sort(d, want_k, vs ? want_v : NULL, n), 0);
                ck_assert_msg(memcmp(keys, want_k, n * ks) == 0, "%s %s n=%zu: keys differ",
                              sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n);
                ck_assert_msg(memcmp(vals, want_v, n * vs) == 0, "%s %s n=%zu: values differ",
                              sortd_key_type_name(d->key_type), sortd_payload_name(d->payload), n);
        }
        free(keys);
        free(vals);
        free(want_k);
        free(want_v);
        return s;
}

/* _i walks the types x keys only, pairs and argsort x both orders. */
START_TEST(inline_sorts_on_the_device)
{
        const sortd_payload payloads[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES64,
                                          SORTD_PAYLOAD_ARGSORT32};
        sortd_sort_desc d = {.key_type = types[_i / 6],
                             .payload = payloads[_i / 2 % 3],
                             .order = (sortd_order)(_i % 2)};
        sortd_server_status before = status_of(&g_daemon), after;

        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
                sort_inline(&d, sizes[k], (uint64_t)_i * 10 + k, true);
        after = status_of(&g_daemon);
        ck_assert_str_eq(after.engine, "cuda");
        ck_assert_msg(strstr(after.device, "SIMT emulator"), "%s", after.device);
        ck_assert_uint_eq(after.sorts_ok - before.sorts_ok, 4);
        ck_assert_uint_eq(after.cpu_path_sorts, 0);
        ck_assert_uint_gt(after.host_pool_bytes, 0);
        ck_assert_uint_eq(after.host_pool_misses, 0);
}
END_TEST

/* A memfd region registered with the engine: sorted in place, values in a second region. */
START_TEST(region_sorts_on_the_device)
{
        const size_t n = 12345;
        sortd_region *kr = NULL, *vr = NULL;
        sortd_sort_desc d = {.key_type = types[_i],
                             .payload = SORTD_PAYLOAD_VALUES32,
                             .order = (sortd_order)(_i % 2)};
        size_t ks = sortd_key_size(d.key_type);
        uint8_t *want_k = xmalloc(n * ks), *want_v = xmalloc(n * 4);
        sortd_region_sort rs = {.keys_offset = 64,
                                .vals_offset = 4096,
                                .n = n,
                                .key_type = d.key_type,
                                .payload = d.payload,
                                .opts = {d.order, 0, 0}};

        ck_assert_int_eq(sortd_region_create(g_conn, 64 + n * ks, &kr), SORTD_OK);
        ck_assert_int_eq(sortd_region_create(g_conn, 4096 + n * 4, &vr), SORTD_OK);
        datagen_fill(want_k, n, d.key_type, DATAGEN_UNIFORM, 0, 70 + (uint64_t)_i);
        datagen_fill_values(want_v, n, 4, 80 + (uint64_t)_i);
        memcpy((uint8_t *)sortd_region_data(kr) + 64, want_k, n * ks);
        memcpy((uint8_t *)sortd_region_data(vr) + 4096, want_v, n * 4);
        rs.keys = kr;
        rs.vals = vr;
        ck_assert_msg(sortd_sort_in_region(g_conn, &rs) == SORTD_OK, "%s",
                      sortd_error_message(g_conn));
        ck_assert_int_eq(ref_sort(&d, want_k, want_v, n), 0);
        ck_assert_msg(memcmp((uint8_t *)sortd_region_data(kr) + 64, want_k, n * ks) == 0,
                      "%s: keys differ", sortd_key_type_name(d.key_type));
        ck_assert_msg(memcmp((uint8_t *)sortd_region_data(vr) + 4096, want_v, n * 4) == 0,
                      "%s: values differ", sortd_key_type_name(d.key_type));
        ck_assert_int_eq(sortd_region_destroy(g_conn, vr), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(g_conn, kr), SORTD_OK);
        ck_assert_uint_eq(status_of(&g_daemon).regions, 0);
        free(want_k);
        free(want_v);
}
END_TEST

/* Small sorts pipelined: queued behind each other, the engine takes them in batches, which a
   GPU engine packs into its staging area and sorts with the segmented kernel. */
START_TEST(batches_on_the_device)
{
        enum { COUNT = 24 };
        const sortd_payload payloads[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                          SORTD_PAYLOAD_ARGSORT64};
        sortd_request r[COUNT];
        sortd_sort_desc d[COUNT];
        uint8_t *want_k[COUNT], *want_v[COUNT];
        sortd_server_status before = status_of(&g_daemon), after;

        for (int i = 0; i < COUNT; i++) {
                size_t n = 50 + (size_t)i * 97;
                size_t ks, vs;

                d[i] = (sortd_sort_desc){.key_type = types[i % 6],
                                         .payload = payloads[i % 3],
                                         .order = (sortd_order)(i / 6 % 2)};
                ks = sortd_key_size(d[i].key_type);
                vs = sortd_payload_size(d[i].payload);
                r[i] = (sortd_request){.keys = xmalloc(n * ks),
                                       .vals = vs ? xmalloc(n * vs) : NULL,
                                       .n = n,
                                       .key_type = d[i].key_type,
                                       .payload = d[i].payload,
                                       .opts = {d[i].order, 0, 0}};
                datagen_fill(r[i].keys, n, d[i].key_type, DATAGEN_UNIFORM, 0, 900 + (uint64_t)i);
                if (vs && !sortd_payload_is_argsort(d[i].payload))
                        datagen_fill_values(r[i].vals, n, (unsigned)vs, 950 + (uint64_t)i);
                want_k[i] = xmalloc(n * ks);
                want_v[i] = xmalloc(n * vs + 1);
                memcpy(want_k[i], r[i].keys, n * ks);
                if (vs)
                        memcpy(want_v[i], r[i].vals, n * vs);
                ck_assert_int_eq(sortd_submit(g_conn, &r[i]), SORTD_OK);
        }
        for (int i = 0; i < COUNT; i++) {
                size_t ks = sortd_key_size(d[i].key_type), vs = sortd_payload_size(d[i].payload);

                ck_assert_msg(sortd_receive(g_conn, &r[i]) == SORTD_OK, "request %d: %s", i,
                              sortd_error_message(g_conn));
                ck_assert_int_eq(ref_sort(&d[i], want_k[i], vs ? want_v[i] : NULL, r[i].n), 0);
                ck_assert_msg(memcmp(r[i].keys, want_k[i], r[i].n * ks) == 0,
                              "request %d: keys differ", i);
                ck_assert_msg(vs == 0 || memcmp(r[i].vals, want_v[i], r[i].n * vs) == 0,
                              "request %d: values differ", i);
                free(r[i].keys);
                free(r[i].vals);
                free(want_k[i]);
                free(want_v[i]);
        }
        after = status_of(&g_daemon);
        ck_assert_uint_gt(after.batches, before.batches);
        ck_assert_uint_eq(after.cpu_path_sorts, 0);
}
END_TEST

/*
 * The device faults during a sort: that sort fails with the device's error, and the daemon
 * replaces the engine. A new cuda engine cannot be made (the runtime's context died with the
 * fault, as a real one does), so the replacement is the CPU engine, which sorts on.
 */
START_TEST(device_fault_moves_to_the_cpu)
{
        const sortd_sort_desc d = {.key_type = SORTD_KEY_U32, .payload = SORTD_PAYLOAD_NONE};
        FILE *f = fopen(g_fault_file, "w");
        sortd_server_status st;
        sortd_status s;

        ck_assert_ptr_nonnull(f);
        fclose(f);
        s = sort_inline(&d, 5000, 1, false);
        ck_assert_int_eq(s, SORTD_E_DEVICE);
        ck_assert_msg(strstr(sortd_error_message(g_conn), "illegal memory access"), "%s",
                      sortd_error_message(g_conn));
        unlink(g_fault_file);

        sort_inline(&d, 5000, 2, true);
        /* The sort above may have run on another lane of the device, which replaced its own
           stale engine, while the lane that saw the fault was still making its replacement:
           Status names that lane's engine, so wait for it (bounded) rather than race it. */
        for (int tries = 0;; tries++) {
                st = status_of(&g_daemon);
                if (strcmp(st.engine, "cpu") == 0 || tries == 3000)
                        break;
                usleep(10000);
        }
        ck_assert_uint_eq(st.engines_lost, 1);
        ck_assert_str_eq(st.engine, "cpu");
        ck_assert_msg(strstr(st.engine_reason, "cuda"), "%s", st.engine_reason);
}
END_TEST

static Suite *emulated_gpu_suite(void)
{
        Suite *s = suite_create("emulated_gpu");
        TCase *tc = tcase_create("emulated_gpu");

        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 600);
        tcase_add_loop_test(tc, inline_sorts_on_the_device, 0, 6 * 3 * 2);
        tcase_add_loop_test(tc, region_sorts_on_the_device, 0, 6);
        tcase_add_test(tc, batches_on_the_device);
        /* Last: it loses the engine for good. */
        tcase_add_test(tc, device_fault_moves_to_the_cpu);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite_nofork(emulated_gpu_suite());
}
