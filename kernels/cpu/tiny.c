/*
 * Insertion sort of a few keys as records of (rank, image, value): the rank is the image's bit
 * range, what alone decides the order; the image (keys.h) gives the key back. A record moves
 * only past records of strictly greater rank, so the sort is stable, and the descending map
 * inverts the image, so it is stable both ways. Compiled once per key and value width.
 */
#include "tiny.h"

#include <stdint.h>

#include "../keys.h"
#include "tile.h"

typedef struct rec {
        uint64_t rank, image, val;
} rec;

SORTD__ALWAYS_INLINE void insert(rec *r, size_t i)
{
        rec x = r[i];
        size_t j = i;

        for (; j > 0 && r[j - 1].rank > x.rank; j--)
                r[j] = r[j - 1];
        r[j] = x;
}

SORTD__ALWAYS_INLINE void select_as(const sortd__plan *p, const unsigned char *keys,
                                    const unsigned char *vals, size_t n, size_t m,
                                    unsigned char *out_keys, unsigned char *out_vals, unsigned kb,
                                    unsigned vb)
{
        sortd__twiddle tw = sortd__twiddle_make(kb, p->kind, p->descending);
        unsigned width = p->end_bit - p->begin_bit;
        uint64_t range = width == 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1;
        rec r[SORTD__TINY_KEYS];

        for (size_t i = 0; i < n; i++) {
                uint64_t y = sortd__twiddle_forward(tw, sortd__load_elem(keys, i, kb));

                r[i].image = y;
                r[i].rank = (y >> p->begin_bit) & range;
                r[i].val = !vb ? 0 : p->argsort ? i : sortd__load_elem(vals, i, vb);
                insert(r, i);
        }
        for (size_t i = 0; i < m; i++) {
                sortd__store_elem(out_keys, i, kb, sortd__twiddle_inverse(tw, r[i].image));
                if (vb)
                        sortd__store_elem(out_vals, i, vb, r[i].val);
        }
}

#define SELECT_KB(kb)                                                                              \
        do {                                                                                       \
                if (vb == 0)                                                                       \
                        select_as(p, keys, vals, n, m, out_keys, out_vals, kb, 0);                 \
                else if (vb == 4)                                                                  \
                        select_as(p, keys, vals, n, m, out_keys, out_vals, kb, 4);                 \
                else                                                                               \
                        select_as(p, keys, vals, n, m, out_keys, out_vals, kb, 8);                 \
        } while (0)

void sortd__tiny_select(const sortd__plan *p, const void *keys, const void *vals, size_t n,
                        size_t m, void *out_keys, void *out_vals)
{
        unsigned vb = p->val_bytes;

        switch (p->key_bytes) {
        case 1:
                SELECT_KB(1);
                break;
        case 2:
                SELECT_KB(2);
                break;
        case 4:
                SELECT_KB(4);
                break;
        default:
                SELECT_KB(8);
                break;
        }
}
