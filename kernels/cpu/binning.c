/*
 * A binning pass: tiles taken from an atomic ticket, so a tile's predecessors
 * have always started. Each tile is ranked into the thread's local buffer
 * (rank.h), finds its place through the look-back (lookback.c), and writes
 * each digit's run to its place: the per-digit staging that makes writes to
 * memory contiguous whole cache lines but for the ends of each run. A tile
 * whose keys share one digit is copied as a block.
 *
 * The loop is instantiated per key width, value width, argsort and twiddle
 * (TW: the pass maps keys on load or store), so each copy has constant
 * element sizes and no per-key branch on the request.
 */
#include "binning.h"

#include <string.h>

#include "copy.h"
#include "lookback.h"
#include "rank.h"
#include "tile.h"

/* Copies a digit's run of a tile from the local buffer to its place; with
   streaming stores for the whole lines in the middle of the run (copy.h). */
SORTD__ALWAYS_INLINE void copy_run(unsigned char *dst, const unsigned char *src, size_t bytes,
                                   bool stream)
{
        if (stream)
                sortd__copy_stream(dst, src, bytes);
        else
                memcpy(dst, src, bytes);
}

/* Asks early for the lines at the ends of a run that it only partly fills:
   copy_run() writes those with plain stores, each of which reads its line
   first, and copying the runs one after another waited on 512 such reads a
   tile (u32 uniform, 2^26: 1.03-1.06x faster with the ends asked for). */
SORTD__ALWAYS_INLINE void prefetch_run_ends(unsigned char *dst, size_t bytes)
{
        if ((uintptr_t)dst % SORTD__LINE)
                __builtin_prefetch(dst, 1);
        if ((uintptr_t)(dst + bytes) % SORTD__LINE)
                __builtin_prefetch(dst + bytes - 1, 1);
}

/* How many of digit d's keys of the tile fit in the output from its place: all
   of them, unless the keys changed under a checked pass (plan.h), which then
   fails, but must not write past the outputs on the way. */
SORTD__ALWAYS_INLINE size_t run_len(const sortd__pass *p, const sortd__cpu_scratch *s, unsigned d)
{
        uint64_t at = s->excl[d];

        return at >= p->n ? 0 : s->total[d] < p->n - at ? s->total[d] : p->n - at;
}

/* Writes each digit's run of the local buffer, from the digit's first slot,
   to its place in the output. */
SORTD__ALWAYS_INLINE void write_runs(const sortd__pass *p, const sortd__cpu_scratch *s,
                                     const uint32_t *first, int skip, unsigned kb, unsigned vb)
{
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                size_t c = run_len(p, s, d);

                if (!c || (int)d == skip)
                        continue;
                prefetch_run_ends(p->dst_k + s->excl[d] * kb, c * kb);
                if (vb)
                        prefetch_run_ends(p->dst_v + s->excl[d] * vb, c * vb);
        }
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                size_t c = run_len(p, s, d);

                if (!c || (int)d == skip)
                        continue;
                copy_run(p->dst_k + s->excl[d] * kb, s->local_k + (size_t)first[d] * kb, c * kb,
                         p->stream);
                if (vb)
                        copy_run(p->dst_v + s->excl[d] * vb, s->local_v + (size_t)first[d] * vb,
                                 c * vb, p->stream);
        }
}

/* Whether the ranking filled exactly the slots the tile's counts gave each
   digit in each part: keys changed between counting and ranking do not. */
static bool ranked_as_counted(const sortd__cpu_scratch *s)
{
        uint32_t end = 0;

        for (unsigned d = 0; d < SORTD__RADIX; d++)
                for (unsigned k = 0; k < SORTD__STREAMS; k++) {
                        end += s->counts[k][d];
                        if (s->local_off[k][d] != end)
                                return false;
                }
        return true;
}

/* Ranks a counted tile into the local buffer and writes each digit's run to
   its place. */
SORTD__ALWAYS_INLINE void scatter_tile(const sortd__pass *p, sortd__cpu_scratch *s, size_t begin,
                                       size_t len, unsigned kb, unsigned vb, bool gen, bool tw)
{
        uint32_t first[SORTD__RADIX];

        sortd__rank_counted(p, s, begin, len, first, kb, vb, gen, tw);
        if (p->checked && !ranked_as_counted(s))
                s->torn = true;
        write_runs(p, s, first, p->direct ? p->dominant : -1, kb, vb);
}

/* Every key of the tile has one digit: the tile moves as one block (inside the
   outputs, as run_len() keeps runs). */
SORTD__ALWAYS_INLINE void copy_tile(const sortd__pass *p, size_t begin, size_t len, uint64_t at,
                                    unsigned kb, unsigned vb, bool gen, bool tw)
{
        if (at >= p->n)
                return;
        if (len > p->n - at)
                len = p->n - at;
        if (tw) {
                for (size_t i = 0; i < len; i++) {
                        uint64_t y = sortd__twiddle_forward(
                                p->load_tw, sortd__load_elem(p->src_k, begin + i, kb));

                        sortd__store_elem(p->dst_k, at + i, kb,
                                          sortd__twiddle_inverse(p->store_tw, y));
                }
        } else {
                memcpy(p->dst_k + at * kb, p->src_k + begin * kb, len * kb);
        }
        if (vb && gen)
                for (size_t i = 0; i < len; i++)
                        sortd__store_elem(p->dst_v, at + i, vb, begin + i);
        else if (vb)
                memcpy(p->dst_v + at * vb, p->src_v + begin * vb, len * vb);
}

