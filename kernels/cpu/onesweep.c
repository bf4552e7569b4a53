/*
 * Onesweep LSD radix sort on CPU threads (Adinets & Merrill, 2022), adapted:
 *
 *   histogram: one pass over the keys builds the 256-bin histogram of every
 *              digit place at once, the threads taking its tiles from an
 *              atomic ticket;
 *   scan:      exclusive scan per place; a place with one non-empty bin is
 *              skipped (every key lands where it is);
 *   binning:   per remaining place, tiles are taken from an atomic ticket, so
 *              a tile's predecessors have always started. A tile counts its
 *              digits, publishes them (flag LOCAL), looks back over its
 *              predecessors to the first INCLUSIVE prefix, publishes its own,
 *              ranks its keys by digit into a thread-local buffer (the
 *              per-digit staging) and writes each digit's run out, so writes
 *              to memory are contiguous whole cache lines but for run ends.
 *
 * Keys are stored twiddled (keys.h) between the first and the last pass; the
 * first pass applies the map when it loads, the last undoes it when it stores.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../keys.h"
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

static unsigned threads_for(const sortd__cpu_ctx *ctx, size_t n)
{
        size_t t = n / SORTD__KEYS_PER_THREAD;

        if (t < 1)
                return 1;
        return t < ctx->threads ? (unsigned)t : ctx->threads;
}

/* ---- the sort ---------------------------------------------------------- */

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

/* Digit mask of place k: 8 bits, or fewer for the last place of a range. */
static uint64_t place_mask(const sortd__plan *plan, unsigned k)
{
        unsigned shift = plan->begin_bit + 8 * k;
        unsigned width = plan->end_bit - shift < 8 ? plan->end_bit - shift : 8;

        return ((uint64_t)1 << width) - 1;
}

static void fill_identity(unsigned char *vals, size_t n, unsigned eb)
{
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(vals, i, eb, i);
}

/* floor(sqrt(x)) for x < 2^32, a bit at a time: planning runs per pass,
   and a small sort must not pay a loop per unit of the root. */
static uint32_t isqrt(uint64_t x)
{
        uint64_t r = 0;

        for (uint64_t bit = (uint64_t)1 << 16; bit; bit >>= 1)
                if ((r + bit) * (r + bit) <= x)
                        r += bit;
        return (uint32_t)r;
}

/* The slots of a bucket whose digit a tile expects `expect` times. */
static uint32_t bucket_cap(uint64_t expect)
{
        if (!expect)
                return 0;
        return (uint32_t)(expect + SORTD__BUCKET_SIGMAS * isqrt(expect) + SORTD__BUCKET_SLACK);
}

/*
 * Sizes the buckets of rank_buckets() for a place from its global histogram:
 * per digit, a full tile's expected count plus five standard deviations and a
 * line. Returns false when they would not fit in the local buffer beside a
 * tile of overrun, or when ranking by buckets would not pay: on a skewed
 * place one counter is bumped key after key, which the four-part ranking of
 * a counted tile spreads. The exception, in a keys-only sort, is a place
 * where one digit holds nearly every key: *dominant names it, and its keys
 * are ranked through a register (rank_dominant()), in buckets or in a counted
 * tile. *dominant is -1 otherwise, and whenever this returns false.
 */
static bool plan_buckets(const uint64_t *goff, size_t n, bool keys_only, uint32_t *start,
                         uint32_t *cap, int *dominant)
{
        const uint64_t tile = SORTD__CPU_TILE_KEYS;
        uint64_t expect[SORTD__RADIX], sum = 0, most = 0;
        unsigned top = 0;
        int dom;

        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint64_t c = (d + 1 < SORTD__RADIX ? goff[d + 1] : n) - goff[d];

                expect[d] = (c * tile + n - 1) / n;
                if (expect[d] > most)
                        most = expect[d], top = d;
        }
        *dominant = -1;
        dom = keys_only && most >= tile - tile / SORTD__DOMINANT_MIN_SHARE ? (int)top : -1;
        if (dom < 0 && most * SORTD__BUCKETS_MAX_SHARE > tile)
                return false;
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                start[d] = (uint32_t)sum;
                cap[d] = bucket_cap(expect[d]);
                /* A dominant digit may well fill a tile: sorted by the place below,
                   a run of tiles can hold no other digit. */
                if ((int)d == dom)
                        cap[d] = (uint32_t)tile;
                sum += cap[d];
        }
        if (sum + tile > SORTD__LOCAL_KEYS)
                return false;
        *dominant = dom;
        return true;
}

/* Collects the threads' histograms, turns them into exclusive offsets and
   lists the places that need a pass. Returns how many do. */
static unsigned plan_places(const sortd__cpu_ctx *ctx, unsigned nth, unsigned nplaces,
                            uint64_t (*goff)[SORTD__RADIX], unsigned *places)
{
        unsigned np = 0;

        for (unsigned k = 0; k < nplaces; k++) {
                uint64_t sum = 0;
                unsigned nonempty = 0;

                for (unsigned d = 0; d < SORTD__RADIX; d++) {
                        uint64_t c = 0;

                        for (unsigned t = 0; t < nth; t++)
                                c += ctx->scratch[t].hist[k][d];
                        goff[k][d] = sum;
                        sum += c;
                        nonempty += c != 0;
                }
                if (nonempty > 1)
                        places[np++] = k;
        }
        return np;
}

