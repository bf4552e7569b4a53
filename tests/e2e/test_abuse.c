/*
 * Abuse of a real sortd while a good client is served: bad input on raw sockets, one named case
 * at a time, and clients killed mid-payload or with sorts queued and running.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "datagen.h"
#include "harness.h"

static daemon_proc shared_daemon; /* zero: no notify socket */

static void shared_start(void)
{
        daemon_start(&shared_daemon, NULL);
}

static void shared_stop(void)
{
        ck_assert_int_eq(daemon_stop(&shared_daemon, SIGTERM), 0);
}

/* ---- bad input on raw sockets, while a good client is served ---- */

static double seconds_since(const struct timespec *t0)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Whatever the abuse, a well-behaved client is served, right and in bounded time: a connect
   and a 5,000-key sort take milliseconds; 2 s leaves room for a sanitizer build's slowness. */
#define GOOD_CLIENT_BOUND_S 2.0

static void good_client_sorts(void)
{
        struct timespec t0;
        sortd_conn *c;
        uint64_t keys[5000];
        double took;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        c = client_open(&shared_daemon);

        for (size_t i = 0; i < 5000; i++)
                keys[i] = (i * 7919) % 5000;
        size_t i = 0;

        ck_assert_int_eq(sortd_sort(c, keys, 5000, SORTD_KEY_U64, NULL), SORTD_OK);
        while (i < 5000 && keys[i] == i)
                i++;
        ck_assert_uint_eq(i, 5000);
        sortd_close(c);
        took = seconds_since(&t0);
        ck_assert_msg(took < GOOD_CLIENT_BOUND_S, "the good client waited %.3f s", took);
}

/* Each bad input: what is sent on a fresh raw connection, and what must come back. */

static void bad_magic(int fd)
{
        raw_send_frame(fd, 0x11223344, SORTD__WIRE_VERSION, 4, 0, NULL, 0);
        raw_expect_reply(fd, 0, SORTD_E_PROTOCOL, "magic");
        ck_assert(raw_wait_eof(fd, 5000));
}

static void unknown_frame_version(int fd)
{
        raw_send_frame(fd, SORTD__WIRE_MAGIC, 9, 4, 0, NULL, 0);
        raw_expect_reply(fd, 0, SORTD_E_PROTOCOL, "version 9");
        ck_assert(raw_wait_eof(fd, 5000));
}

static void message_over_64k(int fd)
{
        raw_send_frame(fd, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 1u << 20, 0, NULL, 0);
        raw_expect_reply(fd, 0, SORTD_E_PROTOCOL, "message length");
        ck_assert(raw_wait_eof(fd, 5000));
}

static void truncated_frame(int fd)
{
        uint8_t junk[10];

        memset(junk, 0xa5, sizeof(junk));
        raw_send_frame(fd, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 40, 0, junk, sizeof(junk));
}

static void unparsable_protobuf(int fd)
{
        uint8_t junk[16];

        memset(junk, 0xa5, sizeof(junk));
        raw_send_frame(fd, SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 16, 0, junk, sizeof(junk));
        raw_expect_reply(fd, 0, SORTD_E_PROTOCOL, "unparsable");
        raw_expect_in_sync(fd);
}

static void unknown_key_type(int fd)
{
        Sortd__Wire__Sort s = raw_sort_msg(99, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 8);

        raw_send_sort(fd, 5, &s, 32);
        raw_send_zeros(fd, 32);
        raw_expect_reply(fd, 5, SORTD_E_INVAL, "key type 99");
        raw_expect_in_sync(fd);
}

static void n_against_payload_length(int fd)
{
        Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                           SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, 100);

        raw_send_sort(fd, 6, &s, 400);
        raw_send_zeros(fd, 400);
        raw_expect_reply(fd, 6, SORTD_E_INVAL, "need 1200");
        raw_expect_in_sync(fd);
}

/* A ping request id whose frame claims plen payload bytes (not sent). */
static void send_ping(int fd, uint64_t id, uint64_t plen)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;

        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &(Sortd__Wire__Ping)SORTD__WIRE__PING__INIT;
        raw_send_request(fd, &req, plen);
}

static void payload_after_ping(int fd)
{
        send_ping(fd, 7, 10);
        raw_send_zeros(fd, 10);
        raw_expect_reply(fd, 7, SORTD_OK, NULL);
        raw_expect_reply(fd, 7, SORTD_E_PROTOCOL, "unexpected payload");
        raw_expect_in_sync(fd);
}

static void hello_other_protocol(int fd)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Hello hello = SORTD__WIRE__HELLO__INIT;

        hello.protocol_version = 5;
        req.id = 8;
        req.body_case = SORTD__WIRE__REQUEST__BODY_HELLO;
        req.hello = &hello;
        raw_send_request(fd, &req, 0);
        raw_expect_reply(fd, 8, SORTD_E_PROTOCOL, "version 5");
        raw_expect_in_sync(fd);
}

static void request_of_no_kind(int fd)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;

        req.id = 9;
        raw_send_request(fd, &req, 0);
        raw_expect_reply(fd, 9, SORTD_E_PROTOCOL, "unknown kind");
        raw_expect_in_sync(fd);
}

static void region_sort_unregistered(int fd)
{
        Sortd__Wire__Sort s =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 8);

        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &(Sortd__Wire__RegionData)SORTD__WIRE__REGION_DATA__INIT;
        raw_send_sort(fd, 10, &s, 0);
        raw_expect_reply(fd, 10, SORTD_E_INVAL, "no region 0 on this connection");
        raw_expect_in_sync(fd);
}

