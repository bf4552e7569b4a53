/*
 * A device sort's phases in the daemon, as its reply's Timings give them: receiving the
 * request (transfer_ns), the hand-off to the engine thread (queued_ns), the engine call
 * (sort_ns, of which device_ns on the device) and the hand-back to the loop until the reply is
 * packed (reply_ns). They follow one another inside the request's round trip, so each lies
 * within it and so does their sum; the engine call and the hand-back between two threads take
 * some time, so neither is 0. The sort is a CUDA region's, on raw frames: libsortd's
 * sortd_timings has neither reply_ns nor device_ns.
 *
 * Built with CUDA against a GPU (exits 77 without one), and everywhere against the stand-in
 * runtime and sortd-emulated-cuda, as test_cuda_ipc is (CK_NOFORK for the same reason).
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "datagen.h"
#include "harness.h"
#include "cuda_check.h"

#define N 4096
#define ROUNDS 8

static struct {
        daemon_proc daemon;
        int fd;
        uint32_t *keys; /* device memory, N of them */
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
} g;

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void setup(void)
{
        /* A small capacity keeps the emulated daemon's self-check at start short. */
        const char *const extra[] = {"--engine", "cuda", "--capacity", "16K", NULL};

        cuda_shared_alloc(N * sizeof(uint32_t), (void **)&g.keys, g.handle, sizeof(g.handle),
                          g.uuid);
        daemon_start(&g.daemon, extra);
        g.fd = raw_connect(g.daemon.sock);
}

static void teardown(void)
{
        close(g.fd);
        ck_assert_int_eq(daemon_stop(&g.daemon, SIGTERM), 0);
        CUDA_OK(cudaFree(g.keys));
}

/* The keys' allocation as a CUDA region of the raw connection; its id. */
static uint64_t register_keys(void)
{
        Sortd__Wire__Request req = SORTD__WIRE__REQUEST__INIT;
        Sortd__Wire__RegisterRegion reg = SORTD__WIRE__REGISTER_REGION__INIT;
        Sortd__Wire__Reply *r;
        uint64_t id;

        reg.kind = SORTD__WIRE__REGISTER_REGION__KIND__CUDA_IPC;
        reg.size = N * sizeof(uint32_t);
        reg.cuda_ipc_handle = (ProtobufCBinaryData){sizeof(g.handle), g.handle};
        reg.device_uuid = (ProtobufCBinaryData){sizeof(g.uuid), g.uuid};
        req.id = 1;
        req.body_case = SORTD__WIRE__REQUEST__BODY_REGISTER_REGION;
        req.register_region = &reg;
        raw_send_request(g.fd, &req, 0);
        r = raw_recv_reply(g.fd, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "%s", r->error);
        id = r->register_region->region_id;
        sortd__wire__reply__free_unpacked(r, NULL);
        return id;
}

/* Each phase within the round trip (a wrapped difference is not), their sum too. */
static void check_phases(const Sortd__Wire__Timings *t, uint64_t total)
{
        const uint64_t phase[] = {t->transfer_ns, t->queued_ns, t->sort_ns, t->reply_ns};
        const char *const name[] = {"transfer", "queued", "sort", "reply"};
        uint64_t sum = 0;

        for (size_t i = 0; i < sizeof(phase) / sizeof(phase[0]); i++) {
                ck_assert_msg(phase[i] <= total, "%s_ns %llu past the round trip's %llu ns",
                              name[i], (unsigned long long)phase[i], (unsigned long long)total);
                sum += phase[i];
        }
        ck_assert_msg(sum <= total, "the phases' %llu ns past the round trip's %llu ns",
                      (unsigned long long)sum, (unsigned long long)total);
        ck_assert_msg(t->device_ns <= t->sort_ns, "device_ns %llu past sort_ns %llu",
                      (unsigned long long)t->device_ns, (unsigned long long)t->sort_ns);
        ck_assert_msg(t->sort_ns > 0, "no time in the engine call");
        ck_assert_msg(t->reply_ns > 0, "no time from the engine thread to the reply");
}

/* A region sort of the keys as request id; the round trip's ns, the reply's timings checked. */
static void sort_once(uint64_t region, uint64_t id)
{
        Sortd__Wire__Sort s =
                raw_sort_msg(SORTD__WIRE__KEY_TYPE__KEY_U32, SORTD__WIRE__PAYLOAD__PAYLOAD_NONE, N);
        Sortd__Wire__RegionData rd = SORTD__WIRE__REGION_DATA__INIT;
        const Sortd__Wire__Timings *t;
        Sortd__Wire__Reply *r;
        uint64_t t0, total;

        rd.region_id = region;
        s.data_case = SORTD__WIRE__SORT__DATA_REGION;
        s.region = &rd;
        t0 = now_ns();
        raw_send_sort(g.fd, id, &s, 0);
        r = raw_recv_reply(g.fd, NULL);
        total = now_ns() - t0;
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(r->status == SORTD__WIRE__STATUS_CODE__OK, "%s", r->error);
        ck_assert_uint_eq(r->id, id);
        ck_assert_int_eq(r->body_case, SORTD__WIRE__REPLY__BODY_SORT);
        ck_assert_ptr_nonnull(r->sort->timings);
        t = r->sort->timings;
        printf("request %llu: transfer %.1f us, queued %.1f us, sort %.1f us (device %.1f us), "
               "reply %.1f us; round trip %.1f us\n",
               (unsigned long long)id, t->transfer_ns / 1e3, t->queued_ns / 1e3, t->sort_ns / 1e3,
               t->device_ns / 1e3, t->reply_ns / 1e3, total / 1e3);
        check_phases(t, total);
        sortd__wire__reply__free_unpacked(r, NULL);
}

START_TEST(device_sort_phases)
{
        static uint32_t host[N];
        uint64_t region = register_keys();

        for (uint64_t i = 0; i < ROUNDS; i++) {
                datagen_fill(host, N, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 40 + i);
                CUDA_OK(cudaMemcpy(g.keys, host, sizeof(host), cudaMemcpyHostToDevice));
                CUDA_OK(cudaDeviceSynchronize());
                sort_once(region, 2 + i);
                CUDA_OK(cudaMemcpy(host, g.keys, sizeof(host), cudaMemcpyDeviceToHost));
                for (size_t k = 1; k < N; k++)
                        ck_assert_msg(host[k - 1] <= host[k], "round %llu: keys %zu and %zu",
                                      (unsigned long long)i, k - 1, k);
        }
}
END_TEST

static Suite *phases_suite(void)
{
        Suite *s = suite_create("device_phases");
        TCase *tc = tcase_create("device_phases");

        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, device_sort_phases);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        int rc = cuda_probe();

        return rc != 0 ? rc : run_suite_nofork(phases_suite());
}
