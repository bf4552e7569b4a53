/*
 * The CUDA kernels, run on the SIMT emulator, against the CPU engine: the
 * test matrix of key types x payloads x orders x distributions x sizes
 * around the tile boundaries, with a small test policy (many tiles from
 * small inputs) and with the production policies. Cases "segmented" and
 * "segmented-production": batches of mixed members routed and packed as the
 * cuda engine's sort_batch does, the small ones through the segmented kernel.
 *
 * One Check case per key type, so CK_RUN_CASE=u32 runs one slice (meson
 * runs the slices in parallel). SIMT_SEED changes the interleaving.
 */
#include "emulated_sort.h" /* first: simt.h before the kernels */

#include <check.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "datagen.h"
extern "C" {
#include "reference.h" /* a C header without C++ guards */
#include "suite.h"
}

namespace
{

/* 2 warps x 3 keys: a 192-key tile, so a few hundred keys make many tiles
   and the look-back walks far. Fewer threads than digits also exercises
   the agents' several-digits-per-thread loops. */
/* It always waits for its histogram, so that its sorts leave out single-digit places
   (dispatch.cuh); NoWaitPolicy never does, and runs every place. */
struct TestPolicy : sortd_cuda::OnesweepPolicy<sortd_cuda::HistogramPolicy<64, 2>,
                                               sortd_cuda::BinningPolicy<64, 3>> {
        static constexpr uint32_t ROUND_TRIP_MIN = 0;
};
struct NoWaitPolicy : TestPolicy {
        static constexpr uint32_t ROUND_TRIP_MIN = UINT32_MAX;
};
constexpr size_t TEST_TILE = TestPolicy::binning_for<0>::TILE;
/* The same tiles in strips of 5 tiles and a part (production: 2^30 - 2^16
   keys): strip ends fall inside tiles, and a few thousand keys make several
   strips. */
using StripPolicy = sortd_cuda::OnesweepPolicy<
        sortd_cuda::HistogramPolicy<64, 2>, sortd_cuda::BinningPolicy<64, 3>,
        sortd_cuda::BinningPolicy<64, 3>, sortd_cuda::BinningPolicy<64, 3>, 5 * 192 + 17>;
constexpr size_t STRIP = StripPolicy::STRIP;

const sortd_payload PAYLOADS[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                  SORTD_PAYLOAD_VALUES64, SORTD_PAYLOAD_ARGSORT32,
                                  SORTD_PAYLOAD_ARGSORT64};

struct Dist {
        datagen_dist dist;
        unsigned param;
};
const Dist DISTS[] = {{DATAGEN_UNIFORM, 0},  {DATAGEN_ENTROPY, 2}, {DATAGEN_ENTROPY, 4},
                      {DATAGEN_ENTROPY, 16}, {DATAGEN_EQUAL, 0},   {DATAGEN_SORTED, 0},
                      {DATAGEN_REVERSE, 0},  {DATAGEN_FEW, 16},    {DATAGEN_NEGATIVE, 0},
                      {DATAGEN_SPECIAL, 0}};

constexpr size_t N_DISTS = sizeof(DISTS) / sizeof(DISTS[0]);

/* Under AddressSanitizer the matrices take fewer cases (run_matrix, run_production): it looks
   for memory errors, which the cases left out share with those kept. */
#if defined(__SANITIZE_ADDRESS__)
constexpr bool ASAN = true;
#else
constexpr bool ASAN = false;
#endif

sortd_engine *cpu_engine(size_t capacity)
{
        sortd_engine_config cfg{};
        cfg.capacity = capacity;
        cfg.threads = 1;
        sortd_engine *e = nullptr;
        char why[256];

        if (sortd_engine_create("cpu", &cfg, &e, why, sizeof(why)) != SORTD_OK)
                ck_abort_msg("cpu engine: %s", why);
        return e;
}

unsigned seed_base()
{
        const char *s = std::getenv("SIMT_SEED");

        return s ? (unsigned)std::strtoul(s, nullptr, 0) : 1;
}

/* A new interleaving per sort: seed and number of resident blocks (2..6). */
void schedule(uint64_t seed)
{
        simt::config c;

        c.seed = seed;
        c.resident_blocks = 2 + (unsigned)(seed % 5);
        simt::set_config(c);
}

/* One sort of the given input on the emulated kernels, the test oracle and
   the CPU engine; fails the test with the whole case named and the odd one
   out. */
template <class P32, class P64>
void check_keys(sortd_engine *cpu, const sortd_sort_desc &d, const std::vector<unsigned char> &k_in,
                const std::vector<unsigned char> &v_in, size_t n, const char *what)
{
        std::vector<unsigned char> k_gpu = k_in, k_cpu = k_in, k_ref = k_in;
        std::vector<unsigned char> v_gpu = v_in, v_cpu = v_in, v_ref = v_in;

        unsigned waits = emulated::sort<P32, P64>(d, k_gpu.data(), v_gpu.data(), n);
        uint32_t wait_min =
                sortd_key_size(d.key_type) == 8 ? P64::ROUND_TRIP_MIN : P32::ROUND_TRIP_MIN;
        ck_assert_msg(waits == (n >= wait_min), "%zu keys, %u waits for the histogram", n, waits);
        ck_assert_int_eq(ref_sort(&d, k_ref.data(), v_ref.data(), n), 0);
        sortd_status s = sortd_engine_sort(cpu, &d, k_cpu.data(), v_cpu.data(), n);
        ck_assert_msg(s == SORTD_OK, "cpu engine: %s", sortd_engine_error(cpu));

        bool gpu_ok = k_gpu == k_ref && v_gpu == v_ref;
        bool cpu_ok = k_cpu == k_gpu && v_cpu == v_gpu;
        ck_assert_msg(gpu_ok && cpu_ok, "%s %s %s [%u,%u) %s n=%zu SIMT_SEED=%u: %s",
                      sortd_key_type_name(d.key_type), sortd_payload_name(d.payload),
                      d.order == SORTD_DESCENDING ? "desc" : "asc", d.begin_bit, d.end_bit, what, n,
                      seed_base(),
                      !gpu_ok ? (k_gpu == k_ref
                                         ? "emulated kernels' values differ from the reference"
                                         : "emulated kernels' keys differ from the reference")
                              : "the CPU engine differs from the reference and emulated kernels");
}

/* check_keys on generated data. */
template <class P32, class P64>
void check_one(sortd_engine *cpu, const sortd_sort_desc &d, const Dist &dist, size_t n,
               uint64_t seed)
{
        size_t kb = sortd_key_size(d.key_type), vb = sortd_payload_size(d.payload);
        std::vector<unsigned char> k(n * kb), v(n * vb + 1);
        char dname[32];

        datagen_fill(k.data(), n, d.key_type, dist.dist, dist.param, seed);
        if (vb)
                datagen_fill_values(v.data(), n, (unsigned)vb, seed + 1);
        datagen_name(dist.dist, dist.param, dname, sizeof(dname));
        check_keys<P32, P64>(cpu, d, k, v, n, dname);
}

/* Every payload x order x distribution x size for one key type; under AddressSanitizer, which
   looks for memory errors that the distributions share, one distribution a cell in turn. */
void run_matrix(sortd_key_type t)
{
        const size_t sizes[] = {2,
                                3,
                                TEST_TILE - 1,
                                TEST_TILE,
                                TEST_TILE + 1,
                                7 * TEST_TILE + 17,
                                40 * TEST_TILE + 3};
        sortd_engine *cpu = cpu_engine(40 * TEST_TILE + 3);
        const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
        uint64_t seed = seed_base() * 1000003u;

        simt::reset_counters();
        for (size_t p = 0; p < sizeof(PAYLOADS) / sizeof(PAYLOADS[0]); p++)
                for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                        for (size_t k = 0; k < N_DISTS; k++)
                                for (size_t i = 0; i < nsizes; i++) {
                                        const size_t cell =
                                                (p * SORTD_ORDER_COUNT + o) * nsizes + i;
                                        const Dist &dist = DISTS[k];
                                        const size_t n = sizes[i];
                                        sortd_sort_desc d = {t, PAYLOADS[p], (sortd_order)o, 0, 0};

                                        if (ASAN && k != cell % N_DISTS)
                                                continue;
                                        schedule(++seed);
                                        if (seed % 4)
                                                check_one<TestPolicy, TestPolicy>(cpu, d, dist, n,
                                                                                  seed);
                                        else
                                                check_one<NoWaitPolicy, NoWaitPolicy>(cpu, d, dist,
                                                                                      n, seed);
                                }
        sortd_engine_destroy(cpu);
        const simt::stats &st = simt::counters();
        std::printf("%s: %llu launches, %llu fiber switches, %llu look-backs "
                    "(%llu over several tiles), %llu spin-wait steps\n",
                    sortd_key_type_name(t), (unsigned long long)st.launches,
                    (unsigned long long)st.switches, (unsigned long long)st.lookbacks,
                    (unsigned long long)st.multi_step_lookbacks,
                    (unsigned long long)st.spin_yields);
        /* the look-back really waited and walked past one predecessor */
        ck_assert_msg(simt::counters().multi_step_lookbacks > 0, "no multi-step look-back in %llu",
                      (unsigned long long)simt::counters().lookbacks);
        ck_assert_msg(simt::counters().spin_yields > 0, "no look-back ever waited");
}

#define KEY_TYPE_TEST(name, type)                                                                  \
        START_TEST(test_matrix_##name)                                                             \
        {                                                                                          \
                run_matrix(type);                                                                  \
        }                                                                                          \
        END_TEST

KEY_TYPE_TEST(u8, SORTD_KEY_U8)
KEY_TYPE_TEST(i8, SORTD_KEY_I8)
KEY_TYPE_TEST(u16, SORTD_KEY_U16)
KEY_TYPE_TEST(i16, SORTD_KEY_I16)
KEY_TYPE_TEST(u32, SORTD_KEY_U32)
KEY_TYPE_TEST(i32, SORTD_KEY_I32)
KEY_TYPE_TEST(f32, SORTD_KEY_F32)
KEY_TYPE_TEST(u64, SORTD_KEY_U64)
KEY_TYPE_TEST(i64, SORTD_KEY_I64)
KEY_TYPE_TEST(f64, SORTD_KEY_F64)
KEY_TYPE_TEST(f16, SORTD_KEY_F16)
KEY_TYPE_TEST(bf16, SORTD_KEY_BF16)

/* Bit windows, including ones that leave a short last digit. */
START_TEST(test_bit_ranges)
{
        struct {
                sortd_key_type t;
                unsigned begin, end;
        } w[] = {{SORTD_KEY_U32, 0, 1},   {SORTD_KEY_U32, 3, 17}, {SORTD_KEY_I32, 8, 16},
                 {SORTD_KEY_F32, 20, 32}, {SORTD_KEY_U64, 5, 64}, {SORTD_KEY_I64, 31, 45},
                 {SORTD_KEY_F64, 0, 13},  {SORTD_KEY_I16, 4, 12}, {SORTD_KEY_U8, 7, 8}};
        size_t n = 3 * TEST_TILE + 7;
        sortd_engine *cpu = cpu_engine(n);
        uint64_t seed = seed_base() * 7919u;

        for (auto &x : w)
                for (sortd_payload pl : {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_ARGSORT32})
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                sortd_sort_desc d = {x.t, pl, (sortd_order)o, x.begin, x.end};
                                check_one<TestPolicy, TestPolicy>(cpu, d, DISTS[0], n, ++seed);
                                check_one<TestPolicy, TestPolicy>(cpu, d, DISTS[1], n, ++seed);
                        }
        sortd_engine_destroy(cpu);
}
END_TEST

/* Runs of one low byte longer than a tile: the first pass meets tiles whose
   keys all share their digit and copies them without staging. */
START_TEST(test_homogeneous_tiles)
{
        size_t n = 30 * TEST_TILE + 11;
        sortd_engine *cpu = cpu_engine(n);
        uint64_t seed = seed_base() * 31337u;

        simt::reset_counters();
        for (sortd_key_type t : {SORTD_KEY_U32, SORTD_KEY_I64, SORTD_KEY_U16})
                for (sortd_payload pl :
                     {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32, SORTD_PAYLOAD_ARGSORT64})
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++) {
                                size_t kb = sortd_key_size(t), vb = sortd_payload_size(pl);
                                std::vector<unsigned char> k(n * kb), v(n * vb + 1);
                                sortd_sort_desc d = {t, pl, (sortd_order)o, 0, 0};

                                datagen_fill(k.data(), n, t, DATAGEN_UNIFORM, 0, ++seed);
                                for (size_t i = 0; i < n;
                                     i++) /* little-endian: byte 0 is digit 0 */
                                        k[i * kb] = (unsigned char)(i / (3 * TEST_TILE + 5));
                                datagen_fill_values(v.data(), n, (unsigned)vb, seed);
                                schedule(seed);
                                check_keys<TestPolicy, TestPolicy>(cpu, d, k, v, n, "runs");
                        }
        sortd_engine_destroy(cpu);
        std::printf("homogeneous: %llu tiles copied without staging\n",
                    (unsigned long long)simt::counters().homogeneous_tiles);
        ck_assert_msg(simt::counters().homogeneous_tiles > 0, "no tile took the short-circuit");
}
END_TEST

