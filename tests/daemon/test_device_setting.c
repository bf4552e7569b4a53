/*
 * daemon/server/devices.c alone: the devices setting's form, and its entries resolved against
 * a list of devices as sortd_devices_list gives it (ordinals after CUDA_VISIBLE_DEVICES, UUIDs
 * as nvidia-smi -L prints them).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "suite.h"

#define UUID0 "GPU-6f1c0000-0000-0000-0000-000000000001"
#define UUID1 "GPU-6f1c0000-0000-0000-0000-000000000002"
#define UUID2 "GPU-a0000000-0000-0000-0000-000000000003"

static sortd_device_info list[3];
static char why[512];

/* Three devices: the first two share a UUID prefix (6f1c), the third does not. */
static void setup(void)
{
        static const uint8_t first[3] = {0x6f, 0x6f, 0xa0};

        for (int i = 0; i < 3; i++) {
                list[i] = (sortd_device_info){.ordinal = i};
                list[i].uuid[0] = first[i];
                list[i].uuid[1] = i < 2 ? 0x1c : 0;
                list[i].uuid[15] = (uint8_t)(i + 1);
        }
        unsetenv("CUDA_VISIBLE_DEVICES");
}

static int resolve(const char *spec, unsigned out[SORTD__DEVICES_MAX])
{
        why[0] = '\0';
        return sortd__devices_resolve(spec, list, 3, out, why, sizeof(why));
}

/* An error whose message holds text. */
static void refused(const char *spec, const char *text)
{
        unsigned out[SORTD__DEVICES_MAX];

        ck_assert_int_eq(resolve(spec, out), -EINVAL);
        ck_assert_msg(strstr(why, text), "devices = '%s': '%s' lacks '%s'", spec, why, text);
}

START_TEST(auto_is_every_device)
{
        unsigned out[SORTD__DEVICES_MAX];

        ck_assert_int_eq(resolve("auto", out), 3);
        for (unsigned i = 0; i < 3; i++)
                ck_assert_uint_eq(out[i], i);
        ck_assert_int_eq(sortd__devices_resolve("auto", list, 0, out, why, sizeof(why)), 0);
}
END_TEST

/* Ordinals and UUIDs mix, in the order given, blanks around entries allowed. */
START_TEST(ordinals_and_uuids)
{
        unsigned out[SORTD__DEVICES_MAX];

        ck_assert_int_eq(resolve("2, 0", out), 2);
        ck_assert_uint_eq(out[0], 2);
        ck_assert_uint_eq(out[1], 0);
        ck_assert_int_eq(resolve(UUID1 "," UUID2, out), 2);
        ck_assert_uint_eq(out[0], 1);
        ck_assert_uint_eq(out[1], 2);
        /* A unique prefix, either case, and MIG- as nvidia-smi prints a MIG instance. */
        ck_assert_int_eq(resolve("GPU-A0,0", out), 2);
        ck_assert_uint_eq(out[0], 2);
        ck_assert_int_eq(resolve("MIG-6f1c0000-0000-0000-0000-000000000002", out), 1);
        ck_assert_uint_eq(out[0], 1);
}
END_TEST

START_TEST(bad_entries)
{
        refused("", "devices is empty");
        refused(",", "empty entry");
        refused("0,,1", "empty entry");
        refused("gpu0", "neither a CUDA ordinal nor a device UUID");
        refused("GPU-", "neither");
        refused("GPU-xyz", "neither");
        refused("-1", "neither");
        refused("0,0", "'0' is named twice");
        refused("3", "no CUDA device 3 (3 visible)");
        refused("GPU-ffff", "no visible CUDA device is GPU-ffff");
        refused("GPU-6f1c", "'GPU-6f1c' names more than one device");
        refused("1," UUID1, "'1' and '" UUID1 "' name the same device");
        refused("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "more than 16 entries");
}
END_TEST

/* The form alone is checked before any device is known (--check-config). */
START_TEST(form_checked_early)
{
        ck_assert_int_eq(sortd__devices_check("auto", why, sizeof(why)), 0);
        ck_assert_int_eq(sortd__devices_check("7," UUID0, why, sizeof(why)), 0);
        ck_assert_int_eq(sortd__devices_check("7,7", why, sizeof(why)), -EINVAL);
        ck_assert_int_eq(sortd__devices_check("", why, sizeof(why)), -EINVAL);
}
END_TEST

/* The ordinals are those the driver left after CUDA_VISIBLE_DEVICES, and the error says so. */
START_TEST(visible_devices_named)
{
        setenv("CUDA_VISIBLE_DEVICES", "1", 1);
        ck_assert_int_eq(sortd__devices_resolve("1", list, 1, (unsigned[SORTD__DEVICES_MAX]){0},
                                                why, sizeof(why)),
                         -EINVAL);
        ck_assert_msg(strstr(why, "1 visible, after CUDA_VISIBLE_DEVICES"), "%s", why);
        unsetenv("CUDA_VISIBLE_DEVICES");
}
END_TEST

/* capacity=auto: half the free memory over the engines, at 32 bytes a key, within bounds. */
START_TEST(auto_capacity)
{
        ck_assert_uint_eq(sortd__devices_auto_capacity(64ull << 30, 2, 1ull << 40), 512u << 20);
        ck_assert_uint_eq(sortd__devices_auto_capacity(64ull << 30, 1, 1ull << 40), 1u << 30);
        ck_assert_uint_eq(sortd__devices_auto_capacity(64ull << 30, 2, 256u << 20), 256u << 20);
        ck_assert_uint_eq(sortd__devices_auto_capacity(64ull << 30, 2, 100u << 20), 100u << 20);
        ck_assert_uint_eq(sortd__devices_auto_capacity(1ull << 62, 1, UINT64_MAX), 1ull << 40);
        ck_assert_uint_eq(sortd__devices_auto_capacity(63, 1, 1ull << 40), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("devices");
        TCase *tc = tcase_create("devices");

        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, auto_is_every_device);
        tcase_add_test(tc, ordinals_and_uuids);
        tcase_add_test(tc, bad_entries);
        tcase_add_test(tc, form_checked_early);
        tcase_add_test(tc, visible_devices_named);
        tcase_add_test(tc, auto_capacity);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
