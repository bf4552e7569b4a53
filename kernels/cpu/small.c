/*
 * A plain stable LSD radix sort for one thread: the histograms of every digit place counted in
 * one pass over the caller's keys, which also copies them into the thread's scratch as their
 * order-preserving images (keys.h), 4- or 8-byte words; then one counting scatter per place
 * that has more than one non-empty bin. The first scatter reads those images and the caller's
 * values (as u64 from then on); the middle ones ping-pong between two halves of the scratch;
 * the last writes the caller's arrays back in their own widths. The caller's keys are read
 * once, so keys that another process changes meanwhile (a shared-memory region) cannot send a
 * scatter out of its bins. At up to 2^16 keys the scratch (2 MiB at most) stays in L2.
 *
 * Keys of up to 4 bytes with no values, sorted over their whole width, go instead through the
 * sorting network where the CPU has one (network.h) and n is worth it: their images are copied
 * out, sorted and copied back, the caller's keys again read once.
 */
#include <string.h>

#include "../keys.h"
#include "network.h"
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

/* Where a scatter reads and writes: the caller's arrays (in their widths, keys untwiddled) or
   the scratch (keys as ek-byte images, values as u64); keys and values each. */
typedef struct side {
        void *k;
        void *v;
        bool caller;      /* k is the caller's */
        bool caller_vals; /* v is the caller's */
} side;

SORTD__ALWAYS_INLINE uint64_t word(const void *a, size_t i, unsigned ek)
{
        return ek == 4 ? ((const uint32_t *)a)[i] : ((const uint64_t *)a)[i];
}

SORTD__ALWAYS_INLINE void set_word(void *a, size_t i, unsigned ek, uint64_t x)
{
        if (ek == 4)
                ((uint32_t *)a)[i] = (uint32_t)x;
        else
                ((uint64_t *)a)[i] = x;
}

/*
 * One stable counting scatter of place pl from in to out. ek (4 or 8), with_vals and whether
 * each side is the caller's are constants where it is called: always inlined, each call is a
 * loop of its own with no per-key branch on them.
 */
SORTD__ALWAYS_INLINE void scatter(const sortd__plan *p, sortd__twiddle tw, place pl,
                                  const uint32_t count[SORTD__RADIX], side in, side out, size_t n,
                                  unsigned ek, bool with_vals)
{
        uint32_t next[SORTD__RADIX], sum = 0;

        for (unsigned b = 0; b < SORTD__RADIX; b++) {
                next[b] = sum;
                sum += count[b];
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t x = in.caller ? sortd__twiddle_forward(
                                                 tw, sortd__load_elem(in.k, i, p->key_bytes))
                                       : word(in.k, i, ek);
                uint32_t at = next[(x >> pl.shift) & pl.mask]++;

                if (out.caller)
                        sortd__store_elem(out.k, at, p->key_bytes, sortd__twiddle_inverse(tw, x));
                else
                        set_word(out.k, at, ek, x);
                if (!with_vals)
                        continue;
                uint64_t y = !in.caller_vals ? ((const uint64_t *)in.v)[i]
                             : p->argsort    ? i
                                             : sortd__load_elem(in.v, i, p->val_bytes);

                if (out.caller)
                        sortd__store_elem(out.v, at, p->val_bytes, y);
                else
                        ((uint64_t *)out.v)[at] = y;
        }
}

/* Counts every place of the caller's keys and copies their images into images; returns the
   places that move anything (todo). */
SORTD__ALWAYS_INLINE unsigned count_places(const sortd__plan *p, sortd__twiddle tw,
                                           const void *keys, void *images, size_t n, unsigned ek,
                                           const place *pl, unsigned places,
                                           uint32_t count[][SORTD__RADIX],
                                           unsigned todo[SORTD__MAX_PLACES])
{
        unsigned k = 0;

        memset(count, 0, sizeof(count[0]) * places);
        for (size_t i = 0; i < n; i++) {
                uint64_t x = sortd__twiddle_forward(tw, sortd__load_elem(keys, i, p->key_bytes));

                set_word(images, i, ek, x);
                for (unsigned d = 0; d < places; d++)
                        count[d][(x >> pl[d].shift) & pl[d].mask]++;
        }
        uint64_t first = word(images, 0, ek);

        for (unsigned d = 0; d < places; d++)
                if (count[d][(first >> pl[d].shift) & pl[d].mask] != n)
                        todo[k++] = d; /* else every key has this digit: the pass moves none */
        return k;
}

