/*
 * daemon/net/frame.c, the incremental frame reader, on its own: fed good and bad streams in pieces
 * of every size (bad magic, version, flags, message length, bytes after an error, payload sinks
 * and discards). The header codec it uses is proto/wire.c's, tested in tests/proto/test_wire.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "internal.h"

static void put_header(uint8_t *out, uint32_t magic, uint16_t version, uint16_t flags,
                       uint32_t mlen, uint64_t plen)
{
        sortd__wire_header h = {magic, version, flags, mlen, plen};

        sortd__wire_header_pack(&h, out);
}

/* Feeds len bytes to the reader in pieces of at most `piece`; returns the last event. */
static sortd__frame_event feed(sortd__frame_reader *fr, const uint8_t *data, size_t len,
                               size_t piece, int *messages, int *payloads)
{
        sortd__frame_event ev = SORTD__FRAME_MORE;

        while (len) {
                uint8_t *dst;
                size_t room;

                sortd__frame_buffer(fr, &dst, &room);
                if (room == 0)
                        return ev == SORTD__FRAME_ERROR ? ev : (sortd__frame_event)-1;
                if (room > piece)
                        room = piece;
                if (room > len)
                        room = len;
                memcpy(dst, data, room);
                data += room;
                len -= room;
                ev = sortd__frame_consumed(fr, room);
                if (ev == SORTD__FRAME_MESSAGE && messages)
                        ++*messages;
                if (ev == SORTD__FRAME_PAYLOAD && payloads)
                        ++*payloads;
                if (ev == SORTD__FRAME_ERROR)
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
                ck_assert_int_eq(sortd__frame_init(&fr, 64 * 1024), 0);
                put_header(buf, bad_headers[_i].magic, bad_headers[_i].version,
                           bad_headers[_i].flags, bad_headers[_i].mlen, 0);
                ck_assert_int_eq(feed(&fr, buf, sizeof(buf), piece, NULL, NULL),
                                 SORTD__FRAME_ERROR);
                ck_assert_int_eq(fr.status, SORTD_E_PROTOCOL);
                ck_assert_msg(strstr(fr.why, bad_headers[_i].expect), "'%s' lacks '%s'", fr.why,
                              bad_headers[_i].expect);
                /* After an error the reader takes nothing more. */
                sortd__frame_buffer(&fr, &dst, &room);
                ck_assert_uint_eq(room, 0);
                ck_assert_int_eq(sortd__frame_consumed(&fr, 1), SORTD__FRAME_ERROR);
                sortd__frame_free(&fr);
        }
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

        ck_assert_int_eq(sortd__frame_init(&fr, 64), 0);
        ck_assert(sortd__frame_at_boundary(&fr));
        p = stream;
        size_t left = sizeof(stream);

        while (left) {
                uint8_t *dst;
                size_t room;

                sortd__frame_buffer(&fr, &dst, &room);
                ck_assert_uint_gt(room, 0);
                if (room > piece)
                        room = piece;
                if (room > left)
                        room = left;
                memcpy(dst, p, room);
                p += room;
                left -= room;
                switch (sortd__frame_consumed(&fr, room)) {
                case SORTD__FRAME_MESSAGE:
                        messages++;
                        if (memcmp(fr.msg, "sort1", 5) == 0)
                                sortd__frame_sink(&fr, keys, sizeof(keys), vals, sizeof(vals));
                        else if (memcmp(fr.msg, "sort2", 5) == 0)
                                sortd__frame_discard(&fr);
                        else
                                ck_assert_int_eq(memcmp(fr.msg, "hello", 5), 0);
                        break;
                case SORTD__FRAME_PAYLOAD:
                        payloads++;
                        break;
                case SORTD__FRAME_ERROR:
                        ck_abort_msg("unexpected error: %s", fr.why);
                        break;
                case SORTD__FRAME_MORE:
                        break;
                }
        }
        ck_assert_int_eq(messages, 3);
        ck_assert_int_eq(payloads, 1);
        ck_assert_int_eq(memcmp(keys, "ABCDEFGH", 8), 0);
        ck_assert_int_eq(memcmp(vals, "wxyz", 4), 0);
        ck_assert(sortd__frame_at_boundary(&fr));
        sortd__frame_free(&fr);
}
END_TEST

/* A payload into three parts, an empty one skipped (an argsort's keys, no values, offsets),
   in every read size. */
