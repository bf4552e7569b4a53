/*
 * Segmented and top-k sorts through a real sortd, on raw frames: inline sorts of
 * uniform rows and of u32 and u64 offsets, each payload and order, sorted and top-k, checked
 * against a stable sort of each segment here; memfd regions sorted in place with their offsets
 * in the payload or in a region, and top-k into topk_out; and the refusals, which leave the
 * client's memory as it was and the stream in sync.
 *
 * SORTD_SEG_ARGS (space-separated) start the daemon otherwise: the emulated GPU daemon runs
 * the same test, each sort naming its device, so that it runs on the GPU engine's lane, with
 * its segmented kernels (the CPU path for an engine without them: tests/daemon/test_engines).
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define N 1000

static daemon_proc g_daemon;
static uint8_t g_uuid[SORTD_DEVICE_UUID_BYTES];
static bool g_on_device; /* every sort names the daemon's first device */

/* The daemon's first device, from its Hello: sorts that name it run on its lanes. */
static void learn_device(void)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__Hello h = SORTD__WIRE__HELLO__INIT;
        int fd = raw_connect(g_daemon.sock);
        Sortd__Wire__Reply *r;

        h.protocol_version = SORTD__WIRE_VERSION;
        req.id = 1;
        req.body_case = SORTD__WIRE__REQUEST__BODY_HELLO;
        req.hello = &h;
        raw_send_request(fd, &req, 0);
        r = raw_recv_reply(fd, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->body_case, SORTD__WIRE__REPLY__BODY_HELLO);
        g_on_device = r->hello->n_devices > 0;
        if (g_on_device) {
                ck_assert_uint_eq(r->hello->devices[0]->uuid.len, SORTD_DEVICE_UUID_BYTES);
                memcpy(g_uuid, r->hello->devices[0]->uuid.data, SORTD_DEVICE_UUID_BYTES);
        }
        sortd__wire__reply__free_unpacked(r, NULL);
        close(fd);
}

static void setup(void)
{
        static char args[512];
        const char *extra[32] = {NULL};
        const char *env = getenv("SORTD_SEG_ARGS");
        int n = 0;

        if (env) {
                snprintf(args, sizeof(args), "%s", env);
                for (char *save, *t = strtok_r(args, " ", &save); t && n < 31;
                     t = strtok_r(NULL, " ", &save))
                        extra[n++] = t;
        }
        daemon_start(&g_daemon, extra);
        learn_device();
}

static void teardown(void)
{
        ck_assert_int_eq(daemon_stop(&g_daemon, SIGTERM), 0);
}

/* ---- the reference: each segment sorted on its own, stably ---- */

typedef struct seg_form {
        int type;       /* 0 rows, 1 u32 offsets, 2 u64 offsets */
        uint64_t count; /* segments */
        uint64_t off[N + 1];
} seg_form;

static uint64_t seg_begin(const seg_form *f, uint64_t i)
{
        return f->off[i];
}

/* Rows of 100, or uneven segments with empty ones among them. */
static void form_make(seg_form *f, int type)
{
        static const uint64_t cuts[] = {0, 0, 7, 7, 300, 301, 650, 999, N};

        f->type = type;
        if (type == 0) {
                f->count = 10;
                for (uint64_t i = 0; i <= f->count; i++)
                        f->off[i] = i * (N / 10);
                return;
        }
        f->count = sizeof(cuts) / sizeof(cuts[0]) - 1;
        memcpy(f->off, cuts, sizeof(cuts));
}

typedef struct pair {
        uint32_t key;
        uint32_t at; /* within the segment */
} pair;

static bool g_desc;

static int cmp_pair(const void *a, const void *b)
{
        const pair *x = a, *y = b;

        if (x->key != y->key)
                return (x->key < y->key) == !g_desc ? -1 : 1;
        return x->at < y->at ? -1 : 1; /* stable */
}

/*
 * keys (and vals) as the daemon should answer: sorted segment by segment, or (k > 0) the k
 * first of each packed; vals get the moved values (values) or the indices (argsort). Returns
 * how many keys the answer has.
 */
static uint64_t reference(const seg_form *f, bool desc, int payload, uint64_t k,
                          const uint32_t *keys, const uint32_t *vals, uint32_t *out_k,
                          uint32_t *out_v)
{
        pair *p = malloc(N * sizeof(*p));
        uint64_t m = 0;

        g_desc = desc;
        for (uint64_t s = 0; s < f->count; s++) {
                uint64_t b = seg_begin(f, s), len = f->off[s + 1] - b, take = len;

                for (uint64_t i = 0; i < len; i++)
                        p[i] = (pair){keys[b + i], (uint32_t)i};
                qsort(p, len, sizeof(*p), cmp_pair);
                if (k && k < len)
                        take = k;
                for (uint64_t i = 0; i < take; i++, m++) {
                        out_k[m] = p[i].key;
                        if (payload == SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32)
                                out_v[m] = vals[b + p[i].at];
                        else if (payload == SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32)
                                out_v[m] = p[i].at;
                }
        }
        free(p);
        return m;
}

