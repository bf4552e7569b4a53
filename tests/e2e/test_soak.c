/*
 * Soak: 64 client processes against one daemon, each sending a fixed number of sorts of mixed
 * sizes (1 to 2^22 keys), every key type, payload and order, some over a bit range, inline and
 * in shared-memory regions. Every reply is compared bit for bit with the reference sort of the
 * same input (sorted, stable, the same multiset). Meanwhile clients are killed with SIGKILL:
 * some in the middle of sending a request, of its sort and of receiving its reply, others at
 * random points of their run. Halfway, each worker checks from a connection of its own that the
 * region ids the others hold name nothing there. At the end the daemon holds what it held
 * before (RSS, fds, mappings, bytes in flight) and its counters add up.
 *
 * SORTD_SOAK_REQUESTS sets the requests per client (default 8); the figures of the run are
 * printed on one "soak:" line (docs/reliability.md quotes them). SORTD_SOAK_MAX_KEYS sets the
 * largest sort (default 2^22, the daemon's capacity) and SORTD_SOAK_ARGS adds daemon options
 * (blank-separated): the emulated GPUs' soak takes smaller sorts, on three fake devices.
 * Each worker also sends segmented sorts and top-k, unless SORTD_SOAK_SEGMENTS is
 * 0.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "datagen.h"
#include "harness.h"
#include "reference.h"

#define CLIENTS 64
#define VICTIMS 6      /* killed at a chosen point: two each mid-send, mid-sort, mid-receive */
#define RANDOM_KILLS 6 /* workers killed wherever they are once they have done some work */
/* The largest sort, and the daemon's capacity (SORTD_SOAK_MAX_KEYS). */
static uint64_t max_n = 1u << 22;

#define RSS_MARGIN_KIB (48 * 1024 * SANITIZER_RSS_FACTOR)

/* What a worker tells the parent, in shared memory. */
typedef struct report {
        unsigned inline_ok, region_ok; /* replies verified */
        unsigned segments_ok;          /* segmented sorts and top-k verified */
        unsigned failed;               /* anything else: the test fails */
        unsigned probes;               /* probe_foreign_regions done: 3 refused sorts each */
        char first_error[320];
} report;

typedef struct rng {
        uint64_t s;
} rng;

