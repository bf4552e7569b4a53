/*
 * The CPU engine's sort of a few keys (tiny.c): a segment of up to SORTD__TINY_KEYS keys, or
 * the top-k of one, by a stable insertion sort over their images on the stack.
 */
#ifndef SORTD_CPU_TINY_H
#define SORTD_CPU_TINY_H

#include <stddef.h>

#include "../engine_impl.h"
#include "policy.h"

/*
 * The first m of the n <= SORTD__TINY_KEYS keys (and vals) in plan's order, stable, into
 * out_keys (and out_vals: the values, or the indices 0..n-1 for argsort). Every key and value
 * is read once before anything is written, so the outputs may be the inputs (a sort in place,
 * m = n) and keys another process writes meanwhile give a permutation of what was read.
 */
void sortd__tiny_select(const sortd__plan *plan, const void *keys, const void *vals, size_t n,
                        size_t m, void *out_keys, void *out_vals);

#endif