static void fill(uint32_t *keys, uint32_t *vals, uint64_t seed)
{
        uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

        for (size_t i = 0; i < N; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                keys[i] = (uint32_t)(x % 97); /* many ties: stability shows */
                vals[i] = (uint32_t)(i * 31 + 5);
        }
}

/* ---- the wire ---- */

typedef struct seg_msg {
        Sortd__Wire__Sort s;
        Sortd__Wire__Segments seg;
        Sortd__Wire__RegionData rd;
        Sortd__Wire__TopkOut out;
        uint8_t offsets[(N + 1) * 8]; /* as the wire carries them */
        size_t offsets_len;
} seg_msg;

static void msg_make(seg_msg *m, const seg_form *f, bool desc, int payload, uint64_t k)
{
        m->s = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, payload, N);
        m->seg = (Sortd__Wire__Segments)SORTD__WIRE__SEGMENTS__INIT;
        m->rd = (Sortd__Wire__RegionData)SORTD__WIRE__REGION_DATA__INIT;
        m->out = (Sortd__Wire__TopkOut)SORTD__WIRE__TOPK_OUT__INIT;
        m->s.order = desc ? SORTD__WIRE__ORDER__DESCENDING : SORTD__WIRE__ORDER__ASCENDING;
        m->s.k = k;
        m->s.segments = &m->seg;
        m->seg.count = f->count;
        m->offsets_len = 0;
        if (f->type == 0) {
                m->seg.row_len = N / f->count;
        } else {
                unsigned w = f->type == 1 ? 4 : 8;

                m->seg.offset_type = f->type == 1 ? SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U32
                                                  : SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_U64;
                for (uint64_t i = 0; i <= f->count; i++) {
                        uint32_t o32 = (uint32_t)f->off[i];

                        memcpy(m->offsets + i * w, w == 4 ? (void *)&o32 : (void *)&f->off[i], w);
                }
                m->offsets_len = (f->count + 1) * w;
        }
        if (g_on_device) {
                m->s.device_uuid.data = g_uuid;
                m->s.device_uuid.len = SORTD_DEVICE_UUID_BYTES;
        }
}

/* The next reply answers id: its status (why gets the error), its payload into out (len). */
static sortd_status recv_sorted(int fd, uint64_t id, void *out, size_t len, char *why,
                                size_t why_len)
{
        uint64_t plen;
        Sortd__Wire__Reply *r = raw_recv_reply(fd, &plen);
        sortd_status s;

        ck_assert_msg(r, "connection closed instead of reply %llu", (unsigned long long)id);
        ck_assert_uint_eq(r->id, id);
        s = sortd__wire_status_from(r->status);
        snprintf(why, why_len, "%s", r->error ? r->error : "");
        sortd__wire__reply__free_unpacked(r, NULL);
        if (s == SORTD_OK) {
                ck_assert_uint_eq(plen, len);
                raw_recv_bytes(fd, out, len);
        } else {
                ck_assert_uint_eq(plen, 0);
        }
        return s;
}

/* _i: form (3) x payload (3) x order (2) x sort or top-k (2), inline. */
START_TEST(inline_matrix)
{
        static const int payloads[] = {SORTD__WIRE__PAYLOAD__PAYLOAD_NONE,
                                       SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32,
                                       SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32};
        static seg_form f;
        static seg_msg m;
        int payload = payloads[_i / 4 % 3];
        bool desc = _i / 2 % 2, moves = payload == SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32;
        uint64_t k = _i % 2 ? 3 : 0, want_n;
        uint32_t keys[N], vals[N], want_k[N], want_v[N], got[2 * N];
        int fd = raw_connect(g_daemon.sock);
        char why[256];

        form_make(&f, _i / 12);
        msg_make(&m, &f, desc, payload, k);
        fill(keys, vals, (uint64_t)_i);
        want_n = reference(&f, desc, payload, k, keys, vals, want_k, want_v);
        raw_send_sort(fd, 5, &m.s, sizeof(keys) + (moves ? sizeof(vals) : 0) + m.offsets_len);
        raw_send_bytes(fd, keys, sizeof(keys));
        if (moves)
                raw_send_bytes(fd, vals, sizeof(vals));
        raw_send_bytes(fd, m.offsets, m.offsets_len);
        ck_assert_msg(
                recv_sorted(fd, 5, got,
                            want_n * 4 * (payload == SORTD__WIRE__PAYLOAD__PAYLOAD_NONE ? 1 : 2),
                            why, sizeof(why)) == SORTD_OK,
                "case %d: %s", _i, why);
        ck_assert_msg(memcmp(got, want_k, want_n * 4) == 0, "case %d: keys differ", _i);
        if (payload != SORTD__WIRE__PAYLOAD__PAYLOAD_NONE)
                ck_assert_msg(memcmp(got + want_n, want_v, want_n * 4) == 0,
                              "case %d: values or indices differ", _i);
        raw_expect_in_sync(fd);
        close(fd);
}
END_TEST

