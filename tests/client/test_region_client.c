/*
 * libsortd's regions. Against a stand-in daemon (fake_sortd.c): the memfd goes with the
 * RegisterRegion frame's first bytes, sealed and sized as promised, a CUDA region's handle,
 * offset and device UUID go as given with no fd, the region sorts say on the wire what the
 * caller asked, and bad regions and region sorts are refused before a byte is sent. Against a real
 * sortd: the same refusals leave its request counter alone, sorts in regions give what inline sorts
 * of the same data give, and regions go cleanly, also on a broken or closed connection.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_sortd.h"
#include "harness.h"

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;

        ck_assert_ptr_nonnull(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

static sortd_region *region(sortd_conn *c, size_t bytes)
{
        sortd_region *r = NULL;

        ck_assert_msg(sortd_region_create(c, bytes, &r) == SORTD_OK, "%s", sortd_error_message(c));
        ck_assert_ptr_nonnull(r);
        return r;
}

#define REFUSED(c, rs, status, text)                                                               \
        do {                                                                                       \
                ck_assert_int_eq(sortd_sort_in_region(c, rs), status);                             \
                ck_assert_msg(strstr(sortd_error_message(c), text), "'%s' lacks '%s'",             \
                              sortd_error_message(c), text);                                       \
        } while (0)

/*
 * Every region sort the client must refuse itself, on regions a (4096 bytes) and b of c, and
 * other, a region of another connection. Nothing of it may reach the daemon.
 */
static void refusals(sortd_conn *c, sortd_region *a, sortd_region *other)
{
        sortd_region_sort rs = {.keys = a, .n = 16, .key_type = SORTD_KEY_U32};
        sortd_region_sort base = rs;
        sortd_region *r = (sortd_region *)1;

        ck_assert_int_eq(sortd_sort_in_region(c, NULL), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_sort_in_region(NULL, &rs), SORTD_E_INVAL);
        rs.keys = NULL;
        REFUSED(c, &rs, SORTD_E_INVAL, "keys region must not be NULL");
        rs = base;
        rs.keys_offset = 2;
        REFUSED(c, &rs, SORTD_E_INVAL, "not a multiple of the 4-byte element");
        rs = base;
        rs.n = 1025; /* one u32 more than the region holds */
        REFUSED(c, &rs, SORTD_E_INVAL, "run past the end");
        rs = base;
        rs.keys_offset = 4096 - 60; /* 16 keys from here end 4 bytes past it */
        REFUSED(c, &rs, SORTD_E_INVAL, "run past the end");
        rs.keys_offset = 8192;
        rs.n = 0;
        REFUSED(c, &rs, SORTD_E_INVAL, "run past the end");
        rs = base;
        rs.keys_offset = SIZE_MAX - 3; /* offset + bytes wraps around */
        REFUSED(c, &rs, SORTD_E_INVAL, "run past the end");
        rs = base;
        rs.n = SIZE_MAX / 2;
        REFUSED(c, &rs, SORTD_E_INVAL, "too large");
        rs = base;
        rs.payload = SORTD_PAYLOAD_VALUES32;
        REFUSED(c, &rs, SORTD_E_INVAL, "vals region must not be NULL");
        rs.vals = a;
        rs.vals_offset = 32; /* keys are bytes [0, 64) */
        REFUSED(c, &rs, SORTD_E_INVAL, "overlap");
        rs.payload = SORTD_PAYLOAD_ARGSORT64;
        rs.vals_offset = 68;
        REFUSED(c, &rs, SORTD_E_INVAL, "not a multiple of the 8-byte element");
        rs.vals_offset = 4096 - 64;
        rs.vals = other;
        REFUSED(c, &rs, SORTD_E_INVAL, "vals region is not registered on this connection");
        rs = base;
        rs.keys = other;
        REFUSED(c, &rs, SORTD_E_INVAL, "keys region is not registered on this connection");
        rs = base;
        rs.opts.begin_bit = 8;
        rs.opts.end_bit = 8;
        ck_assert_int_eq(sortd_sort_in_region(c, &rs), SORTD_E_INVAL);
        rs = base;
        rs.key_type = (sortd_key_type)99;
        ck_assert_int_eq(sortd_sort_in_region(c, &rs), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_region_create(c, 0, &r), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_region_create(c, 16, NULL), SORTD_E_INVAL);
        ck_assert_ptr_eq(r, (sortd_region *)1); /* untouched on failure */
        ck_assert_int_eq(sortd_region_destroy(c, other), SORTD_E_INVAL);
        ck_assert_ptr_nonnull(strstr(sortd_error_message(c), "another connection"));
}

