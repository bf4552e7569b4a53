/*
 * The cuda engine whole, host code and all, without a GPU: kernels/cuda/cuda_engine.cu compiled
 * against the stand-in CUDA runtime (tests/support/fake_cuda), its kernels on the SIMT emulator.
 * What the emulated-kernel tests cannot reach is tested here: the device set-up and its refusals,
 * the staged and direct host<->device copies (small staging slots, so a few thousand keys make
 * many chunks), pinned and registered caller memory, sorts on device memory, batches, CUDA IPC
 * handles from another process, and a device that faults. Every result is the CPU engine's.
 * (Its self-check runs in every start of sortd-emulated-cuda, tests/e2e.)
 *
 * The runtime queues a stream's work until the host waits for it, so a missing wait shows as
 * wrong bytes; it counts async copies from pageable memory, which the engine must never make.
 * One Check case per area (CK_RUN_CASE), so meson runs them side by side.
 */
#include "simt.h" /* first: the kernels compile against it */

#include "cuda_runtime.h" /* tests/support/fake_cuda */

#include <check.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "datagen.h"
#include "engine.h"
extern "C" {
#include "suite.h"
}

namespace
{

/* Staging slots of 16 KiB (tests/support/fake_cuda/meson.build): 20,011 u64 keys go in 10
   chunks. */
constexpr size_t CAPACITY = 20011;
const size_t SIZES[] = {0, 1, 2, 3, 777, 5000, CAPACITY};

sortd_engine *cpu_engine()
{
        sortd_engine_config cfg{};
        sortd_engine *e = nullptr;
        char why[256];

        cfg.capacity = CAPACITY;
        cfg.threads = 1;
        if (sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) != SORTD_OK)
                ck_abort_msg("cpu engine: %s", why);
        return e;
}

sortd_status cuda_create(size_t capacity, sortd_engine **e, std::string *why)
{
        sortd_engine_config cfg{};
        char buf[256] = "";

        cfg.capacity = capacity;
        cfg.threads = 2;
        /* "cuda" is kernels/cuda/cuda_engine.cu on the stand-in runtime, in this build. */
        sortd_status s = sortd_engine_create("cuda", &cfg, e, buf, sizeof(buf));
        *why = buf;
        return s;
}

sortd_engine *cuda_engine(size_t capacity = CAPACITY)
{
        sortd_engine *e = nullptr;
        std::string why;

        if (cuda_create(capacity, &e, &why) != SORTD_OK)
                ck_abort_msg("emulated cuda engine: %s", why.c_str());
        return e;
}

/* Where a case's arrays live: what decides the engine's copy path. */
enum class Memory { pageable, pinned, registered, device };

const char *memory_name(Memory m)
{
        switch (m) {
        case Memory::pageable:
                return "pageable";
        case Memory::pinned:
                return "pinned";
        case Memory::registered:
                return "registered";
        default:
                return "device";
        }
}

/* An array of bytes in the memory m, through the engine e where it takes part. */
struct Buffer {
        sortd_engine *e = nullptr;
        Memory m = Memory::pageable;
        void *p = nullptr;
        size_t bytes = 0;

        Buffer(sortd_engine *engine, Memory mem, size_t len) : e(engine), m(mem), bytes(len)
        {
                size_t page = 4096, rounded = (len + page - 1) / page * page + page;

                switch (m) {
                case Memory::pageable:
                        p = xmalloc(len);
                        break;
                case Memory::pinned:
                        ck_assert_int_eq(sortd_engine_host_alloc(e, len ? len : 1, &p), SORTD_OK);
                        break;
                case Memory::registered:
                        p = aligned_alloc(page, rounded);
                        ck_assert_ptr_nonnull(p);
                        ck_assert_int_eq(sortd_engine_host_register(e, p, rounded), SORTD_OK);
                        break;
                case Memory::device:
                        ck_assert_int_eq(cudaMalloc(&p, len ? len : 1), cudaSuccess);
                        break;
                }
        }
        ~Buffer()
        {
                switch (m) {
                case Memory::pageable:
                        free(p);
                        break;
                case Memory::pinned:
                        sortd_engine_host_free(e, p, bytes ? bytes : 1);
                        break;
                case Memory::registered:
                        ck_assert_int_eq(sortd_engine_host_unregister(e, p), SORTD_OK);
                        free(p);
                        break;
                case Memory::device:
                        ck_assert_int_eq(cudaFree(p), cudaSuccess);
                        break;
                }
        }
        Buffer(const Buffer &) = delete;
        Buffer &operator=(const Buffer &) = delete;
};