/* Policy P's binning tile for payload pl. */
template <class P> size_t tile_for(sortd_payload pl)
{
        switch (sortd_payload_size(pl)) {
        case 0:
                return P::template binning_for<0>::TILE;
        case 4:
                return P::template binning_for<4>::TILE;
        default:
                return P::template binning_for<8>::TILE;
        }
}

/* The production tile sizes around their boundaries, under tuning T's policy P (its P32 or
   P64). */
template <class T, class P>
void run_production(sortd_key_type t, const sortd_payload *pls, size_t npl)
{
        sortd_engine *cpu = cpu_engine(17 * P::MAX_TILE + 5);
        uint64_t seed = seed_base() * 104729u + T::ARCH_BEGIN;

        std::printf("production: tuning from sm_%d\n", T::ARCH_BEGIN / 10);
        simt::reset_counters();
        for (size_t i = 0; i < npl; i++) {
                const size_t tile = tile_for<P>(pls[i]);
                const size_t sizes[] = {tile - 1, tile, tile + 1, 5 * tile + 3, 17 * tile + 5};
                /* 17 tiles take the same paths as 5, at three times the emulator's time */
                for (size_t k = 0; k < (ASAN ? 4u : 5u); k++) {
                        const size_t n = sizes[k];
                        sortd_sort_desc d = {t, pls[i], (sortd_order)(n & 1), 0, 0};
                        for (const Dist &dist : {DISTS[0], DISTS[2], DISTS[3]}) {
                                schedule(++seed);
                                check_one<typename T::P32, typename T::P64>(cpu, d, dist, n, seed);
                        }
                }
        }
        sortd_engine_destroy(cpu);
        ck_assert(simt::counters().multi_step_lookbacks > 0);
}