/* rs sorts, and the fake saw its RegionData: keys_id, the offsets, vals_id (0: the keys'). */
static void sort_seen(const fake_sortd *f, sortd_conn *c, const sortd_region_sort *rs,
                      uint64_t keys_id, uint64_t vals_id)
{
        sortd_region_sort copy = *rs;

        ck_assert_msg(sortd_sort_in_region(c, &copy) == SORTD_OK, "%s", sortd_error_message(c));
        ck_assert_uint_eq(f->region_id, keys_id);
        ck_assert_uint_eq(f->keys_offset, rs->keys_offset);
        ck_assert_uint_eq(f->vals_offset, sortd_payload_size(rs->payload) ? rs->vals_offset : 0);
        ck_assert_uint_eq(f->vals_region_id, vals_id);
}

/* Closes c with r still there: destroy then only releases r, sends nothing, needs no conn. */
static void close_leaving(const fake_sortd *f, sortd_conn *c, sortd_region *r)
{
        unsigned frames = f->frames;

        sortd_close(c);
        ck_assert_int_eq(sortd_region_destroy(NULL, r), SORTD_OK);
        ck_assert_uint_eq(f->frames, frames);
}

/* The wire, seen from a stand-in daemon: fd passing, seals, fields, and silence on refusals. */
START_TEST(region_wire)
{
        int fds = count_fds();
        fake_sortd f, g;
        sortd_conn *c, *c2;
        sortd_region *a, *b, *o;
        char err[256];
        unsigned frames;
        sortd_region_sort rs = {.n = 16, .key_type = SORTD_KEY_U32};

        fake_start(&f);
        ck_assert_int_eq(sortd_connect(f.sock, NULL, &c, err, sizeof(err)), SORTD_OK);
        a = region(c, 4096);
        ck_assert_uint_eq(f.fds_with_header, 1);
        ck_assert_uint_eq(f.fds_elsewhere, 0);
        ck_assert_int_eq(f.seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
        ck_assert_int_eq(f.memfd_size, 4096);
        ck_assert_uint_eq(f.region_size, 4096);
        ck_assert_uint_eq(sortd_region_size(a), 4096);
        ck_assert_uint_eq((uintptr_t)sortd_region_data(a) % 4096, 0);
        /* One memory: the fake's write through its own mapping shows in ours. */
        ck_assert_uint_eq(((uint8_t *)sortd_region_data(a))[4095], 0xA5);
        ck_assert_ptr_null(sortd_region_data(NULL));
        ck_assert_uint_eq(sortd_region_size(NULL), 0);
        b = region(c, 1u << 20);
        ck_assert_uint_eq(f.fds_with_header, 2);
        ck_assert_int_eq(f.memfd_size, 1 << 20);

        fake_start(&g);
        ck_assert_int_eq(sortd_connect(g.sock, NULL, &c2, err, sizeof(err)), SORTD_OK);
        o = region(c2, 4096);
        frames = f.frames;
        refusals(c, a, o);
        ck_assert_uint_eq(f.frames, frames);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);

        /* Keys and values in one region: vals_region_id 0 names the keys' region. */
        rs.keys = a;
        rs.keys_offset = 64;
        rs.vals = a;
        rs.vals_offset = 1024;
        rs.payload = SORTD_PAYLOAD_VALUES64;
        sort_seen(&f, c, &rs, 1, 0);
        /* The permutation in another region. */
        rs.vals = b;
        rs.vals_offset = 8;
        rs.payload = SORTD_PAYLOAD_ARGSORT32;
        sort_seen(&f, c, &rs, 1, 2);
        /* Without a payload, vals is ignored. */
        rs.payload = SORTD_PAYLOAD_NONE;
        rs.vals_offset = 3;
        sort_seen(&f, c, &rs, 1, 0);

        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_uint_eq(f.unregistered, 1);
        ck_assert_int_eq(sortd_region_destroy(c, NULL), SORTD_OK);
        close_leaving(&f, c, b);
        fake_stop(&f);
        ck_assert_int_eq(sortd_region_destroy(c2, o), SORTD_OK);
        sortd_close(c2);
        fake_stop(&g);
        ck_assert_int_eq(count_fds(), fds);
}
END_TEST

