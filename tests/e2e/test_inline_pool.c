/*
 * The host pool end to end, on the CPU engine, whose host memory is real (mapped and faulted in
 * at start-up): with --host-pool 64M, concurrent inline sorts of mixed sizes are received into
 * the pool and come back right, rounds that fit in it miss nothing, their buffers come back and
 * coalesce (a request of nearly the whole pool fits after them), each request larger than the
 * pool is exactly one miss and is served from the heap, and the bytes in flight and the
 * RSS come back to where they were. By default, with 0 and with auto the CPU engine has no
 * pool; one that cannot be had is a warning, not a failure.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "harness.h"

#define POOL (64u << 20)

/* A prime: k[i] = i * MULT mod n is a permutation of [0, n) for every n below it, so a right
   result is k[j] == j, and each value or index says which key it belongs to. */
#define MULT 2654435761ull
#define SALT 0x5a5a5a5au

typedef struct req {
        sortd_request r;
        void *keys, *vals;
} req;

static uint64_t key_at(size_t i, size_t n)
{
        return (uint64_t)i * MULT % n;
}

static void req_make(req *q, size_t n, sortd_key_type kt, sortd_payload pl)
{
        bool wide = kt == SORTD_KEY_U64;

        q->keys = xmalloc(n * (wide ? 8 : 4));
        q->vals = pl == SORTD_PAYLOAD_NONE ? NULL : xmalloc(n * 4);
        for (size_t i = 0; i < n; i++) {
                if (wide)
                        ((uint64_t *)q->keys)[i] = key_at(i, n);
                else
                        ((uint32_t *)q->keys)[i] = (uint32_t)key_at(i, n);
                if (pl == SORTD_PAYLOAD_VALUES32)
                        ((uint32_t *)q->vals)[i] = (uint32_t)key_at(i, n) ^ SALT;
        }
        q->r = (sortd_request){
                .keys = q->keys, .vals = q->vals, .n = n, .key_type = kt, .payload = pl};
}

/* Bytes of the daemon's buffer for q, and more: its alignment adds less than 128. */
static size_t req_bytes(const req *q)
{
        return q->r.n * (sortd_key_size(q->r.key_type) + sortd_payload_size(q->r.payload)) + 128;
}

/* Keys 0..n-1 in order, each value its key's, each index its key's place in the input. */
static bool req_check_free(req *q)
{
        size_t n = q->r.n, j = 0;
        const uint32_t *v = q->vals;
        bool wide = q->r.key_type == SORTD_KEY_U64;

        for (; j < n; j++) {
                uint64_t k = wide ? ((uint64_t *)q->keys)[j] : ((uint32_t *)q->keys)[j];

                if (k != j)
                        break;
                if (q->r.payload == SORTD_PAYLOAD_VALUES32 && v[j] != ((uint32_t)j ^ SALT))
                        break;
                if (q->r.payload == SORTD_PAYLOAD_ARGSORT32 && key_at(v[j], n) != j)
                        break;
        }
        free(q->keys);
        free(q->vals);
        return j == n;
}

/* ---- clients ---- */

#define THREADS 8
#define PER_THREAD 6
#define DEPTH 3
#define BIG_N (9u << 20)             /* u64 keys: 72 MiB, more than the pool */
#define WHOLE_N (POOL / 8 / 16 * 15) /* u64 keys: 60 MiB, all but one sixteenth of it */

static const daemon_proc *the_daemon;

typedef struct client {
        pthread_t th;
        req q[PER_THREAD];
        int count;
} client;

/* Thread t's requests: every size, key type and payload among the threads. */
static void plan_small(client *c, unsigned t)
{
        static const size_t sizes[] = {1, 100, 4096, 50000, 150000, 300000};
        static const sortd_payload payloads[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                                 SORTD_PAYLOAD_ARGSORT32};

        c->count = PER_THREAD;
        for (unsigned i = 0; i < PER_THREAD; i++)
                req_make(&c->q[i], sizes[(t + i) % 6], (t + i) % 2 ? SORTD_KEY_U64 : SORTD_KEY_U32,
                         payloads[(t * 7 + i) % 3]);
}