START_TEST(test_production_32)
{
        const sortd_payload pls[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES64,
                                     SORTD_PAYLOAD_ARGSORT32};
        sortd_cuda::each_tuning([&](auto t) {
                using T = decltype(t);
                run_production<T, typename T::P32>(SORTD_KEY_F32, pls, 3);
        });
}
END_TEST

START_TEST(test_production_64)
{
        const sortd_payload pls[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                     SORTD_PAYLOAD_ARGSORT64};
        sortd_cuda::each_tuning([&](auto t) {
                using T = decltype(t);
                run_production<T, typename T::P64>(SORTD_KEY_I64, pls, 3);
        });
}
END_TEST

/*
 * Blocks of more threads than digits, as the tune step's candidates have (384 and 512 threads:
 * 12 and 16 warps, some owning no digit), with few keys a thread so that tiles stay small here:
 * the candidates' own tiles differ only in their loops' trip counts, which the production cases
 * cover. One case a block shape, key width and payload, at the tile's bounds and over several.
 */
template <int THREADS, int ITEMS>
using WidePolicy = sortd_cuda::OnesweepPolicy<sortd_cuda::HistogramPolicy<256, 2>,
                                              sortd_cuda::BinningPolicy<THREADS, ITEMS>>;

template <class P> void run_wide(sortd_engine *cpu, uint64_t *seed)
{
        const size_t tile = P::MAX_TILE;
        const size_t sizes[] = {tile - 1, tile, tile + 1, 5 * tile + 3};

        for (sortd_key_type t : {SORTD_KEY_U32, SORTD_KEY_F64})
                for (sortd_payload pl : PAYLOADS)
                        for (size_t n : sizes) {
                                sortd_sort_desc d = {t, pl, (sortd_order)(n & 1), 0, 0};
                                schedule(++*seed);
                                check_one<P, P>(cpu, d, DISTS[*seed % 3], n, *seed);
                        }
}