static void bad_bit_range(int fd)
{
        Sortd__Wire__Sort s =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U16, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 4);

        s.begin_bit = 3;
        s.end_bit = 17;
        raw_send_sort(fd, 11, &s, 8);
        raw_send_zeros(fd, 8);
        raw_expect_reply(fd, 11, SORTD_E_INVAL, "bit range");
        raw_expect_in_sync(fd);
}

static void reserved_flags(int fd)
{
        raw_send_bytes(fd, "SRTD\x01\x00\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
                       20);
        raw_expect_reply(fd, 0, SORTD_E_PROTOCOL, "flags");
        ck_assert(raw_wait_eof(fd, 5000));
}

static void garbage_after_valid_frame(int fd)
{
        send_ping(fd, 12, 0);
        raw_send_bytes(fd, "this is no frame header at all", 30);
        raw_expect_reply(fd, 12, SORTD_OK, NULL);
        raw_expect_reply(fd, 0, SORTD_E_PROTOCOL, "magic");
        ck_assert(raw_wait_eof(fd, 5000));
}

/* ---- segments and top-k ---- */

/* A sort of 8 u32 keys in 2 segments of u32 offsets that follow the keys. */
static Sortd__Wire__Sort segmented_sort(Sortd__Wire__Segments *seg)
{
        Sortd__Wire__Sort s =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 8);

        *seg = (Sortd__Wire__Segments)SORTD__WIRE__SEGMENTS__INIT;
        seg->offset_type = SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32;
        seg->count = 2;
        s.segments = seg;
        return s;
}

static void segment_offsets_past_n(int fd)
{
        static const uint32_t keys[8], offsets[3] = {0, 9, 8};
        Sortd__Wire__Segments seg;
        Sortd__Wire__Sort s = segmented_sort(&seg);

        raw_send_sort(fd, 13, &s, sizeof(keys) + sizeof(offsets));
        raw_send_bytes(fd, keys, sizeof(keys));
        raw_send_bytes(fd, offsets, sizeof(offsets));
        raw_expect_reply(fd, 13, SORTD_E_INVAL, "offsets[1] = 9 past n = 8");
        raw_expect_in_sync(fd);
}

static void segment_count_against_payload(int fd)
{
        Sortd__Wire__Segments seg;
        Sortd__Wire__Sort s = segmented_sort(&seg);

        seg.count = 5; /* 6 offsets, 24 bytes: 3 came */
        raw_send_sort(fd, 14, &s, 32 + 12);
        raw_send_zeros(fd, 32 + 12);
        raw_expect_reply(fd, 14, SORTD_E_INVAL, "and 6 offsets of 4 bytes need 56");
        raw_expect_in_sync(fd);
}

static void segment_rows_against_n(int fd)
{
        Sortd__Wire__Segments seg;
        Sortd__Wire__Sort s = segmented_sort(&seg);

        seg.offset_type = SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_NONE;
        seg.row_len = 3; /* 2 x 3 keys, not 8 */
        raw_send_sort(fd, 15, &s, 32);
        raw_send_zeros(fd, 32);
        raw_expect_reply(fd, 15, SORTD_E_INVAL, "2 rows of 3 keys are not n = 8");
        raw_expect_in_sync(fd);
}

static void segment_offsets_in_no_region(int fd)
{
        Sortd__Wire__Segments seg;
        Sortd__Wire__Sort s = segmented_sort(&seg);

        seg.offsets_region_id = 4;
        seg.offsets_offset = 6; /* not a multiple of 4 */
        raw_send_sort(fd, 16, &s, 32);
        raw_send_zeros(fd, 32);
        raw_expect_reply(fd, 16, SORTD_E_INVAL, "offsets_offset 6 is not a multiple");
        seg.offsets_offset = 8;
        raw_send_sort(fd, 17, &s, 32);
        raw_send_zeros(fd, 32);
        raw_expect_reply(fd, 17, SORTD_E_INVAL, "no region 4");
        raw_expect_in_sync(fd);
}

static void region_topk_offsets_short(int fd)
{
        Sortd__Wire__Segments seg;
        Sortd__Wire__Sort s = segmented_sort(&seg);
        Sortd__Wire__TopkOut out = SORTD__WIRE__TOPK_OUT__INIT;

        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &(Sortd__Wire__RegionData)SORTD__WIRE__REGION_DATA__INIT;
        s.k = 2;
        raw_send_sort(fd, 18, &s, 12);
        raw_send_zeros(fd, 12);
        raw_expect_reply(fd, 18, SORTD_E_INVAL, "needs topk_out");
        out.keys_region_id = 1;
        s.topk_out = &out;
        raw_send_sort(fd, 19, &s, 8);
        raw_send_zeros(fd, 8);
        raw_expect_reply(fd, 19, SORTD_E_PROTOCOL, "its 3 offsets of 4 bytes, 12 bytes (8 came)");
        raw_expect_in_sync(fd);
}

