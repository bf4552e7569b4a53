/*
 * Shared-memory regions through a real sortd, on raw frames: sealed memfds passed with
 * SCM_RIGHTS, sorted in place for every key type x payload x order (compared with the engine
 * in-process), isolation between connections, each refusal with no fd left open in the
 * daemon, the in-use rule, a client killed with regions and a sort in flight, pipelined sorts
 * of one region run in turn, sorts of no keys counted, and keys the client writes while the
 * daemon sorts them.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datagen.h"
#include "engine.h"
#include "harness.h"
#include "matrix.h"

#define MEMFD_NAME "sortd-e2e"

static daemon_proc shared_daemon;

static void shared_start(void)
{
        const char *args[] = {"--max-regions", "3", NULL};

        daemon_start(&shared_daemon, args);
}

static void shared_stop(void)
{
        ck_assert_int_eq(daemon_stop(&shared_daemon, SIGTERM), 0);
}

/* A client's region: a memfd sealed as the daemon wants it (or as seals says), mapped. */
typedef struct region {
        int fd;
        uint8_t *p;
        size_t bytes;
        uint64_t id;
} region;

static region region_make(size_t bytes, int seals)
{
        region r = {.bytes = bytes};

        r.fd = memfd_create(MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        ck_assert_int_ge(r.fd, 0);
        ck_assert_int_eq(ftruncate(r.fd, (off_t)bytes), 0);
        if (seals)
                ck_assert_int_eq(fcntl(r.fd, F_ADD_SEALS, seals), 0);
        r.p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
        ck_assert_ptr_ne(r.p, MAP_FAILED);
        return r;
}

static void region_free(region *r)
{
        munmap(r->p, r->bytes);
        close(r->fd);
}

static void send_register(int sock, uint64_t id, uint64_t size, const int *fds, unsigned nfds)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
        reg.size = size;
        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = &reg;
        raw_send_request_fds(sock, &req, fds, nfds);
}

/* Reads request id's reply: its status, and (OK) the body's region id; why gets the error. */
static sortd_status recv_status(int sock, uint64_t id, uint64_t *region_id, char *why, size_t len)
{
        uint64_t plen;
        Sortd__Wire__Reply *r = raw_recv_reply(sock, &plen);
        sortd_status s;

        ck_assert_msg(r, "connection closed instead of a reply");
        ck_assert_uint_eq(r->id, id);
        ck_assert_uint_eq(plen, 0); /* regions: nothing follows a reply */
        s = sortd__wire_status_from(r->status);
        if (region_id && r->body_case == SORTD__WIRE__REPLY__BODY_REGISTER_REGION)
                *region_id = r->register_region->region_id;
        if (why)
                snprintf(why, len, "%s", r->error);
        sortd__wire__reply__free_unpacked(r, NULL);
        return s;
}

static uint64_t register_ok(int sock, region *r)
{
        char why[256];

        send_register(sock, 1, r->bytes, &r->fd, 1);
        ck_assert_msg(recv_status(sock, 1, &r->id, why, sizeof(why)) == SORTD_OK, "%s", why);
        ck_assert_uint_gt(r->id, 0);
        return r->id;
}

static void send_unregister(int sock, uint64_t id, uint64_t region_id)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__UnregisterRegion un = SORTD__WIRE__UNREGISTER_REGION__INIT;

        un.region_id = region_id;
        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_UNREGISTER_REGION;
        req.unregister_region = &un;
        raw_send_request(sock, &req, 0);
}

typedef struct region_sort {
        sortd_sort_desc d;
        uint64_t n, keys_region, keys_offset, vals_region, vals_offset;
} region_sort;

/* Packs a region sort's frame into buf; returns its length. */
static size_t pack_region_sort(uint64_t id, const region_sort *rs, uint8_t *buf, size_t cap)
{
        Sortd__Wire__Sort s = raw_sort_msg(sortd__wire_key_type(rs->d.key_type),
                                           sortd__wire_payload(rs->d.payload), rs->n);
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;

        s.order = (Sortd__Wire__Order)rs->d.order;
        s.begin_bit = rs->d.begin_bit;
        s.end_bit = rs->d.end_bit;
        rd.region_id = rs->keys_region;
        rd.keys_offset = rs->keys_offset;
        rd.vals_region_id = rs->vals_region;
        rd.vals_offset = rs->vals_offset;
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &rd;
        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_SORT;
        req.sort = &s;
        return raw_pack_request(&req, 0, buf, cap);
}

static void send_region_sort(int sock, uint64_t id, const region_sort *rs)
{
        uint8_t buf[256];

        raw_send_bytes(sock, buf, pack_region_sort(id, rs, buf, sizeof(buf)));
}

static sortd_status region_sort_call(int sock, const region_sort *rs, char *why, size_t len)
{
        send_region_sort(sock, 9, rs);
        return recv_status(sock, 9, NULL, why, len);
}

