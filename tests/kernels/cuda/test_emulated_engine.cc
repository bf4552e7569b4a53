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

#include "cuda/policy.cuh" /* SMALL_SORT_MAX, GRAPHS, GRAPH_CACHE_SIZE */
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

/* Sorts c with the emulated engine in k and v, buffers of memory m, and with the CPU engine; the
   same bytes. */
void expect_in(sortd_engine *cuda, sortd_engine *cpu, const Case &c, Memory m, Buffer &k, Buffer &v)
{
        const size_t kb = sortd_key_size(c.d.key_type), vb = sortd_payload_size(c.d.payload);
        const bool argsort = sortd_payload_is_argsort(c.d.payload);
        const std::string name = describe(c, m);
        std::vector<unsigned char> want_k(c.n * kb + 1), want_v(c.n * vb + 1);
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

/* expect_in, in buffers of its own. */
void expect_like_cpu(sortd_engine *cuda, sortd_engine *cpu, const Case &c, Memory m)
{
        Buffer k(cuda, m, c.n * sortd_key_size(c.d.key_type)),
                v(cuda, m, c.n * sortd_payload_size(c.d.payload));

        expect_in(cuda, cpu, c, m, k, v);
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

/* Single sorts around the small path's bounds (one warp, one block, then Onesweep), host and
   device memory, a bit range too: one launch each up to SMALL_SORT_MAX keys, more past it. */
START_TEST(small)
{
        const size_t sizes[] = {2, 255, 256, 257, 4095, 4096, 4097};
        const sortd_key_type types[] = {SORTD_KEY_U8, SORTD_KEY_I16, SORTD_KEY_F32, SORTD_KEY_I64};
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        uint64_t seed = 7, i = 0;

        for (size_t n : sizes)
                for (sortd_key_type t : types)
                        for (sortd_payload p : PAYLOADS) {
                                unsigned bits = (unsigned)sortd_key_size(t) * 8;
                                bool range = i % 7 == 3;
                                Case c = {{t, p, i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING,
                                           range ? 1u : 0u, range ? bits - 1 : 0u},
                                          n,
                                          i % 3 ? DATAGEN_UNIFORM : DATAGEN_FEW,
                                          seed++};
                                uint64_t before = fake_cuda::control().launches;

                                expect_like_cpu(cuda, cpu, c,
                                                i % 2 ? Memory::device : Memory::pageable);
                                uint64_t launches = fake_cuda::control().launches - before;
                                if (n <= sortd_cuda::SMALL_SORT_MAX)
                                        ck_assert_msg(launches == 1, "%s: %llu launches, not 1",
                                                      describe(c, Memory::pageable).c_str(),
                                                      (unsigned long long)launches);
                                else
                                        ck_assert_uint_gt(launches, 1);
                                i++;
                        }
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Counts of the stand-in runtime's graphs, before and after a sort. */
struct GraphCounts {
        uint64_t made, launched, live;
};

GraphCounts graph_counts()
{
        const auto &c = fake_cuda::control();

        return {c.graphs_instantiated, c.graph_launches, c.live_graph_execs};
}

/* Sorts c in k and v, like the cpu engine, and checks how many graphs it made and launched. */
void expect_graphs(sortd_engine *cuda, sortd_engine *cpu, const Case &c, Memory m, Buffer &k,
                   Buffer &v, uint64_t made, uint64_t launched)
{
        GraphCounts before = graph_counts();

        expect_in(cuda, cpu, c, m, k, v);
        GraphCounts after = graph_counts();
        ck_assert_msg(after.made - before.made == made &&
                              after.launched - before.launched == launched,
                      "%s: %llu graphs made, %llu launched; expected %llu and %llu",
                      describe(c, m).c_str(), (unsigned long long)(after.made - before.made),
                      (unsigned long long)(after.launched - before.launched),
                      (unsigned long long)made, (unsigned long long)launched);
}

/* Graphs of single sorts (graph_cache.h): a shape's first sort captures one, the next ones of that
   shape (the same arrays) replay it on new data, a new shape makes another, a small sort makes
   none, the ninth new shape replaces the least recently used, and destroying the engine frees
   them all. In host and in device memory. */
START_TEST(graphs)
{
        const size_t n0 = sortd_cuda::SMALL_SORT_MAX + 1, small = sortd_cuda::SMALL_SORT_MAX;
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const uint64_t live0 = graph_counts().live;
        uint64_t seed = 31;
        auto shape = [&](size_t n, sortd_key_type t, sortd_payload p) {
                return Case{{t, p, SORTD_ASCENDING, 0, 0}, n, DATAGEN_UNIFORM, seed++};
        };

        if (!sortd_cuda::GRAPHS) /* a tune build without them */
                return;
        for (Memory m : {Memory::pageable, Memory::device}) {
                Buffer k(cuda, m, (n0 + 1) * 8), v(cuda, m, (n0 + 1) * 8);
                Case a = shape(n0, SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32);

                expect_graphs(cuda, cpu, a, m, k, v, 1, 1);
                for (int i = 0; i < 2; i++) {
                        a.seed = seed++; /* the same shape, other data */
                        expect_graphs(cuda, cpu, a, m, k, v, 0, 1);
                }
                expect_graphs(cuda, cpu, shape(n0 + 1, SORTD_KEY_I64, SORTD_PAYLOAD_ARGSORT64), m,
                              k, v, 1, 1);
                expect_graphs(cuda, cpu, shape(small, SORTD_KEY_U32, SORTD_PAYLOAD_NONE), m, k, v,
                              0, 0);
        }
        Buffer k(cuda, Memory::pageable, (n0 + 20) * 4), v(cuda, Memory::pageable, 4);
        for (unsigned i = 0; i < sortd_cuda::GRAPH_CACHE_SIZE + 1; i++)
                expect_graphs(cuda, cpu, shape(n0 + 10 + i, SORTD_KEY_F32, SORTD_PAYLOAD_NONE),
                              Memory::pageable, k, v, 1, 1);
        ck_assert_uint_eq(graph_counts().live - live0, sortd_cuda::GRAPH_CACHE_SIZE);
        expect_graphs(cuda, cpu, shape(n0 + 10, SORTD_KEY_F32, SORTD_PAYLOAD_NONE),
                      Memory::pageable, k, v, 1, 1);
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
        ck_assert_uint_eq(graph_counts().live, live0);
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

/* A segmented sort whose kernel faults: the device's error, the engine lost (once a process:
   the fault is sticky on its device, as on a GPU). */
START_TEST(segments_fault)
{
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0};
        const sortd_segments rows = {2, 2500, nullptr, 0};
        std::vector<uint32_t> k(5000), v(5000);
        sortd_engine *cuda = cuda_engine(5000);

        datagen_fill(k.data(), k.size(), SORTD_KEY_U32, DATAGEN_UNIFORM, 0, 8);
        fake_cuda::control().fail_launch_at = 1;
        ck_assert_int_eq(sortd_engine_sort_segments(cuda, &d, &rows, SORTD_MEMORY_HOST, k.data(),
                                                    v.data(), k.size()),
                         SORTD_E_DEVICE);
        ck_assert_msg(strstr(sortd_engine_error(cuda), "illegal memory access"), "%s",
                      sortd_engine_error(cuda));
        ck_assert(sortd_engine_lost(cuda));
        ck_assert_int_eq(sortd_engine_sort_segments(cuda, &d, &rows, SORTD_MEMORY_HOST, k.data(),
                                                    v.data(), k.size()),
                         SORTD_E_DEVICE);
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

/*
 * Segments and top-k (engine.h), against the cpu engine's sortd_engine_sort of each segment
 * alone: a segment's sort is its own whole sort (argsort indices within it), its top k the first
 * k of that, packed one segment after another.
 */
struct SegCase {
        sortd_sort_desc d;
        std::vector<uint64_t> lens;
        unsigned offset_bytes; /* 4 or 8 with offsets; 0: uniform rows (lens all equal) */
        datagen_dist dist;
        uint64_t seed;
};

/* The segments of c over its keys, offsets in *offsets (kept alive by the caller). */
sortd_segments segments_of(const SegCase &c, std::vector<uint64_t> *offsets)
{
        sortd_segments s{};
        uint64_t at = 0;

        s.count = c.lens.size();
        if (!c.offset_bytes) {
                s.row_len = c.lens.empty() ? 0 : c.lens[0];
                return s;
        }
        offsets->assign(c.lens.size() + 1, 0);
        for (size_t i = 0; i < c.lens.size(); i++)
                (*offsets)[i + 1] = at += c.lens[i];
        if (c.offset_bytes == 4) /* packed two to a word, in the vector's own memory */
                for (size_t i = 0; i <= c.lens.size(); i++)
                        ((uint32_t *)offsets->data())[i] = (uint32_t)(*offsets)[i];
        s.offsets = offsets->data();
        s.offset_bytes = c.offset_bytes;
        return s;
}

uint64_t total(const SegCase &c)
{
        uint64_t n = 0;

        for (uint64_t l : c.lens)
                n += l;
        return n;
}

std::string describe(const SegCase &c, Memory m, const char *what)
{
        char buf[256];

        snprintf(buf, sizeof(buf),
                 "%s: %s %s %s bits [%u, %u) %zu segments (%s) n=%llu seed=%llu, %s memory", what,
                 sortd_key_type_name(c.d.key_type), sortd_payload_name(c.d.payload),
                 c.d.order == SORTD_DESCENDING ? "descending" : "ascending", c.d.begin_bit,
                 c.d.end_bit, c.lens.size(),
                 c.offset_bytes == 4 ? "u32 offsets"
                 : c.offset_bytes    ? "u64 offsets"
                                     : "rows",
                 (unsigned long long)total(c), (unsigned long long)c.seed, memory_name(m));
        return buf;
}

/* The input of c: keys and values (none for an argsort), one spare element for n = 0. */
void fill_input(const SegCase &c, std::vector<unsigned char> *keys,
                std::vector<unsigned char> *vals)
{
        const size_t n = total(c), kb = sortd_key_size(c.d.key_type);
        const size_t vb = sortd_payload_size(c.d.payload);

        keys->assign(n * kb + 8, 0);
        vals->assign(n * vb + 8, 0);
        datagen_fill(keys->data(), n, c.d.key_type, c.dist, 4, c.seed);
        if (vb && !sortd_payload_is_argsort(c.d.payload))
                datagen_fill_values(vals->data(), n, (unsigned)vb, c.seed + 1);
}

/* The oracle: keys and vals sorted segment by segment, each by the cpu engine alone. */
void cpu_sort_each(sortd_engine *cpu, const SegCase &c, unsigned char *keys, unsigned char *vals)
{
        const size_t kb = sortd_key_size(c.d.key_type), vb = sortd_payload_size(c.d.payload);
        uint64_t at = 0;

        for (uint64_t len : c.lens) {
                if (len)
                        ck_assert_msg(sortd_engine_sort(cpu, &c.d, keys + at * kb,
                                                        vb ? vals + at * vb : nullptr,
                                                        len) == SORTD_OK,
                                      "cpu: %s", sortd_engine_error(cpu));
                at += len;
        }
}

sortd_memory where_of(Memory m, bool shared)
{
        return m == Memory::device ? SORTD_MEMORY_DEVICE
               : shared            ? SORTD_MEMORY_SHARED
                                   : SORTD_MEMORY_HOST;
}

/* Sorts c's segments with the emulated engine in memory m; the cpu engine's bytes. */
void expect_segments_like_cpu(sortd_engine *cuda, sortd_engine *cpu, const SegCase &c, Memory m,
                              bool shared = false)
{
        const size_t n = total(c), kb = sortd_key_size(c.d.key_type);
        const size_t vb = sortd_payload_size(c.d.payload);
        const std::string name = describe(c, m, "segments");
        std::vector<unsigned char> want_k, want_v;
        std::vector<uint64_t> offsets;
        sortd_segments seg = segments_of(c, &offsets);
        Buffer k(cuda, m, n * kb), v(cuda, m, n * vb);

        fill_input(c, &want_k, &want_v);
        memcpy(k.p, want_k.data(), n * kb);
        memcpy(v.p, want_v.data(), n * vb);
        cpu_sort_each(cpu, c, want_k.data(), want_v.data());
        sortd_status s = sortd_engine_sort_segments(cuda, &c.d, &seg, where_of(m, shared), k.p,
                                                    vb ? v.p : nullptr, n);
        ck_assert_msg(s == SORTD_OK, "%s: %s", name.c_str(), sortd_engine_error(cuda));
        ck_assert_msg(memcmp(k.p, want_k.data(), n * kb) == 0, "%s: keys differ from cpu's",
                      name.c_str());
        ck_assert_msg(memcmp(v.p, want_v.data(), n * vb) == 0, "%s: values differ from cpu's",
                      name.c_str());
}

/* Top-k of c's segments (whole: seg NULL, c one segment) with the emulated engine in memory m;
   the first min(k, len) of each segment's cpu sort, packed. */
void expect_topk_like_cpu(sortd_engine *cuda, sortd_engine *cpu, const SegCase &c, uint64_t k,
                          Memory m, bool whole, bool shared = false)
{
        const size_t n = total(c), kb = sortd_key_size(c.d.key_type);
        const size_t vb = sortd_payload_size(c.d.payload);
        const bool argsort = sortd_payload_is_argsort(c.d.payload);
        std::string name = describe(c, m, whole ? "top-k of all" : "top-k");
        std::vector<unsigned char> in_k, in_v, sorted_k, sorted_v, want_k, want_v;
        std::vector<uint64_t> offsets;
        sortd_segments seg = segments_of(c, &offsets);
        uint64_t results = 0, at = 0;

        name += " k=" + std::to_string(k);
        fill_input(c, &in_k, &in_v);
        sorted_k = in_k;
        sorted_v = in_v;
        cpu_sort_each(cpu, c, sorted_k.data(), sorted_v.data());
        for (uint64_t len : c.lens) {
                uint64_t take = k < len ? k : len;

                want_k.insert(want_k.end(), sorted_k.begin() + at * kb,
                              sorted_k.begin() + (at + take) * kb);
                want_v.insert(want_v.end(), sorted_v.begin() + at * vb,
                              sorted_v.begin() + (at + take) * vb);
                results += take;
                at += len;
        }
        ck_assert_uint_eq(results, sortd_topk_results(whole ? nullptr : &seg, n, k));
        Buffer ik(cuda, m, n * kb), iv(cuda, m, n * vb);
        Buffer ok(cuda, m, results * kb + kb), ov(cuda, m, results * vb + vb);
        memcpy(ik.p, in_k.data(), n * kb);
        if (vb) /* a Buffer of no bytes has no memory: memcpy and memcmp take no NULL */
                memcpy(iv.p, in_v.data(), n * vb);
        sortd_status s =
                sortd_engine_topk(cuda, &c.d, whole ? nullptr : &seg, k, where_of(m, shared), ik.p,
                                  vb && !argsort ? iv.p : nullptr, ok.p, vb ? ov.p : nullptr, n);
        ck_assert_msg(s == SORTD_OK, "%s: %s", name.c_str(), sortd_engine_error(cuda));
        ck_assert_msg(memcmp(ok.p, want_k.data(), results * kb) == 0, "%s: keys differ from cpu's",
                      name.c_str());
        ck_assert_msg(!vb || memcmp(ov.p, want_v.data(), results * vb) == 0,
                      "%s: values differ from cpu's", name.c_str());
        ck_assert_msg(memcmp(ik.p, in_k.data(), n * kb) == 0, "%s: input keys written",
                      name.c_str());
}

/* Lengths at each size class's bounds (segment_sort.cuh: small up to 256 keys, medium up to
   4096, Onesweep above, whose u32 keys-only tile is 5120 on sm_90), empty and one-key segments
   among them. */
const uint64_t CLASS_LENS[] = {0, 1, 2, 255, 256, 257, 4095, 4096, 4097, 5121, 3, 0};

/* Every size class in one call, each type and payload once, both orders, every memory kind. */
START_TEST(segments_classes)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const Memory mems[] = {Memory::pageable, Memory::pinned, Memory::device};
        uint64_t seed = 700;

        fake_cuda::reset_counts();
        for (size_t i = 0; i < 6; i++) {
                SegCase c = {{TYPES[i], PAYLOADS[i % 5], i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING,
                              0, 0},
                             {},
                             i % 3 == 2 ? 8u : 4u,
                             i % 2 ? DATAGEN_FEW : DATAGEN_UNIFORM,
                             seed++};

                c.lens.assign(CLASS_LENS, CLASS_LENS + sizeof(CLASS_LENS) / sizeof(CLASS_LENS[0]));
                expect_segments_like_cpu(cuda, cpu, c, mems[i % 3], i == 3);
        }
        ck_assert_uint_eq(fake_cuda::control().pageable_copies, 0);
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Short segments in every type, payload and order, host and device memory; bit windows. */
START_TEST(segments_matrix)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const uint64_t lens[] = {5, 0, 1, 100, 33, 2, 31, 32, 200};
        uint64_t seed = 800;

        for (sortd_key_type t : TYPES)
                for (sortd_payload p : PAYLOADS)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                SegCase c = {{t, p, (sortd_order)o, 0, 0},
                                             {lens, lens + sizeof(lens) / sizeof(lens[0])},
                                             seed % 2 ? 8u : 4u,
                                             seed % 3 ? DATAGEN_UNIFORM : DATAGEN_FEW,
                                             seed};
                                seed++;
                                expect_segments_like_cpu(
                                        cuda, cpu, c, seed % 2 ? Memory::device : Memory::pageable);
                        }
        /* bit windows: one place, two places unaligned to digits, the top bits */
        const unsigned windows[][2] = {{0, 8}, {3, 17}, {56, 64}, {4, 12}};
        for (size_t i = 0; i < 4; i++) {
                sortd_key_type t = i == 2 ? SORTD_KEY_U64 : i == 3 ? SORTD_KEY_I16 : SORTD_KEY_U32;
                SegCase c = {{t, PAYLOADS[i + 1], i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING,
                              windows[i][0], windows[i][1]},
                             {300, 7, 4097, 256},
                             4,
                             DATAGEN_UNIFORM,
                             seed++};
                expect_segments_like_cpu(cuda, cpu, c, i % 2 ? Memory::device : Memory::pageable);
        }
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Uniform rows in each class, and more segments than one chunk of descriptors (4096). */
START_TEST(segments_rows)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const struct {
                uint64_t row_len, count;
                unsigned offset_bytes;
        } shapes[] = {{1, 50, 0},   {256, 9, 0},  {257, 7, 0},
                      {4096, 2, 0}, {6000, 3, 0}, {2, 4200, 0}};
        uint64_t seed = 900;

        for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
                SegCase c = {{TYPES[(i + 2) % 6], PAYLOADS[(i + 1) % 5],
                              i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING, 0, 0},
                             std::vector<uint64_t>(shapes[i].count, shapes[i].row_len),
                             shapes[i].offset_bytes,
                             DATAGEN_FEW,
                             seed++};
                expect_segments_like_cpu(cuda, cpu, c, i % 2 ? Memory::device : Memory::pinned);
        }
        /* past a chunk with lengths that differ, so that a chunk's descriptors are its own:
           a refill before its upload has run would sort other ranges (a period of 3, which
           4096 is not a multiple of) */
        SegCase mixed = {{SORTD_KEY_I32, SORTD_PAYLOAD_ARGSORT32, SORTD_ASCENDING, 0, 0},
                         {},
                         4,
                         DATAGEN_UNIFORM,
                         seed++};
        for (uint64_t i = 0; i < 4500; i++)
                mixed.lens.push_back(1 + i % 3);
        expect_segments_like_cpu(cuda, cpu, mixed, Memory::pageable);
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Top-k of one array: k at 1, the tile +-1, n / 2, n - 1, n and past it, in each class. */
START_TEST(topk_whole)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        uint64_t seed = 1000;
        int i = 0;

        for (uint64_t n : {300, 6001})
                for (uint64_t k : {(uint64_t)1, (uint64_t)255, (uint64_t)256, (uint64_t)257, n / 2,
                                   n - 1, n, n + 5}) {
                        SegCase c = {{TYPES[i % 6], PAYLOADS[i % 5],
                                      i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING, 0, 0},
                                     {n},
                                     4,
                                     i % 3 ? DATAGEN_FEW : DATAGEN_UNIFORM,
                                     seed++};
                        expect_topk_like_cpu(cuda, cpu, c, k,
                                             i % 3 == 1 ? Memory::device : Memory::pageable, true);
                        i++;
                }
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* Top-k of segments of every class, rows and offsets; ties, NaNs and +-0 at the cut. */
START_TEST(topk_segments)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        uint64_t seed = 1100;
        int i = 0;

        for (uint64_t k : {1, 3, 256, 257, 5000})
                for (sortd_payload p : {SORTD_PAYLOAD_ARGSORT32, SORTD_PAYLOAD_VALUES64}) {
                        SegCase c = {
                                {TYPES[i % 6], p, i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING, 0, 0},
                                {0, 1, 2, 255, 256, 257, 4097, 3, 0},
                                i % 2 ? 8u : 4u,
                                DATAGEN_FEW,
                                seed++};
                        expect_topk_like_cpu(cuda, cpu, c, k,
                                             i % 2 ? Memory::device : Memory::pageable, false,
                                             i == 4);
                        i++;
                }
        /* more segments than one chunk of gather ranges (4096) */
        SegCase rows = {{SORTD_KEY_U16, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING, 0, 0},
                        std::vector<uint64_t>(5000, 2),
                        0,
                        DATAGEN_FEW,
                        seed++};
        expect_topk_like_cpu(cuda, cpu, rows, 1, Memory::pinned, false);
        /* floats of few values, NaNs and zeros of both signs among them: many ties at any cut */
        for (sortd_key_type t : {SORTD_KEY_F32, SORTD_KEY_F64})
                for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                        SegCase c = {{t, SORTD_PAYLOAD_ARGSORT64, (sortd_order)o, 0, 0},
                                     {},
                                     0,
                                     DATAGEN_SPECIAL,
                                     seed++};
                        c.lens.assign(6, 400);
                        for (uint64_t k : {1, 7, 200, 399})
                                expect_topk_like_cpu(cuda, cpu, c, k,
                                                     o ? Memory::device : Memory::pinned, false);
                }
        sortd_engine_destroy(cuda);
        sortd_engine_destroy(cpu);
}
END_TEST

