/*
 * The devices a daemon lists, as libsortd hands them on (sortd_info, sortd_server_status), and
 * the device a sort asks for: sent as the Sort's device_uuid, or refused before anything is
 * sent when the last Hello did not list it as serving. Against a stand-in daemon
 * (fake_sortd.c) whose rows the test chooses.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_sortd.h"
#include "sortd.h"
#include "suite.h"

static sortd_conn *connect_with(fake_sortd *f, unsigned devices)
{
        sortd_conn *c = NULL;
        char err[256];

        fake_start(f);
        f->devices = devices;
        ck_assert_msg(sortd_connect(f->sock, NULL, &c, err, sizeof(err)) == SORTD_OK, "%s", err);
        return c;
}

/* Row i as fake_device_uuid describes it. */
static void check_row(const sortd_device *d, unsigned i, int with_counters)
{
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
        char want[32];

        fake_device_uuid(i, uuid);
        ck_assert_mem_eq(d->uuid, uuid, sizeof(uuid));
        ck_assert_uint_eq(d->ordinal, i);
        snprintf(want, sizeof(want), "fake GPU %u", i);
        ck_assert_str_eq(d->name, want);
        snprintf(want, sizeof(want), "0000:%02x:00.0", 0x10 + i);
        ck_assert_str_eq(d->pci_bus_id, want);
        ck_assert_int_eq(d->numa_node, (int)(i % 2));
        ck_assert_uint_eq(d->capacity, (1u << 20) + i);
        ck_assert_int_eq(d->state, i == 1 ? SORTD_DEVICE_FAILED : SORTD_DEVICE_SERVING);
        ck_assert_str_eq(d->reason,
                         i == 1 ? "self-check failed: the fake says so" : "self-check passed");
        ck_assert_uint_eq(d->streams, 2);
        if (!with_counters)
                return;
        ck_assert_uint_eq(d->sorts, 10 * i + 1);
        ck_assert_uint_eq(d->bytes, 1000 * i + 7);
        ck_assert_uint_eq(d->busy_ns, 3000000ull * i + 5);
        ck_assert_uint_eq(d->queued, i);
}

/* The fake's last Sort named uuid. */
static void sent(const fake_sortd *f, const uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        ck_assert_uint_eq(f->sort_device_uuid_len, SORTD_DEVICE_UUID_BYTES);
        ck_assert_mem_eq(f->sort_device_uuid, uuid, SORTD_DEVICE_UUID_BYTES);
}

