/*
 * daemon/sched/admission.c alone: the line for in-flight memory. First come, first served, except
 * that a waiter whose connection leaves replies unread holds no one up. And daemon/sched/job.c's
 * buffers: one that cannot be had is none, and a job gives its charged bytes back as it goes.
 * Connections here are socket pairs on a libuv loop; a client that does not read is one whose
 * reply bytes sit in the write queue.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "suite.h"

/* A connection's side of it: its stream, replies, place in line, and its client's socket. */
typedef struct peer {
        uv_pipe_t pipe;
        sortd__admission_waiter wait;
        int client;
        int admitted; /* the order it was admitted in, from 1; 0: not yet */
} peer;

static int admissions;

static void on_admitted(sortd__admission_waiter *w)
{
        SORTD__CONTAINER_OF(w, peer, wait)->admitted = ++admissions;
}

static void peer_open(peer *p, uv_loop_t *loop)
{
        int sv[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        ck_assert_int_eq(uv_pipe_init(loop, &p->pipe, 0), 0);
        ck_assert_int_eq(uv_pipe_open(&p->pipe, sv[0]), 0);
        p->client = sv[1];
        p->admitted = 0;
        p->wait = (sortd__admission_waiter){.admitted = on_admitted};
}

/* A reply its client does not read: more than the socket's buffer, so bytes stay queued. */
static void leave_reply_unread(peer *p, uv_write_t *req, char *bytes, size_t len)
{
        uv_buf_t b = {.base = bytes, .len = len};

        ck_assert_int_eq(uv_write(req, (uv_stream_t *)&p->pipe, &b, 1, NULL), 0);
        ck_assert_uint_gt(uv_stream_get_write_queue_size((uv_stream_t *)&p->pipe), 0);
}

/* Charges bytes for p now (true), or puts p in line. */
static bool admit(sortd__admission *a, peer *p, size_t bytes)
{
        return sortd__admission_charge(a, &p->wait, bytes, (uv_stream_t *)&p->pipe);
}

static void close_all(uv_loop_t *loop, peer *peers, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                uv_close((uv_handle_t *)&peers[i].pipe, NULL);
                close(peers[i].client);
        }
        ck_assert_int_eq(uv_run(loop, UV_RUN_DEFAULT), 0);
        ck_assert_int_eq(uv_loop_close(loop), 0);
}

/*
 * 1000 bytes in flight at most. X holds 600. A (600), then B (200), wait in line. A's client stops
 * reading its replies: B goes past A (now, and a newcomer C at once) while memory allows; A keeps
 * its place and goes once memory comes back.
 */
START_TEST(unread_replies_hold_no_line)
{
        static char big[16 << 20];
        sortd__stats st = {0};
        sortd__admission a;
        uv_loop_t loop;
        uv_write_t req;
        peer p[4]; /* X, A, B, C */

        sortd__admission_init(&a, 1000, &st);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        for (int i = 0; i < 4; i++)
                peer_open(&p[i], &loop);
        admissions = 0;
        ck_assert(admit(&a, &p[0], 600));
        ck_assert(!admit(&a, &p[1], 600)); /* 1200 > 1000 */
        ck_assert(!admit(&a, &p[2], 200)); /* fits, but A is first */
        sortd__admission_replies_wait(&a); /* nothing changed: B still behind A */
        ck_assert_int_eq(p[2].admitted, 0);
        leave_reply_unread(&p[1], &req, big, sizeof(big));
        sortd__admission_replies_wait(&a);
        ck_assert_int_eq(p[2].admitted, 1);
        ck_assert(admit(&a, &p[3], 200)); /* A holds no line: C goes at once */
        ck_assert_uint_eq(st.inflight_bytes, 1000);
        sortd__admission_uncharge(&a, 600);
        ck_assert_int_eq(p[1].admitted, 2); /* A kept its place */
        ck_assert_uint_eq(st.inflight_bytes, 1000);
        ck_assert_uint_eq(st.inflight_peak, 1000);
        ck_assert_ptr_null(a.head);
        sortd__admission_uncharge(&a, 600);
        sortd__admission_uncharge(&a, 200);
        sortd__admission_uncharge(&a, 200);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        close_all(&loop, p, 4);
}
END_TEST

/* With nothing in flight a request goes, however large: progress is guaranteed. A waiter that
   leaves the line is never admitted. */
START_TEST(alone_goes_and_leaving_is_final)
{
        sortd__stats st = {0};
        sortd__admission a;
        uv_loop_t loop;
        peer p[2];

        sortd__admission_init(&a, 100, &st);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        for (int i = 0; i < 2; i++)
                peer_open(&p[i], &loop);
        admissions = 0;
        ck_assert(admit(&a, &p[0], 5000));
        ck_assert(!admit(&a, &p[1], 10));
        sortd__admission_leave(&a, &p[1].wait);
        sortd__admission_leave(&a, &p[1].wait); /* not in line: nothing */
        ck_assert_ptr_null(a.head);
        sortd__admission_uncharge(&a, 5000);
        ck_assert_int_eq(p[1].admitted, 0);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.inflight_peak, 5000);
        close_all(&loop, p, 2);
}
END_TEST

/* A buffer the system will not give: the job has none, says so, and frees clean; its charged
   bytes go back when it goes. */
START_TEST(job_without_buffer)
{
        sortd__stats st = {0};
        sortd__admission a;
        sortd__hostpool pool;
        sortd__job *j = sortd__job_new(7);
        char why[64];

        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(j->state, SORTD__JOB_DONE);
        ck_assert_int_eq(sortd__hostpool_init(&pool, NULL, 0, why, sizeof(why)), 0);
        sortd__admission_init(&a, UINT64_MAX, &st);
        j->parts.keys = (uint64_t)1 << 60; /* the buffer's parts, as dispatch lays them out */
        ck_assert_int_eq(sortd__job_buffer(j, &pool), -ENOMEM);
        ck_assert_ptr_null(j->buf);
        sortd__job_free(j);

        j = sortd__job_new(8);
        j->parts = (sortd__job_parts){.keys = 13, .vals = 8};
        j->work.desc.payload = SORTD_PAYLOAD_VALUES64;
        ck_assert_uint_eq(sortd__job_buffer_bytes(j), 32); /* each part on 16 bytes */
        ck_assert_int_eq(sortd__job_buffer(j, &pool), 0);  /* the pool is off: no miss */
        ck_assert_ptr_eq(j->work.keys, j->buf);
        ck_assert_ptr_eq(j->work.vals, j->buf + 16);
        ck_assert(sortd__admission_charge(&a, &(sortd__admission_waiter){0}, 32, NULL));
        sortd__job_charge(j, &a, 32);
        ck_assert_uint_eq(st.inflight_bytes, 32);
        sortd__job_free(j);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        sortd__job_free(NULL);
        sortd__hostpool_close(&pool);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("admission");
        TCase *tc = tcase_create("admission");

        tcase_add_test(tc, unread_replies_hold_no_line);
        tcase_add_test(tc, alone_goes_and_leaving_is_final);
        tcase_add_test(tc, job_without_buffer);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