static const struct bad_input_case {
        const char *name;
        void (*send_and_expect)(int fd);
        bool closed_mid_frame; /* no reply to wait for: the daemon must count the error */
} bad_inputs[] = {
        {"bad magic: an error, then closed", bad_magic, false},
        {"unknown frame version: an error naming both, then closed", unknown_frame_version, false},
        {"message over 64 KiB: refused before it is read, then closed", message_over_64k, false},
        {"truncated frame: the client hangs up mid-message", truncated_frame, true},
        {"unparsable protobuf: an error, the stream still in sync", unparsable_protobuf, false},
        {"unknown key type: its payload drained", unknown_key_type, false},
        {"n inconsistent with the payload length", n_against_payload_length, false},
        {"a payload after a ping", payload_after_ping, false},
        {"hello with another protocol version", hello_other_protocol, false},
        {"a request of no known kind", request_of_no_kind, false},
        {"a sort in a region never registered", region_sort_unregistered, false},
        {"bad bit range", bad_bit_range, false},
        {"nonzero reserved flags: an error, then closed", reserved_flags, false},
        {"garbage after a valid frame: the frame answered, then an error, then closed",
         garbage_after_valid_frame, false},
        {"segment offsets past n: refused once read", segment_offsets_past_n, false},
        {"segment count against the payload length", segment_count_against_payload, false},
        {"rows that do not make n", segment_rows_against_n, false},
        {"offsets in a region misaligned, then in none", segment_offsets_in_no_region, false},
        {"region top-k without topk_out, then with its offsets short", region_topk_offsets_short,
         false},
};

enum { BAD_INPUTS = sizeof(bad_inputs) / sizeof(bad_inputs[0]) };

/* _i picks the case; a good client is served before and after its connection closes. */
START_TEST(bad_input)
{
        const struct bad_input_case *bc = &bad_inputs[_i];
        int fd = raw_connect(shared_daemon.sock);
        uint64_t before = status_of(&shared_daemon).protocol_errors;

        printf("bad input: %s\n", bc->name);
        bc->send_and_expect(fd);
        good_client_sorts();
        close(fd);
        good_client_sorts();
        if (bc->closed_mid_frame) {
                /* The daemon saw the truncation (the close may take a moment to arrive). */
                for (int k = 0; k < 100 && status_of(&shared_daemon).protocol_errors == before; k++)
                        usleep(10000);
                ck_assert_msg(status_of(&shared_daemon).protocol_errors > before, "%s", bc->name);
        }
        ck_assert_msg(daemon_alive(&shared_daemon), "died after %s", bc->name);
}
END_TEST

/* ---- clients that die ---- */

static sortd_server_status wait_idle(const daemon_proc *d)
{
        sortd_server_status st;

        for (int k = 0; k < 500; k++) {
                st = status_of(d);
                if (st.inflight_bytes == 0 && st.connections == 1 && st.queued == 0)
                        break;
                usleep(10000);
        }
        return st;
}

/* Every sort the daemon took from a client ends counted once: sorted (ok or failed) if its
   client was there for the reply, cancelled if the client left first. */
static uint64_t settled(const sortd_server_status *st)
{
        return st->sorts_ok + st->sorts_failed + st->cancelled;
}

/* How a killed client dies: its sorts, and how much of the last one's payload it sent. */
static const struct killed_case {
        const char *what;
        int sorts;
        Sortd__Wire__KeyType key_type;
        Sortd__Wire__Payload payload;
        uint32_t n;
        size_t bytes, sent_of_last;
} killed_cases[] = {
        {"mid-payload", 1, SORTD__WIRE__KEY_TYPE__KEY_U64, SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64,
         1u << 19, 8u << 20, 3u << 20},
        {"with sorts queued and running", 2, SORTD__WIRE__KEY_TYPE__KEY_U64,
         SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, 1u << 19, 8u << 20, 8u << 20},
        /* Small sorts, under max-pipeline: the engine takes them in batches. */
        {"with small sorts in batches", 48, SORTD__WIRE__KEY_TYPE__KEY_U32,
         SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 4096, 16384, 16384},
};

START_TEST(client_killed)
{
        const struct killed_case *kc = &killed_cases[_i];
        const int sorts = kc->sorts;
        sortd_server_status st0 = status_of(&shared_daemon), st;
        pid_t child;
        int status, pipefd[2];
        char go;

        ck_assert_int_eq(pipe(pipefd), 0);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                int fd = raw_connect(shared_daemon.sock);
                Sortd__Wire__Sort s = raw_sort_msg(kc->key_type, kc->payload, kc->n);

                for (int r = 0; r < sorts; r++) {
                        raw_send_sort(fd, (uint64_t)r + 1, &s, kc->bytes);
                        raw_send_zeros(fd, r + 1 < sorts ? kc->bytes : kc->sent_of_last);
                }
                if (write(pipefd[1], "x", 1) != 1)
                        _exit(2);
                pause();
                _exit(0);
        }
        ck_assert_int_eq(read(pipefd[0], &go, 1), 1);
        if (_i)
                usleep(20000); /* let the daemon read them and start sorting */
        ck_assert_msg(daemon_alive(&shared_daemon), "killed %s", kc->what);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        close(pipefd[0]);
        close(pipefd[1]);
        good_client_sorts();
        st = wait_idle(&shared_daemon);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.queued, 0);
        ck_assert_uint_eq(st.connections, 1);
        ck_assert_uint_eq(st.sorts_failed, st0.sorts_failed);
        /* Each of its sorts ends counted once with the good client's: ok if the engine had
           finished it before the kill, cancelled if not; a payload that never came whole is a
           cancelled sort. */
        ck_assert_uint_eq(settled(&st), settled(&st0) + 1 + (uint64_t)sorts);
        if (_i == 0) {
                ck_assert_uint_eq(st.sorts_ok, st0.sorts_ok + 1);
                ck_assert_uint_eq(st.cancelled, st0.cancelled + 1);
        }
        ck_assert_uint_eq(st.sort_requests, st0.sort_requests + 1 + (uint64_t)sorts);
        ck_assert_uint_eq(st.protocol_errors, st0.protocol_errors);
        ck_assert(daemon_alive(&shared_daemon));
}
END_TEST

