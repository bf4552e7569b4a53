/*
 * Keys of several columns, and 128-bit keys, sorted by any engine with nothing but its own sort
 * of u64 keys (engine.h: sortd_engine_sort_columns). Private to kernels/. The steps that touch
 * the rows are a sortd__columns_mem (engine_impl.h): host.c's loops for host memory, a GPU
 * engine's kernels for device memory, so the rows never leave the memory they are in.
 *
 * Each column's key becomes its order-preserving image (sortd_types.h), inverted over the key's
 * width when descending, and of that the bits [begin, end) right-aligned: a w-bit value. Columns
 * are sorted in groups: the packed path has one group of every column, the chained path one
 * group a column. A group's value is its columns' values concatenated, its first column most
 * significant: W <= 128 bits, one u64 word when W <= 64, else two (the low 64 bits, then the
 * high W - 64). An LSD sort over the words, the last group's low word first, gives the order:
 * the first word sorted is an argsort that makes the permutation, each later word is gathered
 * by the permutation and sorted, stably, with the permutation as its values. A word that is the
 * same in every row orders nothing and is skipped.
 */
#ifndef SORTD_COLUMNS_H
#define SORTD_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../engine_impl.h"
#include "../keys.h"

/* A group's value: up to 128 bits (GCC and Clang have the type on every 64-bit target). */
__extension__ typedef unsigned __int128 sortd__wide;

/* How one column's keys become w-bit values (image.c). */
typedef struct sortd__column_map {
        const unsigned char *keys;
        unsigned key_bytes;  /* 1, 2, 4, 8 or 16 */
        sortd__twiddle tw;   /* the image of keys up to 8 bytes, descending included */
        sortd__wide flip128; /* the image of 16-byte keys: the sign bit, and every bit descending */
        unsigned begin;      /* the first bit kept */
        unsigned width;      /* w, the bits kept: 1 to 128 */
} sortd__column_map;

/* w of a column that sortd_columns_check accepted. */
unsigned sortd__column_width(const sortd_column *c);

sortd__column_map sortd__column_map_make(const sortd_column *c, const void *keys);

SORTD_HD sortd__wide sortd__column_value(const sortd__column_map *m, size_t i)
{
        const unsigned char *at = m->keys + i * m->key_bytes;
        sortd__wide x;

        switch (m->key_bytes) {
        case 1:
                x = sortd__twiddle_forward(m->tw, *at);
                break;
        case 2:
                x = sortd__twiddle_forward(m->tw, *(const uint16_t *)at);
                break;
        case 4:
                x = sortd__twiddle_forward(m->tw, *(const uint32_t *)at);
                break;
        case 8:
                x = sortd__twiddle_forward(m->tw, *(const uint64_t *)at);
                break;
        default: /* little-endian: the low 8 bytes first */
                x = ((sortd__wide)((const uint64_t *)at)[1] << 64 | ((const uint64_t *)at)[0]) ^
                    m->flip128;
                break;
        }
        x >>= m->begin;
        return m->width == 128 ? x : x & (((sortd__wide)1 << m->width) - 1);
}

/* Word part (0: low, 1: high) of count columns' value at row: their values concatenated, the
   first most significant. */
SORTD_HD uint64_t sortd__group_word(const sortd__column_map *maps, unsigned count, unsigned part,
                                    size_t row)
{
        sortd__wide v = 0;

        for (unsigned j = 0; j < count; j++) {
                sortd__wide x = sortd__column_value(&maps[j], row);

                v = maps[j].width == 128 ? x : v << maps[j].width | x;
        }
        return (uint64_t)(part ? v >> 64 : v);
}

/* Columns sorted as one value: count consecutive maps, their widths adding up to bits. */
typedef struct sortd__column_group {
        const sortd__column_map *maps;
        unsigned count;
        unsigned bits; /* W: 1 to 128 */
} sortd__column_group;

