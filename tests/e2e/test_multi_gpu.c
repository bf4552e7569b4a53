/*
 * One daemon, every GPU: sortd-emulated-cuda on four fake devices (tests/support/fake_cuda),
 * the last of which computes wrong results, so that its self-check fails. Every result is
 * checked against the reference sort:
 *   - the start: three devices serve, two engines each; the fourth is left out, saying why;
 *   - spread: six clients' host sorts reach every serving device (Status counts them);
 *   - IPC routing: a CUDA region on device 1 is sorted on device 1; one on a device the daemon
 *     does not serve, or that failed its self-check, is refused naming it;
 *   - a sort that chooses its device runs there;
 *   - fairness: a client's single sort waits for about a sort per engine, not behind another
 *     client's pipeline of 64;
 *   - overlap: two clients' sorts on one device, in flight at once on its two engines;
 *   - loss under load: a device lost while every device has queued work: each reply is a
 *     correct result or an error that says the device was lost, none is missing, the other
 *     devices sort on, and nothing is left held.
 * The tests run in order on one daemon (its start self-checks three devices in the emulator),
 * the loss last.
 */
#include <check.h>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "datagen.h"
#include "harness.h"
#include "cuda_check.h"
#include "reference.h"

#define DEVICES 4
#define BAD_DEVICE 3
#define N 4096
#define CLIENTS 6
#define DEPTH 8

static daemon_proc g_daemon;
static char g_fault_file[64];
static uint8_t g_uuid[DEVICES][SORTD_DEVICE_UUID_BYTES];

/* Batches off: a batch is one engine call of many small sorts (at most batch-max-keys), and
   with them the fairness test would measure how many of its 4096-key sorts fit in one. */
static void start(void)
{
        const char *const extra[] = {"--engine",
                                     "cuda",
                                     "--capacity",
                                     "4K",
                                     "--cpu-path-keys",
                                     "0",
                                     "--loop-sort-keys",
                                     "0",
                                     "--batch-member-keys",
                                     "0",
                                     "--host-pool",
                                     "8M",
                                     NULL};
        char bad[8];

        snprintf(g_fault_file, sizeof(g_fault_file), "/tmp/sortd-multi-fault-%d", (int)getpid());
        unlink(g_fault_file);
        snprintf(bad, sizeof(bad), "%d", BAD_DEVICE);
        setenv("FAKE_CUDA_DEVICES", "4", 1);
        setenv("FAKE_CUDA_BAD_DEVICES", bad, 1);
        setenv("FAKE_CUDA_FAULT_FILE", g_fault_file, 1);
        for (int d = 0; d < DEVICES; d++) {
                struct cudaDeviceProp prop;

                CUDA_OK(cudaGetDeviceProperties(&prop, d));
                memcpy(g_uuid[d], prop.uuid.bytes, SORTD_DEVICE_UUID_BYTES);
        }
        daemon_start(&g_daemon, extra);
}

static void stop(void)
{
        ck_assert_int_eq(daemon_stop(&g_daemon, SIGTERM), 0);
        unlink(g_fault_file);
}

/* The status row of device d (by its UUID). */
static const sortd_device *row(const sortd_server_status *st, int d)
{
        for (unsigned i = 0; i < st->device_count; i++)
                if (memcmp(st->devices[i].uuid, g_uuid[d], SORTD_DEVICE_UUID_BYTES) == 0)
                        return &st->devices[i];
        ck_abort_msg("no status row for device %d", d);
        return NULL;
}

static uint64_t sorts_on(const sortd_server_status *st, int d)
{
        return row(st, d)->sorts;
}