/*
 * A client that pipelines large sorts and never reads a reply: the daemon stops reading from it
 * once its replies back up (max-write-queue) or max-pipeline are unanswered, so its memory
 * stays bounded however much the client has to send, and others are served meanwhile.
 */
START_TEST(never_reads_replies)
{
        enum { SORTS = 64, N = 1u << 19, BYTES = N * 8 };
        long rss0 = daemon_rss_kib(&shared_daemon), peak = rss0;
        uint64_t sent0 = status_of(&shared_daemon).bytes_in;
        pid_t child = raw_spawn_unread_sorts(shared_daemon.sock, SORTD__WIRE__KEY_TYPE__KEY_U64,
                                             SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, N, BYTES, SORTS);
        int status;

        /* 256 MiB to send; watch the daemon while the client pushes. */
        for (int k = 0; k < 30; k++) {
                long rss;

                usleep(50000);
                rss = daemon_rss_kib(&shared_daemon);
                peak = rss > peak ? rss : peak;
                good_client_sorts();
        }
        ck_assert_int_eq(waitpid(child, &status, WNOHANG), 0); /* still blocked in a send */
        printf("never reads replies: daemon RSS %ld -> peak %ld KiB, %llu of %u MiB read\n", rss0,
               peak, (unsigned long long)((status_of(&shared_daemon).bytes_in - sent0) >> 20),
               (unsigned)(((uint64_t)SORTS * BYTES) >> 20));
        /* What it holds: the write queue (16 MiB), the sort in the engine and the one being
           read (4 MiB each), their replies, and socket buffers; never the 256 MiB. */
        ck_assert_msg(peak - rss0 < 96 * 1024 * SANITIZER_RSS_FACTOR,
                      "RSS grew from %ld to %ld KiB", rss0, peak);
        ck_assert_uint_lt(status_of(&shared_daemon).bytes_in - sent0, (uint64_t)SORTS * BYTES / 2);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        good_client_sorts();
}
END_TEST

/*
 * One client floods tiny sorts, pipelined, while another sends a large one: the queue takes
 * connections in turn, so the large sort waits for one batch of tiny ones, not the flood.
 */
START_TEST(flood_does_not_starve)
{
        enum { BN = 1u << 20 };
        pid_t child;
        int status, go[2];
        char byte;
        uint64_t *big = xmalloc((size_t)BN * 8);
        sortd_conn *c;
        sortd_request r;

        ck_assert_int_eq(pipe(go), 0);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                sortd_conn *f = client_open(&shared_daemon);
                uint32_t keys[32][64];
                sortd_request q[32];
                unsigned i = 0;

                /* Keeps 32 tiny sorts in the daemon at all times, for ever. */
                for (;; i++) {
                        sortd_request *x = &q[i % 32];

                        if (i >= 32 && sortd_receive(f, x) != SORTD_OK)
                                _exit(1);
                        for (int k = 0; k < 64; k++)
                                keys[i % 32][k] = (uint32_t)(64 - k);
                        *x = (sortd_request){
                                .keys = keys[i % 32], .n = 64, .key_type = SORTD_KEY_U32};
                        if (sortd_submit(f, x) != SORTD_OK)
                                _exit(1);
                        if (i == 1000 && write(go[1], "x", 1) != 1)
                                _exit(2);
                }
        }
        ck_assert_int_eq(read(go[0], &byte, 1), 1); /* the flood is on */
        c = client_open(&shared_daemon);
        for (size_t i = 0; i < BN; i++)
                big[i] = (BN - i) * 0x9e3779b97f4a7c15ull;
        r = (sortd_request){.keys = big, .n = BN, .key_type = SORTD_KEY_U64};
        ck_assert_int_eq(sortd_submit(c, &r), SORTD_OK);
        ck_assert_int_eq(sortd_receive(c, &r), SORTD_OK);
        check_sorted_u64(big, BN);
        printf("flood: the large sort queued %.3f ms, sorted in %.3f ms\n",
               r.timings.queued_ns / 1e6, r.timings.sort_ns / 1e6);
        ck_assert_msg(r.timings.queued_ns < r.timings.sort_ns + 50000000ull,
                      "the large sort queued %llu ns behind a flood (its sort took %llu ns)",
                      (unsigned long long)r.timings.queued_ns,
                      (unsigned long long)r.timings.sort_ns);
        ck_assert_int_eq(waitpid(child, &status, WNOHANG), 0); /* the flood went on */
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        sortd_close(c);
        free(big);
        close(go[0]);
        close(go[1]);
        good_client_sorts();
}
END_TEST

/* Seconds until the daemon closes fd (a read returns 0 or fails), at most limit. */
static double until_closed(int fd, double limit)
{
        struct timespec t0, t1;
        char buf[4096];
        struct pollfd p = {.fd = fd, .events = POLLIN};

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double t = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;

                if (t > limit)
                        return t;
                if (poll(&p, 1, 50) == 1 && read(fd, buf, sizeof(buf)) <= 0)
                        return t;
        }
}

