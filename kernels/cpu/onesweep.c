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
 *
 * Shared keys (another process may write them during the sort) are sorted where
 * they lie, as fast as others, but each pass is checked: keys changed after the
 * histogram pass counted them must not leave places of the output unwritten,
 * holding what an earlier sort left in the engine's buffers (run_passes()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "binning.h"
#include "histogram.h"
#include "network.h"
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

/* Where a sort's keys are between its passes. */
enum layout {
        IN_PLACE, /* keys, alt_keys, keys, ...: the caller's keys are the engine's to use */
        /* Shared keys (plan.h) read where they lie: keys, alt_keys, own_keys, alt_keys, ...,
           the last pass into keys. Each pass is checked. */
        CHECKED,
        /* Shared keys read once, by the histogram pass into own_keys: own_keys, alt_keys, ...,
           the last pass into keys. */
        READ_ONCE,
};

static void count(sortd__cpu_ctx *ctx, const sortd__plan *plan, const void *from, void *keys,
                  size_t n, sortd__counts *c)
{
        c->nth = sortd__plan_threads(ctx->threads, n);
        sortd__histogram(ctx, c->nth, plan, from, keys, n);
        c->np = sortd__plan_places(ctx->scratch, c->nth, (plan->end_bit - plan->begin_bit + 7) / 8,
                                   c->goff, c->places);
}

void sortd__onesweep_count(sortd__cpu_ctx *ctx, const sortd__plan *plan, const void *keys, size_t n,
                           sortd__counts *c)
{
        count(ctx, plan, NULL, (void *)keys, n, c);
}

/* The global offsets of `place` for the n keys at src, which are stored as between passes:
   mapped already (keys.h). */
static void recount(sortd__cpu_ctx *ctx, const sortd__plan *plan, unsigned nth,
                    const unsigned char *src, size_t n, unsigned place, uint64_t *goff)
{
        sortd__plan raw = *plan;
        uint64_t all[SORTD__MAX_PLACES][SORTD__RADIX];
        unsigned places[SORTD__MAX_PLACES];

        raw.kind = SORTD__KEY_UNSIGNED;
        raw.descending = false;
        sortd__histogram(ctx, nth, &raw, NULL, (void *)src, n);
        sortd__plan_places(ctx->scratch, nth, place + 1, all, places);
        memcpy(goff, all[place], sizeof(all[place]));
}

/* Runs pass `in` over p's buffers; returns false as sortd__bin_pass() does. */
static bool run_pass(sortd__cpu_ctx *ctx, const sortd__pass_in *in, sortd__pass *p, unsigned nth)
{
        const sortd__pass buffers = *p;

        sortd__pass_make(in, p);
        p->ctx = ctx;
        p->src_k = buffers.src_k;
        p->src_v = buffers.src_v;
        p->dst_k = buffers.dst_k;
        p->dst_v = buffers.dst_v;
        return sortd__bin_pass(p, nth);
}

/*
 * The binning passes c plans. Returns false, having written none of the caller's memory, when
 * a CHECKED sort's first pass found keys other than the histogram pass counted: the caller
 * changed them, and may go on changing them. A later CHECKED pass reads the engine's own
 * memory, which cannot change under it; finding other keys than counted there (the caller
 * changed them before the first pass read them), it counts its input and runs again.
 */
static bool run_passes(sortd__cpu_ctx *ctx, const sortd__plan *plan, const sortd__counts *c,
                       unsigned char *keys, unsigned char *vals, size_t n, enum layout l)
{
        unsigned char *ring_k[2] = {l == IN_PLACE ? keys : ctx->own_keys, ctx->alt_keys};
        unsigned char *ring_v[2] = {vals, ctx->alt_vals};
        bool keys_home = false; /* the last pass wrote keys */

        for (unsigned i = 0; i < c->np; i++) {
                sortd__pass_in in = {
                        .plan = plan,
                        .n = n,
                        .index = i,
                        .passes = c->np,
                        .place = c->places[i],
                        .goff = c->goff[c->places[i]],
                        .split512 = ctx->split512,
                        .keys_aligned = (uintptr_t)keys % plan->key_bytes == 0,
                        .checked = l == CHECKED,
                };
                sortd__pass p = {
                        .src_k = i == 0 && l == CHECKED ? keys : ring_k[i & 1],
                        .src_v = ring_v[i & 1],
                        .dst_k = ring_k[(i + 1) & 1],
                        .dst_v = ring_v[(i + 1) & 1],
                };
                uint64_t goff[SORTD__RADIX];

                /* A last pass that does not read keys writes them: no copy after it. */
                if (i + 1 == c->np && l != IN_PLACE && p.src_k != keys) {
                        p.dst_k = keys;
                        keys_home = true;
                }
                if (run_pass(ctx, &in, &p, c->nth))
                        continue;
                if (i == 0)
                        return false;
                recount(ctx, plan, c->nth, p.src_k, n, in.place, goff);
                in.goff = goff;
                in.checked = false;
                run_pass(ctx, &in, &p, c->nth);
        }
        /* An odd number of passes ends in the other buffers. */
        if (c->np & 1) {
                struct copy_job cj = {
                        ctx, keys, vals, n, keys_home ? 0 : plan->key_bytes, plan->val_bytes};
                sortd__pool_run(ctx->pool, c->nth, copy_worker, &cj);
        }
        return true;
}

static bool sort_counted(sortd__cpu_ctx *ctx, const sortd__plan *plan, const sortd__counts *c,
                         void *keys, void *vals, size_t n, enum layout l)
{
        if (c->np == 0) {
                /* Every key has the same bits in range: input order is sorted. */
                if (plan->argsort)
                        fill_identity(vals, n, plan->val_bytes);
                return true;
        }
        return run_passes(ctx, plan, c, keys, vals, n, l);
}

void sortd__onesweep_finish(sortd__cpu_ctx *ctx, const sortd__plan *plan, sortd__counts *c,
                            void *keys, void *vals, size_t n)
{
        if (!plan->shared) {
                sort_counted(ctx, plan, c, keys, vals, n, IN_PLACE);
                return;
        }
        if (sort_counted(ctx, plan, c, keys, vals, n, CHECKED))
                return;
        count(ctx, plan, keys, ctx->own_keys, n, c);
        sort_counted(ctx, plan, c, keys, vals, n, READ_ONCE);
}

void sortd__onesweep_sort(sortd__cpu_ctx *ctx, const sortd__plan *plan, void *keys, void *vals,
                          size_t n)
{
        sortd__counts c;

        sortd__onesweep_count(ctx, plan, keys, n, &c);
        sortd__onesweep_finish(ctx, plan, &c, keys, vals, n);
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
        ctx->seg_chunk_out = calloc(SORTD__SEG_CHUNKS + 1, sizeof(uint64_t));
        _Static_assert(sizeof(sortd__cpu_scratch) % SORTD__LINE == 0, "scratch keeps alignment");
        if (!ctx->alt_keys || !ctx->alt_vals || !ctx->own_keys || !ctx->status || !ctx->scratch ||
            !ctx->tile_counts || !ctx->seg_chunk_out)
                return -ENOMEM;
        for (unsigned t = 0; t < threads; t++)
                ctx->scratch[t].network = sortd__network_available();
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
        free(ctx->seg_chunk_out);
}