static uint64_t next(rng *r)
{
        uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

/* Mostly small, as a shared sorter sees them, with a large one now and then. */
static size_t pick_n(rng *r)
{
        uint64_t c = next(r) % 20;
        uint64_t small = max_n < 4096 ? max_n : 4096, mid = max_n < 65536 ? max_n : 65536;

        if (c < 13)
                return 1 + next(r) % small;
        if (c < 19)
                return 1 + next(r) % mid;
        return 1 + next(r) % max_n;
}

static sortd_sort_desc pick_desc(rng *r)
{
        sortd_sort_desc d = {
                .key_type = (sortd_key_type)(next(r) % SORTD_KEY_TYPE_COUNT),
                .payload = (sortd_payload)(next(r) % SORTD_PAYLOAD_COUNT),
                .order = (sortd_order)(next(r) % 2),
        };
        unsigned width = (unsigned)sortd_key_size(d.key_type) * 8;

        if (next(r) % 4 == 0) { /* a bit range inside the key */
                d.begin_bit = (unsigned)(next(r) % width);
                d.end_bit = d.begin_bit + 1 + (unsigned)(next(r) % (width - d.begin_bit));
        }
        return d;
}

static void note_failure(report *rp, const char *fmt, const char *what)
{
        if (!rp->failed++)
                snprintf(rp->first_error, sizeof(rp->first_error), fmt, what);
}

/* One request: the input, the reference's answer, and the daemon's, compared. */
static void one_request(sortd_conn *c, rng *r, report *rp)
{
        sortd_sort_desc d = pick_desc(r);
        size_t n = pick_n(r), kb = n * sortd_key_size(d.key_type);
        size_t vb = n * sortd_payload_size(d.payload);
        size_t voff = (kb + 7) / 8 * 8;
        unsigned char *want = malloc(voff + vb + 1), *buf;
        sortd_region *rg = NULL;
        sortd_status s;
        bool in_region = next(r) % 3 == 0;

        if (!want) {
                note_failure(rp, "%s", "out of memory");
                return;
        }
        datagen_fill(want, n, d.key_type, (datagen_dist)(next(r) % DATAGEN_DIST_COUNT), 0, next(r));
        if (vb && !sortd_payload_is_argsort(d.payload))
                datagen_fill_values(want + voff, n, (unsigned)sortd_payload_size(d.payload),
                                    next(r));
        if (in_region) {
                s = sortd_region_create(c, voff + vb, &rg);
                buf = s == SORTD_OK ? sortd_region_data(rg) : NULL;
        } else {
                buf = malloc(voff + vb + 1);
                s = buf ? SORTD_OK : SORTD_E_NOMEM;
        }
        if (s != SORTD_OK) {
                note_failure(rp, "buffer: %s", sortd_strerror(s));
                free(want);
                return;
        }
        memcpy(buf, want, voff + vb);
        if (ref_sort(&d, want, vb ? want + voff : NULL, n) != 0)
                note_failure(rp, "%s", "the reference refused a valid request");
        if (in_region) {
                sortd_region_sort rs = {
                        .keys = rg,
                        .vals = vb ? rg : NULL,
                        .vals_offset = voff,
                        .n = n,
                        .key_type = d.key_type,
                        .payload = d.payload,
                        .opts = {d.order, d.begin_bit, d.end_bit},
                };
                s = sortd_sort_in_region(c, &rs);
        } else {
                sortd_request rq = {
                        .keys = buf,
                        .vals = vb ? buf + voff : NULL,
                        .n = n,
                        .key_type = d.key_type,
                        .payload = d.payload,
                        .opts = {d.order, d.begin_bit, d.end_bit},
                };
                s = sortd_submit(c, &rq);
                if (s == SORTD_OK)
                        s = sortd_receive(c, &rq);
        }
        if (s != SORTD_OK)
                note_failure(rp, "sort: %s", sortd_error_message(c));
        else if (memcmp(buf, want, kb) != 0 || (vb && memcmp(buf + voff, want + voff, vb) != 0))
                note_failure(rp, "%s", "a reply differs from the reference");
        else if (in_region)
                rp->region_ok++;
        else
                rp->inline_ok++;
        if (in_region)
                sortd_region_destroy(c, rg);
        else
                free(buf);
        free(want);
}

static bool with_segments = true;

/* Cuts n keys into uneven segments, some empty: count + 1 u64 offsets; the count. */
static uint64_t cut(rng *r, uint64_t n, uint64_t *off, uint64_t max_count)
{
        uint64_t count = 1 + next(r) % max_count;

        off[0] = 0;
        for (uint64_t i = 1; i < count; i++)
                off[i] = next(r) % (n + 1);
        off[count] = n;
        for (uint64_t i = 1; i < count; i++) /* sorted: offsets never go down */
                for (uint64_t j = i; j > 1 && off[j - 1] > off[j]; j--) {
                        uint64_t t = off[j];

                        off[j] = off[j - 1];
                        off[j - 1] = t;
                }
        return count;
}

/* The reference's answer of a segmented sort or top-k: each segment sorted alone (an argsort's
   indices within it), then (k) its first k kept, packed; the results' count. */
static uint64_t segments_want(const sortd_sort_desc *d, const uint64_t *off, uint64_t count,
                              uint64_t k, uint8_t *keys, uint8_t *vals, uint8_t *out_k,
                              uint8_t *out_v)
{
        size_t ks = sortd_key_size(d->key_type), vs = sortd_payload_size(d->payload);
        uint64_t m = 0;

        for (uint64_t i = 0; i < count; i++) {
                uint64_t b = off[i], len = off[i + 1] - b, take = k && k < len ? k : len;

                if (len && ref_sort(d, keys + b * ks, vs ? vals + b * vs : NULL, len) != 0)
                        return UINT64_MAX;
                memmove(out_k + m * ks, keys + b * ks, take * ks);
                memmove(out_v + m * vs, vals + b * vs, take * vs);
                m += take;
        }
        return m;
}

/* One segmented sort or top-k (k > 0) of up to 4096 keys through libsortd, checked. */
static void segmented_request(sortd_conn *c, rng *r, report *rp)
{
        sortd_sort_desc d = pick_desc(r);
        uint64_t n = 1 + next(r) % 4096, off[65], k = next(r) % 2 ? 1 + next(r) % 8 : 0, m;
        sortd_segments seg = {.count = cut(r, n, off, 64), .offsets = off, .offset_bytes = 8};
        size_t ks = sortd_key_size(d.key_type), vs = sortd_payload_size(d.payload);
        size_t voff = (n * ks + 7) / 8 * 8; /* values aligned, after the keys */
        uint8_t *keys = malloc(n * ks), *vals = calloc(n, vs + 1), *want = malloc(voff + n * vs);
        uint8_t *got = malloc(voff + n * vs + 1);
        sortd_sort_options o = {d.order, d.begin_bit, d.end_bit};
        sortd_status s;

        if (!keys || !vals || !want || !got) {
                note_failure(rp, "%s", "out of memory");
                goto out;
        }
        datagen_fill(keys, n, d.key_type, (datagen_dist)(next(r) % DATAGEN_DIST_COUNT), 0, next(r));
        if (vs && !sortd_payload_is_argsort(d.payload))
                datagen_fill_values(vals, n, (unsigned)vs, next(r));
        memcpy(got, keys, n * ks);
        memcpy(got + voff, vals, n * vs);
        if (k)
                s = sortd_topk(c, got, got + voff, n, d.key_type, d.payload, &seg, k, want,
                               vs ? want + voff : NULL, &o);
        else
                s = sortd_sort_segments(c, got, vs ? got + voff : NULL, n, d.key_type, d.payload,
                                        &seg, &o);
        /* the answer is in want (top-k) or got (sorted in place); the reference's in keys */
        m = segments_want(&d, off, seg.count, k, keys, vals, keys, vals);
        if (s != SORTD_OK || m == UINT64_MAX) {
                note_failure(rp, "segments: %s", sortd_error_message(c));
        } else {
                const uint8_t *ak = k ? want : got, *av = k ? want + voff : got + voff;

                if (memcmp(ak, keys, m * ks) != 0 || memcmp(av, vals, m * vs) != 0)
                        note_failure(rp, "%s", "a segmented reply differs from the reference");
                else
                        rp->segments_ok++;
        }
out:
        free(keys);
        free(vals);
        free(want);
        free(got);
}

/* Two of them, a sort and a top-k most often. */
static void segmented_requests(sortd_conn *c, rng *r, report *rp)
{
        segmented_request(c, r, rp);
        segmented_request(c, r, rp);
}

/*
 * Regions are named per connection: on a fresh connection, the ids every other worker holds
 * now (1, 2, 3...) name nothing, and a sort in them is refused, under load as when idle.
 */
static void probe_foreign_regions(const char *sock)
{
        int fd = raw_connect(sock);

        for (uint64_t id = 1; id <= 3; id++) {
                Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                                   SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 8);
                Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
                char want[64];

                rd.region_id = id;
                s.data_case = SORTD__WIRE__SORT__DATA_REGION;
                s.region = &rd;
                raw_send_sort(fd, id, &s, 0);
                snprintf(want, sizeof(want), "no region %llu on this connection",
                         (unsigned long long)id);
                raw_expect_reply(fd, id, SORTD_E_INVAL, want);
        }
        close(fd);
}

