/*
 * The frame codec on its own: the header round trip, and the incremental reader fed good and
 * bad streams in pieces of every size (bad magic, version, flags, message length, bytes after
 * an error, payload sinks and discards).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "internal.h"

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

/* Feeds len bytes to the reader in pieces of at most `piece`; returns the last event. */
static sortd__fr_event feed(sortd__frame_reader *fr, const uint8_t *data, size_t len, size_t piece,
                            int *messages, int *payloads)
{
        sortd__fr_event ev = SORTD__FR_MORE;

        while (len) {
                uint8_t *dst;
                size_t room;

                sortd__fr_buffer(fr, &dst, &room);
                if (room == 0)
                        return ev == SORTD__FR_ERROR ? ev : (sortd__fr_event)-1;
                if (room > piece)
                        room = piece;
                if (room > len)
                        room = len;
                memcpy(dst, data, room);
                data += room;
                len -= room;
                ev = sortd__fr_consumed(fr, room);
                if (ev == SORTD__FR_MESSAGE && messages)
                        ++*messages;
                if (ev == SORTD__FR_PAYLOAD && payloads)
                        ++*payloads;
                if (ev == SORTD__FR_ERROR)
                        return ev;
        }
        return ev;
}

static const struct {
        uint32_t magic;
        uint16_t version, flags;
        uint32_t mlen;
        const char *expect;
} bad_headers[] = {
        {0x12345678, SORTD__WIRE_VERSION, 0, 10, "magic"},
        {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION + 1, 0, 10, "version 2"},
        {SORTD__WIRE_MAGIC, 0, 0, 10, "version 0"},
        {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 1, 10, "flags"},
        {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 0, "message length 0"},
        {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 64 * 1024 + 1, "message length 65537"},
        {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 0xffffffffu, "message length 4294967295"},
};

START_TEST(bad_header)
{
        sortd__frame_reader fr;
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + 8] = {0};
        uint8_t *dst;
        size_t room;

        for (size_t piece = 1; piece <= sizeof(buf); piece++) {
                ck_assert_int_eq(sortd__fr_init(&fr, 64 * 1024), 0);
                put_header(buf, bad_headers[_i].magic, bad_headers[_i].version,
                           bad_headers[_i].flags, bad_headers[_i].mlen, 0);
                ck_assert_int_eq(feed(&fr, buf, sizeof(buf), piece, NULL, NULL), SORTD__FR_ERROR);
                ck_assert_int_eq(fr.status, SORTD_E_PROTOCOL);
                ck_assert_msg(strstr(fr.why, bad_headers[_i].expect), "'%s' lacks '%s'", fr.why,
                              bad_headers[_i].expect);
                /* After an error the reader takes nothing more. */
                sortd__fr_buffer(&fr, &dst, &room);
                ck_assert_uint_eq(room, 0);
                ck_assert_int_eq(sortd__fr_consumed(&fr, 1), SORTD__FR_ERROR);
                sortd__fr_free(&fr);
        }
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

