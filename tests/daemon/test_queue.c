/*
 * The fair queue and the engine thread on their own: round-robin order across flows,
 * cancellation, close, the loop thread's claim on the engine, batches (never of region sorts),
 * region sorts' turns across two queues; and the worker's hand-off back to a libuv loop (every
 * job's keys sorted right, callbacks counted, the loop closes with no handle left).
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"
#include "internal.h"

static sortd__job *job(int tag)
{
        sortd__job *j = calloc(1, sizeof(*j));

        ck_assert_ptr_nonnull(j);
        j->id = (uint64_t)tag;
        return j;
}

START_TEST(round_robin)
{
        sortd__queue q;
        sortd__queue_flow a = {0}, b = {0}, c = {0};
        /* A pipelines four, B two, C one: each flow gets one turn in three. */
        static const int expect[] = {10, 20, 30, 11, 21, 12, 13};

        ck_assert_int_eq(sortd__queue_init(&q), 0);
        for (int i = 0; i < 4; i++)
                sortd__queue_push(&q, &a, job(10 + i));
        for (int i = 0; i < 2; i++)
                sortd__queue_push(&q, &b, job(20 + i));
        sortd__queue_push(&q, &c, job(30));
        ck_assert_uint_eq(sortd__queue_length(&q), 7);
        for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
                sortd__job *j = sortd__queue_pop(&q);

                ck_assert_int_eq((int)j->id, expect[i]);
                free(j);
        }
        ck_assert_uint_eq(sortd__queue_length(&q), 0);
        ck_assert(!a.in_ring && !b.in_ring && !c.in_ring);
        sortd__queue_destroy(&q);
}
END_TEST

START_TEST(cancel_and_close)
{
        sortd__queue q;
        sortd__queue_flow a = {0}, b = {0};
        sortd__job *list, *next, *j;
        int n = 0;

        ck_assert_int_eq(sortd__queue_init(&q), 0);
        for (int i = 0; i < 3; i++) {
                sortd__queue_push(&q, &a, job(10 + i));
                sortd__queue_push(&q, &b, job(20 + i));
        }
        for (list = sortd__queue_cancel(&q, &a); list; list = next, n++) {
                next = list->qnext;
                ck_assert_int_eq((int)list->id, 10 + n);
                free(list);
        }
        ck_assert_int_eq(n, 3);
        ck_assert(!a.in_ring);
        ck_assert_ptr_null(sortd__queue_cancel(&q, &a)); /* idempotent */
        ck_assert_uint_eq(sortd__queue_length(&q), 3);
        sortd__queue_close(&q);
        /* Closing lets the queue run dry, then pop says so. */
        for (int i = 0; i < 3; i++) {
                j = sortd__queue_pop(&q);
                ck_assert_int_eq((int)j->id, 20 + i);
                free(j);
        }
        ck_assert_ptr_null(sortd__queue_pop(&q));
        sortd__queue_destroy(&q);
}
END_TEST

/* The engine thread of claims_and_pops: pops one job, reports it, pops again (to NULL). */
static void *popper(void *arg)
{
        sortd__queue *q = arg;
        sortd__job *j;

        while ((j = sortd__queue_pop(q)))
                free(j);
        return NULL;
}

/* The loop thread's claim: only with nothing queued and the engine thread between jobs; while
   it is held, the engine thread takes nothing. */
