/*
 * Onesweep LSD radix sort on CPU threads (Adinets & Merrill, 2022), adapted.
 * This file is the sort's driver and its buffers; each phase has a file of
 * its own, as CUB splits its agents, and policy.h holds every tuning knob
 * with the measurement that chose it.
 *
 *   histogram.c: one pass over the keys builds the 256-bin histogram of
 *                every digit place at once, the threads taking its tiles
 *                from an atomic ticket;
 *   plan.c:      exclusive scan per place; a place with one non-empty bin
 *                is skipped (every key lands where it is); what each
 *                remaining place's pass does is decided before it runs
 *                (sortd__pass_make());
 *   binning.c:   per remaining place, tiles are taken from an atomic
 *                ticket, so a tile's predecessors have always started. A
 *                tile is counted and ranked by digit into a thread-local
 *                buffer (rank.h, rank.c: the per-digit staging), publishes
 *                its counts and looks back over its predecessors for its
 *                place (lookback.c), and writes each digit's run out, so
 *                writes to memory are contiguous whole cache lines but for
 *                run ends.
 *
 * Keys are stored twiddled (keys.h) between the first and the last pass; the
 * first pass applies the map when it loads, the last undoes it when it stores.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "binning.h"
#include "histogram.h"
#include "onesweep.h"
#include "plan.h"
#include "rank.h"
#include "tile.h"

struct copy_job {
        const sortd__cpu_ctx *ctx;
        unsigned char *dst_k, *dst_v;
        size_t n;
        unsigned key_bytes, val_bytes;
};

static size_t chunk_begin(size_t n, unsigned tid, unsigned nth)
{
        return (size_t)((unsigned __int128)n * tid / nth);
}

static void copy_worker(void *arg, unsigned tid, unsigned nth)
{
        const struct copy_job *j = arg;
        size_t b = chunk_begin(j->n, tid, nth), e = chunk_begin(j->n, tid + 1, nth);

        memcpy(j->dst_k + b * j->key_bytes, (unsigned char *)j->ctx->alt_keys + b * j->key_bytes,
               (e - b) * j->key_bytes);
        if (j->val_bytes)
                memcpy(j->dst_v + b * j->val_bytes,
                       (unsigned char *)j->ctx->alt_vals + b * j->val_bytes,
                       (e - b) * j->val_bytes);
}

static void fill_identity(unsigned char *vals, size_t n, unsigned eb)
{
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(vals, i, eb, i);
}

void sortd__onesweep_sort(sortd__cpu_ctx *ctx, const sortd__plan *plan, void *keys, void *vals,
                          size_t n)
{
        const unsigned nth = sortd__plan_threads(ctx->threads, n);
        const unsigned nplaces = (plan->end_bit - plan->begin_bit + 7) / 8;
        uint64_t goff[SORTD__MAX_PLACES][SORTD__RADIX];
        unsigned places[SORTD__MAX_PLACES];
        unsigned char *first = plan->shared ? ctx->own_keys : keys;

        sortd__histogram(ctx, nth, plan, plan->shared ? keys : NULL, first, n);
        const unsigned np = sortd__plan_places(ctx->scratch, nth, nplaces, goff, places);

        if (np == 0) {
                /* Every key has the same bits in range: input order is sorted. */
                if (plan->argsort)
                        fill_identity(vals, n, plan->val_bytes);
                return;
        }
        unsigned char *buf_k[2] = {first, ctx->alt_keys};
        unsigned char *buf_v[2] = {vals, ctx->alt_vals};

        for (unsigned i = 0; i < np; i++) {
                const sortd__pass_in in = {
                        .plan = plan,
                        .n = n,
                        .index = i,
                        .passes = np,
                        .place = places[i],
                        .goff = goff[places[i]],
                        .split512 = ctx->split512,
                        .keys_aligned = (uintptr_t)keys % plan->key_bytes == 0,
                };
                sortd__pass p;

                sortd__pass_make(&in, &p);
                p.ctx = ctx;
                p.src_k = buf_k[i & 1];
                p.src_v = buf_v[i & 1];
                p.dst_k = plan->shared && i == np - 1 ? keys : buf_k[(i + 1) & 1];
                p.dst_v = buf_v[(i + 1) & 1];
                sortd__bin_pass(&p, nth);
        }
        /* An odd number of passes ends in the other buffers; a shared sort's last pass wrote
           the keys in place already. */
        if (np & 1) {
                struct copy_job cj = {
                        ctx, keys, vals, n, plan->shared ? 0 : plan->key_bytes, plan->val_bytes};
                sortd__pool_run(ctx->pool, nth, copy_worker, &cj);
        }
}

