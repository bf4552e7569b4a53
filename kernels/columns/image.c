/* A column's keys as w-bit values: the order-preserving image, then its bit range. */
#include "columns.h"

unsigned sortd__column_width(const sortd_column *c)
{
        unsigned bits = (unsigned)sortd_key_size(c->key_type) * 8;

        return (c->end_bit ? c->end_bit : bits) - c->begin_bit;
}

sortd__column_map sortd__column_map_make(const sortd_column *c, const void *keys)
{
        const unsigned kb = (unsigned)sortd_key_size(c->key_type);
        const enum sortd__key_kind kind = sortd__key_kind_of(c->key_type);
        const int descending = c->order == SORTD_DESCENDING;
        sortd__column_map m = {
                .keys = keys,
                .key_bytes = kb,
                .tw = sortd__twiddle_identity(),
                .flip128 = 0,
                .begin = c->begin_bit,
                .width = sortd__column_width(c),
        };

        if (kb <= 8) {
                m.tw = sortd__twiddle_make(kb, kind, descending);
                return m;
        }
        /* 16-byte keys are integers: no float image */
        if (kind == SORTD__KEY_SIGNED)
                m.flip128 = (sortd__wide)1 << 127;
        if (descending)
                m.flip128 = ~m.flip128;
        return m;
}

/* rows[i]: perm[i], or i without a permutation. */
typedef struct rows {
        const uint32_t *p32;
        const uint64_t *p64;
} rows;

static inline __attribute__((always_inline)) size_t row_at(rows r, size_t i)
{
        return r.p32 ? r.p32[i] : r.p64 ? (size_t)r.p64[i] : i;
}

/*
 * One column of a group of at most 64 bits, shifted into out: a loop for each key width, so
 * the load, the image and the bit range compile to a few instructions a row.
 */
static inline __attribute__((always_inline)) void
fill_narrow(const sortd__column_map *m, unsigned kb, bool first, rows r, uint64_t *out, size_t n)
{
        const uint64_t mask = m->width >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << m->width) - 1;

        for (size_t i = 0; i < n; i++) {
                const unsigned char *at = m->keys + row_at(r, i) * kb;
                uint64_t x = kb == 1   ? *at
                             : kb == 2 ? *(const uint16_t *)at
                             : kb == 4 ? *(const uint32_t *)at
                                       : *(const uint64_t *)at;
                uint64_t y = (sortd__twiddle_forward(m->tw, x) >> m->begin) & mask;

                out[i] = first ? y : out[i] << m->width | y;
        }
}

static void fill_column(const sortd__column_map *m, bool first, rows r, uint64_t *out, size_t n)
{
        switch (m->key_bytes) {
        case 1:
                fill_narrow(m, 1, first, r, out, n);
                break;
        case 2:
                fill_narrow(m, 2, first, r, out, n);
                break;
        case 4:
                fill_narrow(m, 4, first, r, out, n);
                break;
        case 8:
                fill_narrow(m, 8, first, r, out, n);
                break;
        default: /* 16-byte keys whose bit range keeps 64 bits or fewer */
                for (size_t i = 0; i < n; i++) {
                        uint64_t y = (uint64_t)sortd__column_value(m, row_at(r, i));

                        out[i] = first ? y : out[i] << m->width | y;
                }
                break;
        }
}

/* A group of more than 64 bits, a row at a time in 128-bit arithmetic. */
static void fill_wide(const sortd__column_group *g, unsigned part, rows r, uint64_t *out, size_t n)
{
        for (size_t i = 0; i < n; i++)
                out[i] = sortd__group_word(g->maps, g->count, part, row_at(r, i));
}

bool sortd__group_fill(const sortd__column_group *g, unsigned part, const void *perm,
                       unsigned perm_bytes, uint64_t *out, size_t n)
{
        const rows r = {perm_bytes == 4 ? perm : NULL, perm_bytes == 8 ? perm : NULL};
        uint64_t differ = 0;

        if (g->bits > 64)
                fill_wide(g, part, r, out, n);
        else
                for (unsigned j = 0; j < g->count; j++)
                        fill_column(&g->maps[j], j == 0, r, out, n);
        for (size_t i = 0; i < n; i++)
                differ |= out[i] ^ out[0];
        return differ != 0;
}
