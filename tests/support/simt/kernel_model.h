/*
 * The kernels' cost model for one sort: runs the cuda engine's dispatch
 * and kernels (production policies) on the emulator with the cost model on
 * (cost.h), and sets the counts beside the Onesweep minimum of bytes.
 */
#ifndef SORTD_TESTS_KERNEL_MODEL_H
#define SORTD_TESTS_KERNEL_MODEL_H

#include <cstdio>
#include <vector>

#include "cost.h"
#include "datagen.h"
extern "C" {
#include "sortd_types.h"
}

namespace emulated
{

struct model_report {
        size_t n;
        unsigned key_bytes, val_bytes;
        bool argsort;
        unsigned passes; /* binning launches */
        std::vector<simt::kernel_cost> launches;
        double min_bytes_per_key;       /* Onesweep: histogram read + per pass read + write */
        double dram_bytes_per_key;      /* every launch and memset */
        double wavefronts_per_key_pass; /* binning kernels */
        uint64_t binning_match, nonuniform;
        bool sorted; /* the result checked against a sorted copy */
};

/* Sorts n keys of d's kind, drawn from dist, with the model on, under the
   policies of code built for arch (as __CUDA_ARCH__ counts: 900 for sm_90). */
model_report model_sort(const sortd_sort_desc &d, size_t n, datagen_dist dist, unsigned param,
                        uint64_t seed, int arch);

/* Per launch, per key: DRAM bytes, L2 sectors, shared wavefronts and the
   warp operations; then the totals against the minimum. */
void model_print(FILE *f, const model_report &r);

} /* namespace emulated */

#endif