START_TEST(test_wide_blocks)
{
        sortd_engine *cpu = cpu_engine(5 * 768 + 3);
        uint64_t seed = seed_base() * 7907u;

        simt::reset_counters();
        run_wide<WidePolicy<384, 2>>(cpu, &seed);
        run_wide<WidePolicy<512, 1>>(cpu, &seed);
        sortd_engine_destroy(cpu);
        ck_assert(simt::counters().multi_step_lookbacks > 0);
}
END_TEST

/* The engine picks its policies by the PTX version of the code the device runs. */
START_TEST(test_tuning_choice)
{
        const struct {
                int arch, tuning;
        } cases[] = {{750, 750}, {800, 750},   {860, 750},   {890, 750},  {900, 900},
                     {990, 900}, {1000, 1000}, {1030, 1000}, {1200, 1000}};

        for (const auto &c : cases)
                ck_assert_int_eq(sortd_cuda::with_tuning(
                                         c.arch, [](auto t) { return decltype(t)::ARCH_BEGIN; }),
                                 c.tuning);
}
END_TEST

/* Bytes past the caller's arrays that a sort on them must leave alone. */
constexpr size_t GUARD = 64;
constexpr unsigned char GUARD_BYTE = 0xa5;

/* The device-to-device copies caller_buffers.h promises for a sort of `passes` binning passes:
   an odd number leaves 32/64-bit keys and any values in the engine's buffer, to be copied back;
   8/16-bit keys are always copied in and out. */
unsigned expected_copies(const sortd_sort_desc &d, size_t n, unsigned passes)
{
        if (n < 2)
                return 0;
        unsigned keys = sortd_key_size(d.key_type) < 4 ? 2 : passes % 2;
        return keys + (sortd_payload_size(d.payload) ? passes % 2 : 0);
}

/* sort_device on arrays of exactly n keys and values (plus a guard) against the CPU engine's
   sortd_engine_sort of the same input; and, where passes >= 0, its copies. */