START_TEST(claims_and_pops)
{
        sortd__queue q;
        sortd__queue_flow a = {0};
        pthread_t th;
        sortd__job *j;

        ck_assert_int_eq(sortd__queue_init(&q), 0);
        ck_assert(sortd__queue_claim(&q));
        ck_assert(!sortd__queue_claim(&q)); /* held already */
        sortd__queue_release(&q);
        sortd__queue_push(&q, &a, job(1));
        ck_assert(!sortd__queue_claim(&q)); /* a job waits */
        j = sortd__queue_pop(&q);
        ck_assert(!sortd__queue_claim(&q)); /* the engine thread has it */
        free(j);
        /* Its next pop makes it idle again, here on another thread that waits for work. */
        ck_assert_int_eq(pthread_create(&th, NULL, popper, &q), 0);
        while (!sortd__queue_claim(&q))
                usleep(100);
        /* Claimed: a job queued now waits for the release, not taken under the claim. */
        sortd__queue_push(&q, &a, job(2));
        usleep(20000);
        ck_assert_uint_eq(sortd__queue_length(&q), 1);
        sortd__queue_release(&q);
        while (sortd__queue_length(&q) != 0)
                usleep(100);
        sortd__queue_close(&q);
        pthread_join(th, NULL);
        ck_assert(!sortd__queue_claim(&q)); /* closed */
        sortd__queue_destroy(&q);
}
END_TEST

static sortd__job *sort_job(int tag, uint64_t n)
{
        sortd__job *j = job(tag);

        j->work.op = SORTD__JOB_OP_SORT;
        j->work.n = n;
        j->work.sizes.reply_len = 4 * n;
        return j;
}

/* Pops a batch and checks its ids, in order; frees it. */
static void expect_batch(sortd__queue *q, const sortd__queue_batch_limits *lim, const int *ids,
                         size_t count)
{
        size_t got;
        sortd__job *list = sortd__queue_pop_batch(q, lim, &got), *next;

        ck_assert_uint_eq(got, count);
        for (size_t i = 0; i < count; i++, list = next) {
                ck_assert_ptr_nonnull(list);
                ck_assert_int_eq((int)list->id, ids[i]);
                next = list->qnext;
                free(list);
        }
        ck_assert_ptr_null(list);
}

/* A sort of n keys in region rg. */
static sortd__job *region_job(int tag, uint64_t n, sortd__region *rg)
{
        sortd__job *j = sort_job(tag, n);

        j->keys_rg = rg;
        j->work.shared = true;
        return j;
}

START_TEST(batches)
{
        sortd__queue_batch_limits lim = {
                .member_keys = 100, .max_keys = 1000, .max_bytes = 1 << 20, .max_jobs = 4};
        sortd__queue q;
        sortd__queue_flow a = {0}, b = {0}, c = {0};
        sortd__region rg = {0};

        ck_assert_int_eq(sortd__queue_init(&q), 0);
        /* A: small, small, big, small. B: small x3. C: a region close, then small. */
        sortd__queue_push(&q, &a, sort_job(10, 50));
        sortd__queue_push(&q, &a, sort_job(11, 60));
        sortd__queue_push(&q, &a, sort_job(12, 5000));
        sortd__queue_push(&q, &a, sort_job(13, 1));
        for (int i = 0; i < 3; i++)
                sortd__queue_push(&q, &b, sort_job(20 + i, 100));
        sortd__queue_push(&q, &c, job(30)); /* SORTD__JOB_OP_NONE: never batched */
        sortd__queue_push(&q, &c, sort_job(31, 7));
        /* Round-robin turns in one go, up to max_jobs: A, B, then C's head is no sort. */
        expect_batch(&q, &lim, (const int[]){10, 20}, 2);
        expect_batch(&q, &lim, (const int[]){30}, 1);
        /* A's head is small; B's; C's; then A's head (12) is big: the batch stops there. */
        expect_batch(&q, &lim, (const int[]){11, 21, 31}, 3);
        expect_batch(&q, &lim, (const int[]){12}, 1); /* a big sort goes alone */
        /* Key totals: 100 + 1 fits 150; another 100 would not. */
        lim.max_keys = 150;
        sortd__queue_push(&q, &b, sort_job(23, 100));
        expect_batch(&q, &lim, (const int[]){22, 13}, 2);
        /* Byte totals, and batches off. */
        lim.max_keys = 1000;
        lim.max_bytes = 4 * 100;
        sortd__queue_push(&q, &a, sort_job(14, 2));
        expect_batch(&q, &lim, (const int[]){23}, 1);
        sortd__queue_push(&q, &b, sort_job(24, 2));
        lim.member_keys = 0;
        expect_batch(&q, &lim, (const int[]){14}, 1);
        expect_batch(&q, &lim, (const int[]){24}, 1);
        /* A small sort in a region never joins a batch, neither first nor after one. */
        lim.member_keys = 100;
        lim.max_bytes = 1 << 20;
        sortd__queue_push(&q, &a, region_job(15, 2, &rg));
        sortd__queue_push(&q, &b, sort_job(25, 2));
        sortd__queue_push(&q, &b, region_job(26, 2, &rg));
        sortd__queue_push(&q, &c, sort_job(32, 2));
        expect_batch(&q, &lim, (const int[]){15}, 1);
        expect_batch(&q, &lim, (const int[]){25, 32}, 2);
        expect_batch(&q, &lim, (const int[]){26}, 1);
        ck_assert_uint_eq(sortd__queue_length(&q), 0);
        sortd__queue_close(&q);
        size_t got;
        ck_assert_ptr_null(sortd__queue_pop_batch(&q, &lim, &got));
        ck_assert_uint_eq(got, 0);
        sortd__queue_destroy(&q);
}
END_TEST