/* N u32 keys of seed, and the reference's answer. */
static void keys_of(uint32_t *k, uint32_t *want, uint64_t seed)
{
        const sortd_sort_desc d = {.key_type = SORTD_KEY_U32, .payload = SORTD_PAYLOAD_NONE};

        datagen_fill(k, N, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        memcpy(want, k, N * 4);
        ck_assert_int_eq(ref_sort(&d, want, NULL, N), 0);
}

/* One inline sort on c, on device dev (-1: any), checked; its timings. */
static sortd_timings sort_one(sortd_conn *c, int dev, uint64_t seed)
{
        uint32_t *k = xmalloc(N * 4), *want = xmalloc(N * 4);
        sortd_request r = {.keys = k, .n = N, .key_type = SORTD_KEY_U32};

        keys_of(k, want, seed);
        if (dev >= 0)
                memcpy(r.device_uuid, g_uuid[dev], SORTD_DEVICE_UUID_BYTES);
        ck_assert_msg(sortd_sort_request(c, &r) == SORTD_OK, "%s", sortd_error_message(c));
        ck_assert_msg(memcmp(k, want, N * 4) == 0, "seed %llu: keys differ",
                      (unsigned long long)seed);
        free(k);
        free(want);
        return r.timings;
}

START_TEST(start_leaves_out_the_bad_device)
{
        sortd_server_status st = status_of(&g_daemon);
        char log[65536];

        ck_assert_uint_eq(st.device_count, DEVICES);
        for (int d = 0; d < DEVICES; d++) {
                const sortd_device *r = row(&st, d);

                if (d == BAD_DEVICE) {
                        ck_assert_int_eq(r->state, SORTD_DEVICE_FAILED);
                        ck_assert_uint_eq(r->capacity, 0);
                        ck_assert_msg(strstr(r->reason, "self-check"), "%s", r->reason);
                        continue;
                }
                ck_assert_msg(r->state == SORTD_DEVICE_SERVING, "device %d: %s", d, r->reason);
                ck_assert_uint_eq(r->streams, 2);
                ck_assert_uint_eq(r->capacity, 4096);
                ck_assert_uint_eq((unsigned)r->ordinal, (unsigned)d);
                ck_assert_msg(strstr(r->reason, "self-check passed"), "%s", r->reason);
                /* SORTD_TEST_SELFCHECK_CASES (meson.build) thins the sample to 24 cases. */
                if (getenv("SORTD_TEST_SELFCHECK_CASES"))
                        ck_assert_msg(strstr(r->reason, "passed: 24 sorts"), "%s", r->reason);
        }
        daemon_log(&g_daemon, log, sizeof(log));
        ck_assert_msg(strstr(log, "device 3 (") && strstr(log, "left out"), "%s", log);
}
END_TEST

/* Six clients pipeline host sorts: each serving device takes some; every result is right. */
START_TEST(host_sorts_spread)
{
        sortd_server_status before = status_of(&g_daemon), after;
        static uint32_t keys[CLIENTS][DEPTH][N], want[CLIENTS][DEPTH][N];
        sortd_request r[CLIENTS][DEPTH];
        sortd_conn *c[CLIENTS];

        for (int i = 0; i < CLIENTS; i++) {
                c[i] = client_open(&g_daemon);
                for (int j = 0; j < DEPTH; j++) {
                        keys_of(keys[i][j], want[i][j], (uint64_t)(i * DEPTH + j));
                        r[i][j] = (sortd_request){
                                .keys = keys[i][j], .n = N, .key_type = SORTD_KEY_U32};
                        ck_assert_int_eq(sortd_submit(c[i], &r[i][j]), SORTD_OK);
                }
        }
        for (int i = 0; i < CLIENTS; i++) {
                for (int j = 0; j < DEPTH; j++) {
                        ck_assert_msg(sortd_receive(c[i], &r[i][j]) == SORTD_OK, "%s",
                                      sortd_error_message(c[i]));
                        ck_assert_msg(memcmp(keys[i][j], want[i][j], N * 4) == 0,
                                      "client %d sort %d differs", i, j);
                }
                sortd_close(c[i]);
        }
        after = status_of(&g_daemon);
        for (int d = 0; d < DEVICES; d++) {
                if (d == BAD_DEVICE)
                        ck_assert_uint_eq(sorts_on(&after, d), 0);
                else
                        ck_assert_msg(sorts_on(&after, d) > sorts_on(&before, d),
                                      "device %d took none of %d sorts", d, CLIENTS * DEPTH);
        }
        ck_assert_uint_eq(after.queued, 0);
}
END_TEST

/* A CUDA region goes to its own device; one on a device not served is refused naming it. */
START_TEST(ipc_regions_routed)
{
        const sortd_sort_desc d = {.key_type = SORTD_KEY_U32, .payload = SORTD_PAYLOAD_NONE};
        static const uint8_t unknown[SORTD_DEVICE_UUID_BYTES] = {0x5e, 0x55};
        uint32_t *host = xmalloc(N * 4), *want = xmalloc(N * 4);
        sortd_conn *c = client_open(&g_daemon);
        sortd_server_status before, after;
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        cudaIpcMemHandle_t h;
        sortd_region *rg = NULL;
        sortd_region_sort rs;
        void *dev_keys;
        char text[SORTD_DEVICE_UUID_TEXT];

        CUDA_OK(cudaSetDevice(1));
        CUDA_OK(cudaMalloc(&dev_keys, N * 4));
        CUDA_OK(cudaIpcGetMemHandle(&h, dev_keys));
        memcpy(handle, &h, sizeof(handle));
        keys_of(host, want, 77);
        CUDA_OK(cudaMemcpy(dev_keys, host, N * 4, cudaMemcpyHostToDevice));

        before = status_of(&g_daemon);
        ck_assert_msg(sortd_region_register_cuda(c, handle, 0, N * 4, g_uuid[1], &rg) == SORTD_OK,
                      "%s", sortd_error_message(c));
        rs = (sortd_region_sort){.keys = rg, .n = N, .key_type = d.key_type};
        ck_assert_msg(sortd_sort_in_region(c, &rs) == SORTD_OK, "%s", sortd_error_message(c));
        after = status_of(&g_daemon);
        CUDA_OK(cudaMemcpy(host, dev_keys, N * 4, cudaMemcpyDeviceToHost));
        ck_assert(memcmp(host, want, N * 4) == 0);
        ck_assert_uint_eq(sorts_on(&after, 1), sorts_on(&before, 1) + 1);
        ck_assert_uint_eq(sorts_on(&after, 0), sorts_on(&before, 0));
        ck_assert_uint_eq(sorts_on(&after, 2), sorts_on(&before, 2));
        ck_assert_int_eq(sortd_region_destroy(c, rg), SORTD_OK);

        /* The same allocation named as on a device nobody serves, or on the one left out. */
        rg = NULL;
        ck_assert_int_eq(sortd_region_register_cuda(c, handle, 0, N * 4, unknown, &rg),
                         SORTD_E_INVAL);
        sortd_device_uuid_format(unknown, text);
        ck_assert_msg(strstr(sortd_error_message(c), text) &&
                              strstr(sortd_error_message(c), "does not serve"),
                      "%s", sortd_error_message(c));
        ck_assert_int_eq(sortd_region_register_cuda(c, handle, 0, N * 4, g_uuid[BAD_DEVICE], &rg),
                         SORTD_E_INVAL);
        ck_assert_ptr_null(rg);
        sortd_close(c);
        CUDA_OK(cudaFree(dev_keys));
        CUDA_OK(cudaSetDevice(0));
        free(host);
        free(want);
}
END_TEST

/* A sort that names its device runs there, and only there. */
START_TEST(chosen_device)
{
        sortd_conn *c = client_open(&g_daemon);
        sortd_server_status before = status_of(&g_daemon), after;

        for (int i = 0; i < 3; i++)
                sort_one(c, 2, 100 + (uint64_t)i);
        after = status_of(&g_daemon);
        ck_assert_uint_eq(sorts_on(&after, 2), sorts_on(&before, 2) + 3);
        ck_assert_uint_eq(sorts_on(&after, 0), sorts_on(&before, 0));
        ck_assert_uint_eq(sorts_on(&after, 1), sorts_on(&before, 1));
        sortd_close(c);
}
END_TEST

/*
 * One client pipelines 64 sorts, then another sends one: the fair queues give the second its
 * turn after about one sort per engine, so it waits (admitted to started, as the daemon
 * times it) a small part of what the pipeline's last sort waits. The emulator runs one kernel
 * at a time whatever the engines, so the wait is what shows the queues' order, not the time
 * to the reply.
 */
START_TEST(single_sort_not_behind_a_pipeline)
{
        enum { DEEP = 64 };
        static uint32_t keys[DEEP][N], want[DEEP][N];
        sortd_conn *deep = client_open(&g_daemon), *one = client_open(&g_daemon);
        sortd_request r[DEEP];
        sortd_timings single;
        uint64_t longest = 0;

        for (int j = 0; j < DEEP; j++) {
                keys_of(keys[j], want[j], 1000 + (uint64_t)j);
                r[j] = (sortd_request){.keys = keys[j], .n = N, .key_type = SORTD_KEY_U32};
                ck_assert_int_eq(sortd_submit(deep, &r[j]), SORTD_OK);
        }
        single = sort_one(one, -1, 2000);
        for (int j = 0; j < DEEP; j++) {
                ck_assert_msg(sortd_receive(deep, &r[j]) == SORTD_OK, "%s",
                              sortd_error_message(deep));
                ck_assert(memcmp(keys[j], want[j], N * 4) == 0);
                if (r[j].timings.queued_ns > longest)
                        longest = r[j].timings.queued_ns;
        }
        /* 64 sorts over 6 engines is about 11 rounds; the single one waits about one. */
        ck_assert_msg(single.queued_ns * 3 < longest,
                      "the single sort waited %llu us, the pipeline's longest wait %llu us",
                      (unsigned long long)(single.queued_ns / 1000),
                      (unsigned long long)(longest / 1000));
        sortd_close(deep);
        sortd_close(one);
}
END_TEST

/* Two clients' sorts on one device at once, on its two engines, pipelined so that either may
   finish first: every result is right. */
START_TEST(two_in_flight_on_one_device)
{
        enum { ROUNDS = 6 };
        static uint32_t keys[2][ROUNDS][N], want[2][ROUNDS][N];
        sortd_conn *c[2] = {client_open(&g_daemon), client_open(&g_daemon)};
        sortd_server_status before, after;
        sortd_request r[2][ROUNDS];
        struct timespec t0, t1;
        uint64_t wall_ns, busy_ns;

        for (int j = 0; j < ROUNDS; j++)
                for (int i = 0; i < 2; i++)
                        keys_of(keys[i][j], want[i][j], 3000 + (uint64_t)(i * ROUNDS + j));
        before = status_of(&g_daemon);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int j = 0; j < ROUNDS; j++) {
                for (int i = 0; i < 2; i++) {
                        r[i][j] = (sortd_request){
                                .keys = keys[i][j], .n = N, .key_type = SORTD_KEY_U32};
                        memcpy(r[i][j].device_uuid, g_uuid[0], SORTD_DEVICE_UUID_BYTES);
                        ck_assert_int_eq(sortd_submit(c[i], &r[i][j]), SORTD_OK);
                }
        }
        for (int j = 0; j < ROUNDS; j++) {
                for (int i = 0; i < 2; i++) {
                        ck_assert_msg(sortd_receive(c[1 - i], &r[1 - i][j]) == SORTD_OK, "%s",
                                      sortd_error_message(c[1 - i]));
                        ck_assert(memcmp(keys[1 - i][j], want[1 - i][j], N * 4) == 0);
                }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        after = status_of(&g_daemon);
        ck_assert_uint_eq(sorts_on(&after, 0), sorts_on(&before, 0) + 2 * ROUNDS);
        /* In flight together: the device's engines sorted for longer, added up, than the
           whole run took; one at a time they could not have. */
        wall_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
                  (uint64_t)t0.tv_nsec;
        busy_ns = row(&after, 0)->busy_ns - row(&before, 0)->busy_ns;
        ck_assert_msg(busy_ns * 10 > wall_ns * 12, "busy %llu us in %llu us",
                      (unsigned long long)(busy_ns / 1000), (unsigned long long)(wall_ns / 1000));
        sortd_close(c[0]);
        sortd_close(c[1]);
}
END_TEST

/* Whether why says a device was lost (its sort failed with it, or was left without one). */
static bool says_lost(const char *why)
{
        return strstr(why, "lost") || strstr(why, "illegal memory access");
}

/*
 * Device 1 faults while every device has sorts queued: every reply is a right result or an
 * error that says so, devices 0 and 2 sort on, device 1 is lost in Status with its reason, and
 * nothing is left queued or held.
 */
START_TEST(device_lost_under_load)
{
        static uint32_t keys[CLIENTS][DEPTH][N], want[CLIENTS][DEPTH][N];
        sortd_request r[CLIENTS][DEPTH];
        sortd_conn *c[CLIENTS];
        sortd_server_status st;
        unsigned ok = 0, failed = 0;
        int fds = daemon_fd_count(&g_daemon);
        FILE *f;

        for (int i = 0; i < CLIENTS; i++) {
                c[i] = client_open(&g_daemon);
                for (int j = 0; j < DEPTH; j++) {
                        keys_of(keys[i][j], want[i][j], 5000 + (uint64_t)(i * DEPTH + j));
                        r[i][j] = (sortd_request){
                                .keys = keys[i][j], .n = N, .key_type = SORTD_KEY_U32};
                        ck_assert_int_eq(sortd_submit(c[i], &r[i][j]), SORTD_OK);
                }
                if (i == 1) { /* queued work on every device by now: device 1 faults */
                        char tmp[sizeof(g_fault_file) + 4];

                        /* Renamed into place: a launch that read the file empty, between a
                           truncation and the write, would fault every device. */
                        snprintf(tmp, sizeof(tmp), "%s.new", g_fault_file);
                        f = fopen(tmp, "w");
                        ck_assert_ptr_nonnull(f);
                        fputs("1\n", f);
                        ck_assert_int_eq(fclose(f), 0);
                        ck_assert_int_eq(rename(tmp, g_fault_file), 0);
                }
        }
        for (int i = 0; i < CLIENTS; i++) {
                for (int j = 0; j < DEPTH; j++) {
                        if (sortd_receive(c[i], &r[i][j]) == SORTD_OK) {
                                ck_assert_msg(memcmp(keys[i][j], want[i][j], N * 4) == 0,
                                              "client %d sort %d differs", i, j);
                                ok++;
                        } else {
                                ck_assert_msg(says_lost(sortd_error_message(c[i])), "%s",
                                              sortd_error_message(c[i]));
                                failed++;
                        }
                }
        }
        ck_assert_uint_eq(ok + failed, CLIENTS * DEPTH);
        ck_assert_uint_lt(failed, CLIENTS * DEPTH / 2);
        st = status_of(&g_daemon);
        ck_assert_int_eq(row(&st, 1)->state, SORTD_DEVICE_LOST);
        ck_assert_msg(strstr(row(&st, 1)->reason, "lost its device"), "%s", row(&st, 1)->reason);
        ck_assert_int_eq(row(&st, 0)->state, SORTD_DEVICE_SERVING);
        ck_assert_int_eq(row(&st, 2)->state, SORTD_DEVICE_SERVING);
        ck_assert_uint_eq(st.engines_lost, 1);
        /* The others go on, for every client. */
        for (int i = 0; i < CLIENTS; i++) {
                sort_one(c[i], -1, 9000 + (uint64_t)i);
                sortd_close(c[i]);
        }
        /* A sort for the lost device is refused, naming it. */
        c[0] = client_open(&g_daemon);
        {
                uint32_t k[4] = {3, 1, 2, 0};
                sortd_request q = {.keys = k, .n = 4, .key_type = SORTD_KEY_U32};

                memcpy(q.device_uuid, g_uuid[1], SORTD_DEVICE_UUID_BYTES);
                ck_assert_int_eq(sortd_sort_request(c[0], &q), SORTD_E_INVAL);
        }
        sortd_close(c[0]);
        st = status_of(&g_daemon);
        ck_assert_uint_eq(st.queued, 0);
        ck_assert_uint_eq(st.inflight_bytes, 0);
        ck_assert_uint_eq(st.host_pool_used, 0);
        /* The last connection's close may still be on its way to the daemon. */
        for (int tries = 0; daemon_fd_count(&g_daemon) > fds && tries < 100; tries++)
                usleep(20000);
        ck_assert_int_le(daemon_fd_count(&g_daemon), fds);
}
END_TEST

/* sortd with args, on the socket of a fresh directory, to its end: its exit status and, in
   err, what it wrote. */
static int run_sortd(const char *const *args, char *err, size_t len)
{
        const char *argv[32] = {getenv("SORTD_BIN"), "--socket", "/tmp/sortd-multi-never.sock"};
        int n = 3, status, fd[2];
        size_t got = 0;
        ssize_t r;
        pid_t pid;

        for (; *args; args++)
                argv[n++] = *args;
        ck_assert_int_eq(pipe(fd), 0);
        pid = fork();
        if (pid == 0) {
                dup2(fd[1], 2);
                execv(argv[0], (char *const *)argv);
                _exit(127);
        }
        close(fd[1]);
        while (got + 1 < len && (r = read(fd[0], err + got, len - 1 - got)) > 0)
                got += (size_t)r;
        err[got] = '\0';
        close(fd[0]);
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A devices setting that names no device, or one device twice, stops the start with exit 2
   and says which entry; the daemon never serves. */
START_TEST(bad_devices_refused)
{
        static const struct {
                const char *devices, *words;
        } cases[] = {
                {"5", "no CUDA device 5 (3 visible)"},
                {"0,GPU-73696d74-2d66-616b-652d-637564613031", "name the same device"},
                {"GPU-ffff", "no visible CUDA device is GPU-ffff"},
                {"1,1", "'1' is named twice"},
                {"", "devices is empty"},
        };
        char err[4096];

        setenv("FAKE_CUDA_DEVICES", "3", 1);
        unsetenv("FAKE_CUDA_BAD_DEVICES");
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *args[] = {"--engine", "cuda", "--devices", cases[i].devices, NULL};
                int code = run_sortd(args, err, sizeof(err));

                ck_assert_msg(code == 2 && strstr(err, cases[i].words),
                              "devices '%s': exit %d, '%s' not in: %s", cases[i].devices, code,
                              cases[i].words, err);
        }
}
END_TEST

/* A sysfs of two NUMA nodes, physical device 0 (PCI bus 01) on node 1, whose CPU is CPU 0. */
static void two_node_sysfs(char *root)
{
        static const char *const files[][2] = {
                {"devices/system/node/online", "0-1"},
                {"devices/system/node/node1/cpulist", "0"},
                {"bus/pci/devices/0000:01:00.0/numa_node", "1"},
        };
        char cmd[512];

        strcpy(root, "/tmp/sortd-sysfs-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(root));
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname %s/%s)\" && echo %s > %s/%s", root,
                         files[i][0], files[i][1], root, files[i][0]);
                ck_assert_int_eq(system(cmd), 0);
        }
}