/* ---- buffers ----------------------------------------------------------- */

#define HUGE_PAGE ((size_t)2 << 20)

static void *alloc_prefaulted(size_t bytes)
{
        /* 2 MiB alignment lets the kernel back the ping-pong buffers with huge
           pages; touching them now keeps page faults out of every sort. */
        size_t align = HUGE_PAGE;
        size_t rounded = (bytes + align - 1) / align * align;
        void *p = aligned_alloc(align, rounded ? rounded : align);

        if (!p)
                return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, rounded, MADV_HUGEPAGE);
#endif
        memset(p, 0, rounded);
        return p;
}

/* Memory that stays untouched, and so takes no RAM, until a sort needs it: mapped, not
   malloc'd, which may write it (MALLOC_PERTURB_). 2 MiB-aligned for huge pages. */
static void *map_untouched(size_t bytes)
{
        size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        unsigned char *p = mmap(NULL, rounded + HUGE_PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        size_t head;

        if (p == MAP_FAILED)
                return NULL;
        head = (HUGE_PAGE - (uintptr_t)p % HUGE_PAGE) % HUGE_PAGE;
        if (head)
                munmap(p, head);
        munmap(p + head + rounded, HUGE_PAGE - head);
#ifdef MADV_HUGEPAGE
        madvise(p + head, rounded, MADV_HUGEPAGE);
#endif
        return p + head;
}

static void unmap_untouched(void *p, size_t bytes)
{
        if (p)
                munmap(p, (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
}

int sortd__cpu_ctx_init(sortd__cpu_ctx *ctx, size_t capacity, unsigned threads)
{
        int r;

        ctx->capacity = capacity;
        ctx->threads = threads;
        ctx->max_tiles = sortd__tile_count(capacity);
        ctx->epoch = 0;
        ctx->split512 = sortd__can_split();
        atomic_init(&ctx->ticket, 0);
        ctx->alt_bytes = capacity * sizeof(uint64_t);
        ctx->alt_keys = alloc_prefaulted(ctx->alt_bytes);
        ctx->alt_vals = alloc_prefaulted(ctx->alt_bytes);
        /* Only a daemon that sorts in shared memory touches it: no memory until then. */
        ctx->own_keys = map_untouched(ctx->alt_bytes);
        ctx->status = alloc_prefaulted(ctx->max_tiles * SORTD__RADIX * sizeof(uint64_t));
        ctx->scratch = alloc_prefaulted(threads * sizeof(sortd__cpu_scratch));
        ctx->tile_counts = alloc_prefaulted(ctx->max_tiles * sizeof(*ctx->tile_counts));
        _Static_assert(sizeof(sortd__cpu_scratch) % SORTD__LINE == 0, "scratch keeps alignment");
        if (!ctx->alt_keys || !ctx->alt_vals || !ctx->own_keys || !ctx->status || !ctx->scratch ||
            !ctx->tile_counts)
                return -ENOMEM;
        r = sortd__pool_create(threads, &ctx->pool);
        return r;
}

void sortd__cpu_ctx_free(sortd__cpu_ctx *ctx)
{
        sortd__pool_destroy(ctx->pool);
        free(ctx->alt_keys);
        free(ctx->alt_vals);
        unmap_untouched(ctx->own_keys, ctx->alt_bytes);
        free((void *)ctx->status);
        free(ctx->scratch);
        free(ctx->tile_counts);
}