void sortd__onesweep_sort(sortd__cpu_ctx *ctx, const sortd__plan *plan, void *keys, void *vals,
                          size_t n)
{
        const unsigned nth = threads_for(ctx, n);
        const unsigned bits = plan->end_bit - plan->begin_bit;
        const unsigned nplaces = (bits + 7) / 8;
        const sortd__twiddle tw =
                sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending);
        uint64_t goff[SORTD__MAX_PLACES][SORTD__RADIX];
        unsigned places[SORTD__MAX_PLACES];
        const sortd__twiddle identity = sortd__twiddle_identity();

        sortd__histogram(ctx, nth, plan, keys, n);
        unsigned np = plan_places(ctx, nth, nplaces, goff, places);

        if (np == 0) {
                /* Every key has the same bits in range: input order is sorted. */
                if (plan->argsort)
                        fill_identity(vals, n, plan->val_bytes);
                return;
        }

        uint32_t bucket_start[SORTD__RADIX], bucket_cap[SORTD__RADIX];
        unsigned char *buf_k[2] = {keys, ctx->alt_keys};
        unsigned char *buf_v[2] = {vals, ctx->alt_vals};
        size_t moved = n * (plan->key_bytes + plan->val_bytes);

        for (unsigned i = 0; i < np; i++) {
                unsigned k = places[i];
                unsigned shift = plan->begin_bit + 8 * k;
                sortd__pass p = {
                        .ctx = ctx,
                        .src_k = buf_k[i & 1],
                        .src_v = buf_v[i & 1],
                        .dst_k = buf_k[(i + 1) & 1],
                        .dst_v = buf_v[(i + 1) & 1],
                        .n = n,
                        .ntiles = sortd__tile_count(n),
                        .key_bytes = plan->key_bytes,
                        .val_bytes = plan->val_bytes,
                        .gen_index = plan->argsort && i == 0,
                        .precounted = i == 0 && k == 0,
                        .stream = moved >= SORTD__STREAM_MIN_BYTES,
                        .shift = shift,
                        .mask = place_mask(plan, k),
                        .load_tw = i == 0 ? tw : identity,
                        .store_tw = i == np - 1 ? tw : identity,
                        .goff = goff[k],
                        .dominant = -1,
                };

                /* The first pass ranks into buckets too where they fit:
                   ranking a counted tile in four parts was slower (2^26
                   u32 uniform 1.03x, q8 1.18x with buckets, where the
                   AVX-512 split then applies). Its tiles' counts from the
                   histogram pass serve where buckets do not. */
                if (n >= SORTD__BUCKETS_MIN_KEYS &&
                    plan_buckets(goff[k], n, !p.val_bytes, bucket_start, bucket_cap, &p.dominant)) {
                        p.bucket_start = bucket_start;
                        p.bucket_cap = bucket_cap;
                }
                p.twiddle = !sortd__twiddle_is_identity(p.load_tw) ||
                            !sortd__twiddle_is_identity(p.store_tw);
                p.split = ctx->split512 && p.bucket_start && p.dominant >= 0 && p.key_bytes == 4 &&
                          !p.twiddle;
                /* Whole keys in the caller's buffer too: a key across a
                   line would split its non-temporal store. Split tiles
                   stage their keys. */
                p.direct = p.dominant >= 0 && p.stream && p.key_bytes >= 4 &&
                           (uintptr_t)keys % p.key_bytes == 0 && !p.split;
                sortd__bin_pass(&p, nth);
        }
        if (np & 1) {
                struct copy_job cj = {ctx, keys, vals, n, plan->key_bytes, plan->val_bytes};
                sortd__pool_run(ctx->pool, nth, copy_worker, &cj);
        }
}

/* ---- buffers ----------------------------------------------------------- */

static void *alloc_prefaulted(size_t bytes)
{
        /* 2 MiB alignment lets the kernel back the ping-pong buffers with huge
           pages; touching them now keeps page faults out of every sort. */
        size_t align = (size_t)2 << 20;
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

int sortd__cpu_ctx_init(sortd__cpu_ctx *ctx, size_t capacity, unsigned threads)
{
        int r;

        ctx->capacity = capacity;
        ctx->threads = threads;
        ctx->max_tiles = sortd__tile_count(capacity);
        ctx->epoch = 0;
#if SORTD__HAVE_SPLIT
        ctx->split512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt");
#else
        ctx->split512 = false;
#endif
        atomic_init(&ctx->ticket, 0);
        ctx->alt_bytes = capacity * sizeof(uint64_t);
        ctx->alt_keys = alloc_prefaulted(ctx->alt_bytes);
        ctx->alt_vals = alloc_prefaulted(ctx->alt_bytes);
        ctx->status = alloc_prefaulted(ctx->max_tiles * SORTD__RADIX * sizeof(uint64_t));
        ctx->scratch = alloc_prefaulted(threads * sizeof(sortd__cpu_scratch));
        ctx->tile_counts = alloc_prefaulted(ctx->max_tiles * sizeof(*ctx->tile_counts));
        _Static_assert(sizeof(sortd__cpu_scratch) % SORTD__LINE == 0, "scratch keeps alignment");
        if (!ctx->alt_keys || !ctx->alt_vals || !ctx->status || !ctx->scratch || !ctx->tile_counts)
                return -ENOMEM;
        r = sortd__pool_create(threads, &ctx->pool);
        return r;
}

void sortd__cpu_ctx_free(sortd__cpu_ctx *ctx)
{
        sortd__pool_destroy(ctx->pool);
        free(ctx->alt_keys);
        free(ctx->alt_vals);
        free((void *)ctx->status);
        free(ctx->scratch);
        free(ctx->tile_counts);
}
