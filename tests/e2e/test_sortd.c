/*
 * End to end through a real sortd on a temporary socket: every key type x payload x order
 * against the engine called in-process, 32 pipelining client threads, the fair queue, and the
 * admission limits. Bad input and clients that die are test_abuse.c's.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datagen.h"
#include "engine.h"
#include "harness.h"
#include "matrix.h"
#include "reference.h"

static daemon_proc shared_daemon; /* zero: no notify socket */

static void shared_start(void)
{
        daemon_start(&shared_daemon, NULL);
}

static void shared_stop(void)
{
        ck_assert_int_eq(daemon_stop(&shared_daemon, SIGTERM), 0);
}

/* ---- hello, ping, status ---- */

START_TEST(hello_ping_status)
{
        sortd_conn *c = client_open(&shared_daemon);
        sortd_server_status st;
        sortd_info info;

        ck_assert_int_eq(sortd_hello(c, &info), SORTD_OK);
        ck_assert_str_eq(info.engine, "cpu");
        ck_assert_uint_eq(info.capacity, 1u << 20);
        ck_assert_uint_eq(info.protocol_version, SORTD__WIRE_VERSION);
        ck_assert_uint_eq(info.max_message_bytes, SORTD__WIRE_MAX_MESSAGE);
        ck_assert_uint_gt(info.max_request_bytes, 0);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        ck_assert_int_eq(sortd_query_status(c, &st), SORTD_OK);
        ck_assert_str_eq(st.engine, "cpu");
        ck_assert_uint_ge(st.connections, 1);
        ck_assert_uint_ge(st.requests_total, 3);
        ck_assert_str_eq(sortd_error_message(c), "");
        sortd_close(c);
}
END_TEST

/* ---- progress of the arrays on the socket ---- */

typedef struct transfer_log {
        sortd_progress_phase phase[2];
        uint64_t first[2], last[2], total[2], calls[2];
        unsigned phases; /* 1 + the index of the phase seen last */
        bool monotonic;
} transfer_log;

static void log_transfer(void *user, sortd_progress_phase phase, uint64_t done, uint64_t total)
{
        transfer_log *t = user;
        unsigned i = phase == SORTD_PROGRESS_SENDING ? 0 : 1;

        if (t->calls[i] == 0) {
                t->first[i] = done;
                t->total[i] = total;
                t->phases = i + 1;
        } else if (done < t->last[i] || total != t->total[i] || t->phases != i + 1) {
                t->monotonic = false;
        }
        t->last[i] = done;
        t->calls[i]++;
}

START_TEST(transfer_progress)
{
        enum { N = 1 << 20 }; /* 8 MiB each way: many reads and writes on a Unix socket */
        sortd_conn *c = client_open(&shared_daemon);
        uint32_t *keys = malloc(N * sizeof(*keys)), *vals = malloc(N * sizeof(*vals));
        transfer_log t = {.monotonic = true};

        ck_assert_ptr_nonnull(keys);
        ck_assert_ptr_nonnull(vals);
        for (uint32_t i = 0; i < N; i++) {
                keys[i] = (N - i) * 2654435761u;
                vals[i] = i;
        }
        sortd_set_progress(c, log_transfer, &t);
        ck_assert_int_eq(sortd_sort_pairs(c, keys, vals, 4, N, SORTD_KEY_U32, NULL), SORTD_OK);
        for (unsigned i = 0; i < 2; i++) {
                ck_assert_uint_eq(t.total[i], 8u * N);
                ck_assert_uint_eq(t.first[i], 0);
                ck_assert_uint_eq(t.last[i], 8u * N);
                ck_assert_uint_ge(t.calls[i], 2); /* 0, then total: at least */
        }
        ck_assert_uint_eq(t.phases, 2); /* receiving came after sending */
        ck_assert(t.monotonic);
        for (uint32_t i = 1; i < N; i++)
                ck_assert_uint_le(keys[i - 1], keys[i]);

        /* Calls without arrays report nothing; NULL stops the reports. */
        memset(&t, 0, sizeof(t));
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        ck_assert_int_eq(sortd_sort(c, keys, 0, SORTD_KEY_U32, NULL), SORTD_OK);
        ck_assert_uint_eq(t.calls[0] + t.calls[1], 0);
        sortd_set_progress(c, NULL, NULL);
        ck_assert_int_eq(sortd_sort(c, keys, N, SORTD_KEY_U32, NULL), SORTD_OK);
        ck_assert_uint_eq(t.calls[0] + t.calls[1], 0);
        sortd_close(c);
        free(keys);
        free(vals);
}
END_TEST