static void worker(const char *sock, unsigned idx, unsigned requests, report *rp)
{
        rng r = {0x5eed0000u + idx};
        sortd_conn *c = NULL;
        char err[256];

        if (sortd_connect(sock, NULL, &c, err, sizeof(err)) != SORTD_OK) {
                note_failure(rp, "connect: %s", err);
                _exit(1);
        }
        /* Under ThreadSanitizer or valgrind a 2^22-key sort behind 63 clients' can take
           minutes on two cores: the test's own timeout catches a hang. */
        sortd_set_timeout(c, 600000);
        for (unsigned i = 0; i < requests; i++) {
                one_request(c, &r, rp);
                if (i == requests / 2) {
                        probe_foreign_regions(sock);
                        rp->probes++;
                        if (with_segments)
                                segmented_requests(c, &r, rp);
                }
        }
        sortd_close(c);
        _exit(rp->failed ? 1 : 0);
}

/* How a victim dies: its request is whole or cut short, and it may read part of the reply. */
enum victim_kind { MID_SEND, MID_SORT, MID_RECEIVE };

static void victim(const char *sock, enum victim_kind kind, int ready)
{
        int fd = raw_connect(sock);
        uint64_t n = kind == MID_RECEIVE && max_n > 1u << 20 ? 1u << 20 : max_n, bytes = n * 16;
        Sortd__Wire__Sort s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U64,
                                           SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES64, n);
        char buf[65536];

        raw_send_sort(fd, 1, &s, bytes);
        raw_send_zeros(fd, kind == MID_SEND ? bytes / 2 : bytes);
        if (kind == MID_RECEIVE && read(fd, buf, sizeof(buf)) <= 0)
                _exit(3); /* the reply had begun: the kill comes mid-receive */
        if (write(ready, "x", 1) != 1)
                _exit(2);
        pause();
        _exit(0);
}

