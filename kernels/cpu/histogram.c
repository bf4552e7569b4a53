/*
 * The histogram pass: one read of the keys counts the 256-bin histogram of
 * every digit place at once, the threads taking its tiles from an atomic
 * ticket. Place 0 is also kept per part of each tile, for the first binning
 * pass (sortd__cpu_ctx.tile_counts).
 */
#include "histogram.h"

#include <string.h>

#include "../keys.h"
#include "tile.h"

struct hist_job {
        sortd__cpu_ctx *ctx;
        const unsigned char *from; /* copied into keys tile by tile; NULL: none */
        const unsigned char *keys;
        size_t n;
        unsigned key_bytes;
        unsigned begin_bit;
        uint64_t range_mask; /* end_bit - begin_bit ones */
        sortd__twiddle tw;
};

/* What the histogram pass reads of its job, held in registers: its loops
   store through uint32_t pointers, which could alias fields of the job. */
struct key_map {
        const unsigned char *keys;
        sortd__twiddle tw;
        unsigned shift;
        uint64_t range;
};

SORTD__ALWAYS_INLINE struct key_map key_map_of(const struct hist_job *j)
{
        return (struct key_map){j->keys, j->tw, j->begin_bit, j->range_mask};
}

SORTD__ALWAYS_INLINE uint64_t hist_key(const struct key_map m, size_t i, unsigned kb, bool tw)
{
        uint64_t x = sortd__load_elem(m.keys, i, kb);

        return ((tw ? sortd__twiddle_forward(m.tw, x) : x) >> m.shift) & m.range;
}

SORTD__ALWAYS_INLINE void hist_count(uint32_t (*hc)[SORTD__MAX_PLACES][SORTD__HIST_ROW],
                                     uint32_t (*p0)[SORTD__HIST_ROW], unsigned set, uint64_t y,
                                     unsigned kb, uint32_t times)
{
        p0[set][y & 0xff] += times;
        for (unsigned k = 1; k < kb; k++)
                hc[set][k][(y >> (8 * k)) & 0xff] += times;
}

/*
 * The histogram pass counts the digits of every place at once. A key is first
 * shifted and masked to its bit range, so place k is simply byte k (places
 * above the range count zeros, which nobody reads). Every place goes to
 * SORTD__HIST_SETS counter sets taken in turn, so a run of equal digits (low-
 * entropy keys) makes that many dependency chains, not one (policy.h).
 * Place 0 is counted per part of a tile, so that the first binning pass, where
 * it sorts place 0 without buckets (a skewed place 0, or a tile that overruns
 * its buckets), starts from these counts instead of reading its tile once
 * more.
 *
 * A part whose sampled keys are all one value (all-equal or nearly all-equal
 * keys) counts that value's keys in a register behind a predicted branch
 * instead: the pass is then all there is to the sort, and memory-bound.
 */
SORTD__ALWAYS_INLINE void hist_part(const struct hist_job *j,
                                    uint32_t (*hc)[SORTD__MAX_PLACES][SORTD__HIST_ROW],
                                    uint32_t (*p0)[SORTD__HIST_ROW], size_t begin, size_t end,
                                    unsigned kb, bool tw, bool one, uint64_t value)
{
        const unsigned sets = kb == 8 ? SORTD__HIST_SETS_U64 : SORTD__HIST_SETS;
        const struct key_map m = key_map_of(j);
        size_t i = begin;

        if (one) {
                uint32_t same = 0;

                for (; i < end; i++) {
                        uint64_t y = hist_key(m, i, kb, tw);

                        if (__builtin_expect(y == value, 1))
                                same++;
                        else
                                hist_count(hc, p0, 0, y, kb, 1);
                }
                hist_count(hc, p0, 0, value, kb, same);
                return;
        }
        for (; i + sets <= end; i += sets)
                for (unsigned set = 0; set < sets; set++)
                        hist_count(hc, p0, set, hist_key(m, i + set, kb, tw), kb, 1);
        for (; i < end; i++)
                hist_count(hc, p0, 0, hist_key(m, i, kb, tw), kb, 1);
}

#define HIST_FN(KB, TW, ONE)                                                                       \
        static void hist_##KB##_##TW##_##ONE(                                                      \
                const struct hist_job *j, uint32_t(*hc)[SORTD__MAX_PLACES][SORTD__HIST_ROW],       \
                uint32_t(*p0)[SORTD__HIST_ROW], size_t begin, size_t end, uint64_t value)          \
        {                                                                                          \
                hist_part(j, hc, p0, begin, end, KB, TW, ONE, value);                              \
        }
#define HIST_WIDTHS(TW, ONE)                                                                       \
        HIST_FN(1, TW, ONE) HIST_FN(2, TW, ONE) HIST_FN(4, TW, ONE) HIST_FN(8, TW, ONE)
HIST_WIDTHS(0, 0)
HIST_WIDTHS(1, 0)
HIST_WIDTHS(0, 1)
HIST_WIDTHS(1, 1)

typedef void (*hist_fn)(const struct hist_job *j,
                        uint32_t (*hc)[SORTD__MAX_PLACES][SORTD__HIST_ROW],
                        uint32_t (*p0)[SORTD__HIST_ROW], size_t begin, size_t end, uint64_t value);