/* The network's ways to sort as a plan says (network.h). */
typedef enum network_form {
        NETWORK_NONE,
        NETWORK_KEYS32, /* keys alone of up to 4 bytes, over their whole width: their images */
        NETWORK_KEYS64, /* keys alone of 8 bytes, likewise */
        /* keys of up to 4 bytes with values or indices, or a bit range: each key's ranked bits
           above its index, so that ties keep their order */
        NETWORK_RANKED,
} network_form;

static network_form form_of(const sortd__plan *p, size_t n, const sortd__cpu_scratch *s)
{
        bool whole = p->begin_bit == 0 && p->end_bit == 8 * p->key_bytes;

        if (!s->network)
                return NETWORK_NONE;
        if (p->val_bytes == 0 && whole && p->key_bytes <= 8) {
                if (!sortd__network_worth(n, SORTD__NETWORK_KEYS))
                        return NETWORK_NONE;
                return p->key_bytes == 8 ? NETWORK_KEYS64 : NETWORK_KEYS32;
        }
        if (p->key_bytes > 4 || !sortd__network_worth(n, SORTD__NETWORK_RANKED_KEYS))
                return NETWORK_NONE;
        return NETWORK_RANKED;
}

bool sortd__small_by_network(const sortd__plan *p, size_t n, const sortd__cpu_scratch *s)
{
        return form_of(p, n, s) != NETWORK_NONE;
}

/* The order map of keys of kb <= 4 bytes in 32-bit words: loops the compiler vectorises. */
typedef struct map32 {
        uint32_t sign, fl, order, top;
} map32;

SORTD__ALWAYS_INLINE map32 map32_of(const sortd__plan *p, unsigned kb)
{
        sortd__twiddle tw = sortd__twiddle_make(kb, p->kind, p->descending);

        return (map32){(uint32_t)tw.sign_xor, (uint32_t)tw.float_xor, (uint32_t)tw.order_xor,
                       tw.top};
}

SORTD__ALWAYS_INLINE uint32_t forward32(map32 m, uint32_t x)
{
        return x ^ m.sign ^ (m.fl & (0u - (x >> m.top))) ^ m.order;
}

SORTD__ALWAYS_INLINE uint32_t inverse32(map32 m, uint32_t y)
{
        uint32_t z = y ^ m.order;

        return z ^ m.sign ^ (m.fl & ((z >> m.top) - 1u));
}

/* NETWORK_KEYS32, kb (the key's bytes) a constant. */
SORTD__ALWAYS_INLINE void keys32_as(const sortd__plan *p, void *keys, size_t n, uint32_t *images,
                                    unsigned kb)
{
        map32 m = map32_of(p, kb);

        for (size_t i = 0; i < n; i++)
                images[i] = forward32(m, (uint32_t)sortd__load_elem(keys, i, kb));
        sortd__network_sort(images, n);
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(keys, i, kb, inverse32(m, images[i]));
}

static void keys64(const sortd__plan *p, void *keys, size_t n, uint64_t *images)
{
        sortd__twiddle tw = sortd__twiddle_make(8, p->kind, p->descending);

        for (size_t i = 0; i < n; i++)
                images[i] = sortd__twiddle_forward(tw, sortd__load_elem(keys, i, 8));
        sortd__network_sort64(images, n);
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(keys, i, 8, sortd__twiddle_inverse(tw, images[i]));
}

/*
 * NETWORK_RANKED, kb a constant: the keys' images and the caller's values are read once, into
 * the scratch, and written back in the order of the sorted ranks' indices.
 */
SORTD__ALWAYS_INLINE void ranked_as(const sortd__plan *p, void *keys, void *vals, size_t n,
                                    sortd__cpu_scratch *s, unsigned kb)
{
        map32 m = map32_of(p, kb);
        const unsigned vb = p->val_bytes, width = p->end_bit - p->begin_bit;
        const uint32_t mask = width == 32 ? UINT32_MAX : (1u << width) - 1;
        uint64_t *ranked = (uint64_t *)(void *)s->local_k;
        uint32_t *images = (uint32_t *)(ranked + sortd__network_room(n));
        unsigned char *held = s->local_v;

        for (size_t i = 0; i < n; i++) {
                images[i] = forward32(m, (uint32_t)sortd__load_elem(keys, i, kb));
                ranked[i] = (uint64_t)((images[i] >> p->begin_bit) & mask) << 32 | i;
        }
        if (vb && !p->argsort)
                memcpy(held, vals, n * vb);
        sortd__network_sort64(ranked, n);
        for (size_t i = 0; i < n; i++) {
                uint32_t from = (uint32_t)ranked[i];

                sortd__store_elem(keys, i, kb, inverse32(m, images[from]));
                if (vb)
                        sortd__store_elem(vals, i, vb,
                                          p->argsort ? from : sortd__load_elem(held, from, vb));
        }
}