struct Case {
        sortd_sort_desc d;
        size_t n;
        datagen_dist dist;
        uint64_t seed;
};

std::string describe(const Case &c, Memory m)
{
        char buf[160];

        snprintf(buf, sizeof(buf), "%s %s %s n=%zu dist=%d seed=%llu, %s memory",
                 sortd_key_type_name(c.d.key_type), sortd_payload_name(c.d.payload),
                 c.d.order == SORTD_DESCENDING ? "descending" : "ascending", c.n, (int)c.dist,
                 (unsigned long long)c.seed, memory_name(m));
        return buf;
}

/* Sorts c with the emulated engine in memory m, and with the CPU engine; the same bytes. */
void expect_like_cpu(sortd_engine *cuda, sortd_engine *cpu, const Case &c, Memory m)
{
        const size_t kb = sortd_key_size(c.d.key_type), vb = sortd_payload_size(c.d.payload);
        const bool argsort = sortd_payload_is_argsort(c.d.payload);
        const std::string name = describe(c, m);
        std::vector<unsigned char> want_k(c.n * kb + 1), want_v(c.n * vb + 1);
        Buffer k(cuda, m, c.n * kb), v(cuda, m, c.n * vb);
        sortd_status s;

        datagen_fill(want_k.data(), c.n, c.d.key_type, c.dist, 16, c.seed);
        if (vb && !argsort)
                datagen_fill_values(want_v.data(), c.n, (unsigned)vb, c.seed + 1);
        memcpy(k.p, want_k.data(), c.n * kb);
        memcpy(v.p, want_v.data(), c.n * vb);
        ck_assert_msg(sortd_engine_sort(cpu, &c.d, want_k.data(), vb ? want_v.data() : nullptr,
                                        c.n) == SORTD_OK,
                      "cpu: %s", sortd_engine_error(cpu));
        if (m == Memory::device)
                s = sortd_engine_sort_device(cuda, &c.d, k.p, vb ? v.p : nullptr, c.n);
        else
                s = sortd_engine_sort(cuda, &c.d, k.p, vb ? v.p : nullptr, c.n);
        ck_assert_msg(s == SORTD_OK, "%s: %s", name.c_str(), sortd_engine_error(cuda));
        ck_assert_msg(memcmp(k.p, want_k.data(), c.n * kb) == 0, "%s: keys differ from cpu's",
                      name.c_str());
        ck_assert_msg(memcmp(v.p, want_v.data(), c.n * vb) == 0, "%s: values differ from cpu's",
                      name.c_str());
}

const sortd_key_type TYPES[] = {SORTD_KEY_U8,  SORTD_KEY_I16, SORTD_KEY_U32,
                                SORTD_KEY_F32, SORTD_KEY_I64, SORTD_KEY_F64};
const sortd_payload PAYLOADS[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                  SORTD_PAYLOAD_VALUES64, SORTD_PAYLOAD_ARGSORT32,
                                  SORTD_PAYLOAD_ARGSORT64};

/* Every type and payload, both orders, sizes from 0 to many chunks, in memory m. */
void matrix(Memory m, const size_t *sizes, size_t nsizes)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        uint64_t seed = 1;

        fake_cuda::reset_counts();
        for (sortd_key_type t : TYPES)
                for (sortd_payload p : PAYLOADS)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                for (size_t i = 0; i < nsizes; i++) {
                                        Case c = {{t, p, (sortd_order)o, 0, 0},
                                                  sizes[i],
                                                  seed % 3 ? DATAGEN_UNIFORM : DATAGEN_FEW,
                                                  seed};
                                        seed++;
                                        expect_like_cpu(cuda, cpu, c, m);
                                }
        ck_assert_msg(fake_cuda::control().pageable_copies == 0,
                      "%llu async copies from or to pageable memory",
                      (unsigned long long)fake_cuda::control().pageable_copies);
        ck_assert_uint_gt(fake_cuda::control().launches, 0);
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}

/* Pageable caller memory: staged through the pinned slots, in chunks. */
START_TEST(staged)
{
        matrix(Memory::pageable, SIZES, sizeof(SIZES) / sizeof(SIZES[0]));
}
END_TEST

