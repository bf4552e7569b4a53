/* The LSD passes over the columns' words, each a stable sort by the engine's own sort. */
#include "columns.h"

/*
 * One word sorted: the first makes the permutation (an argsort), later ones carry it. Within
 * segments every word carries it, from the identity: a segmented argsort's indices count
 * within their segment.
 */
static sortd_status sort_word(sortd_engine *e, const sortd__columns_mem *mem,
                              const sortd_segments *seg, uint64_t *word, void *perm,
                              unsigned perm_bytes, unsigned bits, bool first, size_t n)
{
        const sortd__plan p = {
                .key_bytes = 8,
                .val_bytes = perm_bytes,
                .argsort = first && !seg,
                .kind = SORTD__KEY_UNSIGNED,
                .descending = false,
                .begin_bit = 0,
                .end_bit = bits,
                .shared = false,
        };

        return seg ? e->ops->sort_segments(e, &p, seg, mem->memory, word, perm, n)
                   : mem->sort(e, &p, word, perm, n);
}

sortd_status sortd__columns_lsd(sortd_engine *e, const sortd__columns_mem *mem,
                                const sortd__column_group *groups, unsigned count,
                                const sortd_segments *seg, uint64_t *word, void *perm,
                                unsigned perm_bytes, size_t n)
{
        double device_seconds = 0; /* the passes' own, each sort setting it anew */
        bool have_perm = seg != NULL;

        if (seg) {
                sortd_status s = mem->identity(e, perm, perm_bytes, n);

                if (s != SORTD_OK)
                        return s;
        }

        for (unsigned g = count; g-- > 0;) {
                const sortd__column_group *grp = &groups[g];

                for (unsigned part = 0; part < sortd__group_words(grp); part++) {
                        const unsigned bits = part             ? grp->bits - 64
                                              : grp->bits < 64 ? grp->bits
                                                               : 64;
                        bool differ = false;
                        sortd_status s = mem->fill(e, grp, part, have_perm ? perm : NULL,
                                                   perm_bytes, word, n, &differ);

                        if (s != SORTD_OK)
                                return s;
                        if (!differ)
                                continue;
                        s = sort_word(e, mem, seg, word, perm, perm_bytes, bits, !have_perm, n);
                        if (s != SORTD_OK)
                                return s;
                        device_seconds += e->last_device_seconds;
                        have_perm = true;
                }
        }
        e->last_device_seconds = device_seconds;
        return have_perm ? SORTD_OK : mem->identity(e, perm, perm_bytes, n);
}