START_TEST(sink_in_parts)
{
        uint8_t stream[SORTD__WIRE_HEADER_SIZE + 5 + 11];
        uint8_t keys[8], offsets[3], none[1] = {0x5a};

        put_header(stream, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 5, 11);
        memcpy(stream + SORTD__WIRE_HEADER_SIZE, "sort3ABCDEFGHxyz", 16);
        for (size_t piece = 1; piece <= sizeof(stream); piece++) {
                sortd__frame_reader fr;
                const uint8_t *p = stream;
                size_t left = sizeof(stream);
                int payloads = 0;

                memset(keys, 0, sizeof(keys));
                memset(offsets, 0, sizeof(offsets));
                ck_assert_int_eq(sortd__frame_init(&fr, 64), 0);
                while (left) {
                        uint8_t *dst;
                        size_t room;
                        sortd__frame_event ev;

                        sortd__frame_buffer(&fr, &dst, &room);
                        ck_assert_uint_gt(room, 0);
                        room = room < piece ? room : piece;
                        room = room < left ? room : left;
                        memcpy(dst, p, room);
                        p += room;
                        left -= room;
                        ev = sortd__frame_consumed(&fr, room);
                        if (ev == SORTD__FRAME_MESSAGE) {
                                const sortd__frame_part parts[] = {{keys, sizeof(keys)},
                                                                   {none, 0},
                                                                   {offsets, sizeof(offsets)}};

                                sortd__frame_sink_parts(&fr, parts, 3);
                        }
                        ck_assert_int_ne(ev, SORTD__FRAME_ERROR);
                        payloads += ev == SORTD__FRAME_PAYLOAD;
                }
                ck_assert_int_eq(payloads, 1);
                ck_assert_int_eq(memcmp(keys, "ABCDEFGH", 8), 0);
                ck_assert_int_eq(memcmp(offsets, "xyz", 3), 0);
                ck_assert_uint_eq(none[0], 0x5a);
                ck_assert(sortd__frame_at_boundary(&fr));
                sortd__frame_free(&fr);
        }
}
END_TEST

/* A payload awaiting its sink takes no bytes (the daemon stops reading meanwhile). */
START_TEST(await_sink_takes_nothing)
{
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + 3], *dst;
        sortd__frame_reader fr;
        size_t room;

        ck_assert_int_eq(sortd__frame_init(&fr, 64), 0);
        put_header(buf, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 3, 100);
        memcpy(buf + SORTD__WIRE_HEADER_SIZE, "abc", 3);
        ck_assert_int_eq(feed(&fr, buf, sizeof(buf), sizeof(buf), NULL, NULL),
                         SORTD__FRAME_MESSAGE);
        ck_assert(!sortd__frame_at_boundary(&fr));
        sortd__frame_buffer(&fr, &dst, &room);
        ck_assert_uint_eq(room, 0);
        ck_assert_int_eq(sortd__frame_consumed(&fr, 1), SORTD__FRAME_ERROR);
        sortd__frame_free(&fr);
}
END_TEST

/* A big discard goes through the scratch buffer in pieces of at most max_message. */
START_TEST(big_discard)
{
        uint8_t buf[SORTD__WIRE_HEADER_SIZE + 1], *dst;
        sortd__frame_reader fr;
        uint64_t total = 1000000;
        size_t room;
        sortd__frame_event ev = SORTD__FRAME_MORE;

        ck_assert_int_eq(sortd__frame_init(&fr, 64), 0);
        put_header(buf, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 1, total);
        buf[SORTD__WIRE_HEADER_SIZE] = 'x';
        ck_assert_int_eq(feed(&fr, buf, sizeof(buf), 64, NULL, NULL), SORTD__FRAME_MESSAGE);
        sortd__frame_discard(&fr);
        while (total) {
                sortd__frame_buffer(&fr, &dst, &room);
                ck_assert_uint_gt(room, 0);
                ck_assert_uint_le(room, 64);
                memset(dst, 0xee, room);
                total -= room;
                ev = sortd__frame_consumed(&fr, room);
        }
        ck_assert_int_eq(ev, SORTD__FRAME_MORE);
        ck_assert(sortd__frame_at_boundary(&fr));
        sortd__frame_free(&fr);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("frame");
        TCase *tc = tcase_create("reader");

        tcase_add_loop_test(tc, bad_header, 0, sizeof(bad_headers) / sizeof(bad_headers[0]));
        tcase_add_loop_test(tc, stream_in_pieces, 0, 40);
        tcase_add_test(tc, await_sink_takes_nothing);
        tcase_add_test(tc, sink_in_parts);
        tcase_add_test(tc, big_discard);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