/* Handle and UUID bytes as a caller gets them from CUDA: opaque, zero bytes included. */
static void cuda_bytes(uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES],
                       uint8_t uuid[SORTD_DEVICE_UUID_BYTES])
{
        for (int i = 0; i < SORTD_CUDA_IPC_HANDLE_BYTES; i++)
                handle[i] = (uint8_t)(i % 9 == 4 ? 0 : 0x80 + i);
        for (int i = 0; i < SORTD_DEVICE_UUID_BYTES; i++)
                uuid[i] = (uint8_t)(i == 3 ? 0 : 0xF0 ^ i);
}

static sortd_region *cuda_region(sortd_conn *c, uint64_t offset, uint64_t size)
{
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES], uuid[SORTD_DEVICE_UUID_BYTES];
        sortd_region *r = NULL;

        cuda_bytes(handle, uuid);
        ck_assert_msg(sortd_region_register_cuda(c, handle, offset, size, uuid, &r) == SORTD_OK,
                      "%s", sortd_error_message(c));
        ck_assert_ptr_nonnull(r);
        return r;
}

#define CUDA_REFUSED(c, call, text)                                                                \
        do {                                                                                       \
                ck_assert_int_eq(call, SORTD_E_INVAL);                                             \
                ck_assert_msg(strstr(sortd_error_message(c), text), "'%s' lacks '%s'",             \
                              sortd_error_message(c), text);                                       \
        } while (0)

/* Every argument of sortd_region_register_cuda that the client refuses, sending nothing. */
static void cuda_refusals(sortd_conn *c)
{
        uint8_t h[SORTD_CUDA_IPC_HANDLE_BYTES], u[SORTD_DEVICE_UUID_BYTES];
        sortd_region *r = (sortd_region *)1;

        cuda_bytes(h, u);
        ck_assert_int_eq(sortd_region_register_cuda(NULL, h, 0, 64, u, &r), SORTD_E_INVAL);
        CUDA_REFUSED(c, sortd_region_register_cuda(c, NULL, 0, 64, u, &r), "handle");
        CUDA_REFUSED(c, sortd_region_register_cuda(c, h, 0, 64, NULL, &r), "device_uuid");
        CUDA_REFUSED(c, sortd_region_register_cuda(c, h, 0, 64, u, NULL), "out");
        CUDA_REFUSED(c, sortd_region_register_cuda(c, h, 0, 0, u, &r), "1 to 2^63 - 1 bytes");
        CUDA_REFUSED(c, sortd_region_register_cuda(c, h, 0, (uint64_t)INT64_MAX + 1, u, &r),
                     "1 to 2^63 - 1 bytes");
        CUDA_REFUSED(c, sortd_region_register_cuda(c, h, UINT64_MAX - 63, 64, u, &r),
                     "overflows 64 bits");
        CUDA_REFUSED(c, sortd_region_register_cuda(c, h, (uint64_t)INT64_MAX + 2, INT64_MAX, u, &r),
                     "overflows 64 bits");
        ck_assert_ptr_eq(r, (sortd_region *)1); /* untouched on failure */
}

