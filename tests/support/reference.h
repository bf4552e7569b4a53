/*
 * The test oracle: a plain stable merge sort that implements the key order of sortd_types.h
 * by itself. It shares no code with the engines (not even kernels/keys.h), only the enums of
 * common/sortd_types.h, so a mistake in the engines' key map cannot hide in both.
 */
#ifndef SORTD_TESTS_REFERENCE_H
#define SORTD_TESTS_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "sortd_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Sorts keys (and vals) as sortd_engine_sort() would: keys in place, values moved with their
 * keys, or the permutation written to vals for argsort. Returns 0, or -1 for a request the
 * engine would reject (bad enum, bad bit range, NULL buffer) or when memory runs out; on -1
 * nothing is written.
 */
int ref_sort(const sortd_sort_desc *desc, void *keys, void *vals, size_t n);

/*
 * Compares keys[i] and keys[j] in desc's order (bit range and direction included): negative when
 * keys[i] comes first, 0 when they tie (and keep their input order), positive otherwise.
 * desc must be valid.
 */
int ref_compare(const sortd_sort_desc *desc, const void *keys, size_t i, size_t j);

/*
 * Sorts each segment of keys (and vals) on its own as sortd_engine_sort_segments() would: by
 * ref_sort() on each, so an argsort's indices count within their segment. Returns 0, or -1 as
 * ref_sort() does or for segments that sortd_segments_check() refuses (nothing written), or
 * when memory runs out (segments before the one that failed sorted).
 */
int ref_sort_segments(const sortd_sort_desc *desc, const sortd_segments *seg, void *keys,
                      void *vals, size_t n);

/*
 * The top-k of each segment (seg NULL: one of n keys) as sortd_engine_topk() gives it: from a
 * stable argsort of the segment (ref_sort()), its first min(k, len) keys, with their values
 * (vals read) or indices within the segment (argsort: vals unused), packed segment after
 * segment into out_keys and out_vals. keys and vals are only read. Returns 0, or -1 as
 * ref_sort_segments() does.
 */
int ref_topk(const sortd_sort_desc *desc, const sortd_segments *seg, uint64_t k, const void *keys,
             const void *vals, void *out_keys, void *out_vals, size_t n);

/*
 * Sorts rows of keys in several columns as sortd_engine_sort_columns() would (kernels/engine.h,
 * sortd_types.h): by column 0 in its order and bit range, ties by column 1, and so on; stable,
 * so rows equal in every column keep their input order. keys[j] is column j's n keys (any key
 * type, 128-bit ones too). With an argsort payload vals receives the permutation and the
 * columns are only read; else every column, and vals' n values, are reordered in place.
 * Returns SORTD_OK; SORTD_E_INVAL for 0 or more than SORTD_MAX_COLUMNS columns, an unknown key
 * type, order or payload, a bit range outside its key, argsort32 past 2^32 rows, or NULL
 * buffers with n > 0; SORTD_E_NOMEM when memory runs out. Nothing is written unless it
 * returns SORTD_OK.
 */
sortd_status reference_sort_columns(const sortd_column *cols, unsigned count, sortd_payload payload,
                                    void *const *keys, void *vals, size_t n);

#ifdef __cplusplus
}
#endif

#endif