/* Pinned and registered caller memory: DMA straight from and to it. */
START_TEST(direct)
{
        const size_t sizes[] = {2, 777, CAPACITY};

        matrix(Memory::pinned, sizes, 3);
        ck_assert_uint_gt(fake_cuda::control().pinned_copies, 0);
        matrix(Memory::registered, sizes, 3);
}
END_TEST

/* sort_device on the caller's device memory, the path of CUDA IPC regions. */
START_TEST(device)
{
        matrix(Memory::device, SIZES, sizeof(SIZES) / sizeof(SIZES[0]));
}
END_TEST

/* The staged copies again, with a buffer that ends mid-chunk and mid-page, and keys whose
   chunks the copy threads split (shares of 4 KiB: tests/support/fake_cuda/meson.build). */
START_TEST(chunks)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const size_t sizes[] = {4095, 4096, 4097, 8193, CAPACITY - 1};
        uint64_t seed = 99;

        for (size_t n : sizes)
                for (sortd_payload p : {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES64}) {
                        Case c = {{SORTD_KEY_U64, p, SORTD_ASCENDING, 0, 0},
                                  n,
                                  DATAGEN_UNIFORM,
                                  seed++};
                        expect_like_cpu(cuda, cpu, c, Memory::pageable);
                }
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* A batch: small members through the segmented kernel, a large one alone, one refused. */
START_TEST(batch)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const size_t ns[] = {1, 2, 100, 3000, 17, 12000, 64, 5};
        const size_t count = sizeof(ns) / sizeof(ns[0]) + 1;
        std::vector<sortd_engine_batch_item> items(count);
        std::vector<std::vector<uint64_t>> keys(count), vals(count), want_k(count), want_v(count);

        for (size_t i = 0; i + 1 < count; i++) {
                sortd_engine_batch_item &it = items[i];
                sortd_key_type t = TYPES[i % 6];
                sortd_payload p = PAYLOADS[i % 5];
                size_t n = ns[i];

                it.desc = {t, p, i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING, 0, 0};
                it.n = n;
                keys[i].assign(n + 1, 0);
                vals[i].assign(n + 1, 0);
                datagen_fill(keys[i].data(), n, t, DATAGEN_UNIFORM, 0, 500 + i);
                if (!sortd_payload_is_argsort(p) && sortd_payload_size(p))
                        datagen_fill_values(vals[i].data(), n, (unsigned)sortd_payload_size(p),
                                            600 + i);
                want_k[i] = keys[i];
                want_v[i] = vals[i];
                ck_assert_int_eq(
                        sortd_engine_sort(cpu, &it.desc, want_k[i].data(),
                                          sortd_payload_size(p) ? want_v[i].data() : nullptr, n),
                        SORTD_OK);
                it.keys = keys[i].data();
                it.vals = sortd_payload_size(p) ? vals[i].data() : nullptr;
        }
        /* The last one is over capacity: it fails alone. */
        keys[count - 1].assign(CAPACITY + 1, 0);
        items[count - 1].desc = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        items[count - 1].keys = keys[count - 1].data();
        items[count - 1].n = CAPACITY + 1;

        fake_cuda::reset_counts();
        ck_assert_int_ne(sortd_engine_sort_batch(cuda, items.data(), count), SORTD_OK);
        for (size_t i = 0; i + 1 < count; i++) {
                size_t kb = sortd_key_size(items[i].desc.key_type);
                size_t vb = sortd_payload_size(items[i].desc.payload);

                ck_assert_msg(items[i].status == SORTD_OK, "member %zu: %s", i, items[i].why);
                ck_assert_msg(memcmp(keys[i].data(), want_k[i].data(), ns[i] * kb) == 0,
                              "member %zu: keys differ from cpu's", i);
                ck_assert_msg(memcmp(vals[i].data(), want_v[i].data(), ns[i] * vb) == 0,
                              "member %zu: values differ from cpu's", i);
        }
        ck_assert_int_eq(items[count - 1].status, SORTD_E_CAPACITY);
        ck_assert_uint_eq(fake_cuda::control().pageable_copies, 0);
        ck_assert_uint_gt(fake_cuda::control().launches, 0);
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* What the device says of itself: its name, the kernels it runs, its UUID. */
START_TEST(device_info)
{
        for (int ptx : {80, 90}) {
                fake_cuda::control().ptx_version = ptx;
                sortd_engine *cuda = cuda_engine();
                uint8_t uuid[SORTD_DEVICE_UUID_BYTES];
                std::string want = "kernels for sm_" + std::to_string(ptx);

                ck_assert_msg(strstr(sortd_engine_device(cuda), "SIMT emulator 0 (sm_90, 3 SMs") &&
                                      strstr(sortd_engine_device(cuda), want.c_str()),
                              "device: %s", sortd_engine_device(cuda));
                ck_assert_int_eq(sortd_engine_device_uuid(cuda, uuid), SORTD_OK);
                ck_assert_int_eq(memcmp(uuid, fake_cuda::fake_device_uuid.bytes, sizeof(uuid)), 0);
                ck_assert_double_gt(sortd_engine_peak_bandwidth(cuda), 1e12);
                sortd_engine_destroy(cuda);
        }
        fake_cuda::control().ptx_version = 90;
}
END_TEST