/* One request of n u64 keys. */
static void plan_one(client *c, size_t n)
{
        c->count = 1;
        req_make(&c->q[0], n, SORTD_KEY_U64, SORTD_PAYLOAD_NONE);
}

/* A call that failed: its message on stderr (the check names only the code). */
static void *failed(sortd_conn *conn, const char *call, uintptr_t code)
{
        fprintf(stderr, "%s failed: %s\n", call, sortd_error_message(conn));
        return (void *)code;
}

/* Pipelines the client's requests DEPTH deep on one connection; returns the wrong results. */
static void *client_run(void *arg)
{
        client *c = arg;
        sortd_conn *conn = client_open(the_daemon);
        int sent = 0, got = 0;
        uintptr_t bad = 0;

        while (got < c->count) {
                while (sent < c->count && sent - got < DEPTH)
                        if (sortd_submit(conn, &c->q[sent++].r) != SORTD_OK)
                                return failed(conn, "submit", 1000);
                if (sortd_receive(conn, &c->q[got++].r) != SORTD_OK)
                        return failed(conn, "receive", 2000);
        }
        for (int i = 0; i < c->count; i++)
                bad += !req_check_free(&c->q[i]);
        sortd_close(conn);
        return (void *)bad;
}

/* Runs every client at once and waits for them all. */
static void run_clients(client *cs, int n)
{
        for (int i = 0; i < n; i++)
                ck_assert_int_eq(pthread_create(&cs[i].th, NULL, client_run, &cs[i]), 0);
        for (int i = 0; i < n; i++) {
                void *r;

                pthread_join(cs[i].th, &r);
                ck_assert_msg((uintptr_t)r == 0,
                              "client %d: %lu wrong (1000: submit failed, "
                              "2000: receive failed)",
                              i, (unsigned long)(uintptr_t)r);
        }
}

/*
 * THREADS small clients, and `bigs` clients with one request larger than the pool, all at
 * once. First fit keeps every byte above the highest it has handed out free, so requests that
 * add up to no more than the pool all fit whatever their order: the small ones never miss.
 */
static void round_of(int bigs)
{
        client cs[THREADS + 2];
        size_t total = 0;

        ck_assert_int_le(bigs, 2);
        for (unsigned t = 0; t < THREADS; t++) {
                plan_small(&cs[t], t);
                for (int i = 0; i < PER_THREAD; i++)
                        total += req_bytes(&cs[t].q[i]);
        }
        ck_assert_uint_le(total, POOL);
        for (int b = 0; b < bigs; b++)
                plan_one(&cs[THREADS + b], BIG_N);
        run_clients(cs, THREADS + bigs);
}

/* Between rounds: the pool's size and misses, nothing held, and its peak at least
   peak_at_least (and within the pool). */
static void expect_pool(const daemon_proc *d, uint64_t bytes, uint64_t misses,
                        uint64_t peak_at_least)
{
        sortd_server_status st = status_of(d);

        ck_assert_uint_eq(st.host_pool_bytes, bytes);
        ck_assert_uint_eq(st.host_pool_misses, misses);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.host_pool_used, 0);
        ck_assert_uint_ge(st.host_pool_peak, peak_at_least);
        ck_assert_uint_le(st.host_pool_peak, bytes);
}