/*
 * A CUDA region on the wire: the handle, UUID, offset, size and kind exactly, no fd; sorts in
 * it name its id; kinds do not mix in one sort; destroy unregisters it; a refusal of the
 * daemon's comes back with its message; argument errors send nothing.
 */
START_TEST(cuda_region_wire)
{
        int fds = count_fds();
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES], uuid[SORTD_DEVICE_UUID_BYTES];
        fake_sortd f;
        sortd_conn *c;
        sortd_region *d, *m, *odd, *edge, *none = (sortd_region *)1;
        char err[256];
        unsigned frames;
        sortd_region_sort rs = {.n = 16, .key_type = SORTD_KEY_U32};

        cuda_bytes(handle, uuid);
        fake_start(&f);
        ck_assert_int_eq(sortd_connect(f.sock, NULL, &c, err, sizeof(err)), SORTD_OK);
        frames = f.frames;
        cuda_refusals(c);
        ck_assert_uint_eq(f.frames, frames);

        d = cuda_region(c, 512, 4096);
        ck_assert_uint_eq(f.frames, frames + 1);
        ck_assert_int_eq(f.region_kind, SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC);
        ck_assert_uint_eq(f.ipc_handle_len, SORTD_CUDA_IPC_HANDLE_BYTES);
        ck_assert_mem_eq(f.ipc_handle, handle, SORTD_CUDA_IPC_HANDLE_BYTES);
        ck_assert_uint_eq(f.device_uuid_len, SORTD_DEVICE_UUID_BYTES);
        ck_assert_mem_eq(f.device_uuid, uuid, SORTD_DEVICE_UUID_BYTES);
        ck_assert_uint_eq(f.region_offset, 512);
        ck_assert_uint_eq(f.region_size, 4096);
        ck_assert_uint_eq(f.fds_with_header, 0); /* no SCM_RIGHTS */
        ck_assert_uint_eq(f.fds_elsewhere, 0);
        ck_assert_ptr_null(sortd_region_data(d)); /* device memory: nothing mapped here */
        ck_assert_uint_eq(sortd_region_size(d), 4096);

        /* Keys and values in the device region; the spans are checked against its size. */
        rs.keys = rs.vals = d;
        rs.keys_offset = 64;
        rs.vals_offset = 1024;
        rs.payload = SORTD_PAYLOAD_VALUES64;
        sort_seen(&f, c, &rs, 1, 0);
        rs.vals_offset = 4096 - 64;
        REFUSED(c, &rs, SORTD_E_INVAL, "run past the end of the 4096-byte region");

        /* One sort, one kind of memory: a memfd region does not pair with a device one. */
        m = region(c, 4096);
        frames = f.frames;
        rs.vals = m;
        rs.vals_offset = 0;
        REFUSED(c, &rs, SORTD_E_INVAL,
                "keys region is device memory (CUDA IPC) and the vals region host memory "
                "(memfd): both must be of one kind");
        rs.keys = m;
        rs.vals = d;
        REFUSED(c, &rs, SORTD_E_INVAL,
                "keys region is host memory (memfd) and the vals region "
                "device memory (CUDA IPC)");
        ck_assert_uint_eq(f.frames, frames);
        rs.keys = d;
        rs.vals = m; /* ignored without a payload */
        rs.payload = SORTD_PAYLOAD_NONE;
        sort_seen(&f, c, &rs, 1, 0);

        /* A device region at an odd offset of its allocation holds bytes, not wider keys. */
        odd = cuda_region(c, 2, 64);
        frames = f.frames;
        rs.keys = odd;
        rs.keys_offset = 0;
        REFUSED(c, &rs, SORTD_E_INVAL, "starts at offset 2 of its CUDA allocation");
        ck_assert_uint_eq(f.frames, frames);
        rs.key_type = SORTD_KEY_U8;
        sort_seen(&f, c, &rs, 3, 0);

        /* The largest offset that still fits is sent. */
        edge = cuda_region(c, UINT64_MAX - 4096, 4096);
        ck_assert_uint_eq(f.region_offset, UINT64_MAX - 4096);

        /* The daemon's refusal comes back as it said it; no region. */
        f.refuse_register = SORTD_E_UNSUPPORTED;
        f.refuse_message = "no GPU engine on this daemon";
        ck_assert_int_eq(sortd_region_register_cuda(c, handle, 0, 64, uuid, &none),
                         SORTD_E_UNSUPPORTED);
        ck_assert_str_eq(sortd_error_message(c), "no GPU engine on this daemon");
        ck_assert_ptr_eq(none, (sortd_region *)1);
        f.refuse_register = SORTD_OK;
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);

        ck_assert_int_eq(sortd_region_destroy(c, d), SORTD_OK);
        ck_assert_uint_eq(f.unregistered, 1);
        ck_assert_int_eq(sortd_region_destroy(c, odd), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, m), SORTD_OK);
        close_leaving(&f, c, edge);
        fake_stop(&f);
        ck_assert_int_eq(count_fds(), fds);
}
END_TEST