/* ---- the matrix against the in-process engine ---- */

static sortd_engine *local_engine(void)
{
        sortd_engine_config ec = {.capacity = 1u << 20, .threads = 2};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_msg(sortd_engine_create("cpu", &ec, &e, why, sizeof(why)) == SORTD_OK, "%s", why);
        return e;
}

static sortd_status daemon_sort(sortd_conn *c, const sortd_sort_desc *d, void *keys, void *vals,
                                size_t n)
{
        sortd_sort_options o = {d->order, d->begin_bit, d->end_bit};

        switch (d->payload) {
        case SORTD_PAYLOAD_NONE:
                return sortd_sort(c, keys, n, d->key_type, &o);
        case SORTD_PAYLOAD_VALUES32:
        case SORTD_PAYLOAD_VALUES64:
                return sortd_sort_pairs(c, keys, vals, sortd_payload_size(d->payload), n,
                                        d->key_type, &o);
        default:
                return sortd_argsort(c, keys, vals, sortd_payload_size(d->payload), n, d->key_type,
                                     &o);
        }
}

/* _i walks key type x payload x order. */
START_TEST(matrix)
{
        const int i = matrix_case(_i);
        sortd_sort_desc d = matrix_desc(i);
        static const size_t sizes[] = {0, 1, 2, 1000, 65537};
        static const datagen_dist dists[] = {DATAGEN_UNIFORM, DATAGEN_SPECIAL, DATAGEN_FEW};
        size_t ks = sortd_key_size(d.key_type), vs = sortd_payload_size(d.payload);
        sortd_engine *e = local_engine();
        sortd_conn *c = client_open(&shared_daemon);

        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
                for (size_t di = 0; di < sizeof(dists) / sizeof(dists[0]); di++) {
                        size_t n = sizes[si];
                        uint8_t *k1 = xmalloc(n * ks + 1), *k2 = xmalloc(n * ks + 1);
                        uint8_t *v1 = xmalloc(n * vs + 1), *v2 = xmalloc(n * vs + 1);
                        uint64_t seed = (uint64_t)i * 1000 + si * 10 + di;

                        datagen_fill(k1, n, d.key_type, dists[di], 0, seed);
                        memcpy(k2, k1, n * ks);
                        if (vs) {
                                datagen_fill_values(v1, n, (unsigned)vs, seed + 7);
                                memcpy(v2, v1, n * vs);
                        }
                        /* A bit window on the last distribution. */
                        d.begin_bit = di == 2 ? 1 : 0;
                        d.end_bit = di == 2 ? (unsigned)ks * 8 - 1 : 0;
                        ck_assert_int_eq(sortd_engine_sort(e, &d, k1, vs ? v1 : NULL, n), SORTD_OK);
                        ck_assert_msg(daemon_sort(c, &d, k2, vs ? v2 : NULL, n) == SORTD_OK, "%s",
                                      sortd_error_message(c));
                        ck_assert_msg(memcmp(k1, k2, n * ks) == 0, "keys differ: %s %s %s n=%zu",
                                      sortd_key_type_name(d.key_type),
                                      sortd_payload_name(d.payload), d.order ? "desc" : "asc", n);
                        ck_assert_msg(memcmp(v1, v2, n * vs) == 0, "values differ: %s %s n=%zu",
                                      sortd_key_type_name(d.key_type),
                                      sortd_payload_name(d.payload), n);
                        free(k1);
                        free(k2);
                        free(v1);
                        free(v2);
                }
        }
        sortd_close(c);
        sortd_engine_destroy(e);
}
END_TEST

/* ---- client-side validation ---- */

/* ---- 32 pipelining threads ---- */

