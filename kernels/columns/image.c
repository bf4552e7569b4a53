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

bool sortd__group_fill(const sortd__column_group *g, unsigned part, const void *perm,
                       unsigned perm_bytes, uint64_t *out, size_t n)
{
        const uint32_t *p32 = perm_bytes == 4 ? perm : NULL;
        const uint64_t *p64 = perm_bytes == 8 ? perm : NULL;
        const unsigned shift = part ? 64 : 0;
        uint64_t differ = 0;

        for (size_t i = 0; i < n; i++) {
                size_t row = p32 ? p32[i] : p64 ? (size_t)p64[i] : i;
                sortd__wide v = 0;

                for (unsigned j = 0; j < g->count; j++) {
                        const sortd__column_map *m = &g->maps[j];
                        sortd__wide x = sortd__column_value(m, row);

                        v = m->width == 128 ? x : v << m->width | x;
                }
                out[i] = (uint64_t)(v >> shift);
                differ |= out[i] ^ out[0];
        }
        return differ != 0;
}