static pid_t spawn(void (*body)(void *), void *arg)
{
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                body(arg);
        return pid;
}

typedef struct worker_arg {
        const char *sock;
        unsigned idx, requests;
        report *rp;
} worker_arg;

static void worker_body(void *p)
{
        worker_arg *a = p;

        worker(a->sock, a->idx, a->requests, a->rp);
}

typedef struct victim_arg {
        const char *sock;
        enum victim_kind kind;
        int ready;
} victim_arg;

static void victim_body(void *p)
{
        victim_arg *a = p;

        victim(a->sock, a->kind, a->ready);
}

static sortd_server_status settle(const daemon_proc *d)
{
        sortd_server_status st = status_of(d);

        for (int k = 0;
             k < 1000 && (st.connections != 1 || st.inflight_bytes || st.queued || st.regions);
             k++) {
                usleep(10000);
                st = status_of(d);
        }
        return st;
}

/* The daemon's fds, once it has closed every connection (status_of's own included): want,
   or the count once it holds still. */
static int settled_fds(const daemon_proc *d, int want)
{
        int n = daemon_fd_count(d), last = -1;

        for (int k = 0; k < 200 && n != want && n != last; k++) {
                usleep(20000);
                last = n;
                n = daemon_fd_count(d);
        }
        return n;
}

/* Touches the engine's buffers at full size, so the baseline RSS has them. */
static void warm_up(const daemon_proc *d)
{
        sortd_conn *c = client_open(d);
        uint64_t *k = xmalloc((size_t)max_n * 8), *v = xmalloc((size_t)max_n * 8);
        sortd_request rq = {.keys = k,
                            .vals = v,
                            .n = max_n,
                            .key_type = SORTD_KEY_U64,
                            .payload = SORTD_PAYLOAD_VALUES64};

        datagen_fill(k, max_n, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 1);
        datagen_fill_values(v, max_n, 8, 2);
        ck_assert_int_eq(sortd_submit(c, &rq), SORTD_OK);
        ck_assert_int_eq(sortd_receive(c, &rq), SORTD_OK);
        check_sorted_u64(k, max_n);
        free(k);
        free(v);
        sortd_close(c);
}

/* The daemon's options: capacity max_n, room for every client, and SORTD_SOAK_ARGS. */
static void daemon_args(const char **extra, size_t room, char *capacity, char *args)
{
        const char *more = getenv("SORTD_SOAK_ARGS");
        size_t n = 0;

        snprintf(capacity, 24, "%llu", (unsigned long long)max_n);
        extra[n++] = "--capacity";
        extra[n++] = capacity;
        extra[n++] = "--max-connections";
        extra[n++] = "128";
        snprintf(args, 512, "%s", more ? more : "");
        for (char *save = NULL, *w = strtok_r(args, " ", &save); w && n + 1 < room;
             w = strtok_r(NULL, " ", &save))
                extra[n++] = w;
        extra[n] = NULL;
}