#define THREADS 32
#define PER_THREAD 24
#define DEPTH 4

typedef struct job {
        sortd_request r;
        sortd_sort_desc d;
        void *in_keys, *in_vals, *keys, *vals;
} job;

static void job_make(job *j, unsigned seed)
{
        static const size_t sizes[] = {1, 17, 1000, 4096, 30000};
        uint64_t x = seed * 0x9e3779b97f4a7c15ull;
        size_t n = sizes[(x >> 7) % 5], ks, vs;

        j->d = (sortd_sort_desc){
                .key_type = (sortd_key_type)((x >> 17) % SORTD_KEY_TYPE_COUNT),
                .payload = (sortd_payload)((x >> 27) % SORTD_PAYLOAD_COUNT),
                .order = (sortd_order)((x >> 37) % 2),
        };
        ks = sortd_key_size(j->d.key_type);
        vs = sortd_payload_size(j->d.payload);
        j->in_keys = xmalloc(n * ks);
        j->keys = xmalloc(n * ks);
        j->in_vals = xmalloc(n * vs + 8);
        j->vals = xmalloc(n * vs + 8);
        datagen_fill(j->in_keys, n, j->d.key_type, DATAGEN_FEW, 100, seed);
        if (vs)
                datagen_fill_values(j->in_vals, n, (unsigned)vs, seed);
        memcpy(j->keys, j->in_keys, n * ks);
        memcpy(j->vals, j->in_vals, n * vs);
        j->r = (sortd_request){
                .keys = j->keys,
                .vals = vs ? j->vals : NULL,
                .n = n,
                .key_type = j->d.key_type,
                .payload = j->d.payload,
                .opts = {.order = j->d.order},
        };
}

/* The reference's stable result is the one right answer: sorted, a permutation, stable. */
static int job_check(job *j)
{
        size_t n = j->r.n, ks = sortd_key_size(j->d.key_type),
               vs = sortd_payload_size(j->d.payload);
        int ok;

        ck_assert_int_eq(ref_sort(&j->d, j->in_keys, vs ? j->in_vals : NULL, n), 0);
        ok = memcmp(j->in_keys, j->keys, n * ks) == 0 && memcmp(j->in_vals, j->vals, n * vs) == 0;
        free(j->in_keys);
        free(j->in_vals);
        free(j->keys);
        free(j->vals);
        return ok;
}

static void *pipeline_thread(void *arg)
{
        unsigned t = (unsigned)(uintptr_t)arg;
        job jobs[PER_THREAD];
        sortd_conn *c = client_open(&shared_daemon);
        int sent = 0, got = 0;
        uintptr_t bad = 0;

        for (int i = 0; i < PER_THREAD; i++)
                job_make(&jobs[i], t * 1000 + (unsigned)i);
        while (got < PER_THREAD) {
                while (sent < PER_THREAD && sent - got < DEPTH)
                        if (sortd_submit(c, &jobs[sent++].r) != SORTD_OK)
                                return (void *)(uintptr_t)1000;
                if (sortd_receive(c, &jobs[got++].r) != SORTD_OK)
                        return (void *)(uintptr_t)2000;
        }
        for (int i = 0; i < PER_THREAD; i++)
                bad += !job_check(&jobs[i]);
        sortd_close(c);
        return (void *)bad;
}

START_TEST(concurrent_pipelines)
{
        pthread_t th[THREADS];
        sortd_server_status st;

        for (unsigned t = 0; t < THREADS; t++)
                ck_assert_int_eq(
                        pthread_create(&th[t], NULL, pipeline_thread, (void *)(uintptr_t)t), 0);
        for (unsigned t = 0; t < THREADS; t++) {
                void *r;

                pthread_join(th[t], &r);
                ck_assert_msg((uintptr_t)r == 0, "thread %u: %lu bad results", t,
                              (unsigned long)(uintptr_t)r);
        }
        st = status_of(&shared_daemon);
        ck_assert_uint_ge(st.sorts_ok, THREADS * PER_THREAD);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        /* Small sorts queued up from many connections: the engine took them in batches, every
           one of which gave each member its own right answer (job_check above). */
        ck_assert_uint_gt(st.batches, 0);
        ck_assert_uint_ge(st.batched, 2 * st.batches);
}
END_TEST