template <class P = TestPolicy>
void check_device(sortd_engine *cpu, const sortd_sort_desc &d, const Dist &dist, size_t n,
                  int passes, uint64_t seed)
{
        size_t kb = sortd_key_size(d.key_type), vb = sortd_payload_size(d.payload);
        std::vector<unsigned char> k(n * kb + GUARD, GUARD_BYTE), v(n * vb + GUARD, GUARD_BYTE);
        std::vector<unsigned char> k_cpu, v_cpu, guard(GUARD, GUARD_BYTE);
        char dname[32];

        datagen_fill(k.data(), n, d.key_type, dist.dist, dist.param, seed);
        if (vb)
                datagen_fill_values(v.data(), n, (unsigned)vb, seed + 1);
        if (d.payload == SORTD_PAYLOAD_ARGSORT32 || d.payload == SORTD_PAYLOAD_ARGSORT64)
                std::memset(v.data(), 0xff, n * vb); /* every index must be written */
        k_cpu = k;
        v_cpu = v;
        ck_assert_msg(sortd_engine_sort(cpu, &d, k_cpu.data(), v_cpu.data(), n) == SORTD_OK,
                      "cpu engine: %s", sortd_engine_error(cpu));
        schedule(seed);
        unsigned copies = emulated::sort_device<P, P>(d, k.data(), v.data(), n);

        datagen_name(dist.dist, dist.param, dname, sizeof(dname));
        ck_assert_msg(k == k_cpu && v == v_cpu, "sort_device %s %s %s [%u,%u) %s n=%zu: %s",
                      sortd_key_type_name(d.key_type), sortd_payload_name(d.payload),
                      d.order == SORTD_DESCENDING ? "desc" : "asc", d.begin_bit, d.end_bit, dname,
                      n,
                      !std::equal(guard.begin(), guard.end(), k.end() - GUARD) ||
                                      !std::equal(guard.begin(), guard.end(), v.end() - GUARD)
                              ? "wrote past the caller's arrays"
                              : "differs from the CPU engine");
        if (passes < 0)
                return;
        ck_assert_msg(copies == expected_copies(d, n, (unsigned)passes),
                      "sort_device %s %s [%u,%u) n=%zu, %u passes: %u device copies, want %u",
                      sortd_key_type_name(d.key_type), sortd_payload_name(d.payload), d.begin_bit,
                      d.end_bit, n, passes, copies, expected_copies(d, n, (unsigned)passes));
}

/*
 * sortd_engine_sort_device's buffer choice (caller_buffers.h): every key type and payload, an
 * even and an odd number of passes (full width, and a bit window a pass narrower or wider),
 * no pass at all (equal keys), and n = 1 (an argsort writes index 0).
 */
START_TEST(test_sort_device)
{
        /* By key bytes - 1. Uniform keys use every place of their window: passes = its width
           in digits; the full width of 8- and 16-bit keys is one and two passes. */
        const struct {
                unsigned begin, end;
        } odd_window[] = {{1, 7}, {4, 12}, {}, {0, 24}, {}, {}, {}, {3, 43}};
        size_t n = 5 * TEST_TILE + 3;
        sortd_engine *cpu = cpu_engine(n);
        uint64_t seed = seed_base() * 65537u;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (sortd_payload pl : PAYLOADS) {
                        unsigned kb = (unsigned)sortd_key_size((sortd_key_type)t);
                        if (kb > 8) /* 16-byte keys never reach the kernels (kernels/columns) */
                                continue;
                        unsigned b = odd_window[kb - 1].begin, e = odd_window[kb - 1].end;
                        sortd_sort_desc full = {(sortd_key_type)t, pl, SORTD_ASCENDING, 0, 0};
                        sortd_sort_desc window = {(sortd_key_type)t, pl, SORTD_DESCENDING, b, e};

                        check_device(cpu, full, DISTS[0], n, (int)kb, ++seed);
                        check_device(cpu, window, DISTS[0], n, (int)(e - b + 7) / 8, ++seed);
                        check_device(cpu, full, DISTS[4], n, 0, ++seed); /* all equal */
                        /* two keys may share a digit, and that place is skipped */
                        check_device(cpu, window, DISTS[0], 2, -1, ++seed);
                        check_device(cpu, full, DISTS[0], 1, 0, ++seed);
                }
        sortd_engine_destroy(cpu);
}
END_TEST

/* Sorts of several strips: one binning launch per strip and place, each
   strip's keys of a digit after the previous strip's (left by its last
   tile), and strip ends inside tiles. */
START_TEST(test_strips)
{
        const size_t sizes[] = {STRIP, STRIP + 1, 3 * STRIP + 100};
        const size_t most = 3 * STRIP + 100;
        sortd_engine *cpu = cpu_engine(most);
        uint64_t seed = seed_base() * 15485863u;
        std::vector<unsigned char> k(most * 4), v(1);
        sortd_sort_desc u32 = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};

        /* 4 strips of uniform u32 keys: one histogram, one scan, and 4
           passes of a binning launch per strip */
        datagen_fill(k.data(), most, SORTD_KEY_U32, DATAGEN_UNIFORM, 0, seed);
        simt::reset_counters();
        emulated::sort<StripPolicy, StripPolicy>(u32, k.data(), v.data(), most);
        ck_assert_uint_eq(simt::counters().launches, 1 + 1 + 4 * 4);

        for (sortd_key_type t : {SORTD_KEY_U32, SORTD_KEY_I64, SORTD_KEY_F32, SORTD_KEY_U8})
                for (sortd_payload pl : PAYLOADS)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                for (const Dist &dist : {DISTS[0], DISTS[7], DISTS[4]})
                                        for (size_t n : sizes) {
                                                sortd_sort_desc d = {t, pl, (sortd_order)o, 0, 0};
                                                schedule(++seed);
                                                check_one<StripPolicy, StripPolicy>(cpu, d, dist, n,
                                                                                    seed);
                                        }
        for (sortd_payload pl : {SORTD_PAYLOAD_VALUES32, SORTD_PAYLOAD_ARGSORT64}) {
                sortd_sort_desc d = {SORTD_KEY_I64, pl, SORTD_DESCENDING, 3, 43};
                check_device<StripPolicy>(cpu, d, DISTS[0], most, 5, ++seed);
        }
        sortd_engine_destroy(cpu);
}
END_TEST