static sortd_engine *local_engine(void)
{
        sortd_engine_config ec = {.capacity = 1u << 20, .threads = 2};
        sortd_engine *e = NULL;
        char why[256];

        ck_assert_msg(sortd_engine_create("cpu", &ec, &e, why, sizeof(why)) == SORTD_OK, "%s", why);
        return e;
}

/*
 * _i walks key type x payload x order: keys at offset 64 of one region, values at the start of
 * a second (or, odd _i, after the keys in the same one), sorted in place; the engine sorts
 * copies in-process.
 */
START_TEST(matrix_in_place)
{
        const int i = matrix_case(_i);
        sortd_sort_desc d = matrix_desc(i);
        const size_t n = 30011, ks = sortd_key_size(d.key_type), vs = sortd_payload_size(d.payload);
        const size_t voff = i % 2 ? (64 + n * ks + 63) / 64 * 64 : 0;
        int sock = raw_connect(shared_daemon.sock);
        region a = region_make(1 << 20, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
        region b = region_make(1 << 20, F_SEAL_SHRINK);
        region *vr = i % 2 ? &a : &b;
        uint8_t *keys = xmalloc(n * ks), *vals = xmalloc(n * vs + 1);
        sortd_engine *e = local_engine();
        char why[256];

        datagen_fill(keys, n, d.key_type, DATAGEN_FEW, 0, (uint64_t)i);
        if (vs)
                datagen_fill_values(vals, n, (unsigned)vs, (uint64_t)i + 1);
        memcpy(a.p + 64, keys, n * ks);
        memcpy(vr->p + voff, vals, n * vs);
        register_ok(sock, &a);
        register_ok(sock, &b);
        region_sort rs = {d, n, a.id, 64, vr->id, voff};
        ck_assert_msg(region_sort_call(sock, &rs, why, sizeof(why)) == SORTD_OK, "%s", why);
        ck_assert_int_eq(sortd_engine_sort(e, &d, keys, vs ? vals : NULL, n), SORTD_OK);
        ck_assert_msg(memcmp(a.p + 64, keys, n * ks) == 0, "keys differ: %s %s %s",
                      sortd_key_type_name(d.key_type), sortd_payload_name(d.payload),
                      d.order ? "desc" : "asc");
        ck_assert_msg(memcmp(vr->p + voff, vals, n * vs) == 0, "values differ: %s %s",
                      sortd_key_type_name(d.key_type), sortd_payload_name(d.payload));
        sortd_engine_destroy(e);
        free(keys);
        free(vals);
        close(sock);
        region_free(&a);
        region_free(&b);
}
END_TEST

/* B cannot sort in or unregister A's region: the error is the one an unknown id gets. */
START_TEST(connections_isolated)
{
        int sa = raw_connect(shared_daemon.sock), sb = raw_connect(shared_daemon.sock);
        region a = region_make(4096, F_SEAL_SHRINK);
        char sorting[256], unregistering[256], never[256], want[256];
        uint64_t id = register_ok(sa, &a);
        region_sort rs = {{.key_type = SORTD_KEY_U32}, 16, id, 0, 0, 0};

        ck_assert_int_eq(region_sort_call(sb, &rs, sorting, sizeof(sorting)), SORTD_E_INVAL);
        send_unregister(sb, 3, id);
        ck_assert_int_eq(recv_status(sb, 3, NULL, unregistering, sizeof(unregistering)),
                         SORTD_E_INVAL);
        rs.keys_region = 99;
        ck_assert_int_eq(region_sort_call(sb, &rs, never, sizeof(never)), SORTD_E_INVAL);
        ck_assert_str_eq(never, "no region 99 on this connection");
        snprintf(want, sizeof(want), "no region %llu on this connection", (unsigned long long)id);
        ck_assert_str_eq(sorting, want);
        ck_assert_str_eq(unregistering, want);
        /* A's region is still A's. */
        rs.keys_region = id;
        ck_assert_int_eq(region_sort_call(sa, &rs, sorting, sizeof(sorting)), SORTD_OK);
        close(sa);
        close(sb);
        region_free(&a);
}
END_TEST

/* The sort requests a Status accounts for: sort requests = ok + failed + rejected + cancelled. */
static uint64_t accounted(const sortd_server_status *st)
{
        return st->sorts_ok + st->sorts_failed + st->rejected + st->cancelled;
}

/* Waits until count() reads want (a closed connection takes a moment); returns its last read. */
static int settle(int (*count)(void), int want)
{
        int n = 0;

        for (int k = 0; k < 200 && (n = count()) != want; k++)
                usleep(10000);
        return n;
}

static int daemon_fds(void)
{
        return daemon_fd_count(&shared_daemon);
}

static int memfd_maps(void)
{
        return daemon_maps_matching(&shared_daemon, MEMFD_NAME);
}

static int fds_settle(int want)
{
        return settle(daemon_fds, want);
}

/* The shared daemon's fds once the test before has left: the same over 30 ms. Its last
   connection (a status query, say) may still be open in the daemon as this test starts. */
static int fds_at_rest(void)
{
        int n = daemon_fds(), same = 0;

        for (int k = 0; k < 200 && same < 3; k++) {
                int m;

                usleep(10000);
                m = daemon_fds();
                same = m == n ? same + 1 : 0;
                n = m;
        }
        return n;
}

static void expect_refusal(int sock, uint64_t id, sortd_status want, const char *text)
{
        char why[256];

        ck_assert_int_eq(recv_status(sock, id, NULL, why, sizeof(why)), want);
        ck_assert_msg(strstr(why, text), "'%s' lacks '%s'", why, text);
}

/* Each refusal has its error, and the daemon keeps no fd it was sent. */
START_TEST(refusals_leave_no_fd)
{
        int sock = raw_connect(shared_daemon.sock), base;
        region unsealed = region_make(4096, 0), good = region_make(8192, F_SEAL_SHRINK);
        region more[3];
        int two[2] = {good.fd, good.fd};
        region_sort rs = {{.key_type = SORTD_KEY_U64}, 8, 0, 0, 0, 0};
        sortd_server_status st;
        char why[256];

        raw_expect_in_sync(sock);
        base = fds_at_rest();
        send_register(sock, 2, 4096, &unsealed.fd, 1);
        expect_refusal(sock, 2, SORTD_E_INVAL, "not sealed against shrinking");
        send_register(sock, 3, 4096, &good.fd, 1);
        expect_refusal(sock, 3, SORTD_E_INVAL, "has 8192 bytes, RegisterRegion says 4096");
        send_register(sock, 4, 8192, NULL, 0);
        expect_refusal(sock, 4, SORTD_E_INVAL, "came without its memfd");
        /* An fd with a frame that takes none: the ping is answered, the fd refused and closed. */
        {
                Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;

                req.id = 5;
                req.body_case = SORTD__WIRE__REQUEST__BODY_PING;
                req.ping = &(Sortd__Wire__Ping)SORTD__WIRE__PING__INIT;
                raw_send_request_fds(sock, &req, &good.fd, 1);
                expect_refusal(sock, 5, SORTD_OK, "");
                expect_refusal(sock, 0, SORTD_E_PROTOCOL,
                               "1 fd(s) came with a frame that takes none");
        }
        ck_assert_int_eq(fds_settle(base), base);
        /* Two fds with one registration: one region, one fd refused. */
        send_register(sock, 6, 8192, two, 2);
        ck_assert_int_eq(recv_status(sock, 6, &good.id, why, sizeof(why)), SORTD_OK);
        expect_refusal(sock, 0, SORTD_E_PROTOCOL, "1 fd(s) came with a frame that takes none");
        ck_assert_int_eq(fds_settle(base), base);
        ck_assert_int_eq(daemon_maps_matching(&shared_daemon, MEMFD_NAME), 1);
        /* The seal holds: the client cannot shrink what the daemon has mapped. */
        ck_assert_int_eq(ftruncate(good.fd, 4096), -1);
        /* Spans: past the end, wrapping around, misaligned. */
        rs.keys_region = good.id;
        rs.n = 1025;
        ck_assert_int_eq(region_sort_call(sock, &rs, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_msg(strstr(why, "pass the end of region"), "%s", why);
        rs.n = 8;
        rs.keys_offset = UINT64_MAX - 7;
        ck_assert_int_eq(region_sort_call(sock, &rs, why, sizeof(why)), SORTD_E_INVAL);
        rs.keys_offset = 4;
        ck_assert_int_eq(region_sort_call(sock, &rs, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_msg(strstr(why, "not a multiple of 8"), "%s", why);
        rs.keys_offset = 0;
        rs.d.payload = SORTD_PAYLOAD_VALUES64;
        rs.vals_offset = 8192 - 32;
        ck_assert_int_eq(region_sort_call(sock, &rs, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_msg(strstr(why, "values at offset 8160"), "%s", why);
        /* max-regions is 3 for this daemon. */
        for (int i = 0; i < 3; i++)
                more[i] = region_make(4096, F_SEAL_SHRINK);
        register_ok(sock, &more[0]);
        register_ok(sock, &more[1]);
        send_register(sock, 7, 4096, &more[2].fd, 1);
        expect_refusal(sock, 7, SORTD_E_BUSY, "max-regions is 3");
        ck_assert_int_eq(fds_settle(base), base);
        ck_assert_int_eq(daemon_maps_matching(&shared_daemon, MEMFD_NAME), 3);
        st = status_of(&shared_daemon);
        ck_assert_uint_eq(st.regions, 3);
        ck_assert_uint_eq(st.region_bytes, 8192 + 2 * 4096);
        close(sock);
        ck_assert_int_eq(settle(memfd_maps, 0), 0);
        st = status_of(&shared_daemon);
        ck_assert_uint_eq(st.regions, 0);
        ck_assert_uint_eq(st.region_bytes, 0);
        region_free(&unsealed);
        region_free(&good);
        for (int i = 0; i < 3; i++)
                region_free(&more[i]);
}
END_TEST

/* A region held by a sort cannot go; once the sort's reply is out, it can. */
START_TEST(unregister_waits_for_no_one)
{
        const size_t n = 1u << 20;
        int sock = raw_connect(shared_daemon.sock);
        region r = region_make(n * 8, F_SEAL_SHRINK);
        region_sort rs = {{.key_type = SORTD_KEY_U64}, n, 0, 0, 0, 0};
        char why[256];

        datagen_fill(r.p, n, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 42);
        rs.keys_region = register_ok(sock, &r);
        /* Both frames in the socket before the daemon reads either: the sort cannot be done
           by the time the unregister is read. */
        send_region_sort(sock, 10, &rs);
        send_unregister(sock, 11, rs.keys_region);
        ck_assert_int_eq(recv_status(sock, 10, NULL, why, sizeof(why)), SORTD_OK);
        expect_refusal(sock, 11, SORTD_E_BUSY, "in use by 1 sort(s)");
        check_sorted_u64((const uint64_t *)r.p, n);
        send_unregister(sock, 12, rs.keys_region);
        ck_assert_int_eq(recv_status(sock, 12, NULL, why, sizeof(why)), SORTD_OK);
        send_unregister(sock, 13, rs.keys_region);
        expect_refusal(sock, 13, SORTD_E_INVAL, "no region");
        /* A sort of nothing holds nothing. */
        rs.keys_region = register_ok(sock, &r);
        rs.n = 0;
        ck_assert_int_eq(region_sort_call(sock, &rs, why, sizeof(why)), SORTD_OK);
        send_unregister(sock, 14, rs.keys_region);
        ck_assert_int_eq(recv_status(sock, 14, NULL, why, sizeof(why)), SORTD_OK);
        close(sock);
        region_free(&r);
}
END_TEST

static void send_register_cuda(int sock, uint64_t id, const int *fds, unsigned nfds)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES] = {1}, uuid[SORTD_DEVICE_UUID_BYTES] = {2};

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        reg.size = 4096;
        reg.offset = 256;
        reg.cuda_ipc_handle = (ProtobufCBinaryData){sizeof(handle), handle};
        reg.device_uuid = (ProtobufCBinaryData){sizeof(uuid), uuid};
        req.id = id;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = &reg;
        raw_send_request_fds(sock, &req, fds, nfds);
}

/* The CPU engine has no device: a CUDA region is refused, says why, and leaves nothing. */
START_TEST(cuda_region_refused_on_cpu)
{
        int sock = raw_connect(shared_daemon.sock), base;
        region r = region_make(4096, F_SEAL_SHRINK);

        raw_expect_in_sync(sock);
        base = fds_at_rest();
        send_register_cuda(sock, 2, NULL, 0);
        expect_refusal(sock, 2, SORTD_E_UNSUPPORTED, "engine (cpu) sorts in host memory");
        /* It takes no fd: one sent with it is refused and closed. */
        send_register_cuda(sock, 3, &r.fd, 1);
        expect_refusal(sock, 3, SORTD_E_UNSUPPORTED, "need a GPU engine");
        expect_refusal(sock, 0, SORTD_E_PROTOCOL, "1 fd(s) came with a frame that takes none");
        ck_assert_int_eq(fds_settle(base), base);
        raw_expect_in_sync(sock);
        ck_assert_uint_eq(status_of(&shared_daemon).regions, 0);
        close(sock);
        region_free(&r);
}
END_TEST

/*
 * A child process does what act says on a connection of its own, then waits; it is killed
 * 2 ms after it is done, once the daemon has read what it sent. Then nothing it held may stay
 * behind in the shared daemon: fds back to base, no memfd mapped, nothing in flight.
 */
static void killed_after(void (*act)(int sock), int base)
{
        int pipefd[2], status;
        pid_t child;
        char go;

        ck_assert_int_eq(pipe(pipefd), 0);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                act(raw_connect(shared_daemon.sock));
                if (write(pipefd[1], "x", 1) != 1)
                        _exit(2);
                pause();
                _exit(0);
        }
        ck_assert_int_eq(read(pipefd[0], &go, 1), 1);
        usleep(2000);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        close(pipefd[0]);
        close(pipefd[1]);
        ck_assert_int_eq(fds_settle(base), base);
        ck_assert_int_eq(settle(memfd_maps, 0), 0);
        ck_assert_uint_eq(status_of(&shared_daemon).inflight_bytes, 0);
        ck_assert(daemon_alive(&shared_daemon));
}

static void two_regions_and_a_sort(int sock)
{
        region a = region_make(8u << 20, F_SEAL_SHRINK), b = region_make(4096, F_SEAL_SHRINK);
        region_sort rs = {{.key_type = SORTD_KEY_U64}, 1u << 20, 0, 0, 0, 0};

        datagen_fill(a.p, 1u << 20, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 7);
        rs.keys_region = register_ok(sock, &a);
        register_ok(sock, &b);
        send_region_sort(sock, 10, &rs);
}

/* Killed with two regions and a sort in flight: no fd, mapping or byte stays behind. */
START_TEST(client_killed_with_regions)
{
        killed_after(two_regions_and_a_sort, fds_at_rest());
}
END_TEST

/* A region sort on the engine, a second waiting its turn, a registration whose open waits
   behind them, an unregister of a third region queued, an inline sort's payload half sent. */
static void everything_at_once(int sock)
{
        region a = region_make(8u << 20, F_SEAL_SHRINK), b = region_make(4096, F_SEAL_SHRINK),
               c = region_make(4096, F_SEAL_SHRINK);
        region_sort rs = {{.key_type = SORTD_KEY_U64}, 1u << 20, 0, 0, 0, 0};
        Sortd__Wire__Sort inl = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U64,
                                             SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 1u << 16);

        datagen_fill(a.p, 1u << 20, SORTD_KEY_U64, DATAGEN_UNIFORM, 0, 7);
        rs.keys_region = register_ok(sock, &a);
        register_ok(sock, &c);
        send_region_sort(sock, 10, &rs);
        send_region_sort(sock, 11, &rs);
        send_register(sock, 12, b.bytes, &b.fd, 1);
        send_unregister(sock, 13, c.id);
        raw_send_sort(sock, 14, &inl, 8u << 16);
        raw_send_zeros(sock, 4u << 16);
}

/* Killed with everything at once in the daemon: nothing stays behind (no fd, mapping, region
   or byte in flight), and each of its three sorts is counted once. */
START_TEST(client_killed_mid_everything)
{
        int base = fds_at_rest();
        sortd_server_status st0 = status_of(&shared_daemon), st;

        killed_after(everything_at_once, base);
        st = status_of(&shared_daemon);
        ck_assert_uint_eq(st.regions, 0);
        ck_assert_uint_eq(st.region_bytes, 0);
        ck_assert_uint_eq(st.queued, 0);
        ck_assert_uint_eq(st.sort_requests, st0.sort_requests + 3);
        ck_assert_uint_eq(accounted(&st) - accounted(&st0), 3);
}
END_TEST

/* With the engine busy, a small sort waits its turn there: the loop thread never sorts beside
   the engine thread, whose large sort it would slow. Region sorts of 2^20 u64 keys (the test
   daemon's capacity) keep the engine busy from the moment they are read. */
START_TEST(no_loop_sort_beside_the_engine)
{
        enum { BIG = 3, BN = 1u << 20 };
        int sock = raw_connect(shared_daemon.sock);
        region big = region_make((size_t)BN * 8, F_SEAL_SHRINK);
        region_sort rs = {{.key_type = SORTD_KEY_U64}, BN, 0, 0, 0, 0};
        uint64_t *keys = (uint64_t *)(void *)big.p;
        sortd_conn *c = client_open(&shared_daemon);
        sortd_server_status st0, st;
        uint32_t small[100];
        char why[256];

        rs.keys_region = register_ok(sock, &big);
        for (uint64_t i = 0; i < BN; i++)
                keys[i] = (BN - i) * 0x9e3779b97f4a7c15ull;
        for (int i = 0; i < BIG; i++)
                send_region_sort(sock, 10 + (uint64_t)i, &rs);
        /* Once one is on the engine and another waits behind it... */
        for (int k = 0; k < 5000 && status_of(&shared_daemon).queued == 0; k++)
                usleep(1000);
        st0 = status_of(&shared_daemon);
        ck_assert_uint_gt(st0.queued, 0);
        for (int i = 0; i < 100; i++)
                small[i] = 99u - (uint32_t)i;
        ck_assert_int_eq(sortd_sort(c, small, 100, SORTD_KEY_U32, NULL), SORTD_OK);
        st = status_of(&shared_daemon);
        for (int i = 0; i < 100; i++)
                ck_assert_uint_eq(small[i], (uint32_t)i);
        ck_assert_uint_eq(st.loop_sorts, st0.loop_sorts);
        for (int i = 0; i < BIG; i++)
                ck_assert_msg(recv_status(sock, 10 + (uint64_t)i, NULL, why, sizeof(why)) ==
                                      SORTD_OK,
                              "%s", why);
        for (size_t i = 1; i < BN; i++)
                ck_assert_uint_le(keys[i - 1], keys[i]);
        sortd_close(c);
        close(sock);
        region_free(&big);
}
END_TEST

/* A client pipelining small sorts, many in one read: one of them at most is sorted on the loop
   thread, and the rest go through the fair queue to the engine thread (one at a time: they are
   in one region), so that other clients' reads wait for one sort only. */
START_TEST(pipelined_small_sorts_queue)
{
        enum { COUNT = 32, N = 256 };
        int sock = raw_connect(shared_daemon.sock);
        region r = region_make(COUNT * N * 4, F_SEAL_SHRINK);
        uint32_t *keys = (uint32_t *)(void *)r.p;
        region_sort rs = {{.key_type = SORTD_KEY_U32}, N, 0, 0, 0, 0};
        uint8_t frames[COUNT * 128];
        size_t len = 0;
        sortd_server_status st0, st;
        char why[256];

        rs.keys_region = register_ok(sock, &r);
        for (uint32_t i = 0; i < COUNT * N; i++)
                keys[i] = (COUNT * N - i) * 2654435761u;
        for (int i = 0; i < COUNT; i++) {
                rs.keys_offset = (uint64_t)i * N * 4;
                len += pack_region_sort(100 + (uint64_t)i, &rs, frames + len, sizeof(frames) - len);
        }
        st0 = status_of(&shared_daemon);
        raw_send_bytes(sock, frames, len); /* one write: one read of the daemon's */
        for (int i = 0; i < COUNT; i++)
                ck_assert_msg(recv_status(sock, 100 + (uint64_t)i, NULL, why, sizeof(why)) ==
                                      SORTD_OK,
                              "%s", why);
        st = status_of(&shared_daemon);
        for (int i = 0; i < COUNT; i++)
                for (int k = 1; k < N; k++)
                        ck_assert_uint_le(keys[i * N + k - 1], keys[i * N + k]);
        ck_assert_uint_eq(st.sorts_ok - st0.sorts_ok, COUNT);
        ck_assert_uint_lt(st.loop_sorts - st0.loop_sorts, COUNT / 2);
        close(sock);
        region_free(&r);
}
END_TEST

enum { TURN_N = 1 << 16, TURN_PIECE = 4096 };

/* Sort op of region_sorts_take_turns' pipeline: the whole span, ascending and descending in
   turn; or, with pieces, each followed by a piece of the span in the other order. */
static region_sort turn_sort(int pieces, int op, uint64_t region_id)
{
        region_sort rs = {.d = {.key_type = SORTD_KEY_U32, .order = (sortd_order)(op % 2)},
                          .n = TURN_N,
                          .keys_region = region_id};

        if (pieces) {
                rs.d.order = (sortd_order)(op / 2 % 2 ^ op % 2);
                if (op % 2) {
                        rs.n = TURN_PIECE;
                        rs.keys_offset = (uint64_t)op * TURN_PIECE / 3 * 4;
                }
        }
        return rs;
}

/*
 * Pipelined sorts of one region's keys run one at a time, in the order they came: each sorts
 * what the one before it left, so the region ends as a copy does after the same sorts one
 * after another. _i 0: eight sorts of one 64K-key span (small enough to batch, which must not
 * take them together). _i 1: the span and 4K-key pieces of it in turn, with a CPU path taking
 * the pieces (and the loop thread some of them) while the engine thread has the span.
 */
START_TEST(region_sorts_take_turns)
{
        enum { SORTS = 8, ROUNDS = 8 };
        const char *path[] = {"--cpu-path-keys", "4096", NULL};
        daemon_proc own = {0}, *d = &shared_daemon;
        region r = region_make(TURN_N * 4, F_SEAL_SHRINK);
        uint32_t *model = xmalloc(TURN_N * 4);
        sortd_engine *e = local_engine();
        uint8_t frames[SORTS * 256];
        char why[256];
        int sock;

        if (_i) {
                daemon_start(&own, path);
                d = &own;
        }
        sock = raw_connect(d->sock);
        register_ok(sock, &r);
        for (int round = 0; round < ROUNDS; round++) {
                size_t len = 0;

                datagen_fill(model, TURN_N, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, (uint64_t)round);
                memcpy(r.p, model, TURN_N * 4);
                for (int op = 0; op < SORTS; op++) {
                        region_sort rs = turn_sort(_i, op, r.id);

                        len += pack_region_sort(100 + (uint64_t)op, &rs, frames + len,
                                                sizeof(frames) - len);
                        ck_assert_int_eq(
                                sortd_engine_sort(e, &rs.d, model + rs.keys_offset / 4, NULL, rs.n),
                                SORTD_OK);
                }
                raw_send_bytes(sock, frames, len); /* one write: the daemon has them all at once */
                for (int op = 0; op < SORTS; op++)
                        ck_assert_msg(recv_status(sock, 100 + (uint64_t)op, NULL, why,
                                                  sizeof(why)) == SORTD_OK,
                                      "%s", why);
                ck_assert_msg(memcmp(r.p, model, TURN_N * 4) == 0,
                              "round %d: the region is not what the sorts leave one after another",
                              round);
        }
        close(sock);
        if (_i)
                ck_assert_int_eq(daemon_stop(&own, SIGTERM), 0);
        sortd_engine_destroy(e);
        free(model);
        region_free(&r);
}
END_TEST

struct scribbler {
        uint32_t *keys;
        size_t n;
        _Atomic bool stop;
};

/* The client's other thread, writing the keys while the daemon sorts them. */
static void *scribble(void *arg)
{
        struct scribbler *s = arg;
        uint64_t x = 0x9e3779b97f4a7c15ull;

        while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                ((volatile uint32_t *)s->keys)[(x >> 20) % s->n] = (uint32_t)(x >> 32);
        }
        return NULL;
}

/*
 * A client that writes its region while the daemon sorts in it gets keys in some order, but
 * the daemon must neither crash nor write outside the region's sort: the indices it writes are
 * still a permutation, and it serves on. The daemon read the keys more than once, and a key
 * changed in between sent a pass out of its bins (a crash in small_sort or a binning pass).
 */
START_TEST(keys_written_during_the_sort)
{
        static const size_t sizes[] = {5000, 300007};
        size_t n = sizes[_i];
        sortd_conn *c = client_open(&shared_daemon);
        uint8_t *seen = xmalloc(n);
        sortd_region *r;

        ck_assert_int_eq(sortd_region_create(c, n * 8, &r), SORTD_OK);
        for (int round = 0; round < 10; round++) {
                uint32_t *keys = sortd_region_data(r), *idx = keys + n;
                sortd_region_sort rs = {.keys = r,
                                        .vals = r,
                                        .vals_offset = n * 4,
                                        .n = n,
                                        .key_type = SORTD_KEY_U32,
                                        .payload = SORTD_PAYLOAD_ARGSORT32};
                struct scribbler s = {.keys = keys, .n = n};
                pthread_t t;

                datagen_fill(keys, n, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, (uint64_t)round);
                atomic_init(&s.stop, false);
                ck_assert_int_eq(pthread_create(&t, NULL, scribble, &s), 0);
                ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s",
                              sortd_error_message(c));
                atomic_store(&s.stop, true);
                pthread_join(t, NULL);
                memset(seen, 0, n);
                for (size_t i = 0; i < n; i++) {
                        ck_assert_msg(idx[i] < n && !seen[idx[i]],
                                      "n = %zu, round %d: index %u at %zu out of range or twice", n,
                                      round, idx[i], i);
                        seen[idx[i]] = 1;
                }
        }
        ck_assert_int_eq(sortd_region_destroy(c, r), SORTD_OK);
        ck_assert_int_eq(sortd_ping(c), SORTD_OK);
        sortd_close(c);
        free(seen);
        ck_assert(daemon_alive(&shared_daemon));
}
END_TEST

/* Sorts of no keys, inline and in a region: answered, and counted as sorted like any other. */
START_TEST(empty_sorts_counted)
{
        int sock = raw_connect(shared_daemon.sock);
        region r = region_make(4096, F_SEAL_SHRINK);
        region_sort rs = {{.key_type = SORTD_KEY_U32}, 0, 0, 0, 0, 0};
        Sortd__Wire__Sort inl =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 0);
        sortd_server_status st0, st;
        char why[256];

        rs.keys_region = register_ok(sock, &r);
        st0 = status_of(&shared_daemon);
        raw_send_sort(sock, 5, &inl, 0);
        raw_expect_reply(sock, 5, SORTD_OK, NULL);
        ck_assert_msg(region_sort_call(sock, &rs, why, sizeof(why)) == SORTD_OK, "%s", why);
        st = status_of(&shared_daemon);
        ck_assert_uint_eq(st.sort_requests, st0.sort_requests + 2);
        ck_assert_uint_eq(st.sorts_ok, st0.sorts_ok + 2);
        ck_assert_uint_eq(accounted(&st) - accounted(&st0), 2);
        close(sock);
        region_free(&r);
}
END_TEST