/* The words of a group: 1 or 2. */
static inline unsigned sortd__group_words(const sortd__column_group *g)
{
        return g->bits > 64 ? 2 : 1;
}

/*
 * Word part (0: low, 1: high) of the group's value at rows perm[0..n) (perm NULL: rows 0..n),
 * into out, in host memory. perm holds perm_bytes-wide indices (4 or 8). Returns whether the
 * words differ.
 */
bool sortd__group_fill(const sortd__column_group *g, unsigned part, const void *perm,
                       unsigned perm_bytes, uint64_t *out, size_t n);

/* The rows' steps in host memory (host.c): the engine's own sort, malloc, the loops. */
extern const sortd__columns_mem sortd__columns_host;

/*
 * The LSD passes over the groups' words (lsd.c), the last group's low word first, through
 * mem's sort, or with seg (not NULL) the engine's segmented sort in mem's memory: perm (n
 * indices of perm_bytes) receives the order (rows of the whole; within seg, each row stays in
 * its segment), identity when every word is the same in every row. word is n u64 of scratch.
 * Fails with the engine's status and message; else e->last_device_seconds is the passes' sum.
 */
sortd_status sortd__columns_lsd(sortd_engine *e, const sortd__columns_mem *mem,
                                const sortd__column_group *groups, unsigned count,
                                const sortd_segments *seg, uint64_t *word, void *perm,
                                unsigned perm_bytes, size_t n);

/* A sort of columns after its checks, n >= 2. */
typedef struct sortd__columns_job {
        const sortd_column *cols;
        unsigned count;
        void *const *keys; /* count columns of n keys */
        void *vals;        /* the payload's n values or indices; NULL without one */
        size_t n;
        sortd_payload payload;
        bool packed;    /* every column in one group; else a group a column */
        bool sort_keys; /* reorder the columns with an argsort too (a single key's contract) */
} sortd__columns_job;

/*
 * Writes the order perm (n indices of perm_bytes) gives (apply.c): an argsort's indices into
 * vals, in the payload's width; and unless the job is an argsort of columns, every column and
 * the values reordered in place through gather (room for n of the widest element).
 */
sortd_status sortd__columns_apply(sortd_engine *e, const sortd__columns_mem *mem,
                                  const sortd__columns_job *job, const void *perm,
                                  unsigned perm_bytes, void *gather);

/*
 * Sorts a job whose rows lie in mem's memory (run.c): its workspace allocated there for the call
 * (SORTD_E_NOMEM when there is none), the LSD passes, the result written. The caller has counted
 * the sorting call. Nothing is written to the columns or vals when the passes fail.
 */
sortd_status sortd__columns_sort(sortd_engine *e, const sortd__columns_mem *mem,
                                 const sortd__columns_job *job);

/*
 * 16-byte keys (u128, i128) in mem's memory (run.c), as one column: sort_wide under
 * sortd_engine_sort's contract (seg NULL: keys sorted in place, an argsort's permutation
 * written too) or sortd_engine_sort_segments' (within seg's segments, by the engine's
 * segmented sort of the words: an argsort's indices count within their segment); topk under
 * sortd_engine_topk's, seg not NULL (the whole array, one segment, when the caller gave none):
 * the inputs copied into a workspace of their own, sorted there within their segments, and
 * each segment's first k taken. With seg the engine has a segmented sort; the caller has
 * checked the rest and counted the sorting call.
 */
sortd_status sortd__columns_sort_wide(sortd_engine *e, const sortd__columns_mem *mem,
                                      const sortd_sort_desc *d, const sortd_segments *seg,
                                      void *keys, void *vals, size_t n);
sortd_status sortd__columns_topk(sortd_engine *e, const sortd__columns_mem *mem,
                                 const sortd_sort_desc *d, const sortd_segments *seg, uint64_t k,
                                 const void *keys, const void *vals, void *out_keys, void *out_vals,
                                 size_t n);

#endif
