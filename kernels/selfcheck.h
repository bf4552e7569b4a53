/*
 * The self-check's parts, private to kernels/ and its tests: the sample, and
 * one engine against another on it. What engines and the daemon call is
 * sortd_engine_selfcheck() (engine.h).
 */
#ifndef SORTD_SELFCHECK_H
#define SORTD_SELFCHECK_H

#include <stddef.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sortd__selfcheck_case {
        sortd_sort_desc desc;
        size_t n;
} sortd__selfcheck_case;

/*
 * The sample for an engine of this capacity (every n is capped at it): every
 * key type x payload x order at 2, 1001 and 30011 keys (under one tile, a few
 * tiles of any of our policies); bit windows at 1001 and 30011; three sorts of
 * 12289234 keys (3000 tiles of 4096). No n is a multiple of 4. Writes at most
 * max cases and returns how many the sample has.
 */
size_t sortd__selfcheck_sample(size_t capacity, sortd__selfcheck_case *out, size_t max);

/*
 * Sorts every case of the sample for subject's capacity with subject and with
 * oracle, from the same input, and compares the results bit for bit; then the
 * cases of up to 4096 keys again, as one batch (sortd_engine_sort_batch), which
 * an engine may sort on a path of its own, then the shapes (below). Returns
 * SORTD_OK with a one-line account in report; SORTD_E_SELFCHECK naming the
 * first case that differs; or the error that stopped either engine (or an
 * allocation), with the message in report.
 */
sortd_status sortd__selfcheck_run(sortd_engine *subject, sortd_engine *oracle, char *report,
                                  size_t report_len);

/*
 * The segmented sorts and top-k of the self-check (selfcheck_shapes.c), after the sample: a few
 * of each, in segments whose lengths cross every size class and with k across a tile, n at
 * most cap, compared bit for bit. *checked: how many ran; a subject without segmented sorts
 * or top-k (SORTD_E_UNSUPPORTED) is not checked for them. Fails as sortd__selfcheck_run.
 */
sortd_status sortd__selfcheck_shapes(sortd_engine *e[2], size_t cap, size_t *checked, char *report,
                                     size_t len);

/* The sample's inputs for seed (selfcheck.c), and the first position where a and b differ
   (n when none), for the shapes. */
void sortd__selfcheck_fill(void *keys, void *vals, size_t n, unsigned kb, unsigned vb,
                           uint64_t seed);
size_t sortd__selfcheck_first_difference(const void *a, const void *b, size_t n, size_t width);
/* Writes the report (when len > 0) and returns s. */
sortd_status sortd__selfcheck_say(char *report, size_t len, sortd_status s, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif

#endif