/*
 * Sorts refused as protocol errors are sort requests too: one whose payload is not what n says,
 * and a region sort sent with a payload. Each is answered, counted as a failed sort (and a
 * protocol error), and the stream stays in sync.
 */
START_TEST(refused_sorts_counted)
{
        int sock = raw_connect(shared_daemon.sock);
        region r = region_make(4096, F_SEAL_SHRINK);
        Sortd__Wire__Sort inl = raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32,
                                             SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 100);
        Sortd__Wire__Sort rgs =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, 8);
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        sortd_server_status st0, st;

        rd.region_id = register_ok(sock, &r);
        rgs.data_case = SORTD__WIRE__SORT__DATA_REGION;
        rgs.region = &rd;
        st0 = status_of(&shared_daemon);
        raw_send_sort(sock, 5, &inl, 399);
        raw_send_zeros(sock, 399);
        raw_expect_reply(sock, 5, SORTD_E_INVAL, "payload of 399 bytes");
        raw_send_sort(sock, 6, &rgs, 40);
        raw_send_zeros(sock, 40);
        raw_expect_reply(sock, 6, SORTD_E_PROTOCOL, "a region sort takes no payload");
        raw_expect_in_sync(sock);
        st = status_of(&shared_daemon);
        ck_assert_uint_eq(st.sort_requests, st0.sort_requests + 2);
        ck_assert_uint_eq(st.protocol_errors, st0.protocol_errors + 2);
        ck_assert_uint_eq(st.sorts_failed, st0.sorts_failed + 2);
        ck_assert_uint_eq(accounted(&st) - accounted(&st0), 2);
        close(sock);
        region_free(&r);
}
END_TEST

