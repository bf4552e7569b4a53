/* The "cpu" engine: the engine interface over the CPU Onesweep sort. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onesweep.h"

typedef struct cpu_engine {
        sortd_engine base;
        sortd__cpu_ctx ctx;
} cpu_engine;

/* Room for the ping-pong buffers must be addressable: capacity x 8 bytes. */
#define MAX_CAPACITY ((size_t)1 << 40)
#define MAX_THREADS 1024u

static void cpu_destroy(sortd_engine *e)
{
        cpu_engine *c = (cpu_engine *)e;

        sortd__cpu_ctx_free(&c->ctx);
        free(c);
}

static sortd_status cpu_create(const sortd_engine_config *cfg, sortd_engine **out, char *why,
                               size_t why_len)
{
        unsigned threads = cfg->threads ? cfg->threads : sortd__online_cpus();
        cpu_engine *c;
        int r;

        if (cfg->capacity == 0 || cfg->capacity > MAX_CAPACITY) {
                if (why_len)
                        snprintf(why, why_len, "capacity %zu out of range [1, 2^40]",
                                 cfg->capacity);
                return SORTD_E_INVAL;
        }
        if (threads > MAX_THREADS) {
                if (why_len)
                        snprintf(why, why_len, "%u threads above the limit of %u", threads,
                                 MAX_THREADS);
                return SORTD_E_INVAL;
        }
        c = calloc(1, sizeof(*c));
        if (!c)
                goto nomem;
        c->base.ops = &sortd__cpu_engine_ops;
        c->base.capacity = cfg->capacity;
        snprintf(c->base.device, sizeof(c->base.device), "%u CPU thread%s", threads,
                 threads == 1 ? "" : "s");
        r = sortd__cpu_ctx_init(&c->ctx, cfg->capacity, threads);
        if (r < 0) {
                cpu_destroy(&c->base);
                if (r != -ENOMEM) {
                        if (why_len)
                                snprintf(why, why_len, "cannot start worker threads: %s",
                                         strerror(-r));
                        return SORTD_E_SYSTEM;
                }
                goto nomem;
        }
        *out = &c->base;
        return SORTD_OK;
nomem:
        if (why_len)
                snprintf(why, why_len, "cannot allocate buffers for capacity %zu", cfg->capacity);
        return SORTD_E_NOMEM;
}

static sortd_status cpu_sort(sortd_engine *e, const sortd__plan *plan, void *keys, void *vals,
                             size_t n)
{
        sortd__onesweep_sort(&((cpu_engine *)e)->ctx, plan, keys, vals, n);
        return SORTD_OK;
}

const sortd__engine_ops sortd__cpu_engine_ops = {
        .kind = "cpu",
        .create = cpu_create,
        .sort = cpu_sort,
        .destroy = cpu_destroy,
};
