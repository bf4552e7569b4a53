/*
 * sortbench --model: the cuda engine's kernels run on the SIMT emulator with
 * its cost model on. No timing: the quantities that decide the kernels'
 * speed on a GPU, measured where there is none.
 */
#include "bench.h"

#include <cstdio>

#if defined(SORTBENCH_MODEL)
#include "kernel_model.h"
#endif

namespace sortbench
{

#if defined(SORTBENCH_MODEL)
int run_model(const options &o)
{
        case_lists cases = o.cases;
        int rc = 0;

        if (cases.sizes.empty())
                cases.sizes.push_back(size_t(1) << 18);
        for (unsigned arch : o.archs)
                cases.for_each([&](sortd_key_type t, sortd_payload p, const dist_spec &d,
                                   size_t n) {
                        sortd_sort_desc desc = {t, p, SORTD_ASCENDING, 0, 0};
                        emulated::model_report r = emulated::model_sort(desc, n, d.dist, d.param,
                                                                        o.seed, (int)arch * 10);

                        std::printf("# model: %s %s %s n=%zu, sm_%u policies (modelled on the "
                                    "SIMT emulator, not measured)\n",
                                    sortd_key_type_name(t), sortd_payload_name(p), d.name.c_str(),
                                    n, arch);
                        emulated::model_print(stdout, r);
                        if (!r.sorted)
                                rc = 1;
                });
        return rc;
}
#else
int run_model(const options &)
{
        std::fprintf(stderr, "sortbench: --model needs the SIMT emulator (libboost-context-dev)\n");
        return 2;
}
#endif

} /* namespace sortbench */