START_TEST(soak)
{
        const char *extra[32];
        char capacity[24], args[512];
        const char *env = getenv("SORTD_SOAK_REQUESTS");
        unsigned requests = env ? (unsigned)atoi(env) : 8;
        report *reports = mmap(NULL, sizeof(report) * CLIENTS, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        pid_t pids[CLIENTS];
        bool killed[CLIENTS] = {false}, reaped[CLIENTS] = {false};
        int statuses[CLIENTS] = {0};
        unsigned victims_by_kind[3] = {0}, random_killed = 0, verified = 0, in_region = 0;
        unsigned segments_ok = 0;
        unsigned probes = 0;
        worker_arg wa[CLIENTS];
        victim_arg va[VICTIMS];
        daemon_proc d = {0};
        sortd_server_status st0, st;
        struct timespec t0, t1;
        long rss0, rss1;
        int fds0, fds1, ready[2];
        char go;

        ck_assert_ptr_ne(reports, MAP_FAILED);
        memset(reports, 0, sizeof(report) * CLIENTS);
        ck_assert_int_eq(pipe(ready), 0);
        if (getenv("SORTD_SOAK_MAX_KEYS"))
                max_n = strtoull(getenv("SORTD_SOAK_MAX_KEYS"), NULL, 10);
        ck_assert_uint_ge(max_n, 1);
        if (getenv("SORTD_SOAK_SEGMENTS"))
                with_segments = strcmp(getenv("SORTD_SOAK_SEGMENTS"), "0") != 0;
        daemon_args(extra, sizeof(extra) / sizeof(extra[0]), capacity, args);
        daemon_start(&d, extra);
        warm_up(&d);
        st0 = settle(&d);
        rss0 = daemon_rss_kib(&d);
        fds0 = settled_fds(&d, -1);
        clock_gettime(CLOCK_MONOTONIC, &t0);

        for (unsigned i = 0; i < CLIENTS - VICTIMS; i++) {
                wa[i] = (worker_arg){d.sock, i, requests, &reports[i]};
                pids[i] = spawn(worker_body, &wa[i]);
        }
        /* The victims, one at a time: each is killed once it is where its kind says. */
        for (unsigned v = 0; v < VICTIMS; v++) {
                unsigned i = CLIENTS - VICTIMS + v;

                va[v] = (victim_arg){d.sock, (enum victim_kind)(v % 3), ready[1]};
                pids[i] = spawn(victim_body, &va[v]);
                ck_assert_int_eq(read(ready[0], &go, 1), 1);
                if (va[v].kind == MID_SORT)
                        usleep(2000); /* the payload is in the daemon's socket: let it be read */
                kill(pids[i], SIGKILL);
                killed[i] = true;
                victims_by_kind[va[v].kind]++;
        }
        /* Workers killed wherever they are, once they have done some requests. */
        for (unsigned k = 0; k < RANDOM_KILLS; k++) {
                unsigned i = k * 7 + 3;

                for (int w = 0; w < 20000; w++) {
                        if (reports[i].inline_ok + reports[i].region_ok >= 1 + k % 3)
                                break;
                        if (waitpid(pids[i], &statuses[i], WNOHANG) == pids[i]) {
                                reaped[i] = true; /* done before its kill came */
                                break;
                        }
                        usleep(1000);
                }
                if (reaped[i])
                        continue;
                usleep((useconds_t)(k * 1500));
                if (kill(pids[i], SIGKILL) == 0) {
                        killed[i] = true;
                        random_killed++;
                }
        }
        for (unsigned i = 0; i < CLIENTS; i++) {
                int status = statuses[i];

                if (!reaped[i])
                        ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
                verified += reports[i].inline_ok + reports[i].region_ok;
                in_region += reports[i].region_ok;
                segments_ok += reports[i].segments_ok;
                probes += reports[i].probes;
                ck_assert_msg(reports[i].failed == 0, "client %u: %u failed, first: %s", i,
                              reports[i].failed, reports[i].first_error);
                if (killed[i] && WIFSIGNALED(status))
                        continue;
                killed[i] = false; /* a random kill that came after it had finished */
                ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                              "client %u ended with status %d", i, status);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);

        st = settle(&d);
        rss1 = daemon_rss_kib(&d);
        fds1 = settled_fds(&d, fds0);
        printf("soak: %u clients x %u requests in %.1f s: %u replies verified (%u inline, %u in "
               "regions); %u clients killed (%u mid-send, %u mid-sort, %u mid-receive, %u at "
               "random); daemon RSS %ld -> %ld MiB, fds %d -> %d, memfd mappings %d; sort "
               "requests %llu = ok %llu + failed %llu (foreign region ids, %u probes) + rejected "
               "%llu + "
               "cancelled %llu\n",
               CLIENTS - VICTIMS, requests,
               (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, verified,
               verified - in_region, in_region, VICTIMS + random_killed, victims_by_kind[0],
               victims_by_kind[1], victims_by_kind[2], random_killed, rss0 / 1024, rss1 / 1024,
               fds0, fds1, daemon_maps_matching(&d, "memfd:sortd-region"),
               (unsigned long long)(st.sort_requests - st0.sort_requests),
               (unsigned long long)(st.sorts_ok - st0.sorts_ok),
               (unsigned long long)(st.sorts_failed - st0.sorts_failed), probes,
               (unsigned long long)(st.rejected - st0.rejected),
               (unsigned long long)(st.cancelled - st0.cancelled));

        printf("soak: %u segmented sorts and top-k verified\n", segments_ok);

        /* Nothing held, nothing lost. */
        ck_assert_uint_eq(st.connections, 1);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.queued, 0);
        ck_assert_uint_eq(st.regions, 0);
        ck_assert_uint_eq(st.region_bytes, 0);
        ck_assert_int_eq(daemon_maps_matching(&d, "memfd:sortd-region"), 0);
        /* On several devices, each took its share, and none was lost. */
        for (unsigned i = 0; i < st.device_count && i < SORTD_MAX_DEVICES; i++) {
                ck_assert_int_eq(st.devices[i].state, SORTD_DEVICE_SERVING);
                ck_assert_uint_gt(st.devices[i].sorts, 0);
                ck_assert_uint_eq(st.devices[i].queued, 0);
        }
        ck_assert_int_eq(fds1, fds0);
        /* (ASan's quarantine keeps freed memory on purpose: no RSS bound there.) */
#ifndef __SANITIZE_ADDRESS__
        ck_assert_msg(rss1 <= rss0 + RSS_MARGIN_KIB, "RSS grew from %ld to %ld KiB", rss0, rss1);
#endif
        /* Each sort asked for ended once; the only failures are the probes' refusals (a worker
           killed in the middle of its probe may have had some), and no limit was hit. */
        ck_assert_uint_eq(st.sort_requests,
                          st.sorts_ok + st.sorts_failed + st.rejected + st.cancelled);
        ck_assert_uint_ge(st.sorts_failed - st0.sorts_failed, 3 * probes);
        ck_assert_uint_le(st.sorts_failed - st0.sorts_failed, 3 * (probes + random_killed));
        ck_assert_uint_eq(st.rejected, st0.rejected);
        ck_assert_uint_ge(st.sorts_ok - st0.sorts_ok, verified + segments_ok);
        if (with_segments)
                ck_assert_uint_ge(segments_ok, 2 * (CLIENTS - VICTIMS - RANDOM_KILLS));
        ck_assert_uint_ge(st.cancelled - st0.cancelled, victims_by_kind[MID_SEND]);
        ck_assert_uint_ge(verified, (CLIENTS - VICTIMS - RANDOM_KILLS) * requests);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
        close(ready[0]);
        close(ready[1]);
        munmap(reports, sizeof(report) * CLIENTS);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("soak");
        TCase *tc = tcase_create("soak");

        tcase_set_timeout(tc, 900);
        tcase_add_test(tc, soak);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