/* ---- batches: the segmented kernel (kernels/cuda/segments.h, agent_block_sort.cuh) ---- */

/* 2 warps x 3 keys, TestPolicy's tile: members of a few hundred keys cross the limit above
   which the cuda engine hands a member to Onesweep. */
using SegmentTestPolicy = sortd_cuda::BlockSortPolicy<64, 3>;
constexpr size_t SEGMENT_TILE = SegmentTestPolicy::TILE;

/* The plan kernels/engine.c makes of a request. */
sortd__plan plan_of(const sortd_sort_desc &d)
{
        unsigned kb = (unsigned)sortd_key_size(d.key_type);

        return sortd__plan{kb,
                           (unsigned)sortd_payload_size(d.payload),
                           d.payload == SORTD_PAYLOAD_ARGSORT32 ||
                                   d.payload == SORTD_PAYLOAD_ARGSORT64,
                           sortd__key_kind_of(d.key_type),
                           d.order == SORTD_DESCENDING,
                           d.begin_bit,
                           d.end_bit ? d.end_bit : kb * 8,
                           false};
}

/*
 * Sorts jobs as the cuda engine's sort_batch does (cuda_engine.cu), on the emulator: the same
 * routing and packing (segments.h) into arrays of room's size, host memory standing in for
 * the device's; members above SegP::TILE keys through Onesweep (P32, P64). Values no member
 * writes stay 0xa5. Returns the number of sub-batches.
 */
template <class SegP, class P32, class P64>
unsigned sort_batch(sortd__batch_job *jobs, size_t count, const sortd_cuda::SegmentRoom &room)
{
        std::vector<uint64_t> keys(room.key_bytes / 8), vals_in(room.val_bytes / 8),
                vals_out(room.val_bytes / 8);
        sortd_cuda::Segment segs[sortd_cuda::BATCH_SEGMENTS];
        emulated::Backend be;
        unsigned sub_batches = 0;

        sortd_cuda::route_batch(
                jobs, count, SegP::TILE, room, segs,
                [](sortd__batch_job *j) {
                        emulated::sort<P32, P64>(j->item->desc, j->keys, j->vals, j->n);
                        return SORTD_OK;
                },
                [&](const sortd_cuda::SegmentBatch &b) {
                        auto *k = (unsigned char *)keys.data();

                        sub_batches++;
                        std::memset(vals_out.data(), 0xa5, room.val_bytes);
                        sortd_cuda::copy_segments(b, k, (unsigned char *)vals_in.data(), true, 0,
                                                  b.count);
                        if (!sortd_cuda::segmented_sort<SegP>(be, b.segs, b.count, b.narrow, k,
                                                              vals_in.data(), vals_out.data()))
                                std::abort();
                        sortd_cuda::copy_segments(b, k, (unsigned char *)vals_out.data(), false, 0,
                                                  b.count);
                        return SORTD_OK;
                },
                [](sortd__batch_job *j, sortd_status st) {
                        j->item->status = st;
                        j->item->why[0] = '\0';
                });
        return sub_batches;
}

/* One member of a test batch: its request, input, and the item each sort fills. */
struct Member {
        sortd_sort_desc d;
        size_t n;
        std::string dist;
        std::vector<unsigned char> k, v;
};

Member make_member(const sortd_sort_desc &d, size_t n, const Dist &dist, uint64_t seed)
{
        size_t kb = sortd_key_size(d.key_type), vb = sortd_payload_size(d.payload);
        Member m = {d, n, "", std::vector<unsigned char>(n * kb),
                    std::vector<unsigned char>(n * vb + 1)};
        char dname[32];

        datagen_fill(m.k.data(), n, d.key_type, dist.dist, dist.param, seed);
        if (vb)
                datagen_fill_values(m.v.data(), n, (unsigned)vb, seed + 1);
        m.dist = datagen_name(dist.dist, dist.param, dname, sizeof(dname));
        return m;
}

/* Items holding copies of the members' inputs. */
std::vector<sortd_engine_batch_item> items_of(std::vector<Member> &in)
{
        std::vector<sortd_engine_batch_item> items(in.size());

        for (size_t i = 0; i < in.size(); i++) {
                items[i].desc = in[i].d;
                items[i].n = in[i].n;
                items[i].keys = std::malloc(in[i].k.size() + 1);
                items[i].vals = std::malloc(in[i].v.size());
                std::memcpy(items[i].keys, in[i].k.data(), in[i].k.size());
                std::memcpy(items[i].vals, in[i].v.data(), in[i].v.size());
                items[i].status = SORTD_E_DEVICE; /* until a sort says otherwise */
        }
        return items;
}

