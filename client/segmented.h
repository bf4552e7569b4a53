/*
 * What segments and top-k add to a sort, wherever its data lies (client.c: inline, region_sort.c:
 * in regions): their checks, their fields of the Sort message, and the sizes of the offsets a
 * request sends and of the results it gets back. It sits on transport.c; nothing here is
 * exported (libsortd.sym).
 */
#ifndef SORTD_CLIENT_SEGMENTED_H
#define SORTD_CLIENT_SEGMENTED_H

#include <stdint.h>

#include "sortd.h"
#include "transport.h"
#include "wire.h"

typedef struct sortd__segmented {
        uint64_t results;       /* top-k: sortd_topk_results of it; 0 for a sort */
        uint64_t offsets_bytes; /* CSR offsets: (count + 1) x their width; 0 for rows or none */
} sortd__segmented;

/*
 * The bytes of count + 1 offsets of width bytes (4 or 8); SORTD_E_INVAL, naming the fault, for
 * another width or a count whose offsets no memory holds. Known before any offset is read.
 */
sortd_status sortd__segmented_offsets_size(sortd_conn *c, uint64_t count, unsigned width,
                                           uint64_t *bytes);

/*
 * seg (NULL: one array of n keys) checked over n keys (sortd_segments_check, which reads every
 * offset) and k (0: a sort), and what they make of the request: *out. SORTD_E_INVAL with the
 * fault otherwise.
 */
sortd_status sortd__segmented_check(sortd_conn *c, const sortd_segments *seg, uint64_t n,
                                    uint64_t k, sortd__segmented *out);

/*
 * The bytes the daemon holds for an inline segmented sort or top-k, which its max-request-bytes
 * bounds, worked out as it does (daemon/request/request_segments.c): keys, the values it reads
 * or writes, offsets, and the most results k may give (offsets: k a segment, n at most), each
 * rounded up to 16 bytes (sortd__segmented_part). For a region sort (inline 0) only its copy of
 * the offsets.
 */
uint64_t sortd__segmented_held_bytes(const sortd_segments *seg, uint64_t n, uint64_t k,
                                     sortd_key_type t, sortd_payload p, int inline_data);

/* A part of the daemon's buffer of a request: its bytes rounded up to 16, as the daemon lays
   each part out (on the alignment of the widest key, a u128's). */
uint64_t sortd__segmented_part(uint64_t bytes);

/* held bytes, what the daemon would hold of a request (what: "request", "offsets"), refused with
   SORTD_E_CAPACITY above its max-request-bytes as it would refuse them. */
sortd_status sortd__segmented_check_held(sortd_conn *c, uint64_t held, const char *what);

/* Sort's segments (written into msg, which must outlive sort) and k; seg NULL leaves sort one
   array of keys. The offsets' region, if any, is the caller's to name in msg. */
void sortd__segmented_msg(Sortd__Wire__Sort *sort, Sortd__Wire__Segments *msg,
                          const sortd_segments *seg, uint64_t k);

#endif