/* ---- regions ---- */

typedef struct region {
        int fd;
        uint8_t *p;
        size_t bytes;
        uint64_t id;
} region;

static region region_make(int sock, size_t bytes, uint64_t req_id)
{
        region r = {.bytes = bytes, .fd = raw_sealed_memfd(bytes)};

        r.p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
        ck_assert_ptr_ne(r.p, MAP_FAILED);
        r.id = raw_register_memfd(sock, r.fd, bytes, req_id);
        return r;
}

static void region_free(region *r)
{
        munmap(r->p, r->bytes);
        close(r->fd);
}

#define KEYS_AT 64
#define VALS_AT 8192
#define OFFSETS_AT 16384
#define OUT_AT 32768
#define REGION_BYTES 65536

/* m's region sort: keys at KEYS_AT of a, values (or indices) at VALS_AT of a. */
static void as_region_sort(seg_msg *m, const region *a)
{
        m->s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        m->s.region = &m->rd;
        m->rd.region_id = a->id;
        m->rd.keys_offset = KEYS_AT;
        m->rd.vals_offset = VALS_AT;
}

/* A region sort with no payload but its offsets; its status. */
static sortd_status region_call(int fd, uint64_t id, seg_msg *m, bool offsets_sent, char *why,
                                size_t len)
{
        raw_send_sort(fd, id, &m->s, offsets_sent ? m->offsets_len : 0);
        if (offsets_sent)
                raw_send_bytes(fd, m->offsets, m->offsets_len);
        return recv_sorted(fd, id, NULL, 0, why, len);
}

/*
 * _i: offsets in the payload (even) or in the region (odd), x sort in place or top-k into
 * topk_out (_i / 2); values move with the keys (argsort for _i 3).
 */
START_TEST(region_in_place)
{
        static seg_form f;
        static seg_msg m;
        int payload = _i == 3 ? SORTD__WIRE__PAYLOAD__PAYLOAD_ARGSORT32
                              : SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32;
        uint64_t k = _i / 2 ? 4 : 0, want_n;
        uint32_t keys[N], vals[N], want_k[N], want_v[N];
        int fd = raw_connect(g_daemon.sock);
        region a = region_make(fd, REGION_BYTES, 1);
        bool offsets_sent = _i % 2 == 0;
        char why[256];

        form_make(&f, 2);
        msg_make(&m, &f, _i == 2, payload, k);
        as_region_sort(&m, &a);
        fill(keys, vals, 100 + (uint64_t)_i);
        memcpy(a.p + KEYS_AT, keys, sizeof(keys));
        memcpy(a.p + VALS_AT, vals, sizeof(vals));
        if (!offsets_sent) {
                memcpy(a.p + OFFSETS_AT, m.offsets, m.offsets_len);
                m.seg.offsets_region_id = a.id;
                m.seg.offsets_offset = OFFSETS_AT;
        }
        if (k) {
                m.s.topk_out = &m.out;
                m.out.keys_region_id = a.id;
                m.out.keys_offset = OUT_AT;
                m.out.vals_offset = OUT_AT + N * 4;
        }
        want_n = reference(&f, _i == 2, payload, k, keys, vals, want_k, want_v);
        ck_assert_msg(region_call(fd, 2, &m, offsets_sent, why, sizeof(why)) == SORTD_OK,
                      "case %d: %s", _i, why);
        if (k) {
                ck_assert_msg(memcmp(a.p + OUT_AT, want_k, want_n * 4) == 0, "case %d: keys", _i);
                ck_assert_msg(memcmp(a.p + OUT_AT + N * 4, want_v, want_n * 4) == 0,
                              "case %d: values or indices", _i);
                ck_assert_msg(memcmp(a.p + KEYS_AT, keys, sizeof(keys)) == 0,
                              "case %d: a top-k wrote its input", _i);
        } else {
                ck_assert_msg(memcmp(a.p + KEYS_AT, want_k, want_n * 4) == 0, "case %d: keys", _i);
                ck_assert_msg(memcmp(a.p + VALS_AT, want_v, want_n * 4) == 0, "case %d: values",
                              _i);
        }
        raw_expect_in_sync(fd);
        close(fd);
        region_free(&a);
}
END_TEST