/* frame-timeout-ms and idle-timeout-ms: stalled and idle clients are closed; one that keeps
   talking is not. */
START_TEST(timeouts)
{
        const char *extra[] = {"--frame-timeout-ms", "300", "--idle-timeout-ms", "800", NULL};
        daemon_proc d = {0};
        uint8_t half[8] = {0};
        int stalled, in_payload, idle;
        sortd_conn *good;

        daemon_start(&d, extra);
        good = client_open(&d);
        stalled = raw_connect(d.sock);
        in_payload = raw_connect(d.sock);
        idle = raw_connect(d.sock);
        ck_assert_int_eq(write(stalled, half, sizeof(half)), (ssize_t)sizeof(half));
        Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                           SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 1024);
        raw_send_sort(in_payload, 1, &s, 4096);
        raw_send_zeros(in_payload, 100);
        /* A half header and a payload cut short: gone after about 300 ms. */
        double t1 = until_closed(stalled, 5), t2 = until_closed(in_payload, 5);
        ck_assert_msg(t1 > 0.2 && t1 < 3, "a stalled header closed after %.2f s", t1);
        ck_assert_msg(t2 < 3, "a stalled payload closed after %.2f s", t2);
        /* The talker pings every 100 ms for over a second: past the idle limit, still served. */
        for (int i = 0; i < 12; i++) {
                ck_assert_int_eq(sortd_ping(good), SORTD_OK);
                usleep(100000);
        }
        double t3 = until_closed(idle, 5);
        ck_assert_msg(t3 < 3, "an idle connection closed after %.2f s", t3);
        ck_assert_int_eq(sortd_ping(good), SORTD_OK);
        ck_assert_uint_eq(status_of(&d).timed_out, 3);
        close(stalled);
        close(in_payload);
        close(idle);
        sortd_close(good);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* Polls d's status until done(st, arg) holds (a minute at most: valgrind is slow); returns
   that status. what names the state awaited. */
static sortd_server_status status_when(const daemon_proc *d,
                                       bool (*done)(const sortd_server_status *, uint64_t),
                                       uint64_t arg, const char *what)
{
        struct timespec t0;
        sortd_server_status st;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
                st = status_of(d);
                if (done(&st, arg))
                        return st;
                usleep(1000);
        } while (seconds_since(&t0) < 60);
        ck_abort_msg("status never showed %s (queued %llu, in flight %llu bytes, sorts ok %llu)",
                     what, (unsigned long long)st.queued, (unsigned long long)st.inflight_bytes,
                     (unsigned long long)st.sorts_ok);
        return st;
}

static bool in_engine(const sortd_server_status *st, uint64_t requests)
{
        return st->sort_requests == requests && st->queued == 0 && st->inflight_bytes > 0;
}

static bool queued(const sortd_server_status *st, uint64_t n)
{
        return st->queued == n;
}

static bool left(const sortd_server_status *st, uint64_t connections)
{
        return st->connections == connections;
}

/*
 * A client that leaves with sorts waiting for the engine: they are taken out of the queue and
 * never sorted. While one large sort (2^22 keys and values: 0.2 s on one thread) holds the
 * engine, a second client queues small sorts and closes; they end cancelled, none of them in
 * an engine batch, and nothing stays in flight.
 */
START_TEST(queued_sorts_cancelled)
{
        enum { BIG = 1 << 22, SMALL = 4096, QUEUED = 4 };
        const char *extra[] = {"--threads",           "1",    "--capacity", "4M",
                               "--max-request-bytes", "256M", NULL};
        Sortd__Wire__Sort big = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U64,
                                             SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, BIG);
        Sortd__Wire__Sort small = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                               SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, SMALL);
        uint64_t *payload, plen;
        sortd_server_status st0, st;
        Sortd__Wire__Reply *rep;
        daemon_proc d = {0};
        int blocker, leaver;

        /* valgrind runs one thread at a time and lets a busy one starve the others: the
           engine's sort would keep the loop from reading the second client until it ends. */
        if (getenv("SORTD_TEST_WRAPPER") && *getenv("SORTD_TEST_WRAPPER")) {
                fprintf(stderr, "queued_sorts_cancelled: skipped under SORTD_TEST_WRAPPER\n");
                return;
        }
        payload = xmalloc((size_t)BIG * 16);
        datagen_fill(payload, (size_t)BIG * 2, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 7);
        daemon_start(&d, extra);
        st0 = status_of(&d);
        blocker = raw_connect(d.sock);
        raw_send_sort(blocker, 1, &big, (uint64_t)BIG * 16);
        raw_send_bytes(blocker, payload, (size_t)BIG * 16);
        status_when(&d, in_engine, st0.sort_requests + 1, "the large sort in the engine");

        leaver = raw_connect(d.sock);
        for (int i = 0; i < QUEUED; i++) {
                raw_send_sort(leaver, (uint64_t)i + 1, &small, SMALL * 4);
                raw_send_bytes(leaver, payload, SMALL * 4);
        }
        st = status_when(&d, queued, QUEUED, "the small sorts queued");
        ck_assert_msg(st.sorts_ok == st0.sorts_ok, "the large sort ended before the test could "
                                                   "queue behind it");
        close(leaver);
        status_when(&d, left, 2, "the leaver gone"); /* the blocker, and status_of's own */

        /* A slow build (valgrind, coverage) takes long over the large sort: wait for it. */
        ck_assert(poll(&(struct pollfd){.fd = blocker, .events = POLLIN}, 1, 600000) == 1);
        rep = raw_recv_reply(blocker, &plen);
        ck_assert_ptr_nonnull(rep);
        ck_assert_int_eq(rep->status, SORTD__WIRE__STATUS_CODE__OK);
        ck_assert_uint_eq(plen, (uint64_t)BIG * 16);
        sortd__wire__reply__free_unpacked(rep, NULL);
        raw_skip(blocker, plen);
        close(blocker);

        st = wait_idle(&d);
        ck_assert_uint_eq(st.cancelled, st0.cancelled + QUEUED);
        ck_assert_uint_eq(st.batched, st0.batched);
        ck_assert_uint_eq(st.loop_sorts, st0.loop_sorts);
        ck_assert_uint_eq(st.sorts_ok, st0.sorts_ok + 1);
        ck_assert_uint_eq(st.sort_requests, st0.sort_requests + 1 + QUEUED);
        ck_assert_uint_eq(st.keys_sorted, st0.keys_sorted + BIG);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.queued, 0);
        free(payload);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* A client that shuts down only its sending side after pipelining sorts still gets every
   reply, in order, then the daemon's close (the other side of queued_sorts_cancelled). */