/* The same refusals against sortd: its request counter does not move. */
START_TEST(region_refusals)
{
        daemon_proc d = {0};
        sortd_conn *c, *c2;
        sortd_region *a, *o, *big;
        sortd_region_sort rs = {.n = (1u << 20) + 1, .key_type = SORTD_KEY_U32};
        uint64_t before;

        daemon_start(&d, NULL);
        c = client_open(&d);
        c2 = client_open(&d);
        a = region(c, 4096);
        o = region(c2, 4096);
        big = region(c, ((1u << 20) + 1) * 4);
        before = status_of(&d).requests_total;
        refusals(c, a, o);
        rs.keys = big;
        REFUSED(c, &rs, SORTD_E_CAPACITY, "capacity");
        ck_assert_uint_eq(status_of(&d).requests_total, before + 2); /* hello, status */
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, big), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c2, o), SORTD_OK);
        sortd_close(c);
        sortd_close(c2);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* A region the daemon refuses (over --max-regions) leaves no fd behind, and the rest works. */
START_TEST(region_create_refused)
{
        const char *const extra[] = {"--max-regions", "1", NULL};
        daemon_proc d = {0};
        sortd_conn *c;
        sortd_region *a, *b = (sortd_region *)1;
        int fds;

        daemon_start(&d, extra);
        c = client_open(&d);
        a = region(c, 4096);
        fds = count_fds();
        ck_assert_int_ne(sortd_region_create(c, 4096, &b), SORTD_OK);
        ck_assert_msg(strstr(sortd_error_message(c), "max-regions"), "%s", sortd_error_message(c));
        ck_assert_ptr_eq(b, (sortd_region *)1);
        ck_assert_int_eq(count_fds(), fds);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        a = region(c, 4096); /* the slot is free again */
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

/* Random keys with many repeats (so stability shows), values 0..n-1; a 16-byte key's two
   words alike. */
static void fill(uint8_t *keys, uint8_t *vals, size_t n, size_t ks, size_t vs)
{
        for (size_t i = 0; i < n; i++) {
                uint64_t k = rng() % 7 == 0 ? 0 : rng();
                uint64_t k2[2] = {k, k};

                memcpy(keys + i * ks, k2, ks);
                if (vals && vs)
                        memcpy(vals + i * vs, &(uint64_t){i}, vs);
        }
}

/*
 * One sort in regions against the inline sort of the same data: keys at keys_off in kr, values
 * or indices at vals_off in vr (vr may be kr).
 */
static void round_trip(sortd_conn *c, sortd_region *kr, size_t keys_off, sortd_region *vr,
                       size_t vals_off, size_t n, sortd_key_type t, sortd_payload p, sortd_order o)
{
        size_t ks = sortd_key_size(t), vs = sortd_payload_size(p);
        uint8_t *keys = (uint8_t *)sortd_region_data(kr) + keys_off;
        uint8_t *vals = vs ? (uint8_t *)sortd_region_data(vr) + vals_off : NULL;
        uint8_t *ref_keys = xmalloc(n * ks), *ref_vals = xmalloc(n * vs);
        sortd_region_sort rs = {.keys = kr,
                                .keys_offset = keys_off,
                                .vals = vs ? vr : NULL,
                                .vals_offset = vals_off,
                                .n = n,
                                .key_type = t,
                                .payload = p,
                                .opts = {.order = o}};
        sortd_request r = {.keys = ref_keys,
                           .vals = vs ? ref_vals : NULL,
                           .n = n,
                           .key_type = t,
                           .payload = p,
                           .opts = {.order = o}};

        fill(keys, sortd_payload_is_argsort(p) ? NULL : vals, n, ks, vs);
        memcpy(ref_keys, keys, n * ks);
        if (vs)
                memcpy(ref_vals, vals, n * vs);
        ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s %s %s n=%zu: %s",
                      sortd_key_type_name(t), sortd_payload_name(p), o ? "desc" : "asc", n,
                      sortd_error_message(c));
        ck_assert_int_eq(sortd_submit(c, &r), SORTD_OK);
        ck_assert_int_eq(sortd_receive(c, &r), SORTD_OK);
        ck_assert_msg(memcmp(keys, ref_keys, n * ks) == 0, "%s %s %s n=%zu: keys differ",
                      sortd_key_type_name(t), sortd_payload_name(p), o ? "desc" : "asc", n);
        ck_assert_msg(!vs || memcmp(vals, ref_vals, n * vs) == 0, "%s %s %s n=%zu: vals differ",
                      sortd_key_type_name(t), sortd_payload_name(p), o ? "desc" : "asc", n);
        free(ref_keys);
        free(ref_vals);
}