/* ---- fairness: a pipelining client does not hold the engine for a later small one ---- */

/* The big sorts' keys are (BN - k) * GOLDEN for k in [0, BN): distinct, since GOLDEN is odd.
   A result is right when it ascends strictly and every key, times GOLDEN's inverse mod 2^64,
   is one of 1..BN: n distinct keys from a set of n are that set. */
#define GOLDEN 0x9e3779b97f4a7c15ull

static void check_big_sorted(const uint64_t *k, size_t n)
{
        uint64_t inv = GOLDEN; /* Newton: each step doubles the correct low bits (3 -> 96) */
        size_t i = 0;

        for (int step = 0; step < 5; step++)
                inv *= 2 - GOLDEN * inv;
        while (i < n && (i == 0 || k[i - 1] < k[i]) && k[i] * inv >= 1 && k[i] * inv <= n)
                i++;
        ck_assert_msg(i == n, "big sort wrong at %zu of %zu", i, n);
}

/* Pipelines count sorts of n distinct u64 keys in reverse order on c. */
static void submit_big(sortd_conn *c, uint64_t **big, sortd_request *r, int count, size_t n)
{
        for (int i = 0; i < count; i++) {
                big[i] = xmalloc(n * 8);
                for (size_t k = 0; k < n; k++)
                        big[i][k] = (n - k) * GOLDEN;
                r[i] = (sortd_request){.keys = big[i], .n = n, .key_type = SORTD_KEY_U64};
                ck_assert_int_eq(sortd_submit(c, &r[i]), SORTD_OK);
        }
}

/* Receives and checks what submit_big sent; frees the keys. */
static void receive_big(sortd_conn *c, uint64_t **big, sortd_request *r, int count, size_t n)
{
        for (int i = 0; i < count; i++) {
                ck_assert_int_eq(sortd_receive(c, &r[i]), SORTD_OK);
                check_big_sorted(big[i], n);
                free(big[i]);
        }
}

START_TEST(fair_queue)
{
        enum { BIG = 3, BN = 1u << 19 };
        sortd_conn *a = client_open(&shared_daemon), *b = client_open(&shared_daemon);
        uint64_t before = status_of(&shared_daemon).requests_total, *big[BIG], ahead;
        sortd_request ra[BIG], rb;
        uint32_t small[100];

        submit_big(a, big, ra, BIG, BN);
        /* Once the daemon has read A's sorts (each status_of adds a Hello and a Status)... */
        for (int k = 0; k < 500; k++) {
                if (status_of(&shared_daemon).requests_total >= before + 2 + BIG + 2 * (k + 1))
                        break;
                usleep(1000);
        }
        /* ...B's small sort waits for the one A has on the engine, not for all of them. */
        for (int i = 0; i < 100; i++)
                small[i] = 99u - (uint32_t)i;
        rb = (sortd_request){.keys = small, .n = 100, .key_type = SORTD_KEY_U32};
        ck_assert_int_eq(sortd_submit(b, &rb), SORTD_OK);
        ck_assert_int_eq(sortd_receive(b, &rb), SORTD_OK);
        for (int i = 0; i < 100; i++)
                ck_assert_uint_eq(small[i], (uint32_t)i);
        receive_big(a, big, ra, BIG, BN);
        ahead = ra[0].timings.sort_ns + ra[1].timings.sort_ns;
        ck_assert_msg(rb.timings.queued_ns < ahead,
                      "small sort queued %llu ns behind a client whose first two sorts took %llu",
                      (unsigned long long)rb.timings.queued_ns, (unsigned long long)ahead);
        sortd_close(a);
        sortd_close(b);
}
END_TEST

/* ---- sorts on the loop thread (loop-sort-keys, 8K by default) ---- */

static sortd_status sort_one(sortd_conn *c, sortd_request *r)
{
        sortd_status s = sortd_submit(c, r);

        return s == SORTD_OK ? sortd_receive(c, r) : s;
}