/* Region sort tag of connection turns, on flow f of q. */
static sortd__job *push_turn(sortd__turns *t, sortd__queue *q, sortd__queue *const *wake,
                             sortd__queue_flow *f, int tag, sortd__region *rg)
{
        sortd__job *j = region_job(tag, 10, rg);

        sortd__turns_take(t, j, wake, 2);
        sortd__queue_push(q, f, j);
        return j;
}

/* The engine thread of turns_across_queues: pops one job of q (waiting as long as it takes). */
static void *pop_one(void *arg)
{
        return sortd__queue_pop(arg);
}

/*
 * One connection's region sorts, spread over the engine's queue and the CPU path's, run one at
 * a time in the order they came: a flow whose next one's turn has not come is passed over
 * (other flows go), and its engine thread waits, even a closing queue's, until the sort before
 * it ends on the other thread.
 */
START_TEST(turns_across_queues)
{
        sortd__queue engine, cpu;
        sortd__queue_flow ef = {0}, cf = {0}, other = {0};
        sortd__turns turns = {0};
        sortd__region rg = {0};
        sortd__job *j, *r[3];
        pthread_t th;
        void *got;

        sortd__queue *const wake[2] = {&engine, &cpu};

        ck_assert_int_eq(sortd__queue_init(&engine), 0);
        ck_assert_int_eq(sortd__queue_init(&cpu), 0);
        r[0] = push_turn(&turns, &engine, wake, &ef, 0, &rg);
        r[1] = push_turn(&turns, &cpu, wake, &cf, 1, &rg);
        r[2] = push_turn(&turns, &engine, wake, &ef, 2, &rg);
        sortd__queue_push(&cpu, &other, sort_job(90, 10)); /* another connection's */
        ck_assert(sortd__turns_now(r[0]) && !sortd__turns_now(r[1]) && !sortd__turns_now(r[2]));
        /* The CPU path passes over turn 1 and takes the other connection's sort. */
        j = sortd__queue_pop(&cpu);
        ck_assert_int_eq((int)j->id, 90);
        free(j);
        ck_assert(!sortd__queue_claim(&cpu)); /* turn 1 is still queued there */
        ck_assert_ptr_eq(sortd__queue_pop(&engine), r[0]);
        /* Turn 2 waits for turn 1, which waits for turn 0 to end. */
        ck_assert_int_eq(pthread_create(&th, NULL, pop_one, &engine), 0);
        sortd__turns_end(r[0]);
        ck_assert_ptr_eq(sortd__queue_pop(&cpu), r[1]);
        usleep(20000);
        ck_assert_uint_eq(sortd__queue_length(&engine), 1); /* still waiting */
        sortd__queue_close(&engine);                        /* and even closing, it waits */
        usleep(20000);
        ck_assert_uint_eq(sortd__queue_length(&engine), 1);
        sortd__turns_end(r[1]); /* on the CPU path's thread: wakes the engine's */
        pthread_join(th, &got);
        ck_assert_ptr_eq(got, r[2]);
        sortd__turns_end(r[2]);
        ck_assert_ptr_null(sortd__queue_pop(&engine));
        for (int i = 0; i < 3; i++)
                free(r[i]);
        sortd__queue_destroy(&engine);
        sortd__queue_destroy(&cpu);
}
END_TEST