/* The keys at the head of c's one segment sorted that tie with its first: a top-k of that many
   takes a whole bucket of the radix select, which then stops above the last digit. */
uint64_t ties_at_head(sortd_engine *cpu, const SegCase &c)
{
        const size_t kb = sortd_key_size(c.d.key_type);
        std::vector<unsigned char> keys, vals;
        sortd_sort_desc keys_only = c.d;
        uint64_t t = 1;

        keys_only.payload = SORTD_PAYLOAD_NONE;
        fill_input(c, &keys, &vals);
        ck_assert_int_eq(sortd_engine_sort(cpu, &keys_only, keys.data(), nullptr, c.lens[0]),
                         SORTD_OK);
        while (t < c.lens[0] && memcmp(&keys[t * kb], &keys[0], kb) == 0)
                t++;
        return t;
}

/* Top-k of one large segment, the radix select: every key width, ties (few values, all equal),
   NaNs and +-0, bit windows; k at 1, the tiles +-1, n / 2, n - 1 and a whole tied bucket. Few
   values of 3 to 8 digits make every level run, the later ones on the keys an earlier kept. */
START_TEST(topk_select)
{
        sortd_engine *cuda = cuda_engine(), *cpu = cpu_engine();
        const struct {
                sortd_key_type t;
                datagen_dist dist;
                unsigned begin_bit, end_bit;
        } kinds[] = {
                {SORTD_KEY_U8, DATAGEN_UNIFORM, 0, 0},   {SORTD_KEY_I16, DATAGEN_FEW, 0, 0},
                {SORTD_KEY_F32, DATAGEN_SPECIAL, 0, 0},  {SORTD_KEY_U32, DATAGEN_EQUAL, 0, 0},
                {SORTD_KEY_I64, DATAGEN_UNIFORM, 0, 0},  {SORTD_KEY_F64, DATAGEN_SPECIAL, 0, 0},
                {SORTD_KEY_U32, DATAGEN_UNIFORM, 5, 19}, {SORTD_KEY_U64, DATAGEN_FEW, 40, 64},
                {SORTD_KEY_U64, DATAGEN_FEW, 0, 0},      {SORTD_KEY_F32, DATAGEN_FEW, 0, 0}};
        uint64_t seed = 1200;
        int i = 0;

        for (const auto &kd : kinds) {
                SegCase c = {{kd.t, PAYLOADS[i % 5], i % 2 ? SORTD_DESCENDING : SORTD_ASCENDING,
                              kd.begin_bit, kd.end_bit},
                             {i % 2 ? 9001u : 4097u},
                             4,
                             kd.dist,
                             seed++};
                const uint64_t n = c.lens[0];

                for (uint64_t k : {(uint64_t)1, (uint64_t)2, (uint64_t)255, (uint64_t)4096,
                                   (uint64_t)4097, n / 2, n - 1, ties_at_head(cpu, c)}) {
                        if (k >= n)
                                continue;
                        expect_topk_like_cpu(cuda, cpu, c, k,
                                             i % 2 ? Memory::device : Memory::pageable, i % 3 != 0);
                        i++;
                }
        }
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
                {"small", small},
                {"graphs", graphs},
                {"batch", batch},
                {"device-info", device_info},
                {"create-refusals", create_refusals},
                {"host-refusals", host_refusals},
                {"device-fault", device_fault},
                {"segments-fault", segments_fault},
                {"ipc", ipc},
                {"segments-classes", segments_classes},
                {"segments-matrix", segments_matrix},
                {"segments-rows", segments_rows},
                {"topk-whole", topk_whole},
                {"topk-segments", topk_segments},
                {"topk-select", topk_select},
        };

        for (const auto &c : cases) {
                TCase *tc = tcase_create(c.name);

                tcase_set_timeout(tc, 900);
                tcase_add_test(tc, c.test);
                suite_add_tcase(s, tc);
        }
        return run_suite(s);
}
