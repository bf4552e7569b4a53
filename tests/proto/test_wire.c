/*
 * proto/wire.c on its own: the frame header's byte layout and checks, the sort message's
 * checks and sizes, and protobuf-c's unpack on garbage.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "wire.h"

static void put_header(uint8_t *out, uint32_t magic, uint16_t version, uint16_t flags,
                       uint32_t mlen, uint64_t plen)
{
        sortd__wire_header h = {magic, version, flags, mlen, plen};

        sortd__wire_header_pack(&h, out);
}

START_TEST(header_round_trip)
{
        uint8_t buf[SORTD__WIRE_HEADER_SIZE];
        sortd__wire_header h;
        char why[160];

        put_header(buf, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 1234, 0x0102030405060708ull);
        ck_assert_int_eq(memcmp(buf, "SRTD", 4), 0); /* little-endian on the wire */
        ck_assert_int_eq(buf[12], 0x08);
        ck_assert_int_eq(buf[19], 0x01);
        sortd__wire_header_unpack(buf, &h);
        ck_assert_uint_eq(h.magic, SORTD__WIRE_MAGIC);
        ck_assert_uint_eq(h.version, SORTD__WIRE_VERSION);
        ck_assert_uint_eq(h.message_len, 1234);
        ck_assert_uint_eq(h.payload_len, 0x0102030405060708ull);
        ck_assert_int_eq(sortd__wire_header_check(&h, 64 * 1024, why, sizeof(why)), SORTD_OK);
}
END_TEST

START_TEST(version_error_names_both)
{
        sortd__wire_header h = {SORTD__WIRE_MAGIC, 7, 0, 10, 0};
        char why[160];

        ck_assert_int_eq(sortd__wire_header_check(&h, 1024, why, sizeof(why)), SORTD_E_PROTOCOL);
        ck_assert_ptr_nonnull(strstr(why, "7"));
        ck_assert_ptr_nonnull(strstr(why, "speaks 1"));
}
END_TEST

static Sortd__Wire__Sort good_sort(void)
{
        static Sortd__Wire__InlineData inl = SORTD__WIRE__INLINE_DATA__INIT;
        Sortd__Wire__Sort s = SORTD__WIRE__SORT__INIT;

        s.key_type = SORTD__WIRE__KEY_TYPE__KEY_U32;
        s.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64;
        s.n = 10;
        s.data_case = SORTD__WIRE__SORT__DATA_INLINE_DATA;
        s.inline_data = &inl;
        return s;
}

START_TEST(sort_checks)
{
        Sortd__Wire__Sort s = good_sort();
        sortd__wire_sizes z;
        sortd_sort_desc d;
        char why[200];

        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_OK);
        ck_assert_int_eq(d.key_type, SORTD_KEY_U32);
        ck_assert_int_eq(d.payload, SORTD_PAYLOAD_VALUES64);
        ck_assert_uint_eq(z.keys_bytes, 40);
        ck_assert_uint_eq(z.vals_bytes, 80);
        ck_assert_uint_eq(z.request_len, 120);
        ck_assert_uint_eq(z.reply_len, 120);

        s.payload = SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(z.request_len, 40);
        ck_assert_uint_eq(z.reply_len, 80);

        s = good_sort();
        s.key_type = 0;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s.key_type = SORTD__WIRE__KEY_TYPE__KEY_I128 + 1;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_nonnull(strstr(why, "key type 15"));
        s.key_type = SORTD__WIRE__KEY_TYPE__KEY_U128; /* 16-byte keys: sizes of 16 a key */
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_OK);
        ck_assert_int_eq(d.key_type, SORTD_KEY_U128);
        ck_assert_uint_eq(z.keys_bytes, 160);
        ck_assert_uint_eq(z.reply_len, 160 + 80);
        s = good_sort();
        s.payload = 6;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s = good_sort();
        s.order = 2;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s = good_sort();
        s.begin_bit = 32;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s.begin_bit = 4;
        s.end_bit = 4;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s.end_bit = 33;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s = good_sort();
        s.n = UINT64_MAX / 8; /* sizes would overflow */
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s = good_sort();
        s.data_case = SORTD__WIRE__SORT__DATA__NOT_SET;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        s.data_case = SORTD__WIRE__SORT__DATA_REGION; /* where it is, is the daemon's to find */
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_OK);
}
END_TEST

/* protobuf-c's unpack on garbage and truncations: NULL or a message, never a crash. */
START_TEST(unpack_garbage)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT, *r;
        Sortd__Wire__Sort s = good_sort();
        uint8_t buf[256], junk[256];
        size_t len;

        req.id = 42;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = &s;
        len = sortd__wire__request__pack(&req, buf);
        for (size_t cut = 0; cut <= len; cut++) {
                r = sortd__wire__request__unpack(NULL, cut, buf);
                if (r)
                        sortd__wire__request__free_unpacked(r, NULL);
        }
        r = sortd__wire__request__unpack(NULL, len, buf);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->id, 42);
        sortd__wire__request__free_unpacked(r, NULL);
        srand(1);
        for (int k = 0; k < 2000; k++) {
                for (size_t i = 0; i < sizeof(junk); i++)
                        junk[i] = (uint8_t)rand();
                r = sortd__wire__request__unpack(NULL, (size_t)rand() % sizeof(junk), junk);
                if (r)
                        sortd__wire__request__free_unpacked(r, NULL);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("wire");
        TCase *tc = tcase_create("codec");

        tcase_add_test(tc, header_round_trip);
        tcase_add_test(tc, version_error_names_both);
        tcase_add_test(tc, sort_checks);
        tcase_add_test(tc, unpack_garbage);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