START_TEST(pool_serves_and_falls_back)
{
        const char *args[] = {"--host-pool", "64M", "--capacity", "12M", NULL};
        daemon_proc d = {0};
        client one;
        long rss0, rss1;

        daemon_start(&d, args);
        the_daemon = &d;
        expect_pool(&d, POOL, 0, 0);
        ck_assert_uint_eq(status_of(&d).host_pool_peak, 0);
        for (int round = 0; round < 3; round++) {
                round_of(0);
                /* at least its largest requests, 300000 u64 keys, were held */
                expect_pool(&d, POOL, 0, 300000 * 8);
        }
        /* Every buffer of those rounds came back and coalesced, or this would not fit. */
        plan_one(&one, WHOLE_N);
        run_clients(&one, 1);
        expect_pool(&d, POOL, 0, WHOLE_N * 8);
        /* One request larger than the pool, alone: one miss, served from the heap. It also
           touches the engine's buffers for this size before the RSS is taken. */
        plan_one(&one, BIG_N);
        run_clients(&one, 1);
        expect_pool(&d, POOL, 1, WHOLE_N * 8);
        rss0 = daemon_rss_kib(&d);
        round_of(2);
        expect_pool(&d, POOL, 3, WHOLE_N * 8);
        rss1 = daemon_rss_kib(&d);
        printf("host pool: RSS %ld KiB after the first large request, %ld after two more with "
               "%d clients\n",
               rss0, rss1, THREADS);
        /* The arena was faulted in at start-up and the heap's large buffers are unmapped when
           freed: nothing is left over. (ASan's quarantine holds freed memory on purpose.) */
#ifndef __SANITIZE_ADDRESS__
        ck_assert_int_lt(rss1 - rss0, 24 * 1024);
#endif
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* _i: the default, 0, auto. The CPU engine sorts pageable memory as fast: no pool, no miss. */
START_TEST(no_pool_on_cpu)
{
        static const char *const settings[] = {NULL, "0", "auto"};
        const char *args[] = {"--host-pool", settings[_i], NULL};
        daemon_proc d = {0};
        client c;

        daemon_start(&d, settings[_i] ? args : NULL);
        the_daemon = &d;
        plan_small(&c, 0);
        run_clients(&c, 1);
        expect_pool(&d, 0, 0, 0);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* A pool larger than max-inflight-bytes could never be used in full: it is cut to that, with a
   warning. */
START_TEST(pool_capped_by_inflight)
{
        const char *args[] = {
                "--host-pool", "64M", "--max-inflight-bytes", "16M", "--max-request-bytes",
                "8M",          NULL};
        daemon_proc d = {0};
        char log[4096];
        client c;

        daemon_start(&d, args);
        the_daemon = &d;
        plan_small(&c, 2);
        run_clients(&c, 1);
        ck_assert_uint_eq(status_of(&d).host_pool_bytes, 16u << 20);
        daemon_log(&d, log, sizeof(log));
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        ck_assert_msg(strstr(log, "host-pool 67108864 is more than max-inflight-bytes 16777216 "
                                  "lets requests use: taking 16777216"),
                      "%s", log);
}
END_TEST

/*
 * An address-space limit the arena cannot fit under: the daemon says so, and serves without
 * it. (ASan reserves terabytes of address space for its shadow: no such limit there.)
 */
START_TEST(pool_refused_is_a_warning)
{
/* Sanitizers map far more than 1 GiB of address space up front, and so does valgrind: none of
   them can run under this limit. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        const char *args[] = {"--host-pool", "2G", "--max-inflight-bytes", "2G", NULL};
        struct rlimit lim = {.rlim_cur = 1ull << 30, .rlim_max = 1ull << 30};
        daemon_proc d = {0};
        char log[4096];
        client c;

        if (getenv("SORTD_TEST_WRAPPER")) {
                printf("pool_refused_is_a_warning: not under SORTD_TEST_WRAPPER\n");
                return;
        }
        /* This test's own process, which Check forked, passes it on to the daemon. */
        ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
        daemon_start(&d, args);
        the_daemon = &d;
        plan_small(&c, 1);
        run_clients(&c, 1);
        expect_pool(&d, 0, 0, 0);
        daemon_log(&d, log, sizeof(log));
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        ck_assert_msg(strstr(log, "no host pool: cannot take 2147483648 bytes of cpu host memory"),
                      "%s", log);
#endif
}
END_TEST

int main(void)
{
        Suite *s = suite_create("inline-pool");
        TCase *tc = tcase_create("inline-pool");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, pool_serves_and_falls_back);
        tcase_add_loop_test(tc, no_pool_on_cpu, 0, 3);
        tcase_add_test(tc, pool_capped_by_inflight);
        tcase_add_test(tc, pool_refused_is_a_warning);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