/* Refusals at creation: each with its status and message, and nothing left allocated. */
START_TEST(create_refusals)
{
        sortd_engine *e = nullptr;
        std::string why;
        size_t before = fake_cuda::live_allocations();

        fake_cuda::control().devices = 0;
        ck_assert_int_eq(cuda_create(100, &e, &why), SORTD_E_NODEV);
        ck_assert_msg(why.find("no CUDA device") != std::string::npos, "%s", why.c_str());
        fake_cuda::control().devices = 1;

        fake_cuda::control().major = 7;
        fake_cuda::control().minor = 0;
        ck_assert_int_eq(cuda_create(100, &e, &why), SORTD_E_NODEV);
        ck_assert_msg(why.find("sm_75 or newer") != std::string::npos, "%s", why.c_str());
        fake_cuda::control().major = 9;
        fake_cuda::control().minor = 0;

        for (unsigned at = 1; at <= 5; at++) {
                fake_cuda::control().fail_malloc_at = at;
                ck_assert_int_eq(cuda_create(100, &e, &why), SORTD_E_NOMEM);
                ck_assert_msg(why.find("cudaMalloc of") != std::string::npos, "%s", why.c_str());
                ck_assert_uint_eq(fake_cuda::live_allocations(), before);
        }
        fake_cuda::control().fail_malloc_at = 0;
        e = cuda_engine(100);
        sortd_engine_destroy(e);
        ck_assert_uint_eq(fake_cuda::live_allocations(), before);
}
END_TEST

/* Host memory the caller gets wrong: registered twice, unregistered unknown. */
START_TEST(host_refusals)
{
        sortd_engine *cuda = cuda_engine(100);
        void *p = aligned_alloc(4096, 8192);

        ck_assert_int_eq(sortd_engine_host_register(cuda, p, 8192), SORTD_OK);
        ck_assert_int_eq(sortd_engine_host_register(cuda, p, 4096), SORTD_E_INVAL);
        ck_assert_msg(strstr(sortd_engine_error(cuda), "cudaHostRegister"), "%s",
                      sortd_engine_error(cuda));
        ck_assert_int_eq(sortd_engine_host_unregister(cuda, p), SORTD_OK);
        ck_assert_int_eq(sortd_engine_host_unregister(cuda, p), SORTD_E_INVAL);
        ck_assert(!sortd_engine_lost(cuda));
        free(p);
        sortd_engine_destroy(cuda);
}
END_TEST

/* A kernel that faults: the sort fails with the device's error, the engine is lost, and
   what it held can still be released. */
START_TEST(device_fault)
{
        sortd_engine *cuda = cuda_engine(5000);
        std::vector<uint32_t> k(5000);
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};
        void *pinned = nullptr;

        ck_assert_int_eq(sortd_engine_host_alloc(cuda, 4096, &pinned), SORTD_OK);
        datagen_fill(k.data(), k.size(), SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 7);
        fake_cuda::control().fail_launch_at = 2;
        ck_assert_int_eq(sortd_engine_sort(cuda, &d, k.data(), nullptr, k.size()), SORTD_E_DEVICE);
        ck_assert_msg(strstr(sortd_engine_error(cuda), "illegal memory access"), "%s",
                      sortd_engine_error(cuda));
        ck_assert(sortd_engine_lost(cuda));
        ck_assert_int_eq(sortd_engine_sort(cuda, &d, k.data(), nullptr, k.size()), SORTD_E_DEVICE);
        sortd_engine_host_free(cuda, pinned, 4096);
        sortd_engine_destroy(cuda);
}
END_TEST

/* CUDA IPC: a child process allocates device memory, fills it and sends its handle; the engine
   opens it, sizes it, sorts in it, and closes it. Handles it cannot open are the caller's
   error, and name the CUDA error. */
