/*
 * daemon/sched/admission.c alone: the line for in-flight memory. First come, first served, except
 * that a waiter whose connection leaves replies unread holds no one up; and a buffer that
 * cannot be had fails its sort, counted. Connections here are socket pairs on a libuv loop; a
 * client that does not read is one whose reply bytes sit in the write queue.
 */
#include <check.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "suite.h"

/* A connection's side of it: its stream, replies, place in line, and its client's socket. */
typedef struct peer {
        uv_pipe_t pipe;
        sortd__pipeline out;
        sortd__admission_waiter wait;
        int client;
        int admitted; /* the order it was admitted in, from 1; 0: not yet */
} peer;

static int admissions;

static void on_admitted(sortd__admission_waiter *w)
{
        SORTD__CONTAINER_OF(w, peer, wait)->admitted = ++admissions;
}

static void peer_open(peer *p, uv_loop_t *loop, sortd__admission *a, sortd__stats *st)
{
        int sv[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        ck_assert_int_eq(uv_pipe_init(loop, &p->pipe, 0), 0);
        ck_assert_int_eq(uv_pipe_open(&p->pipe, sv[0]), 0);
        p->client = sv[1];
        p->admitted = 0;
        sortd__pipeline_init(&p->out, (uv_stream_t *)&p->pipe, "test", a, st, NULL);
}

/* A reply its client does not read: more than the socket's buffer, so bytes stay queued. */
static void leave_reply_unread(peer *p, uv_write_t *req, char *bytes, size_t len)
{
        uv_buf_t b = {.base = bytes, .len = len};

        ck_assert_int_eq(uv_write(req, (uv_stream_t *)&p->pipe, &b, 1, NULL), 0);
        ck_assert(sortd__pipeline_unread(&p->out));
}

/* A sort job of bytes keys' bytes. */
static sortd__job *sort_of(size_t bytes)
{
        sortd__job *j = calloc(1, sizeof(*j));

        ck_assert_ptr_nonnull(j);
        j->op = SORTD__JOB_OP_SORT;
        j->sizes.keys_bytes = bytes;
        return j;
}

/* Admits j for p now (true), or puts p in line. */
static bool admit(sortd__admission *a, peer *p, sortd__job *j)
{
        return sortd__admission_admit(a, &p->wait, j, &p->out);
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
        sortd__hostpool pool;
        sortd__admission a;
        uv_loop_t loop;
        uv_write_t req;
        peer p[4]; /* X, A, B, C */
        sortd__job *x = sort_of(600), *ja = sort_of(600), *jb = sort_of(200), *jc = sort_of(200);
        char why[64];

        ck_assert_int_eq(sortd__hostpool_init(&pool, NULL, 0, why, sizeof(why)), SORTD_OK);
        sortd__admission_init(&a, 1000, &pool, &st, on_admitted);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        for (int i = 0; i < 4; i++)
                peer_open(&p[i], &loop, &a, &st);
        admissions = 0;
        ck_assert(admit(&a, &p[0], x));
        ck_assert(!admit(&a, &p[1], ja)); /* 1200 > 1000 */
        ck_assert(!admit(&a, &p[2], jb)); /* fits, but A is first */
        ck_assert(!sortd__pipeline_unread(&p[1].out));
        sortd__admission_replies_wait(&a); /* nothing changed: B still behind A */
        ck_assert_int_eq(p[2].admitted, 0);
        leave_reply_unread(&p[1], &req, big, sizeof(big));
        sortd__admission_replies_wait(&a);
        ck_assert_int_eq(p[2].admitted, 1);
        ck_assert(admit(&a, &p[3], jc)); /* A holds no line: C goes at once */
        ck_assert_uint_eq(st.inflight_bytes, 1000);
        sortd__admission_release(&a, x);
        ck_assert_int_eq(p[1].admitted, 2); /* A kept its place */
        ck_assert_uint_eq(st.inflight_bytes, 1000);
        ck_assert_ptr_null(a.head);
        sortd__admission_release(&a, ja);
        sortd__admission_release(&a, jb);
        sortd__admission_release(&a, jc);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.sorts_failed, 0);
        close_all(&loop, p, 4);
        sortd__hostpool_close(&pool);
}
END_TEST

/* A buffer the system will not give: the sort is done at once, with SORTD_E_NOMEM, counted as
   failed, and holds nothing. */
START_TEST(no_buffer_counted)
{
        sortd__stats st = {0};
        sortd__hostpool pool;
        sortd__admission a;
        sortd__admission_waiter w = {0};
        sortd__job *j = sort_of((size_t)1 << 60);
        char why[64];

        ck_assert_int_eq(sortd__hostpool_init(&pool, NULL, 0, why, sizeof(why)), SORTD_OK);
        sortd__admission_init(&a, UINT64_MAX, &pool, &st, on_admitted);
        ck_assert(sortd__admission_admit(&a, &w, j, NULL));
        ck_assert_ptr_null(j->buf);
        ck_assert_int_eq(j->status, SORTD_E_NOMEM);
        ck_assert_int_eq(j->state, SORTD__JOB_DONE);
        ck_assert_uint_eq(st.sorts_failed, 1);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        sortd__admission_release(&a, j);
        sortd__hostpool_close(&pool);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("admission");
        TCase *tc = tcase_create("admission");

        tcase_add_test(tc, unread_replies_hold_no_line);
        tcase_add_test(tc, no_buffer_counted);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