/* One at a time, with the engine idle: every sort of up to 8K keys is sorted by the loop
   thread, larger ones by the engine, every key type, payload and order right. */
START_TEST(loop_sorts_when_idle)
{
        sortd_conn *c = client_open(&shared_daemon);
        sortd_server_status st0 = status_of(&shared_daemon), st;
        uint64_t here = 0;
        job j;

        for (unsigned i = 0; i < 60; i++) {
                job_make(&j, 9000 + i);
                ck_assert_int_eq(sort_one(c, &j.r), SORTD_OK);
                here += j.r.n <= 8192;
                ck_assert_msg(job_check(&j), "sort %u", i);
        }
        st = status_of(&shared_daemon);
        ck_assert_uint_gt(here, 0);
        ck_assert_uint_lt(here, 60);
        ck_assert_uint_eq(st.loop_sorts - st0.loop_sorts, here);
        ck_assert_uint_eq(st.sorts_ok - st0.sorts_ok, 60);
        sortd_close(c);
}
END_TEST

/* ---- limits ---- */

/* Oversize requests are refused from their header and message alone. */
/* ---- the CPU path ---- */

static daemon_proc path_daemon;

static void path_start(void)
{
        static const char *const extra[] = {"--cpu-path-keys", "4096", NULL};

        daemon_start(&path_daemon, extra);
}

static void path_stop(void)
{
        ck_assert_int_eq(daemon_stop(&path_daemon, SIGTERM), 0);
}

/* Sorts up to 4096 keys take the CPU path, larger ones the engine: all right, each counted,
   and a small sort submitted behind large ones goes to the CPU path, not the engine's queue. */
START_TEST(cpu_path)
{
        enum { BIG = 3, BN = 1u << 20 };
        sortd_conn *a = client_open(&path_daemon), *b = client_open(&path_daemon);
        sortd_server_status st0 = status_of(&path_daemon), st;
        uint64_t *big[BIG];
        sortd_request ra[BIG], rb;
        uint32_t small[4096];
        job jobs[40];

        ck_assert_uint_eq(st0.cpu_path_keys, 4096);
        submit_big(a, big, ra, BIG, BN);
        for (uint32_t i = 0; i < 4096; i++)
                small[i] = 4095u - i;
        rb = (sortd_request){.keys = small, .n = 4096, .key_type = SORTD_KEY_U32};
        ck_assert_int_eq(sortd_submit(b, &rb), SORTD_OK);
        ck_assert_int_eq(sortd_receive(b, &rb), SORTD_OK);
        st = status_of(&path_daemon);
        for (uint32_t i = 0; i < 4096; i++)
                ck_assert_uint_eq(small[i], i);
        /* It ran on the CPU path's own thread, not in the engine's queue behind the large
           ones: when it comes back relative to them is the machine's timing, not asserted. */
        ck_assert_uint_eq(st.cpu_path_sorts - st0.cpu_path_sorts, 1);
        receive_big(a, big, ra, BIG, BN);
        /* Every key type, payload and order on both sides of the threshold (job_make's sizes:
           1 to 30000). */
        for (unsigned i = 0; i < 40; i++) {
                job_make(&jobs[i], 7000 + i);
                ck_assert_int_eq(sortd_submit(b, &jobs[i].r), SORTD_OK);
        }
        uint64_t routed = 1;
        for (unsigned i = 0; i < 40; i++) {
                ck_assert_int_eq(sortd_receive(b, &jobs[i].r), SORTD_OK);
                routed += jobs[i].r.n <= 4096;
                ck_assert_msg(job_check(&jobs[i]), "job %u", i);
        }
        st = status_of(&path_daemon);
        ck_assert_uint_eq(st.cpu_path_sorts - st0.cpu_path_sorts, routed);
        ck_assert_uint_eq(st.sorts_ok - st0.sorts_ok, 1 + BIG + 40);
        sortd_close(a);
        sortd_close(b);
}
END_TEST

/* auto beside the cpu engine: no CPU path (the engine is one). */
START_TEST(no_cpu_path_on_cpu)
{
        ck_assert_uint_eq(status_of(&shared_daemon).cpu_path_keys, 0);
}
END_TEST

