/* The "cpu" engine: the engine interface over the CPU Onesweep sort. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onesweep.h"
#include "segments.h"
#include "small.h"

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
        sortd__cpu_ctx *ctx = &((cpu_engine *)e)->ctx;

        /* The calling thread is the pool's thread 0: its scratch is free between sorts. */
        if (n <= SORTD__SMALL_SINGLE_KEYS)
                sortd__small_sort(plan, keys, vals, n, &ctx->scratch[0]);
        else
                sortd__onesweep_sort(ctx, plan, keys, vals, n);
        return SORTD_OK;
}

/*
 * A batch: the small members are spread over the threads whole, each taken from a ticket and
 * sorted by the thread that took it; the rest, one after another, by every thread.
 */
typedef struct batch_run {
        sortd__cpu_scratch *scratch;
        sortd__batch_job *jobs;
        size_t count;
        _Atomic size_t ticket;
} batch_run;

static void batch_worker(void *arg, unsigned tid, unsigned nth)
{
        batch_run *r = arg;
        size_t i;

        (void)nth;
        while ((i = atomic_fetch_add_explicit(&r->ticket, 1, memory_order_relaxed)) < r->count) {
                sortd__batch_job *j = &r->jobs[i];

                if (j->n <= SORTD__SMALL_KEYS)
                        sortd__small_sort(&j->plan, j->keys, j->vals, j->n, &r->scratch[tid]);
        }
}

static void cpu_sort_batch(sortd_engine *e, sortd__batch_job *jobs, size_t count)
{
        sortd__cpu_ctx *ctx = &((cpu_engine *)e)->ctx;
        batch_run r = {.scratch = ctx->scratch, .jobs = jobs, .count = count};
        size_t small = 0, small_keys = 0;
        unsigned nth;

        for (size_t i = 0; i < count; i++)
                if (jobs[i].n <= SORTD__SMALL_KEYS) {
                        small++;
                        small_keys += jobs[i].n;
                }
        /* Waking a thread costs about as much as sorting a few thousand keys. */
        nth = (unsigned)(small_keys / SORTD__SMALL_SPREAD_KEYS);
        nth = nth < 1 ? 1 : nth;
        nth = nth > ctx->threads ? ctx->threads : nth;
        nth = nth > small ? (unsigned)small : nth;
        atomic_init(&r.ticket, 0);
        if (small)
                sortd__pool_run(ctx->pool, nth, batch_worker, &r);
        for (size_t i = 0; i < count; i++) {
                if (jobs[i].n > SORTD__SMALL_KEYS)
                        sortd__onesweep_sort(ctx, &jobs[i].plan, jobs[i].keys, jobs[i].vals,
                                             jobs[i].n);
                jobs[i].item->status = SORTD_OK;
                jobs[i].item->why[0] = '\0';
        }
}

/* Host memory only: engine_segments.c refuses device memory, as the cpu engine has none. */
static sortd_status cpu_sort_segments(sortd_engine *e, const sortd__plan *plan,
                                      const sortd_segments *seg, sortd_memory where, void *keys,
                                      void *vals, size_t n)
{
        (void)where;
        (void)n;
        sortd__cpu_sort_segments(&((cpu_engine *)e)->ctx, plan, seg, keys, vals);
        return SORTD_OK;
}

static sortd_status cpu_topk(sortd_engine *e, const sortd__plan *plan, const sortd_segments *seg,
                             uint64_t k, sortd_memory where, const void *keys, const void *vals,
                             void *out_keys, void *out_vals, size_t n)
{
        (void)where;
        (void)n;
        sortd__cpu_topk(&((cpu_engine *)e)->ctx, plan, seg, k, keys, vals, out_keys, out_vals);
        return SORTD_OK;
}

const sortd__engine_ops sortd__cpu_engine_ops = {
        .kind = "cpu",
        .create = cpu_create,
        .sort = cpu_sort,
        .sort_batch = cpu_sort_batch,
        .sort_segments = cpu_sort_segments,
        .topk = cpu_topk,
        .destroy = cpu_destroy,
};