/*
 * The daemon reads small frames ahead, several in one read. An fd belongs to the frame that
 * holds the last byte of the sendmsg it rode on: frames read ahead of a RegisterRegion leave
 * its fd to it, and a frame sent after it in the same sendmsg takes it from it.
 */
START_TEST(fds_with_frames_read_ahead)
{
        int sock = raw_connect(shared_daemon.sock), base;
        region good = region_make(4096, F_SEAL_SHRINK);
        Sortd__Wire__Request ping = SORTD__WIRE__REQUEST__INIT;
        uint8_t after[SORTD__WIRE_HEADER_SIZE + 64];
        size_t after_len;
        char why[256];

        raw_expect_in_sync(sock);
        base = fds_at_rest();
        for (uint64_t id = 10; id < 20; id++)
                raw_send_ping(sock, id);
        send_register(sock, 20, 4096, &good.fd, 1);
        for (uint64_t id = 10; id < 20; id++)
                expect_refusal(sock, id, SORTD_OK, "");
        ck_assert_msg(recv_status(sock, 20, &good.id, why, sizeof(why)) == SORTD_OK, "%s", why);
        ck_assert_int_eq(fds_settle(base), base); /* mapped, the fd closed */
        /* [RegisterRegion][Ping] in one sendmsg with an fd: the fd is the ping's. */
        ping.id = 22;
        ping.body_case = SORTD__WIRE__REQUEST__BODY_PING;
        ping.ping = &(Sortd__Wire__Ping)SORTD__WIRE__PING__INIT;
        after_len = raw_pack_request(&ping, 0, after, sizeof(after));
        {
                Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
                Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
                region other = region_make(4096, F_SEAL_SHRINK);

                reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__MEMFD;
                reg.size = 4096;
                req.id = 21;
                req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
                req.register_region = &reg;
                raw_send_request_fds_then(sock, &req, &other.fd, 1, after, after_len);
                region_free(&other);
        }
        expect_refusal(sock, 21, SORTD_E_INVAL, "came without its memfd");
        expect_refusal(sock, 22, SORTD_OK, "");
        expect_refusal(sock, 0, SORTD_E_PROTOCOL, "1 fd(s) came with a frame that takes none");
        ck_assert_int_eq(fds_settle(base), base);
        raw_expect_in_sync(sock);
        close(sock);
        ck_assert_int_eq(settle(memfd_maps, 0), 0);
        region_free(&good);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("regions");
        TCase *tc = tcase_create("regions");

        tcase_add_unchecked_fixture(tc, shared_start, shared_stop);
        tcase_set_timeout(tc, 60);
        tcase_add_loop_test(tc, matrix_in_place, 0, MATRIX_RUNS);
        tcase_add_test(tc, connections_isolated);
        tcase_add_test(tc, refusals_leave_no_fd);
        tcase_add_test(tc, unregister_waits_for_no_one);
        tcase_add_test(tc, client_killed_with_regions);
        tcase_add_test(tc, client_killed_mid_everything);
        tcase_add_test(tc, cuda_region_refused_on_cpu);
        tcase_add_test(tc, no_loop_sort_beside_the_engine);
        tcase_add_test(tc, fds_with_frames_read_ahead);
        tcase_add_test(tc, pipelined_small_sorts_queue);
        tcase_add_loop_test(tc, region_sorts_take_turns, 0, 2);
        tcase_add_test(tc, empty_sorts_counted);
        tcase_add_test(tc, refused_sorts_counted);
        tcase_add_loop_test(tc, keys_written_during_the_sort, 0, 2);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
