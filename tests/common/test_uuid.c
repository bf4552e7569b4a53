/* A device UUID's text form: what the daemon prints is what the clients parse back. */
#include <string.h>

#include "sortd_types.h"
#include "suite.h"

static const uint8_t UUID[SORTD_DEVICE_UUID_BYTES] = {0x6f, 0x1c, 0x0e, 0x2a, 0x91, 0xd4,
                                                      0x4b, 0x8e, 0xa0, 0xc5, 0x3e, 0x7d,
                                                      0x2f, 0x9b, 0x1a, 0x60};
static const char TEXT[] = "GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60";

START_TEST(format)
{
        char out[SORTD_DEVICE_UUID_TEXT];

        memset(out, 'x', sizeof(out));
        sortd_device_uuid_format(UUID, out);
        ck_assert_str_eq(out, TEXT);
        ck_assert_uint_eq(strlen(TEXT) + 1, SORTD_DEVICE_UUID_TEXT);
}
END_TEST

START_TEST(parse_every_spelling)
{
        static const char *const good[] = {
                TEXT,
                "MIG-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60",
                "6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60",
                "GPU-6F1C0E2A-91D4-4B8E-A0C5-3E7D2F9B1A60",
        };

        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                uint8_t got[SORTD_DEVICE_UUID_BYTES] = {0};

                ck_assert_msg(sortd_device_uuid_parse(good[i], got) == 0, "%s", good[i]);
                ck_assert_mem_eq(got, UUID, sizeof(got));
        }
}
END_TEST

START_TEST(parse_refuses)
{
        static const char *const bad[] = {
                "",
                "GPU-",
                "GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a6",   /* a digit short */
                "GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a600", /* one more */
                "GPU-6f1c0e2a91d4-4b8e-a0c5-3e7d2f9b1a60",   /* a dash missing */
                "GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a6g",  /* not hex */
                "GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60 ", /* trailing space */
                " GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60",
                "gpu-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60", /* the prefix in nvidia-smi's case only */
                "GPU-GPU-6f1c0e2a-91d4-4b8e-a0c5-3e7d2f9b1a60",
                "1",
        };
        uint8_t got[SORTD_DEVICE_UUID_BYTES];

        memset(got, 0xee, sizeof(got));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(sortd_device_uuid_parse(bad[i], got) == -1, "'%s'", bad[i]);
        ck_assert_int_eq(sortd_device_uuid_parse(NULL, got), -1);
        for (size_t i = 0; i < sizeof(got); i++)
                ck_assert_uint_eq(got[i], 0xee); /* untouched on failure */
}
END_TEST

/* Every byte value survives the round trip, at every position. */
START_TEST(round_trip)
{
        uint8_t u[SORTD_DEVICE_UUID_BYTES], back[SORTD_DEVICE_UUID_BYTES];
        char text[SORTD_DEVICE_UUID_TEXT];

        for (unsigned v = 0; v < 256; v++) {
                for (unsigned i = 0; i < sizeof(u); i++)
                        u[i] = (uint8_t)(v + 37 * i);
                sortd_device_uuid_format(u, text);
                ck_assert_int_eq(sortd_device_uuid_parse(text, back), 0);
                ck_assert_mem_eq(back, u, sizeof(u));
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("uuid");
        TCase *tc = tcase_create("uuid");

        tcase_add_test(tc, format);
        tcase_add_test(tc, parse_every_spelling);
        tcase_add_test(tc, parse_refuses);
        tcase_add_test(tc, round_trip);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
