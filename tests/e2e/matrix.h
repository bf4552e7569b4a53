/*
 * The key type x payload x order matrix of the end-to-end tests (test_sortd, test_regions): the
 * key types up to f64 with every payload in both orders; each later one (f16, bf16, u128, i128,
 * whose payloads take the paths the first ones take) with every payload in one order, the two
 * alternating, which keeps the matrix's time within a few seconds of what it was.
 */
#ifndef SORTD_TESTS_E2E_MATRIX_H
#define SORTD_TESTS_E2E_MATRIX_H

#include "sortd_types.h"

#define MATRIX_FULL_TYPES SORTD_KEY_F16 /* the key types sorted in both orders */
#define MATRIX_FULL_CASES (MATRIX_FULL_TYPES * SORTD_PAYLOAD_COUNT * 2)
#define MATRIX_CASES                                                                               \
        (MATRIX_FULL_CASES + (SORTD_KEY_TYPE_COUNT - MATRIX_FULL_TYPES) * SORTD_PAYLOAD_COUNT)

/*
 * Under ThreadSanitizer every fourth case runs: it looks for races in the daemon's hand-offs,
 * which take the same paths whatever the key type, and a sort costs ~10x there. The cases taken
 * step through the payloads and both orders; the other builds run every case.
 */
#if defined(__SANITIZE_THREAD__)
#define MATRIX_STRIDE 4
#else
#define MATRIX_STRIDE 1
#endif
#define MATRIX_RUNS (MATRIX_CASES / MATRIX_STRIDE)

/* Run r (0 to MATRIX_RUNS - 1): the case of the matrix it sorts. */
static inline int matrix_case(int r)
{
        return r * MATRIX_STRIDE + r % MATRIX_STRIDE;
}

/* Case i (0 to MATRIX_CASES - 1) of the matrix: its key type, payload and order. */
static inline sortd_sort_desc matrix_desc(int i)
{
        int j = i - MATRIX_FULL_CASES, t = j / SORTD_PAYLOAD_COUNT, p = j % SORTD_PAYLOAD_COUNT;

        if (i < MATRIX_FULL_CASES)
                return (sortd_sort_desc){
                        .key_type = (sortd_key_type)(i / (SORTD_PAYLOAD_COUNT * 2)),
                        .payload = (sortd_payload)(i / 2 % SORTD_PAYLOAD_COUNT),
                        .order = (sortd_order)(i % 2),
                };
        return (sortd_sort_desc){
                .key_type = (sortd_key_type)(MATRIX_FULL_TYPES + t),
                .payload = (sortd_payload)p,
                .order = (sortd_order)((t + p) % 2),
        };
}

#endif
