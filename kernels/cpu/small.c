/*
 * A plain stable LSD radix sort for one thread: the keys' order-preserving images (keys.h)
 * and their values widened to u64 in the thread's scratch, the histograms of every digit
 * place counted in one pass as they load, then one counting scatter per place that has more
 * than one non-empty bin, ping-ponging between two halves of the scratch, and one pass back to
 * the caller's widths. At up to 2^16 keys the four arrays (2 MiB at most) stay in L2: the
 * widening costs less than a loop per width would.
 */
#include <string.h>

#include "../keys.h"
#include "small.h"
#include "tile.h"

/* A digit place: its shift and mask (8 bits, or fewer at the top of a bit range). */
typedef struct place {
        unsigned shift;
        uint64_t mask;
} place;

static unsigned make_places(const sortd__plan *p, place pl[SORTD__MAX_PLACES])
{
        unsigned places = (p->end_bit - p->begin_bit + 7) / 8;

        for (unsigned d = 0; d < places; d++) {
                unsigned shift = p->begin_bit + 8 * d;
                unsigned width = p->end_bit - shift < 8 ? p->end_bit - shift : 8;

                pl[d] = (place){shift, ((uint64_t)1 << width) - 1};
        }
        return places;
}

/* Loads keys (and values, or their indices for argsort) into k and v; counts every place. */
static void load(const sortd__plan *p, const unsigned char *keys, const unsigned char *vals,
                 size_t n, const place *pl, unsigned places, uint64_t *k, uint64_t *v,
                 uint32_t count[][SORTD__RADIX])
{
        sortd__twiddle tw = sortd__twiddle_make(p->key_bytes, p->kind, p->descending);

        for (size_t i = 0; i < n; i++) {
                uint64_t x = sortd__twiddle_forward(tw, sortd__load_elem(keys, i, p->key_bytes));

                k[i] = x;
                for (unsigned d = 0; d < places; d++)
                        count[d][(x >> pl[d].shift) & pl[d].mask]++;
        }
        if (p->argsort)
                for (size_t i = 0; i < n; i++)
                        v[i] = i;
        else if (p->val_bytes)
                for (size_t i = 0; i < n; i++)
                        v[i] = sortd__load_elem(vals, i, p->val_bytes);
}

/* One stable counting scatter of place pl from (k, v) to (k2, v2). */
static void scatter(const sortd__plan *p, place pl, const uint32_t count[SORTD__RADIX],
                    const uint64_t *k, const uint64_t *v, uint64_t *k2, uint64_t *v2, size_t n)
{
        size_t next[SORTD__RADIX], sum = 0;

        for (unsigned b = 0; b < SORTD__RADIX; b++) {
                next[b] = sum;
                sum += count[b];
        }
        for (size_t i = 0; i < n; i++) {
                size_t at = next[(k[i] >> pl.shift) & pl.mask]++;

                k2[at] = k[i];
                if (p->val_bytes)
                        v2[at] = v[i];
        }
}

void sortd__small_sort(const sortd__plan *p, void *keys, void *vals, size_t n,
                       sortd__cpu_scratch *s)
{
        sortd__twiddle tw = sortd__twiddle_make(p->key_bytes, p->kind, p->descending);
        uint64_t *k = (uint64_t *)(void *)s->local_k, *k2 = k + n;
        uint64_t *v = (uint64_t *)(void *)s->local_v, *v2 = v + n;
        uint32_t count[SORTD__MAX_PLACES][SORTD__RADIX];
        place pl[SORTD__MAX_PLACES];
        unsigned places = make_places(p, pl);

        memset(count, 0, sizeof(count[0]) * places);
        load(p, keys, vals, n, pl, places, k, v, count);
        for (unsigned d = 0; d < places; d++) {
                uint64_t *t;

                if (count[d][(k[0] >> pl[d].shift) & pl[d].mask] == n)
                        continue; /* every key has this digit: the pass would move nothing */
                scatter(p, pl[d], count[d], k, v, k2, v2, n);
                t = k, k = k2, k2 = t;
                t = v, v = v2, v2 = t;
        }
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(keys, i, p->key_bytes, sortd__twiddle_inverse(tw, k[i]));
        if (p->val_bytes)
                for (size_t i = 0; i < n; i++)
                        sortd__store_elem(vals, i, p->val_bytes, v[i]);
}