START_TEST(half_close_answered)
{
        enum { N = 1024, SORTS = 4 };
        Sortd__Wire__Sort s =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, N);
        uint32_t keys[N];
        uint64_t plen;
        int fd = raw_connect(shared_daemon.sock);

        for (int r = 0; r < SORTS; r++) {
                for (uint32_t i = 0; i < N; i++)
                        keys[i] = (N - i) * (uint32_t)(r + 1);
                raw_send_sort(fd, (uint64_t)r + 1, &s, sizeof(keys));
                raw_send_bytes(fd, keys, sizeof(keys));
        }
        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        for (int r = 0; r < SORTS; r++) {
                Sortd__Wire__Reply *rep = raw_recv_reply(fd, &plen);

                ck_assert_ptr_nonnull(rep);
                ck_assert_uint_eq(rep->id, (uint64_t)r + 1);
                ck_assert_int_eq(rep->status, SORTD__WIRE__STATUS_CODE__OK);
                ck_assert_uint_eq(plen, sizeof(keys));
                sortd__wire__reply__free_unpacked(rep, NULL);
                raw_recv_bytes(fd, keys, sizeof(keys));
                for (uint32_t i = 0; i < N; i++)
                        ck_assert_uint_eq(keys[i], (i + 1) * (uint32_t)(r + 1));
        }
        ck_assert(raw_wait_eof(fd, 5000));
        close(fd);
}
END_TEST

/* ---- timeouts and limits that other clients' service hangs on ---- */

static bool holding(const sortd_server_status *st, uint64_t bytes)
{
        return st->inflight_bytes == bytes;
}

static bool sorted_and_holding(const sortd_server_status *st, uint64_t bytes)
{
        return st->sorts_ok == 1 && st->inflight_bytes == bytes;
}

/* A sort of 1,024 u32 keys (zeros) as request id on fd: its request and the first `first`
   bytes of its 4,096-byte payload. */
static void send_small_sort(int fd, uint64_t id, size_t first)
{
        Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                           SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 1024);

        raw_send_sort(fd, id, &s, 4096);
        raw_send_zeros(fd, first);
}

/* The rest of that payload: the sort must come back, sorted. */
static void small_sort_served(int fd, uint64_t id, size_t first)
{
        Sortd__Wire__Reply *r;
        uint64_t plen;

        raw_send_zeros(fd, 4096 - first);
        r = raw_recv_reply(fd, &plen);
        ck_assert_msg(r, "closed instead of answering sort %llu", (unsigned long long)id);
        ck_assert_uint_eq(r->id, id);
        ck_assert_int_eq(r->status, SORTD__WIRE__STATUS_CODE__OK);
        ck_assert_uint_eq(plen, 4096);
        sortd__wire__reply__free_unpacked(r, NULL);
        raw_skip(fd, plen);
}

/* The request of 2^20 u64 keys with u64 values (16 MiB) as request id on fd, payload zeros. */
static void send_16m_sort(int fd, uint64_t id)
{
        Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U64,
                                           SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, 1u << 20);

        raw_send_sort(fd, id, &s, 16u << 20);
}

/*
 * A client stalls mid-payload holding all of max-inflight-bytes, and another waits for that
 * memory. When frame-timeout-ms closes the first, its memory admits the second in the same
 * reaper pass, which then checks the second against a clock read before it was admitted: it
 * is served, not closed as if it had been quiet for 584 years.
 */