#define HIST_ROW(TW, ONE)                                                                          \
        {                                                                                          \
                hist_1_##TW##_##ONE, hist_2_##TW##_##ONE, hist_4_##TW##_##ONE, hist_8_##TW##_##ONE \
        }
/* Indexed [one value][twiddle][log2 key bytes]. */
static const hist_fn hist_table[2][2][4] = {
        {HIST_ROW(0, 0), HIST_ROW(1, 0)},
        {HIST_ROW(0, 1), HIST_ROW(1, 1)},
};

/* Whether the first keys of [begin, end) all have one value, *value. */
static bool one_value(const struct hist_job *j, size_t begin, size_t end, uint64_t *value)
{
        const unsigned kb = j->key_bytes;
        const bool tw = !sortd__twiddle_is_identity(j->tw);
        const struct key_map m = key_map_of(j);

        if (end - begin < SORTD__ONE_VALUE_SAMPLE)
                return false;
        *value = hist_key(m, begin, kb, tw);
        for (size_t i = begin + 1; i < begin + SORTD__ONE_VALUE_SAMPLE; i++)
                if (hist_key(m, i, kb, tw) != *value)
                        return false;
        return true;
}

/* Adds the 32-bit counts of places 1 and up to the thread's histogram and clears them. */
static void hist_flush(sortd__cpu_scratch *s, unsigned kb)
{
        for (unsigned k = 1; k < kb; k++)
                for (unsigned d = 0; d < SORTD__RADIX; d++)
                        for (unsigned set = 0; set < SORTD__HIST_SETS; set++) {
                                s->hist[k][d] += s->hc[set][k][d];
                                s->hc[set][k][d] = 0;
                        }
}

/* Counts tile t part by part: place 0 per part into ctx->tile_counts[t] and
   the thread's histogram, places 1 and up into s->hc. Returns its length. */
SORTD__ALWAYS_INLINE size_t hist_tile(const struct hist_job *j, sortd__cpu_scratch *s, size_t t,
                                      bool tw)
{
        size_t begin = t * SORTD__CPU_TILE_KEYS, len = sortd__tile_len(j->n, t);
        size_t q = sortd__stream_len(len);

        /* The tile stays in cache for the counting that follows, and the first
           binning pass finds much of the copy in the last-level cache. Copying
           through the local buffer and streaming it out (no read of the lines
           it fills) was slower for that: 2^24 u32, shared over plain sort
           1.07-1.09x against 1.04x (2026-11-27, an in-process A/B). */
        if (j->from)
                memcpy((unsigned char *)j->keys + begin * j->key_bytes,
                       j->from + begin * j->key_bytes, len * j->key_bytes);

        for (unsigned k = 0; k < SORTD__STREAMS; k++) {
                uint32_t p0[SORTD__HIST_SETS][SORTD__HIST_ROW] = {{0}};
                uint32_t *tc = j->ctx->tile_counts[t][k];

                size_t b = begin + k * q;
                size_t e = k == SORTD__STREAMS - 1 ? begin + len : b + q;
                uint64_t value = 0;
                bool one = one_value(j, b, e, &value);

                hist_table[one][tw][sortd__log2_bytes(j->key_bytes)](j, s->hc, p0, b, e, value);
                for (unsigned d = 0; d < SORTD__RADIX; d++) {
                        uint32_t c = 0;

                        for (unsigned set = 0; set < SORTD__HIST_SETS; set++)
                                c += p0[set][d];
                        tc[d] = c;
                        s->hist[0][d] += c;
                }
        }
        return len;
}

/* Each thread takes whole tiles from the ticket, not a fixed share: the
   vCPUs of a virtual machine need not run at one speed (one of two ran 20%
   slower for minutes on the development VM, and a fixed share left the
   other idle for that long at the end of the pass). */
static void hist_worker(void *arg, unsigned tid, unsigned nth)
{
        const struct hist_job *j = arg;
        sortd__cpu_ctx *ctx = j->ctx;
        sortd__cpu_scratch *s = &ctx->scratch[tid];
        size_t ntiles = sortd__tile_count(j->n), unflushed = 0;
        const bool tw = !sortd__twiddle_is_identity(j->tw);

        memset(s->hist, 0, sizeof(s->hist));
        /* s->hc is all zeros here: allocated so, and hist_flush() clears
           every counter a pass used. */
        for (;;) {
                size_t t = atomic_fetch_add_explicit(&ctx->ticket, 1, memory_order_relaxed);

                if (t >= ntiles)
                        break;
                /* 32-bit counters: flush long before one could wrap. */
                unflushed += hist_tile(j, s, t, tw);
                if (unflushed >= (size_t)1 << 30) {
                        hist_flush(s, j->key_bytes);
                        unflushed = 0;
                }
        }
        hist_flush(s, j->key_bytes);
}

void sortd__histogram(sortd__cpu_ctx *ctx, unsigned nth, const sortd__plan *plan, const void *from,
                      void *keys, size_t n)
{
        const unsigned bits = plan->end_bit - plan->begin_bit;
        struct hist_job hj = {
                .ctx = ctx,
                .from = from,
                .keys = keys,
                .n = n,
                .key_bytes = plan->key_bytes,
                .begin_bit = plan->begin_bit,
                .range_mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1,
                .tw = sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending),
        };

        atomic_store_explicit(&ctx->ticket, 0, memory_order_relaxed);
        sortd__pool_run(ctx->pool, nth, hist_worker, &hj);
}
