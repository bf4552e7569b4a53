/*
 * A server of several GPUs, without one: the stand-in CUDA runtime (tests/support/fake_cuda)
 * with three devices, under the engine library's device list (sortd_devices_list) and the
 * emulated cuda engine. What a daemon with one engine per device relies on: every device listed
 * with its own identity, CUDA_VISIBLE_DEVICES applied as the driver does, an engine on device k
 * doing all its work there, engines on different devices sorting at once from their own threads,
 * and one device lost or computing wrongly while the others work on.
 *
 * meson runs the binary with FAKE_CUDA_DEVICES=3; a case that needs other devices sets the
 * environment and calls fake_cuda::reset_devices(). Every sort is checked against the CPU
 * engine. One Check case per area (CK_RUN_CASE), so meson runs them side by side; sizes are
 * small, as the emulator is slow.
 */
#include "simt.h" /* first: the kernels compile against it */

#include "cuda_runtime.h" /* tests/support/fake_cuda */

#include <check.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "datagen.h"
#include "engine.h"
extern "C" {
#include "suite.h"
}

namespace
{

constexpr size_t CAPACITY = 4096;
constexpr size_t GIB = (size_t)1 << 30;

sortd_engine *engine(const char *kind, int device, size_t capacity = CAPACITY)
{
        sortd_engine_config cfg{};
        sortd_engine *e = nullptr;
        char why[256] = "";

        cfg.capacity = capacity;
        cfg.threads = 2;
        cfg.device = device;
        ck_assert_msg(sortd_engine_create(kind, &cfg, &e, why, sizeof(why)) == SORTD_OK,
                      "%s engine on device %d: %s", kind, device, why);
        return e;
}

/* The devices the library lists now, at most 8. */
std::vector<sortd_device_info> listed()
{
        std::vector<sortd_device_info> d(8);
        size_t count = 99;
        char why[256] = "";

        ck_assert_msg(sortd_devices_list(d.data(), d.size(), &count, why, sizeof(why)) == SORTD_OK,
                      "sortd_devices_list: %s", why);
        ck_assert_uint_le(count, d.size());
        d.resize(count);
        return d;
}

/* The environment a process starts with, then the runtime reads it again. */
void devices_env(const char *devices, const char *visible)
{
        setenv("FAKE_CUDA_DEVICES", devices, 1);
        if (visible)
                setenv("CUDA_VISIBLE_DEVICES", visible, 1);
        else
                unsetenv("CUDA_VISIBLE_DEVICES");
        fake_cuda::reset_devices();
}

bool same_uuid(const uint8_t *u, int physical)
{
        return memcmp(u, fake_cuda::device_uuid(physical).bytes, SORTD_DEVICE_UUID_BYTES) == 0;
}

std::string upper(std::string s)
{
        for (char &c : s)
                c = (char)toupper((unsigned char)c);
        return s;
}

/* The physical devices the listed ones are, in order ("2,0"). */
std::string physicals(const std::vector<sortd_device_info> &d)
{
        std::string s;

        for (const sortd_device_info &i : d) {
                int k = -1;

                for (int p = 0; p < 8 && k < 0; p++)
                        if (same_uuid(i.uuid, p))
                                k = p;
                s += (s.empty() ? "" : ",") + std::to_string(k);
        }
        return s;
}

/* Sorts n keys (with 32-bit values) of seed on e and on the CPU engine; "" when they agree,
   else what differs. Safe off the test's thread: it asserts nothing. */
std::string sorts_like_cpu(sortd_engine *e, sortd_engine *cpu, size_t n, uint64_t seed,
                           sortd_key_type type = SORTD_KEY_U32)
{
        sortd_sort_desc d = {type, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0};
        const size_t kb = sortd_key_size(type);
        std::vector<unsigned char> k(n * kb + 1), want_k(n * kb + 1);
        std::vector<uint32_t> v(n + 1), want_v(n + 1);

        datagen_fill(k.data(), n, type, DATAGEN_UNIFORM, 0, seed);
        datagen_fill_values(v.data(), n, 4, seed + 1);
        want_k = k;
        want_v = v;
        if (sortd_engine_sort(cpu, &d, want_k.data(), want_v.data(), n) != SORTD_OK)
                return std::string("cpu: ") + sortd_engine_error(cpu);
        if (sortd_engine_sort(e, &d, k.data(), v.data(), n) != SORTD_OK)
                return sortd_engine_error(e);
        if (memcmp(k.data(), want_k.data(), n * kb) != 0 || memcmp(v.data(), want_v.data(), n * 4))
                return "the result differs from the cpu engine's";
        return "";
}

void expect_sorts(sortd_engine *e, sortd_engine *cpu, size_t n, uint64_t seed)
{
        std::string r = sorts_like_cpu(e, cpu, n, seed);

        ck_assert_msg(r.empty(), "%s (n=%zu, seed=%llu)", r.c_str(), n, (unsigned long long)seed);
}

/* The device cudaPointerGetAttributes names for p. */
int device_of(const void *p)
{
        cudaPointerAttributes a;

        ck_assert_int_eq(cudaPointerGetAttributes(&a, p), cudaSuccess);
        ck_assert_int_ne(a.type, cudaMemoryTypeUnregistered);
        return a.device;
}

/* Bytes allocated on physical device k, as its context tells. */
size_t used_on(int visible)
{
        size_t free_bytes = 0, total = 0;
        int was = 0;

        ck_assert_int_eq(cudaGetDevice(&was), cudaSuccess);
        ck_assert_int_eq(cudaSetDevice(visible), cudaSuccess);
        ck_assert_int_eq(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
        ck_assert_int_eq(cudaSetDevice(was), cudaSuccess);
        return total - free_bytes;
}

/* Three devices, each its own: UUID, name, PCI address and memory; and what the list leaves as
   it was. */
START_TEST(list)
{
        /* meson's FAKE_CUDA_DEVICES=3, read at the runtime's first call */
        ck_assert_int_eq(fake_cuda::control().devices, 3);
        setenv("FAKE_CUDA_DEVICE_MEMORY", "1073741824,2147483648,536870912", 1);
        devices_env("3", nullptr);

        std::vector<sortd_device_info> d = listed();
        const size_t totals[] = {GIB, 2 * GIB, GIB / 2};
        std::set<std::string> names, buses, uuids;

        ck_assert_uint_eq(d.size(), 3);
        for (int k = 0; k < 3; k++) {
                char bus[32];

                snprintf(bus, sizeof(bus), "0000:%02x:00.0", k + 1);
                ck_assert_int_eq(d[k].ordinal, k);
                ck_assert_msg(same_uuid(d[k].uuid, k), "device %d's UUID", k);
                ck_assert_str_eq(d[k].pci_bus_id, bus);
                ck_assert_uint_eq(d[k].total_bytes, totals[k]);
                ck_assert_uint_eq(d[k].free_bytes, totals[k]);
                ck_assert_int_eq(d[k].major, 9);
                ck_assert_int_eq(d[k].minor, 0);
                names.insert(d[k].name);
                buses.insert(d[k].pci_bus_id);
                uuids.insert(std::string((const char *)d[k].uuid, SORTD_DEVICE_UUID_BYTES));
        }
        ck_assert_uint_eq(names.size(), 3);
        ck_assert_uint_eq(buses.size(), 3);
        ck_assert_uint_eq(uuids.size(), 3);
        ck_assert_int_eq(memcmp(d[0].uuid, fake_cuda::fake_device_uuid.bytes, 16), 0);
        ck_assert_int_eq(memcmp(d[2].uuid, "simt-fake-cuda03", 16), 0);
        const std::string text = fake_cuda::device_uuid_text(1);

        ck_assert_str_eq(text.c_str(), "GPU-73696d74-2d66-616b-652d-637564613032");

        /* Counting alone, and fewer rows than devices; the arguments it refuses. */
        size_t count = 0;
        sortd_device_info one[1];
        char why[256] = "";

        ck_assert_int_eq(sortd_devices_list(nullptr, 0, &count, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(count, 3);
        count = 0;
        ck_assert_int_eq(sortd_devices_list(one, 1, &count, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(count, 3);
        ck_assert_msg(same_uuid(one[0].uuid, 0), "the first row is device 0");
        ck_assert_int_eq(sortd_devices_list(nullptr, 1, &count, why, sizeof(why)), SORTD_E_INVAL);
        ck_assert_int_eq(sortd_devices_list(one, 1, nullptr, why, sizeof(why)), SORTD_E_INVAL);

        /* The caller's current device survives the list; an engine's memory shows on its device
           alone. */
        sortd_engine *e = engine("cuda", 1);
        int current = -1;

        ck_assert_int_eq(cudaSetDevice(2), cudaSuccess);
        d = listed();
        ck_assert_int_eq(cudaGetDevice(&current), cudaSuccess);
        ck_assert_int_eq(current, 2);
        ck_assert_uint_eq(d[0].free_bytes, d[0].total_bytes);
        ck_assert_uint_lt(d[1].free_bytes, d[1].total_bytes);
        ck_assert_uint_eq(d[2].free_bytes, d[2].total_bytes);
        sortd_engine_destroy(e);
        d = listed();
        ck_assert_uint_eq(d[1].free_bytes, d[1].total_bytes);

        /* A device's memory is all it has. */
        void *p = nullptr;

        ck_assert_int_eq(cudaSetDevice(2), cudaSuccess);
        ck_assert_int_eq(cudaMalloc(&p, GIB / 2 + 1), cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        ck_assert_int_eq(cudaMalloc(&p, GIB / 2), cudaSuccess);
        ck_assert_uint_eq(listed()[2].free_bytes, 0);
        ck_assert_int_eq(cudaFree(p), cudaSuccess);

        /* No device: nothing listed, and no error. */
        devices_env("0", nullptr);
        count = 99;
        ck_assert_int_eq(sortd_devices_list(one, 1, &count, why, sizeof(why)), SORTD_OK);
        ck_assert_uint_eq(count, 0);
        unsetenv("FAKE_CUDA_DEVICE_MEMORY");
}
END_TEST

/* CUDA_VISIBLE_DEVICES: by ordinal, reordered, by UUID and its unique prefix, and up to its
   first entry that names no device. */
START_TEST(visible)
{
        const std::string uuid1 = fake_cuda::device_uuid_text(1),
                          uuid2 = fake_cuda::device_uuid_text(2);
        const struct {
                std::string visible;
                const char *physical;
        } cases[] = {
                {"0,1,2", "0,1,2"},
                {"2,0", "2,0"},
                {"1", "1"},
                {" 2 , 1", "2,1"},
                {uuid2 + "," + uuid1, "2,1"},
                {"0," + uuid2, "0,2"},
                /* in capitals, as a user may write it; a prefix that two devices share names
                   none (these three differ in their last digit alone) */
                {upper(uuid1), "1"},
                {"GPU-73696D74-2D66", ""},
                {uuid1.substr(0, uuid1.size() - 1), ""},
                {"0," + uuid1.substr(0, 12), "0"},
                {"1,7,2", "1"},
                {"2,0,2,1", "2,0"},
                {"1,,2", "1"},
                {"1,GPU-ffff,0", "1"},
                {"1,x,0", "1"},
                {"3", ""},
                {"", ""},
        };

        for (const auto &c : cases) {
                devices_env("3", c.visible.c_str());
                std::string got = physicals(listed());
                ck_assert_msg(got == c.physical, "CUDA_VISIBLE_DEVICES=\"%s\": devices %s, not %s",
                              c.visible.c_str(), got.c_str(), c.physical);
        }

        /* An engine takes the visible ordinal: device 1 of "2,0" is physical 0. */
        devices_env("3", "2,0");
        std::vector<sortd_device_info> d = listed();
        sortd_engine *e = engine("cuda", 1);
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];

        ck_assert_int_eq(d[1].ordinal, 1);
        ck_assert_int_eq(sortd_engine_device_uuid(e, uuid), SORTD_OK);
        ck_assert_msg(same_uuid(uuid, 0), "the engine on visible device 1 is physical 0");
        sortd_engine_destroy(e);

        sortd_engine_config cfg{};
        char why[256] = "";

        cfg.capacity = CAPACITY;
        cfg.device = 2;
        ck_assert_int_eq(sortd_engine_create("cuda", &cfg, &e, why, sizeof(why)), SORTD_E_NODEV);
        ck_assert_msg(strstr(why, "no CUDA device 2 (2 present)"), "%s", why);
}
END_TEST

/* An engine made on device 1 does all its work there, whatever device its caller's thread has
   current: memory, launches (on a stream of device 1, refused elsewhere), pinned and registered
   host memory, IPC handles it opens, and its UUID. */
START_TEST(engine_on_1)
{
        devices_env("3", nullptr);
        sortd_engine *cpu = engine("cpu", 0), *e = engine("cuda", 1);
        uint8_t uuid[SORTD_DEVICE_UUID_BYTES];

        ck_assert_msg(strstr(sortd_engine_device(e), "SIMT emulator 1 (sm_90"), "%s",
                      sortd_engine_device(e));
        ck_assert_int_eq(sortd_engine_device_uuid(e, uuid), SORTD_OK);
        ck_assert_msg(same_uuid(uuid, 1), "device 1's UUID");
        ck_assert_uint_eq(used_on(0), 0);
        ck_assert_uint_gt(used_on(1), 0);
        ck_assert_uint_eq(used_on(2), 0);

        for (int caller : {0, 2, 1}) {
                ck_assert_int_eq(cudaSetDevice(caller), cudaSuccess);
                expect_sorts(e, cpu, 3001, 40 + (uint64_t)caller);
        }

        void *pinned = nullptr, *reg = aligned_alloc(4096, 8192);

        ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
        ck_assert_int_eq(sortd_engine_host_alloc(e, 4096, &pinned), SORTD_OK);
        ck_assert_int_eq(device_of(pinned), 1);
        ck_assert_int_eq(sortd_engine_host_register(e, reg, 8192), SORTD_OK);
        ck_assert_int_eq(device_of(reg), 1);
        ck_assert_int_eq(sortd_engine_host_unregister(e, reg), SORTD_OK);
        sortd_engine_host_free(e, pinned, 4096);
        free(reg);

        /* A handle from another process, opened while the caller has device 2 current. */
        int to_parent[2], to_child[2];
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        void *base = nullptr;
        size_t size = 0;
        char done = 0;

        ck_assert_int_eq(pipe(to_parent), 0);
        ck_assert_int_eq(pipe(to_child), 0);
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                void *mem = nullptr;
                cudaIpcMemHandle_t h;

                if (cudaMalloc(&mem, 4096) != cudaSuccess ||
                    cudaIpcGetMemHandle(&h, mem) != cudaSuccess ||
                    write(to_parent[1], &h, sizeof(h)) != (ssize_t)sizeof(h) ||
                    read(to_child[0], &done, 1) != 1)
                        _exit(1);
                _exit(0);
        }
        ck_assert_int_eq(read(to_parent[0], handle, sizeof(handle)), (ssize_t)sizeof(handle));
        ck_assert_int_eq(cudaSetDevice(2), cudaSuccess);
        ck_assert_int_eq(sortd_engine_ipc_open(e, handle, &base, &size), SORTD_OK);
        ck_assert_int_eq(device_of(base), 1);
        ck_assert_int_eq(sortd_engine_ipc_close(e, base), SORTD_OK);
        ck_assert_int_eq(write(to_child[1], &done, 1), 1);
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);

        ck_assert(!sortd_engine_lost(e));
        sortd_engine_destroy(e);
        ck_assert_uint_eq(used_on(1), 0);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Engines on devices 0, 1 and 2 sort at once, each from a thread of its own, as a daemon's
   workers do; every result against the CPU engine. */
START_TEST(concurrent)
{
        devices_env("3", nullptr);
        sortd_engine *cuda[3], *cpu[3];
        std::string failed[3];
        std::vector<std::thread> threads;

        for (int k = 0; k < 3; k++) {
                cuda[k] = engine("cuda", k);
                cpu[k] = engine("cpu", 0);
        }
        ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
        for (int k = 0; k < 3; k++)
                threads.emplace_back([&, k] {
                        const sortd_key_type types[] = {SORTD_KEY_U32, SORTD_KEY_F64,
                                                        SORTD_KEY_I16};

                        for (unsigned round = 0; round < 3 && failed[k].empty(); round++) {
                                size_t n = 1500 + 700 * (size_t)k + 333 * round;
                                std::string r = sorts_like_cpu(cuda[k], cpu[k], n,
                                                               100 * (uint64_t)k + round,
                                                               types[(k + round) % 3]);

                                if (!r.empty())
                                        failed[k] = "round " + std::to_string(round) + ": " + r;
                        }
                });
        for (std::thread &t : threads)
                t.join();
        for (int k = 0; k < 3; k++) {
                ck_assert_msg(failed[k].empty(), "device %d: %s", k, failed[k].c_str());
                ck_assert(!sortd_engine_lost(cuda[k]));
                sortd_engine_destroy(cuda[k]);
                sortd_engine_destroy(cpu[k]);
        }
        ck_assert_uint_gt(fake_cuda::control().launches, 0);
}
END_TEST

/* A fault file that names device 1 loses the engine there, and device 1 with it; device 0's
   engine sorts on. An empty fault file faults every device, as it always did. */
START_TEST(fault_file)
{
        char path[] = "/tmp/fake-cuda-fault-XXXXXX";
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, " 1\n", 3), 3);
        close(fd);
        setenv("FAKE_CUDA_FAULT_FILE", path, 1);
        devices_env("3", nullptr);
        sortd_engine *cpu = engine("cpu", 0), *e0 = engine("cuda", 0), *e1 = engine("cuda", 1);

        expect_sorts(e0, cpu, 2000, 1);
        std::string r = sorts_like_cpu(e1, cpu, 2000, 2);
        ck_assert_msg(r.find("illegal memory access") != std::string::npos, "device 1: %s",
                      r.c_str());
        ck_assert(sortd_engine_lost(e1));
        ck_assert(!sortd_engine_lost(e0));
        expect_sorts(e0, cpu, 2500, 3);
        ck_assert_int_eq(cudaSetDevice(1), cudaErrorIllegalAddress);
        ck_assert_int_eq(cudaSetDevice(0), cudaSuccess);
        ck_assert(!sortd_engine_lost(e0));

        /* Empty: every device faults. */
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fclose(f);
        r = sorts_like_cpu(e0, cpu, 2000, 4);
        ck_assert_msg(r.find("illegal memory access") != std::string::npos, "device 0: %s",
                      r.c_str());
        ck_assert(sortd_engine_lost(e0));
        unlink(path);
        unsetenv("FAKE_CUDA_FAULT_FILE");
        sortd_engine_destroy(e0);
        sortd_engine_destroy(e1);
        sortd_engine_destroy(cpu);
}
END_TEST

/* A device that computes wrongly fails its engine's self-check; a good one passes. */
START_TEST(bad_device)
{
        setenv("FAKE_CUDA_BAD_DEVICES", "2", 1);
        devices_env("3", nullptr);
        /* a small capacity caps the sizes of the self-check's sample: the emulator is slow */
        sortd_engine *e0 = engine("cuda", 0, 300), *e2 = engine("cuda", 2, 300);
        char report[512] = "";

        ck_assert_int_eq(sortd_engine_selfcheck(e2, report, sizeof(report)), SORTD_E_SELFCHECK);
        ck_assert_msg(sortd_engine_selfcheck(e0, report, sizeof(report)) == SORTD_OK, "%s", report);
        ck_assert_msg(strstr(report, "self-check passed"), "%s", report);
        sortd_engine_destroy(e0);
        sortd_engine_destroy(e2);
        unsetenv("FAKE_CUDA_BAD_DEVICES");
}
END_TEST

} /* namespace */

int main(void)
{
        Suite *s = suite_create("emulated-devices");
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {
                {"list", list},
                {"visible", visible},
                {"engine-on-1", engine_on_1},
                {"concurrent", concurrent},
                {"fault-file", fault_file},
                {"bad-device", bad_device},
        };

        for (const auto &c : cases) {
                TCase *tc = tcase_create(c.name);

                tcase_set_timeout(tc, 600);
                tcase_add_test(tc, c.test);
                suite_add_tcase(s, tc);
        }
        return run_suite(s);
}
