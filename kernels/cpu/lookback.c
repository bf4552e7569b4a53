/*
 * The chained scan over a binning pass's tiles (Merrill & Garland's decoupled
 * look-back). Each tile has a status word per digit, [epoch:16][flag:2]
 * [count:46]: LOCAL with the tile's own count, then INCLUSIVE with the count
 * of every key of that digit up to and with the tile. A tile sums its
 * predecessors' words back to the first INCLUSIVE one. Words of another epoch
 * are "not ready", so a new pass needs no clearing.
 */
#include "lookback.h"

#include <sched.h>
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "tile.h"

#define FLAG_LOCAL 1u
#define FLAG_INCLUSIVE 2u
#define COUNT_BITS 46
#define COUNT_MASK (((uint64_t)1 << COUNT_BITS) - 1)
#define EPOCH_SHIFT 48
#define EPOCH_MAX 0xffffu

SORTD__ALWAYS_INLINE uint64_t status_word(uint64_t epoch, unsigned flag, uint64_t count)
{
        return epoch << EPOCH_SHIFT | (uint64_t)flag << COUNT_BITS | count;
}

SORTD__ALWAYS_INLINE void cpu_relax(void)
{
#if defined(__SSE2__)
        _mm_pause();
#endif
}

/* Spins until tile j's word for digit d belongs to this pass. A tile behind
   us has already taken its ticket, so it is running; yielding keeps an
   oversubscribed machine moving. */
static uint64_t wait_ready(_Atomic uint64_t *w, uint64_t epoch)
{
        for (unsigned spins = 0;; spins++) {
                uint64_t v = atomic_load_explicit(w, memory_order_acquire);

                if (v >> EPOCH_SHIFT == epoch)
                        return v;
                if (spins < SORTD__SPINS_BEFORE_YIELD)
                        cpu_relax();
                else
                        sched_yield();
        }
}

SORTD__ALWAYS_INLINE void publish(const sortd__pass *p, size_t t, unsigned d, unsigned flag,
                                  uint64_t count)
{
        atomic_store_explicit(&p->ctx->status[t * SORTD__RADIX + d],
                              status_word(p->epoch, flag, count), memory_order_release);
}

/* Tile t's exclusive prefix of digit d: its predecessors' counts back to
   the first inclusive one. */
static uint64_t prefix_of(const sortd__pass *p, size_t t, unsigned d)
{
        uint64_t sum = 0;

        if (t == 0)
                return p->goff[d];
        for (size_t j = t - 1;; j--) {
                uint64_t v = wait_ready(&p->ctx->status[j * SORTD__RADIX + d], p->epoch);

                sum += v & COUNT_MASK;
                if ((v >> COUNT_BITS & 3) == FLAG_INCLUSIVE)
                        return sum;
        }
}

void sortd__look_back(const sortd__pass *p, sortd__cpu_scratch *s, size_t t, int skip)
{
        const uint32_t *cnt = s->total;

        /* Every count is out before any prefix is sought, so successors can
           sum past this tile without waiting on its own look-back. */
        if (t > 0)
                for (unsigned d = 0; d < SORTD__RADIX; d++)
                        if ((int)d != skip)
                                publish(p, t, d, FLAG_LOCAL, cnt[d]);
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                if ((int)d == skip)
                        continue;
                s->excl[d] = prefix_of(p, t, d);
                publish(p, t, d, FLAG_INCLUSIVE, s->excl[d] + cnt[d]);
        }
}

void sortd__look_back_digit(const sortd__pass *p, sortd__cpu_scratch *s, size_t t, unsigned d,
                            uint32_t cnt)
{
        if (t > 0)
                publish(p, t, d, FLAG_LOCAL, cnt);
        s->excl[d] = prefix_of(p, t, d);
        publish(p, t, d, FLAG_INCLUSIVE, s->excl[d] + cnt);
}

uint64_t sortd__look_back_start(sortd__cpu_ctx *ctx)
{
        if (++ctx->epoch > EPOCH_MAX) {
                /* Words of a wrapped epoch could look ready: start clean. */
                memset((void *)ctx->status, 0, ctx->max_tiles * SORTD__RADIX * sizeof(uint64_t));
                ctx->epoch = 1;
        }
        return ctx->epoch;
}