void free_items(std::vector<sortd_engine_batch_item> &items)
{
        for (auto &it : items) {
                std::free(it.keys);
                std::free(it.vals);
        }
}

/*
 * One batch of members on the emulated kernels (as the cuda engine routes it, in room), the
 * CPU engine's sortd_engine_sort_batch and the reference, member by member; fails naming the
 * member and the odd one out. Returns the sub-batches the emulated sort made.
 */
template <class SegP, class P32, class P64>
unsigned check_batch(sortd_engine *cpu, std::vector<Member> &batch,
                     const sortd_cuda::SegmentRoom &room, uint64_t seed)
{
        std::vector<sortd_engine_batch_item> gpu = items_of(batch), host = items_of(batch);
        std::vector<sortd__batch_job> jobs;
        unsigned sub_batches;

        for (auto &it : gpu)
                jobs.push_back({plan_of(it.desc), it.keys, it.vals, it.n, &it});
        schedule(seed);
        sub_batches = sort_batch<SegP, P32, P64>(jobs.data(), jobs.size(), room);
        ck_assert_msg(sortd_engine_sort_batch(cpu, host.data(), host.size()) == SORTD_OK,
                      "cpu engine: %s", sortd_engine_error(cpu));
        for (size_t i = 0; i < batch.size(); i++) {
                const Member &m = batch[i];
                size_t kb = m.k.size(), vb = m.n * sortd_payload_size(m.d.payload);
                std::vector<unsigned char> k = m.k, v = m.v;

                ck_assert_int_eq(ref_sort(&m.d, k.data(), v.data(), m.n), 0);
                bool keys_ok = std::memcmp(gpu[i].keys, k.data(), kb) == 0;
                bool gpu_ok = keys_ok && std::memcmp(gpu[i].vals, v.data(), vb) == 0;
                bool cpu_ok = std::memcmp(host[i].keys, k.data(), kb) == 0 &&
                              std::memcmp(host[i].vals, v.data(), vb) == 0;
                ck_assert_msg(gpu[i].status == SORTD_OK && gpu_ok && cpu_ok,
                              "batch member %zu of %zu: %s %s %s [%u,%u) %s n=%zu SIMT_SEED=%u: %s",
                              i, batch.size(), sortd_key_type_name(m.d.key_type),
                              sortd_payload_name(m.d.payload),
                              m.d.order == SORTD_DESCENDING ? "desc" : "asc", m.d.begin_bit,
                              m.d.end_bit, m.dist.c_str(), m.n, seed_base(),
                              gpu[i].status != SORTD_OK ? "no success from the emulated batch"
                              : !keys_ok ? "emulated kernels' keys differ from the reference"
                              : !gpu_ok  ? "emulated kernels' values differ from the reference"
                                         : "the CPU engine's batch differs from the reference");
        }
        free_items(gpu);
        free_items(host);
        return sub_batches;
}

/* Bit windows by key width (bytes - 1): none, then two narrower ones. */
const struct {
        unsigned begin, end;
} SEGMENT_WINDOWS[8][3] = {{{0, 0}, {7, 8}, {1, 7}},
                           {{0, 0}, {4, 12}, {3, 16}},
                           {},
                           {{0, 0}, {3, 17}, {20, 32}},
                           {},
                           {},
                           {},
                           {{0, 0}, {5, 64}, {31, 45}}};

/*
 * Batches that mix every key type, payload and order, bit windows, uniform and few-unique keys,
 * and sizes from 1 key to several tiles (the kernel takes up to one tile, Onesweep the rest), in
 * a seeded random order; half of them packed into a room so small that they take several
 * sub-batches. Then one batch of small members of both key widths, which must take one
 * launch of the kernel for each, and production-sized members at the production tile.
 */
