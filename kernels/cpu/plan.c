/*
 * Planning a sort: how many threads, which digit places need a pass, and
 * what each pass decides from the plan and its place's global histogram
 * (sortd__pass_make()): buckets or counting first, a dominant digit, the
 * AVX-512 split, direct and streaming stores.
 */
#include "plan.h"

#include "tile.h"

unsigned sortd__plan_threads(unsigned threads, size_t n)
{
        size_t t = n / SORTD__KEYS_PER_THREAD;

        if (t < 1)
                return 1;
        return t < threads ? (unsigned)t : threads;
}

/* Digit mask of place k: 8 bits, or fewer for the last place of a range. */
static uint64_t place_mask(const sortd__plan *plan, unsigned k)
{
        unsigned shift = plan->begin_bit + 8 * k;
        unsigned width = plan->end_bit - shift < 8 ? plan->end_bit - shift : 8;

        return ((uint64_t)1 << width) - 1;
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

/* The slots of a bucket whose digit a tile expects `expect` times: that many
   and SORTD__BUCKET_SIGMAS standard deviations and SORTD__BUCKET_SLACK. */
static uint32_t bucket_cap(uint64_t expect)
{
        if (!expect)
                return 0;
        return (uint32_t)(expect + SORTD__BUCKET_SIGMAS * isqrt(expect) + SORTD__BUCKET_SLACK);
}

/*
 * Sizes the buckets of sortd__rank_buckets() for a place from its global
 * histogram (bucket_cap()). Returns false when they would not fit in the
 * local buffer beside a tile of overrun, or when ranking by buckets would not
 * pay: on a skewed place one counter is bumped key after key, which the
 * four-part ranking of a counted tile spreads. The exception, in a keys-only
 * sort, is a place where one digit holds nearly every key: *dominant names
 * it, and its keys are ranked through a register (rank.c), in buckets or in a
 * counted tile. *dominant is -1 otherwise, and whenever this returns false.
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

unsigned sortd__plan_places(const sortd__cpu_scratch *scratch, unsigned nth, unsigned nplaces,
                            uint64_t (*goff)[SORTD__RADIX], unsigned *places)
{
        unsigned np = 0;

        for (unsigned k = 0; k < nplaces; k++) {
                uint64_t sum = 0;
                unsigned nonempty = 0;

                for (unsigned d = 0; d < SORTD__RADIX; d++) {
                        uint64_t c = 0;

                        for (unsigned t = 0; t < nth; t++)
                                c += scratch[t].hist[k][d];
                        goff[k][d] = sum;
                        sum += c;
                        nonempty += c != 0;
                }
                if (nonempty > 1)
                        places[np++] = k;
        }
        return np;
}

void sortd__pass_make(const sortd__pass_in *in, sortd__pass *p)
{
        const sortd__plan *plan = in->plan;
        const sortd__twiddle tw =
                sortd__twiddle_make(plan->key_bytes, plan->kind, plan->descending);
        const bool first = in->index == 0, last = in->index + 1 == in->passes;
        const size_t moved = in->n * (plan->key_bytes + plan->val_bytes);

        *p = (sortd__pass){
                .n = in->n,
                .ntiles = sortd__tile_count(in->n),
                .key_bytes = plan->key_bytes,
                .val_bytes = plan->val_bytes,
                .gen_index = plan->argsort && first,
                .stream = moved >= SORTD__STREAM_MIN_BYTES,
                .precounted = first && in->place == 0,
                .shift = plan->begin_bit + 8 * in->place,
                .mask = place_mask(plan, in->place),
                .load_tw = first ? tw : sortd__twiddle_identity(),
                .store_tw = last ? tw : sortd__twiddle_identity(),
                .goff = in->goff,
                .dominant = -1,
                .checked = in->checked,
        };
        p->twiddle =
                !sortd__twiddle_is_identity(p->load_tw) || !sortd__twiddle_is_identity(p->store_tw);
        /* The first pass ranks into buckets too where they fit: ranking a
           counted tile in four parts was slower (2^26 u32 uniform 1.03x, q8
           1.18x with buckets, where the AVX-512 split then applies). Its
           tiles' counts from the histogram pass serve where buckets do not. */
        p->buckets = in->n >= SORTD__BUCKETS_MIN_KEYS &&
                     plan_buckets(in->goff, in->n, !p->val_bytes, p->bucket_start, p->bucket_cap,
                                  &p->dominant);
        p->split =
                in->split512 && p->buckets && p->dominant >= 0 && p->key_bytes == 4 && !p->twiddle;
        /* Split tiles stage their keys. A checked pass does not write straight to the output:
           a tile with more dominant keys than it counted would write past its place. */
        p->direct = p->dominant >= 0 && p->stream && p->key_bytes >= 4 && in->keys_aligned &&
                    !p->split && !p->checked;
}