/* A checked pass sums its tiles' counts (sortd__bin_pass() compares them with goff). */
SORTD__ALWAYS_INLINE void add_seen(const sortd__pass *p, sortd__cpu_scratch *s)
{
        if (p->checked)
                for (unsigned d = 0; d < SORTD__RADIX; d++)
                        s->seen[d] += s->total[d];
}

static int single_digit(const sortd__cpu_scratch *s, size_t len)
{
        for (unsigned d = 0; d < SORTD__RADIX; d++)
                if (s->total[d])
                        return s->total[d] == len ? (int)d : -1;
        return -1;
}

SORTD__ALWAYS_INLINE void bin_tiles(const sortd__pass *p, sortd__cpu_scratch *s, unsigned kb,
                                    unsigned vb, bool gen, bool tw)
{
        bool buckets = p->buckets;
        unsigned overruns = 0;

        for (;;) {
                size_t t = atomic_fetch_add_explicit(&p->ctx->ticket, 1, memory_order_relaxed);

                if (t >= p->ntiles)
                        break;
                size_t begin = t * SORTD__CPU_TILE_KEYS, len = sortd__tile_len(p->n, t);

                int skip = -1; /* a digit whose chained scan the tile ran early */

                if (buckets) {
                        if (sortd__rank_buckets(p, s, t, begin, len, kb, vb, gen, tw, &skip)) {
                                sortd__look_back(p, s, t, skip);
                                write_runs(p, s, p->bucket_start, skip, kb, vb);
                                add_seen(p, s);
                                continue;
                        }
                        /* Keys that overrun buckets again and again cluster:
                           stop trying for the rest of the pass. */
                        if (++overruns == SORTD__MAX_OVERRUNS)
                                buckets = false;
                }
                if (p->precounted)
                        sortd__load_counts(p, s, t);
                else
                        sortd__count_tile(p, s, begin, len, kb, tw);
                sortd__look_back(p, s, t, skip);
                int one = single_digit(s, len);

                if (one >= 0)
                        copy_tile(p, begin, len, s->excl[one], kb, vb, gen, tw);
                else
                        scatter_tile(p, s, begin, len, kb, vb, gen, tw);
                add_seen(p, s);
        }
        /* Make the streaming stores visible before the pool's join publishes
           this pass as done. */
        sortd__copy_fence();
}

/*
 * One function per (key width, payload, twiddle): each inner loop is compiled
 * on its own, so its invariants stay in registers.
 */
typedef void (*bin_fn)(const sortd__pass *p, sortd__cpu_scratch *s);

#define BIN_FN(KB, VB, GEN, TW)                                                                    \
        static void bin_##KB##_##VB##_##GEN##_##TW(const sortd__pass *p, sortd__cpu_scratch *s)    \
        {                                                                                          \
                bin_tiles(p, s, KB, VB, GEN, TW);                                                  \
        }
#define BIN_PAYLOADS(KB, TW)                                                                       \
        BIN_FN(KB, 0, 0, TW)                                                                       \
        BIN_FN(KB, 4, 0, TW) BIN_FN(KB, 4, 1, TW) BIN_FN(KB, 8, 0, TW) BIN_FN(KB, 8, 1, TW)
#define BIN_KEYS(TW) BIN_PAYLOADS(1, TW) BIN_PAYLOADS(2, TW) BIN_PAYLOADS(4, TW) BIN_PAYLOADS(8, TW)
BIN_KEYS(0)
BIN_KEYS(1)

#define BIN_ROW(KB, TW)                                                                            \
        {                                                                                          \
                bin_##KB##_0_0_##TW, bin_##KB##_4_0_##TW, bin_##KB##_4_1_##TW,                     \
                        bin_##KB##_8_0_##TW, bin_##KB##_8_1_##TW                                   \
        }
/* Indexed [twiddle][log2 key bytes][payload: none, v32, i32, v64, i64]. */
static const bin_fn bin_table[2][4][5] = {
        {BIN_ROW(1, 0), BIN_ROW(2, 0), BIN_ROW(4, 0), BIN_ROW(8, 0)},
        {BIN_ROW(1, 1), BIN_ROW(2, 1), BIN_ROW(4, 1), BIN_ROW(8, 1)},
};

static void bin_worker(void *arg, unsigned tid, unsigned nth)
{
        const sortd__pass *p = arg;
        sortd__cpu_scratch *s = &p->ctx->scratch[tid];
        unsigned payload = p->val_bytes == 0 ? 0 : (p->val_bytes == 4 ? 1 : 3) + p->gen_index;

        memset(s->seen, 0, sizeof(s->seen));
        s->torn = false;
        bin_table[p->twiddle][sortd__log2_bytes(p->key_bytes)][payload](p, s);
}

/* Whether every tile ranked as it counted and the tiles' counts add up to
   goff's: then each digit's keys filled exactly its range of the output. */
static bool moved_each_once(const sortd__pass *p, unsigned nth)
{
        const sortd__cpu_scratch *scratch = p->ctx->scratch;

        for (unsigned t = 0; t < nth; t++)
                if (scratch[t].torn)
                        return false;
        for (unsigned d = 0; d < SORTD__RADIX; d++) {
                uint64_t sum = 0, end = d + 1 < SORTD__RADIX ? p->goff[d + 1] : p->n;

                for (unsigned t = 0; t < nth; t++)
                        sum += scratch[t].seen[d];
                if (sum != end - p->goff[d])
                        return false;
        }
        return true;
}

bool sortd__bin_pass(sortd__pass *p, unsigned nth)
{
        p->epoch = sortd__look_back_start(p->ctx);
        atomic_store_explicit(&p->ctx->ticket, 0, memory_order_relaxed);
        sortd__pool_run(p->ctx->pool, nth, bin_worker, p);
        return !p->checked || moved_each_once(p, nth);
}