START_TEST(test_segmented)
{
        const size_t sizes[] = {1,
                                2,
                                3,
                                33,
                                SEGMENT_TILE - 1,
                                SEGMENT_TILE,
                                SEGMENT_TILE + 1,
                                3 * SEGMENT_TILE + 5};
        const Dist dists[] = {DISTS[0], DISTS[7], DISTS[1], DISTS[4]};
        const sortd_cuda::SegmentRoom wide = {(size_t)1 << 20, (size_t)1 << 20,
                                              sortd_cuda::BATCH_SEGMENTS};
        const sortd_cuda::SegmentRoom tight = {SEGMENT_TILE * 8, SEGMENT_TILE * 8, 5};
        sortd_engine *cpu = cpu_engine(3 * SEGMENT_TILE + 5);
        uint64_t seed = seed_base() * 2654435761u, pick = seed;
        std::vector<Member> all;
        unsigned split = 0;

        for (int t = 0; t < SORTD_KEY_TYPE_COUNT; t++)
                for (sortd_payload pl : PAYLOADS)
                        for (int o = 0; o < SORTD_ORDER_COUNT; o++)
                                for (size_t n : sizes) {
                                        unsigned kb = (unsigned)sortd_key_size((sortd_key_type)t);
                                        if (kb > 8) /* never reach the kernels */
                                                continue;
                                        auto w = SEGMENT_WINDOWS[kb - 1][all.size() % 3];
                                        sortd_sort_desc d = {(sortd_key_type)t, pl, (sortd_order)o,
                                                             w.begin, w.end};
                                        all.push_back(make_member(d, n, dists[all.size() / 3 % 4],
                                                                  ++seed));
                                }
        for (size_t i = all.size(); i > 1; i--) /* seeded shuffle: batches mix everything */
                std::swap(all[i - 1], all[(pick = pick * 6364136223846793005u + 1) % i]);
        for (size_t at = 0, b = 0; at < all.size(); at += 40, b++) {
                std::vector<Member> batch(all.begin() + at,
                                          all.begin() + std::min(at + 40, all.size()));
                unsigned subs = check_batch<SegmentTestPolicy, TestPolicy, TestPolicy>(
                        cpu, batch, b % 2 ? tight : wide, ++seed);
                split += subs > 1;
        }
        ck_assert_msg(split > 0, "no batch took several sub-batches");

        /* one launch per key width for the whole batch */
        std::vector<Member> small;
        for (sortd_key_type t : {SORTD_KEY_U8, SORTD_KEY_F64, SORTD_KEY_I32, SORTD_KEY_U64})
                for (size_t n : {(size_t)2, SEGMENT_TILE})
                        small.push_back(
                                make_member({t, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0}, n,
                                            DISTS[0], ++seed));
        simt::reset_counters();
        ck_assert_uint_eq(
                (check_batch<SegmentTestPolicy, TestPolicy, TestPolicy>(cpu, small, wide, ++seed)),
                1);
        ck_assert_uint_eq(simt::counters().launches, 2);
        sortd_engine_destroy(cpu);
}
END_TEST

/* The production segmented policy (sortd_cuda::SegmentPolicy) at its tile and around it. */
START_TEST(test_segmented_production)
{
        constexpr size_t tile = sortd_cuda::SegmentPolicy::TILE;
        const sortd_cuda::SegmentRoom room = {(size_t)1 << 20, (size_t)1 << 20,
                                              sortd_cuda::BATCH_SEGMENTS};
        sortd_engine *cpu = cpu_engine(tile + 1);
        uint64_t seed = seed_base() * 40503u;
        std::vector<Member> batch;

        batch.push_back(make_member({SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0},
                                    tile, DISTS[0], ++seed));
        batch.push_back(
                make_member({SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 0, 0}, tile,
                            DISTS[9], ++seed));
        batch.push_back(make_member({SORTD_KEY_I16, SORTD_PAYLOAD_VALUES64, SORTD_DESCENDING, 0, 0},
                                    tile - 1, DISTS[7], ++seed));
        batch.push_back(make_member({SORTD_KEY_I64, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0},
                                    1000, DISTS[2], ++seed));
        batch.push_back(make_member({SORTD_KEY_U8, SORTD_PAYLOAD_ARGSORT64, SORTD_ASCENDING, 0, 0},
                                    tile + 1, DISTS[0], ++seed));
        check_batch<sortd_cuda::SegmentPolicy, sortd_cuda::TuningSm90::P32,
                    sortd_cuda::TuningSm90::P64>(cpu, batch, room, ++seed);
        sortd_engine_destroy(cpu);
}
END_TEST

Suite *emulated_suite()
{
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {{"u8", test_matrix_u8},
                     {"i8", test_matrix_i8},
                     {"u16", test_matrix_u16},
                     {"i16", test_matrix_i16},
                     {"u32", test_matrix_u32},
                     {"i32", test_matrix_i32},
                     {"f32", test_matrix_f32},
                     {"u64", test_matrix_u64},
                     {"i64", test_matrix_i64},
                     {"f64", test_matrix_f64},
                     {"f16", test_matrix_f16},
                     {"bf16", test_matrix_bf16},
                     {"bits", test_bit_ranges},
                     {"homogeneous", test_homogeneous_tiles},
                     {"production32", test_production_32},
                     {"production64", test_production_64},
                     {"tuning", test_tuning_choice},
                     {"wide-blocks", test_wide_blocks},
                     {"device", test_sort_device},
                     {"strips", test_strips},
                     {"segmented", test_segmented},
                     {"segmented-production", test_segmented_production}};
        Suite *s = suite_create("emulated-kernels");

        for (const auto &c : cases) {
                TCase *tc = tcase_create(c.name);
                /* the emulator runs a few thousand sorts per case */
                tcase_set_timeout(tc, 600);
                tcase_add_test(tc, c.test);
                suite_add_tcase(s, tc);
        }
        return s;
}

} /* namespace */

int main(void)
{
        return run_suite(emulated_suite());
}