/* A refused region sort: the reply names the fault, the client's memory is as it was. */
static void refused(int fd, const region *a, seg_msg *m, bool offsets_sent, const char *text)
{
        static uint8_t before[REGION_BYTES];
        char why[256];

        memcpy(before, a->p, REGION_BYTES);
        ck_assert_int_eq(region_call(fd, 3, m, offsets_sent, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_msg(strstr(why, text), "'%s' lacks '%s'", why, text);
        ck_assert_msg(memcmp(before, a->p, REGION_BYTES) == 0, "refused, yet the region changed");
        raw_expect_in_sync(fd);
}

START_TEST(region_refusals)
{
        static seg_form f;
        static seg_msg m;
        uint32_t keys[N], vals[N];
        int fd = raw_connect(g_daemon.sock);
        region a = region_make(fd, REGION_BYTES, 1);
        uint64_t *off;

        fill(keys, vals, 7);
        memcpy(a.p + KEYS_AT, keys, sizeof(keys));
        memcpy(a.p + VALS_AT, vals, sizeof(vals));
        form_make(&f, 2);

        /* offsets that go down, sent in the payload */
        msg_make(&m, &f, false, SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32, 0);
        as_region_sort(&m, &a);
        off = (uint64_t *)(void *)m.offsets;
        off[3] = 2;
        refused(fd, &a, &m, true, "offsets[3] = 2 below offsets[2] = 7");

        /* the same in the region; then past its end */
        memcpy(a.p + OFFSETS_AT, m.offsets, m.offsets_len);
        m.seg.offsets_region_id = a.id;
        m.seg.offsets_offset = OFFSETS_AT;
        refused(fd, &a, &m, false, "offsets[3] = 2 below offsets[2] = 7");
        m.seg.offsets_offset = REGION_BYTES - 16;
        refused(fd, &a, &m, false, "pass the end of region");

        /* rows that do not cover n */
        msg_make(&m, &f, false, SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32, 0);
        as_region_sort(&m, &a);
        m.seg.offset_type = SORTD__WIRE__SEGMENTS__OFFSET_TYPE__OFFSETS_NONE;
        m.seg.count = 9;
        m.seg.row_len = 100;
        refused(fd, &a, &m, false, "9 rows of 100 keys are not n = 1000");

        /* top-k results over the keys, and past the region's end */
        msg_make(&m, &f, false, SORTD__WIRE__PAYLOAD__PAYLOAD_VALUES32, 4);
        as_region_sort(&m, &a);
        m.s.topk_out = &m.out;
        m.out.keys_region_id = a.id;
        m.out.keys_offset = KEYS_AT + 400;
        m.out.vals_offset = OUT_AT;
        refused(fd, &a, &m, true, "overlaps the sort's keys or values");
        m.out.keys_offset = OUT_AT;
        m.out.vals_offset = REGION_BYTES - 8;
        refused(fd, &a, &m, true, "pass the end of region");
        m.out.vals_offset = OUT_AT + 4; /* into the result keys */
        refused(fd, &a, &m, true, "overlaps the sort's keys or values, or the top-k keys'");
        close(fd);
        region_free(&a);
}
END_TEST

/*
 * On a GPU daemon the device's lane took them: a sort it ran counts there (one it handed to
 * the CPU path for want of a kernel would count on the CPU path only).
 */
START_TEST(ran_on_the_device)
{
        sortd_server_status st = status_of(&g_daemon);

        if (!g_on_device)
                return;
        ck_assert_uint_ge(st.device_count, 1);
        ck_assert_uint_ge(st.devices[0].sorts, 36 + 4);
        printf("segments: %llu sorts on the device, %llu on the CPU path\n",
               (unsigned long long)st.devices[0].sorts, (unsigned long long)st.cpu_path_sorts);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("segments");
        TCase *tc = tcase_create("e2e");

        tcase_set_timeout(tc, 300);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, inline_matrix, 0, 36);
        tcase_add_loop_test(tc, region_in_place, 0, 4);
        tcase_add_test(tc, region_refusals);
        tcase_add_test(tc, ran_on_the_device);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
