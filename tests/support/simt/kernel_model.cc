/*
 * The kernels' cost model for one sort: see kernel_model.h.
 */
#include "emulated_sort.h" /* first: simt.h before the kernels */

#include "kernel_model.h"

#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {
#include "reference.h"
}

namespace emulated
{

namespace
{

/* Onesweep's floor: the histogram reads the keys once; each pass reads and
   writes keys and values, except that argsort's first pass makes its values. */
double onesweep_min_bytes(const model_report &r)
{
        double per_pass = 2.0 * (r.key_bytes + r.val_bytes);
        double values_made = r.argsort && r.passes ? r.val_bytes : 0;

        return r.key_bytes + r.passes * per_pass - values_made;
}

void summarise(model_report &r)
{
        uint64_t dram = 0, wavefronts = 0;

        r.passes = 0;
        r.binning_match = 0;
        r.nonuniform = 0;
        for (const simt::kernel_cost &c : r.launches) {
                dram += c.dram_bytes();
                r.nonuniform += c.nonuniform;
                if (c.name != "binning")
                        continue;
                r.passes++;
                wavefronts += c.shared_wavefronts;
                r.binning_match += c.match;
        }
        r.min_bytes_per_key = onesweep_min_bytes(r);
        r.dram_bytes_per_key = (double)dram / (double)r.n;
        r.wavefronts_per_key_pass =
                r.passes ? (double)wavefronts / (double)r.n / (double)r.passes : 0;
}

bool same_result(const sortd_sort_desc &d, const std::vector<unsigned char> &got,
                 std::vector<unsigned char> keys, std::vector<unsigned char> vals, size_t n,
                 const std::vector<unsigned char> &got_vals)
{
        if (ref_sort(&d, keys.data(), vals.data(), n) != 0)
                return false;
        return got == keys && got_vals == vals;
}

} /* namespace */

model_report model_sort(const sortd_sort_desc &d, size_t n, datagen_dist dist, unsigned param,
                        uint64_t seed, int arch)
{
        model_report r = {};
        size_t kb = sortd_key_size(d.key_type), vb = sortd_payload_size(d.payload);
        std::vector<unsigned char> keys(n * kb), vals(n * vb + 1);

        datagen_fill(keys.data(), n, d.key_type, dist, param, seed);
        datagen_fill_values(vals.data(), n, (unsigned)vb, seed);
        std::vector<unsigned char> k = keys, v = vals;

        r.n = n;
        r.key_bytes = (unsigned)kb;
        r.val_bytes = (unsigned)vb;
        r.argsort = d.payload == SORTD_PAYLOAD_ARGSORT32 || d.payload == SORTD_PAYLOAD_ARGSORT64;
        simt::cost_begin();
        sortd_cuda::with_tuning(arch, [&](auto t) {
                using T = decltype(t);
                sort<typename T::P32, typename T::P64>(d, k.data(), v.data(), n);
        });
        r.launches = simt::cost_end();
        summarise(r);
        if (r.argsort) /* the reference makes the indices itself */
                std::memset(vals.data(), 0, vals.size());
        r.sorted = same_result(d, k, keys, vals, n, v);
        return r;
}

void model_print(FILE *f, const model_report &r)
{
        const double n = (double)r.n;

        std::fprintf(f, "%-10s %9s %9s %9s %11s %7s %7s %7s %7s %8s\n", "launch", "DRAM B/k",
                     "L2 sec/k", "smem wf/k", "atomics/k", "ballot", "match", "shfl", "barrier",
                     "warps");
        for (const simt::kernel_cost &c : r.launches) {
                if (c.name == "memset") {
                        std::fprintf(f, "%-10s %9.3f\n", "memset", (double)c.dram_bytes() / n);
                        continue;
                }
                std::fprintf(f, "%-10s %9.3f %9.3f %9.3f %11.3f %7.3f %7.3f %7.3f %7.3f %8llu\n",
                             c.name.c_str(), (double)c.dram_bytes() / n,
                             (double)(c.gld_sectors + c.gst_sectors) / n,
                             (double)c.shared_wavefronts / n,
                             (double)(c.shared_atomics + c.global_atomics) / n,
                             (double)c.ballot / n, (double)c.match / n, (double)c.shfl / n,
                             (double)c.barrier / n, (unsigned long long)c.warps);
        }
        if (std::getenv("SORTD_MODEL_SITES"))
                for (const simt::kernel_cost &c : r.launches)
                        for (const auto &kv : c.wavefronts_at)
                                std::fprintf(f, "  %s %s: %.4f wavefronts/key\n", c.name.c_str(),
                                             kv.first.c_str(), (double)kv.second / n);
        std::fprintf(f,
                     "DRAM %.2f bytes/key, Onesweep minimum %.2f (%.3fx); %u binning passes, "
                     "%.3f shared wavefronts/key/pass; binning match %llu; non-uniform "
                     "accesses %llu; result %s\n",
                     r.dram_bytes_per_key, r.min_bytes_per_key,
                     r.dram_bytes_per_key / r.min_bytes_per_key, r.passes,
                     r.wavefronts_per_key_pass, (unsigned long long)r.binning_match,
                     (unsigned long long)r.nonuniform, r.sorted ? "verified" : "WRONG");
}

} /* namespace emulated */