START_TEST(ipc)
{
        const size_t n = 3001, bytes = n * 4 + 100;
        sortd_engine *cuda = cuda_engine(5000), *cpu = cpu_engine();
        sortd_sort_desc d = {SORTD_KEY_I32, SORTD_PAYLOAD_NONE, SORTD_DESCENDING, 0, 0};
        std::vector<int32_t> want(n);
        uint8_t handle[SORTD_CUDA_IPC_HANDLE_BYTES];
        int to_parent[2], to_child[2];
        void *base = nullptr;
        size_t size = 0;
        char done = 0;

        datagen_fill(want.data(), n, SORTD_KEY_I32, DATAGEN_UNIFORM, 0, 11);
        ck_assert_int_eq(pipe(to_parent), 0);
        ck_assert_int_eq(pipe(to_child), 0);
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                void *mem = nullptr;
                cudaIpcMemHandle_t h;

                if (cudaMalloc(&mem, bytes) != cudaSuccess ||
                    cudaIpcGetMemHandle(&h, mem) != cudaSuccess)
                        _exit(1);
                memcpy((char *)mem + 64, want.data(), n * 4);
                if (write(to_parent[1], &h, sizeof(h)) != (ssize_t)sizeof(h) ||
                    read(to_child[0], &done, 1) != 1)
                        _exit(2);
                _exit(0);
        }
        ck_assert_int_eq(read(to_parent[0], handle, sizeof(handle)), (ssize_t)sizeof(handle));

        ck_assert_int_eq(sortd_engine_ipc_open(cuda, handle, &base, &size), SORTD_OK);
        ck_assert_uint_eq(size, bytes);
        ck_assert_int_eq(sortd_engine_sort_device(cuda, &d, (char *)base + 64, nullptr, n),
                         SORTD_OK);
        ck_assert_int_eq(sortd_engine_sort(cpu, &d, want.data(), nullptr, n), SORTD_OK);
        ck_assert_int_eq(memcmp((char *)base + 64, want.data(), n * 4), 0);
        ck_assert_int_eq(sortd_engine_ipc_close(cuda, base), SORTD_OK);
        ck_assert_uint_eq(fake_cuda::control().ipc_closed, fake_cuda::control().ipc_opened);

        ck_assert_int_eq(write(to_child[1], &done, 1), 1);
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);

        /* Its process has gone: the memory with it. */
        ck_assert_int_eq(sortd_engine_ipc_open(cuda, handle, &base, &size), SORTD_E_INVAL);
        ck_assert_msg(strstr(sortd_engine_error(cuda), "cudaErrorMapBufferObjectFailed"), "%s",
                      sortd_engine_error(cuda));

        /* A handle of this same process: the driver refuses it. */
        void *own = nullptr;
        cudaIpcMemHandle_t h;
        ck_assert_int_eq(cudaMalloc(&own, 4096), cudaSuccess);
        ck_assert_int_eq(cudaIpcGetMemHandle(&h, own), cudaSuccess);
        ck_assert_int_eq(sortd_engine_ipc_open(cuda, (const uint8_t *)&h, &base, &size),
                         SORTD_E_INVAL);
        ck_assert_msg(strstr(sortd_engine_error(cuda), "cudaErrorDeviceUninitialized"), "%s",
                      sortd_engine_error(cuda));
        ck_assert_int_eq(cudaFree(own), cudaSuccess);

        /* Bytes that are no handle. */
        memset(handle, 0x5a, sizeof(handle));
        ck_assert_int_eq(sortd_engine_ipc_open(cuda, handle, &base, &size), SORTD_E_INVAL);
        ck_assert(!sortd_engine_lost(cuda));
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

} /* namespace */

int main(void)
{
        Suite *s = suite_create("emulated-cuda-engine");
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {
                {"staged", staged},
                {"direct", direct},
                {"device", device},
                {"chunks", chunks},
                {"batch", batch},
                {"device-info", device_info},
                {"create-refusals", create_refusals},
                {"host-refusals", host_refusals},
                {"device-fault", device_fault},
                {"ipc", ipc},
        };

        for (const auto &c : cases) {
                TCase *tc = tcase_create(c.name);

                tcase_set_timeout(tc, 900);
                tcase_add_test(tc, c.test);
                suite_add_tcase(s, tc);
        }
        return run_suite(s);
}