/* Sorts by the network in the form form_of() chose. */
static void sort_by_network(const sortd__plan *p, network_form form, void *keys, void *vals,
                            size_t n, sortd__cpu_scratch *s)
{
        uint32_t *images = (uint32_t *)(void *)s->local_k;
        unsigned kb = p->key_bytes;

        if (form == NETWORK_KEYS64)
                keys64(p, keys, n, (uint64_t *)(void *)s->local_k);
        else if (form == NETWORK_KEYS32 && kb == 1)
                keys32_as(p, keys, n, images, 1);
        else if (form == NETWORK_KEYS32 && kb == 2)
                keys32_as(p, keys, n, images, 2);
        else if (form == NETWORK_KEYS32)
                keys32_as(p, keys, n, images, 4);
        else if (kb == 1)
                ranked_as(p, keys, vals, n, s, 1);
        else if (kb == 2)
                ranked_as(p, keys, vals, n, s, 2);
        else
                ranked_as(p, keys, vals, n, s, 4);
}

SORTD__ALWAYS_INLINE void sort_as(const sortd__plan *p, void *keys, void *vals, size_t n,
                                  sortd__cpu_scratch *s, unsigned ek, bool with_vals)
{
        sortd__twiddle tw = sortd__twiddle_make(p->key_bytes, p->kind, p->descending);
        uint32_t count[SORTD__MAX_PLACES][SORTD__RADIX];
        unsigned todo[SORTD__MAX_PLACES], passes;
        place pl[SORTD__MAX_PLACES];
        side caller = {keys, vals, true, true};
        side a = {s->local_k, s->local_v, false, false};
        side b = {(unsigned char *)s->local_k + n * ek, (uint64_t *)(void *)s->local_v + n, false,
                  false};
        side first = {b.k, vals, false, true}; /* the keys' images, the caller's values */

        passes = count_places(p, tw, keys, b.k, n, ek, pl, make_places(p, pl), count, todo);
        if (passes == 0) { /* in order already: argsort's permutation is the identity */
                if (p->argsort)
                        for (size_t i = 0; i < n; i++)
                                sortd__store_elem(vals, i, p->val_bytes, i);
                return;
        }
        scatter(p, tw, pl[todo[0]], count[todo[0]], first, a, n, ek, with_vals);
        for (unsigned d = 1; d + 1 < passes; d++) {
                side t = a;

                scatter(p, tw, pl[todo[d]], count[todo[d]], a, b, n, ek, with_vals);
                a = b;
                b = t;
        }
        if (passes > 1) {
                scatter(p, tw, pl[todo[passes - 1]], count[todo[passes - 1]], a, caller, n, ek,
                        with_vals);
                return;
        }
        /* One pass: the scratch holds the result, in images. */
        for (size_t i = 0; i < n; i++)
                sortd__store_elem(keys, i, p->key_bytes,
                                  sortd__twiddle_inverse(tw, word(a.k, i, ek)));
        if (with_vals)
                for (size_t i = 0; i < n; i++)
                        sortd__store_elem(vals, i, p->val_bytes, ((uint64_t *)a.v)[i]);
}

void sortd__small_sort(const sortd__plan *p, void *keys, void *vals, size_t n,
                       sortd__cpu_scratch *s)
{
        bool with_vals = p->val_bytes != 0;
        network_form form = form_of(p, n, s);

        if (form != NETWORK_NONE)
                sort_by_network(p, form, keys, vals, n, s);
        else if (p->key_bytes <= 4 && with_vals)
                sort_as(p, keys, vals, n, s, 4, true);
        else if (p->key_bytes <= 4)
                sort_as(p, keys, vals, n, s, 4, false);
        else if (with_vals)
                sort_as(p, keys, vals, n, s, 8, true);
        else
                sort_as(p, keys, vals, n, s, 8, false);
}