START_TEST(oversize_refused_before_payload)
{
        daemon_proc d = {0};
        const char *args[] = {"--max-request-bytes", "1M", "--max-drain-bytes", "4M", NULL};
        Sortd__Wire__Sort s;
        int fd;

        daemon_start(&d, args);
        fd = raw_connect(d.sock);
        /* Above capacity (1M keys): 2M u32 keys, 8 MiB of payload announced, none sent. */
        s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE,
                         2u << 20);
        raw_send_sort(fd, 1, &s, 8u << 20);
        raw_expect_reply(fd, 1, SORTD_E_CAPACITY, "capacity");
        /* 8 MiB is above max-drain-bytes: the daemon closes rather than reading it. */
        ck_assert(raw_wait_eof(fd, 5000));
        close(fd);

        /* Within capacity but above max-request-bytes: refused, then the payload is drained. */
        fd = raw_connect(d.sock);
        s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U64, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE,
                         256u << 10);
        raw_send_sort(fd, 2, &s, 2u << 20);
        raw_expect_reply(fd, 2, SORTD_E_CAPACITY, "max-request-bytes");
        raw_send_zeros(fd, 2u << 20);
        raw_expect_in_sync(fd);
        close(fd);
        {
                sortd_server_status st = status_of(&d);

                ck_assert_uint_eq(st.rejected, 2);
                ck_assert_uint_eq(st.inflight_peak, 0); /* nothing was ever buffered */
        }
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

#define BIG_CLIENTS 12
#define BIG_N (384u << 10) /* u32 keys + u32 values: 3 MiB a request */

static const daemon_proc *big_daemon;

static void *big_client(void *arg)
{
        unsigned t = (unsigned)(uintptr_t)arg;
        uint32_t *k = xmalloc(BIG_N * 4), *v = xmalloc(BIG_N * 4);
        sortd_conn *c = client_open(big_daemon);
        uintptr_t bad = 0;

        for (int round = 0; round < 3; round++) {
                for (uint32_t i = 0; i < BIG_N; i++) {
                        k[i] = (BIG_N - 1 - i) * 2654435761u;
                        v[i] = i ^ t;
                }
                if (sortd_sort_pairs(c, k, v, 4, BIG_N, SORTD_KEY_U32, NULL) != SORTD_OK) {
                        fprintf(stderr, "client %u: %s\n", t, sortd_error_message(c));
                        bad++;
                        continue;
                }
                for (uint32_t i = 1; i < BIG_N; i++)
                        bad += k[i - 1] > k[i];
                for (uint32_t i = 0; i < BIG_N; i++)
                        bad += k[i] != (BIG_N - 1 - (v[i] ^ t)) * 2654435761u;
        }
        sortd_close(c);
        free(k);
        free(v);
        return (void *)bad;
}