START_TEST(hello_and_status_list_the_devices)
{
        fake_sortd f;
        sortd_conn *c = connect_with(&f, 3);
        sortd_info *info = calloc(1, sizeof(*info));
        sortd_server_status *st = calloc(1, sizeof(*st));

        sortd_get_info(c, info);
        ck_assert_uint_eq(info->device_count, 3);
        for (unsigned i = 0; i < 3; i++)
                check_row(&info->devices[i], i, 1);
        memset(info, 0xee, sizeof(*info));
        ck_assert_int_eq(sortd_hello(c, info), SORTD_OK);
        ck_assert_uint_eq(info->device_count, 3);
        check_row(&info->devices[2], 2, 1);
        ck_assert_int_eq(sortd_query_status(c, st), SORTD_OK);
        ck_assert_str_eq(st->engine, "fake");
        ck_assert_uint_eq(st->device_count, 3);
        for (unsigned i = 0; i < 3; i++)
                check_row(&st->devices[i], i, 1);
        free(st);
        free(info);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

START_TEST(no_devices)
{
        fake_sortd f;
        sortd_conn *c = connect_with(&f, 0);
        sortd_server_status *st = calloc(1, sizeof(*st));
        sortd_info info;

        sortd_get_info(c, &info);
        ck_assert_uint_eq(info.device_count, 0);
        memset(st, 0xee, sizeof(*st));
        ck_assert_int_eq(sortd_query_status(c, st), SORTD_OK);
        ck_assert_uint_eq(st->device_count, 0);
        free(st);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

/* More rows than the struct holds: the count is the daemon's, the first SORTD_MAX_DEVICES are
   kept, and a sort may still ask for one past them (the daemon judges it). */
START_TEST(more_devices_than_rows)
{
        fake_sortd f;
        sortd_conn *c = connect_with(&f, FAKE_MAX_DEVICES);
        sortd_info *info = calloc(1, sizeof(*info));
        uint32_t keys[4] = {3, 1, 2, 0};
        sortd_request r = {.keys = keys, .n = 4, .key_type = SORTD_KEY_U32};

        sortd_get_info(c, info);
        ck_assert_uint_eq(info->device_count, FAKE_MAX_DEVICES);
        check_row(&info->devices[SORTD_MAX_DEVICES - 1], SORTD_MAX_DEVICES - 1, 1);
        fake_device_uuid(FAKE_MAX_DEVICES - 1, r.device_uuid);
        ck_assert_msg(sortd_sort_request(c, &r) == SORTD_OK, "%s", sortd_error_message(c));
        sent(&f, r.device_uuid);
        free(info);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

/* The hint goes out as the Sort's device_uuid, inline and in a region; none goes out empty. */
START_TEST(hint_is_sent)
{
        fake_sortd f;
        sortd_conn *c = connect_with(&f, 3);
        uint32_t keys[4] = {3, 1, 2, 0};
        sortd_request r = {.keys = keys, .n = 4, .key_type = SORTD_KEY_U32};
        sortd_region *region;
        sortd_region_sort rs = {.n = 4, .key_type = SORTD_KEY_U32};

        ck_assert_int_eq(sortd_sort_request(c, &r), SORTD_OK);
        ck_assert_uint_eq(f.sort_device_uuid_len, 0);
        fake_device_uuid(2, r.device_uuid);
        ck_assert_msg(sortd_sort_request(c, &r) == SORTD_OK, "%s", sortd_error_message(c));
        sent(&f, r.device_uuid);
        ck_assert_int_eq(sortd_region_create(c, 4096, &region), SORTD_OK);
        rs.keys = region;
        fake_device_uuid(0, rs.device_uuid);
        ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s", sortd_error_message(c));
        sent(&f, rs.device_uuid);
        ck_assert_uint_eq(f.sorts, 3);
        ck_assert_int_eq(sortd_region_destroy(c, region), SORTD_OK);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

/* A call refused by the client itself: SORTD_E_INVAL, a message holding words, nothing sent,
   and the connection still good. */
static void refused(sortd_conn *c, fake_sortd *f, sortd_status s, const char *words)
{
        unsigned frames = f->frames;

        ck_assert_int_eq(s, SORTD_E_INVAL);
        ck_assert_msg(strstr(sortd_error_message(c), words), "'%s' lacks '%s'",
                      sortd_error_message(c), words);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        ck_assert_uint_eq(f->frames, frames + 1);
        ck_assert_uint_eq(f->sorts, 0);
}

START_TEST(hint_refused)
{
        fake_sortd f;
        sortd_conn *c = connect_with(&f, 3);
        uint32_t keys[4] = {3, 1, 2, 0};
        sortd_request r = {.keys = keys, .n = 4, .key_type = SORTD_KEY_U32};
        sortd_region *region;
        sortd_region_sort rs = {.n = 4, .key_type = SORTD_KEY_U32};

        /* unknown: named, with the serving ones (not device 1, which failed) */
        fake_device_uuid(7, r.device_uuid);
        refused(c, &f, sortd_sort_request(c, &r),
                "device GPU-08d1d2d3-d4d5-d6d7-d8d9-dadbdcdddedf is not one sortd serves; it "
                "serves GPU-01d1d2d3-d4d5-d6d7-d8d9-dadbdcdddedf, "
                "GPU-03d1d2d3-d4d5-d6d7-d8d9-dadbdcdddedf");
        refused(c, &f, sortd_submit(c, &r), "is not one sortd serves");
        /* listed, but not serving: its state and why */
        fake_device_uuid(1, r.device_uuid);
        refused(c, &f, sortd_sort_request(c, &r),
                "device GPU-02d1d2d3-d4d5-d6d7-d8d9-dadbdcdddedf is failed (self-check failed: "
                "the fake says so)");
        ck_assert_int_eq(sortd_region_create(c, 4096, &region), SORTD_OK);
        rs.keys = region;
        fake_device_uuid(5, rs.device_uuid);
        refused(c, &f, sortd_sort_in_region(c, &rs), "GPU-06d1d2d3");
        ck_assert_int_eq(sortd_region_destroy(c, region), SORTD_OK);
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

START_TEST(hint_without_devices)
{
        fake_sortd f;
        sortd_conn *c = connect_with(&f, 0);
        uint32_t keys[4] = {3, 1, 2, 0};
        sortd_request r = {.keys = keys, .n = 4, .key_type = SORTD_KEY_U32};

        fake_device_uuid(0, r.device_uuid);
        refused(c, &f, sortd_sort_request(c, &r), "it serves none (engine fake)");
        sortd_close(c);
        fake_stop(&f);
}
END_TEST

START_TEST(state_names)
{
        ck_assert_str_eq(sortd_device_state_name(SORTD_DEVICE_SERVING), "serving");
        ck_assert_str_eq(sortd_device_state_name(SORTD_DEVICE_FAILED), "failed");
        ck_assert_str_eq(sortd_device_state_name(SORTD_DEVICE_LOST), "lost");
        ck_assert_str_eq(sortd_device_state_name(SORTD_DEVICE_UNKNOWN), "unknown");
        ck_assert_str_eq(sortd_device_state_name((sortd_device_state)42), "unknown");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("devices");
        TCase *tc = tcase_create("devices");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, hello_and_status_list_the_devices);
        tcase_add_test(tc, no_devices);
        tcase_add_test(tc, more_devices_than_rows);
        tcase_add_test(tc, hint_is_sent);
        tcase_add_test(tc, hint_refused);
        tcase_add_test(tc, hint_without_devices);
        tcase_add_test(tc, state_names);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
