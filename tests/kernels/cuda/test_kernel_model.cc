/*
 * The emulator's cost model (tests/support/simt/cost.h), itself tested on
 * access patterns whose cost is known, then applied to the production
 * kernels: the quantities that decide their speed on a GPU, held to the
 * issue's targets for u32 keys.
 */
#include "simt.h" /* first: the kernels compile against it */

#include <check.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/compat.cuh" /* -I kernels/ */
#include "cuda/policy.cuh"
#include "kernel_model.h"
extern "C" {
#include "suite.h"
}

namespace
{

using namespace sortd_cuda;

/* One launch of one warp per block; returns its cost. */
template <class F> simt::kernel_cost one_launch(unsigned blocks, unsigned threads, F body)
{
        simt::cost_begin();
        simt::launch(dim3(blocks), dim3(threads), body);
        std::vector<simt::kernel_cost> c = simt::cost_end();

        ck_assert_uint_eq(c.size(), 1);
        return c[0];
}

alignas(256) uint32_t g_words[32 * 64];
alignas(256) uint64_t g_wide[32 * 8];

START_TEST(test_global_sectors)
{
        /* 32 consecutive words: 128 bytes, 4 sectors */
        simt::kernel_cost c = one_launch(1, 32, [] { (void)global_load(&g_words[lane_id()]); });
        ck_assert_uint_eq(c.gld, 1);
        ck_assert_uint_eq(c.gld_sectors, 4);
        ck_assert_uint_eq(c.dram_read_sectors, 4);

        /* a stride of 8 words puts every lane in its own sector */
        c = one_launch(1, 32, [] { (void)global_load(&g_words[8 * lane_id()]); });
        ck_assert_uint_eq(c.gld_sectors, 32);

        /* 8-byte lanes: 256 bytes, 8 sectors; lanes guarded off cost nothing */
        c = one_launch(1, 32, [] { global_store(&g_wide[lane_id()], (uint64_t)1); });
        ck_assert_uint_eq(c.gst_sectors, 8);
        c = one_launch(1, 32,
                       [] { global_store_if(lane_id() < 4, &g_wide[lane_id()], (uint64_t)1); });
        ck_assert_uint_eq(c.gst, 1);
        ck_assert_uint_eq(c.gst_sectors, 1);
        ck_assert_uint_eq(c.dram_write_sectors, 1);
}
END_TEST

START_TEST(test_dram_sectors)
{
        /* two warps of two blocks read the same 4 sectors: DRAM serves them once */
        simt::kernel_cost c = one_launch(2, 32, [] { (void)global_load(&g_words[lane_id()]); });
        ck_assert_uint_eq(c.gld_sectors, 8);
        ck_assert_uint_eq(c.dram_read_sectors, 4);

        /* written, then read in the same launch: L2 holds it */
        c = one_launch(1, 32, [] {
                global_store(&g_words[lane_id()], 1u);
                (void)global_load(&g_words[lane_id()]);
        });
        ck_assert_uint_eq(c.dram_write_sectors, 4);
        ck_assert_uint_eq(c.dram_read_sectors, 0);

        /* half sectors written by different warps merge into whole ones */
        c = one_launch(1, 64, [] { global_store(&g_words[threadIdx.x], 1u); });
        ck_assert_uint_eq(c.gst_sectors, 8);
        ck_assert_uint_eq(c.dram_write_sectors, 8);
}
END_TEST

struct Bank {
        uint32_t w[32 * 33];
        uint64_t d[64];
};

START_TEST(test_shared_wavefronts)
{
        struct Case {
                unsigned stride; /* in words */
                uint64_t wavefronts;
        } cases[] = {{1, 1}, {0, 1}, {2, 2}, {32, 32}, {33, 1}, {16, 16}};

        for (const Case &k : cases) {
                unsigned stride = k.stride;
                simt::kernel_cost c = one_launch(1, 32, [stride] {
                        Bank &b = simt::block_shared<Bank>();
                        (void)shared_load(&b.w[stride * lane_id()]);
                });
                ck_assert_msg(c.shared_wavefronts == k.wavefronts,
                              "stride %u: %llu wavefronts, want %llu", stride,
                              (unsigned long long)c.shared_wavefronts,
                              (unsigned long long)k.wavefronts);
                ck_assert_uint_eq(c.lds, 1);
        }
        /* 8-byte lanes: 64 words over 32 banks, two wavefronts */
        simt::kernel_cost c = one_launch(1, 32, [] {
                Bank &b = simt::block_shared<Bank>();
                shared_store(&b.d[lane_id()], (uint64_t)1);
        });
        ck_assert_uint_eq(c.sts, 1);
        ck_assert_uint_eq(c.shared_wavefronts, 2);
        /* atomics on one word by four lanes, the rest guarded off: they
           serialise, unlike loads of one word, which broadcast */
        c = one_launch(1, 32, [] {
                Bank &b = simt::block_shared<Bank>();
                shared_atomic_add_if(lane_id() < 4, &b.w[0], 1u);
        });
        ck_assert_uint_eq(c.atoms, 1);
        ck_assert_uint_eq(c.shared_atomics, 4);
        ck_assert_uint_eq(c.shared_wavefronts, 4);
        /* atomics on 32 distinct words in 32 banks: one wavefront */
        c = one_launch(1, 32, [] {
                Bank &b = simt::block_shared<Bank>();
                shared_atomic_add_if(true, &b.w[lane_id()], 1u);
        });
        ck_assert_uint_eq(c.shared_wavefronts, 1);
}
END_TEST

START_TEST(test_warp_ops_and_uniformity)
{
        simt::kernel_cost c = one_launch(3, 64, [] {
                (void)__ballot_sync(FULL_MASK, 1);
                (void)__shfl_sync(FULL_MASK, 1u, 0);
                __syncthreads();
        });
        ck_assert_uint_eq(c.warps, 6);
        ck_assert_uint_eq(c.ballot, 6);
        ck_assert_uint_eq(c.shfl, 6);
        ck_assert_uint_eq(c.barrier, 6);
        ck_assert_uint_eq(c.match, 0);
        ck_assert_uint_eq(c.nonuniform, 0);

        /* an accessor behind a branch, not a guard: the model says so */
        c = one_launch(1, 32, [] {
                if (lane_id() == 0)
                        (void)global_load(&g_words[0]);
        });
        ck_assert_uint_eq(c.nonuniform, 1);
        ck_assert_ptr_nonnull(strstr(c.nonuniform_site.c_str(), "test_kernel_model.cc"));
}
END_TEST

/* The modelled targets of issue 13 for u32 keys, on 2^18 uniform keys (64
   tiles: enough for look-backs and partial sectors between tiles). The
   kernels are at 0.397 shared wavefronts per key and pass: 0.36 per key
   (rank atomic, start read and staging store, with random digits about 3
   wavefronts per warp access each; the in-order reads 1) and 0.04 per tile
   (16-bit warp counters: clear, sum, rewrite). Every architecture's tuning is held to them. */
START_TEST(test_production_u32)
{
        sortd_sort_desc d = {SORTD_KEY_U32, SORTD_PAYLOAD_NONE, SORTD_ASCENDING, 0, 0};

        sortd_cuda::each_tuning([&](auto t) {
                const int arch = decltype(t)::ARCH_BEGIN;
                emulated::model_report r =
                        emulated::model_sort(d, 1u << 18, DATAGEN_UNIFORM, 0, 7, arch);

                std::printf("# tuning from sm_%d\n", arch / 10);
                emulated::model_print(stdout, r);
                ck_assert_msg(r.sorted, "sm_%d: the modelled sort is wrong", arch / 10);
                ck_assert_uint_eq(r.passes, 4);
                ck_assert_uint_eq(r.nonuniform, 0);
                ck_assert_uint_eq(r.binning_match, 0);
                ck_assert_msg(d.key_type == SORTD_KEY_U16 ||
                                      r.dram_bytes_per_key <= 1.1 * r.min_bytes_per_key,
                              "sm_%d: DRAM %.2f bytes/key, over 1.1x the minimum %.2f", arch / 10,
                              r.dram_bytes_per_key, r.min_bytes_per_key);
                ck_assert_msg(r.wavefronts_per_key_pass <= 0.4,
                              "sm_%d: %.3f shared wavefronts/key/pass, over 0.4", arch / 10,
                              r.wavefronts_per_key_pass);
        });
}
END_TEST

/* 32- and 64-bit keys with every payload: verified, uniform, no MATCH, and within 1.1x the
   minimum DRAM bytes. Their shared wavefronts are printed, not held: a value staged through
   shared memory costs its own scatter and read-back (about 0.2 a key and pass), and 8-byte keys
   more than 4-byte ones, so only u32 keys alone meet 0.4 (above). A 16-bit key is verified
   only: it is widened to 32 bits and back (dispatch.cuh), about twice its minimum bytes. */
/* Under AddressSanitizer every third kind: it looks for memory errors, which the kinds share. */
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t KIND_STEP = 3;
#else
constexpr size_t KIND_STEP = 1;
#endif

START_TEST(test_production_kinds)
{
        const sortd_key_type types[] = {SORTD_KEY_U32, SORTD_KEY_I64};
        const sortd_payload payloads[] = {SORTD_PAYLOAD_NONE, SORTD_PAYLOAD_VALUES32,
                                          SORTD_PAYLOAD_VALUES64, SORTD_PAYLOAD_ARGSORT32,
                                          SORTD_PAYLOAD_ARGSORT64};
        std::vector<sortd_sort_desc> descs;

        for (sortd_key_type t : types)
                for (sortd_payload p : payloads)
                        descs.push_back({t, p,
                                         t == SORTD_KEY_I64 ? SORTD_DESCENDING : SORTD_ASCENDING, 0,
                                         0});
        descs.push_back({SORTD_KEY_U16, SORTD_PAYLOAD_VALUES32, SORTD_ASCENDING, 0, 0});
        for (size_t i = 0; i < descs.size(); i += KIND_STEP) {
                const sortd_sort_desc &d = descs[i];
                emulated::model_report r =
                        emulated::model_sort(d, 1u << 16, DATAGEN_UNIFORM, 0, 3, 900);

                emulated::model_print(stdout, r);
                ck_assert_msg(r.sorted, "key type %d payload %d: wrong", d.key_type, d.payload);
                ck_assert_uint_eq(r.nonuniform, 0);
                ck_assert_uint_eq(r.binning_match, 0);
                ck_assert_msg(d.key_type == SORTD_KEY_U16 ||
                                      r.dram_bytes_per_key <= 1.1 * r.min_bytes_per_key,
                              "key type %d payload %d: DRAM %.2f bytes/key, over 1.1x the minimum "
                              "%.2f",
                              d.key_type, d.payload, r.dram_bytes_per_key, r.min_bytes_per_key);
        }
}
END_TEST

} /* namespace */

int main(void)
{
        const struct {
                const char *name;
                const TTest *test;
        } cases[] = {{"global_sectors", test_global_sectors},
                     {"dram_sectors", test_dram_sectors},
                     {"shared_wavefronts", test_shared_wavefronts},
                     {"warp_ops", test_warp_ops_and_uniformity},
                     {"production_u32", test_production_u32},
                     {"production_kinds", test_production_kinds}};
        Suite *s = suite_create("kernel-model");

        for (const auto &c : cases) {
                TCase *tc = tcase_create(c.name);
                tcase_set_timeout(tc, 600);
                tcase_add_test(tc, c.test);
                suite_add_tcase(s, tc);
        }
        return run_suite(s);
}
