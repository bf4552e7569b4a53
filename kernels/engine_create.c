/*
 * Creating an engine of a kind named at run time: the one file that names every engine (their
 * operations tables). It sits above them all, and above engine.c: the engines call down into
 * engine.c and the GPU ones into selfcheck.c, which sorts through engine.c, so this table in
 * engine.c would make a loop of calls through every GPU engine.
 */
#include <stdio.h>
#include <string.h>

#include "engine_impl.h"

static const sortd__engine_ops *const engines[] = {
        &sortd__cpu_engine_ops,
#ifdef SORTD_HAVE_CUDA
        &sortd__cuda_engine_ops,
#ifndef SORTD_EMULATED_CUDA /* tests/support/fake_cuda: the cuda engine alone, emulated */
        &sortd__cub_engine_ops,
#endif
#endif
};

sortd_status sortd_engine_create(const char *kind, const sortd_engine_config *cfg,
                                 sortd_engine **out, char *why, size_t why_len)
{
        if (!kind || !cfg || !out) {
                if (why_len)
                        snprintf(why, why_len, "kind, cfg and out must not be NULL");
                return SORTD_E_INVAL;
        }
        for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
                sortd_status s;

                if (strcmp(kind, engines[i]->kind) != 0)
                        continue;
                s = engines[i]->create(cfg, out, why, why_len);
                if (s == SORTD_OK)
                        (*out)->faults = cfg->faults;
                return s;
        }
        if (why_len)
                snprintf(why, why_len, "unknown engine '%s'%s", kind,
#if defined(SORTD_HAVE_CUDA) && defined(SORTD_EMULATED_CUDA)
                         " (known: cpu, cuda)"
#elif defined(SORTD_HAVE_CUDA)
                         " (known: cpu, cuda, cub)"
#else
                         " (known: cpu; this build has no CUDA engines)"
#endif
                );
        return SORTD_E_INVAL;
}