/* How many of pid's threads may run only on CPU 0. */
static int threads_on_cpu0(pid_t pid)
{
        char cmd[160], out[32] = "";
        FILE *p;

        snprintf(cmd, sizeof(cmd),
                 "grep -h '^Cpus_allowed_list:' /proc/%d/task/*/status | grep -cw '0$'", (int)pid);
        p = popen(cmd, "r");
        ck_assert_ptr_nonnull(p);
        if (!fgets(out, sizeof(out), p))
                out[0] = '\0';
        pclose(p);
        return atoi(out);
}

/* CUDA_VISIBLE_DEVICES as the driver applies it: the daemon's ordinal 1 is physical device 0
   when only 2 and 0 are visible, and it serves that one alone; capacity=auto sizes its engine
   from its free memory (64 KiB: half of it at 32 bytes a key); on a two-node machine its
   engine thread runs on its node's CPUs. */
START_TEST(visible_devices_honoured)
{
        const char *const extra[] = {
                "--engine",   "cuda", "--devices",       "1", "--device-streams", "1",
                "--capacity", "auto", "--cpu-path-keys", "0", "--log-level",      "info",
                NULL};
        daemon_proc d = {0};
        sortd_server_status st;
        cudaUUID_t want;
        char sysfs[64], log[16384], cmd[128];

        setenv("FAKE_CUDA_DEVICES", "3", 1);
        unsetenv("FAKE_CUDA_BAD_DEVICES");
        setenv("CUDA_VISIBLE_DEVICES", "2,0", 1);
        setenv("FAKE_CUDA_DEVICE_MEMORY", "65536", 1);
        two_node_sysfs(sysfs);
        setenv("SORTD_TEST_SYSFS", sysfs, 1);
        daemon_start(&d, extra);
        unsetenv("CUDA_VISIBLE_DEVICES");
        unsetenv("FAKE_CUDA_DEVICE_MEMORY");
        unsetenv("SORTD_TEST_SYSFS");
        st = status_of(&d);
        ck_assert_uint_eq(st.device_count, 1);
        ck_assert_uint_eq(st.devices[0].ordinal, 1);
        ck_assert_int_eq(st.devices[0].state, SORTD_DEVICE_SERVING);
        ck_assert_uint_eq(st.devices[0].streams, 1);
        ck_assert_uint_eq(st.devices[0].capacity, 1024);
        ck_assert_uint_eq(st.capacity, 1024);
        ck_assert_int_eq(st.devices[0].numa_node, 1);
        daemon_log(&d, log, sizeof(log));
        ck_assert_msg(strstr(log, "device 1 is on NUMA node 1 of 2: its engines on CPUs 0"), "%s",
                      log);
        ck_assert_int_ge(threads_on_cpu0(d.pid), 1); /* its engine thread at least */
        snprintf(cmd, sizeof(cmd), "rm -rf %s", sysfs);
        ck_assert_int_eq(system(cmd), 0);
        memcpy(want.bytes, "simt-fake-cuda01", 16); /* physical device 0 */
        ck_assert_mem_eq(st.devices[0].uuid, want.bytes, 16);
        ck_assert_int_eq(daemon_stop(&d, SIGTERM), 0);
}
END_TEST

static Suite *multi_gpu_suite(void)
{
        Suite *s = suite_create("multi_gpu");
        TCase *tc = tcase_create("four devices"), *starts = tcase_create("starts");

        tcase_set_timeout(tc, 600);
        tcase_add_unchecked_fixture(tc, start, stop);
        tcase_add_test(tc, start_leaves_out_the_bad_device);
        tcase_add_test(tc, host_sorts_spread);
        tcase_add_test(tc, ipc_regions_routed);
        tcase_add_test(tc, chosen_device);
        tcase_add_test(tc, single_sort_not_behind_a_pipeline);
        tcase_add_test(tc, two_in_flight_on_one_device);
        tcase_add_test(tc, device_lost_under_load);
        suite_add_tcase(s, tc);
        tcase_set_timeout(starts, 300);
        tcase_add_test(starts, bad_devices_refused);
        tcase_add_test(starts, visible_devices_honoured);
        suite_add_tcase(s, starts);
        return s;
}

int main(void)
{
        return run_suite(multi_gpu_suite());
}