/* Many large concurrent requests: the in-flight limit holds and the RSS stays bounded. */
START_TEST(inflight_limit_holds)
{
        const char *args[] = {"--max-request-bytes", "4M", "--max-inflight-bytes", "8M", NULL};
        pthread_t th[BIG_CLIENTS];
        sortd_server_status st;
        daemon_proc d = {0};
        long rss0, rss1;

        daemon_start(&d, args);
        big_daemon = &d;
        /* Warm up: the engine's own buffers are touched by the first sort of this size. */
        ck_assert_int_eq((uintptr_t)big_client((void *)(uintptr_t)99), 0);
        rss0 = daemon_rss_kib(&d);
        for (unsigned t = 0; t < BIG_CLIENTS; t++)
                ck_assert_int_eq(pthread_create(&th[t], NULL, big_client, (void *)(uintptr_t)t), 0);
        for (unsigned t = 0; t < BIG_CLIENTS; t++) {
                void *r;

                pthread_join(th[t], &r);
                ck_assert_msg((uintptr_t)r == 0, "client %u: %lu errors", t,
                              (unsigned long)(uintptr_t)r);
        }
        rss1 = daemon_rss_kib(&d);
        st = status_of(&d);
        printf("inflight limit: %d clients x 3 requests of %u KiB; peak in flight %llu KiB "
               "(limit 8192); daemon RSS %ld -> %ld KiB\n",
               BIG_CLIENTS, BIG_N * 8 / 1024, (unsigned long long)st.inflight_peak / 1024, rss0,
               rss1);
        ck_assert_uint_le(st.inflight_peak, 8u << 20);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        /* 12 requests would be 36 MiB; what is held stays near the 8 MiB limit. (ASan's
           quarantine holds freed memory on purpose: no RSS bound there.) */
#ifndef __SANITIZE_ADDRESS__
        ck_assert_int_lt(rss1 - rss0, 24 * 1024);
#endif
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * A client pipelines large sorts and reads no reply: its replies hold most of the in-flight
 * memory, and its next sort waits in line for more. It holds no one up: another client's small
 * sort, which fits in what is left, is admitted past it and answered at once.
 */
START_TEST(unread_replies_hold_no_line)
{
        /* 4 of A's 14.4 MB sorts fit in 64 MiB, a fifth does not; the write queue never stops
           A's reads, so that fifth is in line for sure. */
        enum { N = 900000, BYTES = N * 16, SORTS = 6, SMALL = 1000 };
        const char *args[] = {"--max-inflight-bytes=64M", "--max-request-bytes=16M",
                              "--max-write-queue=1G", NULL};
        daemon_proc d = {0};
        sortd_server_status st0, st;
        uint32_t keys[SMALL];
        sortd_conn *c;
        pid_t a;
        int status;

        daemon_start(&d, args);
        st0 = status_of(&d);
        a = raw_spawn_unread_sorts(d.sock, SORTD__WIRE__KEY_TYPE__KEY_U64,
                                   SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, N, BYTES, SORTS);
        /* A's four sorts done, their replies unread; its fifth comes right behind them. */
        for (int k = 0; k < 1000; k++) {
                st = status_of(&d);
                if (st.sorts_ok >= st0.sorts_ok + 4)
                        break;
                usleep(10000);
        }
        ck_assert_uint_eq(st.sorts_ok, st0.sorts_ok + 4);
        usleep(100000);
        /* B: its sort takes milliseconds; 2 s is waiting behind A. */
        c = client_open(&d);
        sortd_set_timeout(c, 2000);
        for (uint32_t i = 0; i < SMALL; i++)
                keys[i] = (SMALL - i) * 2654435761u;
        ck_assert_msg(sortd_sort(c, keys, SMALL, SORTD_KEY_U32, NULL) == SORTD_OK, "%s",
                      sortd_error_message(c));
        for (uint32_t i = 1; i < SMALL; i++)
                ck_assert_uint_le(keys[i - 1], keys[i]);
        st = status_of(&d);
        ck_assert_uint_ge(st.inflight_bytes, 4ull * BYTES); /* A's replies still held */
        ck_assert_int_eq(waitpid(a, &status, WNOHANG), 0);
        kill(a, SIGKILL);
        waitpid(a, &status, 0);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("sortd");
        TCase *basic = tcase_create("basic"), *limits = tcase_create("limits");

        tcase_add_unchecked_fixture(basic, shared_start, shared_stop);
        tcase_set_timeout(basic, 60);
        tcase_add_test(basic, hello_ping_status);
        tcase_add_test(basic, transfer_progress);
        tcase_add_loop_test(basic, matrix, 0, MATRIX_RUNS);
        tcase_add_test(basic, concurrent_pipelines);
        tcase_add_test(basic, fair_queue);
        tcase_add_test(basic, loop_sorts_when_idle);
        tcase_add_test(basic, no_cpu_path_on_cpu);
        suite_add_tcase(s, basic);

        TCase *path = tcase_create("cpu_path");
        tcase_add_unchecked_fixture(path, path_start, path_stop);
        tcase_set_timeout(path, 60);
        tcase_add_test(path, cpu_path);
        suite_add_tcase(s, path);

        tcase_set_timeout(limits, 60);
        tcase_add_test(limits, oversize_refused_before_payload);
        tcase_add_test(limits, inflight_limit_holds);
        tcase_add_test(limits, unread_replies_hold_no_line);
        suite_add_tcase(s, limits);

        return run_suite(s);
}