/* Every key type x payload x order, values in the keys' region and in another, small n too. */
START_TEST(region_round_trips)
{
        daemon_proc d = {0};
        size_t n = 3000, sizes[] = {1, 2, 257}; /* n = 0: region_idle_after_sorts */
        sortd_conn *c;
        sortd_region *a, *b;

        daemon_start(&d, NULL);
        c = client_open(&d);
        a = region(c, 1u << 17); /* keys at 8 (16-byte keys at 16), values after them */
        b = region(c, 1u << 15);
        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (int p = 0; p < SORTD_PAYLOAD_COUNT; p++)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                size_t at = sortd_key_size((sortd_key_type)t) > 8 ? 16 : 8;

                                round_trip(c, a, at, a, 16 * 4096, n, (sortd_key_type)t,
                                           (sortd_payload)p, (sortd_order)o);
                                round_trip(c, a, 0, b, 64, n, (sortd_key_type)t, (sortd_payload)p,
                                           (sortd_order)o);
                        }
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                round_trip(c, b, 16, a, 16, sizes[i], SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT64,
                           SORTD_DESCENDING);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        ck_assert_int_eq(sortd_region_destroy(c, b), SORTD_OK);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/*
 * A region is idle again once each kind of sort on it has been answered, n = 0 included: no
 * use count is left behind (Triton's #7688 reported idle regions as busy).
 */