#define JOBS 64
#define N 1000

static int completed;
static sortd__worker worker;

/* Job i's keys: distinct (the multiplier is odd), in no order. */
static void job_keys(uint32_t *k, int i)
{
        for (uint32_t x = 0; x < N; x++)
                k[x] = (N - x) * 2654435761u + (uint32_t)i;
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return (x > y) - (x < y);
}

/* The engine's result, compared with its own input sorted here: order alone would pass an
   engine that wrote zeros. */
static void on_complete(sortd__job *j, void *arg)
{
        uint32_t *k = (uint32_t *)j->buf, want[N];
        size_t i = 0;

        ck_assert_ptr_eq(arg, &worker);
        ck_assert_int_eq(j->work.status, SORTD_OK);
        job_keys(want, (int)j->id);
        qsort(want, N, sizeof(want[0]), cmp_u32);
        while (i < N && k[i] == want[i])
                i++;
        ck_assert_msg(i == N, "job %llu: key %zu is %u, not %u", (unsigned long long)j->id, i,
                      i < N ? k[i] : 0, i < N ? want[i] : 0);
        free(j->buf);
        free(j);
        if (++completed == JOBS)
                sortd__worker_stop(&worker);
}

START_TEST(worker_hand_off)
{
        sortd_engine_config ec = {.capacity = N, .threads = 1};
        sortd__queue_flow flows[4] = {{0}};
        sortd__queue q;
        sortd_engine *e;
        uv_loop_t loop;
        char why[256];

        ck_assert_int_eq(sortd_engine_create("cpu", &ec, &e, why, sizeof(why)), SORTD_OK);
        ck_assert_int_eq(sortd__queue_init(&q), 0);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        /* _i = 1: small sorts go to the engine in batches when they queue up. */
        sortd__queue_batch_limits lim = {
                .member_keys = N, .max_keys = 16 * N, .max_bytes = 64 * N, .max_jobs = 8};

        completed = 0;
        ck_assert_int_eq(
                sortd__worker_start(&worker, &loop, e, &q, _i ? &lim : NULL, on_complete, &worker),
                0);
        for (int i = 0; i < JOBS; i++) {
                sortd__job *j = job(i);
                uint32_t *k = malloc(N * 4);

                ck_assert_ptr_nonnull(k);
                job_keys(k, i);
                j->work.op = SORTD__JOB_OP_SORT;
                j->buf = j->work.keys = (uint8_t *)k;
                j->work.n = N;
                j->work.desc = (sortd_sort_desc){.key_type = SORTD_KEY_U32};
                sortd__queue_push(&q, &flows[i % 4], j);
        }
        ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
        ck_assert_int_eq(completed, JOBS);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
        sortd__queue_destroy(&q);
        sortd_engine_destroy(e);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("queue");
        TCase *tc = tcase_create("queue");

        tcase_add_test(tc, round_robin);
        tcase_add_test(tc, cancel_and_close);
        tcase_add_test(tc, batches);
        tcase_add_test(tc, turns_across_queues);
        tcase_add_test(tc, claims_and_pops);
        tcase_add_loop_test(tc, worker_hand_off, 0, 2);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