/* Three frames back to back: no payload, a payload into a two-piece sink, a discarded one. */
START_TEST(stream_in_pieces)
{
        uint8_t stream[3 * SORTD__WIRE_HEADER_SIZE + 3 * 5 + 12 + 7], *p = stream;
        uint8_t keys[8], vals[4];
        size_t piece = (size_t)_i + 1;
        sortd__frame_reader fr;
        int messages = 0, payloads = 0;

        put_header(p, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 5, 0);
        memcpy(p + SORTD__WIRE_HEADER_SIZE, "hello", 5);
        p += SORTD__WIRE_HEADER_SIZE + 5;
        put_header(p, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 5, 12);
        memcpy(p + SORTD__WIRE_HEADER_SIZE, "sort1ABCDEFGHwxyz", 17);
        p += SORTD__WIRE_HEADER_SIZE + 17;
        put_header(p, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 5, 7);
        memcpy(p + SORTD__WIRE_HEADER_SIZE, "sort2junkjun", 12);
        p += SORTD__WIRE_HEADER_SIZE + 12;
        ck_assert_uint_eq((size_t)(p - stream), sizeof(stream));

        ck_assert_int_eq(sortd__fr_init(&fr, 64), 0);
        ck_assert(sortd__fr_at_boundary(&fr));
        p = stream;
        size_t left = sizeof(stream);

        while (left) {
                uint8_t *dst;
                size_t room;

                sortd__fr_buffer(&fr, &dst, &room);
                ck_assert_uint_gt(room, 0);
                if (room > piece)
                        room = piece;
                if (room > left)
                        room = left;
                memcpy(dst, p, room);
                p += room;
                left -= room;
                switch (sortd__fr_consumed(&fr, room)) {
                case SORTD__FR_MESSAGE:
                        messages++;
                        if (memcmp(fr.msg, "sort1", 5) == 0)
                                sortd__fr_sink(&fr, keys, sizeof(keys), vals, sizeof(vals));
                        else if (memcmp(fr.msg, "sort2", 5) == 0)
                                sortd__fr_discard(&fr);
                        else
                                ck_assert_int_eq(memcmp(fr.msg, "hello", 5), 0);
                        break;
                case SORTD__FR_PAYLOAD:
                        payloads++;
                        break;
                case SORTD__FR_ERROR:
                        ck_abort_msg("unexpected error: %s", fr.why);
                        break;
                case SORTD__FR_MORE:
                        break;
                }
        }
        ck_assert_int_eq(messages, 3);
        ck_assert_int_eq(payloads, 1);
        ck_assert_int_eq(memcmp(keys, "ABCDEFGH", 8), 0);
        ck_assert_int_eq(memcmp(vals, "wxyz", 4), 0);
        ck_assert(sortd__fr_at_boundary(&fr));
        sortd__fr_free(&fr);
}
END_TEST

/* A payload awaiting its sink takes no bytes (the daemon stops reading meanwhile). */
START_TEST(await_sink_takes_nothing)
{
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + 3], *dst;
        sortd__frame_reader fr;
        size_t room;

        ck_assert_int_eq(sortd__fr_init(&fr, 64), 0);
        put_header(buf, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 3, 100);
        memcpy(buf + SORTD__WIRE_HEADER_SIZE, "abc", 3);
        ck_assert_int_eq(feed(&fr, buf, sizeof(buf), sizeof(buf), NULL, NULL), SORTD__FR_MESSAGE);
        ck_assert(!sortd__fr_at_boundary(&fr));
        sortd__fr_buffer(&fr, &dst, &room);
        ck_assert_uint_eq(room, 0);
        ck_assert_int_eq(sortd__fr_consumed(&fr, 1), SORTD__FR_ERROR);
        sortd__fr_free(&fr);
}
END_TEST

/* A big discard goes through the scratch buffer in pieces of at most max_message. */
START_TEST(big_discard)
{
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + 1], *dst;
        sortd__frame_reader fr;
        uint64_t total = 1000000;
        size_t room;
        sortd__fr_event ev = SORTD__FR_MORE;

        ck_assert_int_eq(sortd__fr_init(&fr, 64), 0);
        put_header(buf, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 1, total);
        buf[SORTD__WIRE_HEADER_SIZE] = 'x';
        ck_assert_int_eq(feed(&fr, buf, sizeof(buf), 64, NULL, NULL), SORTD__FR_MESSAGE);
        sortd__fr_discard(&fr);
        while (total) {
                sortd__fr_buffer(&fr, &dst, &room);
                ck_assert_uint_gt(room, 0);
                ck_assert_uint_le(room, 64);
                memset(dst, 0xee, room);
                total -= room;
                ev = sortd__fr_consumed(&fr, room);
        }
        ck_assert_int_eq(ev, SORTD__FR_MORE);
        ck_assert(sortd__fr_at_boundary(&fr));
        sortd__fr_free(&fr);
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
        s.key_type = 11;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_ptr_nonnull(strstr(why, "key type 11"));
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
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        ck_assert_int_eq(sortd__wire_sort_check(&s, &d, &z, why, sizeof(why)), SORTD_E_UNSUPPORTED);
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
        Suite *s = suite_create("frame");
        TCase *tc = tcase_create("codec");

        tcase_add_test(tc, header_round_trip);
        tcase_add_loop_test(tc, bad_header, 0, sizeof(bad_headers) / sizeof(bad_headers[0]));
        tcase_add_test(tc, version_error_names_both);
        tcase_add_loop_test(tc, stream_in_pieces, 0, 40);
        tcase_add_test(tc, await_sink_takes_nothing);
        tcase_add_test(tc, big_discard);
        tcase_add_test(tc, sort_checks);
        tcase_add_test(tc, unpack_garbage);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