START_TEST(timeout_admits_the_next)
{
        const char *extra[] = {"--frame-timeout-ms",
                               "300",
                               "--max-inflight-bytes",
                               "16M",
                               "--max-request-bytes",
                               "16M",
                               NULL};
        daemon_proc d = {0};
        int waiter, staller;

        daemon_start(&d, extra);
        /* The reaper takes the newest connection first: the waiter comes after the staller. */
        waiter = raw_connect(d.sock);
        staller = raw_connect(d.sock);
        send_16m_sort(staller, 1);
        raw_send_zeros(staller, 1000);
        status_when(&d, holding, 16u << 20, "the staller's 16 MiB in flight");
        /* Part of its payload: admitted, it is in the middle of a frame, as the reaper sees. */
        send_small_sort(waiter, 2, 100);
        ck_assert(raw_wait_eof(staller, 5000));
        small_sort_served(waiter, 2, 100);
        ck_assert_uint_eq(status_of(&d).timed_out, 1);
        close(staller);
        close(waiter);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * A request that takes longer than idle-timeout-ms (here its 16 MiB reply waits unread for
 * 2.5 times the timeout) leaves the connection idle only once its reply is out: the
 * client's next request, sent soon after, is answered. Left idle, it is closed.
 */
START_TEST(idle_counts_from_the_reply)
{
        const char *extra[] = {"--idle-timeout-ms", "1000", NULL};
        daemon_proc d = {0};
        Sortd__Wire__Reply *r;
        uint64_t plen;
        int fd;

        daemon_start(&d, extra);
        fd = raw_connect(d.sock);
        send_16m_sort(fd, 1);
        raw_send_zeros(fd, 16u << 20);
        usleep(2500000);
        r = raw_recv_reply(fd, &plen);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->status, SORTD__WIRE__STATUS_CODE__OK);
        sortd__wire__reply__free_unpacked(r, NULL);
        raw_skip(fd, plen);
        /* Past a check of the reaper (every 250 ms here), well short of the timeout. */
        usleep(400000);
        raw_expect_in_sync(fd);
        ck_assert_msg(until_closed(fd, 5) < 3, "an idle connection stayed open");
        ck_assert_uint_eq(status_of(&d).timed_out, 1);
        close(fd);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * A client that never reads its replies cannot hold the in-flight memory for ever. Its sort's
 * 16 MiB reply, more than the socket buffers take, keeps all of max-inflight-bytes in its
 * write queue; another client's sort waits for that memory until write-timeout-ms closes the
 * first, and is then served.
 */
START_TEST(write_timeout_frees_memory)
{
        const char *extra[] = {"--write-timeout-ms",
                               "500",
                               "--max-inflight-bytes",
                               "16M",
                               "--max-request-bytes",
                               "16M",
                               "--log-level",
                               "info",
                               NULL};
        daemon_proc d = {0};
        struct timespec t0;
        int sleeper, waiter;
        char log[8192];
        double took;

        daemon_start(&d, extra);
        sleeper = raw_connect(d.sock);
        send_16m_sort(sleeper, 1);
        raw_send_zeros(sleeper, 16u << 20);
        status_when(&d, sorted_and_holding, 16u << 20, "the sleeper's reply queued");
        clock_gettime(CLOCK_MONOTONIC, &t0);
        waiter = raw_connect(d.sock);
        send_small_sort(waiter, 2, 4096);
        small_sort_served(waiter, 2, 4096);
        took = seconds_since(&t0);
        ck_assert_msg(took > 0.2, "the waiter was served in %.3f s, not after the timeout", took);
        ck_assert(raw_wait_eof(sleeper, 5000));
        ck_assert_uint_eq(status_of(&d).timed_out, 1);
        daemon_log(&d, log, sizeof(log));
        ck_assert_msg(strstr(log, "queued reply bytes taken for") &&
                              strstr(log, "(write-timeout-ms): closing"),
                      "%s", log);
        close(sleeper);
        close(waiter);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* The shared daemon's open fds come down to want or fewer (2 s at most); returns the last
   count. */
static int fds_come_to(int want)
{
        int n = daemon_fd_count(&shared_daemon);

        for (int k = 0; k < 200 && n > want; k++) {
                usleep(10000);
                n = daemon_fd_count(&shared_daemon);
        }
        return n;
}

/* Counts a process's open fds as fast as it can, keeping the most, until told to stop: a
   daemon may hold an fd for microseconds only, between two of a test's own samples. */
typedef struct {
        pid_t pid;
        atomic_bool stop;
        atomic_int most;
        pthread_t thread;
} fd_watch;

static void *watch_fds(void *arg)
{
        fd_watch *w = arg;
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)w->pid);
        while (!atomic_load(&w->stop)) {
                DIR *dir = opendir(path);
                int n = -2; /* . and .. */

                if (!dir)
                        break;
                while (readdir(dir))
                        n++;
                closedir(dir);
                if (n > atomic_load(&w->most))
                        atomic_store(&w->most, n);
        }
        return NULL;
}

static void fd_watch_start(fd_watch *w, const daemon_proc *d, int base)
{
        w->pid = d->pid;
        atomic_init(&w->stop, false);
        atomic_init(&w->most, base);
        ck_assert_int_eq(pthread_create(&w->thread, NULL, watch_fds, w), 0);
}

static int fd_watch_stop(fd_watch *w)
{
        atomic_store(&w->stop, true);
        ck_assert_int_eq(pthread_join(w->thread, NULL), 0);
        return atomic_load(&w->most);
}

/*
 * A client announces a long message and sends it a byte at a time, an fd with each byte. The
 * daemon does not keep them until the frame ends (they would fill its fd table, and every
 * client after would be accepted and closed at once): past what one frame can take, the client
 * is closed, every fd it sent with it, and others are served.
 */