START_TEST(region_idle_after_sorts)
{
        daemon_proc d = {0};
        sortd_conn *c;
        const size_t ns[] = {0, 1, 100};

        daemon_start(&d, NULL);
        c = client_open(&d);
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
                for (int other = 0; other < 2; other++) {
                        sortd_region *a = region(c, 4096), *b = other ? region(c, 4096) : a;
                        sortd_region_sort rs = {.keys = a,
                                                .vals = b,
                                                .vals_offset = 2048,
                                                .n = ns[i],
                                                .key_type = SORTD_KEY_U32,
                                                .payload = SORTD_PAYLOAD_ARGSORT32};

                        ck_assert_int_eq(sortd_sort_in_region(c, &rs), SORTD_OK);
                        ck_assert_msg(sortd_region_destroy(c, a) == SORTD_OK,
                                      "keys region after a sort of n = %zu: %s", ns[i],
                                      sortd_error_message(c));
                        if (other)
                                ck_assert_msg(sortd_region_destroy(c, b) == SORTD_OK,
                                              "values region after a sort of n = %zu: %s", ns[i],
                                              sortd_error_message(c));
                }
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* An argsort in a region, checked by hand: the permutation is written at vals. */
START_TEST(region_argsort)
{
        daemon_proc d = {0};
        sortd_conn *c;
        sortd_region *r;
        int32_t in[6] = {5, -3, 5, 0, -3, 7}, want_keys[6] = {-3, -3, 0, 5, 5, 7};
        uint32_t want_idx[6] = {1, 4, 3, 0, 2, 5};
        sortd_region_sort rs = {.keys_offset = 4,
                                .vals_offset = 64,
                                .n = 6,
                                .key_type = SORTD_KEY_I32,
                                .payload = SORTD_PAYLOAD_ARGSORT32};
        int32_t *keys;
        uint32_t *idx;

        daemon_start(&d, NULL);
        c = client_open(&d);
        r = region(c, 4096);
        rs.keys = rs.vals = r;
        keys = (int32_t *)((char *)sortd_region_data(r) + 4);
        idx = (uint32_t *)((char *)sortd_region_data(r) + 64);
        memcpy(keys, in, sizeof(in));
        ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s", sortd_error_message(c));
        ck_assert_mem_eq(keys, want_keys, sizeof(want_keys));
        ck_assert_mem_eq(idx, want_idx, sizeof(want_idx));
        ck_assert_int_eq(((int32_t *)sortd_region_data(r))[0], 0); /* nothing outside the span */
        ck_assert_int_eq(sortd_region_destroy(c, r), SORTD_OK);
        sortd_close(c);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

/* Regions go cleanly when the daemon has gone (a broken connection) and after sortd_close. */
START_TEST(region_destroy_broken)
{
        daemon_proc d = {0};
        int fds = count_fds();
        sortd_conn *c;
        sortd_region *a, *b;
        sortd_region_sort rs = {.n = 4, .key_type = SORTD_KEY_U8};

        daemon_start(&d, NULL);
        c = client_open(&d);
        a = region(c, 4096);
        b = region(c, 4096);
        ck_assert_int_eq(daemon_stop(&d, SIGKILL), -1);
        ck_assert_int_eq(sortd_ping(c), SORTD_E_IO);
        rs.keys = a;
        ck_assert_int_eq(sortd_sort_in_region(c, &rs), SORTD_E_IO);
        ck_assert_int_eq(sortd_region_create(c, 4096, &(sortd_region *){NULL}), SORTD_E_IO);
        ck_assert_int_eq(sortd_region_destroy(c, a), SORTD_OK);
        sortd_close(c);
        ck_assert_int_eq(sortd_region_destroy(NULL, b), SORTD_OK);
        ck_assert_int_eq(count_fds(), fds);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("region_client");
        TCase *tc = tcase_create("region_client");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, region_wire);
        tcase_add_test(tc, cuda_region_wire);
        tcase_add_test(tc, region_refusals);
        tcase_add_test(tc, region_create_refused);
        tcase_add_test(tc, region_round_trips);
        tcase_add_test(tc, region_idle_after_sorts);
        tcase_add_test(tc, region_argsort);
        tcase_add_test(tc, region_destroy_broken);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