START_TEST(fds_piled_up)
{
        sortd__wire_header h = {SORTD__WIRE_MAGIC, SORTD__WIRE_VERSION, 0, 60000, 0};
        uint8_t hdr[SORTD__WIRE_HEADER_SIZE];
        int fd = raw_connect(shared_daemon.sock), devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        uint64_t errors = status_of(&shared_daemon).protocol_errors;
        int base, most, sent = 0;
        fd_watch watch;

        ck_assert_int_ge(devnull, 0);
        raw_expect_in_sync(fd);
        base = daemon_fd_count(&shared_daemon);
        fd_watch_start(&watch, &shared_daemon, base);
        sortd__wire_header_pack(&h, hdr);
        raw_send_bytes(fd, hdr, sizeof(hdr));
        /* One byte a read: the kernel ends a read after a message with fds. */
        for (; sent < 64 && raw_send_bytes_fds(fd, "", 1, &devnull, 1) == 1; sent++)
                usleep(2000);
        ck_assert_msg(raw_wait_eof(fd, 5000), "still open after %d fds", sent);
        most = fd_watch_stop(&watch);
        printf("fds piled up: closed after %d of 64 fds, the daemon's fds %d -> at most %d\n", sent,
               base, most);
        ck_assert_msg(most <= base + 3, "the daemon held %d fds more", most - base);
        ck_assert_int_le(fds_come_to(base - 1), base - 1); /* its socket and every fd gone */
        ck_assert_uint_eq(status_of(&shared_daemon).protocol_errors, errors + 1);
        good_client_sorts();
        close(fd);
        close(devnull);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* The kB of a /proc/PID/status line ("VmData:"). */
static unsigned long long proc_status_kib(pid_t pid, const char *field)
{
        char path[64], line[256];
        unsigned long long kib = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, strlen(field)) == 0)
                        kib = strtoull(line + strlen(field), NULL, 10);
        fclose(f);
        return kib;
}

/* A ping on a connection the daemon may close before the ping arrives: NULL then. */
static Sortd__Wire__Reply *ping_unless_closed(int fd, uint64_t id)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Ping ping = SORTD__WIRE__PING__INIT;
        uint8_t frame[256];
        size_t len;

        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        req.ping = &ping;
        len = raw_pack_request(&req, 0, frame, sizeof(frame));
        if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len)
                return NULL; /* EPIPE: closed already */
        return raw_recv_reply(fd, NULL);
}

/*
 * A connection the daemon has no memory for is closed, and the daemon goes on accepting (libuv
 * stops watching a listener whose connection is left unaccepted). The memory runs out for
 * real: the daemon's data limit is lowered to what it has, so the 128 KiB of buffers a new
 * connection takes cannot be had once its heap's free room is spent.
 */
START_TEST(accept_without_memory)
{
        enum { TRIES = 32 };
        struct rlimit old, low;
        daemon_proc d = {0};
        int fds[TRIES], n = 0;
        bool dropped = false;
        char log[8192] = "";

        /* A sanitizer's or valgrind's allocator is not the daemon's own: the limit would fail
           something else first. */
        if (SANITIZED || (getenv("SORTD_TEST_WRAPPER") && *getenv("SORTD_TEST_WRAPPER"))) {
                printf("accept_without_memory: skipped under a sanitizer or SORTD_TEST_WRAPPER\n");
                return;
        }
        daemon_start(&d, NULL);
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_DATA, NULL, &old), 0);
        low = (struct rlimit){proc_status_kib(d.pid, "VmData:") << 10, old.rlim_max};
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_DATA, &low, NULL), 0);
        /* Each connection served takes some of the heap's free room, until one finds none:
           it is answered with a close, where an unaccepted one would hang. */
        while (!dropped && n < TRIES) {
                Sortd__Wire__Reply *r;

                fds[n] = raw_connect(d.sock);
                r = ping_unless_closed(fds[n], (uint64_t)n);
                n++;
                if (r) {
                        sortd__wire__reply__free_unpacked(r, NULL);
                        continue;
                }
                daemon_log(&d, log, sizeof(log));
                dropped = strstr(log, "out of memory accepting a connection: closed it") != NULL;
        }
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_DATA, &old, NULL), 0);
        ck_assert_msg(dropped, "%d connections under the limit, none dropped: %s", n, log);
        printf("accept without memory: connection %d under the limit dropped\n", n);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        fds[0] = raw_connect(d.sock);
        send_small_sort(fds[0], 1, 4096);
        small_sort_served(fds[0], 1, 4096);
        close(fds[0]);
        ck_assert_uint_ge(status_of(&d).connections_refused, 1);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("abuse");
        TCase *abuse = tcase_create("abuse"), *cancel = tcase_create("cancel");

        tcase_add_unchecked_fixture(abuse, shared_start, shared_stop);
        tcase_set_timeout(abuse, 30);
        tcase_add_loop_test(abuse, bad_input, 0, BAD_INPUTS);
        tcase_add_test(abuse, timeouts);
        tcase_add_test(abuse, never_reads_replies);
        tcase_add_test(abuse, flood_does_not_starve);
        tcase_add_loop_test(abuse, client_killed, 0,
                            (int)(sizeof(killed_cases) / sizeof(killed_cases[0])));
        tcase_add_test(abuse, half_close_answered);
        tcase_add_test(abuse, fds_piled_up);
        tcase_add_test(abuse, timeout_admits_the_next);
        tcase_add_test(abuse, idle_counts_from_the_reply);
        tcase_add_test(abuse, write_timeout_frees_memory);
        tcase_add_test(abuse, accept_without_memory);
        suite_add_tcase(s, abuse);
        /* A daemon of its own and a 2^22-key sort: slow under the sanitizers. */
        tcase_set_timeout(cancel, 300);
        tcase_add_test(cancel, queued_sorts_cancelled);
        suite_add_tcase(s, cancel);
        return run_suite(s);
}
